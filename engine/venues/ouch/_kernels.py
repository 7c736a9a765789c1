# SPDX-License-Identifier: MIT
"""SoupBinTCP framing, OUCH 5.0 encode/decode and store-walking kernels over ``uint8`` buffers.

Every OUCH message is a type byte followed by fixed-width big-endian fields and, for some
types, an appendage (``u16`` length, then TagValue options). The layouts are data: the Python
side (:mod:`engine.venues.ouch.messages`) declares them once and compiles them into a table
indexed by the type byte (``int64[256, L_COLUMNS]``: field kinds, field sizes, field count
(-1 for an unknown type), appendage flag), one per direction (client to server, server to
client: 'U' and 'M' mean different messages each way). The
kernels here walk those tables, so one compiled function serves every message type.

The hot paths of single messages (the client's Enter Order, each type's decode and encode in
:mod:`~engine.venues.ouch.messages`) are one ``struct`` call each, cheaper than a kernel's
call for one message; the kernels serve the general path, which names the field that does
not fit, and tests hold both to the same bytes.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

#: Field kinds of the layout tables.
#: Unsigned big-endian integer of 1, 2, 4 or 8 bytes (8-byte values above 2**63 wrap).
K_UINT: int = 0
#: Signed big-endian integer of 4 or 8 bytes (SignedPrice, Price).
K_INT: int = 1
#: One ASCII character; the value is its byte.
K_CHAR: int = 2
#: Space-padded ASCII text; decoding writes the field's offset into the buffer, encoding
#: reads the padded bytes at that offset of the ``alpha`` buffer.
K_ALPHA: int = 3

#: Most fixed fields of one message type.
MAX_FIELDS: int = 20
#: Columns of a layout table row (one row per type byte): the kinds of the fields, their
#: sizes, the number of fields (-1: unknown type) and whether an appendage follows.
L_KIND: int = 0
L_SIZE: int = MAX_FIELDS
L_NFIELDS: int = 2 * MAX_FIELDS
L_HAS_APP: int = 2 * MAX_FIELDS + 1
L_COLUMNS: int = 2 * MAX_FIELDS + 2

#: Decode status codes.
DECODE_OK: int = 0
#: The type byte names no message of this direction.
DECODE_UNKNOWN_TYPE: int = 1
#: The payload is shorter than the type's fixed fields.
DECODE_SHORT: int = 2
#: AppendageLength runs past the end of the payload, or an option is cut off or empty (or
#: there are more options than the caller's table holds).
DECODE_BAD_APPENDAGE: int = 3
#: An empty payload (no type byte).
DECODE_EMPTY: int = 4

#: Columns of the frame table written by :func:`scan_frames` (``int64[:, FRAME_COLUMNS]``).
FRAME_START: int = 0  # offset of the 2-byte length
FRAME_TYPE: int = 1  # packet type byte
FRAME_PAYLOAD: int = 2  # offset of the first payload byte
FRAME_END: int = 3  # offset one past the frame
FRAME_COLUMNS: int = 4

_CRC_POLY = 0xEDB88320


@kernel_inline
def _get_be(buf: npt.NDArray[np.uint8], p: int, size: int) -> int:
    v = 0
    for k in range(size):
        v = (v << 8) | int(buf[p + k])
    return v


@kernel_inline
def _put_be(out: npt.NDArray[np.uint8], p: int, v: int, size: int) -> None:
    for k in range(size - 1, -1, -1):
        out[p + k] = v & 0xFF
        v >>= 8


@kernel
def scan_frames(
    buf: npt.NDArray[np.uint8], start: int, end: int, frames: npt.NDArray[np.int64]
) -> tuple[int, int]:
    """Find the complete SoupBinTCP packets in ``buf[start:end]``.

    Parameters
    ----------
    buf : uint8[:]
        Received bytes.
    start, end : int
        The range to scan.
    frames : int64[:, FRAME_COLUMNS]
        Output, one row per packet (offsets into ``buf``); filled up to its length.

    Returns
    -------
    (int, int)
        Packets found, and the offset where the first incomplete packet (or the end) starts.
        A packet with length 0 (no type byte) is reported with type -1.
    """
    n = 0
    p = start
    cap = frames.shape[0]
    while n < cap and p + 2 <= end:
        length = (int(buf[p]) << 8) | int(buf[p + 1])
        if p + 2 + length > end:
            break
        frames[n, FRAME_START] = p
        if length == 0:
            frames[n, FRAME_TYPE] = -1
            frames[n, FRAME_PAYLOAD] = p + 2
        else:
            frames[n, FRAME_TYPE] = buf[p + 2]
            frames[n, FRAME_PAYLOAD] = p + 3
        frames[n, FRAME_END] = p + 2 + length
        n += 1
        p += 2 + length
    return n, p


@kernel
def parse_appendage(
    buf: npt.NDArray[np.uint8], start: int, end: int, rows: npt.NDArray[np.int64]
) -> int:
    """Split the TagValue options of an appendage ``buf[start:end]``.

    Each option is a length byte (counting the tag and the value), a tag byte and the value.

    Parameters
    ----------
    buf : uint8[:]
        Bytes holding the appendage.
    start, end : int
        Its range (after AppendageLength).
    rows : int64[:, 3]
        Output, one row per option: tag, value offset, value length.

    Returns
    -------
    int
        Options found, or -1 when one is cut off, has length 0 or ``rows`` is too short.
    """
    n = 0
    p = start
    while p < end:
        length = int(buf[p])
        if length == 0 or p + 1 + length > end or n >= rows.shape[0]:
            return -1
        rows[n, 0] = buf[p + 1]
        rows[n, 1] = p + 2
        rows[n, 2] = length - 1
        n += 1
        p += 1 + length
    return n


@kernel
def decode_fields(
    buf: npt.NDArray[np.uint8],
    start: int,
    end: int,
    layout: npt.NDArray[np.int64],
    vals: npt.NDArray[np.int64],
    opts: npt.NDArray[np.int64],
) -> int:
    """Decode the OUCH message in ``buf[start:end]``: fixed fields and appendage options.

    Parameters
    ----------
    buf : uint8[:]
        Bytes holding the message (type byte first).
    start, end : int
        The message's range.
    layout : int64[256, L_COLUMNS]
        Layout table of one direction, by type byte.
    vals : int64[MAX_FIELDS + 3]
        Output: one value per field (alpha fields: their offset into ``buf``), then the
        appendage's offset and length (0 and 0 without one) and its number of options.
        Mutated in place.
    opts : int64[:, 3]
        Output: tag, value offset and value length of each appendage option.

    Returns
    -------
    int
        A ``DECODE_*`` status.
    """
    if end <= start:
        return DECODE_EMPTY
    t = int(buf[start])
    nf = layout[t, L_NFIELDS]
    if nf < 0:
        return DECODE_UNKNOWN_TYPE
    p = start + 1
    for i in range(nf):
        size = layout[t, L_SIZE + i]
        if p + size > end:
            return DECODE_SHORT
        kind = layout[t, L_KIND + i]
        if kind == K_ALPHA:
            vals[i] = p
        elif kind == K_CHAR:
            vals[i] = buf[p]
        else:
            v = _get_be(buf, p, size)
            if kind == K_INT and size == 4 and v >= 0x80000000:
                v -= 0x100000000
            vals[i] = v
        p += size
    vals[nf] = 0
    vals[nf + 1] = 0
    vals[nf + 2] = 0
    if layout[t, L_HAS_APP]:
        if p + 2 > end:
            return DECODE_SHORT
        app_len = (int(buf[p]) << 8) | int(buf[p + 1])
        p += 2
        if p + app_len > end:
            return DECODE_BAD_APPENDAGE
        vals[nf] = p
        vals[nf + 1] = app_len
        n = parse_appendage(buf, p, p + app_len, opts)
        if n < 0:
            return DECODE_BAD_APPENDAGE
        vals[nf + 2] = n
    return DECODE_OK


@kernel
def encode_fields(
    out: npt.NDArray[np.uint8],
    pos: int,
    soup_type: int,
    msg_type: int,
    layout: npt.NDArray[np.int64],
    vals: npt.NDArray[np.int64],
    alpha: npt.NDArray[np.uint8],
    app: npt.NDArray[np.uint8],
    app_len: int,
) -> int:
    """Write one OUCH message, framed as a SoupBinTCP packet when ``soup_type`` >= 0.

    Parameters
    ----------
    out : uint8[:]
        Output buffer, large enough (checked by the caller). Mutated in place.
    pos : int
        Where the packet (or, with ``soup_type`` < 0, the bare message) starts.
    soup_type : int
        Packet type byte (``ord('U')``, ``ord('S')``), or -1 for no SoupBinTCP header.
    msg_type : int
        OUCH message type byte; must name a message in the tables.
    layout : int64[256, L_COLUMNS]
        The direction's layout table (see :func:`decode_fields`).
    vals : int64[:]
        One value per field; an alpha field's value is the offset of its padded bytes in
        ``alpha``.
    alpha : uint8[:]
        Padded text of the alpha fields.
    app : uint8[:]
        Encoded appendage (TagValue options), written after AppendageLength when the type has
        one.
    app_len : int
        Bytes of ``app`` to write.

    Returns
    -------
    int
        Offset one past the written bytes.
    """
    head = pos
    p = pos + 3 if soup_type >= 0 else pos
    out[p] = msg_type
    p += 1
    nf = layout[msg_type, L_NFIELDS]
    for i in range(nf):
        size = layout[msg_type, L_SIZE + i]
        kind = layout[msg_type, L_KIND + i]
        if kind == K_ALPHA:
            a = vals[i]
            for k in range(size):
                out[p + k] = alpha[a + k]
        elif kind == K_CHAR:
            out[p] = vals[i]
        else:
            _put_be(out, p, vals[i], size)
        p += size
    if layout[msg_type, L_HAS_APP]:
        out[p] = (app_len >> 8) & 0xFF
        out[p + 1] = app_len & 0xFF
        p += 2
        for k in range(app_len):
            out[p + k] = app[k]
        p += app_len
    if soup_type >= 0:
        length = p - head - 2
        out[head] = (length >> 8) & 0xFF
        out[head + 1] = length & 0xFF
        out[head + 2] = soup_type
    return p


@kernel
def crc32_table() -> npt.NDArray[np.uint32]:
    """Return the 256-entry table of the CRC-32 used by zlib (IEEE, reflected)."""
    table = np.empty(256, np.uint32)
    for i in range(256):
        c = np.uint32(i)
        for _ in range(8):
            low = c & np.uint32(1)
            c = c >> np.uint32(1)
            if low:
                c = np.uint32(_CRC_POLY) ^ c
        table[i] = c
    return table


@kernel
def crc32(buf: npt.NDArray[np.uint8], start: int, end: int, table: npt.NDArray[np.uint32]) -> int:
    """Return ``zlib.crc32(buf[start:end])``."""
    c = np.uint32(0xFFFFFFFF)
    for i in range(start, end):
        c = table[(c ^ np.uint32(buf[i])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return int(c ^ np.uint32(0xFFFFFFFF))


@kernel
def walk_records(
    buf: npt.NDArray[np.uint8],
    offsets: npt.NDArray[np.int64],
    table: npt.NDArray[np.uint32],
) -> tuple[int, int]:
    """Index the records of a sequenced-message store file held in ``buf``.

    A record is a ``u32`` big-endian payload length, the ``u32`` CRC-32 of the payload and the
    payload. Walking stops at the first record that is cut off or whose checksum is wrong (a
    torn tail: the caller cuts the file there).

    Parameters
    ----------
    buf : uint8[:]
        The file's bytes from a record boundary.
    offsets : int64[:]
        Output: the offset of each record's head, relative to ``buf``; filled up to its length.
    table : uint32[256]
        :func:`crc32_table`.

    Returns
    -------
    (int, int)
        Records found, and the offset one past the last good one.
    """
    n = 0
    p = 0
    size = buf.shape[0]
    cap = offsets.shape[0]
    while n < cap and p + 8 <= size:
        length = _get_be(buf, p, 4)
        if length == 0 or p + 8 + length > size:
            break
        if crc32(buf, p + 8, p + 8 + length, table) != _get_be(buf, p + 4, 4):
            break
        offsets[n] = p
        n += 1
        p += 8 + length
    return n, p
