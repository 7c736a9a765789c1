# SPDX-License-Identifier: MIT
"""Table-driven SBE decoding kernels: a whole capture's packets in two kernel calls.

The schema is compiled (:mod:`engine.feeds.sbe.decoder`) into int64 tables that these kernels
interpret, so one compiled function serves every message type of every schema:

* a *level* per message root and per repeating group (``lv``: ``int64[L, LV_COLUMNS]``): its
  schema block length, the size of its decoded row, its dimension header's layout, its
  ``sinceVersion``, where its child groups, var data fields and versioned fields are listed;
* ``children``: level numbers of each level's groups, in wire order;
* ``datas`` (``int64[D, DA_COLUMNS]``): var data fields (length prefix, where the bytes start,
  ``sinceVersion``, where their start and length go in the row);
* ``vfields`` (``int64[F, VF_COLUMNS]``): fields with a ``sinceVersion`` (offset, size, version);
* ``nulls``: each level's block with every field null (what an absent field decodes to);
* ``frame`` (``int64[FR_COLUMNS]``): the packet header size, the message size prefix, the
  message header's layout, the schema id and byte order;
* ``tmpl_level``: templateId -> root level (-1: not in the schema).

A decoded row is the block's bytes copied as they are (the row's numpy dtype puts each field at
its SBE offset), followed by the decoder's own columns. Extension rules (SBE 1.0): a block
shorter than the schema's (an older sender) is completed with null values, a longer one (a
newer sender) is cut to the schema's length and the rest skipped, and fields, groups and var
data whose ``sinceVersion`` is above the message header's version are absent (null, empty).

:func:`decode_packets` walks every packet: in ``MODE_COUNT`` it checks each message and counts
the rows of every level and the packets' messages; the caller then allocates one flat output
buffer and calls it again in ``MODE_WRITE``, which writes the rows. A message is checked in
full before any of its rows is counted or written, so a bad message (cut group, unknown
template, wrong schema id) is skipped whole and every message before it is kept.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: Level table columns.
LV_BLOCK: int = 0  # schema block length
LV_ITEM: int = 1  # bytes of a decoded row
LV_DIM: int = 2  # dimension header size (0: a message root)
LV_BL_OFF: int = 3  # blockLength in the dimension header: offset, size
LV_BL_SIZE: int = 4
LV_N_OFF: int = 5  # numInGroup in the dimension header: offset, size
LV_N_SIZE: int = 6
LV_SINCE: int = 7
LV_CHILD0: int = 8  # first child group in ``children``, how many
LV_NCHILD: int = 9
LV_DATA0: int = 10  # first var data field in ``datas``, how many
LV_NDATA: int = 11
LV_VF0: int = 12  # first versioned field in ``vfields``, how many
LV_NVF: int = 13
LV_NULL: int = 14  # offset of the level's null block in ``nulls``
LV_COLUMNS: int = 15

#: Var data table columns.
DA_LEN_OFF: int = 0
DA_LEN_SIZE: int = 1
DA_DATA_OFF: int = 2
DA_SINCE: int = 3
DA_REC: int = 4  # row offset of ``<name>._start`` (``._length`` follows)
DA_COLUMNS: int = 5

#: Versioned field table columns.
VF_OFF: int = 0
VF_SIZE: int = 1
VF_SINCE: int = 2
VF_COLUMNS: int = 3

#: Framing table entries.
FR_PACKET_HEADER: int = 0  # bytes before the first message (MDP 3.0: 12)
FR_SIZE_PREFIX: int = 1  # bytes of the message size before each message (MDP 3.0: 2; 0: none)
FR_HEADER: int = 2  # message header size
FR_BL_OFF: int = 3
FR_BL_SIZE: int = 4
FR_TID_OFF: int = 5
FR_TID_SIZE: int = 6
FR_SID_OFF: int = 7
FR_SID_SIZE: int = 8
FR_VER_OFF: int = 9
FR_VER_SIZE: int = 10
FR_SCHEMA_ID: int = 11
FR_BIG_ENDIAN: int = 12
FR_SEQ_SIZE: int = 13  # packet sequence number at offset 0 (MDP 3.0: 4; 0: none)
FR_TIME_SIZE: int = 14  # packet sending time after it (MDP 3.0: 8; 0: none)
FR_COLUMNS: int = 15

#: Packet info columns (``int64[P, PK_COLUMNS]``).
PK_SEQ: int = 0
PK_TIME: int = 1
PK_MESSAGES: int = 2  # messages framed in the packet (skipped ones included)
PK_FIRST: int = 3  # number of its first message in the capture
PK_STATUS: int = 4  # 0, or the code of the issue that stopped its framing
PK_COLUMNS: int = 5

#: Message table columns (``int64[M, MS_COLUMNS]``).
MS_PACKET: int = 0
MS_OFFSET: int = 1  # offset in the buffer of its size prefix (or header)
MS_SIZE: int = 2
MS_TEMPLATE: int = 3
MS_VERSION: int = 4
MS_BLOCK: int = 5
MS_ROW: int = 6  # row in its template's rows (-1: skipped)
MS_STATUS: int = 7  # 0 or the issue code that skipped it
MS_COLUMNS: int = 8

#: Issue table columns (``int64[cap, IS_COLUMNS]``).
IS_PACKET: int = 0
IS_OFFSET: int = 1  # offset in the packet
IS_CODE: int = 2
IS_VALUE: int = 3
IS_COLUMNS: int = 4

#: Issue codes (also the index of their count in ``counts``; ``counts[0]`` is the number of
#: issues written to the issue table).
E_SHORT_PACKET: int = 1  # packet shorter than its header: skipped
E_SIZE_CUT: int = 2  # the message size prefix is cut off: rest of packet skipped
E_BAD_SIZE: int = 3  # message size below size prefix + header: rest of packet skipped
E_MESSAGE_CUT: int = 4  # message runs past the packet's end: rest of packet skipped
E_SCHEMA_ID: int = 5  # message of another schema: skipped
E_UNKNOWN_TEMPLATE: int = 6  # templateId not in the schema: skipped
E_BLOCK_CUT: int = 7  # root block runs past the message's end: skipped
E_GROUP_HEADER_CUT: int = 8  # a group's dimension header runs past the end: skipped
E_GROUP_CUT: int = 9  # a group's entries run past the end: skipped
E_DATA_CUT: int = 10  # a var data field runs past the end: skipped
E_TOO_DEEP: int = 11  # groups nested deeper than MAX_DEPTH: skipped
E_COUNT: int = 12

#: Modes of :func:`decode_packets`.
MODE_CHECK: int = 0
MODE_COUNT: int = 1
MODE_WRITE: int = 2

#: Deepest nesting of groups (two stack frames per level).
MAX_DEPTH: int = 32

_F_INSTANCE = 0
_F_GROUP = 1
# stack frame columns
_S_KIND = 0
_S_LEVEL = 1
_S_NEXT = 2
_S_COUNT = 3
_S_BLOCK = 4
_S_ROW = 5


@kernel_inline
def _uint(buf: U8, p: int, size: int, big: int) -> int:
    v = 0
    if big:
        for k in range(size):
            v = (v << 8) | int(buf[p + k])
    else:
        for k in range(size - 1, -1, -1):
            v = (v << 8) | int(buf[p + k])
    return v


@kernel_inline
def _put_le(out: U8, p: int, v: int, size: int) -> None:
    for k in range(size):
        out[p + k] = v & 0xFF
        v >>= 8


@kernel_inline
def _write_block(
    buf: U8,
    src: int,
    src_len: int,
    level: int,
    version: int,
    lv: I64,
    vfields: I64,
    nulls: U8,
    out: U8,
    dst: int,
) -> None:
    block = lv[level, LV_BLOCK]
    n = src_len if src_len < block else block
    for k in range(n):
        out[dst + k] = buf[src + k]
    null0 = lv[level, LV_NULL]
    for k in range(n, block):
        out[dst + k] = nulls[null0 + k]
    f0 = lv[level, LV_VF0]
    for f in range(f0, f0 + lv[level, LV_NVF]):
        if vfields[f, VF_SINCE] > version:
            off = vfields[f, VF_OFF]
            for k in range(off, off + vfields[f, VF_SIZE]):
                out[dst + k] = nulls[null0 + k]


@kernel
def walk_message(  # noqa: C901 (one flat walk of the group tree, on purpose)
    buf: U8,
    start: int,
    end: int,
    root: int,
    version: int,
    hdr_block: int,
    big: int,
    lv: I64,
    children: I64,
    datas: I64,
    vfields: I64,
    nulls: U8,
    mode: int,
    out: U8,
    base: I64,
    rows: I64,
    stack: I64,
) -> int:
    """Check, count or write one message's rows; return where it ends (or ``-code``).

    ``start`` is the first byte of the root block (after the message header), ``end`` one
    past the message's last byte. In ``MODE_COUNT`` and ``MODE_WRITE`` ``rows[level]`` is
    advanced by the rows the message adds; in ``MODE_WRITE`` they are written at
    ``base[level] + row * lv[level, LV_ITEM]`` of ``out`` (the root's decoder columns are
    the caller's to write). The message must have passed ``MODE_CHECK`` first.
    """
    if start + hdr_block > end:
        return -E_BLOCK_CUT
    msg_row = rows[root]
    if mode == MODE_WRITE:
        dst = base[root] + msg_row * lv[root, LV_ITEM]
        _write_block(buf, start, hdr_block, root, version, lv, vfields, nulls, out, dst)
    if mode != MODE_CHECK:
        rows[root] += 1
    pos = start + hdr_block
    sp = 1
    stack[0, _S_KIND] = _F_INSTANCE
    stack[0, _S_LEVEL] = root
    stack[0, _S_NEXT] = 0
    stack[0, _S_ROW] = msg_row
    while sp > 0:
        f = sp - 1
        level = stack[f, _S_LEVEL]
        if stack[f, _S_KIND] == _F_INSTANCE:
            k = stack[f, _S_NEXT]
            if k < lv[level, LV_NCHILD]:
                stack[f, _S_NEXT] = k + 1
                g = children[lv[level, LV_CHILD0] + k]
                if lv[g, LV_SINCE] > version:
                    continue  # the sender's version has no such group
                if pos + lv[g, LV_DIM] > end:
                    return -E_GROUP_HEADER_CUT
                gbl = _uint(buf, pos + lv[g, LV_BL_OFF], lv[g, LV_BL_SIZE], big)
                n = _uint(buf, pos + lv[g, LV_N_OFF], lv[g, LV_N_SIZE], big)
                pos += lv[g, LV_DIM]
                if pos + n * gbl > end:
                    return -E_GROUP_CUT
                if sp + 2 > stack.shape[0]:
                    return -E_TOO_DEEP
                stack[sp, _S_KIND] = _F_GROUP
                stack[sp, _S_LEVEL] = g
                stack[sp, _S_NEXT] = 0
                stack[sp, _S_COUNT] = n
                stack[sp, _S_BLOCK] = gbl
                stack[sp, _S_ROW] = stack[f, _S_ROW]
                sp += 1
            else:
                d0 = lv[level, LV_DATA0]
                for d in range(d0, d0 + lv[level, LV_NDATA]):
                    if datas[d, DA_SINCE] > version:
                        length = 0
                        at = pos
                    else:
                        if pos + datas[d, DA_DATA_OFF] > end:
                            return -E_DATA_CUT
                        length = _uint(buf, pos + datas[d, DA_LEN_OFF], datas[d, DA_LEN_SIZE], big)
                        at = pos + datas[d, DA_DATA_OFF]
                        if at + length > end:
                            return -E_DATA_CUT
                        pos = at + length
                    if mode == MODE_WRITE:
                        rec = base[level] + stack[f, _S_ROW] * lv[level, LV_ITEM]
                        _put_le(out, rec + datas[d, DA_REC], at, 8)
                        _put_le(out, rec + datas[d, DA_REC] + 8, length, 8)
                sp -= 1
        else:
            i = stack[f, _S_NEXT]
            if i < stack[f, _S_COUNT]:
                stack[f, _S_NEXT] = i + 1
                gbl = stack[f, _S_BLOCK]
                if pos + gbl > end:
                    return -E_GROUP_CUT
                row = rows[level]
                if mode == MODE_WRITE:
                    dst = base[level] + row * lv[level, LV_ITEM]
                    _write_block(buf, pos, gbl, level, version, lv, vfields, nulls, out, dst)
                    meta = dst + lv[level, LV_BLOCK]
                    _put_le(out, meta, msg_row, 8)
                    _put_le(out, meta + 8, stack[f, _S_ROW], 8)
                if mode != MODE_CHECK:
                    rows[level] += 1
                pos += gbl
                stack[sp, _S_KIND] = _F_INSTANCE
                stack[sp, _S_LEVEL] = level
                stack[sp, _S_NEXT] = 0
                stack[sp, _S_ROW] = row
                sp += 1
            else:
                sp -= 1
    return pos


@kernel_inline
def _issue(
    mode: int, issues: I64, counts: I64, packet: int, offset: int, code: int, value: int
) -> None:
    if mode != MODE_COUNT:
        return
    counts[code] += 1
    n = counts[0]
    if n < issues.shape[0]:
        issues[n, IS_PACKET] = packet
        issues[n, IS_OFFSET] = offset
        issues[n, IS_CODE] = code
        issues[n, IS_VALUE] = value
        counts[0] = n + 1


@kernel
def decode_packets(  # noqa: C901 (the framing loop with each way a packet can be bad)
    buf: U8,
    pk_start: I64,
    pk_len: I64,
    frame: I64,
    tmpl_level: I64,
    lv: I64,
    children: I64,
    datas: I64,
    vfields: I64,
    nulls: U8,
    mode: int,
    out: U8,
    base: I64,
    rows: I64,
    packets: I64,
    messages: I64,
    issues: I64,
    counts: I64,
) -> int:
    """Frame and decode every packet ``buf[pk_start[p] : pk_start[p] + pk_len[p]]``.

    ``MODE_COUNT`` fills ``packets`` (``int64[P, PK_COLUMNS]``), ``issues`` and ``counts``
    and counts each level's rows into ``rows``; ``MODE_WRITE`` (``rows`` zeroed, ``out`` and
    ``base`` sized from the counts) writes the rows and the message table ``messages``
    (``int64[M, MS_COLUMNS]``). Returns the number of messages framed.
    """
    big = frame[FR_BIG_ENDIAN]
    head = frame[FR_PACKET_HEADER]
    prefix = frame[FR_SIZE_PREFIX]
    hsize = frame[FR_HEADER]
    stack = np.zeros((2 * MAX_DEPTH, 6), np.int64)
    n_msg = 0
    for p in range(pk_start.shape[0]):
        s = pk_start[p]
        e = s + pk_len[p]
        first = n_msg
        status = 0
        if mode == MODE_COUNT:
            packets[p, PK_SEQ] = -1
            packets[p, PK_TIME] = -1
        if pk_len[p] < head:
            _issue(mode, issues, counts, p, 0, E_SHORT_PACKET, pk_len[p])
            status = E_SHORT_PACKET
            e = s  # nothing to frame
        elif mode == MODE_COUNT:
            if frame[FR_SEQ_SIZE] > 0:
                packets[p, PK_SEQ] = _uint(buf, s, frame[FR_SEQ_SIZE], big)
            if frame[FR_TIME_SIZE] > 0:
                packets[p, PK_TIME] = _uint(buf, s + frame[FR_SEQ_SIZE], frame[FR_TIME_SIZE], big)
        pos = s + head
        while pos < e:
            if prefix > 0:
                if pos + prefix > e:
                    _issue(mode, issues, counts, p, pos - s, E_SIZE_CUT, e - pos)
                    status = E_SIZE_CUT
                    break
                size = _uint(buf, pos, prefix, big)
                if size < prefix + hsize:
                    _issue(mode, issues, counts, p, pos - s, E_BAD_SIZE, size)
                    status = E_BAD_SIZE
                    break
                if pos + size > e:
                    _issue(mode, issues, counts, p, pos - s, E_MESSAGE_CUT, size)
                    status = E_MESSAGE_CUT
                    break
                mend = pos + size
            else:
                if pos + hsize > e:
                    _issue(mode, issues, counts, p, pos - s, E_MESSAGE_CUT, e - pos)
                    status = E_MESSAGE_CUT
                    break
                mend = e
            h = pos + prefix
            hbl = _uint(buf, h + frame[FR_BL_OFF], frame[FR_BL_SIZE], big)
            tid = _uint(buf, h + frame[FR_TID_OFF], frame[FR_TID_SIZE], big)
            sid = _uint(buf, h + frame[FR_SID_OFF], frame[FR_SID_SIZE], big)
            ver = _uint(buf, h + frame[FR_VER_OFF], frame[FR_VER_SIZE], big)
            code = 0
            value = 0
            root = -1
            body = h + hsize
            stop = mend
            if sid != frame[FR_SCHEMA_ID]:
                code = E_SCHEMA_ID
                value = sid
            elif tid >= tmpl_level.shape[0] or tmpl_level[tid] < 0:
                code = E_UNKNOWN_TEMPLATE
                value = tid
            else:
                root = tmpl_level[tid]
                r = walk_message(
                    buf, body, mend, root, ver, hbl, big, lv, children, datas, vfields,
                    nulls, MODE_CHECK, out, base, rows, stack,
                )  # fmt: skip
                if r < 0:
                    code = -r
                    value = tid
                else:
                    stop = r
            if code != 0:
                _issue(mode, issues, counts, p, pos - s, code, value)
                if prefix == 0:
                    # without a size prefix nothing after a bad message can be framed
                    if mode == MODE_WRITE:
                        _message(messages, n_msg, p, pos, mend - pos, tid, ver, hbl, -1, code)
                    n_msg += 1
                    status = code
                    break
            row = -1
            if code == 0:
                row = rows[root]
                walk_message(
                    buf, body, mend, root, ver, hbl, big, lv, children, datas, vfields,
                    nulls, mode, out, base, rows, stack,
                )  # fmt: skip
                if mode == MODE_WRITE:
                    meta = base[root] + row * lv[root, LV_ITEM] + lv[root, LV_BLOCK]
                    _put_le(out, meta, p, 8)
                    _put_le(out, meta + 8, n_msg, 8)
                    _put_le(out, meta + 16, ver, 2)
                    _put_le(out, meta + 18, hbl, 2)
            if mode == MODE_WRITE:
                _message(
                    messages,
                    n_msg,
                    p,
                    pos,
                    (mend if prefix else stop) - pos,
                    tid,
                    ver,
                    hbl,
                    row,
                    code,
                )
            n_msg += 1
            pos = mend if prefix > 0 else stop
        if mode == MODE_COUNT:
            packets[p, PK_MESSAGES] = n_msg - first
            packets[p, PK_FIRST] = first
            packets[p, PK_STATUS] = status
    return n_msg


@kernel_inline
def _message(
    messages: I64,
    n: int,
    packet: int,
    offset: int,
    size: int,
    tid: int,
    ver: int,
    hbl: int,
    row: int,
    status: int,
) -> None:
    messages[n, MS_PACKET] = packet
    messages[n, MS_OFFSET] = offset
    messages[n, MS_SIZE] = size
    messages[n, MS_TEMPLATE] = tid
    messages[n, MS_VERSION] = ver
    messages[n, MS_BLOCK] = hbl
    messages[n, MS_ROW] = row
    messages[n, MS_STATUS] = status


@kernel
def sequence_check(seqs: I64, first: int, seen: U8, status: I64) -> int:
    """Classify each packet's sequence number against those before it.

    ``status[i]``: 0 in order, 1 after a gap (numbers were skipped before it), 2 a duplicate
    (seen before), 3 late (it fills a gap left earlier: reordered), 4 no sequence number
    (-1). ``seen`` (one byte per number from ``first``) is left marking what arrived.
    Returns the highest number seen.
    """
    expected = -1
    for i in range(seqs.shape[0]):
        q = seqs[i]
        if q < 0:
            status[i] = 4
            continue
        k = q - first
        if seen[k]:
            status[i] = 2
            continue
        seen[k] = 1
        if expected < 0 or q == expected:
            status[i] = 0
            expected = q + 1
        elif q > expected:
            status[i] = 1
            expected = q + 1
        else:
            status[i] = 3
    return expected - 1
