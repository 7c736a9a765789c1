# SPDX-License-Identifier: MIT
"""FIX framing and tokenizing kernels over ``uint8`` buffers.

The inbound hot path: one call frames every complete message in a buffer, verifies BodyLength
<9> and CheckSum <10>, checks that the first three fields are ``8``, ``9``, ``35`` and writes the
tag and value offsets of every field into caller-owned arrays. No Python objects are created.
The framing kernels take the received ``bytes`` themselves (numba reads them as a read-only
``uint8`` array).

One module for framing, the header reader, the layout checks and the store walk: they share
the byte-level helpers and the frame table's columns, and numba compiles a kernel with the
helpers it calls, so keeping them together keeps every call a compiled one.
"""

from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline, kernel_keep_gil

#: Frame status codes written to column ``MSG_STATUS`` of the message table.
FRAME_OK: int = 0
#: BodyLength <9> does not match the bytes between it and CheckSum <10>.
FRAME_BAD_LENGTH: int = 1
#: CheckSum <10> is not three digits or does not match the bytes.
FRAME_BAD_CHECKSUM: int = 2
#: A field is not ``tag=value<SOH>`` with a numeric tag.
FRAME_BAD_FIELD: int = 3
#: The first three fields are not BeginString, BodyLength, MsgType.
FRAME_BAD_ORDER: int = 4
#: Bytes that do not start a message (skipped up to the next ``8=``).
FRAME_JUNK: int = 5
#: BodyLength <9> missing or not a number.
FRAME_NO_LENGTH: int = 6

#: Columns of the message table (int64[:, MSG_COLUMNS]).
MSG_START: int = 0
MSG_END: int = 1
MSG_FIRST_FIELD: int = 2
MSG_FIELD_COUNT: int = 3
MSG_STATUS: int = 4
#: The session header as the framing kernel read it, when given what to expect (see
#: :func:`read_header`): ``HEAD_*`` flags, MsgSeqNum <34> and SendingTime <52> in ns.
MSG_HEAD: int = 5
MSG_SEQ: int = 6
MSG_SENT: int = 7
MSG_COLUMNS: int = 8

#: ``MSG_HEAD`` flags. The header is in the standard layout 8, 9, 35, 34, 49, 52, 56.
HEAD_STANDARD: int = 1
#: BeginString <8> is the expected one.
HEAD_BEGIN: int = 2
#: SenderCompID <49> and TargetCompID <56> are the expected ones.
HEAD_COMP_IDS: int = 4
#: MsgSeqNum <34> is digits and fits ``MSG_SEQ``.
HEAD_SEQ: int = 8
#: SendingTime <52> is a valid UTCTimestamp, ``MSG_SENT`` its ns since the epoch.
HEAD_SENT: int = 16
#: MsgType <35> is a session-level (admin) type.
HEAD_ADMIN: int = 32
#: What a message needs to take the session's compiled fast path (CompIDs aside: optional).
HEAD_FAST: int = HEAD_STANDARD | HEAD_BEGIN | HEAD_SEQ | HEAD_SENT

_SOH = 1
_EQ = 61
_ZERO = 48
_NINE = 57
_MINUS = 45
_EIGHT = 56
_ONE = 49
#: A begin string or body length longer than this is garbage, not a slow sender.
_MAX_HEAD = 64
#: How far past the declared end CheckSum <10> is searched before giving up on the frame.
_MAX_TRAILER_SEARCH = 1 << 20
#: Byte positions are cast to unsigned where they index: numba then skips the negative-index
#: wraparound test of every access, and the checksum loop vectorizes (framing and tokenizing
#: a 208-byte ExecutionReport went from 380 to ~220 ns). Positions are never negative.
_U = np.uint64


@kernel_inline
def _find_start(buf: bytes, pos: int, n: int) -> int:
    # "8=" at the buffer start (a known boundary) or right after an SOH.
    i = pos
    while i + 1 < n:
        if buf[_U(i)] == _EIGHT and buf[_U(i + 1)] == _EQ and (i == 0 or buf[_U(i - 1)] == _SOH):
            return i
        i += 1
    return -1


