# SPDX-License-Identifier: MIT
"""The window shows an engine start honestly (issue 15, item 7).

A slow start shows its stages and how long it takes, never "did not start"; the status bar
follows the engine's events to "running" and "logged on" however late they come; a start
that fails opens one dialog with the reason. Real window offscreen, real embedded engine,
real journal files. ``QWC_SCREENSHOTS=docs/screenshots`` writes ``starting.png`` for the docs
(from a bigger journal); otherwise the image goes to the test's temporary folder.
"""

import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox

from app.controller import Controller
from app.main_window import MainWindow
from app.multi_client import MultiEngineClient
from app.settings import AppSettings
from app.startup import FAILED_TITLE, StartupView
from engine.client import ClientState
from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import EngineState, SessionState
from engine.events import (
    EngineHeartbeat,
    EngineStartProgress,
    EngineStateChanged,
    EventRecord,
    SessionStatusChanged,
    VenueLinkChanged,
)
from engine.journal import recovery
from tests.journal_files import write_day_journal
from widgets.status_bar import PROGRESS_STEPS, StatusIndicators, describe_progress

pytestmark = pytest.mark.gui

SLOW_STAGE = "test: a deliberately slow stage"


def _progress(stage: str, done: int = 0, total: int = 0, unit: str = "") -> EventRecord:
    ev = EngineStartProgress(
        ts_event=1, engine_id="embedded", stage=stage, done=done, total=total, unit=unit
    )
    return EventRecord(1, ev)


def _state(state: EngineState, reason: str = "") -> EventRecord:
    return EventRecord(
        1, EngineStateChanged(ts_event=1, engine_id="embedded", state=state, reason=reason)
    )


def _session(state: SessionState) -> EventRecord:
    ev = SessionStatusChanged(
        ts_event=1,
        session_id="FIX.4.4:QWCONSOLE->QWSIM",
        state=state,
        next_sender_seq_num=1,
        next_target_seq_num=1,
    )
    return EventRecord(1, ev)


def test_a_stage_reads_as_a_trader_would_say_it() -> None:
    mb = 1_000_000
    big = _progress("replaying journal", 12 * mb, 64 * mb, "bytes").event
    small = _progress("replaying journal", 1_200_000, 3_400_000, "bytes").event
    parts = _progress("loading", 2, 3, "parts").event
    assert isinstance(big, EngineStartProgress)
    assert isinstance(small, EngineStartProgress)
    assert isinstance(parts, EngineStartProgress)
    assert describe_progress(big) == "replaying journal 12 MB / 64 MB"
    assert describe_progress(small) == "replaying journal 1.2 MB / 3.4 MB"
    assert describe_progress(parts) == "loading 2 / 3 parts"
    assert describe_progress(EngineStartProgress(ts_event=1, engine_id="e", stage="x")) == "x"


