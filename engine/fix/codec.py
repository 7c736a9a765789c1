# SPDX-License-Identifier: MIT
"""FIX wire codec: framing decoder, field-ordering encoder, timestamps.

Decoding runs the numba kernel :func:`engine.fix._kernels.scan_frames` over everything received
so far: one call frames, verifies (BodyLength <9>, CheckSum <10>, first three fields) and
tokenizes every complete message. Garbled frames are dropped and counted, never raised.

Encoding writes ``8, 9, 35``, the other header fields in ascending tag order, the body in
ascending tag order with each repeating group at its NumInGroup tag (entries in the order
given, i.e. dictionary order), then ``10`` -- the order QuickFIX produces and the acceptance
scripts expect. :class:`MessageTemplate` is the fast path for messages with a fixed layout.

Not checked here: anything a data dictionary knows (required fields, enums, formats).
"""

from __future__ import annotations

import datetime as _dt
import operator
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, cast
from zlib import adler32 as _adler32

import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log
from engine.fix import _kernels
from engine.fix.fields import parse_utc_timestamp
from engine.fix.layouts import LayoutTable
from engine.fix.message import (
    CODE_ESCAPE,
    MESSAGES_PER_BLOCK,
    SOH,
    Block,
    BodyEntry,
    Field,
    FixMessage,
    Group,
    make_block,
    make_messages,
)

_log = get_log(__name__)

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

#: Human-readable reasons for the frame status codes of the kernel.
FRAME_REASONS: dict[int, str] = {
    _kernels.FRAME_BAD_LENGTH: "BodyLength does not match",
    _kernels.FRAME_BAD_CHECKSUM: "CheckSum does not match",
    _kernels.FRAME_BAD_FIELD: "malformed field",
    _kernels.FRAME_BAD_ORDER: "first three fields are not 8, 9, 35",
    _kernels.FRAME_JUNK: "bytes outside any message",
    _kernels.FRAME_NO_LENGTH: "BodyLength missing or not a number",
}

# ---------------------------------------------------------------------------------- timestamps

_sec_cache: dict[int, bytes] = {}


def _second_prefix(sec: int) -> bytes:
    p = _sec_cache.get(sec)
    if p is None:
        if len(_sec_cache) > 4:
            _sec_cache.clear()
        t = _EPOCH + _dt.timedelta(seconds=sec)
        p = t.strftime("%Y%m%d-%H:%M:%S").encode()
        _sec_cache[sec] = p
    return p


def format_timestamp(now_ns: int, precision: int = 3) -> bytes:
    """Return UTCTimestamp ``YYYYMMDD-HH:MM:SS[.fff...]`` for ``now_ns``.

    Parameters
    ----------
    now_ns : int
        ns since the epoch, UTC.
    precision : int
        Fractional digits: 0 (seconds), 3 (milli), 6 (micro) or 9 (nano); others 0-9 too.
    """
    sec, frac = divmod(now_ns, 1_000_000_000)
    prefix = _second_prefix(sec)
    if precision <= 0:
        return prefix
    digits = b"%09d" % frac
    return prefix + b"." + digits[:precision]


_parse_cache: dict[bytes, int] = {}
_POW10: list[int] = [10**i for i in range(10)]


def parse_timestamp(value: bytes) -> int | None:
    """Return ns since the epoch for a UTCTimestamp, or None when it is malformed."""
    sec = _parse_cache.get(value[:17])
    if sec is not None:
        n = len(value)
        if n == 17:
            return sec
        f = value[18:]
        if value[17:18] == b"." and n <= 27 and f.isdigit():
            return sec + int(f) * _POW10[9 - len(f)]
    ns = parse_utc_timestamp(value)  # the validator's strict parse: one grammar for both
    if ns is not None:
        if len(_parse_cache) > 64:
            _parse_cache.clear()
        _parse_cache[value[:17]] = ns - ns % 1_000_000_000
    return ns


def default_precision(begin_string: str) -> int:
    """Return QuickFIX's default timestamp precision: 0 for FIX.4.0/4.1, else 3."""
    return 0 if begin_string in ("FIX.4.0", "FIX.4.1") else 3


# ------------------------------------------------------------------------------------ encoding

_PREFIX: list[bytes] = [b"%d=" % t for t in range(10000)]
# BodyLength <9> values with their SOH, and the whole CheckSum <10> field, by number: looked
# up rather than formatted for every message.
_MAX_LENGTH = 4096
_LENGTH: list[bytes] = [b"%d\x01" % n for n in range(_MAX_LENGTH)]
#: The byte sum of each of ``_LENGTH`` (its share of the CheckSum).
_LENGTH_SUM: list[int] = [sum(v) for v in _LENGTH]
_TRAILER: list[bytes] = [b"10=%03d\x01" % cs for cs in range(256)]
#: ``8=...<SOH>9=`` -> the message heads and their byte sums less one, by body length up to
#: 256 (``MessageTemplate.pieces``).
_HEADS: dict[bytes, tuple[list[bytes], list[int]]] = {}


def _pfx(tag: int) -> bytes:
    if 0 <= tag < 10000:
        return _PREFIX[tag]
    return b"%d=" % tag


def _tag_key(e: BodyEntry) -> int:
    return e.tag if isinstance(e, Group) else e[0]


def _append_entries(parts: list[bytes], entries: Sequence[BodyEntry]) -> None:
    for e in entries:
        if isinstance(e, Group):
            parts.append(_pfx(e.tag))
            parts.append(b"%d" % len(e.entries))
            parts.append(SOH)
            for entry in e.entries:
                _append_entries(parts, entry)
        else:
            parts.append(_pfx(e[0]))
            parts.append(e[1])
            parts.append(SOH)


def checksum(data: bytes) -> int:
    """Return the FIX CheckSum <10> of ``data``: the sum of its bytes modulo 256.

    Computed with zlib's Adler-32, whose low half is 1 + the byte sum modulo 65521: exact for
    up to 256 bytes at a time (256 x 255 < 65520), and ten times faster than ``sum()``.
    """
    if len(data) <= 256:
        return ((_adler32(data) & 0xFFFF) - 1) & 0xFF
    total = 0
    for i in range(0, len(data), 256):
        total += (_adler32(data[i : i + 256]) & 0xFFFF) - 1
    return total & 0xFF


def checksum_bytes(data: bytes) -> bytes:
    """Return the three-digit CheckSum <10> value of ``data``."""
    return b"%03d" % checksum(data)