@kernel_inline
def _tokenize(
    buf: bytes,
    start: int,
    end: int,
    fields: npt.NDArray[np.int64],
    nf: int,
    data_tags: npt.NDArray[np.int64],
) -> int:
    # Returns the new field count, or -1 when a field is malformed.
    i = start
    k = nf
    want_tag = -1  # DATA field announced by the LENGTH field just read
    want_len = 0
    ndt = data_tags.shape[0]
    while i < end:
        neg = False
        if buf[_U(i)] == _MINUS:
            neg = True
            i += 1
        tag = 0
        digits = 0
        # No bound checks in the two scans: the frame's last byte is an SOH, which stops both.
        ch = buf[_U(i)]
        while _ZERO <= ch <= _NINE:
            tag = tag * 10 + (int(ch) - _ZERO)
            digits += 1
            i += 1
            ch = buf[_U(i)]
        if digits == 0 or digits > 9 or ch != _EQ:
            return -1
        i += 1
        vs = i
        if not neg and tag == want_tag and vs + want_len < end and buf[_U(vs + want_len)] == _SOH:
            # Raw data: exactly the announced number of bytes, SOH included.
            i = vs + want_len
        else:
            while buf[_U(i)] != _SOH:
                i += 1
        want_tag = -1
        if not neg and tag < ndt and data_tags[tag] > 0:
            length = 0
            ok = i > vs and i - vs < 10
            for j in range(vs, i):
                c = int(buf[_U(j)]) - _ZERO
                if c < 0 or c > 9:
                    ok = False
                    break
                length = length * 10 + c
            if ok:
                want_tag = data_tags[tag]
                want_len = length
        fields[0, _U(k)] = -tag if neg else tag
        fields[1, _U(k)] = vs - start  # relative to the frame: small numbers, cheap to hand over
        fields[2, _U(k)] = i - start
        k += 1
        i += 1
    return k


def header_expectation(begin: bytes, sender: bytes, target: bytes) -> npt.NDArray[np.uint8]:
    """Return what :func:`read_header` compares a header with (each value at most 255 bytes).

    ``sender`` is the SenderCompID <49> expected of the counterparty (our TargetCompID),
    ``target`` its TargetCompID <56> (our SenderCompID).
    """
    if max(len(begin), len(sender), len(target)) > 255:
        raise ValueError("BeginString and CompIDs longer than 255 bytes are not compared here")
    head = bytes((len(begin), len(sender), len(target)))
    return np.frombuffer(head + begin + sender + target, dtype=np.uint8).copy()


@kernel_inline
def _time_ok(year: int, month: int, day: int, hh: int, mi: int, sec: int) -> bool:
    # A real date (proleptic Gregorian) and time of day, leap second allowed; scalars only, so
    # inlined at no cost (a helper handed arrays costs their reference counts).
    if not 1 <= month <= 12 or day < 1 or hh > 23 or mi > 59 or sec > 60:
        return False
    if month == 2:
        return day <= (29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28)
    if month in (4, 6, 9, 11):
        return day <= 30
    return day <= 31