def test_the_status_bar_follows_a_start_from_its_events(qtbot: object) -> None:
    host = QMainWindow()
    qtbot.addWidget(host)  # type: ignore[attr-defined]
    status = StatusIndicators(host.statusBar(), "embedded", still_starting_after_s=0.3)
    host.show()
    label, bar, sessions = status.engine_label, status.progress_bar, status.sessions_label
    assert label.text() == "● Engine embedded: not running"
    assert not bar.isVisibleTo(host)

    status.on_client_state(ClientState.CONNECTING)
    assert label.text() == "● Engine embedded: starting — setting up"
    assert bar.isVisibleTo(host)
    assert bar.maximum() == 0  # busy: nothing says how far yet
    assert sessions.text() == "FIX: –"  # not "no sessions": they are announced later

    status.on_events([_progress("replaying journal", 12_000_000, 64_000_000, "bytes")])
    assert label.text() == "● Engine embedded: starting — replaying journal 12 MB / 64 MB"
    assert (bar.maximum(), bar.value()) == (PROGRESS_STEPS, 187)
    assert label.property("state") == "warn"

    qtbot.waitUntil(lambda: "still starting" in label.text(), timeout=3000)  # type: ignore[attr-defined]
    assert re.fullmatch(
        r"● Engine embedded: still starting — replaying journal 12 MB / 64 MB, \d+ s",
        label.text(),
    )
    assert "not a failure" in label.toolTip()

    status.on_client_state(ClientState.CONNECTED)
    status.on_events([_state(EngineState.STARTING), _progress("compiling kernels")])
    assert label.text().startswith("● Engine embedded: still starting — compiling kernels, ")
    assert bar.maximum() == 0

    beat = EngineHeartbeat(
        ts_event=1,
        engine_id="embedded",
        counter=1,
        uptime_ns=1,
        interval_ns=10**9,
        loop_lag_ns=0,
    )
    status.on_events([_state(EngineState.RUNNING), EventRecord(2, beat)])
    assert label.text() == "● Engine embedded: running"
    assert label.property("state") == "ok"
    assert not bar.isVisibleTo(host)
    assert sessions.text() == "FIX: no sessions"

    status.on_events([_session(SessionState.LOGON_SENT)])
    assert sessions.text() == "FIX: 0/1 logged on, 1 logging on"
    status.on_events([_session(SessionState.LOGGED_ON)])
    assert sessions.text() == "FIX: 1/1 logged on"
    assert sessions.property("state") == "ok"
    # An OUCH link joins the count; while it is down the indicator warns.
    ouch = VenueLinkChanged(
        ts_event=2,
        venue="SIM-OUCH",
        protocol="OUCH",
        up=False,
        detail="QWC1@127.0.0.1:5002",
        state="Disconnected",
        next_out=7,
        next_in=12,
    )
    status.on_events([EventRecord(3, ouch)])
    assert sessions.text() == "FIX: 1/1 logged on · OUCH: 0/1 up"
    assert sessions.property("state") == "warn"
    assert "OUCH QWC1@127.0.0.1:5002: disconnected  out 7 / in 12" in sessions.toolTip()
    status.on_events([EventRecord(4, dataclasses.replace(ouch, up=True, state="Logged in"))])
    assert sessions.text() == "FIX: 1/1 logged on · OUCH: 1/1 up"
    assert sessions.property("state") == "ok"


def test_the_status_bar_says_a_start_failed_and_why(qtbot: object) -> None:
    host = QMainWindow()
    qtbot.addWidget(host)  # type: ignore[attr-defined]
    status = StatusIndicators(host.statusBar(), "embedded")
    status.on_client_state(ClientState.CONNECTING)
    status.on_events([_progress("replaying journal", 1, 2, "bytes")])
    status.on_start_failed("JournalCorruptError: embedded-20261203.qwj: CRC mismatch")
    status.on_client_state(ClientState.DISCONNECTED)
    assert status.engine_label.text() == "● Engine embedded: failed to start"
    assert status.engine_label.property("state") == "bad"
    assert "CRC mismatch" in status.engine_label.toolTip()
    assert not status.progress_bar.isVisibleTo(host)


def _window(
    qtbot: object, tmp_path: Path, configure: Callable[[Engine], object]
) -> tuple[MainWindow, Controller, StartupView]:
    """Build the window as ``qwconsole`` does, its engine not started yet."""
    client = EmbeddedEngineClient(heartbeat_interval_ms=200, configure=configure)
    controller = Controller(MultiEngineClient([client]))
    window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    view = StartupView(window, controller)
    window.status.on_client_state(ClientState.CONNECTING)
    return window, controller, view


def _link(controller: Controller) -> ClientState:
    """Return the link state (a call: mypy would narrow a repeated attribute read)."""
    return controller.client.state


def _dialogs(window: MainWindow) -> list[QMessageBox]:
    return [box for box in window.findChildren(QMessageBox) if box.isVisible()]


