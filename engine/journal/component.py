# SPDX-License-Identifier: MIT
"""Journal the engine: every numbered event and every log record, one file per trading day.

:class:`JournalComponent` opens (or resumes) ``<dir>/<engine_id>-<YYYYMMDD>.qwj``, receives
every numbered event from the engine (before any component starts, so nothing is missed) and
the log records of the process, and closes the file — flushed — when the engine stops. FIX
messages reach it as :class:`engine.events.FixMessageSeen` events. :func:`journal_path` and
:func:`recover_day` let a restarted engine rebuild its state from the same file.
"""

import logging
import os
from datetime import UTC, datetime
from pathlib import Path

from engine.commands import Command, CommandResult
from engine.core import Engine
from engine.events import Event
from engine.fastlog import get_log
from engine.journal import Journal, JournalError, JournalHandler, RecoveredState, recover
from engine.journal.recovery import Progress
from engine.oms.manager import ARCHIVE_ORDERS

log = get_log(__name__)


def journal_path(directory: Path, engine_id: str, now_ns: int) -> Path:
    """Return the journal file of ``engine_id`` for the UTC day of ``now_ns``."""
    day = datetime.fromtimestamp(now_ns / 1e9, tz=UTC).strftime("%Y%m%d")
    return directory / f"{engine_id}-{day}.qwj"


def recover_day(
    directory: Path, engine_id: str, now_ns: int, progress: Progress | None = None
) -> RecoveredState | None:
    """Replay today's journal of ``engine_id``; ``None`` if there is none yet.

    ``progress`` (``Engine.report_progress``) is told how far the replay is, in bytes.
    """
    path = journal_path(directory, engine_id, now_ns)
    if not path.exists() or path.stat().st_size == 0:
        return None
    # Done orders beyond the order managers' archive stay in the journal only (issue 16).
    state = recover(path, progress, done_orders=ARCHIVE_ORDERS)
    for torn in state.torn_tails:
        log.warning("journal %s: dropped a torn last record: %s", path, torn)
    return state


class JournalComponent:
    """Engine component that journals everything the engine does.

    Parameters
    ----------
    engine : Engine
        The engine to journal (its sink is added here, before the engine starts).
    directory : Path
        Folder of the day files (created if missing).
    capture_logs : bool
        Also journal the process's log records (root logger, INFO and above).
    recovered : RecoveredState | None
        What :func:`recover_day` read of today's file, so that it is resumed without reading
        it again.
    """

    name = "journal"

    def __init__(
        self,
        engine: Engine,
        directory: Path,
        *,
        capture_logs: bool = True,
        recovered: RecoveredState | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = journal_path(directory, engine.engine_id, engine.clock.now_ns())
        # The file recover_day() just read need not be read again to be resumed.
        verified = recovered.verified_end(self.path) if recovered is not None else None
        try:
            self.journal = Journal(
                self.path, engine.clock, engine_id=engine.engine_id, verified=verified
            )
        except JournalError as e:  # another engine writes today's file: keep ours apart
            taken = self.path
            self.path = taken.with_name(f"{taken.stem}-{os.getpid()}{taken.suffix}")
            log.warning("%s; journaling to %s instead", e, self.path)
            self.journal = Journal(self.path, engine.clock, engine_id=engine.engine_id)
        engine.add_sink(self.journal.on_event_record)
        self._handler: JournalHandler | None = None
        if capture_logs:
            self._handler = JournalHandler(self.journal, logging.INFO)
            logging.getLogger().addHandler(self._handler)
        log.info("journal %s opened", self.path)

    def start(self, engine: Engine) -> None:
        """Nothing to start: the journal receives events since construction."""

    async def stop(self) -> None:
        """Flush and close the journal (the engine's very last events are written first)."""
        self._stop_capturing()
        self.journal.flush()

    def close(self) -> None:
        """Close the file (after the engine published its last event, started or not)."""
        self._stop_capturing()  # an engine stopped before it ran never called stop()
        self.journal.close()

    def _stop_capturing(self) -> None:
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler = None

    def handle(self, command: Command) -> CommandResult | None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state to show."""
        return []
