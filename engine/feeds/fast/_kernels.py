# SPDX-License-Identifier: MIT
"""FAST decoding kernel: a template set compiled into an int64 program, decoded into columns.

:mod:`engine.feeds.fast.columnar` compiles a :class:`~engine.feeds.fast.templates.TemplateSet`
into a program (``prog``: ``int64[n, I_WIDTH]``, one row per field instruction, ``I_*``
columns) and a table of templates (``tmpl``: ``int64[n_templates, T_WIDTH]``). The kernel
:func:`decode_columns` walks the program over a buffer of messages and writes one row per
message into the table of its template, and one row per sequence element into the table of
that sequence (the *record kinds*). All tables live in one flat ``int64`` array ``out``:
kind ``k`` owns ``out[base[k] : base[k] + cap[k] * width[k]]``; the wrapper views each as a
structured array without copying.

Rows are not cleared, only their presence masks: a column of an absent field keeps what the
array held (zero in a fresh ``np.zeros`` array).
Row layout (every kind): ``msg`` (message number), ``offset`` (byte offset of the message),
``parent`` (row of the enclosing record, -1 for a message), presence masks (one bit per
field that may be absent), then the fields: integers one column, decimals two (mantissa,
exponent), strings two (where and how long: an offset into ``buf`` for a value read from
the message, its last byte still carrying the stop bit; ``len(buf)`` + an offset into
``heap`` for the others, ``heap`` starting with ``consts``), sequences two (element
count, first row in the child table), dynamic template references two (template id, row).

Dictionaries: ``dstate`` (``D_UNDEF``, ``D_EMPTY``, ``D_ASSIGNED``), ``dval`` (integer,
mantissa or string length), ``dexp`` (exponent) and ``dstr`` (string bytes, ``slot_bytes``
a slot), one entry per slot; they persist between calls and are mutated in place.

Statuses: ``ST_OK``; ``ST_STOP`` (stopped cleanly before a message for lack of output space:
call again from ``state[S_POS]`` with more room); ``ST_NEED_*`` (ran out of room inside a
message: the wrapper restores the dictionaries it saved and runs the call again with more
room); ``ERR_*`` (bad data at ``state[S_ERR_POS]``, instruction ``state[S_ERR_INS]``).

Why one long module: it is one interpreter, the program's ``I_*``/``T_*``/``S_*`` layouts and
the single :func:`decode_columns` loop that executes them, with every operator and value class
handled inline in that loop (splitting it into calls costs speed under numba).
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

#: Operators (``I_OP``); ``OP_SEQ``, ``OP_GROUP``, ``OP_DYNREF`` are structure, not fields.
OP_NONE: int = 0
OP_CONSTANT: int = 1
OP_DEFAULT: int = 2
OP_COPY: int = 3
OP_INCREMENT: int = 4
OP_DELTA: int = 5
OP_TAIL: int = 6
OP_SEQ: int = 7
OP_GROUP: int = 8
OP_DYNREF: int = 9

#: Value classes (``I_CLS``).
C_INT: int = 0  # signed integer
C_UINT: int = 1  # unsigned integer
C_DEC: int = 2  # decimal, one operator for both parts
C_ASCII: int = 3  # stop-bit string
C_BYTES: int = 4  # length-prefixed bytes (byteVector, unicode string)

#: Instruction columns.
I_OP: int = 0
I_CLS: int = 1
I_COL: int = 2  # first output column of the field in its row
I_SLOT: int = 3  # dictionary slot (-1: none)
I_NULL: int = 4  # the wire value is nullable
I_OPT: int = 5  # the field is optional
I_PBIT: int = 6  # presence bit in the row's masks (-1: always present)
I_HASINIT: int = 7  # the operator has an initial value
I_IV: int = 8  # initial integer / mantissa / constant bytes offset in ``consts``
I_IE: int = 9  # initial exponent / constant bytes length
I_LO: int = 10  # smallest valid integer value
I_HI: int = 11  # largest valid integer value (checked only for 32-bit types)
I_CHECK: int = 12  # 1: check I_LO..I_HI
I_CHILD: int = 13  # sequence: child kind
I_START: int = 14  # sequence / group: first instruction of the body
I_END: int = 15  # sequence / group: one past its last instruction
I_PMAP: int = 16  # sequence / group: the body starts with its own presence map
I_SKIP: int = 17  # decimal exponent: when absent, skip the mantissa instruction after it
I_USEBIT: int = 18  # the instruction reads a bit of the presence map
I_W64: int = 19  # a 64-bit integer: delta and increment check for overflow
I_WIDTH: int = 20

#: The program as the kernel reads it (:func:`pack_program`): eight words an instruction,
#: the small columns packed as bits of the first (one cache line an instruction).
P_FLAGS: int = 0
P_COL: int = 1
P_SLOT: int = 2
P_PBIT: int = 3
P_IV: int = 4  # I_IV, or I_CHILD of a sequence
P_IE: int = 5  # I_IE, or I_START of a sequence
P_LO: int = 6  # I_LO, or I_END of a sequence or group
P_HI: int = 7
P_WIDTH: int = 8
#: Bits of ``P_FLAGS``: operator (4 bits), value class (3 bits), then one bit each.
FL_CLS: int = 4
FL_NULL: int = 7
FL_OPT: int = 8
FL_USEBIT: int = 9
FL_SKIP: int = 10
FL_HASINIT: int = 11
FL_CHECK: int = 12
FL_PMAP: int = 13
FL_64: int = 14


def pack_program(prog: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Return the kernel's packed program (``int64[n, P_WIDTH]``) of ``int64[n, I_WIDTH]``."""
    out = np.zeros((prog.shape[0], P_WIDTH), np.int64)
    out[:, P_FLAGS] = (
        prog[:, I_OP]
        | prog[:, I_CLS] << FL_CLS
        | prog[:, I_NULL] << FL_NULL
        | prog[:, I_OPT] << FL_OPT
        | prog[:, I_USEBIT] << FL_USEBIT
        | prog[:, I_SKIP] << FL_SKIP
        | prog[:, I_HASINIT] << FL_HASINIT
        | prog[:, I_CHECK] << FL_CHECK
        | prog[:, I_PMAP] << FL_PMAP
        | prog[:, I_W64] << FL_64
    )
    out[:, P_COL] = prog[:, I_COL]
    out[:, P_SLOT] = prog[:, I_SLOT]
    out[:, P_PBIT] = prog[:, I_PBIT]
    seq = prog[:, I_OP] == OP_SEQ
    structure = prog[:, I_OP] >= OP_SEQ
    out[:, P_IV] = np.where(seq, prog[:, I_CHILD], prog[:, I_IV])
    out[:, P_IE] = np.where(seq, prog[:, I_START], prog[:, I_IE])
    out[:, P_LO] = np.where(structure, prog[:, I_END], prog[:, I_LO])
    out[:, P_HI] = prog[:, I_HI]
    return out


