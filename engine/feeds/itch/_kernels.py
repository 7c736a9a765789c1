# SPDX-License-Identifier: MIT
"""ITCH 5.0 kernels: decoding, MoldUDP64 tracking, the books of every stock, a day generator.

Buffers are ``uint8`` arrays of wire bytes. A buffer is either a run of MoldUDP64 packets
(``pk_start``/``pk_end`` give each packet's range; a packet is a 20-byte header, then per
message a big-endian ``u16`` length and the message) or a raw ITCH file as NASDAQ
distributes days (one range: ``u16`` length + message, repeated).

Decoding walks the layout tables of :mod:`engine.feeds.itch.messages`: every message becomes
one row of its type's structured dtype by a table of byte moves, so one compiled kernel
serves all 23 types. Nothing here raises: kernels return counts and write a status row
(``ERR_*`` codes with where they stopped); the Python wrappers turn that into errors.

One module, and the book kernel one flat body, on purpose: numba reference-counts every array
passed to a helper call (atomics, even inlined), which cost a third of the book time, so the
per-message work is written out where it runs (docs/kernels.md on hand-inlined copies).
"""

import numpy as np
import numpy.typing as npt

from engine.feeds.itch.messages import MESSAGE_DTYPES
from engine.jit import kernel, kernel_inline
from engine.types import BUY, SELL

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]

# ------------------------------------------------------------------------------ framing
#: Status codes written to ``err[E_CODE]``.
ERR_NONE: int = 0
#: A message's type byte names no ITCH 5.0 message.
ERR_UNKNOWN_TYPE: int = 1
#: A message's length differs from its type's fixed length.
ERR_BAD_LENGTH: int = 2
#: A length prefix or a message runs past the end of its packet (or of the file).
ERR_TRUNCATED: int = 3
#: A MoldUDP64 packet is shorter than its 20-byte header.
ERR_SHORT_HEADER: int = 4
#: Bytes are left in a MoldUDP64 packet after its announced messages.
ERR_TRAILING: int = 5
#: A message of length 0.
ERR_EMPTY: int = 6

#: Columns of the status row ``err`` (``int64[E_WIDTH]``).
E_CODE: int = 0  # ERR_*
E_PACKET: int = 1  # packet index of the bad spot (0 in a raw file)
E_OFFSET: int = 2  # byte offset in the buffer of the bad message's length prefix
E_TYPE: int = 3  # the type byte there (-1 if none)
E_LENGTH: int = 4  # the length found there (-1 if none)
E_MESSAGES: int = 5  # messages framed before the bad spot (kept or not)
E_WIDTH: int = 8

#: ``mode`` of :func:`frame_messages`.
MODE_RAW: int = 0
MODE_MOLD: int = 1

#: Columns of a field move of the layout table (``ops[type byte, j, :]``).
OP_SRC: int = 0  # offset in the message (type byte at 0)
OP_DST: int = 1  # offset in the row (a multiple of the row field's width)
OP_KIND: int = 2  # K_*
OP_WIDTH: int = 3

#: Field move kinds: wire bytes -> row field.
K_CHAR: int = 0  # one byte, as is
K_BE2: int = 1  # big-endian u16 -> u16
K_BE4: int = 2  # big-endian u32 -> u32
K_BE4_8: int = 3  # big-endian u32 (Price(4)) -> int64
K_BE6_8: int = 4  # big-endian 6-byte timestamp -> int64
K_BE8: int = 5  # big-endian u64 (or Price(8)) -> 8 bytes
K_TEXT8: int = 6  # 8 bytes of text, as is
K_TEXT4: int = 7  # 4 bytes of text, as is
K_TEXT2: int = 8  # 2 bytes of text, as is

#: MoldUDP64 header size and the count of an end-of-session packet.
MOLD_HEADER: int = 20
MOLD_END_OF_SESSION: int = 0xFFFF


# The byte readers index with unsigned integers: a signed index makes numba wrap negative
# ones around (a compare and a branch per byte), which keeps LLVM from seeing eight loads
# of neighbouring bytes as one load and a byte swap.
_U8: np.uint64 = np.uint64(8)
_U16: np.uint64 = np.uint64(16)
_U24: np.uint64 = np.uint64(24)
_U32: np.uint64 = np.uint64(32)


@kernel_inline
def _b(buf: U8, q: np.uint64, j: int) -> np.uint64:
    return np.uint64(buf[q + np.uint64(j)])


@kernel_inline
def be16(buf: U8, p: int) -> int:
    """Return the big-endian u16 at ``buf[p]``."""
    q = np.uint64(p)
    return int(np.int64((_b(buf, q, 0) << _U8) | _b(buf, q, 1)))


@kernel_inline
def _be32u(buf: U8, q: np.uint64) -> np.uint64:
    return (
        (_b(buf, q, 0) << _U24) | (_b(buf, q, 1) << _U16) | (_b(buf, q, 2) << _U8) | _b(buf, q, 3)
    )


@kernel_inline
def be32(buf: U8, p: int) -> int:
    """Return the big-endian u32 at ``buf[p]``."""
    return int(np.int64(_be32u(buf, np.uint64(p))))


@kernel_inline
def be48(buf: U8, p: int) -> int:
    """Return the big-endian 6-byte integer at ``buf[p]``."""
    q = np.uint64(p)
    hi = (_b(buf, q, 0) << _U8) | _b(buf, q, 1)
    return int(np.int64((hi << _U32) | _be32u(buf, q + np.uint64(2))))


@kernel_inline
def be64(buf: U8, p: int) -> int:
    """Return the big-endian u64 at ``buf[p]`` as int64 (values above 2**63 wrap)."""
    q = np.uint64(p)
    return int(np.int64((_be32u(buf, q) << _U32) | _be32u(buf, q + np.uint64(4))))


@kernel_inline
def _fail(err: I64, code: int, pk: int, p: int, t: int, length: int, g: int) -> None:
    err[E_CODE] = code
    err[E_PACKET] = pk
    err[E_OFFSET] = p
    err[E_TYPE] = t
    err[E_LENGTH] = length
    err[E_MESSAGES] = g


@kernel
def frame_messages(  # noqa: C901 (every framing error found in one walk)
    buf: U8,
    pk_start: I64,
    pk_end: I64,
    mode: int,
    keep: U8,
    index: I64,
    length: I64,
    counts: I64,
    err: I64,
) -> int:
    """Frame every message of ``buf``, check it, and count the kept ones per type.

    Parameters
    ----------
    buf : uint8[:]
        Wire bytes.
    pk_start, pk_end : int64[n_packets]
        Byte range of each MoldUDP64 packet (``mode == MODE_MOLD``) or the one range of a raw
        file (``MODE_RAW``).
    mode : int
        ``MODE_MOLD`` or ``MODE_RAW``.
    keep : uint8[:]
        One flag per message in stream order (1: decode it, 0: skip it, e.g. a duplicate);
        empty: keep every message.
    index, length : int64[256]
        Layout tables by type byte (``LayoutTables.index``, ``.length``).
    counts : int64[n_types]
        Output: kept messages per type index; mutated in place (added to).
    err : int64[E_WIDTH]
        Output: the status row (``E_CODE`` stays ``ERR_NONE`` when all is well).

    Returns
    -------
    int
        Messages framed (kept or not) before the end or the first bad spot.
    """
    g = 0
    nk = keep.shape[0]
    for pk in range(pk_start.shape[0]):
        p = pk_start[pk]
        end = pk_end[pk]
        n = -1
        if mode == MODE_MOLD:
            if end - p < MOLD_HEADER:
                _fail(err, ERR_SHORT_HEADER, pk, p, -1, end - p, g)
                return g
            n = be16(buf, p + 18)
            if n == MOLD_END_OF_SESSION:
                n = 0
            p += MOLD_HEADER
        i = 0
        while (mode == MODE_MOLD and i < n) or (mode == MODE_RAW and p < end):
            if p + 2 > end:
                _fail(err, ERR_TRUNCATED, pk, p, -1, -1, g)
                return g
            ln = be16(buf, p)
            if ln == 0:
                _fail(err, ERR_EMPTY, pk, p, -1, 0, g)
                return g
            if p + 2 + ln > end:
                _fail(err, ERR_TRUNCATED, pk, p, int(np.int64(buf[p + 2])), ln, g)
                return g
            t = int(np.int64(buf[p + 2]))
            ti = index[t]
            if ti < 0:
                _fail(err, ERR_UNKNOWN_TYPE, pk, p, t, ln, g)
                return g
            if ln != length[t]:
                _fail(err, ERR_BAD_LENGTH, pk, p, t, ln, g)
                return g
            if nk == 0 or keep[g] != 0:
                counts[ti] += 1
            g += 1
            i += 1
            p += 2 + ln
        if mode == MODE_MOLD and p != end:
            _fail(err, ERR_TRAILING, pk, p, -1, end - p, g)
            return g
    return g


