# SPDX-License-Identifier: MIT
"""Table-driven SBE decoding kernels: a whole capture's packets in one pass.

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

:func:`decode_packets` walks every packet once, writing each level's rows into one flat
output buffer sized from a count over a sample of the packets (``MODE_COUNT``); when a level
fills up it stops before the message that does not fit, the caller grows the buffer and it
goes on from there, so nothing is decoded twice. A message is checked in full before any of
its rows is written, so a bad message (cut group, unknown template, wrong schema id) is
skipped whole and every message before it is kept.

Speed notes (numba): a helper that takes arrays costs their reference counts on every call
(~3 ns an array), so the path of every CME message (a *flat* message: groups without groups
or var data inside) is written out in :func:`decode_packets` itself, and byte copies index
with unsigned integers (no negative-index check, so LLVM vectorises them: a 32-byte entry
copies in ~2 ns instead of ~40).

Why one long module: it is one table interpreter (the ``LV_*``/``DA_*``/``VF_*``/``FR_*`` layouts
and the kernels that read them), and the flat-message path is written out inside
:func:`decode_packets` on purpose (above), so its length is that inlining, not a second concept.
"""

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: ``np.int64`` as kernels use it on a byte (to read integers without unsigned mixing),
#: typed as a plain int for mypy.
_i64 = cast(Callable[[Any], int], np.int64)

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
#: 1: a message root whose groups have no groups or var data inside, and no var data of its
#: own (every CME message): decoded without the walk's stack.
LV_FLAT: int = 15
LV_META: int = 16  # offset of the decoder's columns in a row (8-aligned)
LV_MAXSINCE: int = 17  # highest sinceVersion of the level's fields
LV_COLUMNS: int = 18

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
#: 1: little-endian, a u16 size prefix and SBE's standard 8-byte header (four u16: block
#: length, template, schema, version), read without the general reader.
FR_STANDARD: int = 15
FR_COLUMNS: int = 16

#: Packet info columns (``int64[P, PK_COLUMNS]``).
PK_SEQ: int = 0
PK_TIME: int = 1
PK_MESSAGES: int = 2  # messages framed in the packet (skipped ones included)
PK_FIRST: int = 3  # number of its first message in the capture
PK_STATUS: int = 4  # 0, or the code of the issue that stopped its framing
PK_COLUMNS: int = 5

#: Message table words (``int64[M, MS_COLUMNS]``, read as ``decoder.MESSAGE_DTYPE``).
MS_PACKET: int = 0
MS_OFFSET: int = 1  # offset in the buffer of its size prefix (or header)
MS_ROW: int = 2  # row in its template's rows (-1: skipped)
MS_SIZE_TEMPLATE_VERSION: int = 3  # size (u32), templateId (u16), version (u16)
MS_BLOCK_STATUS: int = 4  # blockLength (u16), status (u16: 0 or the issue that skipped it)
MS_COLUMNS: int = 5

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
#: Returned as ``-(E_FULL + level)`` when a level's rows are full (not an issue: the caller
#: grows the output and resumes).
E_FULL: int = 1 << 20

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
    v = _i64(0)
    if big == 0 and size == 1:
        v = _i64(buf[p])
    elif big == 0 and size == 2:
        v = _i64(buf[p]) | (_i64(buf[p + 1]) << 8)
    elif big == 0 and size == 4:
        v = (
            _i64(buf[p])
            | (_i64(buf[p + 1]) << 8)
            | (_i64(buf[p + 2]) << 16)
            | (_i64(buf[p + 3]) << 24)
        )
    elif big:
        for k in range(size):
            v = (v << 8) | _i64(buf[p + k])
    else:
        for k in range(size - 1, -1, -1):
            v = (v << 8) | _i64(buf[p + k])
    return v


@kernel_inline
def _null_newer(
    level: int, version: int, lv: I64, vfields: I64, nulls: U8, out: U8, dst: int
) -> None:
    """Null the fields of a row whose ``sinceVersion`` is above the sender's ``version``."""
    null0 = lv[level, LV_NULL]
    f0 = lv[level, LV_VF0]
    for f in range(f0, f0 + lv[level, LV_NVF]):
        if vfields[f, VF_SINCE] > version:
            off = vfields[f, VF_OFF]
            for k in range(off, off + vfields[f, VF_SIZE]):
                out[dst + k] = nulls[null0 + k]


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
    ud = np.uint64(dst)
    us = np.uint64(src)
    for uk in range(np.uint64(n)):
        out[ud + uk] = buf[us + uk]
    null0 = lv[level, LV_NULL]
    for k in range(n, block):
        out[dst + k] = nulls[null0 + k]
    if version < lv[level, LV_MAXSINCE]:
        _null_newer(level, version, lv, vfields, nulls, out, dst)


