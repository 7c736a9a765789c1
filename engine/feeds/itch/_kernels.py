# SPDX-License-Identifier: MIT
"""ITCH 5.0 kernels: framing and decoding, MoldUDP64 sequence tracking, the order books of
every stock, and the synthetic day generator.

Buffers are ``uint8`` arrays of wire bytes. A buffer is either a run of MoldUDP64 packets
(``pk_start``/``pk_end`` give each packet's range; a packet is a 20-byte header, then per
message a big-endian ``u16`` length and the message) or a raw ITCH file as NASDAQ
distributes days (one range: ``u16`` length + message, repeated).

Decoding walks the layout tables of :mod:`engine.feeds.itch.messages`: every message becomes
one row of its type's structured dtype by a table of byte moves, so one compiled kernel
serves all 23 types. Nothing here raises: kernels return counts and write a status row
(``ERR_*`` codes with where they stopped); the Python wrappers turn that into errors.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]

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


@kernel_inline
def be16(buf: U8, p: int) -> int:
    """Return the big-endian u16 at ``buf[p]``."""
    return (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])


@kernel_inline
def be32(buf: U8, p: int) -> int:
    """Return the big-endian u32 at ``buf[p]``."""
    return (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])


@kernel_inline
def be48(buf: U8, p: int) -> int:
    """Return the big-endian 6-byte integer at ``buf[p]``."""
    return (be16(buf, p) << 32) | be32(buf, p + 2)


@kernel_inline
def be64(buf: U8, p: int) -> int:
    """Return the big-endian u64 at ``buf[p]`` as int64 (values above 2**63 wrap)."""
    return (be32(buf, p) << 32) | be32(buf, p + 4)


@kernel_inline
def _fail(err: I64, code: int, pk: int, p: int, t: int, length: int, g: int) -> None:
    err[E_CODE] = code
    err[E_PACKET] = pk
    err[E_OFFSET] = p
    err[E_TYPE] = t
    err[E_LENGTH] = length
    err[E_MESSAGES] = g


@kernel
def frame_messages(
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
                _fail(err, ERR_TRUNCATED, pk, p, np.int64(buf[p + 2]), ln, g)
                return g
            t = np.int64(buf[p + 2])
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
    v = np.int64(0)
    for k in range(size - 1, -1, -1):
        v = (v << 8) | np.int64(buf[p + k])
    return v


@kernel
def decode_messages(
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
                t = np.int64(buf[m])
                ti = index[t]
                d = base[ti] + rows[ti] * itemsize[ti]
                out64[d >> 3] = seq + i if mode == MODE_MOLD else first_seq + g
                for j in range(n_ops[t]):
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
def mold_track(
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
    return seqs.shape[0]