@kernel_inline
def _le(buf: U8, p: int, size: int) -> int:
    v = 0
    for k in range(size - 1, -1, -1):
        v = (v << 8) | int(np.int64(buf[p + k]))
    return v


def _off(t: str, name: str) -> int:
    fields = MESSAGE_DTYPES[t].fields
    assert fields is not None
    return int(fields[name][1])


# Row offsets of the fields the decoder writes directly (the rest go through the tables).
_A_REF = _off("A", "order_reference_number")
_A_SIDE = _off("A", "buy_sell_indicator")
_A_SHARES = _off("A", "shares")
_A_STOCK = _off("A", "stock")
_A_PRICE = _off("A", "price")
_F_ATTRIBUTION = _off("F", "attribution")
_D_REF = _off("D", "order_reference_number")
_E_REF = _off("E", "order_reference_number")
_E_SHARES = _off("E", "executed_shares")
_E_MATCH = _off("E", "match_number")
_C_PRINTABLE = _off("C", "printable")
_C_PRICE = _off("C", "execution_price")
_X_REF = _off("X", "order_reference_number")
_X_SHARES = _off("X", "cancelled_shares")
_U_REF = _off("U", "original_order_reference_number")
_U_NEW = _off("U", "new_order_reference_number")
_U_SHARES = _off("U", "shares")
_U_PRICE = _off("U", "price")
if not all(
    _off("F", f) == _off("A", f) for f in ("order_reference_number", "shares", "stock", "price")
) or (_off("C", "executed_shares"), _off("C", "match_number")) != (_E_SHARES, _E_MATCH):
    raise AssertionError("A/F and E/C rows must share their common fields' offsets")


@kernel_inline
def _decode_fields(
    buf: U8,
    m: int,
    t: int,
    d: int,
    ops: I64,
    n_ops: I64,
    out8: U8,
    out16: npt.NDArray[np.uint16],
    out32: npt.NDArray[np.uint32],
    out64: I64,
) -> None:
    # Body fields of message type t at buf[m] into the row at byte d, by the layout table
    # (its first three moves are the header's, written by the caller).
    for j in range(3, n_ops[t]):
        src = m + ops[t, j, OP_SRC]
        o = d + ops[t, j, OP_DST]
        kind = ops[t, j, OP_KIND]
        if kind == K_CHAR:
            out8[o] = buf[src]
        elif kind == K_BE2:
            out16[o >> 1] = be16(buf, src)
        elif kind == K_BE4:
            out32[o >> 2] = be32(buf, src)
        elif kind == K_BE4_8:
            out64[o >> 3] = be32(buf, src)
        elif kind == K_BE6_8:
            out64[o >> 3] = be48(buf, src)
        elif kind == K_BE8:
            out64[o >> 3] = be64(buf, src)
        elif kind == K_TEXT8:
            out64[o >> 3] = _le(buf, src, 8)
        elif kind == K_TEXT4:
            out32[o >> 2] = _le(buf, src, 4)
        else:
            out16[o >> 1] = _le(buf, src, 2)


@kernel
def decode_messages(  # noqa: C901 (one walk, a branch per busy type)
    buf: U8,
    pk_start: I64,
    pk_end: I64,
    mode: int,
    keep: U8,
    limit: int,
    first_seq: int,
    index: I64,
    ops: I64,
    n_ops: I64,
    itemsize: I64,
    base: I64,
    rows: I64,
    out8: U8,
    out16: npt.NDArray[np.uint16],
    out32: npt.NDArray[np.uint32],
    out64: npt.NDArray[np.int64],
) -> int:
    """Decode the first ``limit`` messages of ``buf`` (already framed and checked) into rows.

    Parameters
    ----------
    buf, pk_start, pk_end, mode, keep
        As :func:`frame_messages`.
    limit : int
        Messages to walk (what :func:`frame_messages` returned).
    first_seq : int
        Sequence number of the first message of a raw file (MoldUDP64 packets carry theirs).
    index, ops, n_ops, itemsize : int64 tables
        ``LayoutTables`` fields: per type byte, ``n_ops`` field moves of ``OP_WIDTH``
        columns (wire offset, row offset, ``K_*`` kind).
    base : int64[n_types]
        Byte offset in the output of each type's first row (a multiple of 8).
    rows : int64[n_types]
        Output: rows written per type; mutated in place (start at 0).
    out8, out16, out32, out64 : arrays
        One zeroed output buffer (8-byte aligned) seen as uint8, uint16, uint32 and int64:
        each type's rows at its ``base``. Mutated in place.

    Returns
    -------
    int
        Rows written.
    """
    g = 0
    w = 0
    nk = keep.shape[0]
    for pk in range(pk_start.shape[0]):
        if g >= limit:
            break
        p = pk_start[pk]
        end = pk_end[pk]
        n = 0
        seq = first_seq
        if mode == MODE_MOLD:
            seq = be64(buf, p + 10)
            n = be16(buf, p + 18)
            if n == MOLD_END_OF_SESSION:
                n = 0
            p += MOLD_HEADER
        i = 0
        while g < limit and ((mode == MODE_MOLD and i < n) or (mode == MODE_RAW and p < end)):
            ln = be16(buf, p)
            if nk == 0 or keep[g] != 0:
                m = p + 2
                t = int(np.int64(buf[m]))
                ti = index[t]
                d = base[ti] + rows[ti] * itemsize[ti]
                out64[d >> 3] = seq + i if mode == MODE_MOLD else first_seq + g
                out64[(d >> 3) + 1] = be48(buf, m + 5)  # timestamp
                out16[(d >> 1) + 8] = be16(buf, m + 1)  # stock_locate
                out16[(d >> 1) + 9] = be16(buf, m + 3)  # tracking_number
                # the busiest types written field by field; the others through the table
                if t == 65 or t == 70:  # A, F
                    out64[(d + _A_REF) >> 3] = be64(buf, m + 11)
                    out8[d + _A_SIDE] = buf[m + 19]
                    out32[(d + _A_SHARES) >> 2] = be32(buf, m + 20)
                    out64[(d + _A_STOCK) >> 3] = _le(buf, m + 24, 8)
                    out64[(d + _A_PRICE) >> 3] = be32(buf, m + 32)
                    if t == 70:
                        out32[(d + _F_ATTRIBUTION) >> 2] = _le(buf, m + 36, 4)
                elif t == 68:  # D
                    out64[(d + _D_REF) >> 3] = be64(buf, m + 11)
                elif t == 69 or t == 67:  # E, C
                    out64[(d + _E_REF) >> 3] = be64(buf, m + 11)
                    out32[(d + _E_SHARES) >> 2] = be32(buf, m + 19)
                    out64[(d + _E_MATCH) >> 3] = be64(buf, m + 23)
                    if t == 67:
                        out8[d + _C_PRINTABLE] = buf[m + 31]
                        out64[(d + _C_PRICE) >> 3] = be32(buf, m + 32)
                elif t == 88:  # X
                    out64[(d + _X_REF) >> 3] = be64(buf, m + 11)
                    out32[(d + _X_SHARES) >> 2] = be32(buf, m + 19)
                elif t == 85:  # U
                    out64[(d + _U_REF) >> 3] = be64(buf, m + 11)
                    out64[(d + _U_NEW) >> 3] = be64(buf, m + 19)
                    out32[(d + _U_SHARES) >> 2] = be32(buf, m + 27)
                    out64[(d + _U_PRICE) >> 3] = be32(buf, m + 31)
                else:
                    _decode_fields(buf, m, t, d, ops, n_ops, out8, out16, out32, out64)
                rows[ti] += 1
                w += 1
            g += 1
            i += 1
            p += 2 + ln
    return w


# ----------------------------------------------------------------------------- MoldUDP64
#: Per-packet status bits written by :func:`mold_track`.
PK_HEARTBEAT: int = 1  # message count 0
PK_END: int = 2  # message count 0xFFFF: end of session
PK_GAP: int = 4  # its sequence number is past the next expected one: messages missing
PK_LATE: int = 8  # it filled (part of) an earlier gap: reordered or retransmitted
PK_DUPLICATE: int = 16  # it carried messages, all already seen
PK_OVERLAP: int = 32  # some of its messages were already seen, some not

#: Columns of the tracker's state row (``int64[T_WIDTH]``).
T_EXPECTED: int = 0  # next expected sequence number
T_NGAPS: int = 1  # open gaps in the gap table
T_ERROR: int = 2  # 1: the gap table overflowed at packet T_AT
T_AT: int = 3
T_WIDTH: int = 4


