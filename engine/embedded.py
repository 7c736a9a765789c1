# SPDX-License-Identifier: MIT
"""The embedded engine: an :class:`engine.core.Engine` on its own asyncio loop and thread.

The console's GUI thread runs Qt; a repaint there must never delay a heartbeat or an order, so
the engine gets a dedicated thread with a plain asyncio loop (DESIGN.md, "Process model"). The
engine code is exactly the code that runs headless. Events cross to the client side through a
lock-protected queue; the GUI drains it in batches.

The engine thread owns the link state: ``CONNECTING`` while the engine is set up (the configure
step, which may replay a long journal), ``CONNECTED`` from the moment its loop runs, and
``DISCONNECTED`` when the thread ends. No deadline turns a slow start into a failure: the engine
reports each stage as :class:`engine.events.EngineStartProgress` events, and only an exception
(or a thread that ended) is a failed start.
"""

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future

from engine.bad_input import bad_file_errors, one_line
from engine.client import ClientState, EngineStartError, EventInbox
from engine.clock import Clock, LiveClock
from engine.commands import Command, CommandError, CommandResult
from engine.core import Engine, StartCancelled, WarmUp
from engine.enums import EngineState
from engine.events import EngineSnapshot, EngineStateChanged, EventRecord
from engine.fastlog import get_log

log = get_log(__name__)