@kernel
def _days_from_civil(y: int, m: int, d: int) -> int:
    # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    if m <= 2:
        y -= 1
    era = y // 400
    yoe = y - era * 400
    mp = m - 3 if m > 2 else m + 9
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@kernel_inline
def read_header(  # noqa: C901  (the header read flat: helpers cost their reference counts)
    buf: bytes,
    s: int,
    fields: npt.NDArray[np.int64],
    f: int,
    count: int,
    expect: npt.NDArray[np.uint8],
    msgs: npt.NDArray[np.int64],
    row: int,
) -> None:
    """Read the session header of the frame at ``s`` into ``msgs[row]``.

    The frame's fields are ``f`` … ``f + count``; written: ``MSG_HEAD`` flags, ``MSG_SEQ``
    and ``MSG_SENT``. The session's fast path (``FixSession``) takes a message on these flags
    and numbers instead of slicing and parsing its header in Python; a flag not set sends the
    message down the full path, which decides exactly as before.
    """
    # Written flat: a helper handed ``buf`` or ``expect`` costs its reference counts on
    # every message (the header's read went from ~115 to ~72 ns; docs/kernels.md).
    flags = 0
    seq = 0
    sent = 0
    if (
        count >= 7
        and fields[0, _U(f)] == 8
        and fields[0, _U(f + 1)] == 9
        and fields[0, _U(f + 2)] == 35
        and fields[0, _U(f + 3)] == 34
        and fields[0, _U(f + 4)] == 49
        and fields[0, _U(f + 5)] == 52
        and fields[0, _U(f + 6)] == 56
    ):
        flags = HEAD_STANDARD
        nb = int(expect[0])
        ns = int(expect[1])
        nt = int(expect[2])
        # BeginString, then SenderCompID and TargetCompID, against the expectation.
        a = s + fields[1, _U(f)]
        same = s + fields[2, _U(f)] - a == nb
        if same:
            for j in range(nb):
                if buf[_U(a + j)] != expect[_U(3 + j)]:
                    same = False
                    break
        if same:
            flags |= HEAD_BEGIN
        a = s + fields[1, _U(f + 4)]
        same = s + fields[2, _U(f + 4)] - a == ns
        if same:
            for j in range(ns):
                if buf[_U(a + j)] != expect[_U(3 + nb + j)]:
                    same = False
                    break
        if same:
            a = s + fields[1, _U(f + 6)]
            same = s + fields[2, _U(f + 6)] - a == nt
            if same:
                for j in range(nt):
                    if buf[_U(a + j)] != expect[_U(3 + nb + ns + j)]:
                        same = False
                        break
        if same:
            flags |= HEAD_COMP_IDS
        a = s + fields[1, _U(f + 3)]
        b = s + fields[2, _U(f + 3)]
        if 0 < b - a <= 18:
            ok = True
            for j in range(a, b):
                c = int(buf[_U(j)]) - _ZERO
                if c < 0 or c > 9:
                    ok = False
                    break
                seq = seq * 10 + c
            if ok:
                flags |= HEAD_SEQ
            else:
                seq = 0
        a = s + fields[1, _U(f + 2)]
        b = s + fields[2, _U(f + 2)]
        if b - a == 1:
            c = buf[_U(a)]
            if _ZERO <= c <= 53 or c == 65:  # "0" ... "5", "A"
                flags |= HEAD_ADMIN
        # SendingTime <52> as ns since the epoch: what validation accepts as a UTCTimestamp
        # (YYYYMMDD-HH:MM:SS[.f{1,9}], a real date) from 1970 to 2261 (int64 ns; the rest is
        # left to Python).
        a = s + fields[1, _U(f + 5)]
        b = s + fields[2, _U(f + 5)]
        n = b - a
        if (
            (n == 17 or 19 <= n <= 27)
            and buf[_U(a + 8)] == _MINUS
            and buf[_U(a + 11)] == 58
            and buf[_U(a + 14)] == 58
            and (n == 17 or buf[_U(a + 17)] == 46)
        ):
            ok = True
            for j in range(a, b):
                r = j - a
                if r != 8 and r != 11 and r != 14 and r != 17:
                    c = buf[_U(j)]
                    if not _ZERO <= c <= _NINE:
                        ok = False
                        break
            if ok:
                year = 0
                for j in range(a, a + 4):
                    year = year * 10 + int(buf[_U(j)]) - _ZERO
                month = (int(buf[_U(a + 4)]) - _ZERO) * 10 + int(buf[_U(a + 5)]) - _ZERO
                day = (int(buf[_U(a + 6)]) - _ZERO) * 10 + int(buf[_U(a + 7)]) - _ZERO
                hh = (int(buf[_U(a + 9)]) - _ZERO) * 10 + int(buf[_U(a + 10)]) - _ZERO
                mi = (int(buf[_U(a + 12)]) - _ZERO) * 10 + int(buf[_U(a + 13)]) - _ZERO
                sec = (int(buf[_U(a + 15)]) - _ZERO) * 10 + int(buf[_U(a + 16)]) - _ZERO
                if 1678 <= year <= 2261 and _time_ok(year, month, day, hh, mi, sec):
                    frac = 0
                    for j in range(a + 18, b):
                        frac = frac * 10 + int(buf[_U(j)]) - _ZERO
                    for _ in range(27 - n if n > 17 else 9):
                        frac *= 10
                    days = _days_from_civil(year, month, day)
                    sent = (((days * 24 + hh) * 60 + mi) * 60 + sec) * 1_000_000_000 + frac
                    if sent >= 0:
                        flags |= HEAD_SENT
                    else:  # before 1970: left to Python, as ever
                        sent = 0
    msgs[row, MSG_HEAD] = flags
    msgs[row, MSG_SEQ] = seq
    msgs[row, MSG_SENT] = sent


