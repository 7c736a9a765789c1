# SPDX-License-Identifier: MIT
"""The engine: bus, clock, the numbered event stream and command dispatch on one asyncio loop.

The same :class:`Engine` runs inside the console (``engine.embedded``, on a dedicated thread)
and headless on a server; it knows nothing of threads, sockets to clients or Qt. Components
(FIX sessions, order managers, strategies) publish on :attr:`Engine.bus`; every
:class:`engine.events.Event` published there is numbered and handed to the engine's sinks.
"""

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Protocol

from engine.alerts import AlertAggregator
from engine.bus import MessageBus
from engine.clock import Clock
from engine.commands import (
    Command,
    CommandAck,
    CommandError,
    CommandResult,
    Ping,
    SetHeartbeatInterval,
)
from engine.enums import EngineState
from engine.events import (
    Alert,
    EngineHeartbeat,
    EngineSnapshot,
    EngineStartProgress,
    EngineStateChanged,
    Event,
    EventRecord,
)
from engine.fastlog import get_log
from engine.gcpace import freeze_start_up
from engine.pages import small_pages

log = get_log(__name__)

#: ``warm_up(progress)`` compiles (or loads) the kernels before the components start and calls
#: ``progress(done, total)`` after each kernel it had to compile (``engine.warmup.warm_up``).
WarmUp = Callable[[Callable[[int, int], None]], object]
#: The start stage of a warm-up that compiles: only the first start after an install does.
COMPILING_STAGE = "compiling kernels (first start only)"
#: Warm-up threads started by any engine (a console exits without waiting for them).
_warm_up_threads: list[threading.Thread] = []


def warm_up_running() -> bool:
    """Return whether a kernel warm-up thread is still compiling (a console quit meanwhile).

    Such a thread cannot be interrupted; a process that exits while it runs should end with
    ``os._exit`` after its own clean shutdown rather than let the interpreter finalise under it.
    """
    _warm_up_threads[:] = [t for t in _warm_up_threads if t.is_alive()]
    return bool(_warm_up_threads)


#: Bounds of the heartbeat interval a client may set, in ms.
MIN_HEARTBEAT_MS = 10
MAX_HEARTBEAT_MS = 60_000


class StartCancelled(Exception):
    """A stop was requested while the engine was being set up (raised by a progress report)."""


class Component(Protocol):
    """A part of the engine (trading desk, FIX sessions, simulator) with a lifecycle.

    Components start in the order they were added and stop in reverse order, on the engine
    loop. A component answers the commands it owns and describes its state as events for
    snapshots.
    """

    @property
    def name(self) -> str:
        """Return a short name for logs."""
        ...

    def start(self, engine: "Engine") -> None:
        """Start on the running engine loop (tasks may be created here).

        A component may also define ``async prepare_stop()`` (called for every component
        before any ``stop``, e.g. to cancel orders while the FIX sessions are still up) and
        ``close()`` (called after the engine's last event, e.g. to close the journal).
        """
        ...

    async def stop(self) -> None:
        """Stop cleanly: cancel tasks, flush files."""
        ...

    def handle(self, command: Command) -> CommandResult | None:
        """Answer ``command`` if it is this component's; ``None`` otherwise."""
        ...

    def state_events(self) -> list[Event]:
        """Return events that rebuild this component's current state in a fresh client."""
        ...