@kernel
def mold_headers(buf: U8, pk_start: I64, seqs: I64, counts: I64) -> None:
    """Read each packet's sequence number and message count (headers checked long enough).

    ``seqs`` and ``counts`` (``int64[n_packets]``) are written in place.
    """
    for i in range(pk_start.shape[0]):
        p = pk_start[i]
        seqs[i] = be64(buf, p + 10)
        counts[i] = be16(buf, p + 18)


@kernel_inline
def _in_gap(gaps: I64, state: I64, q: int) -> int:
    for j in range(state[T_NGAPS]):
        if gaps[j, 0] <= q < gaps[j, 1]:
            return j
    return -1


@kernel_inline
def _take_from_gap(gaps: I64, state: I64, j: int, q: int) -> bool:
    # Remove sequence number q from open gap j; False if the table has no room for a split.
    a = gaps[j, 0]
    b = gaps[j, 1]
    if q == a:
        gaps[j, 0] = a + 1
    elif q == b - 1:
        gaps[j, 1] = b - 1
    else:
        n = state[T_NGAPS]
        if n >= gaps.shape[0]:
            return False
        for m in range(n, j + 1, -1):
            gaps[m, 0] = gaps[m - 1, 0]
            gaps[m, 1] = gaps[m - 1, 1]
        gaps[j, 1] = q
        gaps[j + 1, 0] = q + 1
        gaps[j + 1, 1] = b
        state[T_NGAPS] = n + 1
        return True
    if gaps[j, 0] >= gaps[j, 1]:
        n = state[T_NGAPS]
        for m in range(j, n - 1):
            gaps[m, 0] = gaps[m + 1, 0]
            gaps[m, 1] = gaps[m + 1, 1]
        state[T_NGAPS] = n - 1
    return True


@kernel
def mold_track(  # noqa: C901 (each packet case in one loop)
    seqs: I64, counts: I64, state: I64, gaps: I64, keep: U8, status: npt.NDArray[np.uint8]
) -> int:
    """Track MoldUDP64 sequence numbers over packets in arrival order.

    A packet's messages at or past the next expected number are new; one below it is new
    only if it lies in an open gap (it arrived late: reordering or a retransmission), which
    it then closes. Everything else was seen and is flagged not to be decoded again.

    Parameters
    ----------
    seqs, counts : int64[n_packets]
        Each packet's sequence number and message count.
    state : int64[T_WIDTH]
        Tracker state (``T_*``); mutated in place.
    gaps : int64[cap, 2]
        Open gaps ``[first, end)`` in increasing order, ``state[T_NGAPS]`` of them; mutated.
    keep : uint8[sum of message counts]
        Output, one flag per message in stream order: 1 to decode it.
    status : uint8[n_packets]
        Output, ``PK_*`` bits per packet.

    Returns
    -------
    int
        Packets processed (fewer than given when the gap table overflowed: ``T_ERROR``).
    """
    g = 0
    for k in range(seqs.shape[0]):
        s = seqs[k]
        c = counts[k]
        exp = state[T_EXPECTED]
        st = 0
        if c == MOLD_END_OF_SESSION or c == 0:
            st = PK_END if c != 0 else PK_HEARTBEAT
            c = 0
        if s > exp:
            n = state[T_NGAPS]
            if n >= gaps.shape[0]:
                state[T_ERROR] = 1
                state[T_AT] = k
                return k
            gaps[n, 0] = exp
            gaps[n, 1] = s
            state[T_NGAPS] = n + 1
            st |= PK_GAP
            exp = s
            state[T_EXPECTED] = s
        new = 0
        late = False
        for i in range(c):
            q = s + i
            if q >= exp:
                keep[g + i] = 1
                new += 1
            else:
                j = _in_gap(gaps, state, q)
                if j >= 0:
                    if not _take_from_gap(gaps, state, j, q):
                        state[T_ERROR] = 1
                        state[T_AT] = k
                        return k
                    keep[g + i] = 1
                    new += 1
                    late = True
                else:
                    keep[g + i] = 0
        if s + c > exp:
            state[T_EXPECTED] = s + c
        if c > 0 and new == 0:
            st |= PK_DUPLICATE
        elif new < c:
            st |= PK_OVERLAP
        if late:
            st |= PK_LATE
        status[k] = st
        g += c
    return int(seqs.shape[0])


# ------------------------------------------------------------------------------- books
# The books of every stock of a feed share one order table (16-byte records) and one level
# table (32-byte records). The level table is an open-addressing hash keyed by (stock
# locate, side, price) (Fibonacci hashing, linear probing) whose buckets are the level
# records themselves, so finding a level is finding its record; a level emptied of orders
# keeps its bucket (its price tends to come back) until the table fills and is rebuilt
# without the empty ones. No price window is needed: ITCH prices run from $0.0001 to
# $200,000 in 0.0001 steps (2e9 ticks), which no per-book window of engine.book.L3Arrays
# can span for 8,000 books, and the messages of all stocks interleave, so one pass over
# the feed must reach every book. Orders are found by ref. Refs are handed out in sequence
# and most orders die young, so the order table starts with a window of W records indexed
# by the ref itself (slot (ref - 1) & (W - 1) for the W refs from st[S_RBASE] on; ITCH
# refs count from 1, so a day's first order has slot 0): a young order is one load away
# from its ref, and the records of orders added together sit together. When a new ref
# pushes the window up, the orders still resting at the refs it leaves move to the
# overflow records after the window (their refs in a hash keyed like the levels', and in
# ``orefs``). An order's stock, side and price are its level's key. The records of a
# message a few places ahead are touched early, so its cache misses overlap the work on
# the current one.
#
# book_apply does each message's work in one body and calls no helper that takes an
# array: numba passes arrays to a call (even an inlined one) with reference counting,
# atomic increments that cost more than the book work and fence the cache misses.

#: Empty bucket of a hash table (no ITCH key is -1: refs and level keys are < 2**63).
HT_EMPTY: int = -1
_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64

#: Fields of an order record (``int32[W + cap, OW]``: 16 bytes, four orders a cache line).
O_QTY: int = 0  # shares left; 0: no order here
O_LEVEL: int = 1  # level slot (its key gives the order's stock, side and price)
O_PREV: int = 2  # previous order slot in the level's FIFO, -1 at the head
O_NEXT: int = 3  # next order slot, -1 at the tail
OW: int = 4


#: Fields of a level record, a bucket of the level table (``int64[buckets, LW]``: 32 bytes).
#: An empty bucket has key HT_EMPTY; a level emptied of orders has HEAD -1 and QTY 0.
L_KEY: int = 0  # stock << 33 | side << 32 | price
L_QTY: int = 1  # shares resting
L_HEAD: int = 2  # first order slot of the FIFO, -1 when empty
L_TAIL: int = 3  # last order slot, -1 when empty
LW: int = 4

#: Columns of the per-stock table (``int64[65536, SW]``).
SW_STATE: int = 0  # Stock Trading Action trading state byte ('H', 'P', 'Q', 'T'), 0 unknown
SW_REASON: int = 1  # its reason, 4 bytes, first byte lowest
SW_STATE_TS: int = 2  # timestamp of the last trading action
SW_REG_SHO: int = 3  # last Reg SHO action byte
SW_SPARE: int = 4
SW_TRADES: int = 5  # trades kept (E, C, P, Q)
SW_VOLUME: int = 6  # shares in those trades (printable ones)
SW_HALT: int = 7  # last Operational Halt action byte
SW: int = 8

#: Columns of the books' state row (``int64[NST]``).
S_PK: int = 0  # resume: packet index
S_I: int = 1  # resume: message index in the packet
S_POS: int = 2  # resume: byte offset (of the next length prefix; -1: start of packet S_PK)
S_G: int = 3  # messages walked (kept or not)
S_STOP: int = 4  # why the last call stopped: STOP_*
S_NFREE_O: int = 5  # free overflow order slots
S_NFREE_L: int = 6  # level buckets that may still be taken before a rebuild
S_NTRADES: int = 7
S_NACTIONS: int = 8
S_NEVENTS: int = 9
S_ORDERS: int = 10  # orders resting, all stocks
S_LEVELS: int = 11  # levels holding orders
S_UNKNOWN_E: int = 12  # E for an order ref not in the book
S_UNKNOWN_C: int = 13
S_UNKNOWN_X: int = 14
S_UNKNOWN_D: int = 15
S_UNKNOWN_U: int = 16
S_DUP_ADD: int = 17  # A/F whose ref is resting already (ignored)
S_DUP_REPLACE: int = 18  # U whose new ref is resting already (the new order is ignored)
S_OVER_EXEC: int = 19  # executions of more shares than left (the order leaves the book)
S_OVER_CANCEL: int = 20  # cancels of more shares than left (the order leaves the book)
S_BROKEN: int = 21  # Broken Trade messages
S_ZERO_ADD: int = 22  # adds (or replaces) of 0 shares (not booked)
S_LAST_EVENT: int = 23  # last System Event code byte
S_OSHIFT: int = 24  # hash shift of the overflow refs' table: 64 - log2(buckets)
S_LSHIFT: int = 25  # hash shift of the level table
S_TOUCHED: int = 26  # sum of the look-ahead loads (meaningless; keeps them alive)
S_RBASE: int = 27  # lowest order ref of the window (orders of refs below it: overflow)
S_WINDOW: int = 28  # W, the window's records (a power of two)
NST: int = 29

