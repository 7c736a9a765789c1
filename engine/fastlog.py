# SPDX-License-Identifier: MIT
"""Logging for engine code: the caller pays well under a microsecond, files are written elsewhere.

A standard-library ``logger.info(...)`` does all of its work on the calling thread: it builds a
``LogRecord`` (caller lookup, thread and process names, a dozen attributes), then runs every
handler — the rotating log file, the journal's handler, the bus feed — before the call returns.
With the console's handlers that is tens of microseconds on the trading thread, more than the
whole tick-to-order budget. :class:`Log` keeps the standard logging *configuration* (levels,
handlers, formatters, ``caplog`` in tests) and moves the work:

* the level check is the standard one (cached by ``logging``), so a disabled level costs one
  method call;
* when :func:`start` has been called (the console and the headless engine do, at start-up),
  an enabled call puts one tuple on a :class:`queue.SimpleQueue` and returns; a listener
  thread builds the ``LogRecord`` (with the time and thread of the call) and hands it to the
  logger's handlers. Arguments are captured at the call: numbers, strings, enums and tuples of
  them are kept for later formatting, anything mutable formats the message at once (a dict
  logged with qty 1 and then changed is logged with 1);
* without :func:`start` (tests, scripts, library use) a call goes straight to the standard
  logger, exactly as ``logging.getLogger(name)`` would.

Engine modules write ``log = get_log(__name__)`` and use it like a standard logger
(``debug``/``info``/``warning``/``error``/``exception``/``critical``/``log``, ``exc_info``,
``extra``, ``stack_info``). :func:`flush` waits until everything logged so far reached the
handlers; :func:`stop` (also run at exit) drains the queue and ends the listener.
"""

import atexit
import logging
import sys
import threading
import traceback
from _thread import get_ident
from collections.abc import Callable
from decimal import Decimal
from enum import Enum
from queue import SimpleQueue
from time import time_ns  # noqa: TID251  (a log record carries wall time, as logging's do)
from typing import Any

DEBUG, INFO, WARNING = logging.DEBUG, logging.INFO, logging.WARNING

#: Argument types that cannot change after a log call: they may be formatted later.
SCALARS = (int, float, str, bytes, bool, type(None), Decimal, Enum)


def capture_args(msg: str, args: tuple[object, ...]) -> tuple[str, tuple[object, ...]]:
    """Return ``(msg, args)`` safe to format later: formatted now if an argument is mutable.

    A message that does not format with its arguments keeps them as their ``repr`` (as they
    were at the call), so the handler reports the mistake with the values of the moment.
    """
    for a in args:
        if not isinstance(a, SCALARS) and not (
            isinstance(a, tuple) and all(isinstance(x, SCALARS) for x in a)
        ):
            try:
                return msg % args, ()
            except (TypeError, ValueError):
                return msg, tuple(repr(x) for x in args)
    return msg, args


#: Exact types kept without a closer look (``capture_args`` decides for the rest).
_PLAIN = frozenset({int, float, str, bytes, bool, type(None)})

_Item = tuple[
    logging.Logger, int, str, tuple[object, ...], Any, Any, Any, int, int
]  # logger, level, msg, args, exc_info, extra, stack text, time ns, thread id


