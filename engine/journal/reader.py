# SPDX-License-Identifier: MIT
"""Read a journal: check framing and CRCs, drop a torn tail, decode records.

Policy for damage (documented in ``docs/journal.md``):

* A bad last record is a **torn tail** (a write cut short by a killed process or a crash):
  it is dropped and described by :attr:`JournalReader.torn_tail`; nothing is raised unless
  the reader was made with ``strict=True``. A bad record is the last one when no intact record
  starts anywhere after it.
* A bad record followed by intact records is **corruption**: :class:`JournalCorruptError`
  names the file, the byte offset, the record index and the reason.
* A file that is not a journal (or of another major version) raises
  :class:`JournalFormatError`.

Nothing else escapes the reader: every decoding problem of an intact (CRC-valid) record is
reported as :class:`JournalCorruptError`.
"""

import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from engine.events import Event, FixMessageSeen
from engine.journal import format as fmt
from engine.journal.format import (
    KIND_EVENT,
    KIND_FIX,
    KIND_LOG,
    KIND_OPEN,
    KIND_SCHEMA,
    KNOWN_KINDS,
    MAX_PAYLOAD,
    RECORD_HEADER_SIZE,
    FixDirection,
    FixMessageRecord,
    JournalCorruptError,
    JournalEvent,
    JournalOpened,
    JournalRecord,
    LogEntry,
    ReadSchema,
)

_HEADER = fmt.RECORD_HEADER
_FIX_SEEN = fmt.qualified_name(FixMessageSeen)

#: Fewest bytes between two progress reports of a long read (see :func:`progress_step`).
PROGRESS_STEP = 256 * 1024