#: Template table columns.
T_ID: int = 0
T_KIND: int = 1
T_START: int = 2
T_END: int = 3
T_RESET: int = 4
T_WIDTH: int = 5

#: Kind table columns.
K_BASE: int = 0
K_WIDTH: int = 1
K_CAP: int = 2
K_NMASK: int = 3
K_COLS: int = 4

#: Row header columns.
R_MSG: int = 0
R_OFFSET: int = 1
R_PARENT: int = 2
R_MASK: int = 3

#: Dictionary entry states.
D_UNDEF: int = 0
D_EMPTY: int = 1
D_ASSIGNED: int = 2

#: ``state`` entries (``int64[S_WIDTH]``).
S_STATUS: int = 0
S_POS: int = 1  # end of the last complete message
S_NMSG: int = 2  # messages decoded in this call
S_ERR_POS: int = 3
S_ERR_INS: int = 4  # instruction index (-1: pmap or template id)
S_ERR_VAL: int = 5  # the offending value (template id, count, kind needing rows)
S_HEAP: int = 6  # heap bytes used
S_WIDTH: int = 8

ST_OK: int = 0
ST_STOP: int = 1
ST_NEED_ROWS: int = 2
ST_NEED_HEAP: int = 3
ST_NEED_SLOT: int = 4
ERR_CUT: int = 10  # an entity runs past the end of the buffer
ERR_LONG_INT: int = 11  # stop-bit integer over 10 bytes
ERR_UNKNOWN_TID: int = 12  # template id not in the set (D9)
ERR_NO_TID: int = 13  # template id absent and none before (D5)
ERR_PMAP_LONG: int = 14  # presence map over MAX_PMAP bytes
ERR_PMAP_OVERLONG: int = 15  # presence map ends in a byte without set bits (R7)
ERR_PMAP_BITS: int = 16  # presence map has more bits set than used (R8)
ERR_RANGE: int = 17  # integer outside its type (R4)
ERR_NO_VALUE: int = 18  # absent, no previous, no initial value (D5)
ERR_EMPTY_PREV: int = 19  # previous value empty where one is needed (D6)
ERR_SUBTRACT: int = 20  # delta/tail removes more than the base holds (D7)
ERR_EXPONENT: int = 21  # decimal exponent outside [-63, 63] (R1)
ERR_DEPTH: int = 22  # nesting deeper than the stack
ERR_BYTES: int = 23  # byte vector runs past the end
ERR_SEQ_LENGTH: int = 24  # more elements than bytes left, and more than MAX_EMPTY_SEQ
ERR_PACKET: int = 25  # a message runs past the end of its packet

#: Longest sequence accepted with more elements than bytes left (elements of constants only
#: take no bytes; a longer one in bad data would otherwise fill memory).
MAX_EMPTY_SEQ: int = 1 << 20
#: The smallest int64.
INT64_MIN: int = -(1 << 63)
#: The largest int64.
INT64_MAX: int = (1 << 63) - 1

#: Longest presence map accepted, in bytes.
MAX_PMAP: int = 64
#: Saved stack frame columns (the running frame is kept in local variables).
F_IP: int = 0
F_END: int = 1
F_KIND: int = 2
F_ROW: int = 3  # row number in the kind's table
F_ADDR: int = 4  # index of the row's first column in ``out``
F_PSTART: int = 5  # presence map: first byte
F_PBYTES: int = 6  # ... its length
F_PM: int = 7  # ... its first 63 bits as an integer (first bit highest)
F_PN: int = 8  # ... how many bits F_PM holds
F_PK: int = 9  # ... next bit to read
F_LEFT: int = 10  # sequence elements still to decode after this one
F_START: int = 11
F_HASPMAP: int = 12
F_PARENT: int = 13
F_WIDTH: int = 14