@kernel_inline
def scan_frames(  # noqa: C901  (one pass, one kernel: splitting costs calls)
    buf: bytes,
    n: int,
    msgs: npt.NDArray[np.int64],
    fields: npt.NDArray[np.int64],
    data_tags: npt.NDArray[np.int64],
    expect: npt.NDArray[np.uint8],
) -> tuple[int, int, int]:
    """Frame, verify and tokenize the FIX messages in ``buf[:n]``.

    A frame starts at ``8=`` (at offset 0 or after an SOH), declares its BodyLength, and ends
    at the SOH after the first ``<SOH>10=`` found from the declared end of the body on (the
    way QuickFIX's parser frames, so a BodyLength that is too long swallows what follows).
    Frames that fail a check are reported with a non-zero status and no fields.

    Parameters
    ----------
    buf : bytes
        Received bytes (``bytes`` rather than a numpy view: numba takes them as they are, and
        every argument it checks costs the call time; a ``uint8`` array works too).
    n : int
        Number of valid bytes in ``buf``.
    msgs : int64[:, MSG_COLUMNS]
        Output, one row per frame (start, end, first field, field count, status). Mutated.
    fields : int64[3, :]
        Output per field (one column each): tag number (negative when written with a minus
        sign) and value offsets ``[start, end)`` relative to the start of the field's frame.
        Mutated.
    data_tags : int64[:]
        ``data_tags[length_tag]`` is the DATA tag whose byte count ``length_tag`` gives
        (RawDataLength <95> -> RawData <96>), 0 elsewhere; such values may contain SOH.
    expect : uint8[:]
        The session header to expect (:func:`header_expectation`), or empty: then columns
        ``MSG_HEAD`` … ``MSG_SENT`` of a good frame are 0. Otherwise they hold what
        :func:`read_header` found.

    Returns
    -------
    tuple of int
        ``(frames written, fields written, bytes consumed)``; bytes after ``consumed`` are an
        incomplete message to be scanned again with more data.
    """
    max_msgs = msgs.shape[0]
    max_fields = fields.shape[1]
    pos = 0
    nm = 0
    nf = 0
    while pos < n and nm < max_msgs:
        s = _find_start(buf, pos, n)
        if s < 0:
            # Keep the last two bytes: they may be the beginning of "<SOH>8=".
            keep_from = n - 2 if n - 2 > pos else pos
            if keep_from > pos:
                msgs[nm, 0] = pos
                msgs[nm, 1] = keep_from
                msgs[nm, 2] = nf
                msgs[nm, 3] = 0
                msgs[nm, 4] = FRAME_JUNK
                nm += 1
            return nm, nf, keep_from
        if s > pos:
            msgs[nm, 0] = pos
            msgs[nm, 1] = s
            msgs[nm, 2] = nf
            msgs[nm, 3] = 0
            msgs[nm, 4] = FRAME_JUNK
            nm += 1
            pos = s
            if nm >= max_msgs:
                break
        # BeginString value.
        i = s + 2
        while i < n and buf[_U(i)] != _SOH and i - s < _MAX_HEAD:
            i += 1
        if i >= n:
            return nm, nf, s
        if buf[_U(i)] != _SOH:
            msgs[nm, 0] = s
            msgs[nm, 1] = s + 1
            msgs[nm, 2] = nf
            msgs[nm, 3] = 0
            msgs[nm, 4] = FRAME_NO_LENGTH
            nm += 1
            pos = s + 1
            continue
        # "9=<digits><SOH>"
        if i + 3 > n:
            return nm, nf, s
        if buf[_U(i + 1)] != 57 or buf[_U(i + 2)] != _EQ:
            msgs[nm, 0] = s
            msgs[nm, 1] = s + 1
            msgs[nm, 2] = nf
            msgs[nm, 3] = 0
            msgs[nm, 4] = FRAME_NO_LENGTH
            nm += 1
            pos = s + 1
            continue
        j = i + 3
        length = 0
        digits = 0
        while j < n and _ZERO <= buf[_U(j)] <= _NINE and digits < 10:
            length = length * 10 + (int(buf[_U(j)]) - _ZERO)
            digits += 1
            j += 1
        if j >= n:
            return nm, nf, s
        if buf[_U(j)] != _SOH or digits == 0:
            msgs[nm, 0] = s
            msgs[nm, 1] = s + 1
            msgs[nm, 2] = nf
            msgs[nm, 3] = 0
            msgs[nm, 4] = FRAME_NO_LENGTH
            nm += 1
            pos = s + 1
            continue
        body = j + 1
        q = body + length - 1
        if q + 4 > n:
            return nm, nf, s
        # First "<SOH>10=" from the declared end of the body on.
        t = -1
        while q + 3 < n and q - body - length < _MAX_TRAILER_SEARCH:
            if (
                buf[_U(q)] == _SOH
                and buf[_U(q + 1)] == _ONE
                and buf[_U(q + 2)] == _ZERO
                and buf[_U(q + 3)] == _EQ
            ):
                t = q
                break
            q += 1
        if t < 0:
            if q - body - length >= _MAX_TRAILER_SEARCH:
                msgs[nm, 0] = s
                msgs[nm, 1] = q
                msgs[nm, 2] = nf
                msgs[nm, 3] = 0
                msgs[nm, 4] = FRAME_BAD_LENGTH
                nm += 1
                pos = q
                continue
            return nm, nf, s
        e = t + 4
        while e < n and buf[_U(e)] != _SOH:
            e += 1
        if e >= n:
            return nm, nf, s
        end = e + 1
        if max_fields - nf < (end - s) // 2 + 1:
            # Not enough room for the worst case: let the caller grow the arrays.
            return nm, nf, s
        msgs[nm, 0] = s
        msgs[nm, 1] = end
        msgs[nm, 2] = nf
        msgs[nm, 3] = 0
        status = FRAME_OK
        if t + 1 - body != length:
            status = FRAME_BAD_LENGTH
        else:
            total = 0
            for b in range(s, t + 1):
                total += int(buf[_U(b)])
            if e - (t + 4) != 3:
                status = FRAME_BAD_CHECKSUM
            else:
                c0 = int(buf[_U(t + 4)]) - _ZERO
                c1 = int(buf[_U(t + 5)]) - _ZERO
                c2 = int(buf[_U(t + 6)]) - _ZERO
                if (
                    not (0 <= c0 <= 9 and 0 <= c1 <= 9 and 0 <= c2 <= 9)
                    or c0 * 100 + c1 * 10 + c2 != total % 256
                ):
                    status = FRAME_BAD_CHECKSUM
        if status == FRAME_OK:
            k = _tokenize(buf, s, end, fields, nf, data_tags)
            if k < 0:
                status = FRAME_BAD_FIELD
            elif (
                k - nf < 4
                or fields[0, nf] != 8
                or fields[0, nf + 1] != 9
                or fields[0, nf + 2] != 35
            ):
                status = FRAME_BAD_ORDER
            else:
                msgs[nm, 3] = k - nf
                if expect.shape[0] > 0:
                    read_header(buf, s, fields, nf, k - nf, expect, msgs, nm)
                else:
                    msgs[nm, MSG_HEAD] = 0
                nf = k
        msgs[nm, 4] = status
        nm += 1
        pos = end
    return nm, nf, pos