def progress_step(total: int) -> int:
    """Return the bytes between two progress reports over ``total`` bytes (about 100 at most)."""
    return max(PROGRESS_STEP, total // 100)


def _no_progress(_done: int, _total: int) -> None:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class TornTail:
    """The dropped end of a journal: where it starts, how long it is and why it was dropped."""

    offset: int
    size: int
    index: int  # index the record would have had
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedEnd:
    """A journal file read to its end and found intact: enough for a writer to resume it.

    The writer resuming the file the recovery just read skips reading it again (a day's
    journal of a gigabyte and more: ~1.5 s) when the file still has this size and mtime.
    """

    path: Path
    size: int
    mtime_ns: int
    end_offset: int  # just after the last intact record
    torn_tail: TornTail | None
    #: (name, fields, type id) of every schema the file defines.
    schemas: tuple[tuple[str, tuple[tuple[str, str], ...], int], ...]

    def matches(self, path: Path, st: os.stat_result) -> bool:
        """Return whether ``path`` with status ``st`` is still the file verified."""
        try:
            same = os.path.samefile(path, self.path)
        except OSError:  # one of them is gone
            return False
        return same and st.st_size == self.size and st.st_mtime_ns == self.mtime_ns


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """A chunk of a journal read by :meth:`JournalReader.stream`: its bytes and frame table.

    ``frames`` has a row per intact record (columns ``engine.journal._kernels.F_*``: offset in
    ``data``, payload length, kind, type id, and the sequence number and ``ts_event`` of an
    event); ``base`` is the file offset of ``data``, ``first_index`` the record index of the
    first row; ``schemas`` the file's schemas up to the end of the chunk (a copy: the reader's
    own grows as it reads on, perhaps on another thread).
    """

    data: bytes
    base: int
    frames: npt.NDArray[np.int64]
    first_index: int
    schemas: dict[int, "ReadSchema"] = field(default_factory=dict)

    def raw(self, row: int) -> "RawRecord":
        """Return one record of the chunk for :meth:`JournalReader.decode`."""
        p, n, kind, type_id = (int(v) for v in self.frames[row, :4])
        start = p + RECORD_HEADER_SIZE
        return RawRecord(
            self.first_index + row,
            self.base + p,
            kind,
            type_id,
            memoryview(self.data)[start : start + n],
        )


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One intact record, not yet decoded: for fast paths that filter by kind and type id."""

    index: int
    offset: int
    kind: int
    type_id: int
    payload: memoryview


class JournalReader:
    """Read one journal file (which may still be appended to by a writer).

    The whole file is read into memory at :meth:`scan`; records are decoded lazily.

    Parameters
    ----------
    path : str | Path
        The journal file.
    strict : bool
        Raise :class:`JournalCorruptError` on a torn tail too, instead of dropping it.

    Raises
    ------
    JournalFormatError
        From :meth:`scan` (and everything that calls it) if the file is not a journal.
    JournalCorruptError
        If a record before the tail is damaged, or an intact record cannot be decoded.
    """

    def __init__(self, path: str | Path, *, strict: bool = False) -> None:
        self.path = Path(path)
        self.strict = strict
        self._torn_tail: TornTail | None = None
        self._schemas: dict[int, ReadSchema] = {}
        #: Records of kinds this version does not know (skipped), after :meth:`scan`.
        self.skipped = 0
        #: Format version ``(major, minor)`` and creation time of the file (after :meth:`scan`).
        self.version = (0, 0)
        self.created_ns = 0
        self._data = b""
        self._frames: list[tuple[int, int, int, int]] = []  # offset, length, kind, type_id
        self._end = 0
        self._scanned = False
        self._dec = msgspec.msgpack.Decoder()
        # decode_events() may run while stream() reads ahead (and decodes schemas) elsewhere.
        self._batch_dec = msgspec.msgpack.Decoder()

    # ------------------------------------------------------------------ framing
    def scan(self, progress: Callable[[int, int], object] | None = None) -> int:
        """Read the file, check every frame, load the schemas; return the end of intact data.

        Safe to call again: it rereads the file (to pick up records appended since).
        ``progress(done, total)`` is called with byte offsets now and then (every
        :data:`PROGRESS_STEP` bytes or hundredth of the file) and once at the end.
        """
        data = self.path.read_bytes()
        major, minor, pos, created = fmt.unpack_file_header(self.path, data)
        self.version, self.created_ns = (major, minor), created
        self._data, self._torn_tail, self.skipped = data, None, 0
        self._schemas = {}
        frames: list[tuple[int, int, int, int]] = []
        size = len(data)
        unpack, crc32 = _HEADER.unpack_from, zlib.crc32
        view = memoryview(data)
        tell = progress or _no_progress
        step = progress_step(size)
        report = pos  # the first report as soon as the file is read
        while pos < size:
            if pos >= report:
                tell(pos, size)
                report = pos + step
            bad = None
            if size - pos < RECORD_HEADER_SIZE:
                bad = f"{size - pos} bytes left, less than a record header"
            else:
                length, crc, kind, _flags, type_id = unpack(data, pos)
                start = pos + RECORD_HEADER_SIZE
                end = start + length
                if length > MAX_PAYLOAD:
                    bad = f"length {length} exceeds the {MAX_PAYLOAD}-byte limit"
                elif end > size:
                    bad = f"record of {length} bytes runs {end - size} bytes past the end"
                elif crc32(view[start:end], crc32(view[pos + 8 : start])) != crc:
                    bad = f"CRC mismatch (length {length}, kind {kind})"
            if bad is not None:
                self._bad_frame(pos, len(frames), bad)
                break
            if kind == KIND_SCHEMA:
                self._load_schema(pos, len(frames), type_id, view[start:end])
            elif kind not in KNOWN_KINDS:
                self.skipped += 1
            frames.append((pos, length, kind, type_id))
            pos = end
        self._frames = frames
        self._end = pos
        self._scanned = True
        tell(size, size)
        return pos

    def _bad_frame(self, pos: int, index: int, reason: str) -> None:
        self._bad_frame_in(self._data[pos:], pos, index, reason)

    def _bad_frame_in(self, rest: bytes, pos: int, index: int, reason: str) -> None:
        # ``rest``: the file from ``pos`` on.
        later = _next_intact_frame(rest, 1)
        if later is not None:
            later += pos
            raise JournalCorruptError(
                self.path,
                pos,
                index,
                f"{reason}; an intact record follows at offset {later}, so this is not a torn tail",
            )
        tail = TornTail(offset=pos, size=len(rest), index=index, reason=reason)
        if self.strict:
            raise JournalCorruptError(self.path, pos, index, f"torn tail: {reason}")
        self._torn_tail = tail

    def stream(self, progress: Callable[[int, int], object] | None = None) -> Iterator[StreamChunk]:
        """Read the file a chunk at a time, checking every frame as :meth:`scan` does.

        For a file too big to hold: memory stays at one chunk (about a hundredth of the file,
        at most 16 MB) whatever the file's size. Yields a :class:`StreamChunk` per chunk (each
        its own frame table: the next chunk may be read while one is used). Schemas are loaded
        as they come (:attr:`schemas`); a torn tail is dropped (:attr:`torn_tail`); a damaged
        record before the tail raises :class:`JournalCorruptError`. ``progress(done, total)``
        is told the bytes checked after each chunk.
        """
        from engine.journal import _kernels as jk

        size = self.path.stat().st_size
        tell = progress or _no_progress
        with open(self.path, "rb") as f:
            fd = f.fileno()
            head = os.pread(fd, min(size, 1 << 16), 0)
            major, minor, pos, created = fmt.unpack_file_header(self.path, head)
            self.version, self.created_ns = (major, minor), created
            self._torn_tail, self.skipped, self._schemas = None, 0, {}
            # The reader holds no records of a stream (raw(), records() see none until a scan).
            self._data, self._frames, self._scanned = b"", [], True
            table = _crc_table()
            want = min(16 << 20, progress_step(size))
            index = 0
            tell(pos, size)
            while pos < size:
                # A table per chunk: a consumer may hold one chunk while the next is read.
                out = np.empty((1 << 16, jk.FRAME_COLUMNS), np.int64)
                data = os.pread(fd, min(want, size - pos), pos)
                buf = np.frombuffer(data, np.uint8)
                k, stop, status = jk.walk_frames(buf, 0, MAX_PAYLOAD, table, out)
                frames = out[:k]
                view = memoryview(data)
                for i in np.flatnonzero(frames[:, jk.F_KIND] == KIND_SCHEMA).tolist():
                    p, n = int(frames[i, 0]), int(frames[i, 1])
                    start = p + RECORD_HEADER_SIZE
                    self._load_schema(
                        pos + p, index + i, int(frames[i, 3]), view[start : start + n]
                    )
                self.skipped += int((~np.isin(frames[:, jk.F_KIND], _KNOWN)).sum())
                if k:
                    yield StreamChunk(
                        data=data,
                        base=pos,
                        frames=frames,
                        first_index=index,
                        schemas=dict(self._schemas),
                    )
                index += k
                pos += stop
                tell(pos, size)
                if status == jk.WALK_FULL:
                    continue
                if status in (jk.WALK_BAD_LENGTH, jk.WALK_BAD_CRC):
                    length, _crc, kind, _f, _t = _HEADER.unpack_from(data, stop)
                    reason = (
                        f"length {length} exceeds the {MAX_PAYLOAD}-byte limit"
                        if status == jk.WALK_BAD_LENGTH
                        else f"CRC mismatch (length {length}, kind {kind})"
                    )
                    self._bad_frame_in(os.pread(fd, size - pos, pos), pos, index, reason)
                    break
                if k == 0 and pos + len(data) >= size:  # a record cut by the end of the file
                    left = size - pos
                    if left < RECORD_HEADER_SIZE:
                        reason = f"{left} bytes left, less than a record header"
                    else:
                        length = _HEADER.unpack_from(data, 0)[0]
                        end = pos + RECORD_HEADER_SIZE + length
                        reason = f"record of {length} bytes runs {end - size} bytes past the end"
                    self._bad_frame_in(os.pread(fd, left, pos), pos, index, reason)
                    break
                if k == 0:
                    want *= 2  # one record longer than the chunk
            self._end = pos
            tell(size, size)

    def _load_schema(self, pos: int, index: int, type_id: int, payload: memoryview) -> None:
        try:
            name, raw_fields = self._dec.decode(payload)
            fields = tuple((str(n), str(c)) for n, c in raw_fields)
            if not isinstance(name, str):
                raise TypeError("schema name is not a string")
            if type_id in self._schemas:
                raise ValueError(f"type id {type_id} is defined twice")
            if type_id == 0:
                raise ValueError("type id 0 is reserved")
            schema = ReadSchema(type_id, name, fields, self._schemas)
            schema.offset, schema.record_index = pos, index
            self._schemas[type_id] = schema
        except (msgspec.DecodeError, TypeError, ValueError, RecursionError) as e:
            raise JournalCorruptError(self.path, pos, index, f"bad schema record: {e}") from e

    def _ensure(self) -> None:
        if not self._scanned:
            self.scan()

    # ------------------------------------------------------------------ access
    @property
    def torn_tail(self) -> TornTail | None:
        """Return the torn tail dropped by the last scan, or ``None``."""
        self._ensure()
        return self._torn_tail

    @property
    def schemas(self) -> dict[int, ReadSchema]:
        """Return the schemas defined in the file, by type id."""
        self._ensure()
        return self._schemas

    def __len__(self) -> int:
        self._ensure()
        return len(self._frames)

    @property
    def end_offset(self) -> int:
        """Return the byte offset just after the last intact record."""
        self._ensure()
        return self._end

    def verified(self, st: os.stat_result) -> VerifiedEnd:
        """Return what a read to the end found, for a file whose status was ``st`` before it."""
        self._ensure()
        return VerifiedEnd(
            path=self.path,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            end_offset=self._end,
            torn_tail=self._torn_tail,
            schemas=tuple((sch.name, sch.fields, tid) for tid, sch in self._schemas.items()),
        )

    def raw(self, kinds: Iterable[int] | None = None) -> Iterator[RawRecord]:
        """Iterate over intact records without decoding them, optionally of some kinds only."""
        self._ensure()
        wanted = None if kinds is None else frozenset(kinds)
        view = memoryview(self._data)
        for index, (pos, length, kind, type_id) in enumerate(self._frames):
            if wanted is None or kind in wanted:
                start = pos + RECORD_HEADER_SIZE
                yield RawRecord(index, pos, kind, type_id, view[start : start + length])

    def decode_values(self, rec: RawRecord) -> list[Any]:
        """Return the payload array of an EVENT, FIX or LOG record, checked to be a list.

        Raises
        ------
        JournalCorruptError
            If the payload is not a MessagePack array.
        """
        try:
            values = self._dec.decode(rec.payload)
        except (msgspec.DecodeError, RecursionError) as e:
            raise JournalCorruptError(self.path, rec.offset, rec.index, f"bad payload: {e}") from e
        if not isinstance(values, list):
            what = type(values).__name__
            raise JournalCorruptError(
                self.path, rec.offset, rec.index, f"payload is a {what}, not an array"
            )
        return values

    def schema(self, rec: RawRecord) -> ReadSchema:
        """Return the schema of an EVENT record.

        Raises
        ------
        JournalCorruptError
            If no schema record defined its type id earlier in the file.
        """
        schema = self._schemas.get(rec.type_id)
        if schema is None:
            raise JournalCorruptError(
                self.path, rec.offset, rec.index, f"event of undefined type id {rec.type_id}"
            )
        return schema

    def records(self, kinds: Iterable[int] | None = None) -> Iterator[JournalRecord]:
        """Iterate over decoded records (schema records are not yielded).

        Parameters
        ----------
        kinds : Iterable[int] | None
            Record kinds to decode (``format.KIND_*``); all by default.
        """
        for rec in self.raw(kinds):
            if rec.kind in _DECODED_KINDS:
                yield self.decode(rec)

    def fix_messages(self) -> Iterator[FixMessageRecord]:
        """Iterate over every FIX message: ``FIX`` records and ``FixMessageSeen`` events.

        A ``FixMessageSeen`` event is returned as a :class:`FixMessageRecord` whose
        ``ts_handled`` is the event's ``ts_event``.
        """
        seen = {
            tid
            for tid, sch in self.schemas.items()
            if sch.name == _FIX_SEEN and sch.cls is not None
        }
        for rec in self.raw([KIND_FIX, KIND_EVENT]):
            if rec.kind == KIND_FIX:
                fix = self.decode(rec)
                assert isinstance(fix, FixMessageRecord)
                yield fix
            elif rec.type_id in seen:
                ev = self.decode(rec)
                assert isinstance(ev, JournalEvent)
                m = ev.event
                if isinstance(m, FixMessageSeen):
                    yield FixMessageRecord(
                        session_id=m.session_id,
                        direction=FixDirection.OUTBOUND if m.outbound else FixDirection.INBOUND,
                        raw=m.raw,
                        ts_created=m.ts_created,
                        ts_wire=m.ts_wire,
                        ts_handled=m.ts_event,
                    )

    def __iter__(self) -> Iterator[JournalRecord]:
        return self.records()

    def decode(self, rec: RawRecord) -> JournalRecord:
        """Decode one raw record.

        Raises
        ------
        JournalCorruptError
            If the record does not decode as its kind says.
        ValueError
            If the record's kind has no decoder (``SCHEMA``, kinds of a later minor version).
        """
        if rec.kind not in _DECODED_KINDS:
            raise ValueError(f"record kind {rec.kind} ({_KIND_NAMES.get(rec.kind)}) is not decoded")
        try:
            return self._decode(rec)
        except JournalCorruptError:
            raise
        except (
            msgspec.DecodeError,
            TypeError,
            ValueError,
            KeyError,
            struct.error,
            RecursionError,
        ) as e:
            raise JournalCorruptError(
                self.path, rec.offset, rec.index, f"bad {_KIND_NAMES.get(rec.kind)} record: {e}"
            ) from e

    def decode_events(self, chunk: StreamChunk, rows: Sequence[int]) -> list[Event]:
        """Decode the EVENT records at ``rows`` of a streamed chunk, in order, in one pass.

        The payloads are decoded by one MessagePack call (a restart decodes a day's fills:
        hundreds of thousands of records); a record that does not decode is decoded alone
        again, so the error is the one :meth:`decode` raises for it.

        Raises
        ------
        JournalCorruptError
            If a record does not decode as an event.
        """
        from engine.journal import _kernels as jk

        if not rows:
            return []
        frames = chunk.frames[np.asarray(rows, np.int64)]
        data = memoryview(chunk.data)
        parts: list[bytes | memoryview] = [b"\xdd", struct.pack(">I", len(rows))]
        parts += [
            data[p + RECORD_HEADER_SIZE : p + RECORD_HEADER_SIZE + n]
            for p, n in frames[:, :2].tolist()
        ]
        schemas = chunk.schemas
        out: list[Event] = []
        try:
            batch = self._batch_dec.decode(b"".join(parts))
            for values, type_id in zip(batch, frames[:, jk.F_TYPE].tolist(), strict=True):
                if type(values) is not list or not values or type(values[0]) is not int:
                    raise ValueError("not an event payload")
                event = schemas[type_id].build(values[1:])
                if not isinstance(event, Event):
                    raise TypeError("not an engine event")
                out.append(event)
        except (msgspec.DecodeError, TypeError, ValueError, KeyError, RecursionError):
            # Find the bad record and say what is wrong with it.
            out = []
            for row in rows:
                raw = chunk.raw(row)
                rec = self.decode(raw)
                if not isinstance(rec, JournalEvent):
                    raise JournalCorruptError(
                        self.path, raw.offset, raw.index, "not an event record"
                    ) from None
                out.append(rec.event)
        return out

    def _decode(self, rec: RawRecord) -> JournalRecord:
        kind = rec.kind
        if kind == KIND_EVENT:
            values = self.decode_values(rec)
            if not values or not isinstance(values[0], int):
                raise ValueError("event payload does not start with a sequence number")
            event = self.schema(rec).build(values[1:])
            if not isinstance(event, Event):
                raise TypeError(f"{type(event).__name__} is not an engine event")
            return JournalEvent(seq=values[0], event=event)
        if kind == KIND_FIX:
            session_id, direction, ts_c, ts_w, ts_h, raw = self.decode_values(rec)
            if not (
                type(session_id) is str
                and type(direction) is int
                and type(ts_c) is int
                and type(ts_w) is int
                and type(ts_h) is int
                and type(raw) is bytes
            ):
                _check_types(session_id, str, direction, int, ts_c, int, ts_w, int, ts_h, int)
                raise TypeError("FIX raw message is not bytes")
            return FixMessageRecord(
                session_id=session_id,
                direction=FixDirection(direction),
                raw=raw,
                ts_created=ts_c,
                ts_wire=ts_w,
                ts_handled=ts_h,
            )
        if kind == KIND_LOG:
            ts, level, source, message, exc_text = self.decode_values(rec)
            if not (
                type(ts) is int
                and type(level) is int
                and type(source) is str
                and type(message) is str
                and type(exc_text) is str
            ):
                _check_types(ts, int, level, int, source, str, message, str, exc_text, str)
            return LogEntry(ts=ts, level=level, source=source, message=message, exc_text=exc_text)
        if kind == KIND_OPEN:
            info = self._dec.decode(rec.payload)
            if not isinstance(info, dict):
                raise TypeError("open record is not a map")
            _check_types(info["ts"], int, info["pid"], int, info["offset"], int)
            return JournalOpened(
                ts=info["ts"],
                pid=info["pid"],
                engine_id=str(info.get("engine_id", "")),
                offset=info["offset"],
            )
        raise AssertionError(f"record kind {kind} has no decoder")  # checked in decode()


_DECODED_KINDS = frozenset({KIND_EVENT, KIND_FIX, KIND_LOG, KIND_OPEN})
_KIND_NAMES = {
    KIND_OPEN: "OPEN",
    KIND_SCHEMA: "SCHEMA",
    KIND_EVENT: "EVENT",
    KIND_FIX: "FIX",
    KIND_LOG: "LOG",
}


_KNOWN = np.array(sorted(KNOWN_KINDS), np.int64)
_TABLE: list[npt.NDArray[np.int64]] = []


def _crc_table() -> npt.NDArray[np.int64]:
    if not _TABLE:
        from engine.journal._kernels import crc_table

        _TABLE.append(crc_table())
    return _TABLE[0]


def _check_types(*pairs: Any) -> None:
    for value, tp in zip(pairs[::2], pairs[1::2], strict=True):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise TypeError(f"expected {tp.__name__}, got {type(value).__name__}")


def _next_intact_frame(data: bytes, start: int) -> int | None:
    """Return the offset of the first intact record starting at or after ``start``, if any.

    Vectorized over every byte offset: a candidate must have a known kind, zero flags and a
    length that fits in the file; only candidates get their CRC checked.
    """
    size = len(data)
    n = size - start - RECORD_HEADER_SIZE + 1
    if n <= 0:
        return None
    buf = np.frombuffer(data, dtype=np.uint8, offset=start)
    kind = buf[8 : 8 + n]
    ok = (buf[9 : 9 + n] == 0) & (kind >= 1) & (kind <= max(KNOWN_KINDS))
    cand = np.flatnonzero(ok)
    if cand.size == 0:
        return None
    length = (
        buf[cand].astype(np.int64)
        | (buf[cand + 1].astype(np.int64) << 8)
        | (buf[cand + 2].astype(np.int64) << 16)
        | (buf[cand + 3].astype(np.int64) << 24)
    )
    fits = start + cand + RECORD_HEADER_SIZE + length <= size
    view = memoryview(data)
    for rel in cand[fits].tolist():
        pos = start + rel
        length_, crc, _k, _f, _t = _HEADER.unpack_from(data, pos)
        body = pos + RECORD_HEADER_SIZE
        if zlib.crc32(view[body : body + length_], zlib.crc32(view[pos + 8 : body])) == crc:
            return int(pos)
    return None


def read_journal(path: str | Path, *, strict: bool = False) -> list[JournalRecord]:
    """Return every decoded record of a journal (a torn tail is dropped unless ``strict``)."""
    return list(JournalReader(path, strict=strict).records())
