# SPDX-License-Identifier: MIT
"""Journal kernels over ``uint8`` buffers: frame walking with CRC checks, MessagePack peeking.

A restart reads a day's journal (a million orders: some ten million records) faster than Python
can touch each record: :func:`walk_frames` checks every frame of a chunk of the file (length,
CRC-32) and reads the sequence number and timestamp of each event without decoding it;
:func:`order_fields` reads an order's id and status out of ``OrderChanged`` payloads, so only
the records recovery keeps are decoded by Python. No Python objects are created.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

#: Columns of the frame table written by :func:`walk_frames` (int64[:, FRAME_COLUMNS]).
F_POS: int = 0  # offset of the record header in the buffer
F_LEN: int = 1  # payload length
F_KIND: int = 2
F_TYPE: int = 3
F_SEQ: int = 4  # EVENT records: sequence number (else 0)
F_TS: int = 5  # EVENT records: ts_event (else 0)
FRAME_COLUMNS: int = 6

#: :func:`walk_frames` status: stopped at the end of the buffer (or a record cut by it).
WALK_MORE: int = 0
#: The record at the returned offset's length exceeds the limit.
WALK_BAD_LENGTH: int = 1
#: The record at the returned offset fails its CRC.
WALK_BAD_CRC: int = 2
#: The frame table is full: call again from the returned offset.
WALK_FULL: int = 3

_KIND_EVENT = 3
_HEADER = 12


def crc_table() -> npt.NDArray[np.int64]:
    """Return the slicing-by-8 tables of the zlib CRC-32 (polynomial 0xEDB88320), (8, 256)."""
    table = np.zeros((8, 256), np.int64)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[0, i] = c
    for i in range(256):
        c = int(table[0, i])
        for k in range(1, 8):
            c = int(table[0, c & 0xFF]) ^ (c >> 8)
            table[k, i] = c
    return table


@kernel
def crc32(buf: npt.NDArray[np.uint8], lo: int, hi: int, table: npt.NDArray[np.int64]) -> int:
    """Return the zlib CRC-32 of ``buf[lo:hi]`` (eight bytes a step: about 2 GB/s)."""
    c = 0xFFFFFFFF
    i = lo
    while i + 8 <= hi:
        a = c ^ (
            np.int64(buf[i])
            | (np.int64(buf[i + 1]) << 8)
            | (np.int64(buf[i + 2]) << 16)
            | (np.int64(buf[i + 3]) << 24)
        )
        c = (
            table[7, a & 0xFF]
            ^ table[6, (a >> 8) & 0xFF]
            ^ table[5, (a >> 16) & 0xFF]
            ^ table[4, (a >> 24) & 0xFF]
            ^ table[3, buf[i + 4]]
            ^ table[2, buf[i + 5]]
            ^ table[1, buf[i + 6]]
            ^ table[0, buf[i + 7]]
        )
        i += 8
    while i < hi:
        c = table[0, (c ^ np.int64(buf[i])) & 0xFF] ^ (c >> 8)
        i += 1
    return c ^ 0xFFFFFFFF


@kernel_inline
def _u32(buf: npt.NDArray[np.uint8], p: int) -> int:
    return int(buf[p]) | (int(buf[p + 1]) << 8) | (int(buf[p + 2]) << 16) | (int(buf[p + 3]) << 24)


@kernel_inline
def _be(buf: npt.NDArray[np.uint8], p: int, n: int) -> int:
    v = 0
    for i in range(n):
        v = (v << 8) | int(buf[p + i])
    return v


@kernel
def mp_int(buf: npt.NDArray[np.uint8], p: int) -> tuple[int, int]:
    """Return (value, next offset) of the MessagePack integer at ``p``; (0, -1) if none."""
    b = int(buf[p])
    if b <= 0x7F:
        return b, p + 1
    if b >= 0xE0:
        return b - 256, p + 1
    if 0xCC <= b <= 0xCF:
        n = 1 << (b - 0xCC)
        return _be(buf, p + 1, n), p + 1 + n
    if 0xD0 <= b <= 0xD3:
        n = 1 << (b - 0xD0)
        v = _be(buf, p + 1, n)
        if v >= 1 << (8 * n - 1):
            v -= 1 << (8 * n) if n < 8 else 0
        return v, p + 1 + n
    return 0, -1


@kernel
def mp_array(buf: npt.NDArray[np.uint8], p: int) -> tuple[int, int]:
    """Return (length, offset of the first item) of the MessagePack array at ``p``; (0, -1)."""
    b = int(buf[p])
    if 0x90 <= b <= 0x9F:
        return b & 0x0F, p + 1
    if b == 0xDC:
        return _be(buf, p + 1, 2), p + 3
    if b == 0xDD:
        return _be(buf, p + 1, 4), p + 5
    return 0, -1


@kernel
def mp_skip(buf: npt.NDArray[np.uint8], p: int) -> int:  # noqa: C901  (one case per type)
    """Return the offset after the MessagePack object at ``p`` (nested ones included); -1."""
    todo = 1
    while todo > 0:
        todo -= 1
        b = int(buf[p])
        if b <= 0x7F or b >= 0xE0 or b in (0xC0, 0xC2, 0xC3):
            p += 1
        elif 0x80 <= b <= 0x8F:
            todo += 2 * (b & 0x0F)
            p += 1
        elif 0x90 <= b <= 0x9F:
            todo += b & 0x0F
            p += 1
        elif 0xA0 <= b <= 0xBF:
            p += 1 + (b & 0x1F)
        elif b in (0xC4, 0xD9):
            p += 2 + int(buf[p + 1])
        elif b in (0xC5, 0xDA):
            p += 3 + _be(buf, p + 1, 2)
        elif b in (0xC6, 0xDB):
            p += 5 + _be(buf, p + 1, 4)
        elif b == 0xCA:
            p += 5
        elif b == 0xCB:
            p += 9
        elif 0xCC <= b <= 0xCF:
            p += 1 + (1 << (b - 0xCC))
        elif 0xD0 <= b <= 0xD3:
            p += 1 + (1 << (b - 0xD0))
        elif 0xD4 <= b <= 0xD8:  # fixext 1..16
            p += 2 + (1 << (b - 0xD4))
        elif b == 0xC7:
            p += 3 + int(buf[p + 1])
        elif b == 0xC8:
            p += 4 + _be(buf, p + 1, 2)
        elif b == 0xC9:
            p += 6 + _be(buf, p + 1, 4)
        elif b == 0xDC:
            todo += _be(buf, p + 1, 2)
            p += 3
        elif b == 0xDD:
            todo += _be(buf, p + 1, 4)
            p += 5
        elif b == 0xDE:
            todo += 2 * _be(buf, p + 1, 2)
            p += 3
        elif b == 0xDF:
            todo += 2 * _be(buf, p + 1, 4)
            p += 5
        else:
            return -1
    return p


@kernel
def walk_frames(
    buf: npt.NDArray[np.uint8],
    start: int,
    max_payload: int,
    table: npt.NDArray[np.int64],
    out: npt.NDArray[np.int64],
) -> tuple[int, int, int]:
    """Check the records of ``buf`` from ``start``; return (records, stop offset, status).

    Each intact record gets a row of ``out`` (columns ``F_*``); the walk stops at the end of
    the buffer or a record cut by it (``WALK_MORE``: read on from the stop offset), a full
    table (``WALK_FULL``), or a bad record (``WALK_BAD_LENGTH``, ``WALK_BAD_CRC``) at the stop
    offset.
    """
    n = buf.shape[0]
    p = start
    k = 0
    while p + _HEADER <= n:
        if k >= out.shape[0]:
            return k, p, WALK_FULL
        length = _u32(buf, p)
        if length > max_payload:
            return k, p, WALK_BAD_LENGTH
        end = p + _HEADER + length
        if end > n:
            break
        if crc32(buf, p + 8, end, table) != _u32(buf, p + 4):
            return k, p, WALK_BAD_CRC
        kind = int(buf[p + 8])
        out[k, 0] = p
        out[k, 1] = length
        out[k, 2] = kind
        out[k, 3] = int(buf[p + 10]) | (int(buf[p + 11]) << 8)
        out[k, 4] = 0
        out[k, 5] = 0
        if kind == _KIND_EVENT and length > 0:
            _cnt, q = mp_array(buf, p + _HEADER)
            if q > 0:
                seq, q = mp_int(buf, q)
                if q > 0:
                    out[k, 4] = seq
                    ts, q = mp_int(buf, q)
                    if q > 0:
                        out[k, 5] = ts
        k += 1
        p = end
    return k, p, WALK_MORE


@kernel
def order_fields(
    buf: npt.NDArray[np.uint8],
    rows: npt.NDArray[np.int64],
    order_at: int,
    id_at: int,
    status_at: int,
    out: npt.NDArray[np.int64],
) -> None:
    """Read order id and status of ``OrderChanged`` records (frame-table ``rows``) into ``out``.

    ``order_at`` is the index of the order (an array) among the event's values after the
    sequence number; ``id_at`` and ``status_at`` the indexes of ``order_id`` and ``status`` in
    it. A payload that does not parse gets order id -1.
    """
    for r in range(rows.shape[0]):
        out[r, 0] = -1
        out[r, 1] = -1
        _cnt, q = mp_array(buf, rows[r, 0] + _HEADER)
        if q < 0:
            continue
        q = mp_skip(buf, q)  # the sequence number
        for _ in range(order_at):
            if q > 0:
                q = mp_skip(buf, q)
        if q < 0:
            continue
        fields, q = mp_array(buf, q)
        if q < 0 or fields <= max(id_at, status_at):
            continue
        for i in range(max(id_at, status_at) + 1):
            if i == id_at:
                v, _q = mp_int(buf, q)
                out[r, 0] = v
            elif i == status_at:
                v, _q = mp_int(buf, q)
                out[r, 1] = v
            q = mp_skip(buf, q)
            if q < 0:
                out[r, 0] = -1
                break


#: :func:`event_fields` column kinds: an integer value, or a string's (offset, length, hash).
FIELD_INT: int = 0
FIELD_STR: int = 1


@kernel_inline
def _mp_str(buf: npt.NDArray[np.uint8], p: int) -> tuple[int, int]:
    """Return (offset of the bytes, length) of the MessagePack string at ``p``; (-1, 0)."""
    b = int(buf[p])
    if 0xA0 <= b <= 0xBF:
        return p + 1, b & 0x1F
    if b == 0xD9:
        return p + 2, int(buf[p + 1])
    if b == 0xDA:
        return p + 3, _be(buf, p + 1, 2)
    if b == 0xDB:
        return p + 5, _be(buf, p + 1, 4)
    return -1, 0


@kernel_inline
def _fnv1a(buf: npt.NDArray[np.uint8], p: int, n: int) -> int:
    h = np.uint64(0xCBF29CE484222325)
    for i in range(n):
        h = (h ^ np.uint64(buf[p + i])) * np.uint64(0x100000001B3)
    return np.int64(h >> np.uint64(1))  # type: ignore[return-value]  # non-negative


@kernel
def event_fields(
    buf: npt.NDArray[np.uint8],
    rows: npt.NDArray[np.int64],
    want: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.int64],
    out: npt.NDArray[np.int64],
) -> int:
    """Read chosen top-level fields of EVENT records (frame-table ``rows``) into ``out``.

    ``want`` holds field indexes (ascending) among the event's values after the sequence
    number, ``kinds`` whether each is an integer (``FIELD_INT``: its value in column ``3*j``)
    or a string (``FIELD_STR``: offset in ``buf``, byte length and a 63-bit FNV-1a hash of its
    bytes in columns ``3*j .. 3*j+2``). Returns the first row that does not parse as that (a
    value of another type, a short array), or -1 when every row did.
    """
    m = want.shape[0]
    for r in range(rows.shape[0]):
        cnt, q = mp_array(buf, rows[r, 0] + _HEADER)
        if q < 0 or cnt <= want[m - 1] + 1:
            return r
        q = mp_skip(buf, q)  # the sequence number
        i = 0
        for j in range(m):
            while i < want[j] and q > 0:
                q = mp_skip(buf, q)
                i += 1
            if q < 0:
                return r
            if kinds[j] == FIELD_INT:
                v, q2 = mp_int(buf, q)
                if q2 < 0:
                    return r
                out[r, 3 * j] = v
                q = q2
            else:
                at, n = _mp_str(buf, q)
                if at < 0:
                    return r
                out[r, 3 * j] = at
                out[r, 3 * j + 1] = n
                out[r, 3 * j + 2] = _fnv1a(buf, at, n)
                q = at + n
            i += 1
    return -1


@kernel
def last_of_each(ids: npt.NDArray[np.int64], keep: npt.NDArray[np.bool_]) -> bool:
    """Mark in ``keep`` the last row of each id (ids < 0 are never kept); False if too sparse.

    Ids of one chunk of a journal lie close together (orders are numbered as sent), so a
    dense table over their range finds each last row in one pass; when the range is much
    wider than the rows (False is returned, ``keep`` untouched) the caller sorts instead.
    """
    n = ids.shape[0]
    lo = np.int64(1) << 62
    hi = np.int64(-1)
    for i in range(n):
        v = ids[i]
        if v >= 0:
            lo = min(lo, v)
            hi = max(hi, v)
    if hi < 0:
        return True
    if hi - lo + 1 > 8 * n + 4096:
        return False
    last = np.full(hi - lo + 1, -1, np.int64)
    for i in range(n):
        v = ids[i]
        if v >= 0:
            last[v - lo] = i
    for j in range(last.shape[0]):
        if last[j] >= 0:
            keep[last[j]] = True
    return True
