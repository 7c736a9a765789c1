# SPDX-License-Identifier: MIT
r"""Message stores: sequence numbers and sent messages, for resends and restarts.

:class:`MemoryStore` keeps everything in memory. :class:`FileStore` keeps it in three files per
session under ``FileStorePath`` and survives a killed process: every sent message is appended
with one unbuffered ``write`` (the kernel has it once the call returns, so ``kill -9`` loses
nothing; ``fsync=True`` adds durability across power loss), and sequence numbers are
rewritten in place with ``pwrite``. On open, a torn last record is cut off.

Files, for session ``FIX.4.4-ISLD-TW44``:

* ``.body``: records ``<seq>,<length>[,<note>]\\n<message bytes>\\n``, appended in send order
  (the optional note is the sender's own, never sent: :meth:`FileStore.annotate`);
* ``.seqnums``: ``<next sender> : <next target>``, fixed width;
* ``.session``: creation time of the session (ns since the epoch), reset with the store.

The next sender number after a restart is the larger of ``.seqnums`` and the last stored
message + 1, so a kill between storing a message and updating ``.seqnums`` is harmless.

Memory stays bounded over a day of messages: the store keeps the file offset of every
:data:`INDEX_EVERY`-th record (a resend reads from the nearest one before it and parses
forward: messages are stored in sequence-number order) and the notes of the last
:data:`NOTES_MEMORY` annotated messages; opening a store reads its body in chunks.

Write-ahead with a journal (:meth:`FileStore.set_write_barrier`): the next expected *inbound*
number is written to ``.seqnums`` only once the engine's journal holds everything the message
caused (its events, the fill, the order's new state). A ``kill -9`` at any instant then leaves
the store at or behind the journal, never ahead of it; on restart the venue resends the gap
(PossDupFlag <43> = Y) and the order manager applies what is new to it exactly once.
"""

from __future__ import annotations

import bisect
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

#: ``barrier(fn)`` calls ``fn`` (on any thread) once what the process recorded before is safe;
#: raises if it will never call it (the journal is closed).
WriteBarrier = Callable[[Callable[[], object]], None]


class MessageStore(Protocol):
    """What a session needs from a store (QuickFIX's ``MessageStore``)."""

    def set(self, seq_num: int, message: bytes) -> bool:
        """Store a sent message under its MsgSeqNum."""
        ...

    def get_range(self, begin: int, end: int) -> list[tuple[int, bytes]]:
        """Return the stored ``(seq_num, message)`` with ``begin <= seq_num <= end``, in order."""
        ...

    @property
    def next_sender_seq_num(self) -> int:
        """Return the MsgSeqNum of the next message we send."""
        ...

    @property
    def next_target_seq_num(self) -> int:
        """Return the MsgSeqNum expected on the next message received."""
        ...

    def set_next_sender_seq_num(self, value: int) -> None:
        """Set the next outbound MsgSeqNum."""
        ...

    def set_next_target_seq_num(self, value: int) -> None:
        """Set the next expected inbound MsgSeqNum."""
        ...

    def incr_next_sender_seq_num(self) -> None:
        """Add one to the next outbound MsgSeqNum."""
        ...

    def incr_next_target_seq_num(self) -> None:
        """Add one to the next expected inbound MsgSeqNum."""
        ...

    @property
    def creation_time_ns(self) -> int:
        """Return when the store was created or last reset, ns since the epoch."""
        ...

    def reset(self, now_ns: int) -> None:
        """Forget all messages and restart both sequence numbers at 1."""
        ...

    def refresh(self) -> None:
        """Reload from the backing storage (no-op in memory)."""
        ...

    def close(self) -> None:
        """Release files."""
        ...


#: The longest gap in sent sequence numbers a :class:`MemoryStore` bridges in its chunks (None
#: per missing number); past it the chunks start again at the new number.
GAP_KEPT = 4096
#: Messages per chunk of a :class:`MemoryStore` (a filled chunk becomes a tuple).
CHUNK = 4096