@kernel_inline
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
    out64: I64,
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
                        w = (rec + datas[d, DA_REC]) >> 3
                        out64[w] = at
                        out64[w + 1] = length
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
                    w = (dst + lv[level, LV_META]) >> 3
                    out64[w] = msg_row
                    out64[w + 1] = stack[f, _S_ROW]
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


#: Most groups a flat message may have (more: the general walk).
MAX_FLAT_GROUPS: int = 64


@kernel_inline
def _issue(
    mode: int, issues: I64, counts: I64, packet: int, offset: int, code: int, value: int
) -> None:
    if mode != MODE_WRITE:
        return
    counts[code] += 1
    n = counts[0]
    if n < issues.shape[0]:
        issues[n, IS_PACKET] = packet
        issues[n, IS_OFFSET] = offset
        issues[n, IS_CODE] = code
        issues[n, IS_VALUE] = value
        counts[0] = n + 1


#: Resume state of :func:`decode_packets` (``int64[ST_COLUMNS]``).
ST_PACKET: int = 0  # packet to go on with
ST_POS: int = 1  # offset in the buffer to go on from in it (-1: its start)
ST_MESSAGES: int = 2  # messages framed so far
ST_FIRST: int = 3  # the packet's first message
ST_STATUS: int = 4  # the packet's status so far
ST_FULL: int = 5  # the level that was full (-1: the message table)
ST_COLUMNS: int = 6


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
    out64: I64,
    base: I64,
    cap: I64,
    rows: I64,
    packets: I64,
    messages: I64,
    issues: I64,
    counts: I64,
    state: I64,
) -> int:
    """Frame and decode the packets ``buf[pk_start[p] : pk_start[p] + pk_len[p]]``.

    ``MODE_WRITE`` writes each level's rows at ``base[level] + row * lv[level, LV_ITEM]`` of
    ``out`` (``rows[level]`` of them so far, at most ``cap[level]``), each message's row of
    ``messages`` (``int64[M, MS_COLUMNS]``), each packet's of ``packets``
    (``int64[P, PK_COLUMNS]``), the issues and their ``counts``. When a level or the
    message table is full it stops before the message that does not fit, leaves where to go
    on in ``state`` (``ST_*``) and returns 1: the caller grows the output and calls again
    with the same ``state``; 0 when every packet is done. ``MODE_COUNT`` only counts the
    rows (an estimate from a sample of packets: no capacity, no issues, nothing written).
    """
    big = frame[FR_BIG_ENDIAN]
    head = frame[FR_PACKET_HEADER]
    prefix = frame[FR_SIZE_PREFIX]
    hsize = frame[FR_HEADER]
    write = mode == MODE_WRITE
    standard = frame[FR_STANDARD]
    stack = np.zeros((2 * MAX_DEPTH, 6), np.int64)
    scratch = np.zeros((3, MAX_FLAT_GROUPS), np.int64)
    tmp = np.zeros(lv.shape[0], np.int64)
    n_msg = state[ST_MESSAGES]
    resume = state[ST_POS]
    for p in range(state[ST_PACKET], pk_start.shape[0]):
        s = pk_start[p]
        e = s + pk_len[p]
        if resume >= 0:
            pos = resume
            first = state[ST_FIRST]
            status = state[ST_STATUS]
            resume = -1
        else:
            pos = s + head
            first = n_msg
            status = 0
            if write:
                packets[p, PK_SEQ] = -1
                packets[p, PK_TIME] = -1
                if pk_len[p] < head:
                    _issue(mode, issues, counts, p, 0, E_SHORT_PACKET, pk_len[p])
                    status = E_SHORT_PACKET
                    e = s  # nothing to frame
                else:
                    if frame[FR_SEQ_SIZE] > 0:
                        packets[p, PK_SEQ] = _uint(buf, s, frame[FR_SEQ_SIZE], big)
                    if frame[FR_TIME_SIZE] > 0:
                        at = s + frame[FR_SEQ_SIZE]
                        packets[p, PK_TIME] = _uint(buf, at, frame[FR_TIME_SIZE], big)
            elif pk_len[p] < head:
                e = s
        while pos < e:
            if write and n_msg >= messages.shape[0]:
                state[ST_FULL] = -1
                break
            if prefix > 0:
                if pos + prefix > e:
                    _issue(mode, issues, counts, p, pos - s, E_SIZE_CUT, e - pos)
                    status = E_SIZE_CUT
                    break
                if standard:
                    size = _i64(buf[pos]) | (_i64(buf[pos + 1]) << 8)
                else:
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
            if standard:
                hbl = _i64(buf[h]) | (_i64(buf[h + 1]) << 8)
                tid = _i64(buf[h + 2]) | (_i64(buf[h + 3]) << 8)
                sid = _i64(buf[h + 4]) | (_i64(buf[h + 5]) << 8)
                ver = _i64(buf[h + 6]) | (_i64(buf[h + 7]) << 8)
            else:
                hbl = _uint(buf, h + frame[FR_BL_OFF], frame[FR_BL_SIZE], big)
                tid = _uint(buf, h + frame[FR_TID_OFF], frame[FR_TID_SIZE], big)
                sid = _uint(buf, h + frame[FR_SID_OFF], frame[FR_SID_SIZE], big)
                ver = _uint(buf, h + frame[FR_VER_OFF], frame[FR_VER_SIZE], big)
            code = 0
            value = 0
            root = -1
            row = -1
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
                if lv[root, LV_FLAT]:
                    # A flat message, written out here rather than in helpers (each call of
                    # a helper taking arrays costs their reference counts): check its
                    # groups whole, then emit the root and every entry.
                    r = body + hbl
                    c0 = lv[root, LV_CHILD0]
                    nchild = lv[root, LV_NCHILD]
                    if r > mend:
                        r = -E_BLOCK_CUT
                        nchild = 0
                    for j in range(nchild):
                        g = children[c0 + j]
                        if lv[g, LV_SINCE] > ver:
                            scratch[2, j] = 0
                            continue
                        if r + lv[g, LV_DIM] > mend:
                            r = -E_GROUP_HEADER_CUT
                            break
                        q = r + lv[g, LV_BL_OFF]
                        if big == 0 and lv[g, LV_BL_SIZE] == 2:
                            gbl = _i64(buf[q]) | (_i64(buf[q + 1]) << 8)
                        else:
                            gbl = _uint(buf, q, lv[g, LV_BL_SIZE], big)
                        q = r + lv[g, LV_N_OFF]
                        if big == 0 and lv[g, LV_N_SIZE] == 1:
                            n = _i64(buf[q])
                        elif big == 0 and lv[g, LV_N_SIZE] == 2:
                            n = _i64(buf[q]) | (_i64(buf[q + 1]) << 8)
                        else:
                            n = _uint(buf, q, lv[g, LV_N_SIZE], big)
                        r += lv[g, LV_DIM]
                        scratch[0, j] = r
                        scratch[1, j] = gbl
                        scratch[2, j] = n
                        r += n * gbl
                        if r > mend:
                            r = -E_GROUP_CUT
                            break
                    if r >= 0 and write:
                        if rows[root] >= cap[root]:
                            r = -E_FULL - root
                        for j in range(nchild):
                            g = children[c0 + j]
                            if r >= 0 and rows[g] + scratch[2, j] > cap[g]:
                                r = -E_FULL - g
                    if r >= 0:
                        row = rows[root]
                        rows[root] = row + 1
                        if write:
                            dst = base[root] + row * lv[root, LV_ITEM]
                            blk = lv[root, LV_BLOCK]
                            m = hbl if hbl < blk else blk
                            # unsigned indices: no negative-index check, a vectorised copy
                            ud = np.uint64(dst)
                            us = np.uint64(body)
                            for uq in range(np.uint64(m)):
                                out[ud + uq] = buf[us + uq]
                            if m < blk:
                                null0 = lv[root, LV_NULL]
                                for q in range(m, blk):
                                    out[dst + q] = nulls[null0 + q]
                            if ver < lv[root, LV_MAXSINCE]:
                                _null_newer(root, ver, lv, vfields, nulls, out, dst)
                        for j in range(nchild):
                            n = scratch[2, j]
                            if n == 0:
                                continue
                            g = children[c0 + j]
                            grow = rows[g]
                            rows[g] = grow + n
                            if not write:
                                continue
                            src = scratch[0, j]
                            gbl = scratch[1, j]
                            item = lv[g, LV_ITEM]
                            blk = lv[g, LV_BLOCK]
                            m = gbl if gbl < blk else blk
                            null0 = lv[g, LV_NULL]
                            newer = ver < lv[g, LV_MAXSINCE]
                            dst = base[g] + grow * item
                            w = (dst + lv[g, LV_META]) >> 3
                            um = np.uint64(m)
                            for _ in range(n):
                                ud = np.uint64(dst)
                                us = np.uint64(src)
                                for uq in range(um):
                                    out[ud + uq] = buf[us + uq]
                                for q in range(m, blk):
                                    out[dst + q] = nulls[null0 + q]
                                if newer:
                                    _null_newer(g, ver, lv, vfields, nulls, out, dst)
                                out64[w] = row
                                out64[w + 1] = row
                                src += gbl
                                dst += item
                                w += item >> 3
                else:
                    r = walk_message(
                        buf,
                        body,
                        mend,
                        root,
                        ver,
                        hbl,
                        big,
                        lv,
                        children,
                        datas,
                        vfields,
                        nulls,
                        MODE_CHECK,
                        out,
                        out64,
                        base,
                        rows,
                        stack,
                    )
                    if r >= 0 and write:
                        tmp[:] = rows
                        walk_message(
                            buf,
                            body,
                            mend,
                            root,
                            ver,
                            hbl,
                            big,
                            lv,
                            children,
                            datas,
                            vfields,
                            nulls,
                            MODE_COUNT,
                            out,
                            out64,
                            base,
                            tmp,
                            stack,
                        )
                        for level in range(tmp.shape[0]):
                            if tmp[level] > cap[level]:
                                r = -E_FULL - level
                                break
                    if r >= 0:
                        row = rows[root]
                        walk_message(
                            buf,
                            body,
                            mend,
                            root,
                            ver,
                            hbl,
                            big,
                            lv,
                            children,
                            datas,
                            vfields,
                            nulls,
                            mode,
                            out,
                            out64,
                            base,
                            rows,
                            stack,
                        )
                if r <= -E_FULL:
                    state[ST_FULL] = -r - E_FULL
                    break
                if r < 0:
                    code = -r
                    value = tid
                    row = -1
                else:
                    stop = r
            if code != 0:
                _issue(mode, issues, counts, p, pos - s, code, value)
            elif write:
                w = (base[root] + row * lv[root, LV_ITEM] + lv[root, LV_META]) >> 3
                out64[w] = p
                out64[w + 1] = n_msg
                out64[w + 2] = ver | (hbl << 32)
            if write:
                msize = (mend if prefix else stop) - pos
                messages[n_msg, MS_PACKET] = p
                messages[n_msg, MS_OFFSET] = pos
                messages[n_msg, MS_ROW] = row
                messages[n_msg, MS_SIZE_TEMPLATE_VERSION] = msize | (tid << 32) | (ver << 48)
                messages[n_msg, MS_BLOCK_STATUS] = hbl | (code << 16)
            n_msg += 1
            if code != 0 and prefix == 0:
                status = code  # without a size prefix nothing after a bad message is framed
                break
            pos = mend if prefix > 0 else stop
        else:
            if write:
                packets[p, PK_MESSAGES] = n_msg - first
                packets[p, PK_FIRST] = first
                packets[p, PK_STATUS] = status
            continue
        if state[ST_FULL] != -2:  # full: stop before this message, to go on from it
            state[ST_PACKET] = p
            state[ST_POS] = pos
            state[ST_MESSAGES] = n_msg
            state[ST_FIRST] = first
            state[ST_STATUS] = status
            return 1
        if write:
            packets[p, PK_MESSAGES] = n_msg - first
            packets[p, PK_FIRST] = first
            packets[p, PK_STATUS] = status
    state[ST_PACKET] = pk_start.shape[0]
    state[ST_MESSAGES] = n_msg
    return 0


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