def test_a_slow_start_shows_progress_then_running_and_logged_on(
    qtbot: object, tmp_path: Path
) -> None:
    journal = write_day_journal(tmp_path / "journal", "embedded", LiveClock(), 3_000_000)

    def configure(engine: Engine) -> None:
        engine.report_progress(SLOW_STAGE)
        time.sleep(2.5)  # longer than the "still starting" threshold below
        build_demo(engine, journal_dir=journal.parent, store_dir=tmp_path / "fix")

    window, controller, view = _window(qtbot, tmp_path, configure)
    window.status.still_starting_after_s = 1.0
    shown: list[str] = []  # the engine label after every batch of events
    controller.bridge.events_received.connect(
        lambda _batch: shown.append(window.status.engine_label.text())
    )
    window.show()
    started: list[float] = []
    controller.started.connect(lambda: started.append(time.monotonic()))
    try:
        controller.start_in_background()
        label = window.status.engine_label
        qtbot.waitUntil(  # type: ignore[attr-defined]
            lambda: label.text().startswith(f"● Engine embedded: still starting — {SLOW_STAGE}, "),
            timeout=10_000,
        )
        assert window.status.progress_bar.isVisible()
        assert _link(controller) is ClientState.CONNECTING
        assert window.statusBar().currentMessage() == "embedded: starting"  # not "connecting"
        assert not _dialogs(window)
        card = view.overlay  # the same over the Monitor's blotter
        qtbot.waitUntil(  # type: ignore[attr-defined]
            lambda: card.isVisible() and card.title_label.text().startswith("Engine still starting")
        )
        assert card.stage_label.text() == SLOW_STAGE
        assert card.bar.maximum() == 0  # the stage cannot say how far it is

        qtbot.waitUntil(lambda: bool(started), timeout=60_000)  # type: ignore[attr-defined]
        qtbot.waitUntil(  # type: ignore[attr-defined]
            lambda: (
                label.text() == "● Engine embedded: running"
                and window.status.sessions_label.text() == "FIX: 1/1 logged on · OUCH: 1/1 up"
            ),
            timeout=20_000,
        )
        assert not window.status.progress_bar.isVisible()
        assert not card.isVisible()
        assert _link(controller) is ClientState.CONNECTED
        assert not _dialogs(window)
        assert view.failure_box is None
        # The long stage of a journal replay is reading it (framing, CRCs, fills); the replay of
        # the orders' last views that follows is short.
        replay = re.compile(r"(reading|replaying) journal \d\.\d MB / 3\.\d MB")
        assert any(replay.search(text) for text in shown), shown
    finally:
        window.shutdown()


def test_a_start_that_fails_opens_one_dialog_with_the_reason(qtbot: object, tmp_path: Path) -> None:
    def broken(engine: Engine) -> None:
        engine.report_progress("reading settings")
        raise ValueError("demo.toml line 3: port 99999 is out of range")

    window, controller, view = _window(qtbot, tmp_path, broken)
    window.show()
    failed: list[str] = []
    controller.start_failed.connect(failed.append)
    try:
        controller.start_in_background()
        qtbot.waitUntil(lambda: bool(_dialogs(window)), timeout=15_000)  # type: ignore[attr-defined]
        qtbot.wait(600)  # type: ignore[attr-defined]  # the bridge's polls: no second report
        (box,) = _dialogs(window)
        assert box.windowTitle() == FAILED_TITLE
        assert "port 99999 is out of range" in box.text()
        assert box is view.failure_box
        assert len(failed) == 1
        assert window.status.engine_label.text() == "● Engine embedded: failed to start"
        assert "port 99999 is out of range" in window.status.engine_label.toolTip()
        assert not window.status.progress_bar.isVisible()
        assert not view.overlay.isVisible()
        box.close()
    finally:
        window.shutdown()


@pytest.fixture
def dark_app(qapp: QApplication) -> Iterator[QApplication]:
    palette, sheet, style = QPalette(qapp.palette()), qapp.styleSheet(), qapp.style().name()
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


