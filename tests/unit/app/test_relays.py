# SPDX-License-Identifier: MIT
"""The Monitor's Relays panel fed from the settings: a real ``qwconsole relay`` over TLS.

A relay process replays a tick-store day; two subscribers keep up and one stops reading (on a
thread of their own); the console's settings name that relay, a port nobody listens on and a
malformed entry. The Monitor shows the relay's source and links with rates and lag, the stalled
link as stalled, and the other two as red rows that say why. The Monitor is saved as a PNG
(``$QWC_SCREENSHOTS`` when set, else the test's temporary folder).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication
from websockets.asyncio.client import connect

from app.relays import RelayMonitor, parse_watch, read_token
from app.settings import AppSettings
from app.theme import apply_theme, load_theme
from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.relay.protocol import RELAY_VERSION, Auth, Hello, Subscribe, encode
from engine.remote.tls import PinStore, make_self_signed
from engine.remote.tokens import TokenStore
from tests.unit.engine.relay.synth import DAY, write_day
from widgets.monitor.relays import BAD, RelaysPanel
from widgets.monitor.workspace import MonitorWorkspace

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[3]
SYMBOLS = ["AAA", "BBB", "CCC"]


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def themed_app(qapp: QApplication) -> Iterator[QApplication]:
    palette, sheet, style = QPalette(qapp.palette()), qapp.styleSheet(), qapp.style().name()
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


def test_watch_entries_are_read_or_refused_with_the_reason() -> None:
    w = parse_watch("ny4=wss://10.0.4.30:7350")
    assert (w.name, w.host, w.port, w.tls, w.fingerprint) == ("ny4", "10.0.4.30", 7350, True, "")
    fp = ":".join(["ab"] * 32)
    w = parse_watch(f" ws://127.0.0.1:9 #{fp}")
    assert (w.name, w.endpoint, w.tls, w.fingerprint) == (
        "127.0.0.1:9",
        "127.0.0.1:9",
        False,
        fp.upper(),
    )
    with pytest.raises(ValueError, match=r"^relays/watch: 'http://x:1' is not \[name=\]wss://"):
        parse_watch("http://x:1")
    with pytest.raises(ValueError, match=r"^relays/watch: 'a=wss://h' is not \[name="):
        parse_watch("a=wss://h")
    with pytest.raises(ValueError, match=r"^relays/watch: 'wss://h:99999': Port out of range"):
        parse_watch("wss://h:99999")
    with pytest.raises(ValueError, match=r"the fingerprint after # must be the SHA-256 one"):
        parse_watch("wss://h:1#AB:CD")


def test_no_relay_configured_starts_nothing_and_says_where(qtbot: object, tmp_path: Path) -> None:
    settings = AppSettings(tmp_path / "qwconsole.ini")
    panel = RelaysPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    monitor = RelayMonitor.from_settings(settings, panel)
    assert not monitor.watching
    assert monitor.poller is None
    assert panel.is_empty
    assert panel.empty.text() == (
        f"No relay attached — add one in {tmp_path / 'qwconsole.ini'}: "
        "[relays] watch=wss://host:port (docs/relay.md)."
    )
    monitor.close()


def test_relays_without_a_token_or_with_a_name_twice_are_red_rows(
    qtbot: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QWCONSOLE_RELAY_TOKEN", raising=False)
    panel = RelaysPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    settings = AppSettings(tmp_path / "qwconsole.ini")
    settings.relays = ["ny4=wss://127.0.0.1:7350"]
    monitor = RelayMonitor.from_settings(settings, panel)
    assert monitor.poller is None  # nothing to ask with: nothing started
    assert panel.row_texts("ny4")[-1] == (
        "⚠ not watched: no token: set $QWCONSOLE_RELAY_TOKEN (relays/token_env) or "
        "relays/token_file"
    )
    # A token from a file; the second relay named "a" is refused, the first is watched.
    (tmp_path / "token").write_text("qw1.abc.def\n")
    monitor = RelayMonitor(
        ["a=ws://127.0.0.1:1", "a=ws://127.0.0.1:2"],
        read_token("QWCONSOLE_RELAY_TOKEN", str(tmp_path / "token")),
        panel,
        pins=tmp_path / "pins.json",
    )
    assert [r.state for r in panel.relays.values()] == ["connecting", "invalid"]
    assert panel.relays["a (a=ws://127.0.0.1:2)"].error == (
        "relays/watch: the name a is used twice"
    )
    monitor.start()
    qtbot.waitUntil(lambda: panel.relays["a"].state == "unreachable", timeout=10_000)  # type: ignore[attr-defined]
    monitor.close()


class Subscribers:
    """Two subscribers that keep up and one that stops reading, on a loop in a thread."""

    def __init__(self, port: int, token: str, pins: PinStore) -> None:
        self.port, self.token, self.pins = port, token, pins
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._main(),), daemon=True
        )
        self._thread.start()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
            sock.connect(("127.0.0.1", self.port))
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            stalled = await connect(
                f"wss://127.0.0.1:{self.port}/",
                sock=sock,
                ssl=ctx,
                server_hostname="localhost",
                max_queue=1,
            )
            await stalled.send(encode(Hello(version=RELAY_VERSION, client="stalled")))
            await stalled.recv()
            await stalled.send(encode(Auth(token=self.token)))
            await stalled.recv()
            await stalled.send(encode(Subscribe(rid=1, symbols=SYMBOLS)))
            m = MarketData(SYMBOLS, MessageBus(), LiveClock(), n_levels=2000)
            clients = [
                RelayClient("127.0.0.1", self.port, self.token, ["AAA", "BBB"], market=m,
                            tls=True, pins=self.pins, name="steady-a"),
                RelayClient("127.0.0.1", self.port, self.token, ["CCC"], market=m, tls=True,
                            pins=self.pins, name="steady-b"),
            ]  # fmt: skip
            for c in clients:
                await c.start()
        except BaseException as e:
            self.error = e
            raise
        finally:
            self.ready.set()
        await self._stop.wait()
        for c in clients:
            await c.close()
        stalled.transport.abort()

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._loop.close()


def test_monitor_shows_a_real_relay_its_links_and_the_failures(
    qtbot: object,
    themed_app: QApplication,
    tmp_path: Path,
    out_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QWCONSOLE_CONFIG_DIR", str(tmp_path / "config"))
    write_day(tmp_path / "day.h5", SYMBOLS, 150_000)  # 1.5 s of venue time, 30 s at speed 0.05
    make_self_signed(tmp_path / "r1.crt", tmp_path / "r1.key")
    tokens = TokenStore(tmp_path / "tokens.toml")
    alice = tokens.add("alice", "viewer", LiveClock().now_ns())
    ops = tokens.add("ops", "viewer", LiveClock().now_ns())
    monkeypatch.setenv("QWCONSOLE_RELAY_TOKEN", ops)
    ins = "".join(f'[[instruments]]\nsymbol = "{s}"\ntick_size = "0.01"\n\n' for s in SYMBOLS)
    (tmp_path / "r1.toml").write_text(
        f'[relay]\nid = "relay-ny4"\nport = 0\ntls_cert = "r1.crt"\ntls_key = "r1.key"\n'
        f'token_store = "tokens.toml"\ncache_rows = 4000\nmax_lag_rows = 1000\n\n{ins}'
        f'[[sources]]\ntype = "tickstore"\nname = "day"\npath = "day.h5"\nday = "{DAY}"\n'
        f"speed = 0.05\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "relay", "--config", str(tmp_path / "r1.toml")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    subs: Subscribers | None = None
    monitor: RelayMonitor | None = None
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("relay relay-ny4 listening on 127.0.0.1:"), first
        port = int(first.split()[4].rpartition(":")[2])
        subs = Subscribers(port, alice, PinStore(tmp_path / "subscriber-pins.json"))
        assert subs.ready.wait(30)
        assert subs.error is None, subs.error
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = int(s.getsockname()[1])
        settings = AppSettings(tmp_path / "qwconsole.ini")
        settings.relays = [
            f"ny4=wss://127.0.0.1:{port}",
            f"gone=wss://127.0.0.1:{closed}",
            "oops=http://127.0.0.1:1",
        ]
        settings.sync()

        apply_theme(themed_app, load_theme("dark"))
        ws = MonitorWorkspace()
        qtbot.addWidget(ws)  # type: ignore[attr-defined]
        ws.resize(1600, 900)
        ws.show()
        qtbot.waitExposed(ws)  # type: ignore[attr-defined]
        ws.relays_dock.raise_()
        panel = ws.relays_view
        monitor = RelayMonitor.from_settings(AppSettings(tmp_path / "qwconsole.ini"), panel, ws)
        assert monitor.watching

        def stalled_seen() -> bool:
            r = panel.relays.get("ny4")
            return r is not None and r.state == "up" and any(x.stalled for x in r.links)

        qtbot.waitUntil(stalled_seen, timeout=30_000)  # type: ignore[attr-defined]
        qtbot.waitUntil(lambda: panel.relays["gone"].state == "unreachable", timeout=10_000)  # type: ignore[attr-defined]
        r = panel.relays["ny4"]
        assert r.relay_id == "relay-ny4"
        assert r.instruments == 3
        assert r.rows_in_per_s > 500
        (src,) = r.sources
        assert (src.name, src.kind, src.state) == ("day", "tickstore", "replaying")
        assert src.symbols == tuple(SYMBOLS)
        assert src.rows_per_s > 500
        links = {x.client: x for x in r.links}
        assert set(links) == {"steady-a", "steady-b", "stalled", "qwconsole-monitor"}
        assert links["steady-a"].symbols == ("AAA", "BBB")
        assert links["steady-b"].symbols == ("CCC",)
        assert links["steady-a"].rows_per_s > 0
        assert links["steady-b"].rows_per_s > 0
        assert not links["steady-a"].stalled
        assert not links["steady-b"].stalled
        assert links["stalled"].stalled
        assert links["stalled"].lag_rows > 0
        assert (links["qwconsole-monitor"].user, links["qwconsole-monitor"].symbols) == ("ops", ())
        # What the tree says of them.
        peer = links["stalled"].peer
        assert panel.row_texts("ny4", "links", peer)[-1].startswith("stalled: not reading")
        assert panel.row_texts("ny4", "sources", "day")[5:7] == ["tickstore", "AAA, BBB, CCC"]
        assert panel.row_texts("gone")[-1] == (
            "⚠ unreachable: connection refused (is the relay running on that port?); retrying"
        )
        assert panel.row_texts("oops=http://127.0.0.1:1")[-1] == (
            "⚠ not watched: relays/watch: 'oops=http://127.0.0.1:1' is not "
            "[name=]wss://host:port (or ws:// on loopback)"
        )
        assert panel._items[("gone",)].foreground(7).color() == panel.tone(BAD)
        # The relay's certificate was pinned in the console's own pin file.
        pinned = PinStore(tmp_path / "config" / "known-relays.json").get(f"127.0.0.1:{port}")
        assert pinned is not None
        ws.resizeDocks([ws.relays_dock], [1150], Qt.Orientation.Horizontal)  # room to read it
        ws.resizeDocks([ws.relays_dock], [330], Qt.Orientation.Vertical)
        QApplication.processEvents()
        ws.grab().save(str(out_dir / "monitor-relays.png"))
        panel.grab().save(str(out_dir / "monitor-relays-panel.png"))
        monitor.close()  # the poller's thread ends
        assert "qw-relay-watch" not in [t.name for t in threading.enumerate()]
    finally:
        if monitor is not None:
            monitor.close()
        if subs is not None:
            subs.close()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()
    assert code == 0
