# SPDX-License-Identifier: MIT
"""A :class:`logging.Handler` that appends every log record it handles to a journal."""

import logging

from engine.journal.writer import Journal


class JournalHandler(logging.Handler):
    """Feed standard-library log records into a :class:`engine.journal.Journal`.

    The message (and the exception text, if any) is formatted on the calling thread, because
    a log record's arguments may change after the call; the encoding and the I/O happen on the
    journal's writer thread. The record is stamped with the journal's clock, not with
    ``LogRecord.created``, so that every timestamp in a journal comes from one clock.

    A record logged with ``extra=ALERTED`` is left out: its text is journaled as the
    :class:`engine.events.Alert` event, aggregated per cause, so a storm of the same alert
    costs one journal record per update, not one per repeat.

    Parameters
    ----------
    journal : Journal
        Where the records go.
    level : int
        Lowest level handled.
    """

    def __init__(self, journal: Journal, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.journal = journal
        self._now = journal.clock.now_ns
        self._exc_formatter = logging.Formatter()

    def emit(self, record: logging.LogRecord) -> None:
        """Append ``record`` to the journal (errors go to :meth:`handleError`)."""
        if getattr(record, "qw_alerted", False):  # journaled as an aggregated Alert event
            return
        try:
            exc_text = ""
            if record.exc_info:
                exc_text = self._exc_formatter.formatException(record.exc_info)
            elif record.exc_text:
                exc_text = record.exc_text
            if record.stack_info:
                exc_text = f"{exc_text}\n{record.stack_info}" if exc_text else record.stack_info
            self.journal.log_formatted(
                self._now(), record.levelno, record.name, record.getMessage(), exc_text
            )
        except Exception:
            self.handleError(record)
