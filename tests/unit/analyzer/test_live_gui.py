# SPDX-License-Identifier: MIT
"""The Analyzer following the running demo engine live, offscreen, through the console's bridge.

One session with the real embedded demo (FIX on loopback), in the order a trader works: the
engine's instruments are listed as live rows; double-clicking one charts it; quotes and trades
arrive and the chart follows the live edge, redrawn at most 20 times a second; the demo market
maker's own orders and fills appear on it; panning away stops the following and *Follow live*
brings it back; clicking a live fill shows its FIX chain. The Monitor keeps receiving every
event (the bridge is the client's only consumer). ``QWC_SCREENSHOTS=docs/screenshots`` keeps
the picture.
"""

import functools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from analyzer.live import LIVE_PREFIX
from analyzer.views.live import LIVE_WINDOW_NS, REDRAW_MS, LiveChart
from analyzer.views.workspace import AnalyzerWorkspace
from app.controller import Controller
from app.main_window import MainWindow
from app.settings import AppSettings
from engine.demo import DEMO_STRATEGY_ID, build_demo
from engine.embedded import EmbeddedEngineClient
from engine.warmup import warm_up

pytestmark = [pytest.mark.gui, pytest.mark.integration]

#: Generous: the demo trades within a second, but the machine is shared.
WAIT_MS = 20_000


@pytest.fixture
def console(qtbot: Any, tmp_path: Path) -> Iterator[MainWindow]:
    warm_up()
    demo = functools.partial(
        build_demo, journal_dir=tmp_path / "journal", store_dir=tmp_path / "fix"
    )
    controller = Controller(EmbeddedEngineClient(configure=demo, warm_up=warm_up))
    controller.start()
    window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(window)
    window.resize(1600, 1000)
    window.show()
    qtbot.waitExposed(window)
    yield window
    window.shutdown()


def wait(qtbot: Any, pred: Callable[[], object], what: str) -> None:
    try:
        qtbot.waitUntil(lambda: bool(pred()), timeout=WAIT_MS)
    except AssertionError as e:
        raise AssertionError(f"timed out waiting for {what}") from e


def _drag(qtbot: Any, chart: LiveChart, dx: int) -> None:
    """Drag the chart's plot horizontally by ``dx`` pixels with the left button."""
    viewport = chart.viewport()
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    steps = [(QEvent.Type.MouseButtonPress, centre, left, left)]
    steps += [
        (QEvent.Type.MouseMove, centre + QPointF(dx * k / 8, 0), none, left) for k in range(1, 9)
    ]
    steps.append((QEvent.Type.MouseButtonRelease, centre + QPointF(dx, 0), left, none))
    for kind, pos, button, buttons in steps:
        event = QMouseEvent(
            kind,
            pos,
            viewport.mapToGlobal(pos),
            button,
            buttons,
            Qt.KeyboardModifier.NoModifier,
        )
        QApplication.sendEvent(viewport, event)
        qtbot.wait(10)


def following(ws: AnalyzerWorkspace) -> bool:
    """Return whether the charts follow the live edge (read afresh after an action)."""
    return ws.following


