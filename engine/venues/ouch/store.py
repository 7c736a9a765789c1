# SPDX-License-Identifier: MIT
"""What a SoupBinTCP/OUCH session keeps across restarts, in files that survive ``kill -9``.

Two stores, both append-only like the FIX store (:mod:`engine.fix.store`): every change is one
unbuffered ``write`` appended to the file, so the kernel holds it once the call returns and a
killed process loses nothing; ``fsync=True`` adds durability across power loss. On open, a torn
or damaged tail (a record cut off, or whose CRC-32 does not match) is cut off.

* :class:`FileSequencedStore`, the server's side: every Sequenced Data message it has sent this
  session, in order (the sequence number is the position, from 1), so that a client logging in
  again with the next sequence number it expects gets the rest replayed. File
  ``<prefix>.soupseq``: records ``u32 length | u32 crc32 | payload``.
* :class:`FileClientState`, the client's side: the next sequence number it expects, the next
  UserRefNum it will use and the session it is logged into. File ``<prefix>.ouchstate``:
  fixed 40-byte records ``"OUS1" | u64 next expected | u64 next UserRefNum | session (10
  bytes) | 6 spare bytes | u32 crc32``; the last whole, valid record holds the state. A store
  opened with more than :data:`COMPACT_AT` bytes is rewritten as one record first (a new file
  renamed over the old: a kill at any instant leaves one or the other).

The order of writes is what makes a restart exact: a UserRefNum is appended before the order
that carries it is sent (a kill in between burns a number, which OUCH allows: UserRefNums only
have to increase), and the next expected sequence number is appended after the handler has
taken the message (a kill in between has the message replayed at the next login, which the
handler must recognise, as it must for FIX PossDup resends).
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from engine.fastlog import get_log
from engine.venues.ouch import _kernels as k

log = get_log(__name__)


class StoreError(ValueError):
    """A store's files cannot be read as a store (names the file and why)."""


# ----------------------------------------------------------------------------- server side


@runtime_checkable
class SequencedStore(Protocol):
    """The server's sequenced messages of one session."""

    @property
    def next_seq(self) -> int:
        """Return the sequence number the next appended message gets."""
        ...

    def append(self, payload: bytes) -> int:
        """Store ``payload`` as the next sequenced message; return its sequence number."""
        ...

    def get_range(self, begin: int, end: int) -> list[bytes]:
        """Return the messages ``begin`` to ``end`` inclusive (clipped to what is stored)."""
        ...

    def reset(self) -> None:
        """Forget every message (a new session starts at 1)."""
        ...

    def close(self) -> None:
        """Release files."""
        ...


class MemorySequencedStore:
    """In-memory :class:`SequencedStore`."""

    __slots__ = ("_msgs",)

    def __init__(self) -> None:
        self._msgs: list[bytes] = []

    @property
    def next_seq(self) -> int:
        """Return the sequence number the next appended message gets."""
        return len(self._msgs) + 1

    def append(self, payload: bytes) -> int:
        """Store ``payload``; return its sequence number."""
        self._msgs.append(bytes(payload))
        return len(self._msgs)

    def get_range(self, begin: int, end: int) -> list[bytes]:
        """Return the messages ``begin`` to ``end`` inclusive."""
        return self._msgs[max(begin, 1) - 1 : max(end, 0)]

    def reset(self) -> None:
        """Forget every message."""
        self._msgs.clear()

    def close(self) -> None:
        """Do nothing."""


_REC_HEAD = struct.Struct(">II")
_CRC_TABLE: np.ndarray | None = None


def _crc_table() -> np.ndarray:
    global _CRC_TABLE
    if _CRC_TABLE is None:
        _CRC_TABLE = k.crc32_table()
    return _CRC_TABLE


