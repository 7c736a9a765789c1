# SPDX-License-Identifier: MIT
"""Decode ITCH 5.0 bytes into one structured array per message type, in two kernel calls.

A buffer is a raw ITCH file (``u16`` length + message, repeated, as NASDAQ distributes
days) or a run of MoldUDP64 packets (see :mod:`engine.feeds.itch.moldudp64`, which also
decides which messages of a duplicate packet to skip). The first kernel frames and checks
every message and counts each type; the second writes every row through the layout tables of
:mod:`engine.feeds.itch.messages`. Within a type, rows keep stream order; ``seq`` orders
rows across types.

    day = decode_file("01302019.NASDAQ_ITCH50")
    adds = day["A"]           # rows of ADD_ORDER_DTYPE
    adds["price"] / 10_000    # USD

A bad message (unknown type byte, a length that is not its type's, bytes cut off) raises
:class:`ItchDecodeError` naming the source, packet, byte offset, type and length; its
``partial`` holds every message decoded before the bad spot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.feeds.itch import _kernels as k
from engine.feeds.itch.messages import (
    MESSAGE_DTYPES,
    MESSAGE_LENGTHS,
    MESSAGE_TYPES,
    LayoutTables,
    layout_tables,
)

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_TABLES: LayoutTables = layout_tables()


@dataclass(frozen=True, slots=True)
class Decoded:
    """The messages of one buffer, one structured array per type byte.

    Parameters
    ----------
    messages : dict of str to ndarray
        Rows of ``MESSAGE_DTYPES[t]`` per type byte ``t`` (every type present, maybe empty).
    n_framed : int
        Messages framed (decoded plus skipped as already seen).
    n_bytes : int
        Bytes of the buffer walked.
    """

    messages: dict[str, npt.NDArray[np.void]]
    n_framed: int
    n_bytes: int

    def __getitem__(self, message_type: str) -> npt.NDArray[np.void]:
        return self.messages[message_type]

    @property
    def n_messages(self) -> int:
        """Rows decoded, all types."""
        return sum(int(a.shape[0]) for a in self.messages.values())

    def counts(self) -> dict[str, int]:
        """Return the rows per type byte, for the types present."""
        return {t: int(a.shape[0]) for t, a in self.messages.items() if a.shape[0]}


class ItchDecodeError(ValueError):
    """A message that cannot be decoded; ``partial`` holds what was decoded before it."""

    def __init__(self, message: str, partial: Decoded, code: int, packet: int, offset: int):
        super().__init__(message)
        self.partial = partial
        self.code = code
        self.packet = packet
        self.offset = offset


@dataclass(slots=True)
class Arena:
    """A reusable output buffer for :func:`decode_buffer` (grown when too small).

    Rows decoded into an arena are views of it: the next decode into the same arena
    overwrites them. A feed handler decoding packet after packet reuses one arena and so
    pays the operating system's page faults for fresh memory once, not per call.
    """

    buf: U8 = field(default_factory=lambda: np.zeros(0, np.uint8))

    def take(self, nbytes: int) -> U8:
        """Return ``nbytes`` of the buffer (8-byte aligned), growing it if needed."""
        if self.buf.shape[0] < nbytes + 8:
            self.buf = np.zeros(max(nbytes + 8, 2 * self.buf.shape[0]), np.uint8)
        off = (-self.buf.ctypes.data) % 8
        return self.buf[off : off + nbytes]


def _describe(code: int, err: I64) -> str:
    t, ln = int(err[k.E_TYPE]), int(err[k.E_LENGTH])
    name = repr(chr(t)) if t >= 0 else "?"
    if code == k.ERR_UNKNOWN_TYPE:
        return f"type byte {t} ({name}) names no ITCH 5.0 message (length {ln})"
    if code == k.ERR_BAD_LENGTH:
        want = MESSAGE_LENGTHS[chr(t)]
        return f"message type {name} has length {ln}, the spec's length is {want}"
    if code == k.ERR_TRUNCATED:
        if ln < 0:
            return "a length prefix is cut off by the end of the data"
        return f"message type {name} of length {ln} runs past the end of the data"
    if code == k.ERR_SHORT_HEADER:
        return f"MoldUDP64 packet of {ln} bytes is shorter than its 20-byte header"
    if code == k.ERR_TRAILING:
        return f"{ln} bytes are left after the packet's announced message count"
    return "a message of length 0"


def decode_buffer(
    buf: U8,
    pk_start: I64,
    pk_end: I64,
    *,
    mold: bool,
    keep: U8 | None = None,
    first_seq: int = 1,
    source: str = "<buffer>",
    arena: Arena | None = None,
) -> Decoded:
    """Decode every (kept) message of ``buf`` into one structured array per type.

    Parameters
    ----------
    buf : uint8[:]
        Wire bytes.
    pk_start, pk_end : int64[n]
        Byte range of each MoldUDP64 packet (``mold=True``) or of the raw file (one range).
    mold : bool
        Whether the ranges are MoldUDP64 packets.
    keep : uint8[:], optional
        One flag per message in stream order (0: skip, e.g. already seen); default all.
    first_seq : int
        ``seq`` of a raw file's first message (MoldUDP64 packets carry their own).
    source : str
        Name of the data for error messages (a file name).
    arena : Arena, optional
        Reusable output buffer (rows are then views of it); default fresh arrays.

    Returns
    -------
    Decoded

    Raises
    ------
    ItchDecodeError
        At the first bad message (its ``partial`` holds the rows before it).
    """
    t = _TABLES
    ntypes = len(MESSAGE_TYPES)
    counts = np.zeros(ntypes, np.int64)
    err = np.zeros(k.E_WIDTH, np.int64)
    keep_arr = np.zeros(0, np.uint8) if keep is None else np.ascontiguousarray(keep, np.uint8)
    mode = k.MODE_MOLD if mold else k.MODE_RAW
    framed = int(
        k.frame_messages(buf, pk_start, pk_end, mode, keep_arr, t.index, t.length, counts, err)
    )
    if keep is not None and keep_arr.shape[0] < framed:
        raise ValueError(f"keep: {keep_arr.shape[0]} flags for {framed} messages")
    sizes = counts * t.itemsize
    base = np.zeros(ntypes, np.int64)
    base[1:] = np.cumsum(sizes)[:-1]
    total = int(sizes.sum())
    out = arena.take(total) if arena is not None else _aligned(total)
    rows = np.zeros(ntypes, np.int64)
    k.decode_messages(
        buf,
        pk_start,
        pk_end,
        mode,
        keep_arr,
        framed,
        first_seq,
        t.index,
        t.ops,
        t.n_ops,
        t.itemsize,
        base,
        rows,
        out,
        out.view(np.uint16),
        out.view(np.uint32),
        out.view(np.int64),
    )
    messages = {
        mt: out[base[i] : base[i] + sizes[i]].view(MESSAGE_DTYPES[mt])
        for i, mt in enumerate(MESSAGE_TYPES)
    }
    code = int(err[k.E_CODE])
    end = int(pk_end[-1]) if pk_end.shape[0] else 0
    decoded = Decoded(messages, framed, end if code == k.ERR_NONE else int(err[k.E_OFFSET]))
    if code != k.ERR_NONE:
        raise ItchDecodeError(
            f"{error_text(err, source, mold)}; the {framed} messages before it were decoded",
            decoded,
            code,
            int(err[k.E_PACKET]),
            int(err[k.E_OFFSET]),
        )
    return decoded


def error_text(err: I64, source: str, mold: bool) -> str:
    """Return where and why framing stopped, from a kernel status row (``E_*`` columns)."""
    pk, off = int(err[k.E_PACKET]), int(err[k.E_OFFSET])
    where = f"packet {pk}, byte {off}" if mold else f"byte {off}"
    n = int(err[k.E_MESSAGES])
    return f"{source}: {where} (message {n + 1}): {_describe(int(err[k.E_CODE]), err)}"


def _aligned(nbytes: int) -> U8:
    # numpy's allocations are 16-byte aligned, which the int64 view of the rows needs
    return np.empty(nbytes, np.uint8)


def as_bytes(data: bytes | bytearray | memoryview | U8) -> U8:
    """Return ``data`` as a read-only uint8 array (no copy)."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise ValueError(f"data: must be a 1-D uint8 array, got {data.dtype}{data.shape}")
        return np.ascontiguousarray(data)
    return np.frombuffer(data, np.uint8)