# ------------------------------------------------------------------ layout programs
#: ``check_layouts`` results, added to the table's base (its generation times 4).
LAYOUT_UNKNOWN: int = 0
LAYOUT_VALID: int = 1
LAYOUT_UNPROVEN: int = 2
#: Value checks of a layout program (one per field: tag, kind, argument).
CHECK_ANY: int = 0  # any non-empty value
CHECK_INT: int = 1  # -?[0-9]+
CHECK_FLOAT: int = 2  # -?, digits with at most one dot, at least one digit
CHECK_CHAR: int = 3  # one byte
CHECK_TIMESTAMP: int = 4  # YYYYMMDD-HH:MM:SS[.f{1,9}], a real date
CHECK_ENUM: int = 5  # one of the values at (argument >> 16), (argument & 0xFFFF) of them
CHECK_SEQNUM: int = 6  # [0-9]+, at most 2**64 - 1
CHECK_INT_SEQNUM: int = 7  # -?[0-9]+, at most 2**64 - 1
CHECK_COUNT: int = 8  # [0-9]+ equal to the argument (a NumInGroup and its entries)
#: The table's header: hash mask, then the offsets of slots, programs, code and enum values.
TABLE_MASK: int = 0
TABLE_SLOTS: int = 1
TABLE_PROGS: int = 2
TABLE_CODE: int = 3
TABLE_ENUMS: int = 4
TABLE_HEADER: int = 5
#: Per program: layout hash, first code row, fields, 1 when compiled (0: the Python path).
PROG_COLUMNS: int = 4
_HASH_SEED = -3750763034362895579  # FNV-1a's offset basis as int64
_HASH_PRIME = 1099511628211


@kernel
def layout_hash(
    tags: npt.NDArray[np.int64], a: int, n: int, packed_type: int, type_len: int
) -> int:
    """Return the hash of a layout: ``tags[a:a+n]`` and its MsgType <35> packed in an int."""
    h = _HASH_SEED
    for j in range(a, a + n):
        h = (h ^ tags[_U(j)]) * _HASH_PRIME
    h = (h ^ packed_type) * _HASH_PRIME
    return (h ^ type_len) * _HASH_PRIME


_U64_MAX_DIGITS = np.frombuffer(b"18446744073709551615", dtype=np.uint8)


