# SPDX-License-Identifier: MIT
"""Logging configuration for the console: a file in the state folder and terse stderr."""

import logging
import logging.handlers
from pathlib import Path

from app.paths import state_dir
from engine import fastlog

FORMAT = "%(asctime)s.%(msecs)03d %(levelname)-7s %(threadName)s %(name)s: %(message)s"
DATEFMT = "%Y-%m-%d %H:%M:%S"


class _TerseFormatter(logging.Formatter):
    """One line per record on the terminal: the traceback goes to the log file only."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            return super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved


class ErrorCounter(logging.Handler):
    """Count records at ERROR and above (``--smoke`` fails when any was logged)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0
        self.first = ""

    def emit(self, record: logging.LogRecord) -> None:
        """Count ``record`` and remember the first message."""
        self.count += 1
        if not self.first:
            self.first = record.getMessage()


def configure(
    level: int = logging.INFO, log_file: Path | None = None, stderr_level: int = logging.ERROR
) -> ErrorCounter:
    """Install the console's handlers on the root logger and return the error counter.

    The engine's log calls (:mod:`engine.fastlog`) are queued from here on: the handlers run on
    the log writer thread, not on the trading thread.

    The terminal gets only ``stderr_level`` and above, one line each: the console shows
    warnings and alerts in its own views, and the log file keeps everything.
    """
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        if getattr(handler, "_qwconsole", False):
            root.removeHandler(handler)
    stderr = logging.StreamHandler()
    stderr.setLevel(stderr_level)
    stderr.setFormatter(_TerseFormatter("qwconsole: %(levelname)s: %(name)s: %(message)s"))
    handlers: list[logging.Handler] = [stderr]
    path = log_file or state_dir() / "qwconsole.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=20_000_000, backupCount=5, encoding="utf-8"
        )
        file_handler.setFormatter(logging.Formatter(FORMAT, DATEFMT))
        handlers.append(file_handler)
    except OSError as e:
        logging.getLogger(__name__).warning("cannot write the log file %s: %s", path, e)
    counter = ErrorCounter()
    handlers.append(counter)
    for handler in handlers:
        handler._qwconsole = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    fastlog.start()  # the engine's log calls return at once; these handlers run on its thread
    return counter


#: Qt messages that say nothing to a user (the offscreen platform's size-hint notice).
_QT_NOISE = ("This plugin does not support propagateSizeHints()",)


def install_qt_message_handler() -> None:
    """Route Qt's own warnings into Python logging (``qt`` logger) instead of raw stderr."""
    from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler

    qt_log = logging.getLogger("qt")
    levels = {
        QtMsgType.QtDebugMsg: logging.DEBUG,
        QtMsgType.QtInfoMsg: logging.INFO,
        QtMsgType.QtWarningMsg: logging.WARNING,
        QtMsgType.QtCriticalMsg: logging.ERROR,
        QtMsgType.QtFatalMsg: logging.CRITICAL,
    }

    def handler(mode: QtMsgType, _context: QMessageLogContext, message: str) -> None:
        level = logging.DEBUG if message in _QT_NOISE else levels.get(mode, logging.WARNING)
        qt_log.log(level, "%s", message)

    qInstallMessageHandler(handler)
