# SPDX-License-Identifier: MIT
"""Long Analyzer work off the GUI thread: one worker thread per job, results as Qt signals.

A :class:`Job` runs a function on a plain Python thread (numpy, h5py and numba release the
GIL for the heavy parts) and reports back through signals, which Qt queues to the GUI thread.
The function receives a ``progress(fraction, text)`` callback and a
:class:`analyzer.dataset.CancelToken` it should poll.
"""

import contextlib
import functools
import inspect
import logging
import os
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from analyzer.dataset import Cancelled, CancelToken
from widgets.relay import thread_relay

log = logging.getLogger(__name__)

Work = Callable[[Callable[[float, str], None], CancelToken], Any]


class Job(QObject):
    """One piece of work on a worker thread.

    Signals
    -------
    progress(float, str)
        Fraction done (0..1) and what is being done.
    finished(object)
        The function's result.
    failed(str)
        The error, one line (the work raised).
    cancelled()
        The work stopped because :meth:`cancel` was called.
    """

    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, title: str, work: Work, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.token = CancelToken()
        self._work = work
        self._thread = threading.Thread(target=self._run, name=f"analyzer-{title}", daemon=True)
        self._relay, self._me = thread_relay(), weakref.ref(self)
        self.done = False

    def start(self) -> "Job":
        """Start the work; return ``self``."""
        share_the_gil_finely()
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the work to stop at its next check."""
        self.token.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ended (tests and shutdown only); return whether it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        # Signals are emitted in the GUI thread through the never-deleted relay: emitting
        # them here would race with the job's deletion (widgets.relay).
        relay, me = self._relay, self._me

        def progress(fraction: float, text: str) -> None:
            relay.post(me, "_emit", "progress", fraction, text)

        try:
            result = self._work(progress, self.token)
        except Cancelled:
            self.done = True
            relay.post(me, "_emit", "cancelled")
        except Exception as e:
            log.debug("%s failed", self.title, exc_info=True)
            self.done = True
            relay.post(me, "_emit", "failed", f"{self.title}: {e}")
        else:
            self.done = True
            relay.post(me, "_emit", "finished", result)

    def _emit(self, signal: str, *args: object) -> None:
        getattr(self, signal).emit(*args)


#: GIL switch interval (s) while Analyzer workers run beside the GUI thread.
GUI_SWITCH_INTERVAL_S = 0.0005


def share_the_gil_finely() -> None:
    """Make a thread holding the GIL hand it over within :data:`GUI_SWITCH_INTERVAL_S`.

    A worker's Python and numpy steps (rows read for a zoomed-in span, a day's load) hold
    the GIL; the GUI thread asking for it waited up to the interpreter's switch interval
    (5 ms by default) at each handover, so a frame painted while rows were read took
    2-5 ms longer than its own work. Process-wide; never raises the interval.
    """
    if sys.getswitchinterval() > GUI_SWITCH_INTERVAL_S:
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)


def lower_thread_priority(nice: int = 10) -> None:
    """Make the calling thread yield the CPU to the GUI thread (Linux: nice is per thread).

    On a machine with few cores, a worker decompressing rows competes with the GUI thread
    for a core; with a higher nice value the kernel runs the GUI thread first.
    """
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not allowed: as is
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)


class _Request:
    """The newest argument of one :class:`Latest` and whether it is being handled."""

    def __init__(self, fn: Callable[[Any], Any], owner: "weakref.ref[Latest]") -> None:
        # A bound method is held weakly: its object usually owns the Latest.
        self.fn: Callable[[], Callable[[Any], Any] | None]
        if inspect.ismethod(fn):
            self.fn = weakref.WeakMethod(fn)
        else:
            self.fn = lambda: fn
        self.owner = owner
        self.pending: tuple[Any] | None = None
        self.running = False


class _LatestWorker:
    """The one thread that runs every :class:`Latest`'s function, in request order.

    Started once (with the first :class:`Latest`), it waits on a condition: a request only
    stores its argument and notifies, so the requesting frame never waits (starting a thread
    per request made it wait for the new thread to hand back the GIL). One thread for all
    charts: their reads take turns instead of taking every core from the GUI thread, and it
    runs at a lower priority than the GUI thread.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[_Request] = deque()
        self._relay = thread_relay()
        share_the_gil_finely()
        threading.Thread(target=self._run, name="analyzer-latest", daemon=True).start()

    def request(self, req: _Request, arg: Any) -> None:
        with self._cond:
            if req.pending is None:  # else it is queued already
                self._queue.append(req)
            req.pending = (arg,)
            self._cond.notify()

    def busy(self, req: _Request) -> bool:
        with self._cond:
            return req.pending is not None or req.running

    def _run(self) -> None:
        lower_thread_priority()
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                req = self._queue.popleft()
                assert req.pending is not None  # queued only with a request pending
                (arg,) = req.pending
                req.pending = None
                req.running = True
            try:
                fn = req.fn()
                if fn is not None:
                    out = fn(arg)
                    self._relay.post(req.owner, "_emit_result", out)
                del fn
            except Exception:
                log.warning("lookup failed for %r", arg, exc_info=True)
            finally:
                with self._cond:
                    req.running = False


@functools.cache
def _worker() -> _LatestWorker:
    return _LatestWorker()


class Latest(QObject):
    """Run a function for the newest request only: requests made while busy collapse to one.

    Used for work that follows the cursor (the book at an instant) or the view (rows to read
    for a zoomed-in span): the GUI thread never waits for it, and a fast-moving cursor does
    not queue up stale requests. One worker thread serves every instance
    (:class:`_LatestWorker`).

    Signals
    -------
    result(object)
        The function's result for the latest request handled.
    """

    result = Signal(object)

    def __init__(self, fn: Callable[[Any], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._req = _Request(fn, weakref.ref(self))
        self._worker = _worker()
        share_the_gil_finely()

    def request(self, arg: Any) -> None:
        """Ask for ``fn(arg)``; an older request not yet started is dropped."""
        self._worker.request(self._req, arg)

    def _emit_result(self, out: object) -> None:
        self.result.emit(out)

    @property
    def busy(self) -> bool:
        """Return whether a request is pending or being handled."""
        return self._worker.busy(self._req)
