# SPDX-License-Identifier: MIT
"""Run the console: QApplication, qasync loop, embedded engine, main window, clean shutdown.

Shutdown is the same whichever way it is asked for — window close, Ctrl+Q, SIGINT or SIGTERM:
the window saves its settings, the engine stops and its thread is joined, logs are flushed.
"""

import argparse
import asyncio
import functools
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

import qasync
from PySide6.QtCore import QSocketNotifier, QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from app import logs
from app.bridge import GcPacer
from app.controller import Controller
from app.main_window import MainWindow
from app.multi_client import MultiEngineClient
from app.paths import resource, state_dir
from app.process import seconds_since_process_start
from app.settings import AppSettings
from app.startup import StartupView
from engine import fastlog
from engine.client import ClientState
from engine.embedded import EmbeddedEngineClient
from engine.events import EngineHeartbeat, EventRecord, OrderChanged, OrderFilled
from engine.pages import small_pages
from widgets.connect_dialog import ConnectRequest

if TYPE_CHECKING:
    from engine.core import Engine

log = logging.getLogger(__name__)

DEFAULT_SCREENSHOT_AFTER_S = 1.5
DEFAULT_SIZE = (1400, 860)
#: How long ``--smoke`` and ``--screenshot`` wait for a start (the window itself never gives up).
HEADLESS_START_LIMIT_S = 300.0


def _say(text: str, *, error: bool = False) -> None:
    stream = sys.stderr if error else sys.stdout
    stream.write(f"qwconsole: {text}\n")
    stream.flush()


def _configure_demo(engine: "Engine", opts: argparse.Namespace | None = None) -> None:
    """Add the demo to ``engine``; runs on the engine thread, which also pays its imports.

    With ``--strategy`` (checked by the command line already) that strategy runs too, started.
    """
    from engine.demo import build_demo

    desk = build_demo(engine, journal_dir=state_dir() / "journal", store_dir=state_dir() / "fix")
    ref = getattr(opts, "strategy", None)
    if opts is not None and ref is not None:
        from engine.strategy.loader import build_strategy

        strategy = build_strategy(ref, opts.strategy_id, opts.symbols, opts.param)
        desk.add_strategy(strategy, autostart=True)


def _warm_up(progress: Callable[[int, int], None]) -> object:
    """Load (or compile) the kernels; runs on the engine's warm-up thread."""
    from engine.warmup import warm_up

    return warm_up(progress)