def finish(begin_string: bytes, body: bytes) -> bytes:
    """Wrap ``body`` (everything from ``35=`` to the last SOH) with 8, 9 and 10."""
    n = len(body)
    length = _LENGTH[n] if n < _MAX_LENGTH else b"%d\x01" % n
    msg = b"8=" + begin_string + b"\x019=" + length + body
    # checksum() inlined for the usual short message (see there).
    if len(msg) <= 256:
        return msg + _TRAILER[((_adler32(msg) & 0xFFFF) - 1) & 0xFF]
    return msg + _TRAILER[checksum(msg)]


def encode(
    begin_string: bytes,
    msg_type: bytes,
    header: Sequence[Field],
    body: Sequence[BodyEntry],
    *,
    sort_body: bool = True,
) -> bytes:
    """Encode a complete message with BodyLength and CheckSum.

    Parameters
    ----------
    begin_string : bytes
        BeginString <8>.
    msg_type : bytes
        MsgType <35>.
    header : sequence of (tag, value)
        Header fields other than 8, 9, 35; written in ascending tag order.
    body : sequence of (tag, value) or Group
        Body; written in ascending tag order (groups at their NumInGroup tag, entries as
        given) unless ``sort_body`` is False.
    """
    prefix = _PREFIX
    try:
        head = b"".join([prefix[t] + v + SOH for t, v in sorted(header, key=_first)])
    except IndexError:
        parts: list[bytes] = []
        _append_entries(parts, sorted(header, key=_first))
        head = b"".join(parts)
    return finish(begin_string, b"35=" + msg_type + SOH + head + encode_body(body, sort_body))


def encode_body(body: Sequence[BodyEntry], sort_body: bool = True) -> bytes:
    """Return the wire bytes of body fields and groups (ascending tags unless told not to)."""
    if sort_body:
        body = sorted(body, key=_first)  # a Group's [0] is its NumInGroup tag
    if not body:
        return b""
    try:
        # Fast path: plain (tag, value) fields with tags below 10000; a Group does not unpack
        # into two (ValueError) and goes the slow way, as does a larger tag (IndexError).
        prefix = _PREFIX
        return SOH.join([prefix[t] + v for t, v in body]) + SOH  # type: ignore[misc]
    except (IndexError, TypeError, ValueError):
        parts: list[bytes] = []
        _append_entries(parts, body)
        return b"".join(parts)


_first = operator.itemgetter(0)
#: Columns of a decoder row (MSG_START, MSG_FIRST_FIELD).
_col_start = operator.itemgetter(_kernels.MSG_START)
_col_first = operator.itemgetter(_kernels.MSG_FIRST_FIELD)


class MessageTemplate:
    """Fast encoder for messages whose tags are fixed in advance.

    The static bytes around the values (tags, ``=``, SOH, constant fields) are joined once; an
    encode fills in the values, adds BodyLength and CheckSum. About an order of magnitude
    faster than building a message field by field.

    Parameters
    ----------
    begin_string : bytes
        BeginString <8>.
    msg_type : bytes
        MsgType <35>.
    fields : sequence of (tag, value or None)
        Header and body fields other than 8, 9, 35, in the order they are to be written
        (header ascending, then body ascending). ``None`` marks a slot filled per message; other
        values are constant.
    """

    __slots__ = ("_begin", "_begin_sum", "_format", "_parts", "_slots")

    def __init__(
        self, begin_string: bytes, msg_type: bytes, fields: Sequence[tuple[int, bytes | None]]
    ) -> None:
        parts: list[bytes] = []
        cur = b"35=" + msg_type + SOH
        slots = 0
        for tag, value in fields:
            if value is None:
                parts.append(cur + _pfx(tag))
                parts.append(b"")
                cur = SOH
                slots += 1
            else:
                cur += _pfx(tag) + value + SOH
        parts.append(cur)
        self._parts = parts
        self._slots = slots
        # The body as a bytes format: the constant parts (any % doubled) around the slots,
        # the first an int (``%d``: MsgSeqNum <34> of a session template), the others ``%b``.
        constant = [p.replace(b"%", b"%%") for p in parts[0::2]]
        marks = [b"%d"] + [b"%b"] * (slots - 1) if slots else []
        self._format = b"".join(c + m for c, m in zip(constant, [*marks, b""], strict=True))
        self._begin = b"8=" + begin_string + b"\x019="
        self._begin_sum = sum(self._begin)

    @property
    def slots(self) -> int:
        """Return how many values :meth:`encode` expects."""
        return self._slots

    def encode(self, values: Sequence[bytes]) -> bytes:
        """Return the message with ``values`` in the template's slots, in order."""
        parts = self._parts
        parts[1:-1:2] = values
        body = b"".join(parts)
        n = len(body)
        msg = self._begin + (_LENGTH[n] if n < _MAX_LENGTH else b"%d\x01" % n) + body
        # checksum() inlined for the usual short message (see there).
        if len(msg) <= 256:
            return msg + _TRAILER[((_adler32(msg) & 0xFFFF) - 1) & 0xFF]
        return msg + _TRAILER[checksum(msg)]

    def pieces(self) -> tuple[bytes, list[bytes], list[int], list[bytes]]:
        """Return what :meth:`encode2` builds a short message from, for a caller inlining it.

        ``(body_format, heads, sums, trailers)``: the body as a bytes format taking the first
        slot's value as an int (MsgSeqNum <34>) and the others as bytes,
        ``body_format % (seq, *rest)``; by body length ``n`` up to 256, ``heads[n]``, the
        message up to the body (``8=...<SOH>9=n<SOH>``), and ``sums[n]``, its byte sum less
        one; the CheckSum fields by value. The message of a body of ``n`` bytes up to 256 is
        ``heads[n] + body + trailers[(sums[n] + adler32(body)) & 255]`` (Adler-32's low half
        is one more than the byte sum for up to 256 bytes, see :func:`checksum`; its high half
        does not change the low 8 bits). A longer body goes to :meth:`encode2`.

        One ``%`` formatting builds the body: about 130 ns less per message than filling the
        slots of the parts list and joining it (issue 25).
        """
        heads_sums = _HEADS.get(self._begin)
        if heads_sums is None:  # made once per BeginString, shared by its templates
            begin = self._begin
            heads_sums = _HEADS[begin] = (
                [begin + _LENGTH[n] for n in range(257)],
                [self._begin_sum + _LENGTH_SUM[n] - 1 for n in range(257)],
            )
        return self._format, heads_sums[0], heads_sums[1], _TRAILER

    def encode2(self, first: bytes, second: bytes, rest: Sequence[bytes]) -> bytes:
        """Return ``encode((first, second, *rest))``, without building that sequence.

        A session template's first two slots are MsgSeqNum <34> and SendingTime <52>.
        """
        parts = self._parts
        parts[1] = first
        parts[3] = second
        parts[5:-1:2] = rest
        body = b"".join(parts)
        n = len(body)
        if n <= 256:
            # The CheckSum from the body's byte sum (Adler-32's low half, exact up to 256
            # bytes: see checksum()) and those of the parts before it, kept; the message in
            # one join (a ``+`` takes both sides' buffers and copies the body once more).
            cs = self._begin_sum + _LENGTH_SUM[n] + (_adler32(body) & 0xFFFF) - 1
            return b"".join((self._begin, _LENGTH[n], body, _TRAILER[cs & 0xFF]))
        # A longer body (its message is past checksum()'s short case).
        msg = self._begin + (_LENGTH[n] if n < _MAX_LENGTH else b"%d\x01" % n) + body
        return msg + _TRAILER[checksum(msg)]