def read_sequenced(path: str | Path) -> tuple[list[bytes], int]:
    """Return the messages of a :class:`FileSequencedStore` file, read only, and torn bytes.

    For readers that must not change the file (a reconciliation while the venue runs): a torn
    or damaged tail is left where it is and reported as its size.
    """
    data = np.fromfile(path, np.uint8)
    offsets = np.zeros(max(1024, data.shape[0] // 9 + 1), np.int64)
    n, used = k.walk_records(data, offsets, _crc_table())
    raw = data.tobytes()
    out = []
    for i in range(int(n)):
        at = int(offsets[i])
        length = int.from_bytes(raw[at : at + 4], "big")
        out.append(raw[at + 8 : at + 8 + length])
    return out, data.shape[0] - int(used)


class FileSequencedStore:
    """:class:`SequencedStore` in an append-only file (see the module docstring).

    Parameters
    ----------
    directory : str or Path
        Folder of the store; created if missing.
    prefix : str
        File base name (one store per session and account).
    fsync : bool
        Also ``fsync`` after every append (durable across power loss, much slower).
    """

    __slots__ = ("_count", "_fd", "_fsync", "_offsets", "_path", "_size")

    def __init__(self, directory: str | Path, prefix: str, *, fsync: bool = False) -> None:
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        self._path = folder / f"{prefix}.soupseq"
        self._fsync = fsync
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._offsets = np.zeros(1024, np.int64)
        self._count = 0
        self._size = 0
        self._load()

    @property
    def path(self) -> Path:
        """Return the store's file."""
        return self._path

    def _load(self) -> None:
        size = os.fstat(self._fd).st_size
        data = np.fromfile(self._path, np.uint8, count=size) if size else np.zeros(0, np.uint8)
        offsets = np.zeros(max(1024, size // 9 + 1), np.int64)
        n, used = k.walk_records(data, offsets, _crc_table())
        if used < size:
            log.warning(
                "%s: cut off %d bytes of a torn or damaged tail after message %d",
                self._path,
                size - used,
                n,
            )
            os.ftruncate(self._fd, used)
        self._offsets, self._count, self._size = offsets, int(n), int(used)

    @property
    def next_seq(self) -> int:
        """Return the sequence number the next appended message gets."""
        return self._count + 1

    def append(self, payload: bytes) -> int:
        """Append ``payload``; it is safe from ``kill -9`` when this returns."""
        rec = _REC_HEAD.pack(len(payload), zlib.crc32(payload)) + payload
        os.write(self._fd, rec)
        if self._fsync:
            os.fsync(self._fd)
        if self._count == len(self._offsets):
            self._offsets = np.concatenate([self._offsets, np.zeros_like(self._offsets)])
        self._offsets[self._count] = self._size
        self._count += 1
        self._size += len(rec)
        return self._count

    def get_range(self, begin: int, end: int) -> list[bytes]:
        """Return the messages ``begin`` to ``end`` inclusive (clipped to what is stored)."""
        lo, hi = max(begin, 1), min(end, self._count)
        if lo > hi:
            return []
        start = int(self._offsets[lo - 1])
        stop = int(self._offsets[hi]) if hi < self._count else self._size
        data = os.pread(self._fd, stop - start, start)
        out = []
        p = 0
        for _ in range(hi - lo + 1):
            length = int.from_bytes(data[p : p + 4], "big")
            out.append(data[p + 8 : p + 8 + length])
            p += 8 + length
        return out

    def reset(self) -> None:
        """Forget every message (a new session starts at 1)."""
        os.ftruncate(self._fd, 0)
        if self._fsync:
            os.fsync(self._fd)
        self._count = self._size = 0

    def close(self) -> None:
        """Close the file (the store cannot be used afterwards)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# ----------------------------------------------------------------------------- client side


@runtime_checkable
class ClientState(Protocol):
    """The client's counters of one account: next expected sequence number and UserRefNum."""

    @property
    def next_expected_seq(self) -> int:
        """Return the sequence number of the next Sequenced Data message expected."""
        ...

    @property
    def next_user_ref_num(self) -> int:
        """Return the UserRefNum the next order gets."""
        ...

    @property
    def session(self) -> str:
        """Return the session logged into last ("" before the first login)."""
        ...

    def set_next_expected_seq(self, value: int) -> None:
        """Record that every message before ``value`` has been taken."""
        ...

    def take_user_ref_num(self) -> int:
        """Return the next UserRefNum and advance (persisted before it returns)."""
        ...

    def set_next_user_ref_num(self, value: int) -> None:
        """Set the next UserRefNum (an Account Query Response's NextUserRefNum)."""
        ...

    def set_session(self, session: str) -> None:
        """Record the session logged into."""
        ...

    def reset(self, session: str = "") -> None:
        """Start over: sequence number 1, UserRefNum 1 (a new trading day)."""
        ...

    def close(self) -> None:
        """Release files."""
        ...


class MemoryClientState:
    """In-memory :class:`ClientState`."""

    __slots__ = ("_next_ref", "_next_seq", "_session")

    def __init__(self) -> None:
        self._next_seq = 1
        self._next_ref = 1
        self._session = ""

    @property
    def next_expected_seq(self) -> int:
        """Return the next expected sequence number."""
        return self._next_seq

    @property
    def next_user_ref_num(self) -> int:
        """Return the next UserRefNum."""
        return self._next_ref

    @property
    def session(self) -> str:
        """Return the session logged into last."""
        return self._session

    def set_next_expected_seq(self, value: int) -> None:
        """Set the next expected sequence number."""
        self._next_seq = value

    def take_user_ref_num(self) -> int:
        """Return the next UserRefNum and advance."""
        ref = self._next_ref
        self._next_ref = ref + 1
        return ref

    def set_next_user_ref_num(self, value: int) -> None:
        """Set the next UserRefNum."""
        self._next_ref = value

    def set_session(self, session: str) -> None:
        """Record the session logged into."""
        self._session = session

    def reset(self, session: str = "") -> None:
        """Start over at 1 and 1."""
        self._next_seq = self._next_ref = 1
        self._session = session

    def close(self) -> None:
        """Do nothing."""


_MAGIC = b"OUS1"
_STATE = struct.Struct(">4sQQ10s6x")  # 36 bytes, then the u32 CRC
#: Size of one client-state record.
STATE_RECORD = _STATE.size + 4
#: A client-state file larger than this is compacted to one record when opened.
COMPACT_AT = 1 << 20


_CRC = struct.Struct(">I")


def _session_bytes(session: str) -> bytes:
    return session.encode("ascii", "replace")[:10].ljust(10)


def _state_record(next_seq: int, next_ref: int, session: str) -> bytes:
    body = _STATE.pack(_MAGIC, next_seq, next_ref, _session_bytes(session))
    return body + _CRC.pack(zlib.crc32(body))


def _parse_state(rec: bytes) -> tuple[int, int, str] | None:
    if len(rec) != STATE_RECORD or zlib.crc32(rec[:-4]) != int.from_bytes(rec[-4:], "big"):
        return None
    magic, seq, ref, session = _STATE.unpack(rec[:-4])
    if magic != _MAGIC or seq < 1 or ref < 1:
        return None
    return seq, ref, session.decode("ascii", "replace").strip()


#: UserRefNums the engine reserves on disk at a time (``FileClientState``'s ``user_ref_block``):
#: one write per this many orders instead of one per order; a kill skips at most this many - 1.
ENGINE_USER_REF_BLOCK = 64


class FileClientState:
    """:class:`ClientState` in an append-only file (see the module docstring).

    Parameters
    ----------
    directory : str or Path
        Folder of the state; created if missing.
    prefix : str
        File base name (one per account).
    fsync : bool
        Also ``fsync`` after every append.
    user_ref_block : int
        UserRefNums reserved on disk at a time. 1 (the default) writes every one before it is
        used; a block of N writes once per N orders, and a restart after a kill skips what
        was reserved and not used (at most N - 1 numbers: OUCH needs them increasing, not
        consecutive). Never reuses a number either way.

    Raises
    ------
    StoreError
        If the file is not empty but holds no valid record.
    """

    __slots__ = (
        "_block", "_durable_ref", "_fd", "_fsync", "_next_ref", "_next_seq", "_path", "_rec",
        "_session", "_session_raw", "_size",
    )  # fmt: skip

    def __init__(
        self, directory: str | Path, prefix: str, *, fsync: bool = False, user_ref_block: int = 1
    ) -> None:
        if user_ref_block < 1:
            raise ValueError(f"user_ref_block must be >= 1, got {user_ref_block}")
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        self._path = folder / f"{prefix}.ouchstate"
        self._fsync = fsync
        self._block = user_ref_block
        self._next_seq, self._next_ref, self._session = 1, 1, ""
        self._rec = bytearray(STATE_RECORD)  # the record being written, reused
        self._fd = -1
        self._size = 0
        self._open()

    @property
    def path(self) -> Path:
        """Return the state's file."""
        return self._path

    def _open(self) -> None:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        size = os.fstat(fd).st_size
        whole = size - size % STATE_RECORD
        good = whole
        state = None
        while good > 0:  # the last valid record wins; anything after it is a torn tail
            state = _parse_state(os.pread(fd, STATE_RECORD, good - STATE_RECORD))
            if state is not None:
                break
            good -= STATE_RECORD
        if size and state is None:
            os.close(fd)
            raise StoreError(
                f"{self._path}: no valid state record in {size} bytes; repair it or delete "
                "it to start at sequence number 1 and UserRefNum 1"
            )
        if good < size:
            log.warning("%s: cut off %d bytes of a torn tail", self._path, size - good)
            os.ftruncate(fd, good)
        if state is not None:
            self._next_seq, self._next_ref, self._session = state
        self._durable_ref = self._next_ref  # the UserRefNum the file holds as next
        self._session_raw = _session_bytes(self._session)
        self._fd, self._size = fd, good
        if good > COMPACT_AT:
            self._compact()

    def _compact(self) -> None:
        tmp = self._path.with_suffix(".ouchstate.tmp")
        with open(tmp, "wb") as f:
            f.write(_state_record(self._next_seq, self._durable_ref, self._session))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)
        os.close(self._fd)
        self._fd = os.open(self._path, os.O_RDWR | os.O_APPEND)
        self._size = STATE_RECORD

    def _write(self) -> None:
        # On the order path (a UserRefNum per order): one pack, one CRC, one write.
        rec = self._rec
        _STATE.pack_into(rec, 0, _MAGIC, self._next_seq, self._durable_ref, self._session_raw)
        _CRC.pack_into(rec, _STATE.size, zlib.crc32(memoryview(rec)[: _STATE.size]))
        os.write(self._fd, rec)
        if self._fsync:
            os.fsync(self._fd)
        self._size += STATE_RECORD

    @property
    def next_expected_seq(self) -> int:
        """Return the next expected sequence number."""
        return self._next_seq

    @property
    def next_user_ref_num(self) -> int:
        """Return the next UserRefNum."""
        return self._next_ref

    @property
    def session(self) -> str:
        """Return the session logged into last."""
        return self._session

    def set_next_expected_seq(self, value: int) -> None:
        """Set (and persist) the next expected sequence number."""
        if value != self._next_seq:
            self._next_seq = value
            self._write()

    def take_user_ref_num(self) -> int:
        """Return the next UserRefNum; the advance is on disk when this returns."""
        ref = self._next_ref
        self._next_ref = ref + 1
        if ref >= self._durable_ref:
            self._durable_ref = ref + self._block
            self._write()
        return ref

    def set_next_user_ref_num(self, value: int) -> None:
        """Set (and persist) the next UserRefNum."""
        self._next_ref = self._durable_ref = value
        self._write()

    def set_session(self, session: str) -> None:
        """Record (and persist) the session logged into."""
        if session != self._session:
            self._session = session
            self._session_raw = _session_bytes(session)
            self._write()

    def reset(self, session: str = "") -> None:
        """Start over at sequence number 1 and UserRefNum 1."""
        self._next_seq, self._next_ref, self._durable_ref, self._session = 1, 1, 1, session
        self._session_raw = _session_bytes(session)
        self._write()

    def close(self) -> None:
        """Close the file (the state cannot be used afterwards).

        With a ``user_ref_block`` above 1, first records the exact next UserRefNum, so that a
        clean stop skips none.
        """
        if self._fd >= 0 and self._durable_ref != self._next_ref:
            self._durable_ref = self._next_ref
            self._write()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