class StoreError(ValueError):
    """A store's files cannot be read as a store (names the file and why)."""


class MemoryStore:
    """In-memory :class:`MessageStore`.

    Sent messages are kept by sequence number in chunks of :data:`CHUNK` (a list being filled,
    then a tuple), not in one dict or one list. A session stores one message per send for a
    whole day, and both obvious containers stall it: a dict doubles its table by copying every
    entry while the sender waits (7 ms at 87,000 messages, 14 ms at 175,000 on this project's
    machines, again at each doubling), and one list of the messages is a container the
    garbage collector walks in every full pass. A filled chunk becomes a tuple, which the
    collector stops tracking (its items are bytes), so a pass walks one list of chunks; the
    list being filled never grows past a chunk. (Packing the bytes into one ``bytearray``
    avoided both too, but its growth copied the buffer: 0.2 µs more per order sent.)

    Numbers sent after a gap of up to :data:`GAP_KEPT` are kept in the chunks (None for each
    number not sent). A message stored again under a number already kept, one stored under a
    number before the first, and everything kept before a jump further ahead (a number set by
    hand, after which the chunks start again) are kept aside, in a dict by number that wins.
    What :meth:`get_range` returns is what a dict of every message stored would.

    Parameters
    ----------
    now_ns : int
        Creation time, ns since the epoch.
    """

    __slots__ = (
        "_aside",
        "_chunks",
        "_created",
        "_first",
        "_next",
        "_sender",
        "_tail",
        "_target",
    )

    def __init__(self, now_ns: int = 0) -> None:
        #: Messages from number ``_first`` on: full chunks, then ``_tail`` being filled; the
        #: next number kept there is ``_next``.
        self._chunks: list[tuple[bytes | None, ...]] = []
        self._tail: list[bytes | None] = []
        self._first = 1
        self._next = 1
        #: Messages not in the chunks (see the class); they win over the chunks'.
        self._aside: dict[int, bytes] = {}
        self._sender = 1
        self._target = 1
        self._created = now_ns

    def set(self, seq_num: int, message: bytes) -> bool:
        """Store a sent message under its MsgSeqNum."""
        nxt = self._next
        if seq_num == nxt or (not self._tail and not self._chunks):
            if nxt != seq_num:  # nothing kept yet: the chunks start here
                self._first = self._next = seq_num
            self._push(message)
        elif nxt < seq_num <= nxt + GAP_KEPT:
            for _ in range(seq_num - nxt):
                self._push(None)
            self._push(message)
        elif seq_num < nxt:  # stored again, or before the first number
            self._aside[seq_num] = message
        else:  # far ahead: the chunks start again here, what they held is kept aside
            aside = self._aside
            for seq, raw in self._kept(self._first, nxt - 1):
                aside.setdefault(seq, raw)
            self._chunks = []
            self._tail = []
            self._first = self._next = seq_num
            self._push(message)
        return True

    def _push(self, message: bytes | None) -> None:
        tail = self._tail
        tail.append(message)
        self._next += 1
        if len(tail) == CHUNK:
            self._chunks.append(tuple(tail))
            self._tail = []

    def _kept(self, begin: int, end: int) -> list[tuple[int, bytes]]:
        # The chunks' messages with begin <= seq <= end, in order.
        first = self._first
        chunks = self._chunks
        tail = self._tail
        full = len(chunks) * CHUNK
        out = []
        for i in range(max(begin, first) - first, min(end + 1, self._next) - first):
            m = chunks[i // CHUNK][i % CHUNK] if i < full else tail[i - full]
            if m is not None:
                out.append((first + i, m))
        return out

    def get_range(self, begin: int, end: int) -> list[tuple[int, bytes]]:
        """Return the stored messages with ``begin <= seq_num <= end``, in order."""
        kept = self._kept(begin, end)
        aside = self._aside
        if not aside:
            return kept
        merged = dict(kept)
        merged.update((s, m) for s, m in aside.items() if begin <= s <= end)
        return sorted(merged.items())

    @property
    def next_sender_seq_num(self) -> int:
        """Return the MsgSeqNum of the next message we send."""
        return self._sender

    @property
    def next_target_seq_num(self) -> int:
        """Return the MsgSeqNum expected next."""
        return self._target

    def set_next_sender_seq_num(self, value: int) -> None:
        """Set the next outbound MsgSeqNum."""
        self._sender = value

    def set_next_target_seq_num(self, value: int) -> None:
        """Set the next expected inbound MsgSeqNum."""
        self._target = value

    def incr_next_sender_seq_num(self) -> None:
        """Add one to the next outbound MsgSeqNum."""
        self._sender += 1

    def incr_next_target_seq_num(self) -> None:
        """Add one to the next expected inbound MsgSeqNum."""
        self._target += 1

    @property
    def creation_time_ns(self) -> int:
        """Return when the store was created or last reset."""
        return self._created

    def reset(self, now_ns: int) -> None:
        """Forget all messages and restart both sequence numbers at 1."""
        self._chunks = []
        self._tail = []
        self._first = 1
        self._next = 1
        self._aside = {}
        self._sender = 1
        self._target = 1
        self._created = now_ns

    def refresh(self) -> None:
        """Do nothing: memory is the only copy."""

    def close(self) -> None:
        """Do nothing."""


_SEQ_FMT = b"%020d : %020d\n"
#: Longest note stored with a message (:meth:`FileStore.annotate`), bytes.
MAX_NOTE = 200
#: One index entry (sequence number, file offset) per this many stored messages.
INDEX_EVERY = 32
#: Notes of the last this many annotated messages are kept (:meth:`FileStore.annotated`).
NOTES_MEMORY = 20_000
#: Bytes of the body file read at a time when opening a store.
_LOAD_CHUNK = 8 << 20
#: Longest wait on close for the journal to catch up (a few of its flush intervals).
_CLOSE_WAIT_S = 2.0


class FileStore:
    """:class:`MessageStore` in files that survive a killed process (see the module docstring).

    Parameters
    ----------
    directory : str or Path
        ``FileStorePath``; created if missing.
    prefix : str
        File base name, normally ``SessionID.file_prefix``.
    now_ns : int
        Creation time used when the store is new.
    fsync : bool
        Also ``fsync`` after every write (durable across power loss, much slower).
    """

    __slots__ = (
        "_annotation",
        "_barrier",
        "_body_fd",
        "_body_size",
        "_created",
        "_dir",
        "_durable_target",
        "_fsync",
        "_generation",
        "_index_pos",
        "_index_seq",
        "_last_set",
        "_lock",
        "_notes",
        "_prefix",
        "_sender",
        "_seq_fd",
        "_stored",
        "_target",
    )

    def __init__(
        self, directory: str | Path, prefix: str, now_ns: int = 0, *, fsync: bool = False
    ) -> None:
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._prefix = prefix
        self._fsync = fsync
        # Sequence number and body offset (of its record head) of every INDEX_EVERY-th record.
        self._index_seq = array("q")
        self._index_pos = array("q")
        self._stored = 0  # records in the body file
        self._sender = 1
        self._target = 1
        self._created = now_ns
        self._last_set = 0
        self._body_fd = -1
        self._seq_fd = -1
        self._body_size = 0
        self._barrier: WriteBarrier | None = None
        self._annotation = b""  # note for the next message stored
        # seq -> (note, message offset, length) of the last NOTES_MEMORY annotated messages
        self._notes: OrderedDict[int, tuple[bytes, int, int]] = OrderedDict()
        self._durable_target = 1  # the inbound number ``.seqnums`` holds
        self._generation = 0  # bumped by a reset or a set: older barrier writes are void
        self._lock = threading.Lock()  # the barrier writes from the journal's thread
        self._open(now_ns)

    def set_write_barrier(self, barrier: WriteBarrier | None) -> None:
        """Persist the next inbound MsgSeqNum only after ``barrier`` says what precedes is safe.

        ``barrier`` is normally ``Journal.after_written``: an inbound message then counts as
        received on disk only once the journal has the events it caused (see the module
        docstring). ``None`` writes the number at once again.
        """
        self._barrier = barrier
        if barrier is None:
            with self._lock:
                self._generation += 1
                self._durable_target = self._target
                self._write_locked()

    # ------------------------------------------------------------------ files

    def _path(self, suffix: str) -> Path:
        return self._dir / f"{self._prefix}.{suffix}"

    def _open(self, now_ns: int) -> None:
        flags = os.O_RDWR | os.O_CREAT
        self._body_fd = os.open(self._path("body"), flags | os.O_APPEND, 0o644)
        self._seq_fd = os.open(self._path("seqnums"), flags, 0o644)
        session = self._path("session")
        if session.exists():
            try:
                self._created = int(session.read_text().strip() or "0")
            except ValueError:
                self._created = now_ns
        else:
            self._created = now_ns
            self._write_session_file()
        self._load()

    def _write_session_file(self) -> None:
        tmp = self._path("session.tmp")
        tmp.write_text(f"{self._created}\n")
        os.replace(tmp, self._path("session"))

    def _load(self) -> None:
        raw = os.pread(self._seq_fd, 64, 0)
        sender, target = 1, 1
        parts = raw.split(b":")
        if len(parts) == 2 and parts[0].strip().isdigit() and parts[1].strip().isdigit():
            sender, target = int(parts[0]), int(parts[1])
        elif raw.strip():
            # Guessing (1 and 1) would ask the counterparty for the whole day again, or send
            # numbers it has seen: the trader must decide (fix the file, or reset the session).
            self.close()
            raise StoreError(
                f"{self._path('seqnums')}: sequence numbers unreadable: {raw[:40]!r} (expected "
                "'<next sender> : <next target>'); repair the file or delete the store to "
                "start the session at 1"
            )
        size = os.fstat(self._body_fd).st_size
        self._index_seq, self._index_pos, self._stored = array("q"), array("q"), 0
        noted: list[np.ndarray] = []  # (seq, note offset, note length, start, length) rows
        last_seq = 0
        pos = 0  # file offset of the next record
        chunk = _LOAD_CHUNK
        while pos < size:
            data = os.pread(self._body_fd, min(chunk, size - pos), pos)
            used, last = self._parse(data, pos, noted)
            if used:
                pos, last_seq, chunk = pos + used, last, _LOAD_CHUNK
            elif pos + len(data) >= size:
                break  # a torn tail or garbage
            else:
                chunk *= 2  # one record longer than the chunk
        if pos < size:
            # A torn last record (killed mid-write) or garbage: cut it off before appending.
            os.ftruncate(self._body_fd, pos)
        self._body_size = pos
        # Only the last NOTES_MEMORY notes are kept: read just those (a day's store has
        # hundreds of thousands; making each a bytes object took seconds).
        notes: OrderedDict[int, tuple[bytes, int, int]] = OrderedDict()
        if noted:
            kept = np.concatenate(noted)[-NOTES_MEMORY:]
            kept = kept[kept[:, 3] + kept[:, 4] <= pos]  # none in a torn tail cut off above
            for seq, note_at, note_len, start, length in kept.tolist():
                notes[seq] = (os.pread(self._body_fd, note_len, note_at), start, length)
        self._notes = notes
        self._sender = max(sender, last_seq + 1)
        self._target = self._durable_target = target
        self._last_set = last_seq

    def _parse(self, data: bytes, base: int, noted_rows: list[np.ndarray]) -> tuple[int, int]:
        """Index the whole records of ``data`` (read at ``base``); return (bytes used, last seq).

        Stops at the first record cut off by the end of ``data`` (the caller reads on from
        there) or that is not a record (at the end of the file: a torn tail). A kernel walks
        the records (a day's store holds millions; a restart must not take seconds here).
        """
        from engine.fix._kernels import store_walk

        buf = np.frombuffer(data, np.uint8)
        rows = len(data) // 16 + 2
        marks = np.empty((rows // INDEX_EVERY + 2, 2), np.int64)
        noted = np.empty((rows, 5), np.int64)
        k, used, last_seq, nm, nn = store_walk(
            buf, self._stored, INDEX_EVERY, 48 + MAX_NOTE, marks, noted
        )
        self._stored += k
        self._index_seq.extend(marks[:nm, 0].tolist())
        self._index_pos.extend((marks[:nm, 1] + base).tolist())
        if nn:
            rows_ = noted[max(0, nn - NOTES_MEMORY) : nn].copy()
            rows_[:, 1] += base  # file offsets
            rows_[:, 3] += base
            noted_rows.append(rows_)
        return used, last_seq

    def _write_seqnums(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        if self._seq_fd < 0:
            return
        target = self._target if self._barrier is None else self._durable_target
        os.pwrite(self._seq_fd, _SEQ_FMT % (self._sender, target), 0)
        if self._fsync:
            os.fsync(self._seq_fd)

    def _target_reached(self, value: int, generation: int) -> None:
        """Barrier callback: what message ``value - 1`` caused is safe; persist ``value``."""
        with self._lock:
            if generation != self._generation or value <= self._durable_target:
                return
            self._durable_target = value
            self._write_locked()

    def _advance_target(self, value: int) -> None:
        self._target = value
        barrier = self._barrier
        if barrier is None:
            self._write_seqnums()
            return
        generation = self._generation
        try:
            barrier(lambda: self._target_reached(value, generation))
        except Exception:  # the journal is closed: nothing more will be journaled
            self._target_reached(value, generation)

    # ------------------------------------------------------------------ MessageStore

    def annotate(self, note: bytes) -> None:
        """Store ``note`` with the next message stored (and only there; never sent).

        A sender's own record of what a message was for, such as the strategy and engine order
        of a NewOrderSingle: it survives with the message when the process is killed before
        anything else recorded it. At most :data:`MAX_NOTE` bytes, no newline.
        """
        if b"\n" in note or len(note) > MAX_NOTE:
            raise ValueError(f"a store note has at most {MAX_NOTE} bytes and no newline")
        self._annotation = note

    def annotated(self) -> list[tuple[int, bytes, bytes]]:
        """Return ``(seq_num, note, message)`` of every stored message with a note, in order."""
        out: list[tuple[int, bytes, bytes]] = []
        for seq in sorted(self._notes):
            note, start, length = self._notes[seq]
            out.append((seq, note, os.pread(self._body_fd, length, start)))
        return out

    def set(self, seq_num: int, message: bytes) -> bool:
        """Append a sent message; it is safe from ``kill -9`` when this returns."""
        note = self._annotation
        if note:
            self._annotation = b""
            head = b"%d,%d,%s\n" % (seq_num, len(message), note)
        else:
            head = b"%d,%d\n" % (seq_num, len(message))
        os.write(self._body_fd, head + message + b"\n")
        if self._fsync:
            os.fsync(self._body_fd)
        if self._stored % INDEX_EVERY == 0:
            self._index_seq.append(seq_num)
            self._index_pos.append(self._body_size)
        self._stored += 1
        start = self._body_size + len(head)
        if note:
            notes = self._notes
            notes[seq_num] = (note, start, len(message))
            if len(notes) > NOTES_MEMORY:
                notes.popitem(last=False)
        self._body_size = start + len(message) + 1
        self._last_set = seq_num
        return True

    def get_range(self, begin: int, end: int) -> list[tuple[int, bytes]]:
        """Return the stored messages with ``begin <= seq_num <= end``, in order."""
        out: list[tuple[int, bytes]] = []
        seqs = self._index_seq
        i = bisect.bisect_right(seqs, begin) - 1
        pos = self._index_pos[i] if i >= 0 else 0
        j = bisect.bisect_right(seqs, end)
        stop = self._index_pos[j] if j < len(seqs) else self._body_size
        while pos < stop:
            data = os.pread(self._body_fd, min(_LOAD_CHUNK, stop - pos), pos)
            at, n = 0, len(data)
            while at < n:
                nl = data.find(b"\n", at)
                if nl < 0:
                    break
                head = data[at:nl].split(b",", 2)
                seq, length = int(head[0]), int(head[1])
                start = nl + 1
                if start + length + 1 > n:
                    break
                if begin <= seq <= end:
                    out.append((seq, data[start : start + length]))
                at = start + length + 1
            if at == 0:  # one record longer than the chunk
                nl = data.find(b"\n")
                length = int(data[:nl].split(b",", 2)[1])
                whole = os.pread(self._body_fd, nl + 2 + length, pos)
                seq = int(whole[:nl].split(b",", 1)[0])
                if begin <= seq <= end:
                    out.append((seq, whole[nl + 1 : nl + 1 + length]))
                at = nl + 2 + length
            pos += at
        return out

    @property
    def next_sender_seq_num(self) -> int:
        """Return the MsgSeqNum of the next message we send."""
        return self._sender

    @property
    def next_target_seq_num(self) -> int:
        """Return the MsgSeqNum expected next."""
        return self._target

    def set_next_sender_seq_num(self, value: int) -> None:
        """Set the next outbound MsgSeqNum."""
        self._sender = value
        self._write_seqnums()

    def set_next_target_seq_num(self, value: int) -> None:
        """Set the next expected inbound MsgSeqNum.

        A move forward (SequenceReset-GapFill) waits for the write barrier like a received
        message; a move back (or any move without a barrier) is written at once.
        """
        if self._barrier is not None and value >= self._target:
            self._advance_target(value)
            return
        with self._lock:
            self._generation += 1
            self._target = self._durable_target = value
            self._write_locked()

    def incr_next_sender_seq_num(self) -> None:
        """Add one to the next outbound MsgSeqNum."""
        self._sender += 1
        if self._last_set != self._sender - 1:
            # Not derivable from the body file on restart: persist it.
            self._write_seqnums()

    def incr_next_target_seq_num(self) -> None:
        """Add one to the next expected inbound MsgSeqNum (on disk after the write barrier)."""
        self._advance_target(self._target + 1)

    @property
    def creation_time_ns(self) -> int:
        """Return when the store was created or last reset."""
        return self._created

    def reset(self, now_ns: int) -> None:
        """Forget all messages and restart both sequence numbers at 1."""
        os.ftruncate(self._body_fd, 0)
        self._body_size = 0
        self._index_seq, self._index_pos, self._stored = array("q"), array("q"), 0
        self._notes.clear()
        self._last_set = 0
        with self._lock:
            self._generation += 1
            self._sender = 1
            self._target = self._durable_target = 1
            self._write_locked()
        self._created = now_ns
        self._write_session_file()

    def refresh(self) -> None:
        """Reload sequence numbers and the message index from the files."""
        self._load()

    def close(self) -> None:
        """Close the files (the store cannot be used afterwards).

        Behind a write barrier, first waits (briefly) for the journal to write what the last
        inbound messages caused, so that a clean stop leaves the inbound number up to date.
        """
        if self._barrier is not None and self._durable_target < self._target:
            written = threading.Event()
            try:
                self._barrier(written.set)
            except Exception:  # the journal is closed: it holds everything it will hold
                self._target_reached(self._target, self._generation)
            else:
                written.wait(_CLOSE_WAIT_S)
        with self._lock:
            for fd in (self._body_fd, self._seq_fd):
                if fd >= 0:
                    os.close(fd)
            self._body_fd = self._seq_fd = -1