# ------------------------------------------------------------------------------------ decoding

#: LENGTH -> DATA tag pairs of the FIX specifications (values of DATA fields may hold SOH).
DATA_LENGTH_TAGS: dict[int, int] = {
    90: 91, 93: 89, 95: 96, 212: 213, 348: 349, 350: 351, 352: 353, 354: 355, 356: 357,
    358: 359, 360: 361, 362: 363, 364: 365, 445: 446, 618: 619, 621: 622, 1184: 1185,
    1277: 1278, 1401: 1402, 1525: 1526, 1697: 1698, 1733: 1734,
}  # fmt: skip


def data_tag_table(pairs: dict[int, int] | None = None) -> npt.NDArray[np.int64]:
    """Return the kernel's LENGTH -> DATA lookup array for ``pairs`` (default: the standard)."""
    pairs = DATA_LENGTH_TAGS if pairs is None else pairs
    table = np.zeros(max(pairs, default=0) + 1, dtype=np.int64)
    for length_tag, data_tag in pairs.items():
        if length_tag >= 0:
            table[length_tag] = data_tag
    return table


#: No header to read (an empty expectation: the kernel writes no header flags).
_NO_EXPECTATION: npt.NDArray[np.uint8] = np.zeros(0, dtype=np.uint8)
_NO_TABLE: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)


_Views = tuple[memoryview, memoryview, memoryview]
#: What a decoder keeps per field count (FixDecoder._cut): its workspace as an array("q"), the
#: slices of it that are the first fields of each row of the field table, the rows' views,
#: and the message fields ``[0, count)`` of a block of one message.
_Cut = tuple["array[int]", slice, slice, slice, _Views, list[int]]


def _row_views(fields: npt.NDArray[np.int64]) -> _Views:
    # The rows of the decoder's field table as bytes: a batch copies its fields out of them
    # with array.frombytes (DecodedBatch.field_lists), one memcpy and no numpy call.
    v0, v1, v2 = (memoryview(fields[i]).cast("B") for i in range(3))
    return v0, v1, v2


def _first_row(msgs: npt.NDArray[np.int64]) -> memoryview:
    # The first row of the message table as a memoryview of int64 ("q"): its ``tolist()`` is
    # the row without a numpy call.
    return msgs.reshape(-1)[: _kernels.MSG_COLUMNS].data.cast("B").cast("q")


def _ints(column: npt.NDArray[np.int64]) -> array[int]:
    # A contiguous int64 column as array("q"): one memcpy (``tolist`` made a Python int of
    # every value: three quarters of the cost of decoding into messages).
    return array("q", column.tobytes())


@dataclass(frozen=True, slots=True)
class DroppedFrame:
    """A frame the decoder dropped.

    Parameters
    ----------
    reason : str
        Why (see ``FRAME_REASONS``).
    data : bytes
        The bytes dropped (at most 4 KiB of them).
    """

    reason: str
    data: bytes