#: Messages between the one applied and the one whose records are touched ahead.
LOOKAHEAD: int = 10

#: Why :func:`book_apply` returned.
STOP_DONE: int = 0
STOP_ORDERS: int = 1  # no free overflow order slot: grow the order table
STOP_LEVELS: int = 2  # the level table is full: rebuild it
STOP_TRADES: int = 3  # trades output full
STOP_ACTIONS: int = 4  # trading-actions output full
STOP_EVENTS: int = 5  # system-events output full

#: ``kind`` of a kept trade (the message type byte).
TR_E: int = 69  # 'E'
TR_C: int = 67  # 'C'
TR_P: int = 80  # 'P'
TR_Q: int = 81  # 'Q'


@kernel_inline
def _slot(key: int, mask: int, shift: int) -> int:
    # Fibonacci hashing: the top bits of key * 2**64/phi (shift = 64 - log2(buckets))
    return ((key * _GOLDEN) >> shift) & mask


@kernel_inline
def ht_find(tab: I64, key: int, shift: int) -> int:
    """Return the value stored under ``key`` in ``tab`` (keys and values interleaved), or -1."""
    mask = (tab.shape[0] >> 1) - 1
    i = _slot(key, mask, shift)
    while True:
        kk = tab[2 * i]
        if kk == key:
            return int(tab[2 * i + 1])
        if kk == HT_EMPTY:
            return -1
        i = (i + 1) & mask


@kernel_inline
def _ht_insert(tab: I64, key: int, val: int, mask: int, shift: int) -> None:
    # ht_put with the table's mask (buckets - 1) at hand
    i = _slot(key, mask, shift)
    while tab[2 * i] != HT_EMPTY:
        i = (i + 1) & mask
    tab[2 * i] = key
    tab[2 * i + 1] = val


@kernel_inline
def _ht_remove(tab: I64, key: int, mask: int, shift: int) -> None:
    # ht_del with the table's mask at hand
    i = _slot(key, mask, shift)
    while tab[2 * i] != key:
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        kk = tab[2 * j]
        if kk == HT_EMPTY:
            break
        home = _slot(kk, mask, shift)
        # move kk back into the hole at i unless its home lies cyclically in (i, j]
        if (j > i and (home <= i or home > j)) or (j < i and (home <= i and home > j)):
            tab[2 * i] = kk
            tab[2 * i + 1] = tab[2 * j + 1]
            i = j
    tab[2 * i] = HT_EMPTY


@kernel_inline
def ht_put(tab: I64, key: int, val: int, shift: int) -> None:
    """Store ``val`` under ``key`` (absent; the table has free buckets)."""
    _ht_insert(tab, key, val, (tab.shape[0] >> 1) - 1, shift)


@kernel_inline
def ht_del(tab: I64, key: int, shift: int) -> None:
    """Remove ``key`` (present), shifting later entries of its probe run back."""
    _ht_remove(tab, key, (tab.shape[0] >> 1) - 1, shift)


@kernel
def ht_rebuild(tab: I64, old: I64, shift: int) -> None:
    """Insert every live entry of the old table into the new (empty) one."""
    for i in range(old.shape[0] >> 1):
        if old[2 * i] != HT_EMPTY:
            ht_put(tab, old[2 * i], old[2 * i + 1], shift)


@kernel_inline
def ofind(orders: I32, ot: I64, st: I64, ref: int) -> int:
    """Return the order slot of ``ref``, or -1.

    A ref of the window (``st[S_RBASE]`` up to ``st[S_WINDOW]`` refs on) is its own slot
    (``(ref - 1) & (W - 1)``), holding an order if its shares are not 0; an older ref still
    resting is in the hash ``ot`` of the overflow records.
    """
    base = st[S_RBASE]
    w = st[S_WINDOW]
    if ref >= base:
        if ref - base < w:
            s = (ref - 1) & (w - 1)
            return s if orders[s, O_QTY] > 0 else -1
        return -1
    return ht_find(ot, ref, st[S_OSHIFT])


@kernel_inline
def slot_ref(orefs: I64, st: I64, o: int) -> int:
    """Return the order reference number of the order in slot ``o``."""
    w = st[S_WINDOW]
    if o < w:
        base = st[S_RBASE]
        return int(base + ((o + 1 - base) & (w - 1)))
    return int(orefs[o - w])


#: ``take`` of a message that removes its order whatever its shares (D, U).
_TAKE_ALL: int = -1