@kernel_inline
def _uint(buf: npt.NDArray[np.uint8], pos: int, n: int) -> tuple[int, int]:
    """Return (value, next position); next is -1 when cut off, -2 when over 10 bytes.

    A value of 10 bytes may need more than 64 bits: the caller checks with :func:`_wide`
    (kept out of this loop, which it slows by a quarter).
    """
    v = 0
    start = pos
    lim = min(pos + 10, n)
    while pos < lim:
        c = int(buf[pos])
        pos += 1
        v = (v << 7) | (c & 0x7F)
        if c & 0x80:
            return v, pos
    return v, -2 if pos - start >= 10 else -1


@kernel_inline
def _int(buf: npt.NDArray[np.uint8], pos: int, n: int) -> tuple[int, int]:
    """Return (signed value, next position) as :func:`_uint`."""
    v = 0
    if pos < n and buf[pos] & 0x40:
        v = -1
    start = pos
    lim = min(pos + 10, n)
    while pos < lim:
        c = int(buf[pos])
        pos += 1
        v = (v << 7) | (c & 0x7F)
        if c & 0x80:
            return v, pos
    return v, -2 if pos - start >= 10 else -1


@kernel_inline
def _wide(buf: npt.NDArray[np.uint8], start: int, signed: bool) -> bool:
    """Return whether the 10-byte integer at ``start`` needs more than 64 bits."""
    first = int(buf[start])
    if signed:  # bits 69..63 must all be the sign
        return first not in (0, 0x7F)
    return first > 1


@kernel_inline
def _int_error(p2: int) -> int:
    """Return the status of a failed :func:`_uint` / :func:`_int` read."""
    if p2 == -1:
        return ERR_CUT
    return ERR_LONG_INT if p2 == -2 else ERR_RANGE


@kernel_inline
def _add_overflows(base: int, d: int, r: int, signed: bool) -> bool:
    """Return whether ``r = base + d`` (64-bit, wrapped) overflowed int64 or uint64."""
    if signed:
        return ((base ^ r) & (d ^ r)) < 0
    # unsigned base plus a signed delta: compare as unsigned (sign bit flipped)
    if d >= 0:
        return (r ^ INT64_MIN) < (base ^ INT64_MIN)
    return (r ^ INT64_MIN) > (base ^ INT64_MIN)