class DecodedBatch:
    """Everything one :meth:`FixDecoder.decode_batch` call framed, as arrays.

    The arrays are views of the decoder's buffers: valid until the next decode call.

    Attributes
    ----------
    buf : bytes
        The bytes the offsets refer to.
    msgs : int64[n, MSG_COLUMNS]
        One row per frame (start, end, first field, field count, status, and the header as
        the kernel read it: flags, MsgSeqNum, SendingTime; see ``MSG_HEAD``).
    fields : int64[3, nf]
        Per field: tag, value start, value end (offsets relative to the start of the field's
        frame); ``tags``, ``vstart`` and ``vend`` are its rows.
    """

    __slots__ = (
        "_all_fields",
        "_all_msgs",
        "_block",
        "_fields_v",
        "_good",
        "_lists",
        "_msgs_v",
        "_nf",
        "_nm",
        "_rows",
        "_views",
        "buf",
        "checked",
    )

    def __init__(
        self,
        buf: bytes,
        msgs: npt.NDArray[np.int64],
        fields: npt.NDArray[np.int64],
        rows: list[list[int]] | None = None,
        checked: list[int] | None = None,
        frames: int = -1,
        nfields: int = -1,
        views: tuple[memoryview, memoryview, memoryview] | None = None,
    ) -> None:
        # ``frames`` / ``nfields`` given: ``msgs`` and ``fields`` are the decoder's whole
        # tables, sliced when asked for (a read of one message should not pay numpy's
        # slicing); ``views``: the rows of ``fields`` as bytes, for field_lists' copies.
        self.buf = buf
        self._all_msgs = msgs
        self._all_fields = fields
        self._nm = msgs.shape[0] if frames < 0 else frames
        self._nf = fields.shape[1] if nfields < 0 else nfields
        self._msgs_v: npt.NDArray[np.int64] | None = msgs if frames < 0 else None
        self._fields_v: npt.NDArray[np.int64] | None = fields if nfields < 0 else None
        self._views = views
        self._rows = rows
        self._lists: tuple[array[int], array[int], array[int]] | None = None
        # The block of a one-frame read, made by the decoder, for single_message's first call.
        self._block: Block | None = None
        # True: ``rows`` are known to be all good frames, back to back from the buffer's start.
        self._good = False
        #: Per frame, the decoder's layout table's mark (:mod:`engine.fix.layouts`), or None.
        self.checked = checked

    @property
    def msgs(self) -> npt.NDArray[np.int64]:
        """Return the message table, int64[n, MSG_COLUMNS] (see the class)."""
        m = self._msgs_v
        if m is None:
            m = self._msgs_v = self._all_msgs[: self._nm]
        return m

    @property
    def _fields(self) -> npt.NDArray[np.int64]:
        f = self._fields_v
        if f is None:
            f = self._fields_v = self._all_fields[:, : self._nf]
        return f

    @property
    def fields(self) -> npt.NDArray[np.int64]:
        """Return the field table, int64[3, nf] (tags, value starts, value ends)."""
        return self._fields

    @property
    def tags(self) -> npt.NDArray[np.int64]:
        """Return every field's tag."""
        return self._fields[0, :]

    @property
    def vstart(self) -> npt.NDArray[np.int64]:
        """Return every field's value start, relative to its frame."""
        return self._fields[1, :]

    @property
    def vend(self) -> npt.NDArray[np.int64]:
        """Return every field's value end, relative to its frame."""
        return self._fields[2, :]

    @property
    def rows(self) -> list[list[int]]:
        """Return the message table as Python lists (one per frame, ``MSG_COLUMNS`` values)."""
        if self._rows is None:
            self._rows = self.msgs.tolist()
        return self._rows

    def __len__(self) -> int:
        return self._nm

    def ok(self) -> npt.NDArray[np.bool_]:
        """Return a mask of the frames that passed every check."""
        return np.asarray(self.msgs[:, _kernels.MSG_STATUS] == _kernels.FRAME_OK)

    def field_lists(self) -> tuple[array[int], array[int], array[int]]:
        """Return ``tags``, ``vstart`` and ``vend`` as ``array("q")`` (made once per batch)."""
        lists = self._lists
        if lists is None:
            views = self._views
            if views is None:
                f = self._fields
                lists = (_ints(f[0]), _ints(f[1]), _ints(f[2]))
            else:
                # One memcpy each, from the decoder's rows as bytes: no numpy call.
                k = self._nf * 8
                v0, v1, v2 = views
                tags = array("q")
                tags.frombytes(v0[:k])
                starts = array("q")
                starts.frombytes(v1[:k])
                ends = array("q")
                ends.frombytes(v2[:k])
                lists = (tags, starts, ends)
            self._lists = lists
        return lists

    def message(self, i: int, ts_recv: int = 0) -> FixMessage:
        """Return frame ``i`` as a :class:`FixMessage` (copies its bytes and offsets)."""
        start, end, a, count = self.rows[i][:4]
        b = a + count
        tags, vstart, vend = self.field_lists()
        raw = self.buf[start:end]
        checked = self.checked[i] if self.checked is not None else 0
        return FixMessage.from_arrays(
            raw, tags[a:b], vstart[a:b], vend[a:b], 0, count, ts_recv, checked
        )

    def single_message(self, ts_recv: int = 0) -> FixMessage:
        """Return the one frame of a one-frame read (a good one) as a :class:`FixMessage`.

        The latency path of a transport (a read of one message): the message shares the
        batch's field lists (:meth:`field_lists`, made for this batch) instead of copies.
        """
        block = self._block
        if block is not None:
            # The decoder made the block with the batch (FixDecoder.decode_batch): what the
            # lines below make, but for ts_recv, set here (once: a second call makes its own).
            self._block = None
            block.ts_recv = ts_recv
            m = FixMessage()
            m._b = block
            m._k = 0
            return m
        start, end, a, count = self.rows[0][:4]
        tags, vstart, vend = self.field_lists()
        checked = self.checked
        return FixMessage.from_arrays(
            self.buf[start:end],
            tags,
            vstart,
            vend,
            a,
            a + count,
            ts_recv,
            checked[0] if checked is not None else 0,
        )

    def messages(self, ts_recv: int = 0) -> list[FixMessage | None]:
        """Return every frame as a :class:`FixMessage`, None for a dropped one (row order).

        The messages share their bytes and field arrays by blocks of
        :data:`~engine.fix.message.MESSAGES_PER_BLOCK` (:class:`~engine.fix.message.Block`,
        copies made once per block): a message is one small object to allocate and, for the
        garbage collector, to track; it stays valid whatever the decoder does next.
        """
        block = self._block
        if block is None:
            return self._messages(ts_recv, True)
        # The block the decoder made with the batch (FixDecoder.decode_batch: every frame
        # good, one block), for this first call (a second call makes its own); the messages
        # made here, as make_messages makes them.
        self._block = None
        block.ts_recv = ts_recv
        return _block_messages(block, self._nm)

    def good_messages(self, ts_recv: int = 0) -> list[FixMessage]:
        """Return the frames that passed every check as messages, in order (see ``messages``)."""
        if self._block is not None:
            return self.messages(ts_recv)  # type: ignore[return-value]
        return self._messages(ts_recv, False)  # type: ignore[return-value]

    def _messages(self, ts_recv: int, holes: bool) -> list[FixMessage | None]:
        rows = self._rows
        if self._good:
            assert rows is not None
            return self._few_messages(rows, ts_recv)  # type: ignore[return-value]
        if rows is None:
            if not self.msgs[:, _kernels.MSG_STATUS].any():
                return self._good_messages(ts_recv)  # type: ignore[return-value]
            rows = self.rows
        elif all(not r[4] for r in rows):
            return self._few_messages(rows, ts_recv)  # type: ignore[return-value]
        # Some frame was dropped: one block per message, None in a dropped one's place with
        # ``holes`` (not a fast path).
        buf = self.buf
        checked = self.checked
        tags, starts, ends = self.field_lists()
        out: list[FixMessage | None] = []
        for i, (start, end, a, count, status, _, _, _) in enumerate(rows):
            if status:
                if holes:
                    out.append(None)
                continue
            b = a + count
            block = make_block(
                buf[start:end],
                tags[a:b],
                starts[a:b],
                ends[a:b],
                [0, count],
                [0, end - start],
                None,
                [checked[i]] if checked is not None else None,
                ts_recv,
            )
            make_messages(out, block, 1)  # type: ignore[arg-type]
        return out

    def _few_messages(self, rows: list[list[int]], ts_recv: int) -> list[FixMessage]:
        # messages() for a batch whose rows are lists already (a read of a few frames), all
        # good (so back to back): blocks from the rows, no tag codes (numpy's calls would
        # cost more than the lookups they save).
        buf = self.buf
        checked = self.checked
        tags, starts, ends = self.field_lists()
        out: list[FixMessage] = []
        per = MESSAGES_PER_BLOCK
        if rows and len(rows) <= per and rows[0][0] == 0 and rows[0][2] == 0:
            # One block from the read's start (the usual read of a few messages): the read's
            # bytes and the field arrays as they are when the frames fill them.
            last = rows[-1]
            c1 = last[1]
            f1 = last[2] + last[3]
            first = list(map(_col_first, rows))
            first.append(f1)
            cuts = list(map(_col_start, rows))
            cuts.append(c1)
            whole = f1 == len(tags)
            block = make_block(
                buf[:c1],  # the same bytes object when the frames fill the read
                tags if whole else tags[:f1],
                starts if whole else starts[:f1],
                ends if whole else ends[:f1],
                first,
                cuts,
                None,
                checked,
                ts_recv,
            )
            make_messages(out, block, len(rows))
            return out
        for j in range(0, len(rows), per):
            block_rows = rows[j : j + per]
            c0 = block_rows[0][0]
            f0 = block_rows[0][2]
            last = block_rows[-1]
            c1 = last[1]
            f1 = last[2] + last[3]
            first = [r[2] - f0 for r in block_rows]
            first.append(f1 - f0)
            cuts = [r[0] - c0 for r in block_rows]
            cuts.append(c1 - c0)
            block = make_block(
                buf[c0:c1],
                tags[f0:f1],
                starts[f0:f1],
                ends[f0:f1],
                first,
                cuts,
                None,
                checked[j : j + per] if checked is not None else None,
                ts_recv,
            )
            make_messages(out, block, len(block_rows))
        return out

    def _good_messages(self, ts_recv: int) -> list[FixMessage]:
        # messages() for a batch of many frames, all of them good (so back to back): the
        # columns it needs come out of the message table as lists (no list per row), offsets
        # within blocks made in numpy.
        msgs = self.msgs
        n = msgs.shape[0]
        per = MESSAGES_PER_BLOCK
        first = msgs[:, _kernels.MSG_FIRST_FIELD]
        start = msgs[:, _kernels.MSG_START]
        f_base = first[::per]
        c_base = start[::per]
        firsts = (first - np.repeat(f_base, per)[:n]).tolist()
        cuts = (start - np.repeat(c_base, per)[:n]).tolist()
        f_bounds = f_base.tolist()
        f_bounds.append(int(first[-1] + msgs[-1, _kernels.MSG_FIELD_COUNT]))
        c_bounds = c_base.tolist()
        c_bounds.append(int(msgs[-1, _kernels.MSG_END]))
        checked = self.checked
        tags, starts, ends = self.field_lists()
        # Every tag as one byte (CODE_ESCAPE from 255 on and for negative tags: as uint64 a
        # negative tag is huge), for FixMessage.get's memchr.
        codes = np.minimum(self._fields[0].view(np.uint64), CODE_ESCAPE).astype(np.uint8)
        all_codes = codes.tobytes()
        buf = self.buf
        out: list[FixMessage] = []
        for k, j in enumerate(range(0, n, per)):
            f0 = f_bounds[k]
            f1 = f_bounds[k + 1]
            c0 = c_bounds[k]
            c1 = c_bounds[k + 1]
            first_k = firsts[j : j + per]
            first_k.append(f1 - f0)
            cuts_k = cuts[j : j + per]
            cuts_k.append(c1 - c0)
            block = make_block(
                buf[c0:c1],
                tags[f0:f1],
                starts[f0:f1],
                ends[f0:f1],
                first_k,
                cuts_k,
                all_codes[f0:f1],
                checked[j : j + per] if checked is not None else None,
                ts_recv,
            )
            make_messages(out, block, len(first_k) - 1)
        return out


