# SPDX-License-Identifier: MIT
"""The Analyzer charts an instrument of a market-data relay live (issue 22).

A TLS relay runs on a thread of its own in this process (a real socket on 127.0.0.1) and
publishes a random walk of two futures; the Analyzer workspace (a real offscreen widget) gets
the relays as the console's settings give them. Its *Relays* tab lists what the relay carries,
charts one instrument live, and shows every failure as a red line: no token, a relay nobody
listens for, a refused token, an instrument the relay does not carry, a relay that goes away
while charted. The workspace with a relay-fed chart is saved as a PNG (``$QWC_SCREENSHOTS``
when set, else the test's temporary folder).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzer.views.live import LiveChart
from analyzer.views.relay_source import RelayChoice, RelaySettings
from analyzer.views.workspace import AnalyzerWorkspace
from app.relays import analyzer_relays
from app.settings import AppSettings
from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.marketdata import MarketData
from engine.relay.server import Relay
from engine.remote.server import AuditLog
from engine.remote.tls import make_self_signed, server_context
from engine.remote.tokens import TokenStore
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL

pytestmark = pytest.mark.gui

SYMBOLS = ["ESZ6", "NQZ6"]
SIZES = {"ESZ6": ("0.25", "1"), "NQZ6": ("0.25", "1")}
MIDS = {"ESZ6": 4512.50, "NQZ6": 16120.25}
LEVELS = 5


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


class RelayThread:
    """A TLS relay on its own thread and loop, publishing a random walk every 20 ms."""

    def __init__(self, tmp: Path) -> None:
        make_self_signed(tmp / "r.crt", tmp / "r.key")
        self.tokens = TokenStore(tmp / "tokens.toml")
        self.token = self.tokens.add("analyst", "viewer", LiveClock().now_ns())
        self.clock = LiveClock()
        self.market = MarketData(SYMBOLS, MessageBus(), self.clock, n_levels=400)
        self.relay = Relay(
            "relay-ny4",
            self.market,
            self.clock,
            self.tokens,
            ssl_context=server_context(tmp / "r.crt", tmp / "r.key"),
            audit=AuditLog(tmp / "audit.log", self.clock),
            sizes=SIZES,
        )
        self.rng = np.random.default_rng(7)
        self.mid = {s: round(MIDS[s] / 0.25) for s in SYMBOLS}  # ticks
        self.publishing = threading.Event()
        self.publishing.set()
        self.steps = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        assert self._ready.wait(10)

    @property
    def port(self) -> int:
        return self.relay.port

    def _main(self) -> None:
        self._loop.run_until_complete(self._run())
        self._loop.close()

    async def _run(self) -> None:
        self._stop = asyncio.Event()
        await self.relay.open()
        self._publish_step()  # every book has levels before anyone subscribes
        self._ready.set()
        task = asyncio.get_running_loop().create_task(self._publisher())
        await self._stop.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await self.relay.close()

    async def _publisher(self) -> None:
        while True:
            await asyncio.sleep(0.02)
            if self.publishing.is_set():
                self._publish_step()

    def _publish_step(self) -> None:
        rows = []
        now = self.clock.now_ns()
        for b, s in enumerate(SYMBOLS):
            old = self.mid[s]
            self.mid[s] = mid = old + int(self.rng.choice([-1, 0, 0, 0, 1]))
            out = np.zeros(4 * LEVELS + 1, L2_EVENT_DTYPE)
            k = 0
            for lvl in range(LEVELS):  # clear the old side, then the new levels
                for side, px in ((BUY, old - 1 - lvl), (SELL, old + 1 + lvl)):
                    out[k]["px"], out[k]["qty"], out[k]["side"] = px, 0, side
                    k += 1
            for lvl in range(LEVELS):
                for side, px in ((BUY, mid - 1 - lvl), (SELL, mid + 1 + lvl)):
                    out[k]["px"], out[k]["side"] = px, side
                    out[k]["qty"] = int(self.rng.integers(5, 60)) * (lvl + 1)
                    k += 1
            side = BUY if self.rng.random() < 0.5 else SELL
            out[k]["px"] = mid - 1 if side == SELL else mid + 1
            out[k]["qty"], out[k]["side"] = int(self.rng.integers(1, 8)), side
            out["ts"], out["book"] = now, b
            out["kind"][:k] = L2_SET
            out["kind"][k] = L2_TRADE
            rows.append(out)
        self.relay.publish(np.concatenate(rows))
        self.steps += 1

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the relay's loop and return its result."""
        done = threading.Event()
        box: list[Any] = []

        def run() -> None:
            box.append(fn())
            done.set()

        self._loop.call_soon_threadsafe(run)
        assert done.wait(10)
        return box[0]

    def stop(self) -> None:
        if self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def relay(tmp_path: Path) -> Any:
    r = RelayThread(tmp_path)
    yield r
    r.stop()