@kernel
def book_apply(  # noqa: C901 (the one dispatch over every message type)
    buf: U8,
    pk_start: I64,
    pk_end: I64,
    mode: int,
    keep: U8,
    limit: int,
    first_seq: int,
    orders: I32,
    orefs: I64,
    ot: I64,
    ofree: I64,
    levels: I64,
    st: I64,
    stocks: I64,
    symbols: U8,
    counts: I64,
    trades: npt.NDArray[np.void],
    actions: npt.NDArray[np.void],
    events: npt.NDArray[np.void],
) -> int:
    """Apply framed, checked ITCH messages to the books of every stock, resuming at ``st``.

    Add Order (A, F) rests an order; Order Executed (E, C) and Order Cancel (X) reduce it,
    Order Delete (D) removes it, Order Replace (U) removes it and rests the new ref with the
    old one's side and stock at the back of its new level. Unknown refs, duplicate adds and
    over-executions are counted in ``st``, not raised. E, C, P and Q are kept as trades;
    Stock Trading Action (H) and System Event (S) are logged and H, Y and h set the stock's
    state in ``stocks``. Every message is counted by type byte in ``counts``.

    Parameters
    ----------
    buf, pk_start, pk_end, mode, keep, limit, first_seq
        As :func:`decode_messages` (``limit``: messages framed by :func:`frame_messages`).
    orders, orefs, ot, ofree : arrays
        Order records (``int32[W + cap, OW]``: the window of ``W = st[S_WINDOW]`` records
        indexed by ref, then ``cap`` overflow records), the refs of the overflow records
        (``int64[cap]``), the hash of their refs (keys and values interleaved, ``2**k >= 2
        * cap`` buckets) and the free overflow slot stack (``st[S_NFREE_O]`` deep). Mutated.
    levels : int64[buckets, LW]
        The level table: a bucket is empty (``L_KEY`` is ``HT_EMPTY``) or holds a level,
        with or without orders; ``st[S_NFREE_L]`` more buckets may be taken before the table
        must be rebuilt (:func:`levels_rebuild`). Mutated in place.
    st : int64[NST]
        State and counters (``S_*``); resumes at ``S_PK``/``S_I``/``S_POS``. Mutated.
    stocks : int64[65536, SW]
        Per stock locate state (``SW_*``). Mutated.
    symbols : uint8[65536, 8]
        Stock symbol per locate, from R (or the first A/F). Mutated.
    counts : int64[256]
        Messages applied per type byte. Mutated.
    trades, actions, events : structured arrays
        Outputs (``ITCH_TRADE_DTYPE``, ``TRADING_ACTION_DTYPE``, ``SYSTEM_EVENT_LOG_DTYPE``
        of :mod:`engine.feeds.itch.book`), filled from ``st[S_NTRADES]`` etc.

    Returns
    -------
    int
        A ``STOP_*`` code: ``STOP_DONE`` when all ``limit`` messages are applied, otherwise
        which table must grow before calling again (the message it stopped at is applied
        from its start on the next call: nothing of it was applied, but the window may
        have moved, which changes no book).
    """
    nk = keep.shape[0]
    g = st[S_G]
    pk = st[S_PK]
    w = st[S_WINDOW]
    wmask = w - 1
    omask = (ot.shape[0] >> 1) - 1
    oshift = st[S_OSHIFT]
    lmask = levels.shape[0] - 1
    lshift = st[S_LSHIFT]
    rbase = st[S_RBASE]
    nfree_o = st[S_NFREE_O]
    nfree_l = st[S_NFREE_L]
    n_orders = st[S_ORDERS]
    n_levels = st[S_LEVELS]
    n_trades = st[S_NTRADES]
    touched = 0
    stop = STOP_DONE
    while pk < pk_start.shape[0] and g < limit:
        end = pk_end[pk]
        p = st[S_POS]
        n = 0
        seq0 = first_seq
        if mode == MODE_MOLD:
            seq0 = be64(buf, pk_start[pk] + 10)
            n = be16(buf, pk_start[pk] + 18)
            if n == MOLD_END_OF_SESSION:
                n = 0
            if p < 0:
                p = pk_start[pk] + MOLD_HEADER
        elif p < 0:
            p = pk_start[pk]
        i = st[S_I]
        # Look ahead: touch the records a message LOOKAHEAD places on will need (a young
        # order's record, an old one's hash bucket, the level bucket of an add), so their
        # cache misses overlap the work on this one (the loads are independent).
        pa = p
        for _ in range(LOOKAHEAD):
            if pa + 2 < end:
                pa += 2 + be16(buf, pa)
        while g < limit and ((mode == MODE_MOLD and i < n) or (mode == MODE_RAW and p < end)):
            ln = be16(buf, p)
            m = p + 2
            if pa + 21 < end:
                ta = buf[pa + 2]
                if ta == 68 or ta == 69 or ta == 88 or ta == 85 or ta == 67:  # D E X U C
                    ra = be64(buf, pa + 13)
                    if ra < rbase:  # an old order: its ref is in the hash
                        touched += ot[2 * _slot(ra, omask, oshift)]
                    elif ra - rbase < w:  # a young one: its record
                        touched += orders[(ra - 1) & wmask, O_LEVEL]
                elif (ta == 65 or ta == 70) and pa + 38 <= end:  # A F: the level it joins
                    sa = 0 if buf[pa + 21] == 66 else 1
                    ka = (be16(buf, pa + 3) << 33) | (sa << 32) | be32(buf, pa + 34)
                    touched += levels[_slot(ka, lmask, lshift), L_KEY]
                pa += 2 + be16(buf, pa)
            if nk == 0 or keep[g] != 0:
                t = int(np.int64(buf[m]))
                nref = 0
                if t == 65 or t == 70 or t == 85:  # A F U rest a new ref
                    nref = be64(buf, m + (19 if t == 85 else 11))
                    if nref >= rbase and nref - rbase >= w:
                        # Push the window up to the new ref: the orders resting at the
                        # refs it leaves move to overflow records (one by one, so a stop
                        # for more of them resumes here).
                        qend = min(nref - w + 1, rbase + w)
                        while rbase < qend:
                            s = (rbase - 1) & wmask
                            if orders[s, O_QTY] > 0:
                                if nfree_o == 0:
                                    stop = STOP_ORDERS
                                    break
                                nfree_o -= 1
                                o = ofree[nfree_o]
                                for c in range(OW):
                                    orders[o, c] = orders[s, c]
                                orders[s, O_QTY] = 0
                                orefs[o - w] = rbase
                                prv = orders[o, O_PREV]
                                nxt = orders[o, O_NEXT]
                                lvl = orders[o, O_LEVEL]
                                if prv >= 0:
                                    orders[prv, O_NEXT] = o
                                else:
                                    levels[lvl, L_HEAD] = o
                                if nxt >= 0:
                                    orders[nxt, O_PREV] = o
                                else:
                                    levels[lvl, L_TAIL] = o
                                _ht_insert(ot, rbase, o, omask, oshift)
                            rbase += 1
                        if stop == STOP_DONE:
                            rbase = nref - w + 1
                    if stop == STOP_DONE:
                        if nfree_l == 0:
                            stop = STOP_LEVELS
                        elif nref < rbase and nfree_o == 0:  # it rests in an overflow slot
                            stop = STOP_ORDERS
                elif t == 69 or t == 67 or t == 80 or t == 81:  # E C P Q keep a trade
                    if n_trades >= trades.shape[0]:
                        stop = STOP_TRADES
                elif t == 72 and st[S_NACTIONS] >= actions.shape[0]:  # H
                    stop = STOP_ACTIONS
                elif t == 83 and st[S_NEVENTS] >= events.shape[0]:  # S
                    stop = STOP_EVENTS
                if stop != STOP_DONE:
                    st[S_PK] = pk
                    st[S_I] = i
                    st[S_POS] = p
                    break
                counts[t] += 1
                stock = be16(buf, m + 1)
                # What the message does to the books: take ``take`` shares from order slot
                # ``o`` of ref ``ref`` (all of them: _TAKE_ALL), then rest a new order.
                o = -1
                ref = 0
                take = 0
                over = 0
                adding = False
                aref = 0
                astock = stock
                aside = 0
                apx = 0
                aqty = 0
                dup = S_DUP_ADD
                tkind = 0  # a trade to keep: its type byte
                if t == 65 or t == 70:  # Add Order
                    adding = True
                    aref = be64(buf, m + 11)
                    aside = 0 if buf[m + 19] == 66 else 1
                    aqty = be32(buf, m + 20)
                    apx = be32(buf, m + 32)
                    if symbols[stock, 0] == 0:
                        for c in range(8):
                            symbols[stock, c] = buf[m + 24 + c]
                elif t == 68 or t == 85 or t == 69 or t == 67 or t == 88:  # D U E C X
                    ref = be64(buf, m + 11)
                    if ref >= rbase:
                        if ref - rbase < w and orders[(ref - 1) & wmask, O_QTY] > 0:
                            o = (ref - 1) & wmask
                    else:
                        h = _slot(ref, omask, oshift)
                        while True:
                            kk = ot[2 * h]
                            if kk == ref:
                                o = ot[2 * h + 1]
                                break
                            if kk == HT_EMPTY:
                                break
                            h = (h + 1) & omask
                    if o < 0:
                        if t == 68:
                            st[S_UNKNOWN_D] += 1
                        elif t == 85:
                            st[S_UNKNOWN_U] += 1
                        elif t == 69:
                            st[S_UNKNOWN_E] += 1
                        elif t == 67:
                            st[S_UNKNOWN_C] += 1
                        else:
                            st[S_UNKNOWN_X] += 1
                    elif t == 68:  # Order Delete
                        take = _TAKE_ALL
                    elif t == 85:  # Order Replace: the new ref with the old one's stock, side
                        take = _TAKE_ALL
                        adding = True
                        dup = S_DUP_REPLACE
                        ss = levels[orders[o, O_LEVEL], L_KEY] >> 32
                        astock = ss >> 1
                        aside = ss & 1
                        aref = nref
                        aqty = be32(buf, m + 27)
                        apx = be32(buf, m + 31)
                    elif t == 88:  # Order Cancel
                        take = be32(buf, m + 19)
                        over = S_OVER_CANCEL
                    else:  # Order Executed (With Price)
                        take = be32(buf, m + 19)
                        over = S_OVER_EXEC
                        tkind = t
                elif t == 80 or t == 81:
                    tkind = t
                elif t == 72:  # Stock Trading Action
                    state = int(np.int64(buf[m + 19]))
                    reason = np.int64(0)
                    for c in range(3, -1, -1):
                        reason = (reason << 8) | int(np.int64(buf[m + 21 + c]))
                    ts = be48(buf, m + 5)
                    stocks[stock, SW_STATE] = state
                    stocks[stock, SW_REASON] = reason
                    stocks[stock, SW_STATE_TS] = ts
                    r = actions[st[S_NACTIONS]]
                    r.seq = seq0 + i if mode == MODE_MOLD else first_seq + g
                    r.timestamp = ts
                    r.stock_locate = stock
                    r.trading_state = state
                    r.reason = reason
                    st[S_NACTIONS] += 1
                elif t == 83:  # System Event
                    e = events[st[S_NEVENTS]]
                    e.seq = seq0 + i if mode == MODE_MOLD else first_seq + g
                    e.timestamp = be48(buf, m + 5)
                    e.event_code = buf[m + 11]
                    st[S_LAST_EVENT] = buf[m + 11]
                    st[S_NEVENTS] += 1
                elif t == 82:  # Stock Directory
                    for c in range(8):
                        symbols[stock, c] = buf[m + 11 + c]
                elif t == 89:  # Reg SHO
                    stocks[stock, SW_REG_SHO] = buf[m + 19]
                elif t == 104:  # Operational Halt
                    stocks[stock, SW_HALT] = buf[m + 20]
                elif t == 66:  # Broken Trade
                    st[S_BROKEN] += 1
                if tkind != 0:  # E C (of a resting order), P, Q: a trade kept
                    r = trades[n_trades]
                    r.seq = seq0 + i if mode == MODE_MOLD else first_seq + g
                    r.timestamp = be48(buf, m + 5)
                    printable = 89  # 'Y'
                    if tkind == 80:  # Trade (non-cross): a hidden order matched
                        r.stock_locate = stock
                        r.side = BUY if buf[m + 19] == 66 else SELL
                        r.cross_type = 0
                        r.price = be32(buf, m + 32)
                        qty = be32(buf, m + 20)
                        r.match_number = be64(buf, m + 36)
                        r.order_reference_number = be64(buf, m + 11)
                    elif tkind == 81:  # Cross Trade
                        r.stock_locate = stock
                        r.side = 0
                        r.cross_type = buf[m + 39]
                        r.price = be32(buf, m + 27)
                        qty = be64(buf, m + 11)
                        r.match_number = be64(buf, m + 31)
                        r.order_reference_number = 0
                    else:  # E, C: the resting order's stock, side and (E) price
                        key = levels[orders[o, O_LEVEL], L_KEY]
                        stock = key >> 33
                        r.stock_locate = stock
                        r.side = BUY if (key >> 32) & 1 == 0 else SELL
                        r.cross_type = 0
                        if tkind == 67:
                            printable = int(np.int64(buf[m + 31]))
                            r.price = be32(buf, m + 32)
                        else:
                            r.price = key & 0xFFFFFFFF
                        qty = take
                        r.match_number = be64(buf, m + 23)
                        r.order_reference_number = ref
                    r.kind = tkind
                    r.printable = printable
                    r.shares = qty
                    n_trades += 1
                    stocks[stock, SW_TRADES] += 1
                    if printable != 78:  # 'N': not printable, left out of volume
                        stocks[stock, SW_VOLUME] += qty
                if o >= 0:  # take shares from order o, or remove it
                    left = orders[o, O_QTY]
                    lvl = orders[o, O_LEVEL]
                    if take != _TAKE_ALL and take < left:
                        orders[o, O_QTY] = left - take
                        levels[lvl, L_QTY] -= take
                    else:
                        if take != _TAKE_ALL and take > left:
                            st[over] += 1
                        prv = orders[o, O_PREV]
                        nxt = orders[o, O_NEXT]
                        if prv >= 0:
                            orders[prv, O_NEXT] = nxt
                        else:
                            levels[lvl, L_HEAD] = nxt
                        if nxt >= 0:
                            orders[nxt, O_PREV] = prv
                        else:
                            levels[lvl, L_TAIL] = prv
                        levels[lvl, L_QTY] -= left
                        if levels[lvl, L_HEAD] < 0:
                            # an emptied level keeps its bucket (its key comes back, often)
                            # until the table is rebuilt
                            levels[lvl, L_QTY] = 0
                            n_levels -= 1
                        orders[o, O_QTY] = 0
                        if o >= w:  # an overflow record: its ref leaves the hash
                            _ht_remove(ot, ref, omask, oshift)
                            ofree[nfree_o] = o
                            nfree_o += 1
                        n_orders -= 1
                if adding:  # rest a new order at the back of its level
                    found = False
                    if aref >= rbase:
                        found = aref - rbase < w and orders[(aref - 1) & wmask, O_QTY] > 0
                    else:
                        h = _slot(aref, omask, oshift)
                        while True:
                            kk = ot[2 * h]
                            if kk == aref:
                                found = True
                                break
                            if kk == HT_EMPTY:
                                break
                            h = (h + 1) & omask
                    if aqty == 0:
                        st[S_ZERO_ADD] += 1
                    elif found:
                        st[dup] += 1
                    else:
                        key = (astock << 33) | (aside << 32) | apx
                        lvl = _slot(key, lmask, lshift)
                        kk = levels[lvl, L_KEY]
                        while kk != key and kk != HT_EMPTY:
                            lvl = (lvl + 1) & lmask
                            kk = levels[lvl, L_KEY]
                        if kk == HT_EMPTY:  # a new level in the empty bucket
                            nfree_l -= 1
                            levels[lvl, L_KEY] = key
                            levels[lvl, L_QTY] = 0
                            levels[lvl, L_HEAD] = -1
                            levels[lvl, L_TAIL] = -1
                        if aref >= rbase:  # in the window (stop checks made room)
                            o = (aref - 1) & wmask
                        else:  # a ref below the window: an overflow record
                            nfree_o -= 1
                            o = ofree[nfree_o]
                            orefs[o - w] = aref
                            _ht_insert(ot, aref, o, omask, oshift)
                        orders[o, O_QTY] = aqty
                        orders[o, O_LEVEL] = lvl
                        tail = levels[lvl, L_TAIL]
                        orders[o, O_PREV] = tail
                        orders[o, O_NEXT] = -1
                        if tail >= 0:
                            orders[tail, O_NEXT] = o
                        else:
                            levels[lvl, L_HEAD] = o
                            n_levels += 1
                        levels[lvl, L_TAIL] = o
                        levels[lvl, L_QTY] += aqty
                        n_orders += 1
            g += 1
            i += 1
            p += 2 + ln
        if stop != STOP_DONE:
            break
        pk += 1
        st[S_I] = 0
        st[S_POS] = -1
    if stop == STOP_DONE:
        st[S_PK] = pk
    st[S_G] = g
    st[S_STOP] = stop
    st[S_RBASE] = rbase
    st[S_NFREE_O] = nfree_o
    st[S_NFREE_L] = nfree_l
    st[S_ORDERS] = n_orders
    st[S_LEVELS] = n_levels
    st[S_NTRADES] = n_trades
    st[S_TOUCHED] = touched  # kept, so the look-ahead loads are not optimised away
    return stop