@kernel_inline
def check_layouts(  # noqa: C901  (probe, compare, check: one pass per message)
    buf: bytes,
    msgs: npt.NDArray[np.int64],
    nm: int,
    fields: npt.NDArray[np.int64],
    table: npt.NDArray[np.int64],
    out: npt.NDArray[np.int64],
    base: int,
) -> None:
    """Write ``base`` + LAYOUT_* for each of the first ``nm`` frames into ``out``.

    A frame whose tags and MsgType <35> are a layout of ``table`` (one flat int64 array: the
    header ``TABLE_*``, an open-addressing hash of program numbers + 1, ``PROG_COLUMNS`` per
    program, a ``(tag, kind, argument)`` row per field and ``(packed value, length)`` per enum
    value) is LAYOUT_VALID when every field is non-empty and passes its check, else
    LAYOUT_UNPROVEN (as is a layout kept without a compiled program); any other frame is
    LAYOUT_UNKNOWN. A check that fails proves nothing: the session validates such messages
    itself. Frames with a non-zero status are LAYOUT_UNKNOWN.
    """
    mask = table[TABLE_MASK]
    slots = table[TABLE_SLOTS]
    progs = table[TABLE_PROGS]
    code = table[TABLE_CODE]
    tags = fields[0]
    for i in range(nm):
        out[_U(i)] = base + LAYOUT_UNKNOWN
        if msgs[i, 4] != FRAME_OK:
            continue
        s = msgs[i, 0]
        a = msgs[i, 2]
        n = msgs[i, 3]
        ts = s + fields[1, a + 2]
        te = s + fields[2, a + 2]
        if te - ts > 8 or te <= ts:
            continue
        packed = 0
        for k in range(te - ts):
            packed |= int(buf[_U(ts + k)]) << (8 * k)
        h = layout_hash(tags, a, n, packed, te - ts)
        k = h & mask
        found = -1
        while True:
            p1 = table[_U(slots + k)]
            if p1 == 0:
                break
            po = progs + PROG_COLUMNS * (p1 - 1)
            if table[_U(po)] == h and table[_U(po + 2)] == n:
                c = code + 3 * table[_U(po + 1)]
                same = True
                for j in range(n):
                    if table[_U(c + 3 * j)] != tags[_U(a + j)]:
                        same = False
                        break
                if same:
                    found = po
                    break
            k = (k + 1) & mask
        if found < 0:
            continue
        if table[_U(found + 3)] == 0:
            out[_U(i)] = base + LAYOUT_UNPROVEN
            continue
        c = code + 3 * table[_U(found + 1)]
        # Each field's value check, written flat: a helper handed ``buf`` or ``table``, even
        # an inlined one, costs its reference counts (~30 ns a field: 0.5 µs of a 17-field
        # NewOrderSingle, where the checks themselves cost 0.1 µs; docs/kernels.md).
        ok = True
        for j in range(n):
            vs = s + fields[1, _U(a + j)]
            ve = s + fields[2, _U(a + j)]
            if ve <= vs:
                ok = False
                break
            kind = table[_U(c + 3 * j + 1)]
            if kind == CHECK_ANY:
                continue
            nv = ve - vs
            if kind == CHECK_CHAR:
                if nv != 1:
                    ok = False
                    break
            elif kind == CHECK_ENUM:
                arg = table[_U(c + 3 * j + 2)]
                if nv > 8:
                    ok = False
                    break
                packed = 0
                for q in range(nv):
                    packed |= int(buf[_U(vs + q)]) << (8 * q)
                at = table[TABLE_ENUMS] + 2 * (arg >> 16)
                hit = False
                for q in range(arg & 0xFFFF):
                    if table[_U(at + 2 * q)] == packed and table[_U(at + 2 * q + 1)] == nv:
                        hit = True
                        break
                if not hit:
                    ok = False
                    break
            elif kind == CHECK_FLOAT:
                digits = 0
                dot = False
                for q in range(vs + 1 if buf[_U(vs)] == _MINUS else vs, ve):
                    ch = buf[_U(q)]
                    if _ZERO <= ch <= _NINE:
                        digits += 1
                    elif ch == 46 and not dot:
                        dot = True
                    else:
                        digits = -1
                        break
                if digits <= 0:
                    ok = False
                    break
            elif kind == CHECK_TIMESTAMP:
                # YYYYMMDD-HH:MM:SS[.f{1,9}] and a real date (as read_header reads SendingTime).
                if (
                    (nv != 17 and not 19 <= nv <= 27)
                    or buf[_U(vs + 8)] != _MINUS
                    or buf[_U(vs + 11)] != 58
                    or buf[_U(vs + 14)] != 58
                    or (nv > 17 and buf[_U(vs + 17)] != 46)
                ):
                    ok = False
                    break
                for q in range(vs, ve):
                    r = q - vs
                    if r != 8 and r != 11 and r != 14 and r != 17:
                        ch = buf[_U(q)]
                        if not _ZERO <= ch <= _NINE:
                            ok = False
                            break
                if not ok:
                    break
                hh = (int(buf[_U(vs + 9)]) - _ZERO) * 10 + int(buf[_U(vs + 10)]) - _ZERO
                mi = (int(buf[_U(vs + 12)]) - _ZERO) * 10 + int(buf[_U(vs + 13)]) - _ZERO
                ss = (int(buf[_U(vs + 15)]) - _ZERO) * 10 + int(buf[_U(vs + 16)]) - _ZERO
                year = 0
                for q in range(vs, vs + 4):
                    year = year * 10 + int(buf[_U(q)]) - _ZERO
                month = (int(buf[_U(vs + 4)]) - _ZERO) * 10 + int(buf[_U(vs + 5)]) - _ZERO
                day = (int(buf[_U(vs + 6)]) - _ZERO) * 10 + int(buf[_U(vs + 7)]) - _ZERO
                if year < 1 or not _time_ok(year, month, day, hh, mi, ss):
                    ok = False
                    break
            elif kind in (CHECK_INT, CHECK_SEQNUM, CHECK_INT_SEQNUM, CHECK_COUNT):
                d0 = vs
                if buf[_U(vs)] == _MINUS:
                    if kind in (CHECK_SEQNUM, CHECK_COUNT):
                        ok = False
                        break
                    d0 = vs + 1  # negative: below any limit
                if d0 >= ve:
                    ok = False
                    break
                for q in range(d0, ve):
                    ch = buf[_U(q)]
                    if not _ZERO <= ch <= _NINE:
                        ok = False
                        break
                if not ok:
                    break
                if kind == CHECK_COUNT:
                    if nv > 18:
                        ok = False
                        break
                    v = 0
                    for q in range(vs, ve):
                        v = v * 10 + (int(buf[_U(q)]) - _ZERO)
                    if v != table[_U(c + 3 * j + 2)]:
                        ok = False
                        break
                elif kind != CHECK_INT and d0 == vs:
                    # At most 2**64 - 1, leading zeros allowed.
                    while ve - d0 > 1 and buf[_U(d0)] == _ZERO:
                        d0 += 1
                    if ve - d0 > 20:
                        ok = False
                        break
                    if ve - d0 == 20:
                        for q in range(20):
                            ch = buf[_U(d0 + q)]
                            if ch != _U64_MAX_DIGITS[q]:
                                if ch > _U64_MAX_DIGITS[q]:
                                    ok = False
                                break
                        if not ok:
                            break
            else:
                ok = False
                break
        out[_U(i)] = base + (LAYOUT_VALID if ok else LAYOUT_UNPROVEN)