def workspace(qtbot: Any, settings: RelaySettings) -> AnalyzerWorkspace:
    ws = AnalyzerWorkspace(relays=settings)
    qtbot.addWidget(ws)
    ws.resize(1400, 860)
    ws.show()
    qtbot.waitExposed(ws)
    return ws


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def red(label: Any) -> bool:
    return "#d9534f" in label.styleSheet()


def test_a_relay_instrument_is_charted_live(
    qtbot: Any, relay: RelayThread, tmp_path: Path, out_dir: Path, monkeypatch: Any
) -> None:
    # The relay as the console's settings name it (the Monitor's [relays] entries).
    monkeypatch.setenv("QWCONSOLE_CONFIG_DIR", str(tmp_path / "config"))
    ini = tmp_path / "qwconsole.ini"
    (tmp_path / "token").write_text(relay.token + "\n", encoding="utf-8")
    ini.write_text(
        f"[relays]\nwatch=ny4=wss://127.0.0.1:{relay.port}\ntoken_file={tmp_path / 'token'}\n",
        encoding="utf-8",
    )
    settings = analyzer_relays(AppSettings(ini))
    assert settings.pins == tmp_path / "config" / "known-relays.json"
    ws = workspace(qtbot, settings)
    panel = ws.relay_panel
    ws.show_relays()
    assert ws.relay_action.isEnabled()
    assert ws.follow_action.isEnabled()
    # Selecting the relay lists what it carries, with the sizes prices need.
    qtbot.waitUntil(lambda: panel.instrument_box.count() == 2, timeout=20_000)
    assert [panel.instrument_box.itemData(i).symbol for i in range(2)] == SYMBOLS
    assert "tick 0.25" in panel.instrument_box.itemText(0)
    assert "carries 2 instruments" in panel.message.text()
    panel.instrument_box.setCurrentIndex(0)
    panel.chart_button.click()
    qtbot.waitUntil(lambda: len(ws._live_charts()) == 1, timeout=20_000)
    (chart,) = ws._live_charts()
    assert isinstance(chart, LiveChart)
    quotes = chart.live.live.buffers["bbo"]
    qtbot.waitUntil(lambda: len(quotes) >= 40 and chart.redraws >= 3, timeout=20_000)
    # The chart's touch is the relay's, in prices (ticks x the relay's tick size).
    relay.publishing.clear()
    steps = relay.steps
    qtbot.wait(300)  # the last step reaches the chart
    bid = relay.call(lambda: relay.market.books.best_bid(0))
    ask = relay.call(lambda: relay.market.books.best_ask(0))
    q = chart.day.quote_at(chart.live.now_ns)
    assert relay.steps == steps
    assert q.bid == pytest.approx(bid[0] * 0.25)
    assert q.bid_qty == bid[1]
    assert q.ask == pytest.approx(ask[0] * 0.25)
    assert q.ask_qty == ask[1]
    assert 4400 < q.bid < 4620  # a real ES price, not ticks
    x, _y = chart.bid.getData()
    assert x is not None
    assert len(x) > 10
    # The depth ladder follows the relay's book.
    qtbot.waitUntil(lambda: len(chart.live.live.depth) > 0, timeout=10_000)
    assert chart.live.depth_at(chart.live.now_ns).source == "relay depth"  # not "engine"
    # Charting it again is the same chart; the browser lists it as a live row.
    panel.chart("ESZ6")
    assert len(ws._live_charts()) == 1
    assert any(e.symbol == "ESZ6" and e.store.startswith("live:") for e in ws.browser.entries)
    panel.show_states()
    assert "ESZ6 from ny4: up · " in panel.streams.text()
    assert "events/s · newest " in panel.streams.text()
    relay.publishing.set()
    # A second instrument from the same relay charts beside it, on the same time axis.
    panel.instrument_box.setCurrentIndex(1)
    panel.chart_button.click()
    qtbot.waitUntil(lambda: len(ws._live_charts()) == 2, timeout=20_000)
    nq = ws._live_charts()[1]
    qtbot.waitUntil(lambda: len(nq.live.live.buffers["bbo"]) >= 40, timeout=20_000)
    qtbot.wait(600)
    ws.browser_dock.raise_()
    ws.relay_dock.raise_()
    panel.show_states()
    # The relay's certificate was pinned on first use, in the console's pin file.
    assert f"127.0.0.1:{relay.port}" in (tmp_path / "config" / "known-relays.json").read_text()
    png = out_dir / "analyzer-relay-live.png"
    assert ws.grab().save(str(png))
    assert png.stat().st_size > 20_000
    ws.close()
    assert not panel.lives