@kernel
def level_orders(orders: I32, orefs: I64, st: I64, levels: I64, lvl: int, out: I64) -> int:
    """Write the refs and shares of level ``lvl``'s orders, FIFO order, into ``out[:, 2]``."""
    o = levels[lvl, L_HEAD]
    n = 0
    while o >= 0 and n < out.shape[0]:
        out[n, 0] = slot_ref(orefs, st, o)
        out[n, 1] = orders[o, O_QTY]
        n += 1
        o = orders[o, O_NEXT]
    return n


@kernel
def fifo_lengths(orders: I32, levels: I64, out: I64) -> int:
    """Walk every level's FIFO; write its length into ``out[level]`` (int64[cap]).

    Returns the first level whose FIFO does not end within the order table's size (a cycle)
    or whose links disagree (``prev`` of a next order is not the order), else -1.
    """
    cap = orders.shape[0]
    for lvl in range(levels.shape[0]):
        o = levels[lvl, L_HEAD]
        if levels[lvl, L_KEY] == HT_EMPTY:
            continue  # an empty bucket
        n = 0
        prv = -1
        while o >= 0:
            if n > cap or orders[o, O_PREV] != prv or orders[o, O_LEVEL] != lvl:
                return lvl
            prv = o
            o = orders[o, O_NEXT]
            n += 1
        if prv != levels[lvl, L_TAIL]:
            return lvl
        out[lvl] = n
    return -1


@kernel
def lost_orders(orders: I32, orefs: I64, ot: I64, st: I64) -> int:
    """Return the first resting order not found by its ref (an overflow hash fault), or -1.

    Also -1 only if the overflow hash holds no entry beyond its resting orders.
    """
    w = st[S_WINDOW]
    live = 0
    for o in range(w, orders.shape[0]):
        if orders[o, O_QTY] > 0:
            live += 1
            if ht_find(ot, orefs[o - w], st[S_OSHIFT]) != o:
                return o
    entries = 0
    for i in range(ot.shape[0] >> 1):
        if ot[2 * i] != HT_EMPTY:
            entries += 1
    return -1 if entries == live else orders.shape[0]


@kernel
def levels_rebuild(old: I64, new: I64, orders: I32, shift: int) -> int:
    """Move the levels holding orders from ``old`` into the empty table ``new``.

    Their orders' ``O_LEVEL`` follow them; levels without orders are dropped. Returns the
    levels moved.
    """
    mask = new.shape[0] - 1
    n = 0
    for b in range(old.shape[0]):
        if old[b, L_KEY] == HT_EMPTY or old[b, L_HEAD] < 0:
            continue
        h = _slot(old[b, L_KEY], mask, shift)
        while new[h, L_KEY] != HT_EMPTY:
            h = (h + 1) & mask
        for c in range(LW):
            new[h, c] = old[b, c]
        o = old[b, L_HEAD]
        while o >= 0:
            orders[o, O_LEVEL] = h
            o = orders[o, O_NEXT]
        n += 1
    return n