def test_a_live_instrument_charted_from_the_running_demo(
    qtbot: Any, console: MainWindow, out_dir: Path
) -> None:
    bridge = console.controller.bridge
    seen = [0]
    bridge.events_received.connect(lambda batch: seen.__setitem__(0, seen[0] + len(batch)))
    console.show_workspace("analyzer")
    ws = console.analyzer
    assert ws.live is not None

    # The engine's instruments are listed as live rows of the browser.
    def live_row(symbol: str) -> int:
        rows = [
            r
            for r, e in enumerate(ws.browser.entries)
            if e.symbol == symbol and e.store.startswith(LIVE_PREFIX)
        ]
        return rows[0] if rows else -1

    wait(qtbot, lambda: live_row("ESZ6") >= 0 and live_row("CLF7") >= 0, "the live rows")
    store_cell = ws.browser.item(live_row("ESZ6"), 7)
    assert store_cell is not None
    assert store_cell.text() == "● live · embedded"

    # Double-click charts it.
    item = ws.browser.item(live_row("ESZ6"), 0)
    ws.browser.itemDoubleClicked.emit(item)
    chart = ws.chart("ESZ6")
    assert isinstance(chart, LiveChart)
    quotes = chart.live.live.buffers["bbo"]

    # Quotes arrive and are drawn up to the live edge, which the view follows.
    n0, redraws0, events0, seen0 = len(quotes), chart.redraws, ws.live.feed.events, seen[0]
    t_start = time.monotonic()
    wait(qtbot, lambda: len(quotes) >= n0 + 50 and chart.redraws >= redraws0 + 5, "quotes")
    qtbot.wait(300)
    elapsed = time.monotonic() - t_start
    assert ws.following
    newest = int(quotes.rows()["ts"][-1])
    drawn = chart.redraws
    wait(qtbot, lambda: chart.redraws > drawn, "a redraw")  # at most REDRAW_MS later
    t0, t1 = chart.view_ns()
    assert t0 < newest <= t1
    x, _ = chart.bid.getData()
    assert x is not None
    assert x[-1] >= chart.to_x(newest) - 1e-6  # the last quote is drawn
    # Coalesced: never more than one redraw pass per REDRAW_MS.
    assert ws.live.passes <= elapsed * 1000 / REDRAW_MS + 2
    # The Analyzer took every event the bridge delivered: nobody drained the client twice.
    assert ws.live.feed.events - events0 == seen[0] - seen0
    assert console.monitor.orders_view.all_model.records()  # the Monitor saw the orders too

    # The market maker's own orders appear on the chart (dashed lines at their prices).
    def own_in_view() -> int:
        seg = chart._segments
        if seg is None:
            return 0
        xs = [c.getData()[0] for c in (chart.own, chart.own_sell)]
        return sum(0 if a is None else len(a) for a in xs)

    wait(qtbot, own_in_view, "an own order of the market maker")
    assert chart.overlay is not None
    ev = chart.overlay.day.order_events
    esz6 = chart.overlay.day.instrument("ESZ6")
    assert np.any((ev["instrument"] == esz6) & (ev["strategy"] == DEMO_STRATEGY_ID))

    # A fill appears; clicking it shows its FIX chain and the order's history.
    wait(qtbot, lambda: chart._fill_rows is not None and chart._fill_rows.shape[0], "a fill")
    assert chart._fill_rows is not None
    chart.click_execution(chart._fill_rows.shape[0] - 1)
    assert ws.fix_chain
    assert any(b"35=8" in m.raw for m in ws.fix_chain)
    assert ws.history.rowCount() >= 2

    # Panning back in time stops the following; the view stays where the trader put it.
    ws.follow_live()
    _drag(qtbot, chart, 400)
    assert not following(ws)
    parked = chart.view_ns()
    wait(qtbot, lambda: int(quotes.rows()["ts"][-1]) > parked[1], "quotes beyond the view")
    qtbot.wait(3 * REDRAW_MS)
    assert chart.view_ns() == pytest.approx(parked, abs=1_000)
    # Follow live brings the newest rows back into view.
    newest = int(quotes.rows()["ts"][-1])
    ws.follow_action.trigger()
    assert following(ws)
    assert ws.window_ns == LIVE_WINDOW_NS  # a pan keeps the width the view follows with
    assert chart.view_ns()[1] >= newest
    wait(qtbot, lambda: chart.view_ns()[1] >= int(quotes.rows()["ts"][-1]) > newest, "following")

    # A second live instrument charts under it on the linked axis; the picture.
    ws.chart_live("CLF7")
    wait(qtbot, lambda: ws.chart("CLF7").redraws >= 3, "the second live chart")
    # For the docs picture, a minute of the market (the view's width) before it is taken.
    qtbot.wait(60_000 if os.environ.get("QWC_SCREENSHOTS") else 2_000)
    ws.browser_dock.raise_()  # the live rows under the charts
    qtbot.wait(1_100)  # their counts, listed again every second
    path = out_dir / "analyzer-live-dark.png"
    assert console.grab().save(str(path))
    assert path.stat().st_size > 20_000


def test_without_an_engine_live_rows_are_refused_clearly(qtbot: Any) -> None:
    ws = AnalyzerWorkspace()
    qtbot.addWidget(ws)
    errors: list[str] = []
    ws.error.connect(errors.append)
    assert ws.live is None
    assert not ws.follow_action.isEnabled()
    assert ws.open_day("ESZ6", "20261202", LIVE_PREFIX + "embedded") is None
    assert errors == ["ESZ6: no live engine to follow"]
    assert not ws.stack.charts


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_a_remote_engine_is_followed_live_through_its_client(qtbot: Any, tmp_path: Path) -> None:
    """The same Analyzer over a ``RemoteEngineClient`` (the demo served on loopback)."""
    from engine.remote.client import Backoff, RemoteEngineClient
    from tests.unit.engine.remote.conftest import ServedEngine

    warm_up()
    served = ServedEngine(
        tmp_path,
        engine_id="remote-demo",
        configure=functools.partial(
            build_demo, journal_dir=tmp_path / "journal", store_dir=tmp_path / "fix"
        ),
    )
    served.start()
    try:
        assert served.server is not None
        client = RemoteEngineClient(
            "127.0.0.1",
            served.server.port,
            served.token("v", "viewer"),
            tls=False,
            backoff=Backoff(0.05, 0.5),
        )
        controller = Controller(client)
        controller.start()
        window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
        qtbot.addWidget(window)
        try:
            window.show_workspace("analyzer")
            ws = window.analyzer
            wait(
                qtbot,
                lambda: any(e.symbol == "NQZ6" for e in ws.browser.entries),
                "the remote engine's instruments",
            )
            (entry,) = [e for e in ws.browser.entries if e.symbol == "NQZ6"]
            assert entry.store == LIVE_PREFIX + client.name
            chart = ws.chart_live("NQZ6")
            assert chart is not None
            quotes = chart.live.live.buffers["bbo"]
            wait(qtbot, lambda: len(quotes) >= 20 and chart.redraws >= 3, "remote quotes")
            x, _ = chart.bid.getData()
            assert x is not None
            assert len(x) > 0
            wait(qtbot, lambda: chart._segments is not None and chart._segments.n, "own orders")
        finally:
            window.shutdown()
    finally:
        served.stop()