def decode_raw(
    data: bytes | bytearray | memoryview | U8,
    *,
    first_seq: int = 1,
    source: str = "<buffer>",
    arena: Arena | None = None,
) -> Decoded:
    """Decode a raw ITCH 5.0 stream (``u16`` big-endian length + message, repeated).

    Parameters
    ----------
    data : bytes or uint8[:]
        The stream.
    first_seq : int
        ``seq`` given to the first message (the others follow).
    source : str
        Name of the data for error messages.
    arena : Arena, optional
        Reusable output buffer.

    Returns
    -------
    Decoded

    Raises
    ------
    ItchDecodeError
        At the first bad message.
    """
    buf = as_bytes(data)
    rng = np.array([0], np.int64), np.array([buf.shape[0]], np.int64)
    return decode_buffer(buf, *rng, mold=False, first_seq=first_seq, source=source, arena=arena)


def decode_file(path: str | Path, *, first_seq: int = 1) -> Decoded:
    """Decode a raw ITCH 5.0 file (as NASDAQ distributes days), memory-mapped.

    Raises
    ------
    ItchDecodeError
        At the first bad message (naming the file and the byte offset).
    OSError
        If the file cannot be read.
    """
    p = Path(path)
    if p.stat().st_size == 0:
        return decode_raw(b"", first_seq=first_seq, source=str(p))
    mm = np.memmap(p, np.uint8, mode="r")
    return decode_raw(np.asarray(mm), first_seq=first_seq, source=str(p))


__all__ = [
    "Arena",
    "Decoded",
    "ItchDecodeError",
    "as_bytes",
    "decode_buffer",
    "decode_file",
    "decode_raw",
    "error_text",
]