#: MDP 3.0 ``MDUpdateAction`` values (MBP book entries).
MBP_NEW: int = 0
MBP_CHANGE: int = 1
MBP_DELETE: int = 2
MBP_DELETE_THRU: int = 3
MBP_DELETE_FROM: int = 4
MBP_OVERLAY: int = 5
#: Entry sides of :func:`mbp_events` (``side`` column): bid, offer, or a book reset.
MBP_BID: int = 0
MBP_OFFER: int = 1
MBP_RESET: int = 2
#: Columns of the events :func:`mbp_events` writes (``int64[n, EV_COLUMNS]``).
EV_ENTRY: int = 0  # the book entry that made it
EV_BOOK: int = 1
EV_SIDE: int = 2  # MBP_BID, MBP_OFFER (-1 for a clear)
EV_PX: int = 3
EV_QTY: int = 4  # the level's new size (0: the level is gone)
EV_CLEAR: int = 5  # 1: clear the book
EV_COLUMNS: int = 6


@kernel
def mbp_events(  # noqa: C901 (each update action of MDP 3.0's MBP book in one loop)
    book: I64,
    side: I64,
    action: I64,
    level: I64,
    px: I64,
    qty: I64,
    lv_px: I64,
    lv_qty: I64,
    out: I64,
    bad: I64,
) -> int:
    """Turn MDP 3.0 MBP entries (by price *level*) into level sets (by *price*).

    An MDP 3.0 book entry names a level (``MDPriceLevel``, 1 the best) of a book of at most
    ``depth`` levels a side (``lv_px``, ``lv_qty``: ``int64[n_books, 2, depth]``, kept here):
    New inserts at the level (the levels below move down; the one pushed past ``depth`` is
    gone), Change sets its size, Delete removes the entry's price (found among the levels,
    else at the level named; the levels below move up), DeleteThru empties the side,
    DeleteFrom removes the top ``level`` levels, Overlay replaces the level's price and size.
    A capture that starts mid-session knows only the levels updated since: the entry's own
    price is always what is set or removed, and a level found holding another price where
    the entry says it is is removed too.

    Each change is written as an event row of ``out`` (``EV_*`` columns): a price's new size
    (0: no longer in the book), or a clear (side ``MBP_RESET``). Returns the number of
    events; an entry whose level is outside ``1..depth`` is counted in ``bad[0]``.
    """
    depth = lv_px.shape[2]
    n = 0
    for i in range(book.shape[0]):
        b = book[i]
        s = side[i]
        if s == MBP_RESET:
            for t in range(2):
                for j in range(depth):
                    lv_qty[b, t, j] = 0
                    lv_px[b, t, j] = 0
            out[n, EV_ENTRY] = i
            out[n, EV_BOOK] = b
            out[n, EV_SIDE] = -1
            out[n, EV_PX] = 0
            out[n, EV_QTY] = 0
            out[n, EV_CLEAR] = 1
            n += 1
            continue
        a = action[i]
        lvl = level[i] - 1
        if a == MBP_DELETE_THRU:
            lvl = depth - 1
        if lvl < 0 or lvl >= depth:
            bad[0] += 1
            continue
        first = n
        if a == MBP_NEW:
            gone = depth - 1
            if lv_qty[b, s, gone] > 0:
                out[n, EV_PX] = lv_px[b, s, gone]
                out[n, EV_QTY] = 0
                n += 1
            for j in range(depth - 1, lvl, -1):
                lv_px[b, s, j] = lv_px[b, s, j - 1]
                lv_qty[b, s, j] = lv_qty[b, s, j - 1]
            lv_px[b, s, lvl] = px[i]
            lv_qty[b, s, lvl] = qty[i]
            out[n, EV_PX] = px[i]
            out[n, EV_QTY] = qty[i]
            n += 1
        elif a in (MBP_CHANGE, MBP_OVERLAY):
            if lv_qty[b, s, lvl] > 0 and lv_px[b, s, lvl] != px[i]:
                out[n, EV_PX] = lv_px[b, s, lvl]  # the level held another price: gone
                out[n, EV_QTY] = 0
                n += 1
            lv_px[b, s, lvl] = px[i]
            lv_qty[b, s, lvl] = qty[i]
            out[n, EV_PX] = px[i]
            out[n, EV_QTY] = qty[i]
            n += 1
        elif a == MBP_DELETE:
            # the entry's price is what goes (the level is where it was, if it was known)
            at = lvl
            for j in range(depth):
                if lv_qty[b, s, j] > 0 and lv_px[b, s, j] == px[i]:
                    at = j
                    break
            if lv_qty[b, s, at] > 0 and lv_px[b, s, at] != px[i]:
                out[n, EV_PX] = lv_px[b, s, at]
                out[n, EV_QTY] = 0
                n += 1
            out[n, EV_PX] = px[i]
            out[n, EV_QTY] = 0
            n += 1
            for j in range(at, depth - 1):
                lv_px[b, s, j] = lv_px[b, s, j + 1]
                lv_qty[b, s, j] = lv_qty[b, s, j + 1]
            lv_px[b, s, depth - 1] = 0
            lv_qty[b, s, depth - 1] = 0
        else:  # DeleteThru (every level) or DeleteFrom (the top lvl + 1 levels)
            k = lvl + 1
            for j in range(k):
                if lv_qty[b, s, j] > 0:
                    out[n, EV_PX] = lv_px[b, s, j]
                    out[n, EV_QTY] = 0
                    n += 1
            for j in range(depth):
                if j + k < depth:
                    lv_px[b, s, j] = lv_px[b, s, j + k]
                    lv_qty[b, s, j] = lv_qty[b, s, j + k]
                else:
                    lv_px[b, s, j] = 0
                    lv_qty[b, s, j] = 0
        for e in range(first, n):
            out[e, EV_ENTRY] = i
            out[e, EV_BOOK] = b
            out[e, EV_SIDE] = s
            out[e, EV_CLEAR] = 0
    return n