class _Listener:
    """The thread that turns queued calls into records for the standard handlers."""

    def __init__(self) -> None:
        self.queue: SimpleQueue[_Item | threading.Event | None] = SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="log writer", daemon=True)
        self.thread.start()
        #: Records handed to the handlers since the start.
        self.handled = 0

    def _run(self) -> None:
        get = self.queue.get
        while True:
            item = get()
            if item is None:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self._handle(item)
            except Exception:  # a broken handler must not end the logging of the process
                traceback.print_exc(file=sys.stderr)

    def _handle(self, item: _Item) -> None:
        logger, level, msg, args, exc_info, extra, stack, ns, ident = item
        record = logger.makeRecord(
            logger.name, level, "(queued)", 0, msg, args, exc_info, None, extra, stack
        )
        created = ns / 1e9
        record.created = created
        record.msecs = (ns // 1_000_000) % 1000
        record.relativeCreated = (created - logging._startTime) * 1000  # type: ignore[attr-defined]
        record.thread = ident
        thread = threading._active.get(ident)  # type: ignore[attr-defined]
        record.threadName = thread.name if thread is not None else f"thread {ident}"
        logger.handle(record)
        self.handled += 1


_listener: _Listener | None = None
_lock = threading.Lock()


def start() -> None:
    """Send every :class:`Log` call of this process through the queue from now on."""
    global _listener
    with _lock:
        if _listener is None:
            _listener = _Listener()


def running() -> bool:
    """Return whether calls go through the queue."""
    return _listener is not None


def flush(timeout: float = 5.0) -> bool:
    """Wait until the calls made so far reached the handlers; return ``False`` on timeout."""
    listener = _listener
    if listener is None:
        return True
    done = threading.Event()
    listener.queue.put(done)
    return done.wait(timeout)


def stop(timeout: float = 5.0) -> None:
    """Hand what is queued to the handlers, end the listener; later calls log directly."""
    global _listener
    with _lock:
        listener, _listener = _listener, None
    if listener is not None:
        listener.queue.put(None)
        listener.thread.join(timeout)


atexit.register(stop)  # after the last call of the program, before logging's own shutdown


def _stack_text() -> str:
    return "Stack (most recent call last):\n" + "".join(traceback.format_stack()[:-3]).rstrip()


def _fast_level(level: int, name: str) -> Callable[..., None]:
    """Return the method that logs at ``level`` (``Log.debug``/``info``/``warning``).

    The common call (queue started, plain arguments, no keywords) is written out in it: the
    level check from the standard logger's cache, the capture of the arguments and one
    ``put``; anything else goes through :meth:`Log._emit`.
    """

    def log_at(self: "Log", msg: str, *args: object, **kw: Any) -> None:
        logger = self._logger
        enabled = logger._cache.get(level)  # type: ignore[attr-defined]  # isEnabledFor(), cached
        if enabled is None:
            enabled = logger.isEnabledFor(level)
        if not enabled or logger.disabled:
            return
        listener = _listener
        if listener is None or kw:
            self._emit(level, msg, args, kw)
            return
        for a in args:  # capture_args(), its common case inlined (as in _emit)
            if type(a) not in _PLAIN:
                msg, args = capture_args(msg, args)
                break
        listener.queue.put((logger, level, msg, args, None, None, None, time_ns(), get_ident()))

    log_at.__name__ = name
    log_at.__qualname__ = f"Log.{name}"
    log_at.__doc__ = f"Log ``msg % args`` at {logging.getLevelName(level)}."
    return log_at


class Log:
    """A logger for engine code (see the module): the standard logger's API, queued calls.

    Parameters
    ----------
    name : str
        The standard logger's name (``__name__`` of the module).
    """

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger = logging.getLogger(name)

    @property
    def logger(self) -> logging.Logger:
        """Return the standard logger this writes to (levels and handlers are its)."""
        return self._logger

    def isEnabledFor(self, level: int) -> bool:
        """Return whether a call at ``level`` would be logged."""
        return self._logger.isEnabledFor(level)

    # The three levels logged on trading paths, built by _fast_level (one body, no extra call).
    debug = _fast_level(DEBUG, "debug")
    info = _fast_level(INFO, "info")
    warning = _fast_level(WARNING, "warning")

    def error(self, msg: str, *args: object, **kw: Any) -> None:
        """Log ``msg % args`` at ERROR."""
        if self._logger.isEnabledFor(logging.ERROR):
            self._emit(logging.ERROR, msg, args, kw)

    def exception(self, msg: str, *args: object, exc_info: Any = True, **kw: Any) -> None:
        """Log ``msg % args`` at ERROR with the exception being handled."""
        if self._logger.isEnabledFor(logging.ERROR):
            self._emit(logging.ERROR, msg, args, {**kw, "exc_info": exc_info})

    def critical(self, msg: str, *args: object, **kw: Any) -> None:
        """Log ``msg % args`` at CRITICAL."""
        if self._logger.isEnabledFor(logging.CRITICAL):
            self._emit(logging.CRITICAL, msg, args, kw)

    def log(self, level: int, msg: str, *args: object, **kw: Any) -> None:
        """Log ``msg % args`` at ``level``."""
        if self._logger.isEnabledFor(level):
            self._emit(level, msg, args, kw)

    def _emit(self, level: int, msg: str, args: tuple[object, ...], kw: dict[str, Any]) -> None:
        listener = _listener
        if listener is None:  # not started: the standard path, on this thread
            self._logger._log(level, msg, args, stacklevel=3, **kw)
            return
        if kw:
            self._emit_with(listener, level, msg, args, kw)
            return
        for a in args:  # capture_args(), its common case inlined
            if type(a) not in _PLAIN:
                msg, args = capture_args(msg, args)
                break
        listener.queue.put(
            (self._logger, level, msg, args, None, None, None, time_ns(), get_ident())
        )

    def _emit_with(
        self,
        listener: _Listener,
        level: int,
        msg: str,
        args: tuple[object, ...],
        kw: dict[str, Any],
    ) -> None:
        exc_info = kw.get("exc_info")
        if exc_info:  # the exception of the moment: it is gone when the listener runs
            if isinstance(exc_info, BaseException):
                exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
            elif not isinstance(exc_info, tuple):
                exc_info = sys.exc_info()
        else:
            exc_info = None
        stack = _stack_text() if kw.get("stack_info") else None
        msg, args = capture_args(msg, args)
        listener.queue.put(
            (
                self._logger, level, msg, args, exc_info, kw.get("extra"), stack,
                time_ns(), get_ident(),
            )
        )  # fmt: skip


def get_log(name: str) -> Log:
    """Return the :class:`Log` writing to the standard logger ``name``."""
    return Log(name)