class Engine:
    """Run the engine's components on the current asyncio loop.

    Parameters
    ----------
    clock : Clock
        Source of time for everything in the engine.
    engine_id : str
        Name shown to clients, e.g. ``"embedded"`` or a host name.
    heartbeat_interval_ms : int
        Period of :class:`EngineHeartbeat`.
    history : int
        How many recent events the engine keeps for snapshots.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        engine_id: str = "embedded",
        heartbeat_interval_ms: int = 1000,
        history: int = 64,
    ) -> None:
        _check_heartbeat_ms(heartbeat_interval_ms)
        self.clock = clock
        self.engine_id = engine_id
        self.bus = MessageBus()
        self._seq = 0
        self._sinks: list[Callable[[EventRecord], None]] = []
        self._recent: deque[EventRecord] = deque(maxlen=history)
        self._state = EngineState.STOPPED
        self._ts_started = 0
        self._mono_started = 0
        self._hb_interval_ns = heartbeat_interval_ms * 1_000_000
        self._hb_count = 0
        self._last_hb: EngineHeartbeat | None = None
        self._stop: asyncio.Event | None = None
        self._stop_requested = False
        self._progress: EngineStartProgress | None = None
        self._hb_changed: asyncio.Event | None = None
        self.components: list[Component] = []
        #: Folds repeated alerts of one cause before they are numbered (engine.alerts).
        self.alerts = AlertAggregator(clock, self._number, lambda: self._seq + 1)
        self.bus.subscribe(Event, self._sequence)

    def add_component(self, component: Component) -> None:
        """Add a component; it starts with the engine (or at once if the engine runs)."""
        self.components.append(component)
        if self._state is EngineState.RUNNING:
            component.start(self)

    # ------------------------------------------------------------------ stream
    def add_sink(self, sink: Callable[[EventRecord], None]) -> None:
        """Hand every numbered event to ``sink`` (called on the engine loop, in order)."""
        self._sinks.append(sink)

    def _sequence(self, event: Event) -> None:
        if type(event) is Alert:
            folded = self.alerts.admit(event)
            if folded is None:  # a repeat, counted in its aggregate
                return
            event = folded
        self._number(event)

    def _number(self, event: Event) -> None:
        self._seq += 1
        record = EventRecord(self._seq, event)
        self._recent.append(record)
        for sink in self._sinks:
            sink(record)

    @property
    def state(self) -> EngineState:
        """Return the lifecycle state."""
        return self._state

    def snapshot(self) -> EngineSnapshot:
        """Return the current state; call on the engine loop."""
        now = self._progress  # what a starting engine is doing, for a console that joins
        progress = (now,) if now is not None and self._state is EngineState.STARTING else ()
        return EngineSnapshot(
            seq=self._seq,
            engine_id=self.engine_id,
            state=self._state,
            ts_started=self._ts_started,
            ts_snapshot=self.clock.now_ns(),
            heartbeat_interval_ns=self._hb_interval_ns,
            heartbeats=self._hb_count,
            last_heartbeat=self._last_hb,
            recent=tuple(self._recent),
            state_events=(*progress, *(e for c in self.components for e in c.state_events())),
        )

    # ------------------------------------------------------------------ commands
    def handle(self, command: Command) -> CommandResult:
        """Carry out ``command`` and return the acknowledgement or the refusal."""
        now = self.clock.now_ns()
        if self._state is not EngineState.RUNNING:
            return CommandError(
                command=command, ts_handled=now, reason=f"engine is {self._state.name.lower()}"
            )
        match command:
            case Ping(payload=payload):
                return CommandAck(command=command, ts_handled=now, detail=payload)
            case SetHeartbeatInterval(interval_ms=ms):
                try:
                    _check_heartbeat_ms(ms)
                except ValueError as e:
                    return CommandError(command=command, ts_handled=now, reason=str(e))
                self._hb_interval_ns = ms * 1_000_000
                if self._hb_changed is not None:
                    self._hb_changed.set()
                return CommandAck(command=command, ts_handled=now, detail=f"heartbeat {ms} ms")
        for component in self.components:
            result = component.handle(command)
            if result is not None:
                return result
        return CommandError(
            command=command,
            ts_handled=now,
            reason=f"unsupported command {type(command).__name__}",
        )

    # ------------------------------------------------------------------ lifecycle
    def request_stop(self) -> None:
        """Ask :meth:`run` to stop; safe to call before, during or after it runs.

        Once :meth:`run` runs, call it on the engine loop. Before that (while the engine is
        being set up) any thread may call it: :meth:`run` then stops at once, and the set-up
        work stops at its next :meth:`report_progress`.
        """
        self._stop_requested = True
        if self._stop is not None:
            self._stop.set()

    def report_progress(self, stage: str, done: int = 0, total: int = 0, unit: str = "") -> None:
        """Tell clients what the engine is doing on its way to ``RUNNING``.

        Long set-up work (a journal replay, in the configure step before :meth:`run`) reports
        here as it goes, and :meth:`run` reports its own stages (kernels, each component), so
        a console shows a slow start as progress, not as a failure
        (:class:`engine.events.EngineStartProgress`). Publishes on the bus, on the calling
        thread: call it on the thread that sets the engine up, or on the engine loop.

        Raises
        ------
        StartCancelled
            If a stop was requested before :meth:`run` began: the set-up work ends here.
        """
        if self._stop_requested and self._stop is None:
            raise StartCancelled(f"stop requested while {stage}")
        self._progress = EngineStartProgress(
            ts_event=self.clock.now_ns(),
            engine_id=self.engine_id,
            stage=stage,
            done=done,
            total=total,
            unit=unit,
        )
        self.bus.publish(self._progress)

    def abandon(self, reason: str, *, failed: bool) -> None:
        """End an engine whose set-up failed (or was cancelled) before :meth:`run`.

        Publishes the final state (``FAILED`` or ``STOPPED``, with ``reason``) and closes the
        components added so far (a journal opened by the set-up is flushed and closed).
        """
        self._set_state(EngineState.FAILED if failed else EngineState.STOPPED, reason)
        self._close_components(self.components)

    def _close_components(self, components: list[Component]) -> None:
        for component in reversed(components):
            close = getattr(component, "close", None)  # after the very last event
            if close is not None:
                try:
                    close()
                except Exception:
                    log.exception("component %s failed to close", component.name)

    async def run(self, warm_up: WarmUp | None = None) -> None:
        """Start the components, run until :meth:`request_stop`, then stop them cleanly.

        ``warm_up`` (compiling the numba kernels, seconds on a cold cache) runs in a worker
        thread before the components start; the heartbeat and commands keep going meanwhile,
        and a stop request during it is honoured at once. Each stage is reported
        (:meth:`report_progress`). An exception from a component's start ends the run in
        ``FAILED`` with the reason and is raised again.
        """
        small_pages()  # before the components allocate: no huge-page faults mid-session
        self._stop = asyncio.Event()
        if self._stop_requested:  # asked before the run began (a console closed meanwhile)
            self._stop.set()
        self._hb_changed = asyncio.Event()
        self._ts_started = self.clock.now_ns()
        self._mono_started = self.clock.monotonic_ns()
        self._set_state(EngineState.STARTING)
        heartbeat = asyncio.create_task(self._heartbeat_loop(), name="engine-heartbeat")
        started: list[Component] = []
        failure = ""
        try:
            if await self._start_components(warm_up, started):
                self._set_state(EngineState.RUNNING)
                freeze_start_up()
                await self._stop.wait()
        except Exception as e:
            failure = f"{type(e).__name__}: {e}"
            raise
        finally:
            self._set_state(EngineState.STOPPING)
            for component in reversed(started):
                prepare = getattr(component, "prepare_stop", None)  # e.g. cancel while FIX is up
                if prepare is not None:
                    try:
                        await prepare()
                    except Exception:
                        log.exception("component %s failed to prepare to stop", component.name)
            for component in reversed(started):
                try:
                    await component.stop()
                except Exception:
                    log.exception("component %s failed to stop cleanly", component.name)
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            self.alerts.close()  # the last counts of aggregated alerts, before the journal closes
            if failure:
                self._set_state(EngineState.FAILED, failure)
            else:
                self._set_state(EngineState.STOPPED, "stopped on request")
            # Every component, started or not: one that never started may hold an open file.
            self._close_components(self.components)

    async def _start_components(self, warm_up: WarmUp | None, started: list[Component]) -> bool:
        """Warm up, then start every component (adding it to ``started``), reporting each stage.

        Return False if a stop was requested before everything started.
        """
        assert self._stop is not None
        if self._stop.is_set():
            return False
        if warm_up is not None:
            self.report_progress("compiling kernels")
            if not await self._warm(warm_up):
                return False
        for component in self.components:
            self.report_progress(f"starting {component.name}")
            component.start(self)
            started.append(component)
        self._progress = None
        return True

    async def _warm(self, warm_up: WarmUp) -> bool:
        """Run ``warm_up`` off the loop; return False if a stop was requested meanwhile.

        It runs on a daemon thread of its own, never the loop's executor: a numba compile
        cannot be interrupted, and the interpreter joins executor threads at exit, so a console
        closed while compiling would outlive its window by a minute. Each kernel it compiles
        is reported as "compiling kernels (first start only) 12/73".
        """
        assert self._stop is not None
        loop = asyncio.get_running_loop()
        warm: asyncio.Future[object] = loop.create_future()

        def settle(result: object, error: BaseException | None) -> None:
            if warm.done():
                return
            if error is None:
                warm.set_result(result)
            else:
                warm.set_exception(error)

        def progress(done: int, total: int) -> None:  # on the warm-up thread
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is watching
                loop.call_soon_threadsafe(self._report_compiling, done, total)

        def work() -> None:
            result: object = None
            error: BaseException | None = None
            try:
                result = warm_up(progress)
            except Exception as e:
                error = e
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, result, error)

        thread = threading.Thread(target=work, name="kernel-warm-up", daemon=True)
        thread.start()
        _warm_up_threads.append(thread)
        stop: asyncio.Future[object] = asyncio.ensure_future(self._stop.wait())
        done, _pending = await asyncio.wait((warm, stop), return_when=asyncio.FIRST_COMPLETED)
        if stop in done:
            return False  # the daemon thread finishes compiling on its own, or dies at exit
        stop.cancel()
        await asyncio.gather(stop, return_exceptions=True)
        try:
            warm.result()
        except Exception:
            log.exception("warm-up failed; kernels will compile on first use")
        return True

    def _report_compiling(self, done: int, total: int) -> None:
        if self._state is EngineState.STARTING and self._progress is not None:
            self.report_progress(COMPILING_STAGE, done, total)

    def _set_state(self, state: EngineState, reason: str = "") -> None:
        self._state = state
        self.bus.publish(
            EngineStateChanged(
                ts_event=self.clock.now_ns(), engine_id=self.engine_id, state=state, reason=reason
            )
        )

    async def _heartbeat_loop(self) -> None:
        assert self._hb_changed is not None
        due = self.clock.monotonic_ns()  # the first heartbeat goes out at once
        while True:
            delay_s = max(0, due - self.clock.monotonic_ns()) / 1e9
            self._hb_changed.clear()
            if delay_s > 0:
                try:
                    await asyncio.wait_for(self._hb_changed.wait(), delay_s)
                except TimeoutError:
                    pass
                else:  # interval changed: reschedule from now
                    due = self.clock.monotonic_ns() + self._hb_interval_ns
                    continue
            mono = self.clock.monotonic_ns()
            self._hb_count += 1
            self._last_hb = EngineHeartbeat(
                ts_event=self.clock.now_ns(),
                engine_id=self.engine_id,
                counter=self._hb_count,
                uptime_ns=mono - self._mono_started,
                interval_ns=self._hb_interval_ns,
                loop_lag_ns=max(0, mono - due),
            )
            self.bus.publish(self._last_hb)
            due += self._hb_interval_ns
            if due < mono:  # fell behind by more than an interval: do not burst to catch up
                due = mono + self._hb_interval_ns


def _check_heartbeat_ms(ms: int) -> None:
    if not MIN_HEARTBEAT_MS <= ms <= MAX_HEARTBEAT_MS:
        raise ValueError(
            f"heartbeat interval {ms} ms is outside {MIN_HEARTBEAT_MS}..{MAX_HEARTBEAT_MS} ms"
        )