@kernel_inline
def scan_and_check(
    buf: bytes,
    n: int,
    msgs: npt.NDArray[np.int64],
    fields: npt.NDArray[np.int64],
    data_tags: npt.NDArray[np.int64],
    expect: npt.NDArray[np.uint8],
    table: npt.NDArray[np.int64],
    out: npt.NDArray[np.int64],
    base: int,
) -> tuple[int, int, int]:
    """:func:`scan_frames`, then :func:`check_layouts` of the frames written, in one call."""
    nm, nf, consumed = scan_frames(buf, n, msgs, fields, data_tags, expect)
    check_layouts(buf, msgs, nm, fields, table, out, base)
    return nm, nf, consumed


#: The decoder's workspace: one int64 array that holds its tables (:func:`workspace`), so that
#: a read costs one array argument where it cost five (numba unboxes each array argument:
#: about 500 instructions apiece). Its header: where each table starts and how long it is.
WS_MSGS: int = 0  # offset of the message table, rows of MSG_COLUMNS
WS_ROWS: int = 1  # rows of the message table (and of the layout marks)
WS_FIELDS: int = 2  # offset of the field table, 3 rows of WS_CAP
WS_CAP: int = 3  # columns of the field table
WS_CHECKED: int = 4  # offset of the layout marks, WS_ROWS of them
WS_DATA: int = 5  # offset of the LENGTH -> DATA tag table
WS_DATA_LEN: int = 6
WS_EXPECT: int = 7  # offset in bytes of the header expectation (uint8)
WS_EXPECT_LEN: int = 8  # its length in bytes (0: none)
WS_HEADER: int = 9
#: int64 slots kept for the header expectation: the longest :func:`header_expectation`.
WS_EXPECT_SLOTS: int = (3 + 3 * 255 + 7) // 8


def workspace(
    rows: int, cap: int, data_tags: npt.NDArray[np.int64], expect: npt.NDArray[np.uint8]
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.uint8],
]:
    """Return a decoder's workspace and views of its tables (see ``WS_*``).

    Returns ``(ws, msgs, fields, checked, data_tags, expect)``: ``msgs`` int64[rows,
    MSG_COLUMNS], ``fields`` int64[3, cap], ``checked`` int64[rows] (zeros), then copies of
    ``data_tags`` and ``expect`` (at most ``WS_EXPECT_SLOTS * 8`` bytes); every one a
    C-contiguous view of ``ws``, of the types :func:`scan_and_check` is compiled for.
    ``ws`` is a view of an ``array("q")``, ``ws.base.obj``.
    """
    nd = data_tags.shape[0]
    ne = expect.shape[0]
    if ne > WS_EXPECT_SLOTS * 8:
        raise ValueError(f"header expectation of {ne} bytes: at most {WS_EXPECT_SLOTS * 8}")
    e_at = WS_HEADER
    d_at = e_at + WS_EXPECT_SLOTS
    m_at = d_at + nd
    c_at = m_at + rows * MSG_COLUMNS
    f_at = c_at + rows
    # Over an ``array("q")`` (zeros), its ``base.obj``: the decoder copies fields out of it as
    # arrays with a slice (one call, no numpy).
    ws = np.frombuffer(array("q", bytes(8 * (f_at + 3 * cap))), dtype=np.int64)
    ws[:WS_HEADER] = (m_at, rows, f_at, cap, c_at, d_at, nd, e_at * 8, ne)
    ws[d_at:m_at] = data_tags
    raw = ws.view(np.uint8)
    raw[e_at * 8 : e_at * 8 + ne] = expect
    return (
        ws,
        ws[m_at:c_at].reshape(rows, MSG_COLUMNS),
        ws[f_at:].reshape(3, cap),
        ws[c_at:f_at],
        ws[d_at:m_at],
        raw[e_at * 8 : e_at * 8 + ne],
    )