def _one_frame(
    buf: bytes,
    msgs: npt.NDArray[np.int64],
    fields: npt.NDArray[np.int64],
    row: list[int],
    checked: list[int] | None,
    nf: int,
    cuts: _Cut,
) -> DecodedBatch:
    # DecodedBatch(buf, msgs, fields, [row], checked, frames=1, nfields=nf, views=views) for a
    # good frame, its field lists made at once (every consumer of a one-frame batch asks for
    # them). ``cuts``: the first ``nf`` fields of each row of the table as slices of the
    # workspace (FixDecoder._cut), and the rows' views.
    ws, s0, s1, s2, views, _ = cuts
    tags = ws[s0]
    starts = ws[s1]
    ends = ws[s2]
    b = DecodedBatch(buf, msgs, fields, [row], checked, 1, nf, views)
    b._lists = (tags, starts, ends)
    b._good = True
    return b


def _block_messages(block: Block, nm: int) -> list[FixMessage | None]:
    # The messages 0 .. nm-1 of ``block``, as make_messages makes them.
    cls = FixMessage
    out: list[FixMessage | None] = []
    for k in range(nm):
        m = cls()
        m._b = block
        m._k = k
        out.append(m)  # (a bound append is not specialized)
    return out


def _few_frames(
    buf: bytes,
    msgs: npt.NDArray[np.int64],
    fields: npt.NDArray[np.int64],
    table: list[list[int]],
    checked: list[int] | None,
    nf: int,
    cuts: _Cut,
) -> DecodedBatch | None:
    # The batch of a read of a few frames (at least one) when they are all good, else None:
    # what _one_frame makes for one, with ``table`` as its rows, and, when they fit one block
    # (the usual read of a few messages), the block of their messages (_few_block), for
    # messages()' first call (a transport's read of such frames gets their messages alone:
    # _few_messages).
    block = _few_block(buf, table, checked, nf, cuts, 0)
    if block is None:  # more frames than a block, or a bad one
        for row in table:
            if row[4]:
                return None
    ws, s0, s1, s2, views, _ = cuts
    b = DecodedBatch(buf, msgs, fields, table, checked, len(table), nf, views)
    if block is not None and block.first[-1] == nf:  # the block holds every field: shared
        b._lists = (block.tags, block.starts, block.ends)
    else:
        b._lists = (ws[s0], ws[s1], ws[s2])
    b._good = True
    b._block = block
    return b


