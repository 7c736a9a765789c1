# SPDX-License-Identifier: MIT
"""The journal writer: a cheap append on the trading path, encoding and I/O on a thread.

The trading path appends a small tuple to a :class:`collections.deque` (atomic under the GIL,
no lock, no formatting, no I/O): about 0.3–0.5 µs per call here. A writer thread wakes every
``flush_interval_ms`` (or at once when asked to flush), drains the deque, encodes the records
with msgspec and writes them with one ``os.write`` per batch of at most ``batch_records``.
What ``os.write`` has handed to the kernel survives a killed process; :meth:`Journal.flush`
also calls ``fsync`` (by default) so that it survives a power cut.
"""

import atexit
import logging
import math
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import msgspec

from engine.bus import MessageBus
from engine.clock import Clock
from engine.events import Event, EventRecord
from engine.fastlog import capture_args, get_log
from engine.journal import format as fmt
from engine.journal.format import (
    KIND_EVENT,
    KIND_FIX,
    KIND_LOG,
    KIND_OPEN,
    KIND_SCHEMA,
    MAX_PAYLOAD,
    FixDirection,
    JournalClosedError,
    JournalWriteError,
    WriteSchema,
)
from engine.journal.reader import JournalReader, VerifiedEnd

try:  # advisory lock against a second writer; POSIX only
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

log = get_log(__name__)

#: Queue item marking a flush request: ``(_FLUSH, threading.Event)``.
_FLUSH: Final[int] = 0
#: Queue item asking for a call once everything before it is written: ``(_AFTER, callable)``.
_AFTER: Final[int] = -1
#: Longest log message kept, in characters; longer ones are cut and marked.
MAX_LOG_CHARS: Final[int] = 1 << 20

SyncPolicy = Literal["none", "flush", "batch"]

_Item = tuple[Any, ...]


