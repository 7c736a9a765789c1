# SPDX-License-Identifier: MIT
"""Long Analyzer work off the GUI thread: one worker thread per job, results as Qt signals.

A :class:`Job` runs a function on a plain Python thread (numpy, h5py and numba release the
GIL for the heavy parts) and reports back through signals, which Qt queues to the GUI thread.
The function receives a ``progress(fraction, text)`` callback and a
:class:`analyzer.dataset.CancelToken` it should poll.
"""

import logging
import threading
import weakref
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


class Latest(QObject):
    """Run a function for the newest request only: requests made while busy collapse to one.

    Used for work that follows the cursor (the book at an instant): the GUI thread never
    waits for it, and a fast-moving cursor does not queue up stale requests.

    Signals
    -------
    result(object)
        The function's result for the latest request handled.
    """

    result = Signal(object)

    def __init__(self, fn: Callable[[Any], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._fn = fn
        self._lock = threading.Lock()
        self._pending: tuple[Any] | None = None
        self._busy = False
        self._relay, self._me = thread_relay(), weakref.ref(self)

    def request(self, arg: Any) -> None:
        """Ask for ``fn(arg)``; an older request not yet started is dropped."""
        with self._lock:
            self._pending = (arg,)
            if self._busy:
                return
            self._busy = True
        threading.Thread(target=self._loop, name="analyzer-latest", daemon=True).start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._pending is None:
                    self._busy = False
                    return
                (arg,) = self._pending
                self._pending = None
            try:
                out = self._fn(arg)
            except Exception:
                log.warning("lookup failed for %r", arg, exc_info=True)
                continue
            self._relay.post(self._me, "_emit_result", out)

    def _emit_result(self, out: object) -> None:
        self.result.emit(out)

    @property
    def busy(self) -> bool:
        """Return whether a request is being handled."""
        with self._lock:
            return self._busy