@kernel
def level_slot(levels: I64, key: int, shift: int) -> int:
    """Return the bucket of level ``key``, or -1 (a lookup from Python)."""
    mask = levels.shape[0] - 1
    h = _slot(key, mask, shift)
    while levels[h, L_KEY] != HT_EMPTY:
        if levels[h, L_KEY] == key:
            return h
        h = (h + 1) & mask
    return -1


@kernel
def order_slot(orders: I32, ot: I64, st: I64, ref: int) -> int:
    """Return the order slot of ``ref``, or -1 (a lookup from Python)."""
    return ofind(orders, ot, st, ref)


@kernel
def find_key(tab: I64, key: int, shift: int) -> int:
    """Return the value under ``key`` in a hash table, or -1 (a lookup from Python)."""
    return ht_find(tab, key, shift)


# ----------------------------------------------------------------------------- generator
#: Columns of the generator's state row (``int64[G_WIDTH]``).
G_RNG: int = 0  # xorshift64 state
G_NEXT_REF: int = 1  # next order reference number
G_MATCH: int = 2  # next match number
G_TS: int = 3  # current timestamp, ns since midnight
G_TS_STEP: int = 4  # mean timestamp step of the body, ns
G_PHASE: int = 5  # GEN_* phase
G_PHASE_I: int = 6  # position inside the phase (a stock index)
G_BODY_END: int = 7  # total bytes at which the body stops
G_BYTES: int = 8  # bytes written so far, all chunks
G_MESSAGES: int = 9  # messages written so far
G_TRACK: int = 10  # tracking number
G_WIDTH: int = 12

#: Generator phases.
GEN_OPEN: int = 0  # System Event 'O', a Stock Directory per stock, 'S'
GEN_TRADING: int = 1  # a Stock Trading Action 'T' per stock, then 'Q'
GEN_BODY: int = 2  # the order flow
GEN_CLOSE: int = 3  # 'M', a closing Cross Trade per stock, 'E', 'C'
GEN_DONE: int = 4

#: Price levels a generated stock's orders use (its window), per side.
GEN_WINDOW: int = 64
#: Most orders resting per generated stock.
GEN_POOL: int = 64
#: Share of deletes, cancels, executions and replaces that pick one of the stock's
#: GEN_YOUNG newest orders (the rest pick any of its resting orders).
GEN_YOUNG_SHARE: float = 0.8
GEN_YOUNG: int = 4

#: Columns of the per-stock generator table (``int64[n_stocks, GS_WIDTH]``).
GS_BASE: int = 0  # price of window index 0, ticks
GS_TICK: int = 1  # tick size of the stock, ticks of 0.0001 (100: one cent)
GS_MID: int = 2  # window index of the mid price
GS_BID: int = 3  # window index of the best bid, -1 none
GS_ASK: int = 4  # window index of the best ask, GEN_WINDOW none
GS_N: int = 5  # orders resting
GS_WIDTH: int = 6

#: Columns of a pooled generated order (``int64[n_stocks, GEN_POOL, GP_WIDTH]``).
GP_REF: int = 0
GP_SIDE: int = 1  # 0 bid, 1 ask
GP_IDX: int = 2  # window index
GP_QTY: int = 3
GP_WIDTH: int = 4


@kernel_inline
def _rand(g: I64) -> int:
    x = g[G_RNG]
    x ^= x << 13
    x ^= (x >> 7) & 0x01FFFFFFFFFFFFFF
    x ^= x << 17
    g[G_RNG] = x
    return int((x >> 11) & 0x001FFFFFFFFFFFFF)


@kernel_inline
def _uniform(g: I64) -> float:
    return _rand(g) / 9007199254740992.0


@kernel_inline
def _put(out: U8, p: int, v: int, size: int) -> None:
    for j in range(size - 1, -1, -1):
        out[p + j] = v & 0xFF
        v >>= 8


@kernel_inline
def _head(out: U8, p: int, length: int, t: int, stock: int, g: I64) -> int:
    _put(out, p, length, 2)
    out[p + 2] = t
    _put(out, p + 3, stock, 2)
    g[G_TRACK] = (g[G_TRACK] + 1) & 0xFFFF
    _put(out, p + 5, g[G_TRACK], 2)
    _put(out, p + 7, g[G_TS], 6)
    g[G_MESSAGES] += 1
    return p + 13


@kernel_inline
def _symbol(out: U8, p: int, stock: int) -> None:
    # 'A' + base-26 digits of the locate, space padded to 8
    for j in range(8):
        out[p + j] = 32
    v = stock
    for j in range(4, -1, -1):
        out[p + j] = 65 + v % 26
        v //= 26


@kernel_inline
def _system(out: U8, p: int, code: int, g: I64) -> int:
    q = _head(out, p, 12, 83, 0, g)
    out[q] = code
    return q + 1


@kernel_inline
def _px(gs: I64, s: int, idx: int) -> int:
    return int(gs[s, GS_BASE] + idx * gs[s, GS_TICK])


@kernel_inline
def _pool_remove(gs: I64, pool: I64, lvl: I64, s: int, j: int) -> None:
    side = pool[s, j, GP_SIDE]
    idx = pool[s, j, GP_IDX]
    lvl[s, side, idx] -= 1
    if lvl[s, side, idx] == 0:
        if side == 0 and gs[s, GS_BID] == idx:
            b = idx - 1
            while b >= 0 and lvl[s, 0, b] == 0:
                b -= 1
            gs[s, GS_BID] = b
        elif side == 1 and gs[s, GS_ASK] == idx:
            a = idx + 1
            while a < GEN_WINDOW and lvl[s, 1, a] == 0:
                a += 1
            gs[s, GS_ASK] = a
    n = gs[s, GS_N] - 1
    for c in range(GP_WIDTH):
        pool[s, j, c] = pool[s, n, c]
    gs[s, GS_N] = n


@kernel_inline
def _pool_add(
    gs: I64, pool: I64, lvl: I64, s: int, ref: int, side: int, idx: int, qty: int
) -> None:
    n = gs[s, GS_N]
    pool[s, n, GP_REF] = ref
    pool[s, n, GP_SIDE] = side
    pool[s, n, GP_IDX] = idx
    pool[s, n, GP_QTY] = qty
    gs[s, GS_N] = n + 1
    lvl[s, side, idx] += 1
    if side == 0 and idx > gs[s, GS_BID]:
        gs[s, GS_BID] = idx
    if side == 1 and idx < gs[s, GS_ASK]:
        gs[s, GS_ASK] = idx


@kernel_inline
def _new_idx(gs: I64, g: I64, s: int, side: int) -> int:
    # A price on the stock's side of the mid that never crosses the other side's best.
    d = 1 + int(_uniform(g) * _uniform(g) * 12)
    if side == 0:
        idx = min(gs[s, GS_MID] - d, gs[s, GS_ASK] - 1)
        return max(idx, 0) if gs[s, GS_ASK] > 0 else -1
    idx = max(gs[s, GS_MID] + d, gs[s, GS_BID] + 1)
    return min(idx, GEN_WINDOW - 1) if gs[s, GS_BID] < GEN_WINDOW - 1 else -1


@kernel_inline
def _qty(g: I64) -> int:
    return (
        100 * (1 + int(_uniform(g) * _uniform(g) * 10)) if _uniform(g) < 0.7 else 1 + _rand(g) % 99
    )


