# SPDX-License-Identifier: MIT
"""FIX framing and tokenizing kernels over ``uint8`` buffers.

The inbound hot path: one call frames every complete message in a buffer, verifies BodyLength
<9> and CheckSum <10>, checks that the first three fields are ``8``, ``9``, ``35`` and writes the
tag and value offsets of every field into caller-owned arrays. No Python objects are created.
The framing kernels take the received ``bytes`` themselves (numba reads them as a read-only
``uint8`` array).
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel

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
MSG_COLUMNS: int = 5

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


@kernel
def _find_start(buf: bytes, pos: int, n: int) -> int:
    # "8=" at the buffer start (a known boundary) or right after an SOH.
    i = pos
    while i + 1 < n:
        if buf[i] == _EIGHT and buf[i + 1] == _EQ and (i == 0 or buf[i - 1] == _SOH):
            return i
        i += 1
    return -1


@kernel
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
        if buf[i] == _MINUS:
            neg = True
            i += 1
        tag = 0
        digits = 0
        while i < end and _ZERO <= buf[i] <= _NINE:
            tag = tag * 10 + (int(buf[i]) - _ZERO)
            digits += 1
            i += 1
        if digits == 0 or digits > 9 or i >= end or buf[i] != _EQ:
            return -1
        i += 1
        vs = i
        if not neg and tag == want_tag and vs + want_len < end and buf[vs + want_len] == _SOH:
            # Raw data: exactly the announced number of bytes, SOH included.
            i = vs + want_len
        else:
            while i < end and buf[i] != _SOH:
                i += 1
            if i >= end:
                return -1
        want_tag = -1
        if not neg and tag < ndt and data_tags[tag] > 0:
            length = 0
            ok = i > vs and i - vs < 10
            for j in range(vs, i):
                c = int(buf[j]) - _ZERO
                if c < 0 or c > 9:
                    ok = False
                    break
                length = length * 10 + c
            if ok:
                want_tag = data_tags[tag]
                want_len = length
        fields[0, k] = -tag if neg else tag
        fields[1, k] = vs - start  # relative to the frame: small numbers, cheap to hand over
        fields[2, k] = i - start
        k += 1
        i += 1
    return k


@kernel
def scan_frames(  # noqa: C901  (one pass, one kernel: splitting costs calls)
    buf: bytes,
    n: int,
    msgs: npt.NDArray[np.int64],
    fields: npt.NDArray[np.int64],
    data_tags: npt.NDArray[np.int64],
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
        while i < n and buf[i] != _SOH and i - s < _MAX_HEAD:
            i += 1
        if i >= n:
            return nm, nf, s
        if buf[i] != _SOH:
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
        if buf[i + 1] != 57 or buf[i + 2] != _EQ:
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
        while j < n and _ZERO <= buf[j] <= _NINE and digits < 10:
            length = length * 10 + (int(buf[j]) - _ZERO)
            digits += 1
            j += 1
        if j >= n:
            return nm, nf, s
        if buf[j] != _SOH or digits == 0:
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
            if buf[q] == _SOH and buf[q + 1] == _ONE and buf[q + 2] == _ZERO and buf[q + 3] == _EQ:
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
        while e < n and buf[e] != _SOH:
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
                total += int(buf[b])
            if e - (t + 4) != 3:
                status = FRAME_BAD_CHECKSUM
            else:
                c0 = int(buf[t + 4]) - _ZERO
                c1 = int(buf[t + 5]) - _ZERO
                c2 = int(buf[t + 6]) - _ZERO
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
                nf = k
        msgs[nm, 4] = status
        nm += 1
        pos = end
    return nm, nf, pos


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