def has_display() -> bool:
    """Return whether a window system is reachable (X11 or Wayland)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class SignalWaker:
    """Turn SIGINT/SIGTERM into a clean close, even while Qt's C++ loop is blocking.

    Python runs signal handlers only between bytecodes; the wake-up fd makes Qt's loop return to
    Python when a signal arrives (the ``set_wakeup_fd`` + ``QSocketNotifier`` pattern).
    """

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.received: list[int] = []
        self._r, self._w = socket.socketpair()
        self._r.setblocking(False)
        self._w.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._w.fileno())
        self._notifier = QSocketNotifier(self._r.fileno(), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._drain)
        self._old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signum)
        if len(self.received) > 1:  # asked twice: the clean shutdown is stuck, end it now
            fastlog.stop(timeout=0.5)
            logging.shutdown()
            os._exit(128 + signum)
        log.info("received %s: shutting down", signal.Signals(signum).name)
        QTimer.singleShot(0, self.window.close)

    def _drain(self) -> None:
        try:
            while self._r.recv(64):
                pass
        except BlockingIOError:
            pass

    def restore(self) -> None:
        """Put back the previous signal handlers and wake-up fd."""
        self._notifier.setEnabled(False)
        for s, old in self._old.items():
            signal.signal(s, old)
        signal.set_wakeup_fd(self._old_fd)
        self._r.close()
        self._w.close()


class SmokeCheck:
    """Watch the event stream for ``--smoke``: heartbeats must reach the GUI, in order.

    Every run logs when the first fill reached the window (``first fill … after process
    start``): the first-start figure of the bundle test.
    """

    def __init__(self) -> None:
        self.heartbeats = 0
        self.last_seq = 0
        self.out_of_order = 0
        self.orders = 0
        self.fills = 0

    def on_events(self, batch: list[EventRecord]) -> None:
        """Check one batch."""
        for record in batch:
            if record.seq <= self.last_seq:
                self.out_of_order += 1
            self.last_seq = record.seq
            if isinstance(record.event, EngineHeartbeat):
                self.heartbeats += 1
            elif isinstance(record.event, OrderChanged):
                self.orders += 1
            elif isinstance(record.event, OrderFilled):
                self.fills += 1
                if self.fills == 1:  # the start figure users feel (bundle test, issue 21)
                    log.info(
                        "first fill %.0f ms after process start",
                        seconds_since_process_start() * 1e3,
                    )


class ConsoleRun:
    """One run of the console, from QApplication to exit code."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.code = 0
        self.uncaught: list[str] = []
        self.errors = logs.configure()
        logs.install_qt_message_handler()
        self.smoke = SmokeCheck()
        self.engine_running = False

    def _excepthook(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        self.uncaught.append(f"{exc_type.__name__}: {exc}")
        log.error("uncaught exception", exc_info=(exc_type, exc, tb))

    def run(self) -> int:
        """Show the window, run the loop until it closes, and return the exit code."""
        t0 = time.perf_counter()
        sys.excepthook = self._excepthook
        small_pages()  # before the tables reserve their buffers (engine.pages says why)
        app = QApplication.instance() or QApplication(["qwconsole"])
        assert isinstance(app, QApplication)
        app.setApplicationName("qwconsole")
        app.setOrganizationName("qwconsole")
        app.setWindowIcon(QIcon(str(resource("icons", "qwconsole.svg"))))
        QGuiApplication.setDesktopFileName("qwconsole")
        app.setQuitOnLastWindowClosed(False)

        opts = self.opts
        headless_run = opts.smoke is not None or opts.screenshot is not None
        # One client for every engine: remote engines attach to it later (Engine menu). The
        # embedded engine starts once the window is on screen (below), on its own threads.
        self.embedded = EmbeddedEngineClient(
            configure=functools.partial(_configure_demo, opts=opts), warm_up=_warm_up
        )
        controller = Controller(MultiEngineClient([self.embedded]))
        window = MainWindow(controller, AppSettings(read_only=headless_run))
        self.window, self.controller = window, controller
        if opts.theme:
            window.set_theme(opts.theme)
        if opts.workspace:
            window.show_workspace(opts.workspace)
        if getattr(opts, "open", None):
            # After the first frame, with the rest of the lazy workspaces' building.
            QTimer.singleShot(0, window, functools.partial(self._open_files, opts.open))
        if opts.screenshot is not None:
            window.resize(*(opts.size or DEFAULT_SIZE))
        for name, host, port in getattr(opts, "connect", []):
            window.engines.connect_engine(
                ConnectRequest(
                    name=name,
                    host=host,
                    port=port,
                    token=os.environ.get("QWCONSOLE_TOKEN", ""),
                    tls=not opts.no_tls,
                    remember=False,
                )
            )
        controller.bridge.events_received.connect(self.smoke.on_events)
        waker = SignalWaker(window)

        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        done: asyncio.Future[None] = loop.create_future()
        window.closed.connect(lambda: None if done.done() else done.set_result(None))
        window.status.on_client_state(ClientState.CONNECTING)  # it starts after the first frame
        window.show()
        log.info(
            "window shown %.0f ms after process start (%.0f ms after run)",
            seconds_since_process_start() * 1e3,
            (time.perf_counter() - t0) * 1e3,
        )
        app.processEvents()  # paint the first frame before the engine's start competes for it
        log.info("first frame %.0f ms after process start", seconds_since_process_start() * 1e3)
        # The status bar follows the start's progress; only a real failure opens a dialog.
        StartupView(
            window, controller, log_path=state_dir() / "qwconsole.log", dialogs=not headless_run
        )
        controller.start_failed.connect(self._engine_failed)
        controller.started.connect(self._engine_started)
        controller.start_in_background()
        if headless_run:  # an unattended check must end; it says the start is still going
            QTimer.singleShot(int(HEADLESS_START_LIMIT_S * 1000), self._start_too_slow)
        # Start-up's objects leave the collector now; later ones once a second (no GC stalls).
        gc_pacer = GcPacer()
        gc_pacer.start()
        try:
            with loop:
                loop.run_until_complete(done)
        finally:
            gc_pacer.stop()
            window.shutdown()
            waker.restore()
            sys.excepthook = sys.__excepthook__
            logging.shutdown()
        if self.uncaught:
            self.code = self.code or 1
        return self.code

    def _open_files(self, paths: list[str]) -> None:
        opened = self.window.open_paths(paths)
        if opened and not self.opts.workspace:
            self.window.show_workspace(opened[0])

    def _start_too_slow(self) -> None:
        if self.engine_running or self.code:
            return
        status = self.window.status
        _say(
            f"error: the engine is still starting after {status.starting_seconds:.0f} s "
            f"({status.stage_text}); not failed, but this check stops here",
            error=True,
        )
        self.code = 1
        self.window.close()

    def _engine_started(self) -> None:
        self.engine_running = True
        # --smoke and --screenshot time their run from here: the engine starts after the window.
        opts = self.opts
        if opts.smoke is not None:
            QTimer.singleShot(int(opts.smoke * 1000), self._finish_smoke)
        if opts.screenshot is not None:
            after = DEFAULT_SCREENSHOT_AFTER_S if opts.after is None else opts.after
            QTimer.singleShot(int(after * 1000), self._shoot)

    def _engine_failed(self, reason: str) -> None:
        # The dialog is StartupView's; a headless run ends here with the reason instead.
        _say(f"error: {reason}", error=True)
        self.code = 2 if self.embedded.bad_input else 1  # 2: a bad file, named in the reason
        if self.opts.smoke is not None or self.opts.screenshot is not None:
            self.window.close()

    def _finish_smoke(self) -> None:
        smoke, problems = self.smoke, []
        if smoke.heartbeats == 0:
            problems.append("no engine heartbeat reached the window")
        if smoke.orders == 0:  # the demo trades at once: a start that does not is broken
            problems.append("no order event reached the window")
        if smoke.out_of_order:
            problems.append(f"{smoke.out_of_order} events out of order")
        fastlog.flush(2.0)  # the engine's last records reach the error counter first
        if self.errors.count:
            problems.append(f"{self.errors.count} errors logged, first: {self.errors.first}")
        if self.uncaught:
            problems.append(f"uncaught exception: {self.uncaught[0]}")
        if problems:
            _say("smoke failed: " + "; ".join(problems), error=True)
            self.code = 1
        else:
            bridge = self.controller.bridge
            _say(
                f"smoke ok: {smoke.heartbeats} heartbeats, {smoke.orders} order events, "
                f"{smoke.fills} fills, {bridge.events} events in {bridge.batches} batches, "
                f"last seq {smoke.last_seq}"
            )
        self.window.close()

    def _shoot(self) -> None:
        path = self.opts.screenshot
        path.parent.mkdir(parents=True, exist_ok=True)
        image = self.window.grab()
        if image.save(str(path), "PNG"):
            _say(f"wrote {path} ({image.width()}x{image.height()})")
        else:
            _say(f"error: cannot write {path}", error=True)
            self.code = 1
        self.window.close()


def run(opts: argparse.Namespace) -> int:
    """Run the console with parsed options; return the process exit code."""
    if opts.screenshot is not None or (opts.smoke is not None and not has_display()):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    elif not has_display() and not os.environ.get("QT_QPA_PLATFORM"):
        _say(
            "error: no display (DISPLAY and WAYLAND_DISPLAY are unset); run it in a desktop "
            "session, or use --smoke or --screenshot PATH",
            error=True,
        )
        return 1
    return ConsoleRun(opts).run()