def _few_block(
    buf: bytes,
    table: list[list[int]],
    checked: list[int] | None,
    nf: int,
    cuts: _Cut,
    ts_recv: int,
) -> Block | None:
    # The block of the messages of a read of a few frames when they are all good and fit one
    # block, back to back from the start of ``buf``; None otherwise. One loop over the rows
    # tests them and gathers the block's offsets (map() and any() cost more for a few rows).
    row = table[0]
    if len(table) > MESSAGES_PER_BLOCK or row[0] or row[2]:
        return None
    first: list[int] = []
    offsets: list[int] = []
    for row in table:
        if row[4]:
            return None
        first.append(row[2])
        offsets.append(row[0])
    ws, s0, s1, s2, _, _ = cuts
    c1 = row[1]  # (``row`` is the last one)
    f1 = row[2] + row[3]
    first.append(f1)
    offsets.append(c1)
    part = buf if c1 == len(buf) else buf[:c1]
    if f1 == nf:
        return make_block(part, ws[s0], ws[s1], ws[s2], first, offsets, None, checked, ts_recv)
    tags, starts, ends = ws[s0][:f1], ws[s1][:f1], ws[s2][:f1]
    return make_block(part, tags, starts, ends, first, offsets, None, checked, ts_recv)


def _few_messages(
    buf: bytes,
    table: list[list[int]],
    checked: list[int] | None,
    nf: int,
    cuts: _Cut,
    ts_recv: int,
) -> list[FixMessage] | None:
    # The messages of a read of a few good frames that fit one block (what _few_frames makes,
    # and messages() then hands out, without the batch); None otherwise.
    block = _few_block(buf, table, checked, nf, cuts, ts_recv)
    if block is None:
        return None
    made: list[FixMessage] = []
    k = 0
    for _ in table:
        m = FixMessage()
        m._b = block
        m._k = k
        made.append(m)
        k += 1  # noqa: SIM113  (a count: no enumerate() call for a few rows)
    return made


#: The compiled scan_and_check_ws for (bytes, the decoder's workspace, a layout table, int),
#: found after its first call (:func:`engine.fix._kernels.compiled_entry`).
_scan_and_check: Final[list[Callable[..., tuple[int, int, int]] | None]] = [None]


