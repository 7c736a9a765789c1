# SPDX-License-Identifier: MIT
"""Carry engine events from any thread into the GUI thread, in batches.

The engine (embedded on its own thread, or remote behind a socket) wakes the bridge when events
arrive; the bridge drains the client at most once per ``interval_ms`` and re-emits everything
that arrived as one list, so a burst of ten thousand events costs one model update per view,
not ten thousand repaints (DESIGN.md: a visible table repainting per row manages ~250/s).
"""

import gc
import logging
import math
import threading
import time
import weakref

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from engine.client import ClientState, EngineClient
from engine.events import EngineSnapshot, EventRecord
from engine.gcpace import pacing_step
from widgets.relay import thread_relay

log = logging.getLogger(__name__)

#: Bounds of the batching interval, ms: one frame at 60 Hz up to 20 batches per second.
MIN_INTERVAL_MS = 16
MAX_INTERVAL_MS = 50


class EngineBridge(QObject):
    """Re-emit an ``EngineClient``'s event stream as Qt signals in the GUI thread.

    Parameters
    ----------
    client : EngineClient
        The engine to follow.
    interval_ms : int
        Minimum time between two batches (16–50 ms).

    Signals
    -------
    events_received(list)
        A batch of ``EventRecord`` in sequence order, emitted in the GUI thread.
    client_state_changed(object)
        The ``ClientState`` of the link changed.
    gap_detected(int, int)
        Events between the two sequence numbers were lost (the client dropped them); views
        should re-read a snapshot.
    """

    events_received = Signal(list)
    client_state_changed = Signal(object)
    gap_detected = Signal(int, int)

    def __init__(
        self, client: EngineClient, interval_ms: int = 25, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        if not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
            raise ValueError(
                f"batch interval {interval_ms} ms is outside {MIN_INTERVAL_MS}..{MAX_INTERVAL_MS}"
            )
        self._client = client
        self._interval_ms = interval_ms
        self._last_flush = 0.0
        self._last_seq = 0
        self._state = client.state
        self._connected = client.state is ClientState.CONNECTED
        #: Events drained while the engine's state is re-read after a gap (delivered after it).
        self._held: list[EventRecord] | None = None
        #: Re-reads of the state after lost events.
        self.resyncs = 0
        #: Batches and events delivered so far.
        self.batches = 0
        self.events = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(lambda: self.flush())
        # A slow poll notices link changes that produce no event (a lost remote engine).
        self._watch = QTimer(self)
        self._watch.setInterval(250)
        self._watch.timeout.connect(self._check_state)
        self._watch.start()
        # The wake-up comes from the engine thread. It goes through the process's relay, never
        # through a signal of this object: the engine thread must not touch a QObject the GUI
        # thread may be deleting at that moment (the relay drops it if the bridge is gone).
        relay, me = thread_relay(), weakref.ref(self)
        client.set_wakeup(lambda: relay.post(me, "_on_woken"))

    @property
    def client(self) -> EngineClient:
        """Return the engine client this bridge follows."""
        return self._client

    @property
    def last_seq(self) -> int:
        """Return the sequence number of the newest event delivered."""
        return self._last_seq

    def detach(self) -> None:
        """Stop following the client (before it is closed)."""
        self._client.set_wakeup(None)
        self._timer.stop()
        self._watch.stop()

    def _on_woken(self) -> None:
        if self._timer.isActive():
            return
        since_ms = (time.monotonic() - self._last_flush) * 1000.0
        # Round up: a batch never follows the previous one sooner than the interval.
        self._timer.start(max(0, math.ceil(self._interval_ms - since_ms)))

    def flush(self, *, force: bool = False) -> None:
        """Deliver everything the client has received as one batch (no-op when empty).

        Unless ``force`` (shutdown), a batch never follows the previous one sooner than the
        interval.
        """
        since_ms = (time.monotonic() - self._last_flush) * 1000.0
        if not force and self._last_flush and since_ms < self._interval_ms:
            # A timer may fire a hair early; hold the batch until the interval is really over.
            self._timer.start(math.ceil(self._interval_ms - since_ms))
            return
        self._last_flush = time.monotonic()
        batch = self._client.drain()
        self._check_state()
        if not batch:
            return
        if self._held is not None:  # the state is being re-read: these follow it
            self._held.extend(batch)
            return
        if self._last_seq and batch[0].seq != self._last_seq + 1:
            self._resync(batch)
            return
        self._deliver(batch)

    def _deliver(self, batch: list[EventRecord]) -> None:
        self._last_seq = batch[-1].seq
        self.batches += 1
        self.events += len(batch)
        self.events_received.emit(batch)

    def _resync(self, batch: list[EventRecord]) -> None:
        """Re-read the engine's state after lost events, on a worker thread.

        A snapshot of a remote engine is a round trip: the GUI thread never waits for it.
        Events drained meanwhile are held; the state (as events) and then the held events
        newer than it are delivered as one batch when the snapshot is in. ``batch`` starts
        after the lost events.
        """
        log.warning("engine events %d..%d were lost", self._last_seq + 1, batch[0].seq - 1)
        self.gap_detected.emit(self._last_seq + 1, batch[0].seq - 1)
        self._held = list(batch)
        self.resyncs += 1
        relay, me, client = thread_relay(), weakref.ref(self), self._client

        def read() -> None:
            try:
                snap = client.snapshot()
            except Exception as e:  # the engine may be going away; the gap stays reported
                log.warning("cannot re-read the engine's state after a gap: %s", e)
                relay.post(me, "_resynced", None)
                return
            relay.post(me, "_resynced", snap)

        threading.Thread(target=read, name="bridge-resync", daemon=True).start()

    def _resynced(self, snap: EngineSnapshot | None) -> None:
        held, self._held = self._held or [], None
        held.extend(self._client.drain())
        if snap is None:  # the gap stays: deliver what there is
            if held:
                self._deliver(held)
            return
        state = [EventRecord(snap.seq, ev) for ev in snap.state_events]
        rest = [r for r in held if r.seq > snap.seq]
        prev = snap.seq  # events lost again while the state was read: one more re-read
        cut = next((i for i, r in enumerate(rest) if r.seq != prev + 1 + i), len(rest))
        if state or rest[:cut]:
            self._deliver(state + rest[:cut])
        if cut < len(rest):
            self._resync(rest[cut:])

    def _check_state(self) -> None:
        state = self._client.state
        if state is not self._state:
            self._state = state
            self.client_state_changed.emit(state)
            if state is ClientState.CONNECTED:
                self._connected = True
            if state is ClientState.DISCONNECTED and self._client.last_error:
                # A start that failed is reported (and logged) by whoever started it: here it
                # goes to the log file only, not a second time to the terminal.
                level = logging.ERROR if self._connected else logging.WARNING
                log.log(level, "engine %s: %s", self._client.name, self._client.last_error)


class GcPacer(QObject):
    r"""Keep CPython's full garbage collections from stalling the GUI.

    A full (oldest-generation) collection walks every container object the process holds: with
    the blotter's orders, the lists' rows and the embedded engine's state that is millions of
    objects, a pause of 100–200 ms that grows with the session (``bench_monitor`` measured
    it). The pacer moves everything long-lived out of the collector's reach: once every
    ``interval_ms`` it collects the young generations (a few milliseconds), then
    ``gc.freeze()``\ s the survivors; every ``full_every``-th pass collects everything made
    since the previous freeze first. Automatic collections are off while it runs, so that every
    collection happens in the GUI thread (:meth:`start` says why).

    Reference counting still frees frozen objects; only a reference cycle that becomes garbage
    after it was frozen is never collected (the event records and table rows are acyclic; the
    benchmark counts such cycles after a storm and finds none).

    Parameters
    ----------
    interval_ms : int
        Time between two passes.
    full_every : int
        Every this many passes, collect all unfrozen objects, not only the young ones.
    parent : QObject | None
        Qt parent.
    """

    def __init__(
        self, interval_ms: int = 1000, full_every: int = 10, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.full_every = max(1, full_every)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.step)
        self._was_enabled = True
        #: Passes so far, objects freed by them and the longest pass, ms.
        self.passes = 0
        self.collected = 0
        self.longest_ms = 0.0

    @property
    def active(self) -> bool:
        """Return whether the pacer runs."""
        return self._timer.isActive()

    def start(self) -> None:
        """Freeze what exists now (start-up's objects) and pace from now on.

        The first pass walks everything once; it is start-up's cost and not counted. Automatic
        collections stop: they run in whichever thread allocates, and one in an engine or
        worker thread that frees a cycle holding a Qt object destroys it in the wrong thread
        (its timers stay registered with the GUI thread: a crash in ``activateTimers`` later).
        Every collection now runs here, in the GUI thread.
        """
        self._was_enabled = gc.isenabled()
        gc.disable()
        gc.collect()
        gc.freeze()
        self._timer.start()

    def stop(self) -> None:
        """Stop pacing, hand every frozen object back and restore automatic collection."""
        self._timer.stop()
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()

    def step(self) -> None:
        """Collect the young objects (all unfrozen ones now and then), freeze the survivors."""
        t = time.perf_counter()
        self.collected += pacing_step(self.passes, self.full_every)
        self.passes += 1
        self.longest_ms = max(self.longest_ms, (time.perf_counter() - t) * 1e3)