class Journal:
    """Append engine events, FIX messages and log records to a journal file.

    Opening a new file writes the file header; opening an existing one checks it, drops a torn
    last record (truncating the file there) and resumes appending after the last intact record.
    Every open writes a :class:`engine.journal.format.JournalOpened` record.

    Parameters
    ----------
    path : str | Path
        The journal file (created if missing).
    clock : Clock
        Time source for log records and open markers.
    engine_id : str
        Recorded in the open marker.
    flush_interval_ms : float
        Longest time a record waits in memory before the writer thread writes it.
    batch_records : int
        Most records per ``os.write``; a larger backlog is written in several batches at once.
    sync : {"none", "flush", "batch"}
        When to ``fsync``: never, on :meth:`flush` and :meth:`close` (default), or after every
        batch. Without ``fsync`` written data survives a killed process, not a power cut.
    exclude : Iterable[type[Event]]
        Event classes not to journal (exact classes, e.g. a high-rate ``BookUpdated``).

    Raises
    ------
    JournalFormatError
        If ``path`` exists and is not a journal of a readable version.
    JournalCorruptError
        If ``path`` has a damaged record before its tail (it is never overwritten).
    JournalError
        If another process holds the file open for writing.

    Notes
    -----
    The append methods (:meth:`on_event`, :meth:`on_event_record`, :meth:`record_fix`,
    :meth:`log`, :class:`JournalLogger`) may be called from any thread. Log arguments are
    formatted on the writer thread: pass immutable values (numbers, strings, tuples).
    """

    def __init__(
        self,
        path: str | Path,
        clock: Clock,
        *,
        engine_id: str = "",
        flush_interval_ms: float = 20.0,
        batch_records: int = 4096,
        sync: SyncPolicy = "flush",
        exclude: Iterable[type[Event]] = (),
        verified: VerifiedEnd | None = None,
    ) -> None:
        if not math.isfinite(flush_interval_ms) or flush_interval_ms <= 0:
            raise ValueError(f"flush_interval_ms must be > 0, got {flush_interval_ms}")
        if batch_records <= 0:
            raise ValueError(f"batch_records must be > 0, got {batch_records}")
        if sync not in ("none", "flush", "batch"):
            raise ValueError(f"sync must be 'none', 'flush' or 'batch', got {sync!r}")
        self.path = Path(path)
        self.clock = clock
        self.engine_id = engine_id
        self._interval_s = flush_interval_ms / 1000.0
        self._batch = batch_records
        self._sync = sync
        self._exclude = frozenset(exclude)
        self._queue: deque[_Item] = deque()
        #: The trading-path append; replaced by a raising function on close.
        self._append: Callable[[_Item], None] = self._queue.append
        self._enc = msgspec.msgpack.Encoder()
        self._schemas: dict[type, WriteSchema] = {}
        self._schema_keys: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._next_type_id = 1
        self._pending_schemas: list[bytes] = []
        self._wake = threading.Event()
        self._closing = False
        self._closed = False
        self._error: BaseException | None = None
        self._unwritten = b""
        #: Records written to disk by the writer thread.
        self.records_written = 0
        #: Bytes of the file, header included, after the last write.
        self.bytes_written = 0
        #: Records that could not be encoded (each is replaced by a log record saying why).
        self.encode_errors = 0
        #: Byte offset where this writer started appending (after any torn tail it dropped).
        self.resumed_at = 0
        #: Size of the torn tail dropped on open, 0 if there was none.
        self.dropped_tail_bytes = 0
        #: Whether the file was resumed from a recovery's reading (not read again).
        self.resumed_verified = False
        self._verified = verified
        self._fd = self._open()
        self._thread = threading.Thread(target=self._run, name="journal-writer", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # ------------------------------------------------------------------ opening
    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as e:
                    raise fmt.JournalError(
                        f"{self.path}: another writer has the journal open ({e})"
                    ) from e
            size = os.fstat(fd).st_size
            if size == 0:
                os.write(fd, fmt.pack_file_header(self.clock.now_ns()))
                end = fmt.FILE_HEADER_SIZE
            else:
                end = self._resume(size, os.fstat(fd))
                os.ftruncate(fd, end)
            os.lseek(fd, end, os.SEEK_SET)
            self.resumed_at = end
            self.bytes_written = end
            opened = {
                "ts": self.clock.now_ns(),
                "pid": os.getpid(),
                "engine_id": self.engine_id,
                "offset": end,
            }
            data = fmt.frame(KIND_OPEN, 0, self._enc.encode(opened))
            self._write_all(fd, data)
            self.bytes_written += len(data)
            if self._sync != "none":
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _resume(self, size: int, st: os.stat_result) -> int:
        verified = self._verified
        if verified is None or not verified.matches(self.path, st):
            reader = JournalReader(self.path)
            for _chunk in reader.stream():  # checked a chunk at a time: a day's file is not held
                pass
            verified = reader.verified(st)
        else:
            self.resumed_verified = True
        end = verified.end_offset
        if verified.torn_tail is not None:
            self.dropped_tail_bytes = size - end
            log.warning(
                "%s: dropping a torn last record of %d bytes at offset %d (%s)",
                self.path,
                size - end,
                end,
                verified.torn_tail.reason,
            )
        for name, fields, type_id in verified.schemas:
            self._schema_keys[(name, fields)] = type_id
            self._next_type_id = max(self._next_type_id, type_id + 1)
        return end

    # ------------------------------------------------------------------ trading path
    def on_event(self, event: Event) -> None:
        """Append an event taken off the bus (recorded with ``seq`` 0)."""
        if type(event) not in self._exclude:
            self._append((KIND_EVENT, 0, event))

    def on_event_record(self, record: EventRecord) -> None:
        """Append a numbered event; use as an engine sink (``engine.add_sink``)."""
        if type(record.event) not in self._exclude:
            self._append((KIND_EVENT, record.seq, record.event))

    def subscribe(self, bus: MessageBus) -> None:
        """Journal every :class:`engine.events.Event` published on ``bus``.

        Use either this or ``engine.add_sink(journal.on_event_record)`` (which also records
        the engine's sequence numbers), not both.
        """
        bus.subscribe(Event, self.on_event)

    def record_fix(
        self,
        session_id: str,
        direction: FixDirection | int,
        raw: bytes,
        ts_created: int,
        ts_wire: int,
        ts_handled: int,
    ) -> None:
        """Append one FIX message with its three timestamps (ns since the epoch).

        Parameters
        ----------
        session_id : str
            QuickFIX-style session id.
        direction : FixDirection | int
            ``FixDirection.INBOUND`` or ``FixDirection.OUTBOUND``.
        raw : bytes
            The message exactly as on the wire (a mutable buffer is copied).
        ts_created, ts_wire, ts_handled : int
            Created, sent or received, and handled.
        """
        if type(raw) is not bytes:
            raw = bytes(raw)
        self._append((KIND_FIX, session_id, direction, raw, ts_created, ts_wire, ts_handled))

    def log(self, level: int, source: str, msg: str, *args: object) -> None:
        """Append a log record; ``msg % args`` is formatted later, on the writer thread."""
        self._append((KIND_LOG, self.clock.now_ns(), level, source, msg, args, ""))

    def log_formatted(self, ts: int, level: int, source: str, message: str, exc_text: str) -> None:
        """Append an already formatted log record (used by the logging handler)."""
        self._append((KIND_LOG, ts, level, source, message, (), exc_text))

    def logger(self, source: str, level: int = logging.DEBUG) -> "JournalLogger":
        """Return a logger for the trading path that writes to this journal only."""
        return JournalLogger(self, source, level)

    def after_written(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` (on the writer thread) once every record appended before is written.

        The write-ahead barrier of the FIX stores: a session counts an inbound message received
        on disk only after the journal holds what the message caused, so a ``kill -9`` at any
        instant leaves the store at or behind the journal and the venue resends the rest. The
        records are in the kernel (they survive a killed process) when ``callback`` runs; it
        must be quick and must not append to this journal. ``callback`` runs at most once; it
        does not run if the journal is closed first.

        Raises
        ------
        JournalClosedError
            If the journal is closed (nothing more will be written).
        """
        self._append((_AFTER, callback))

    # ------------------------------------------------------------------ control
    def flush(self, timeout: float | None = 10.0) -> None:
        """Block until every record appended before this call is written (and synced).

        Raises
        ------
        JournalClosedError
            If the journal is closed.
        JournalWriteError
            If the writer thread failed to write.
        TimeoutError
            If the writer did not get there within ``timeout`` seconds.
        """
        if self._closed:
            raise JournalClosedError(f"{self.path}: journal is closed")
        done = threading.Event()
        self._queue.append((_FLUSH, done))
        self._wake.set()
        if not done.wait(timeout):
            self._raise_error()
            raise TimeoutError(f"{self.path}: journal flush took longer than {timeout} s")
        self._raise_error()

    def close(self) -> None:
        """Write everything appended so far, sync, stop the writer thread and close the file.

        Appending after ``close`` raises :class:`JournalClosedError`. Calling ``close`` again
        does nothing.
        """
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._append = _closed_append(self.path)
        self._closing = True
        self._wake.set()
        self._thread.join()
        try:
            if self._sync != "none" and self._error is None:
                os.fsync(self._fd)
        finally:
            os.close(self._fd)
        self._raise_error()

    @property
    def closed(self) -> bool:
        """Return whether :meth:`close` was called."""
        return self._closed

    @property
    def error(self) -> BaseException | None:
        """Return the last write error of the writer thread, or ``None``."""
        return self._error

    def __enter__(self) -> "Journal":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _raise_error(self) -> None:
        if self._error is not None:
            raise JournalWriteError(f"{self.path}: {self._error}") from self._error

    # ------------------------------------------------------------------ writer thread
    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            try:
                self._drain()
            except Exception as e:  # keep the thread alive; flush() reports it
                self._error = e
                log.exception("%s: journal writer failed", self.path)
            if self._closing and not self._queue:
                return

    def _drain(self) -> None:
        queue, encode = self._queue, self._encode
        parts: list[bytes] = []
        n = 0
        after: list[Callable[[], object]] = []  # callbacks due once ``parts`` is written
        while queue:
            item = queue.popleft()
            if item[0] == _AFTER:
                if parts or self._unwritten:
                    after.append(item[1])
                else:  # everything before it is written already
                    self._call_after([item[1]])
                continue
            if item[0] == _FLUSH:
                try:
                    self._write_batch(b"".join(parts), n)
                    if self._sync == "flush":
                        os.fsync(self._fd)
                    after = self._call_after(after)  # before flush() returns
                except Exception as e:
                    self._error = e  # before waking flush(), which reports it
                    raise
                finally:
                    parts, n = [], 0
                    item[1].set()
                continue
            try:
                data = encode(item)
            except Exception as e:  # a record we cannot encode must not stop the others
                self.encode_errors += 1
                data = self._encode_failure(item, e)
            if self._pending_schemas:
                parts.extend(self._pending_schemas)
                self._pending_schemas.clear()
            parts.append(data)
            n += 1
            if n >= self._batch:
                self._write_batch(b"".join(parts), n)
                parts, n = [], 0
                after = self._call_after(after)
        if parts or self._unwritten:  # also retries what a failed write left behind
            self._write_batch(b"".join(parts), n)
        self._call_after(after)

    def _call_after(self, callbacks: list[Callable[[], object]]) -> list[Callable[[], object]]:
        """Run the barrier callbacks whose records are written; return an empty list."""
        if self._unwritten:  # a failed write: what they wait for is not on disk; a later
            return []  # barrier (after a successful write) moves the store on instead
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("%s: journal barrier callback failed", self.path)
        return []

    def _write_batch(self, data: bytes, n: int) -> None:
        data = self._unwritten + data
        if not data:
            return
        self._unwritten = data  # kept until written, so that a failed write is retried
        self._write_all(self._fd, data)
        self._unwritten = b""
        self._error = None
        if self._sync == "batch":
            os.fsync(self._fd)
        self.records_written += n
        self.bytes_written += len(data)

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    # ------------------------------------------------------------------ encoding
    def _encode(self, item: _Item) -> bytes:
        kind = item[0]
        if kind == KIND_EVENT:
            event = item[2]
            schema = self._schemas.get(type(event))
            if schema is None:
                schema = self._schema_for(type(event))
            payload = self._enc.encode((item[1], *schema.flatten(event)))
            return _frame(KIND_EVENT, schema.type_id, payload)
        if kind == KIND_LOG:
            _k, ts, level, source, msg, args, exc_text = item
            if args:
                try:
                    msg = msg % args
                except Exception as e:
                    msg = f"{msg} {args!r} (formatting failed: {e})"
            if len(msg) > MAX_LOG_CHARS:
                msg = msg[:MAX_LOG_CHARS] + f"... [cut: {len(msg)} characters]"
            payload = self._enc.encode((ts, level, source, msg, exc_text))
            return _frame(KIND_LOG, 0, payload)
        if kind == KIND_FIX:
            _k, session_id, direction, raw, ts_c, ts_w, ts_h = item
            if len(raw) > MAX_PAYLOAD - 1024:
                raise ValueError(f"FIX message of {len(raw)} bytes is too long to journal")
            payload = self._enc.encode((session_id, int(direction), ts_c, ts_w, ts_h, raw))
            return _frame(KIND_FIX, 0, payload)
        raise ValueError(f"unknown journal item kind {kind!r}")

    def _encode_failure(self, item: _Item, e: Exception) -> bytes:
        what = type(item[2]).__name__ if item[0] == KIND_EVENT else f"kind {item[0]}"
        text = f"journal could not encode a record ({what}): {type(e).__name__}: {e}"
        log.error("%s: %s", self.path, text)
        payload = self._enc.encode((self.clock.now_ns(), logging.ERROR, "journal", text, ""))
        return _frame(KIND_LOG, 0, payload)

    def _schema_for(self, cls: type) -> WriteSchema:
        known = self._schemas.get(cls)
        if known is not None:
            return known
        fmt.register_type(cls)
        fields, nested_types = fmt.field_codes(cls, lambda t: self._schema_for(t).type_id)
        nested = {i: _or_none(self._schema_for(t).flatten) for i, t in nested_types.items()}
        name = fmt.qualified_name(cls)
        type_id = self._schema_keys.get((name, fields))
        if type_id is None:
            type_id = self._next_type_id
            if type_id > 0xFFFF:
                raise ValueError("more than 65535 event schemas in one journal")
            self._next_type_id += 1
            self._schema_keys[(name, fields)] = type_id
            payload = self._enc.encode((name, [list(f) for f in fields]))
            self._pending_schemas.append(_frame(KIND_SCHEMA, type_id, payload))
        schema = WriteSchema(
            type_id, name, fields, fmt.make_flattener([n for n, _c in fields], nested)
        )
        self._schemas[cls] = schema
        return schema


def _frame(kind: int, type_id: int, payload: bytes) -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"record of {len(payload)} bytes exceeds the {MAX_PAYLOAD}-byte limit")
    return fmt.frame(kind, type_id, payload)


def _or_none(flatten: fmt.Flattener) -> fmt.Flattener:
    # A nested dataclass field may be declared ``X | None``.
    return lambda v: None if v is None else flatten(v)  # type: ignore[return-value]


def _closed_append(path: Path) -> Callable[[_Item], None]:
    def append(_item: _Item) -> None:
        raise JournalClosedError(f"{path}: journal is closed")

    return append


class JournalLogger:
    """A logger for the trading path: one deque append per call, formatting deferred.

    Arguments are captured at call time: scalars (numbers, strings, enums, ``None``, tuples of
    them) as they are, since they cannot change; anything mutable (a dict, a list, an object)
    makes the call format its message at once, so a value changed after the call is never
    what the journal says was logged.

    Obtain one with :meth:`Journal.logger`. Calls below ``level`` return at once.

    Parameters
    ----------
    journal : Journal
        Where the records go.
    source : str
        Recorded as the logger name.
    level : int
        Lowest ``logging`` level recorded.
    """

    __slots__ = ("_journal", "_now", "level", "source")

    def __init__(self, journal: Journal, source: str, level: int = logging.DEBUG) -> None:
        self._journal = journal
        self._now = journal.clock.now_ns
        self.source = source
        self.level = level

    def log(self, level: int, msg: str, *args: object) -> None:
        """Record ``msg % args`` at ``level``."""
        if level >= self.level:
            self._journal._append(
                (KIND_LOG, self._now(), level, self.source, *capture_args(msg, args), "")
            )

    def debug(self, msg: str, *args: object) -> None:
        """Record at DEBUG."""
        if self.level <= logging.DEBUG:
            self._journal._append(
                (KIND_LOG, self._now(), logging.DEBUG, self.source, *capture_args(msg, args), "")
            )

    def info(self, msg: str, *args: object) -> None:
        """Record at INFO."""
        if self.level <= logging.INFO:
            self._journal._append(
                (KIND_LOG, self._now(), logging.INFO, self.source, *capture_args(msg, args), "")
            )

    def warning(self, msg: str, *args: object) -> None:
        """Record at WARNING."""
        if self.level <= logging.WARNING:
            self._journal._append(
                (KIND_LOG, self._now(), logging.WARNING, self.source, *capture_args(msg, args), "")
            )

    def error(self, msg: str, *args: object) -> None:
        """Record at ERROR."""
        if self.level <= logging.ERROR:
            self._journal._append(
                (KIND_LOG, self._now(), logging.ERROR, self.source, *capture_args(msg, args), "")
            )