def test_relay_failures_are_red_lines_never_tracebacks(
    qtbot: Any, relay: RelayThread, tmp_path: Path
) -> None:
    pins = tmp_path / "known-relays.json"
    down = RelayChoice("gone", "127.0.0.1", free_port(), tls=True)
    good = RelayChoice("ny4", "127.0.0.1", relay.port, tls=True)
    # No token: nothing can be asked, and the panel says where the token comes from.
    ws = workspace(qtbot, RelaySettings((good,), "", pins))
    assert not ws.relay_panel.list_button.isEnabled()
    assert "QWCONSOLE_RELAY_TOKEN" in ws.relay_panel.message.text()
    assert red(ws.relay_panel.message)
    ws.close()

    # No relay configured: where to add one.
    ws = workspace(qtbot, RelaySettings((), relay.token, pins, hint="/x/qwconsole.ini"))
    assert "No relay watched: add one in /x/qwconsole.ini" in ws.relay_panel.message.text()
    assert not ws.relay_panel.chart_button.isEnabled()
    ws.close()

    errors: list[str] = []
    ws = workspace(qtbot, RelaySettings((down, good), relay.token, pins))
    ws.error.connect(errors.append)
    panel = ws.relay_panel
    ws.show_relays()  # the first look lists the selected relay's instruments
    # A relay nobody listens for.
    qtbot.waitUntil(lambda: "connection refused" in panel.message.text(), timeout=20_000)
    assert red(panel.message)
    assert panel.instrument_box.count() == 0
    assert errors
    assert "connection refused" in errors[-1]
    # An instrument the relay does not carry.
    panel.relay_box.setCurrentIndex(1)
    qtbot.waitUntil(lambda: panel.instrument_box.count() == 2, timeout=20_000)
    assert panel.chart("ZZZZ") is None
    assert panel.message.text() == "ny4 does not carry ZZZZ"
    assert red(panel.message)
    # A token the relay does not know.
    bad = RelaySettings((good,), "qw1.nope.nope", pins)
    ws2 = workspace(qtbot, bad)
    ws2.show_relays()
    qtbot.waitUntil(lambda: "login refused" in ws2.relay_panel.message.text(), timeout=30_000)
    assert red(ws2.relay_panel.message)
    assert "Traceback" not in ws2.relay_panel.message.text()
    ws2.close()
    # A relay that goes away while charted: the stream says it is down and retrying.
    panel.instrument_box.setCurrentIndex(0)
    panel.chart_button.click()
    qtbot.waitUntil(lambda: len(ws._live_charts()) == 1, timeout=20_000)
    relay.stop()
    qtbot.waitUntil(lambda: "ESZ6 from ny4: down" in panel.streams.text(), timeout=20_000)
    assert "#d9534f" in panel.streams.text()
    # Said once on the status line too: the chart is no longer live.
    assert errors[-1].startswith("ESZ6 from ny4: down: ")
    assert errors[-1].endswith("the chart stops at the last update received")
    n = len(errors)
    panel.show_states()
    assert len(errors) == n
    ws.close()


def test_the_consoles_watched_relays_become_the_analyzers(tmp_path: Path) -> None:
    ini = tmp_path / "qwconsole.ini"
    ini.write_text(
        "[relays]\n"
        "watch=ny4=wss://10.0.4.30:7350, ws://127.0.0.1:7351, ny4=wss://10.0.4.31:7350, "
        "bad=http://x\n"
        f"token_file={tmp_path / 'tok'}\n",
        encoding="utf-8",
    )
    (tmp_path / "tok").write_text("qw1.abc.def\n", encoding="utf-8")
    rs = analyzer_relays(AppSettings(ini))
    assert [(c.name, c.host, c.port, c.tls) for c in rs.choices] == [
        ("ny4", "10.0.4.30", 7350, True),
        ("127.0.0.1:7351", "127.0.0.1", 7351, False),
    ]
    assert rs.token == "qw1.abc.def"
    assert any("used twice" in p for p in rs.problems)
    assert any("'bad=http://x'" in p for p in rs.problems)
    assert rs.pins is not None
    assert rs.pins.name == "known-relays.json"