class FixDecoder:
    """Incremental FIX decoder over a byte stream.

    Feed it bytes as they arrive; it returns the complete, verified messages and keeps any
    incomplete tail for the next call. Garbled frames (bad BodyLength or CheckSum, malformed
    fields, first three fields out of order, bytes between messages) are dropped, counted in
    ``garbled`` and passed to ``on_garbled`` -- never raised.

    Parameters
    ----------
    on_garbled : callable, optional
        Called with a :class:`DroppedFrame` for every dropped frame.
    max_buffer : int
        Bytes kept while waiting for the end of a message; beyond that the buffer is dropped.
    data_length_tags : dict of int to int, optional
        LENGTH -> DATA tag pairs (a dictionary's ``data_length_tags``); default the standard
        ones (:data:`DATA_LENGTH_TAGS`).
    """

    __slots__ = (
        "_checked",
        "_cuts",
        "_data_tags",
        "_expect",
        "_fields",
        "_mark",
        "_marks",
        "_msgs",
        "_pending",
        "_row",
        "_tables",
        "_views",
        "_ws",
        "_wsa",
        "garbled",
        "head",
        "heads",
        "layouts",
        "max_buffer",
        "on_garbled",
    )

    def __init__(
        self,
        on_garbled: Callable[[DroppedFrame], None] | None = None,
        max_buffer: int = 16 << 20,
        data_length_tags: dict[int, int] | None = None,
    ) -> None:
        self._pending = b""
        # The tables live in one workspace array (_kernels.workspace): the kernel takes it as
        # one argument. The attributes below are views of it; _workspace makes them.
        self._ws = self._msgs = self._fields = self._checked = _NO_TABLE
        self._data_tags = data_tag_table(data_length_tags)
        self._expect = _NO_EXPECTATION
        self._row = self._mark = self._marks = memoryview(b"")
        self._tables: dict[int, tuple[memoryview, memoryview]] = {}
        self._views = _row_views(np.zeros((3, 0), dtype=np.int64))
        self._cuts: dict[int, _Cut] = {}
        self._workspace(256, 8192)
        #: The session's layouts (:mod:`engine.fix.layouts`): each frame decoded is marked
        #: with what they prove of it (``DecodedBatch.checked``, ``FixMessage.checked``).
        self.layouts: LayoutTable | None = None
        self.garbled = 0
        #: The message-table row of the last message :meth:`decode_message` returned.
        self.head: list[int] = []
        #: The rows of the messages of decode_message's last list (``MSG_COLUMNS`` values each).
        self.heads: list[list[int]] = []
        self.on_garbled = on_garbled
        self.max_buffer = max_buffer

    @property
    def pending(self) -> int:
        """Return how many bytes wait for the rest of their message."""
        return len(self._pending)

    def reset(self) -> None:
        """Forget any partial message (on a new connection)."""
        self._pending = b""

    def expect_header(self, begin: bytes, sender: bytes, target: bytes) -> None:
        """Have every frame's session header read against these values (or none: ``b""``s).

        ``sender``/``target``: the SenderCompID <49> and TargetCompID <56> expected of the
        counterparty's messages. The kernel then writes the header's flags, MsgSeqNum and
        SendingTime into each frame's row (``MSG_HEAD`` … ``MSG_SENT``) for the session's
        fast path; values longer than 255 bytes are not compared (no flags).
        """
        try:
            expect = (
                _kernels.header_expectation(begin, sender, target) if begin else _NO_EXPECTATION
            )
        except ValueError:
            expect = _NO_EXPECTATION
        ws = self._ws
        at = int(ws[_kernels.WS_EXPECT])
        n = expect.shape[0]
        raw = ws.view(np.uint8)
        raw[at : at + n] = expect
        ws[_kernels.WS_EXPECT_LEN] = n
        self._expect = raw[at : at + n]

    def _workspace(self, rows: int, cap: int) -> None:
        # A new workspace of ``rows`` frames and ``cap`` fields (the tables are scratch: only
        # the data tags and the header expectation are carried over).
        ws, msgs, fields, checked, data_tags, expect = _kernels.workspace(
            rows, cap, self._data_tags, self._expect
        )
        self._ws = ws
        # (the array("q") under the workspace: see _kernels.workspace)
        self._wsa = cast("array[int]", cast(memoryview, ws.base).obj)
        self._mark = checked[:1].data.cast("B").cast("q")  # checked.item(0), cheaper
        self._marks = checked.data.cast("B").cast("q")  # checked[:k].tolist(), cheaper
        self._tables = {}
        self._msgs = msgs
        self._row = _first_row(msgs)
        self._fields = fields
        self._views = _row_views(fields)
        self._cuts = {}
        self._checked = checked  # one mark per row of the message table
        self._data_tags = data_tags
        self._expect = expect

    def _ensure(self, nbytes: int) -> None:
        need = nbytes // 2 + 2
        cap = self._fields.shape[1]
        rows = self._msgs.shape[0]
        want = min(nbytes // 64, 1 << 20)
        if cap < need or rows < want:
            self._workspace(max(rows, want), cap if cap >= need else max(need, cap * 2))

    def _cut(self, nf: int) -> _Cut:
        # The first ``nf`` fields of each row of the field table as slices of the workspace,
        # kept per count (a read of one message copies them out: messages of a layout have the
        # same count), with the fields of a block of one message.
        ws = self._ws
        f = int(ws[_kernels.WS_FIELDS])
        cap = int(ws[_kernels.WS_CAP])
        cuts = self._cuts
        if len(cuts) >= 64:
            cuts.clear()
        cut = cuts[nf] = (
            self._wsa,
            slice(f, f + nf),
            slice(f + cap, f + cap + nf),
            slice(f + 2 * cap, f + 2 * cap + nf),
            self._views,
            [0, nf],
        )
        return cut

    def _table(self, nm: int) -> tuple[memoryview, memoryview]:
        # The first ``nm`` rows of the message table as a memoryview of shape (nm, MSG_COLUMNS)
        # and the first ``nm`` layout marks, kept per count: their ``tolist()`` is the rows
        # and the marks without numpy's slicing (or a slice of a memoryview per read).
        tables = self._tables
        if len(tables) >= 64:
            tables.clear()
        k = nm * _kernels.MSG_COLUMNS
        view = self._msgs.reshape(-1)[:k].data.cast("B").cast("q", (nm, _kernels.MSG_COLUMNS))
        views = tables[nm] = (view, self._marks[:nm])
        return views

    def decode_batch(self, data: bytes) -> DecodedBatch:
        """Frame ``data`` (appended to any pending tail) and return the frames as arrays.

        Dropped frames are counted and reported as in :meth:`feed`; they also appear in the
        batch with a non-zero status. The returned arrays are valid until the next call.
        """
        return self.decode_message(data, -1)  # type: ignore[return-value]

    def decode_message(  # noqa: C901  (the read path in one)
        self, data: bytes, ts_recv: int
    ) -> FixMessage | list[FixMessage] | DecodedBatch:
        """Return the message, or messages, of a read of good frames; else the batch.

        The latency path of a transport (a read of one message): when ``data`` (appended to
        any pending tail) is exactly one good frame, the message is made at once, without a
        :class:`DecodedBatch` (what ``decode_batch(data).single_message(ts_recv)`` returns),
        and its row of the message table is :attr:`head` (``MSG_COLUMNS`` values, for
        :meth:`~engine.fix.session.FixSession.on_messages`). When it is a few good frames
        (2 to :data:`~engine.fix.message.MESSAGES_PER_BLOCK`, back to back), the list of their
        messages (what ``decode_batch(data).messages(ts_recv)`` returns), their rows
        :attr:`heads`: no batch either (batch 2 of ``qwconsole bench fix``: +8-10 % orders/s).
        Any other read returns what :meth:`decode_batch` returns. A negative ``ts_recv``
        always returns the batch.
        """
        pending = self._pending
        buf = pending + data if pending else data
        n = len(buf)
        # Small reads (one message, answered at once) are the latency path: the buffers are
        # big enough for them and this stays cheap; large reads grow them.
        if n > 4096:
            self._ensure(n)
        layouts = self.layouts
        # The kernel marks every frame (unless more passes come) when there are layouts to
        # check; ``_progs`` is ``len(layouts)`` without the call.
        if layouts is not None and layouts._progs > 0:
            marked = True
            # One kernel call frames and checks the layouts (a second call costs its dispatch),
            # over the tables of the workspace (``_checked`` has a row per frame row).
            entry = _scan_and_check[0]
            if entry is not None and type(buf) is bytes:
                # Every argument is of the types the entry was compiled for: bytes, the int64
                # workspace, the LayoutTable's int64 table and an int.
                nm, nf, consumed = entry(buf, self._ws, layouts.table, layouts.base)
            else:
                args = (buf, self._ws, layouts.table, layouts.base)
                nm, nf, consumed = _kernels.scan_and_check_ws(*args)
                if entry is None and type(buf) is bytes:
                    _scan_and_check[0] = _kernels.compiled_entry(_kernels.scan_and_check_ws, args)
        else:
            marked = False
            nm, nf, consumed = _kernels.scan_frames(
                buf, n, self._msgs, self._fields, self._data_tags, self._expect
            )
        if consumed >= n:
            self._pending = b""
            if nm == 1:
                # One message per read, the latency path: its row from the table's bytes, its
                # fields copied out once, the batch made without __init__'s keywords.
                row = self._row.tolist()
                if not row[4]:
                    if marked:
                        checked: list[int] | None = [self._mark[0]]
                    elif layouts is None:
                        checked = None
                    else:
                        checked = [layouts.base]  # no layout kept yet: LAYOUT_UNKNOWN
                    cuts = self._cuts.get(nf)
                    if cuts is None:
                        cuts = self._cut(nf)
                    if ts_recv >= 0:
                        # The message alone (decode_message): its block as below, with the
                        # field lists _one_frame makes, and no batch. The one good frame of a
                        # read wholly consumed is all of ``buf`` (bytes before it would be a
                        # junk frame, after it a junk frame or a pending tail) and all ``nf``
                        # fields.
                        ws, s0, s1, s2, _, first = cuts
                        block = Block()
                        block.buf = buf
                        block.tags = ws[s0]
                        block.starts = ws[s1]
                        block.ends = ws[s2]
                        block.first = first  # (shared: a block's lists are never changed)
                        block.cuts = [0, n]
                        block.codes = None
                        block.checked = checked
                        block.ts_recv = ts_recv
                        m = FixMessage()
                        m._b = block
                        m._k = 0
                        self.head = row
                        return m
                    batch = _one_frame(buf, self._msgs, self._fields, row, checked, nf, cuts)
                    # The message's block, made now (single_message's general path, from
                    # this row: the one frame fills ``buf`` and the field lists).
                    start, end, a = row[0], row[1], row[2]
                    block = Block()
                    block.buf = buf if start == 0 and end == n else buf[start:end]
                    block.tags, block.starts, block.ends = batch._lists  # type: ignore[misc]
                    block.first = [a, a + row[3]]
                    block.cuts = [0, end - start]
                    block.codes = None
                    block.checked = [0 if checked is None else checked[0]]
                    batch._block = block
                    return batch
            msgs = self._msgs
            fields = self._fields
            if nm <= 32:
                # The common case: everything framed in one pass, few frames: the rows (and the
                # layout marks) from memoryviews of the tables, no numpy call.
                table: list[list[int]] = []
                if nm:
                    views = self._tables.get(nm)
                    if views is None:
                        views = self._table(nm)
                    # (a 2-D view: its tolist() is a list of rows)
                    table = views[0].tolist()  # type: ignore[assignment]
                    # The layout marks (what _check returns, as below) and the field lists'
                    # bytes, then the batch when every frame is good (so back to back from
                    # the start): it and the block of its messages made by _few_frames
                    # (messages() hands them out), None when a frame is not good.
                    # (views[1] is self._marks[:nm], kept)
                    checked = views[1].tolist() if marked else self._check(buf, msgs, nm, fields)
                    cuts = self._cuts.get(nf)
                    if cuts is None:
                        cuts = self._cut(nf)
                    if ts_recv >= 0:
                        # A transport's read of a few good messages: the messages alone, as
                        # for one (no batch), their rows ``heads``.
                        made = _few_messages(buf, table, checked, nf, cuts, ts_recv)
                        if made is not None:
                            self.heads = table
                            return made
                    few = _few_frames(buf, msgs, fields, table, checked, nf, cuts)
                    if few is not None:
                        return few
                    for start, end, _, _, status_code, _, _, _ in table:
                        if status_code:
                            self._report(status_code, buf[start : min(end, start + 4096)])
                else:
                    checked = self._check(buf, msgs, nm, fields, marked=marked)
                return DecodedBatch(
                    buf, msgs, fields, table, checked, frames=nm, nfields=nf, views=self._views
                )
        msgs = self._msgs
        fields = self._fields
        if nm < msgs.shape[0] or consumed >= n:
            all_rows = msgs[:nm]
        else:
            all_rows, nf, consumed = self._more_passes(buf, nm, nf, consumed)
            marked = False
        self._pending = buf[consumed:]
        if len(self._pending) > self.max_buffer:
            self._report(_kernels.FRAME_JUNK, self._pending[:4096])
            self._pending = b""
        rows: list[list[int]] | None = None
        if all_rows.shape[0] <= 32:
            rows = all_rows.tolist()
            bad = [r for r in rows if r[4]]
        else:
            status = all_rows[:, _kernels.MSG_STATUS]
            bad = all_rows[status != 0].tolist() if status.any() else []
        for start, end, _, _, status_code, _, _, _ in bad:
            self._report(status_code, buf[start : min(end, start + 4096)])
        checked = self._check(
            buf, np.ascontiguousarray(all_rows), len(all_rows), fields, marked=marked
        )
        return DecodedBatch(buf, all_rows, fields, rows, checked, nfields=nf, views=self._views)

    def _more_passes(
        self, buf: bytes, nm: int, nf: int, consumed: int
    ) -> tuple[npt.NDArray[np.int64], int, int]:
        # More frames than rows: scan the rest in further passes and merge. The rest's fields
        # go to a C-contiguous scratch table and are copied in (a column slice of ``fields``
        # is a strided array: numba would compile the kernel again for it).
        msgs, fields, n = self._msgs, self._fields, len(buf)
        parts = [msgs[:nm].copy()]
        while nm == msgs.shape[0] and consumed < n:
            scratch = np.zeros((3, fields.shape[1] - nf), dtype=np.int64)
            nm, nf2, used = _kernels.scan_frames(
                buf[consumed:], n - consumed, msgs, scratch, self._data_tags, self._expect
            )
            fields[:, nf : nf + nf2] = scratch[:, :nf2]
            part = msgs[:nm].copy()
            part[:, 0:2] += consumed
            part[:, 2] += nf
            parts.append(part)
            nf += nf2
            consumed += used
        return np.concatenate(parts), nf, consumed

    def _check(
        self,
        buf: bytes,
        msgs: npt.NDArray[np.int64],
        nm: int,
        fields: npt.NDArray[np.int64],
        *,
        marked: bool = False,
    ) -> list[int] | None:
        # The layout table's marks of the first ``nm`` frames (``marked``: the framing kernel
        # made them already); None without layouts.
        layouts = self.layouts
        if layouts is None:
            return None
        if marked:
            marks: list[int] = self._marks[:nm].tolist()
            return marks
        if not layouts:
            return [layouts.base] * nm  # every layout unknown (LAYOUT_UNKNOWN)
        out = self._checked
        if out.shape[0] < nm:  # more frames than rows (_more_passes): scratch, not the view
            out = np.zeros(nm, dtype=np.int64)
        layouts.check(buf, msgs, nm, fields, out)
        return cast(list[int], out[:nm].tolist())

    def _report(self, status: int, data: bytes) -> None:
        self.garbled += 1
        frame = DroppedFrame(FRAME_REASONS.get(status, "garbled"), data)
        _log.debug("dropped garbled FIX frame (%s): %r", frame.reason, data[:200])
        if self.on_garbled is not None:
            try:
                self.on_garbled(frame)
            except Exception:  # a logging callback must not break decoding
                _log.exception("on_garbled callback failed")

    def feed(self, data: bytes, ts_recv: int = 0) -> list[FixMessage]:
        """Append ``data`` and return every complete, verified message in arrival order."""
        batch = self.decode_batch(data)
        if not len(batch):
            return []
        return batch.good_messages(ts_recv)


def decode_one(raw: bytes) -> FixMessage | None:
    """Return ``raw`` decoded when it is exactly one valid message, else None."""
    dec = FixDecoder()
    msgs = dec.feed(raw)
    if len(msgs) != 1 or dec.pending or dec.garbled:
        return None
    return msgs[0]