class EmbeddedEngineClient:
    """Run an engine in this process and expose it through the ``EngineClient`` interface.

    Parameters
    ----------
    clock : Clock | None
        The engine's clock (``LiveClock`` by default).
    heartbeat_interval_ms : int
        Period of the engine heartbeat.
    max_queue : int
        Events kept for a client that does not drain; beyond it the oldest are dropped and
        counted in :attr:`dropped` (the GUI then re-reads a snapshot).
    configure : Callable[[Engine], object] | None
        Called on the engine thread, before the engine starts, to add its components (for
        example ``engine.demo.build_demo``).
    warm_up : WarmUp | None
        Run in a worker thread before the engine's components start
        (``engine.warmup.warm_up`` compiles the kernels while the window appears and the
        heartbeat already runs).
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        heartbeat_interval_ms: int = 1000,
        max_queue: int = 1_000_000,
        configure: Callable[[Engine], object] | None = None,
        warm_up: WarmUp | None = None,
    ) -> None:
        self._warm_up = warm_up
        self._clock = clock or LiveClock()
        self._configure = configure
        self._hb_ms = heartbeat_interval_ms
        self._inbox = EventInbox(max_queue)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: Engine | None = None
        self._state = ClientState.IDLE
        self._error = ""
        self._lock = threading.Lock()  # orders close() against the loop coming up
        self._closing = False
        self._ran = False  # the engine reached RUNNING
        self._settled = threading.Event()  # ... or the thread ended
        #: The set-up stopped at a bad file (a damaged journal, a broken dictionary): the
        #: error names it, and a command-line start exits with status 2.
        self.bad_input = False

    # ------------------------------------------------------------------ EngineClient
    @property
    def name(self) -> str:
        """Return ``"embedded"``."""
        return "embedded"

    @property
    def state(self) -> ClientState:
        """Return the link state."""
        return self._state

    @property
    def last_error(self) -> str:
        """Return why the engine stopped unexpectedly, or ``""``."""
        return self._error

    @property
    def thread(self) -> threading.Thread | None:
        """Return the engine thread (``None`` before :meth:`start`)."""
        return self._thread

    def start(self) -> None:
        """Start the engine thread and wait until the engine runs, however long that takes.

        A slow start (a long journal replay, kernels compiling on a cold cache) is not a
        failure: it reports its stages as events meanwhile. Raises ``EngineStartError`` with
        the reason when the set-up or a component's start raised, or the engine was stopped
        (:meth:`close`) before it ran.
        """
        with self._lock:
            if self._thread is not None:
                raise EngineStartError("the embedded engine was already started")
            if self._closing:
                raise EngineStartError("the embedded engine was closed before it started")
            self._state = ClientState.CONNECTING
            self._thread = threading.Thread(target=self._thread_main, name="qw-engine", daemon=True)
            # Started under the lock: close() may join it as soon as it sees it.
            self._thread.start()
        self._settled.wait()
        if self._error:
            raise EngineStartError(f"the embedded engine did not start: {self._error}")
        if not self._ran:
            raise EngineStartError("the embedded engine was stopped before it ran")

    def snapshot(self, timeout_s: float = 2.0) -> EngineSnapshot:
        """Return the engine's state, read on the engine thread."""
        loop, engine = self._require_running()
        fut: Future[EngineSnapshot] = Future()

        def take() -> None:
            fut.set_result(engine.snapshot())

        loop.call_soon_threadsafe(take)
        return fut.result(timeout_s)

    def drain(self, max_events: int | None = None) -> list[EventRecord]:
        """Return (and forget) the queued events, oldest first."""
        return self._inbox.drain(max_events)

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` from the engine thread when events arrive after a drain.

        The callback must return at once (post a message, set a flag). After
        ``set_wakeup(None)`` returns, the previous callback is not called any more.
        """
        self._inbox.set_wakeup(callback)

    @property
    def dropped(self) -> int:
        """Events dropped because the client did not drain in time."""
        return self._inbox.dropped

    def send(self, command: Command) -> Future[CommandResult]:
        """Hand ``command`` to the engine thread; the future resolves to its answer."""
        fut: Future[CommandResult] = Future()
        loop, engine = self._loop, self._engine
        if loop is None or engine is None or loop.is_closed():
            fut.set_result(
                CommandError(command=command, ts_handled=0, reason="the engine is not running")
            )
            return fut

        def run() -> None:
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(engine.handle(command))
                except Exception as e:  # a bug in a handler must still answer the client
                    log.exception("command %r failed", command)
                    fut.set_result(
                        CommandError(
                            command=command,
                            ts_handled=self._clock.now_ns(),
                            reason=f"internal error: {e}",
                        )
                    )

        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:  # loop closed between the check and the call
            fut.set_result(
                CommandError(command=command, ts_handled=0, reason="the engine is not running")
            )
        return fut

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the engine cleanly and join its thread; idempotent."""
        with self._lock:
            self._closing = True  # a start() after this refuses
            thread, loop, engine = self._thread, self._loop, self._engine
            if thread is None:
                self._state = ClientState.DISCONNECTED
                return
            if loop is None and engine is not None:
                # Still being set up, its loop not running yet: the flag is all there is to
                # set, and the set-up stops at its next progress report.
                engine.request_stop()
        if loop is not None and engine is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(engine.request_stop)
        thread.join(timeout_s)
        if thread.is_alive():
            self._error = f"the engine thread did not stop within {timeout_s:g} s"
            log.error(self._error)
        self._state = ClientState.DISCONNECTED

    # ------------------------------------------------------------------ engine thread
    def _require_running(self) -> tuple[asyncio.AbstractEventLoop, Engine]:
        loop, engine = self._loop, self._engine
        if loop is None or engine is None or loop.is_closed():
            raise EngineStartError("the embedded engine is not running")
        return loop, engine

    def _thread_main(self) -> None:
        loop = new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            engine = Engine(self._clock, heartbeat_interval_ms=self._hb_ms)
            engine.add_sink(self._inbox.push)
            engine.bus.subscribe(EngineStateChanged, self._on_engine_state)
            with self._lock:
                self._engine = engine
                if self._closing:
                    engine.request_stop()
            if self._configure is not None and not self._set_up(engine):
                return
            with self._lock:
                self._loop = loop  # from now on close() stops it through the loop
                self._state = ClientState.CONNECTED
            loop.run_until_complete(engine.run(self._warm_up))
        except Exception as e:
            self._error = f"{type(e).__name__}: {e}"
            log.exception("the embedded engine failed")
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                self._state = ClientState.DISCONNECTED
                self._settled.set()

    def _set_up(self, engine: Engine) -> bool:
        """Run the configure step; return False (the engine abandoned) if it did not finish."""
        assert self._configure is not None
        try:
            self._configure(engine)
        except StartCancelled as e:
            log.info("the embedded engine was stopped while it was set up (%s)", e)
            engine.abandon("stopped while starting", failed=False)
            return False
        except bad_file_errors() as e:  # the file and the reason; no traceback
            self._error, self.bad_input = one_line(e), True
            log.warning("the embedded engine could not be set up: %s", self._error)
            engine.abandon(self._error, failed=True)
            return False
        except Exception as e:
            self._error = f"{type(e).__name__}: {e}"
            log.exception("the embedded engine could not be set up")
            engine.abandon(self._error, failed=True)
            return False
        return True

    def _on_engine_state(self, event: EngineStateChanged) -> None:
        if event.state is EngineState.RUNNING:
            self._ran = True
            self._settled.set()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """Return a uvloop loop where uvloop is installed (faster sockets), else asyncio's."""
    try:
        import uvloop  # optional: not on every platform
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