def test_screenshot_of_a_start_replaying_its_journal(
    qtbot: object, tmp_path: Path, dark_app: QApplication, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = os.environ.get("QWC_SCREENSHOTS")
    out = Path(target) if target else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    # The journal reader is a kernel: the docs' picture (a bar 40% along) needs some megabytes.
    size = 40_000_000 if target else 3_000_000
    journal = write_day_journal(tmp_path / "journal", "embedded", LiveClock(), size)
    # The reader waits (on the engine's start thread) once it has said how far it is until the
    # picture is taken: a frame of the stage is certain however fast the machine reads.
    shot_taken = threading.Event()
    teller = recovery._teller

    def held_teller(progress: Any, stage: str, base: int, total: int) -> Any:
        tell = teller(progress, stage, base, total)
        if tell is None:
            return None

        def tell_then_wait(done: int, whole: int) -> None:
            tell(done, whole)
            if base + done >= (0.4 * total if target else 1):
                shot_taken.wait(30)

        return tell_then_wait

    monkeypatch.setattr(recovery, "_teller", held_teller)
    window, controller, view = _window(
        qtbot,
        tmp_path,
        lambda engine: build_demo(engine, journal_dir=journal.parent, store_dir=tmp_path / "fix"),
    )
    window.set_theme("dark")
    window.status.still_starting_after_s = 1.0
    window.resize(1600, 950)  # as the other Monitor screenshots
    shots: list[str] = []

    def shoot(_batch: list[EventRecord]) -> None:
        text, bar = window.status.engine_label.text(), window.status.progress_bar
        # The docs' picture waits for a bar 40% along; the test's small journal reads in a few
        # frames (the reader is a kernel), so any frame of the stage will do.
        along = 0.4 * bar.maximum() if target else 0
        if shots or "journal" not in text or bar.value() < along:
            return
        assert window.grab().save(str(out / "starting.png"))
        shots.append(text)
        shot_taken.set()
        assert view.overlay.isVisible()
        assert view.overlay.stage_label.text() in text  # the card says what the status bar says

    controller.bridge.events_received.connect(shoot)
    window.show()
    try:
        controller.start_in_background()
        qtbot.waitUntil(lambda: bool(shots), timeout=60_000)  # type: ignore[attr-defined]
    finally:
        shot_taken.set()
        window.shutdown()
    assert re.search(r"starting — (reading|replaying) journal [\d.]+ MB / [\d.]+ MB", shots[0])
    assert (out / "starting.png").stat().st_size > 10_000


@pytest.mark.gui
def test_screenshot_of_a_first_start_compiling_its_kernels(
    qtbot: object, tmp_path: Path, dark_app: QApplication
) -> None:
    target = os.environ.get("QWC_SCREENSHOTS")
    out = Path(target) if target else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    shot_taken = threading.Event()

    def warm_up(progress: Callable[[int, int], None]) -> None:  # a compiler, kernel by kernel
        for done in range(1, 64):
            progress(done, 63)
            if done == 24:
                shot_taken.wait(30)
            time.sleep(0.001)

    client = EmbeddedEngineClient(heartbeat_interval_ms=200, warm_up=warm_up)
    controller = Controller(MultiEngineClient([client]))
    window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    view = StartupView(window, controller)
    window.status.on_client_state(ClientState.CONNECTING)
    window.set_theme("dark")
    window.resize(1600, 950)
    shots: list[str] = []
    bars: list[tuple[int, int]] = []  # the progress bar (value, maximum) in the shot

    def shoot(_batch: list[EventRecord]) -> None:
        text = window.status.engine_label.text()
        if shots or "24 / 63" not in text:
            return
        assert window.grab().save(str(out / "starting-compiling.png"))
        shots.append(text)
        bars.append((window.status.progress_bar.value(), window.status.progress_bar.maximum()))
        assert view.overlay.isVisible()
        assert view.overlay.stage_label.text() in text
        shot_taken.set()  # the warm-up goes on from here: read the bar before

    controller.bridge.events_received.connect(shoot)
    window.show()
    try:
        controller.start_in_background()
        qtbot.waitUntil(lambda: bool(shots), timeout=30_000)  # type: ignore[attr-defined]
        value, maximum = bars[0]
        assert value == pytest.approx(24 / 63 * maximum, abs=2)
    finally:
        shot_taken.set()
        window.shutdown()
    assert "compiling kernels (first start only) 24 / 63" in shots[0]