@kernel_inline
def _bitat(buf: npt.NDArray[np.uint8], pm: int, pn: int, pstart: int, pbytes: int, k: int) -> int:
    """Return bit ``k`` of a presence map (0 past its end)."""
    if k < pn:
        return (pm >> (pn - 1 - k)) & 1
    if k < 7 * pbytes:
        return (int(buf[pstart + k // 7]) >> (6 - k % 7)) & 1
    return 0


@kernel_inline
def _pmap(buf: npt.NDArray[np.uint8], pos: int, n: int) -> tuple[int, int, int, int]:
    """Read a presence map.

    Returns (next position or -(error code), its first 63 bits as an integer, how many bits
    that holds, its length in bytes).
    """
    start = pos
    pm = 0
    while pos < n:
        c = int(buf[pos])
        pos += 1
        if pos - start <= 9:
            pm = (pm << 7) | (c & 0x7F)
        if c & 0x80:
            nb = pos - start
            if nb > 1 and c == 0x80:
                return -ERR_PMAP_OVERLONG, 0, 0, 0
            return pos, pm, min(7 * nb, 63), nb
        if pos - start >= MAX_PMAP:
            return -ERR_PMAP_LONG, 0, 0, 0
    return -ERR_CUT, 0, 0, 0


@kernel_inline
def _pmap_rest(
    buf: npt.NDArray[np.uint8], pm: int, pn: int, pstart: int, pbytes: int, k: int
) -> bool:
    """Return whether a presence map has a set bit from ``k`` on (more bits than used, R8)."""
    if k < pn:
        if pm & ((1 << (pn - k)) - 1):
            return True
        k = pn
    while k < 7 * pbytes:
        if (int(buf[pstart + k // 7]) >> (6 - k % 7)) & 1:
            return True
        k += 1
    return False


@kernel_inline
def _ascii_span(
    buf: npt.NDArray[np.uint8], pos: int, n: int, nullable: int
) -> tuple[int, int, int, int]:
    """Locate a stop-bit string: (null flag, source offset, length, next position or -code)."""
    start = pos
    while pos < n and not buf[pos] & 0x80:
        pos += 1
    if pos >= n:
        return 0, start, 0, -ERR_CUT
    pos += 1
    ln = pos - start
    lead0 = buf[start] == 0
    if nullable:
        if ln == 1 and buf[start] == 0x80:
            return 1, start, 0, pos
        if lead0 and ln <= 3:
            start += 1
            ln -= 1
    if ln == 1 and buf[start] == 0x80:
        return 0, start, 0, pos
    if ln == 2 and buf[start] == 0 and buf[start + 1] == 0x80:
        return 0, start, 1, pos  # the string "\0"
    return 0, start, ln, pos


@kernel_inline
def _str_span(
    buf: npt.NDArray[np.uint8], pos: int, n: int, cls: int, nullable: int
) -> tuple[int, int, int, int]:
    """Locate a string value: (null flag, source offset, length, next position or -code)."""
    if cls == C_ASCII:
        return _ascii_span(buf, pos, n, nullable)

    ln, p2 = _uint(buf, pos, n)
    if p2 < 0:
        return 0, pos, 0, -ERR_CUT if p2 == -1 else -ERR_LONG_INT
    if nullable:
        if ln == 0:
            return 1, p2, 0, p2
        ln -= 1
    if ln < 0 or ln > n - p2:  # a length over 63 bits wraps negative
        return 0, p2, 0, -ERR_BYTES
    return 0, p2, ln, p2 + ln


@kernel
def reset_dictionaries(dstate: npt.NDArray[np.int8]) -> None:
    """Set every dictionary entry to undefined (``dstate`` mutated in place)."""
    dstate[:] = D_UNDEF


@kernel
def decode_columns(  # noqa: C901  (one interpreter loop: splitting it costs speed)
    buf: npt.NDArray[np.uint8],
    start_pos: int,
    prog: npt.NDArray[np.int64],
    consts: npt.NDArray[np.uint8],
    tmpl: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    out: npt.NDArray[np.int64],
    heap: npt.NDArray[np.uint8],
    dstate: npt.NDArray[np.int8],
    dval: npt.NDArray[np.int64],
    dexp: npt.NDArray[np.int64],
    dstr: npt.NDArray[np.uint8],
    stack: npt.NDArray[np.int64],
    state: npt.NDArray[np.int64],
    msg_base: int,
    tid_slot: int,
    reset_tid: int,
    bounds: npt.NDArray[np.int64],
    reset_each: int,
) -> int:
    """Decode the messages of ``buf[start_pos:]`` into the kinds' tables; return the status.

    Parameters
    ----------
    buf : uint8[:]
        Messages back to back.
    prog, consts, tmpl, kinds : int64[:, P_WIDTH], uint8[:], int64[:, T_WIDTH], int64[:, K_COLS]
        The compiled template set (read only).
    rows : int64[n_kinds]
        Rows used per kind; rows are appended. Mutated in place.
    out, heap : int64[:], uint8[:]
        Output tables and string bytes (``state[S_HEAP]`` bytes used). Mutated in place.
    dstate, dval, dexp, dstr : int8[n_slots], int64[n_slots], int64[n_slots], uint8[n_slots, b]
        Dictionaries. Mutated in place.
    stack : int64[depth, F_WIDTH]
        Scratch: the frames a sequence, group or dynamic reference interrupts.
    state : int64[S_WIDTH]
        Written: status, end of the last complete message, message count, error details.
    msg_base : int
        Number of the first message (the ``msg`` column).
    tid_slot : int
        Dictionary slot of the template id.
    reset_tid : int
        Template id of the session-control Reset message (-1: none): resets, writes no row.
    bounds : int64[:]
        Offsets where packets start (sorted; empty: one stream). A message may not run past
        the start of the next packet (``ERR_PACKET``).
    reset_each : int
        1: reset the dictionaries at the start of each packet.
    """
    n = buf.shape[0]
    pos = start_pos
    nmsg = 0
    hp = state[S_HEAP]
    hcap = heap.shape[0]
    nkinds = kinds.shape[0]
    slot_bytes = dstr.shape[1]
    depth = stack.shape[0]
    status = ST_OK
    err_ins = -1
    err_val = 0
    err_pos = pos
    last_tid = -1
    last_t = -1
    state[S_POS] = start_pos
    # The running frame.
    ip = 0
    end = 0
    kind = 0
    row = 0
    addr = 0
    pstart = 0
    pbytes = 0
    pm = 0
    pn = 0
    pk = 0
    left = 0
    seg_start = 0
    haspmap = 0
    parent = -1
    # Rows free in the fullest table, less the rows taken since it was counted: a lower
    # bound on every table's free rows, counted again only when it runs low.
    free = 0
    nb = bounds.shape[0]
    nxt = np.searchsorted(bounds, start_pos)  # the next packet start at or after pos
    while pos < n:
        # Clean stop: keep room for a message in every table and in the heap.
        if free < 16:
            free = kinds[0, K_CAP] - rows[0]
            for kk in range(1, nkinds):
                free = min(free, kinds[kk, K_CAP] - rows[kk])
            if free < 16:
                status = ST_STOP
        if hcap - hp < 4096:
            status = ST_STOP
        if status != ST_OK:
            break
        msg_start = pos
        while nxt < nb and bounds[nxt] <= pos:  # a packet starts here
            if reset_each:
                dstate[:] = D_UNDEF
            nxt += 1
        sp = -1  # frames saved on the stack
        active = False  # whether a frame is running
        head = True  # a message head is next: pmap, template id, row
        dyn_addr = -1
        dyn_col = 0
        head_parent = -1
        err_ins = -1
        while True:
            if head:
                head = False
                err_pos = pos
                p2, hpm, hpn, hpb = _pmap(buf, pos, n)
                if p2 < 0:
                    status = -p2
                    break
                hps = pos
                pos = p2
                err_pos = pos
                if hpn > 0 and (hpm >> (hpn - 1)) & 1:
                    tid, p2 = _uint(buf, pos, n)
                    if p2 < 0:
                        status = _int_error(p2)
                        break
                    pos = p2
                    dstate[tid_slot] = D_ASSIGNED
                    dval[tid_slot] = tid
                elif dstate[tid_slot] == D_ASSIGNED:
                    tid = dval[tid_slot]
                else:
                    status = ERR_NO_TID
                    break
                if tid != last_tid:
                    last_t = -1
                    for t in range(tmpl.shape[0]):
                        if tmpl[t, T_ID] == tid:
                            last_t = t
                    last_tid = tid
                t = last_t
                if t < 0:
                    if tid == reset_tid and not active:
                        dstate[:] = D_UNDEF
                        break
                    status = ERR_UNKNOWN_TID
                    err_val = tid
                    break
                if tmpl[t, T_RESET]:
                    dstate[:] = D_UNDEF
                    dstate[tid_slot] = D_ASSIGNED
                    dval[tid_slot] = tid
                nk = tmpl[t, T_KIND]
                if rows[nk] >= kinds[nk, K_CAP]:
                    status = ST_NEED_ROWS
                    err_val = nk
                    break
                if active:  # a dynamic reference: save the referring frame
                    if sp + 1 >= depth:
                        status = ERR_DEPTH
                        break
                    sp += 1
                    f = stack[sp]
                    f[F_IP] = ip
                    f[F_END] = end
                    f[F_KIND] = kind
                    f[F_ROW] = row
                    f[F_ADDR] = addr
                    f[F_PSTART] = pstart
                    f[F_PBYTES] = pbytes
                    f[F_PM] = pm
                    f[F_PN] = pn
                    f[F_PK] = pk
                    f[F_LEFT] = left
                    f[F_START] = seg_start
                    f[F_HASPMAP] = haspmap
                    f[F_PARENT] = parent
                width = kinds[nk, K_WIDTH]
                naddr = kinds[nk, K_BASE] + rows[nk] * width
                out[naddr + R_MSG] = msg_base + nmsg
                for j in range(kinds[nk, K_NMASK]):  # masks only: rows are not cleared
                    out[naddr + R_MASK + j] = 0
                out[naddr + R_OFFSET] = msg_start
                out[naddr + R_PARENT] = head_parent
                if dyn_addr >= 0:
                    out[dyn_addr + dyn_col] = tid
                    out[dyn_addr + dyn_col + 1] = rows[nk]
                    dyn_addr = -1
                ip = tmpl[t, T_START]
                end = tmpl[t, T_END]
                kind = nk
                row = rows[nk]
                addr = naddr
                pstart = hps
                pbytes = hpb
                pm = hpm
                pn = hpn
                pk = 1
                left = 0
                seg_start = ip
                haspmap = 1
                parent = head_parent
                rows[nk] += 1
                free -= 1
                active = True
            # ---- end of a segment: next sequence element, or back to the saved frame ----
            if ip >= end:
                if haspmap and _pmap_rest(buf, pm, pn, pstart, pbytes, pk):
                    status = ERR_PMAP_BITS
                    err_pos = pstart
                    break
                if left > 0:
                    left -= 1
                    if rows[kind] >= kinds[kind, K_CAP]:
                        status = ST_NEED_ROWS
                        err_val = kind
                        break
                    width = kinds[kind, K_WIDTH]
                    addr = kinds[kind, K_BASE] + rows[kind] * width
                    out[addr + R_MSG] = msg_base + nmsg
                    for j in range(kinds[kind, K_NMASK]):  # masks only: rows are not cleared
                        out[addr + R_MASK + j] = 0
                    out[addr + R_OFFSET] = msg_start
                    out[addr + R_PARENT] = parent
                    row = rows[kind]
                    rows[kind] += 1
                    free -= 1
                    ip = seg_start
                    if haspmap:
                        err_pos = pos
                        p2, pm, pn, pbytes = _pmap(buf, pos, n)
                        if p2 < 0:
                            status = -p2
                            break
                        pstart = pos
                        pk = 0
                        pos = p2
                    continue
                if sp < 0:
                    break  # the message is complete
                f = stack[sp]
                sp -= 1
                ip = f[F_IP]
                end = f[F_END]
                kind = f[F_KIND]
                row = f[F_ROW]
                addr = f[F_ADDR]
                pstart = f[F_PSTART]
                pbytes = f[F_PBYTES]
                pm = f[F_PM]
                pn = f[F_PN]
                pk = f[F_PK]
                left = f[F_LEFT]
                seg_start = f[F_START]
                haspmap = f[F_HASPMAP]
                parent = f[F_PARENT]
                continue
            fl = prog[ip, P_FLAGS]
            op = fl & 15
            cls = (fl >> FL_CLS) & 7
            col = addr + prog[ip, P_COL]
            pbit = prog[ip, P_PBIT]
            err_pos = pos
            err_ins = ip
            cur = ip
            ip += 1
            bit = 0
            if (fl >> FL_USEBIT) & 1:
                bit = _bitat(buf, pm, pn, pstart, pbytes, pk)
                pk += 1
            present = True
            # ---- structure -------------------------------------------------------------
            if op >= OP_SEQ:
                if op == OP_DYNREF:
                    dyn_addr = addr
                    dyn_col = prog[cur, P_COL]
                    head_parent = row
                    head = True
                    continue
                if op == OP_GROUP:
                    if (fl >> FL_OPT) & 1 and not bit:
                        ip = prog[cur, P_LO]
                        continue
                    if pbit >= 0:
                        out[addr + R_MASK + (pbit >> 6)] |= 1 << (pbit & 63)
                    nstart = ip
                    nend = prog[cur, P_LO]
                    nkind = kind
                    naddr = addr
                    nrow = row
                    nparent = parent
                    ip = nend  # where the holder resumes
                    ncount = 0
                else:  # OP_SEQ
                    if pbit >= 0 and not (out[addr + R_MASK + (pbit >> 6)] >> (pbit & 63)) & 1:
                        continue
                    ncount = out[col]
                    nkind = prog[cur, P_IV]
                    out[col + 1] = rows[nkind]
                    if ncount <= 0:
                        continue
                    if ncount > n - pos and ncount > MAX_EMPTY_SEQ:
                        status = ERR_SEQ_LENGTH
                        err_val = ncount
                        break
                    if rows[nkind] >= kinds[nkind, K_CAP]:
                        status = ST_NEED_ROWS
                        err_val = nkind
                        break
                    width = kinds[nkind, K_WIDTH]
                    naddr = kinds[nkind, K_BASE] + rows[nkind] * width
                    out[naddr + R_MSG] = msg_base + nmsg
                    for j in range(kinds[nkind, K_NMASK]):  # masks only: rows are not cleared
                        out[naddr + R_MASK + j] = 0
                    out[naddr + R_OFFSET] = msg_start
                    out[naddr + R_PARENT] = row
                    nrow = rows[nkind]
                    rows[nkind] += 1
                    free -= 1
                    nparent = row
                    nstart = prog[cur, P_IE]
                    nend = prog[cur, P_LO]
                    ncount -= 1
                if sp + 1 >= depth:
                    status = ERR_DEPTH
                    break
                sp += 1
                f = stack[sp]
                f[F_IP] = ip
                f[F_END] = end
                f[F_KIND] = kind
                f[F_ROW] = row
                f[F_ADDR] = addr
                f[F_PSTART] = pstart
                f[F_PBYTES] = pbytes
                f[F_PM] = pm
                f[F_PN] = pn
                f[F_PK] = pk
                f[F_LEFT] = left
                f[F_START] = seg_start
                f[F_HASPMAP] = haspmap
                f[F_PARENT] = parent
                ip = nstart
                end = nend
                kind = nkind
                row = nrow
                addr = naddr
                left = ncount
                seg_start = nstart
                haspmap = (fl >> FL_PMAP) & 1
                parent = nparent
                if haspmap:
                    p2, pm, pn, pbytes = _pmap(buf, pos, n)
                    if p2 < 0:
                        status = -p2
                        break
                    pstart = pos
                    pk = 0
                    pos = p2
                continue
            # ---- fields ----------------------------------------------------------------
            nullable = (fl >> FL_NULL) & 1
            slot = prog[cur, P_SLOT]
            if cls <= C_UINT:
                v = 0
                if op == OP_NONE or (op == OP_DEFAULT and bit):
                    if cls == C_INT:
                        v, p2 = _int(buf, pos, n)
                    else:
                        v, p2 = _uint(buf, pos, n)
                    if p2 < 0:
                        status = _int_error(p2)
                        break
                    if p2 - pos == 10 and _wide(buf, pos, cls == C_INT):
                        status = ERR_RANGE
                        break
                    pos = p2
                    if nullable:
                        if v == 0:
                            present = False
                        elif cls == C_UINT or v > 0:
                            v -= 1
                elif op == OP_DELTA:
                    v, p2 = _int(buf, pos, n)
                    if p2 < 0:
                        status = _int_error(p2)
                        break
                    if p2 - pos == 10 and _wide(buf, pos, True):
                        status = ERR_RANGE
                        break
                    pos = p2
                    if nullable and v == 0:
                        present = False
                    else:
                        if nullable and v > 0:
                            v -= 1
                        st = dstate[slot]
                        base = 0
                        if st == D_ASSIGNED:
                            base = dval[slot]
                        elif st == D_EMPTY:
                            status = ERR_EMPTY_PREV
                            break
                        elif (fl >> FL_HASINIT) & 1:
                            base = prog[cur, P_IV]
                        d = v
                        v = base + d
                        if (fl >> FL_64) & 1 and _add_overflows(base, d, v, cls == C_INT):
                            status = ERR_RANGE
                            err_val = d
                            break
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = v
                elif op in (OP_DEFAULT, OP_CONSTANT):
                    if op == OP_CONSTANT and (fl >> FL_OPT) & 1 and not bit:
                        present = False
                    elif (fl >> FL_HASINIT) & 1:
                        v = prog[cur, P_IV]
                    else:
                        present = False
                elif bit:  # copy / increment, value in the stream
                    if cls == C_INT:
                        v, p2 = _int(buf, pos, n)
                    else:
                        v, p2 = _uint(buf, pos, n)
                    if p2 < 0:
                        status = _int_error(p2)
                        break
                    if p2 - pos == 10 and _wide(buf, pos, cls == C_INT):
                        status = ERR_RANGE
                        break
                    pos = p2
                    if nullable:
                        if v == 0:
                            present = False
                        elif cls == C_UINT or v > 0:
                            v -= 1
                    if present:
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = v
                    else:
                        dstate[slot] = D_EMPTY
                else:  # copy / increment, value from the dictionary
                    st = dstate[slot]
                    if st == D_ASSIGNED:
                        v = dval[slot]
                        if op == OP_INCREMENT:
                            if (fl >> FL_64) & 1 and v == (INT64_MAX if cls == C_INT else -1):
                                status = ERR_RANGE
                                err_val = v
                                break
                            v += 1
                            dval[slot] = v
                    elif st == D_EMPTY:
                        if not (fl >> FL_OPT) & 1:
                            status = ERR_EMPTY_PREV
                            break
                        present = False
                    elif (fl >> FL_HASINIT) & 1:
                        v = prog[cur, P_IV]
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = v
                    elif (fl >> FL_OPT) & 1:
                        present = False
                        dstate[slot] = D_EMPTY
                    else:
                        status = ERR_NO_VALUE
                        break
                if present:
                    if (fl >> FL_CHECK) & 1 and (v < prog[cur, P_LO] or v > prog[cur, P_HI]):
                        status = ERR_RANGE
                        err_val = v
                        break
                    out[col] = v
            elif cls == C_DEC:
                e = 0
                m = 0
                fresh = False
                if op == OP_NONE or ((op in (OP_DEFAULT, OP_COPY)) and bit):
                    fresh = True
                elif op in (OP_DEFAULT, OP_CONSTANT):
                    if op == OP_CONSTANT and (fl >> FL_OPT) & 1 and not bit:
                        present = False
                    elif (fl >> FL_HASINIT) & 1:
                        e = prog[cur, P_IE]
                        m = prog[cur, P_IV]
                    else:
                        present = False
                elif op == OP_DELTA:
                    e, p2 = _int(buf, pos, n)
                    if p2 < 0:
                        status = _int_error(p2)
                        break
                    if p2 - pos == 10 and _wide(buf, pos, True):
                        status = ERR_RANGE
                        break
                    pos = p2
                    if nullable and e == 0:
                        present = False
                    else:
                        if nullable and e > 0:
                            e -= 1
                        m, p2 = _int(buf, pos, n)
                        if p2 < 0:
                            status = _int_error(p2)
                            break
                        if p2 - pos == 10 and _wide(buf, pos, True):
                            status = ERR_RANGE
                            break
                        pos = p2
                        st = dstate[slot]
                        be = 0
                        bm = 0
                        if st == D_ASSIGNED:
                            be = dexp[slot]
                            bm = dval[slot]
                        elif st == D_EMPTY:
                            status = ERR_EMPTY_PREV
                            break
                        elif (fl >> FL_HASINIT) & 1:
                            be = prog[cur, P_IE]
                            bm = prog[cur, P_IV]
                        e += be
                        dm = m
                        m = bm + dm
                        if _add_overflows(bm, dm, m, True):
                            status = ERR_RANGE
                            err_val = dm
                            break
                        if e < -63 or e > 63:
                            status = ERR_EXPONENT
                            err_val = e
                            break
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = m
                        dexp[slot] = e
                else:  # copy, value from the dictionary
                    st = dstate[slot]
                    if st == D_ASSIGNED:
                        e = dexp[slot]
                        m = dval[slot]
                    elif st == D_EMPTY:
                        if not (fl >> FL_OPT) & 1:
                            status = ERR_EMPTY_PREV
                            break
                        present = False
                    elif (fl >> FL_HASINIT) & 1:
                        e = prog[cur, P_IE]
                        m = prog[cur, P_IV]
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = m
                        dexp[slot] = e
                    elif (fl >> FL_OPT) & 1:
                        present = False
                        dstate[slot] = D_EMPTY
                    else:
                        status = ERR_NO_VALUE
                        break
                if fresh:
                    e, p2 = _int(buf, pos, n)
                    if p2 < 0:
                        status = _int_error(p2)
                        break
                    if p2 - pos == 10 and _wide(buf, pos, True):
                        status = ERR_RANGE
                        break
                    pos = p2
                    if nullable and e == 0:
                        present = False
                    else:
                        if nullable and e > 0:
                            e -= 1
                        if e < -63 or e > 63:
                            status = ERR_EXPONENT
                            err_val = e
                            break
                        m, p2 = _int(buf, pos, n)
                        if p2 < 0:
                            status = _int_error(p2)
                            break
                        if p2 - pos == 10 and _wide(buf, pos, True):
                            status = ERR_RANGE
                            break
                        pos = p2
                    if op == OP_COPY:
                        if present:
                            dstate[slot] = D_ASSIGNED
                            dval[slot] = m
                            dexp[slot] = e
                        else:
                            dstate[slot] = D_EMPTY
                if present:
                    out[col] = m
                    out[col + 1] = e
            else:
                # ---- strings: the column holds where the value is: an offset into buf
                # (read from this message), or n + an offset into heap (constants, values
                # from the dictionary and built by delta or tail) ------------------------
                ln = 0
                ref = 0
                room = hcap - hp
                if op == OP_NONE or (op == OP_DEFAULT and bit) or (op == OP_COPY and bit):
                    isnull, src, ln, p2 = _str_span(buf, pos, n, cls, nullable)
                    if p2 < 0:
                        status = -p2
                        break
                    pos = p2
                    ref = src
                    if isnull:
                        present = False
                        if op == OP_COPY:
                            dstate[slot] = D_EMPTY
                    elif op == OP_COPY:
                        if ln > slot_bytes:
                            status = ST_NEED_SLOT
                            break
                        dstr[slot, :ln] = buf[src : src + ln]
                        if cls == C_ASCII and ln > 0:
                            dstr[slot, ln - 1] &= 0x7F
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = ln
                elif op in (OP_DEFAULT, OP_CONSTANT):
                    if op == OP_CONSTANT and (fl >> FL_OPT) & 1 and not bit:
                        present = False
                    elif (fl >> FL_HASINIT) & 1:
                        ln = prog[cur, P_IE]
                        ref = n + prog[cur, P_IV]
                    else:
                        present = False
                elif op == OP_DELTA or (op == OP_TAIL and bit):
                    sub = 0
                    if op == OP_DELTA:
                        sub, p2 = _int(buf, pos, n)
                        if p2 < 0:
                            status = _int_error(p2)
                            break
                        if p2 - pos == 10 and _wide(buf, pos, True):
                            status = ERR_RANGE
                            break
                        pos = p2
                        if nullable:
                            if sub == 0:
                                present = False
                            elif sub > 0:
                                sub -= 1
                    isnull = 0
                    src = pos
                    dl = 0
                    if present:
                        isnull, src, dl, p2 = _str_span(
                            buf, pos, n, cls, nullable if op == OP_TAIL else 0
                        )
                        if p2 < 0:
                            status = -p2
                            break
                        pos = p2
                    if isnull:  # a NULL tail empties the entry
                        present = False
                        dstate[slot] = D_EMPTY
                    elif present:
                        st = dstate[slot]
                        # the base: previous value, else the initial value, else empty
                        from_dict = st == D_ASSIGNED
                        boff = 0
                        blen = 0
                        if from_dict:
                            blen = dval[slot]
                        elif st == D_EMPTY and op == OP_DELTA:
                            status = ERR_EMPTY_PREV
                            break
                        elif (fl >> FL_HASINIT) & 1:
                            boff = prog[cur, P_IV]
                            blen = prog[cur, P_IE]
                        front = False
                        if op == OP_TAIL:
                            cut = dl if dl <= blen else blen
                        else:
                            front = sub < 0
                            cut = -sub - 1 if front else sub
                            if cut > blen:
                                status = ERR_SUBTRACT
                                err_val = cut
                                break
                        ln = blen - cut + dl
                        if ln > slot_bytes:
                            status = ST_NEED_SLOT
                            break
                        if ln > room:
                            status = ST_NEED_HEAP
                            break
                        # the kept part of the base, then (or before it) the new bytes
                        keep0 = cut if front else 0
                        at = hp + dl if front else hp
                        if from_dict:
                            heap[at : at + blen - cut] = dstr[slot, keep0 : keep0 + blen - cut]
                        else:
                            heap[at : at + blen - cut] = consts[
                                boff + keep0 : boff + keep0 + blen - cut
                            ]
                        at = hp if front else hp + blen - cut
                        heap[at : at + dl] = buf[src : src + dl]
                        if cls == C_ASCII and dl > 0:
                            heap[at + dl - 1] &= 0x7F
                        dstr[slot, :ln] = heap[hp : hp + ln]
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = ln
                        ref = n + hp
                        hp += ln
                else:  # copy / tail, value from the dictionary
                    st = dstate[slot]
                    if st == D_ASSIGNED:
                        ln = dval[slot]
                        if ln > room:
                            status = ST_NEED_HEAP
                            break
                        heap[hp : hp + ln] = dstr[slot, :ln]
                        ref = n + hp
                        hp += ln
                    elif st == D_EMPTY:
                        if not nullable:
                            status = ERR_EMPTY_PREV
                            break
                        present = False
                    elif (fl >> FL_HASINIT) & 1:
                        ln = prog[cur, P_IE]
                        c0 = prog[cur, P_IV]
                        dstr[slot, :ln] = consts[c0 : c0 + ln]
                        dstate[slot] = D_ASSIGNED
                        dval[slot] = ln
                        ref = n + c0
                    elif nullable:
                        present = False
                        dstate[slot] = D_EMPTY
                    else:
                        status = ERR_NO_VALUE
                        break
                if present:
                    out[col] = ref
                    out[col + 1] = ln
            if present:
                if pbit >= 0:
                    out[addr + R_MASK + (pbit >> 6)] |= 1 << (pbit & 63)
            elif (fl >> FL_SKIP) & 1:
                ip += 1
        if status == ST_OK and nxt < nb and pos > bounds[nxt]:
            status = ERR_PACKET
            err_pos = msg_start
            err_ins = -1
        if status != ST_OK:
            break
        nmsg += 1
        state[S_POS] = pos
        state[S_HEAP] = hp
    if status == ST_OK:
        state[S_POS] = pos
        state[S_HEAP] = hp
    state[S_STATUS] = status
    state[S_NMSG] = nmsg
    state[S_ERR_POS] = err_pos
    state[S_ERR_INS] = err_ins
    state[S_ERR_VAL] = err_val
    return status