@kernel_keep_gil
def scan_and_check_ws(
    buf: bytes, ws: npt.NDArray[np.int64], table: npt.NDArray[np.int64], base: int
) -> tuple[int, int, int]:
    """:func:`scan_and_check` of all of ``buf`` over the tables of a :func:`workspace`."""
    rows = ws[WS_ROWS]
    m = ws[WS_MSGS]
    f = ws[WS_FIELDS]
    cap = ws[WS_CAP]
    c = ws[WS_CHECKED]
    d = ws[WS_DATA]
    e = ws[WS_EXPECT]
    return scan_and_check(
        buf,
        len(buf),
        ws[m : m + rows * MSG_COLUMNS].reshape((rows, MSG_COLUMNS)),
        ws[f : f + 3 * cap].reshape((3, cap)),
        ws[d : d + ws[WS_DATA_LEN]],
        ws.view(np.uint8)[e : e + ws[WS_EXPECT_LEN]],
        table,
        ws[c : c + rows],
        base,
    )


def compiled_entry(dispatcher: Any, args: tuple[Any, ...]) -> Callable[..., Any] | None:
    """Return the compiled function ``dispatcher`` runs for arguments of these types, or None.

    Calling it skips the dispatcher's typing of every argument (about a fifth of a
    ``scan_and_check`` call on one message). It checks nothing: call it only with
    arguments of exactly the types of ``args`` (arrays of the same dtype, dimensions and
    layout), as the decoder does with the tables it owns. None when the dispatcher has no
    compiled version for them yet (call it once first) or its API is not the expected one.
    """
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        entry: Callable[..., Any] = dispatcher.overloads[sig].entry_point
    except Exception:  # no such version, or another numba: the dispatcher it is
        return None
    return entry


@kernel
def checksum(buf: npt.NDArray[np.uint8], start: int, end: int) -> int:
    """Return the FIX CheckSum <10> of ``buf[start:end]`` (sum of bytes modulo 256)."""
    total = 0
    for i in range(start, end):
        total += int(buf[i])
    return total % 256


@kernel
def store_walk(  # noqa: C901  (one record format, field by field)
    buf: npt.NDArray[np.uint8],
    stored: int,
    every: int,
    max_head: int,
    marks: npt.NDArray[np.int64],
    noted: npt.NDArray[np.int64],
) -> tuple[int, int, int, int, int]:
    r"""Walk the records ``<seq>,<length>[,<note>]\n<message>\n`` of a FileStore body chunk.

    ``stored`` records came before the chunk: every ``every``-th record (counting them) gets a
    row ``(seq, offset of its head)`` in ``marks``; every record with a note a row ``(seq,
    offset of the note, note length, offset of the message, message length)`` in ``noted``.
    Returns (records, bytes used, last seq, marks, noted rows); the walk stops at a record cut
    by the end of the chunk or at anything that is not a record (``bytes used`` says where).
    """
    n = buf.shape[0]
    pos = 0
    k = 0
    nm = 0
    nn = 0
    last = 0
    while pos < n:
        # <seq>
        p = pos
        seq = 0
        while p < n and p - pos < 20 and 48 <= buf[p] <= 57:
            seq = seq * 10 + int(buf[p]) - 48
            p += 1
        if p == pos or p >= n or buf[p] != 44:  # ','
            break
        p += 1
        q = p
        length = 0
        while p < n and p - q < 12 and 48 <= buf[p] <= 57:
            length = length * 10 + int(buf[p]) - 48
            p += 1
        if p == q or p >= n:
            break
        note_at = -1
        note_len = 0
        if buf[p] == 44:  # a note up to the newline
            note_at = p + 1
            p += 1
            while p < n and p - pos < max_head and buf[p] != 10:
                p += 1
            note_len = p - note_at
        if p >= n or buf[p] != 10:
            break
        start = p + 1
        end = start + length
        if end >= n or buf[end] != 10:
            break
        if (stored + k) % every == 0:
            if nm >= marks.shape[0]:
                break
            marks[nm, 0] = seq
            marks[nm, 1] = pos
            nm += 1
        if note_at >= 0:
            if nn >= noted.shape[0]:
                break
            noted[nn, 0] = seq
            noted[nn, 1] = note_at
            noted[nn, 2] = note_len
            noted[nn, 3] = start
            noted[nn, 4] = length
            nn += 1
        k += 1
        last = seq
        pos = end + 1
    return k, pos, last, nm, nn