@kernel
def gen_chunk(  # noqa: C901 (the day's phases in one resumable loop)
    out: U8, g: I64, gs: I64, pool: I64, lvl: I64
) -> int:
    """Write the next messages of a synthetic ITCH 5.0 day into ``out``; return bytes written.

    The day: System Events 'O' and 'S', a Stock Directory and a 'T' Stock Trading Action per
    stock, 'Q', then order flow until ``g[G_BODY_END]`` bytes, then 'M', a closing cross per
    stock, 'E' and 'C'. The order flow picks a stock (skewed: a few are busy, most quiet) and
    an action in NASDAQ-like proportions: adds ~44% (3% of them with MPID), deletes ~36%,
    replaces ~8%, partial cancels ~4%, executions ~6% (E, a quarter of them C), hidden
    trades (P) ~2%; 80% of deletes, cancels, executions and replaces pick one of the stock's
    4 youngest orders (quotes refreshed within moments), the rest any of its orders.
    Every delete, cancel, execution and replace names an order resting in that stock with
    at most its shares, and no add crosses the other side's best, so the books stay
    consistent and uncrossed.

    Parameters
    ----------
    out : uint8[:]
        Chunk buffer (at least 256 bytes); written from 0.
    g : int64[G_WIDTH]
        Generator state (``G_*``); mutated in place.
    gs : int64[n_stocks, GS_WIDTH]
        Per-stock state; stock ``s`` has locate ``s + 1``. Mutated.
    pool : int64[n_stocks, GEN_POOL, GP_WIDTH]
        Resting orders per stock. Mutated.
    lvl : int64[n_stocks, 2, GEN_WINDOW]
        Orders per window level per side. Mutated.

    Returns
    -------
    int
        Bytes written to ``out`` (0 when the day is complete).
    """
    ns = gs.shape[0]
    p = 0
    lim = out.shape[0] - 64
    while p < lim:
        ph = g[G_PHASE]
        if ph == GEN_OPEN:
            i = g[G_PHASE_I]
            if i == 0:
                g[G_TS] = 3 * 3600 * 1_000_000_000
                p = _system(out, p, 79, g)  # 'O'
            if i < ns:
                q = _head(out, p, 39, 82, i + 1, g)  # 'R'
                _symbol(out, q, i + 1)
                out[q + 8] = 81  # market category 'Q'
                out[q + 9] = 78  # financial status 'N'
                _put(out, q + 10, 100, 4)
                out[q + 14] = 78  # round lots only 'N'
                out[q + 15] = 67  # issue classification 'C'
                out[q + 16] = 90  # sub type 'Z '
                out[q + 17] = 32
                out[q + 18] = 80  # authenticity 'P'
                out[q + 19] = 78  # short sale threshold 'N'
                out[q + 20] = 78  # IPO flag 'N'
                out[q + 21] = 50  # LULD tier '2'
                out[q + 22] = 78  # ETP flag 'N'
                _put(out, q + 23, 0, 4)
                out[q + 27] = 78  # inverse 'N'
                p = q + 28
                g[G_PHASE_I] = i + 1
            else:
                g[G_TS] = 4 * 3600 * 1_000_000_000
                p = _system(out, p, 83, g)  # 'S'
                g[G_PHASE] = GEN_TRADING
                g[G_PHASE_I] = 0
        elif ph == GEN_TRADING:
            i = g[G_PHASE_I]
            if i < ns:
                g[G_TS] = 7 * 3600 * 1_000_000_000 + i
                q = _head(out, p, 25, 72, i + 1, g)  # 'H'
                _symbol(out, q, i + 1)
                out[q + 8] = 84  # 'T'
                out[q + 9] = 32
                for j in range(4):
                    out[q + 10 + j] = 32
                p = q + 14
                g[G_PHASE_I] = i + 1
            else:
                g[G_TS] = 34_200_000_000_000  # 09:30
                p = _system(out, p, 81, g)  # 'Q'
                g[G_PHASE] = GEN_BODY
        elif ph == GEN_BODY:
            if g[G_BYTES] + p >= g[G_BODY_END]:
                g[G_PHASE] = GEN_CLOSE
                g[G_PHASE_I] = 0
                continue
            p = _gen_order_flow(out, p, g, gs, pool, lvl)
        elif ph == GEN_CLOSE:
            i = g[G_PHASE_I]
            if i == 0:
                g[G_TS] = 57_600_000_000_000  # 16:00
                p = _system(out, p, 77, g)  # 'M'
            if i < ns:
                q = _head(out, p, 40, 81, i + 1, g)  # 'Q' closing cross
                _put(out, q, 1000 + (i % 50) * 100, 8)
                _symbol(out, q + 8, i + 1)
                _put(out, q + 16, _px(gs, i, gs[i, GS_MID]), 4)
                _put(out, q + 20, g[G_MATCH], 8)
                g[G_MATCH] += 1
                out[q + 28] = 67  # 'C'
                p = q + 29
                g[G_PHASE_I] = i + 1
            else:
                g[G_TS] = 72_000_000_000_000  # 20:00
                p = _system(out, p, 69, g)  # 'E'
                p = _system(out, p, 67, g)  # 'C'
                g[G_PHASE] = GEN_DONE
        else:
            break
    g[G_BYTES] += p
    return p


@kernel_inline
def _gen_order_flow(  # noqa: C901 (the action mix in one place)
    out: U8, p: int, g: I64, gs: I64, pool: I64, lvl: I64
) -> int:
    ns = gs.shape[0]
    u = _uniform(g)
    s = int(u * u * u * ns)  # skewed: low locates are the busy stocks
    loc = s + 1
    g[G_TS] += 1 + _rand(g) % (2 * g[G_TS_STEP])
    n = gs[s, GS_N]
    if _rand(g) % 64 == 0:  # the mid drifts
        mid = gs[s, GS_MID] + (1 if _rand(g) % 2 == 0 else -1)
        gs[s, GS_MID] = min(max(mid, 12), GEN_WINDOW - 13)
    r = _uniform(g)
    if n > 0 and (n >= GEN_POOL or r >= 0.44):
        # Most cancels and executions hit young orders (quotes refreshed within moments);
        # the rest hit any resting order. New orders sit at the end of the pool.
        if n > GEN_YOUNG and _uniform(g) < GEN_YOUNG_SHARE:
            j = n - 1 - int(_rand(g) % GEN_YOUNG)
        else:
            j = int(_rand(g) % n)
        ref = pool[s, j, GP_REF]
        qty = pool[s, j, GP_QTY]
        side = pool[s, j, GP_SIDE]
        if n >= GEN_POOL or r < 0.80:  # delete
            q = _head(out, p, 19, 68, loc, g)
            _put(out, q, ref, 8)
            _pool_remove(gs, pool, lvl, s, j)
            return q + 8
        if r < 0.88:  # replace: new ref, same side, new price and size
            _pool_remove(gs, pool, lvl, s, j)
            idx = _new_idx(gs, g, s, side)
            if idx < 0:
                q = _head(out, p, 19, 68, loc, g)
                _put(out, q, ref, 8)
                return q + 8
            new = g[G_NEXT_REF]
            g[G_NEXT_REF] = new + 1
            nq = _qty(g)
            q = _head(out, p, 35, 85, loc, g)
            _put(out, q, ref, 8)
            _put(out, q + 8, new, 8)
            _put(out, q + 16, nq, 4)
            _put(out, q + 20, _px(gs, s, idx), 4)
            _pool_add(gs, pool, lvl, s, new, side, idx, nq)
            return q + 24
        if r < 0.92 and qty > 1:  # partial cancel
            c = 1 + _rand(g) % (qty - 1)
            q = _head(out, p, 23, 88, loc, g)
            _put(out, q, ref, 8)
            _put(out, q + 8, c, 4)
            pool[s, j, GP_QTY] = qty - c
            return q + 12
        if r < 0.98:  # execution (with price now and then), partial or whole
            c = qty if _uniform(g) < 0.6 else 1 + _rand(g) % qty
            with_px = r >= 0.965
            q = _head(out, p, 36 if with_px else 31, 67 if with_px else 69, loc, g)
            _put(out, q, ref, 8)
            _put(out, q + 8, c, 4)
            _put(out, q + 12, g[G_MATCH], 8)
            g[G_MATCH] += 1
            if with_px:
                out[q + 20] = 89  # printable 'Y'
                _put(out, q + 21, _px(gs, s, pool[s, j, GP_IDX]), 4)
                q += 5
            if c >= qty:
                _pool_remove(gs, pool, lvl, s, j)
            else:
                pool[s, j, GP_QTY] = qty - c
            return q + 20
        # a hidden order traded (P): no effect on the book
        q = _head(out, p, 44, 80, loc, g)
        _put(out, q, 0, 8)
        out[q + 8] = 66 if _rand(g) % 2 == 0 else 83
        _put(out, q + 9, _qty(g), 4)
        _symbol(out, q + 13, loc)
        _put(out, q + 21, _px(gs, s, gs[s, GS_MID]), 4)
        _put(out, q + 25, g[G_MATCH], 8)
        g[G_MATCH] += 1
        return q + 33
    side = int(_rand(g) % 2)
    idx = _new_idx(gs, g, s, side)
    if idx < 0:
        side = 1 - side
        idx = _new_idx(gs, g, s, side)
    ref = g[G_NEXT_REF]
    g[G_NEXT_REF] = ref + 1
    qty = _qty(g)
    mpid = _rand(g) % 33 == 0
    q = _head(out, p, 40 if mpid else 36, 70 if mpid else 65, loc, g)
    _put(out, q, ref, 8)
    out[q + 8] = 66 if side == 0 else 83
    _put(out, q + 9, qty, 4)
    _symbol(out, q + 13, loc)
    _put(out, q + 21, _px(gs, s, idx), 4)
    q += 25
    if mpid:
        for j, c in enumerate((71, 83, 67, 79)):  # 'GSCO'
            out[q + j] = c
        q += 4
    _pool_add(gs, pool, lvl, s, ref, side, idx, qty)
    return q
