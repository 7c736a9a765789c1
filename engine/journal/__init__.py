# SPDX-License-Identifier: MIT
"""The journal: every order change, fill, FIX message, log record and alert, on disk.

Append on the trading path with :class:`Journal` (a deque append per call; encoding and I/O
on a writer thread), read back with :class:`JournalReader`, rebuild order state after a
restart with :func:`recover`. The file format is documented in ``docs/journal.md``.

An engine journals itself through the component of :mod:`engine.journal.component`
(``JournalComponent``, ``recover_day``), which is not re-exported here: it needs the engine's
core and order manager, which the format, reader and writer do not.
"""

from engine.journal.format import (
    FixDirection,
    FixMessageRecord,
    JournalClosedError,
    JournalCorruptError,
    JournalError,
    JournalEvent,
    JournalFormatError,
    JournalOpened,
    JournalRecord,
    JournalWriteError,
    LogEntry,
    UnknownEvent,
    register_type,
)
from engine.journal.logging_handler import JournalHandler
from engine.journal.reader import JournalReader, RawRecord, TornTail, read_journal
from engine.journal.recovery import RecoveredState, recover
from engine.journal.writer import Journal, JournalLogger

__all__ = [
    "FixDirection",
    "FixMessageRecord",
    "Journal",
    "JournalClosedError",
    "JournalCorruptError",
    "JournalError",
    "JournalEvent",
    "JournalFormatError",
    "JournalHandler",
    "JournalLogger",
    "JournalOpened",
    "JournalReader",
    "JournalRecord",
    "JournalWriteError",
    "LogEntry",
    "RawRecord",
    "RecoveredState",
    "TornTail",
    "UnknownEvent",
    "read_journal",
    "recover",
    "register_type",
]
