# SPDX-License-Identifier: MIT
"""Schema-driven SBE decoding of whole buffers of packets into numpy structured arrays.

:class:`SbeDecoder` compiles a :class:`~engine.feeds.sbe.schema.Schema` into the tables of
:mod:`engine.feeds.sbe._kernels` once; :meth:`SbeDecoder.decode` then decodes a buffer of
packets (the bytes, each packet's start and length) in a few kernel calls, whatever the
number of messages: one that counts the rows of a sample of the packets to size the output,
one that decodes every packet (called again only if a table filled up: it goes on from there).

    decoder = SbeDecoder(load_schema("templates_FixBinary.xml"), MDP3_FRAMING)
    out = decoder.decode(buf, starts, lengths)
    book = out.template(32)                       # MDIncrementalRefreshBook32
    book.rows["TransactTime"]                     # one row per message, dtype book.rows.dtype
    entries = book.groups["NoMDEntries"].rows     # one row per entry; entries["_msg"] -> row
    px = book.groups["NoMDEntries"].decimal("MDEntryPx")  # float64, NaN where null

Each template's rows are a structured array whose dtype has the root block's columns at their
SBE offsets (composites as ``Field.member``: ``MDEntryPx.mantissa``) and the decoder's
columns ``_packet``, ``_index`` (message number in the buffer), ``_version`` and
``_block_length`` (from the message header); each group's rows add ``_msg`` (row of the
message) and ``_parent`` (row of the enclosing entry or message). Raw values are kept: a
column's null is :attr:`Column.null <engine.feeds.sbe.schema.Column.null>` and
:meth:`Rows.is_null` gives the mask.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.feeds.sbe import _kernels as k
from engine.feeds.sbe.schema import Block, Column, Group, Message, Schema

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: What each issue code means (``DecodeIssue.reason``).
REASONS: dict[int, str] = {
    k.E_SHORT_PACKET: "packet shorter than its header",
    k.E_SIZE_CUT: "message size cut off at the end of the packet",
    k.E_BAD_SIZE: "message size smaller than the message header",
    k.E_MESSAGE_CUT: "message runs past the end of the packet",
    k.E_SCHEMA_ID: "message of another schema id",
    k.E_UNKNOWN_TEMPLATE: "templateId not in the schema",
    k.E_BLOCK_CUT: "root block runs past the end of the message",
    k.E_GROUP_HEADER_CUT: "a group's dimension header runs past the end of the message",
    k.E_GROUP_CUT: "a group's entries run past the end of the message",
    k.E_DATA_CUT: "a var data field runs past the end of the message",
    k.E_TOO_DEEP: "groups nested too deep",
}

#: Issue codes after which the rest of the packet could not be framed.
PACKET_STOPPING = frozenset({k.E_SHORT_PACKET, k.E_SIZE_CUT, k.E_BAD_SIZE, k.E_MESSAGE_CUT})

#: The message table (one row per framed message, skipped ones included).
MESSAGE_DTYPE = np.dtype(
    [
        ("packet", "<i8"),
        ("offset", "<i8"),  # in the decoded buffer, of the message's first byte
        ("row", "<i8"),  # in its template's rows; -1 when skipped
        ("size", "<u4"),
        ("template_id", "<u2"),
        ("version", "<u2"),
        ("block_length", "<u2"),
        ("status", "<u2"),  # 0, or the issue code that skipped it
        ("_pad", "<u4"),
    ]
)
assert MESSAGE_DTYPE.itemsize == 8 * k.MS_COLUMNS  # the kernel's words, viewed


@dataclass(frozen=True, slots=True)
class Framing:
    """How messages sit in a packet: a packet header, then messages, each maybe size-prefixed.

    ``seq_size`` and ``time_size`` are the sizes of a sequence number at offset 0 of the
    packet header and of a sending time right after it (0: none).
    """

    packet_header: int = 0
    size_prefix: int = 0
    seq_size: int = 0
    time_size: int = 0


#: CME MDP 3.0: MsgSeqNum (u32) and SendingTime (u64) then messages, each after a u16 MsgSize.
MDP3_FRAMING = Framing(packet_header=12, size_prefix=2, seq_size=4, time_size=8)


@dataclass(frozen=True, slots=True)
class DecodeIssue:
    """A packet or message that was skipped, and why."""

    packet: int
    offset: int  # in the packet
    code: int
    value: int  # the template id, schema id or size concerned

    @property
    def reason(self) -> str:
        """What went wrong, in words."""
        return REASONS.get(self.code, f"issue {self.code}")

    def __str__(self) -> str:
        what = {
            k.E_SCHEMA_ID: "schemaId",
            k.E_UNKNOWN_TEMPLATE: "templateId",
            k.E_SHORT_PACKET: "length",
            k.E_BAD_SIZE: "MsgSize",
            k.E_MESSAGE_CUT: "size",
            k.E_SIZE_CUT: "bytes left",
        }.get(self.code, "templateId")
        tail = " (rest of packet skipped)" if self.code in PACKET_STOPPING else " (skipped)"
        return (
            f"packet {self.packet} offset {self.offset}: {self.reason}, {what} {self.value}{tail}"
        )


class Rows:
    """The decoded rows of one message type or one repeating group."""

    def __init__(self, block: Block, rows: npt.NDArray[np.void]) -> None:
        self.block = block
        self.rows = rows

    @property
    def name(self) -> str:
        """The message's or group's name."""
        return self.block.name

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def column(self, name: str) -> Column:
        """Return the schema column called ``name``."""
        return self.block.column(name)

    def is_null(self, name: str) -> npt.NDArray[np.bool_]:
        """Return the mask of rows whose column ``name`` carries no value."""
        return self.block.column(name).is_null(self.rows[name])

    def decimal(self, field: str) -> npt.NDArray[np.float64]:
        """Return a decimal composite (``mantissa`` x 10^constant ``exponent``) as float64.

        Null mantissas give NaN. Use the integer mantissa column for exact arithmetic.
        """
        col = self.block.column(f"{field}.mantissa")
        if col.exponent is None:
            raise KeyError(f"{self.name}.{field} is not a decimal with a constant exponent")
        out = self.rows[col.name].astype(np.float64) * 10.0**col.exponent
        out[col.is_null(self.rows[col.name])] = np.nan
        return out

    def value(self, row: int, name: str) -> Any:
        """Return one field's Python value: None when null, text for a string, else raw."""
        return self.block.column(name).value(self.rows[name][row])


class TemplateRows(Rows):
    """The rows of one message type, with its groups' rows by group name.

    A nested group is named by its path: ``Outer.Inner``.
    """

    def __init__(
        self, block: Message, rows: npt.NDArray[np.void], groups: dict[str, GroupRows]
    ) -> None:
        super().__init__(block, rows)
        self.message = block
        self.groups = groups

    def entries(self, group: str, row: int) -> npt.NDArray[np.void]:
        """Return the entries of ``group`` that belong to message row ``row``."""
        g = self.groups[group].rows
        lo, hi = np.searchsorted(g["_msg"], [row, row + 1])
        return g[lo:hi]


class GroupRows(Rows):
    """The rows of one repeating group (every entry of every message, in wire order)."""

    def __init__(self, block: Group, rows: npt.NDArray[np.void], parent: str) -> None:
        super().__init__(block, rows)
        self.group = block
        #: The name of what ``_parent`` indexes (the message, or the enclosing group).
        self.parent = parent


@dataclass
class Decoded:
    """What one :meth:`SbeDecoder.decode` call produced."""

    schema: Schema
    buffer: U8
    packets: I64  # int64[P, PK_COLUMNS] (see engine.feeds.sbe._kernels)
    messages: npt.NDArray[np.void]  # MESSAGE_DTYPE
    templates: dict[int, TemplateRows]
    issues: list[DecodeIssue]
    skipped: Counter[str]  # reason -> how many

    def template(self, key: int | str) -> TemplateRows:
        """Return the rows of a message type, by templateId or name (empty if none came)."""
        return self.templates[self.schema.message(key).id]

    def data(self, rows: Rows, name: str, row: int) -> bytes:
        """Return the bytes of var data field ``name`` of one row."""
        start = int(rows.rows[f"{name}._start"][row])
        length = int(rows.rows[f"{name}._length"][row])
        return self.buffer[start : start + length].tobytes()

    @property
    def n_messages(self) -> int:
        """Messages framed (decoded and skipped)."""
        return int(self.messages.shape[0])

    @property
    def n_decoded(self) -> int:
        """Messages decoded into rows."""
        return int(np.count_nonzero(self.messages["status"] == 0))


def _uint_member(block: Any, member: str) -> tuple[int, int]:
    p = block.part(member)
    return int(p.offset), int(p.type.size)


class SbeDecoder:
    """A schema compiled into kernel tables, decoding buffers of packets.

    Parameters
    ----------
    schema
        The message schema.
    framing
        Where messages sit in a packet (:data:`MDP3_FRAMING` for CME MDP 3.0).
    max_issues
        How many issues are kept with their details (all are counted).
    """

    #: Packets counted to size the output before decoding (all of them up to this many).
    SAMPLE = 4096

    def __init__(self, schema: Schema, framing: Framing, max_issues: int = 10_000) -> None:
        self.schema = schema
        self.framing = framing
        self.max_issues = max_issues
        self.levels: list[Block] = []
        self._parents: list[str] = []
        self._paths: list[str] = []
        self._roots: dict[int, int] = {}
        lv: list[list[int]] = []
        children: list[int] = []
        datas: list[list[int]] = []
        vfields: list[list[int]] = []
        nulls = bytearray()

        def add(block: Block, parent: str, path: str) -> int:
            n = len(self.levels)
            self.levels.append(block)
            self._parents.append(parent)
            self._paths.append(path)
            row = [0] * k.LV_COLUMNS
            lv.append(row)
            row[k.LV_BLOCK] = block.block_length
            row[k.LV_ITEM] = block.dtype().itemsize
            row[k.LV_SINCE] = block.since_version
            if isinstance(block, Group):
                assert block.dimension is not None
                row[k.LV_DIM] = block.dimension.size
                row[k.LV_BL_OFF], row[k.LV_BL_SIZE] = _uint_member(block.dimension, "blockLength")
                row[k.LV_N_OFF], row[k.LV_N_SIZE] = _uint_member(block.dimension, "numInGroup")
            row[k.LV_NULL] = len(nulls)
            nulls.extend(block.null_row())
            row[k.LV_VF0] = len(vfields)
            vfields.extend(
                [c.offset, c.size, c.since_version] for c in block.columns if c.since_version > 0
            )
            row[k.LV_NVF] = len(vfields) - row[k.LV_VF0]
            fields: dict[str, Any] = dict(block.dtype().fields or {})
            row[k.LV_DATA0] = len(datas)
            for d in block.data:
                rec = int(fields[f"{d.name}._start"][1])
                datas.append(
                    [d.length_offset, d.length_type.size, d.data_offset, d.since_version, rec]
                )
            row[k.LV_NDATA] = len(datas) - row[k.LV_DATA0]
            inner = f"{path}." if isinstance(block, Group) else ""
            kids = [add(g, path or block.name, inner + g.name) for g in block.groups]
            row[k.LV_META] = block.meta_offset
            row[k.LV_MAXSINCE] = max((c.since_version for c in block.columns), default=0)
            row[k.LV_FLAT] = int(
                isinstance(block, Message)
                and not block.data
                and len(block.groups) <= k.MAX_FLAT_GROUPS
                and all(not g.groups and not g.data for g in block.groups)
            )
            row[k.LV_CHILD0] = len(children)
            row[k.LV_NCHILD] = len(kids)
            children.extend(kids)
            return n

        for tid in sorted(schema.messages):
            self._roots[tid] = add(schema.messages[tid], "", "")
        self.lv = np.array(lv, dtype=np.int64).reshape(-1, k.LV_COLUMNS)
        self.children = np.array(children or [0], dtype=np.int64)
        self.datas = np.array(datas, dtype=np.int64).reshape(-1, k.DA_COLUMNS)
        self.vfields = np.array(vfields, dtype=np.int64).reshape(-1, k.VF_COLUMNS)
        self.nulls = np.frombuffer(bytes(nulls) or b"\0", dtype=np.uint8).copy()
        self.tmpl_level = np.full(65536, -1, dtype=np.int64)
        for tid, level in self._roots.items():
            self.tmpl_level[tid] = level
        frame = np.zeros(k.FR_COLUMNS, dtype=np.int64)
        frame[k.FR_PACKET_HEADER] = framing.packet_header
        frame[k.FR_SIZE_PREFIX] = framing.size_prefix
        frame[k.FR_SEQ_SIZE] = framing.seq_size
        frame[k.FR_TIME_SIZE] = framing.time_size
        frame[k.FR_HEADER] = schema.header.size
        for member, off, size in (
            ("blockLength", k.FR_BL_OFF, k.FR_BL_SIZE),
            ("templateId", k.FR_TID_OFF, k.FR_TID_SIZE),
            ("schemaId", k.FR_SID_OFF, k.FR_SID_SIZE),
            ("version", k.FR_VER_OFF, k.FR_VER_SIZE),
        ):
            frame[off], frame[size] = schema.header_offset(member)
        frame[k.FR_SCHEMA_ID] = schema.id
        frame[k.FR_BIG_ENDIAN] = 1 if schema.byte_order == ">" else 0
        frame[k.FR_STANDARD] = int(
            schema.byte_order == "<"
            and framing.size_prefix == 2
            and schema.header.size == 8
            and [tuple(frame[i : i + 2]) for i in range(k.FR_BL_OFF, k.FR_VER_SIZE + 1, 2)]
            == [(0, 2), (2, 2), (4, 2), (6, 2)]
        )
        self.frame = frame
        self._dtypes = [b.dtype() for b in self.levels]
        self._empties = [np.zeros(0, dtype=d) for d in self._dtypes]

    def _estimate(self, data: U8, starts: I64, lengths: I64) -> tuple[I64, int]:
        """Return each level's row capacity and the message table's for decoding the packets.

        Counted exactly for up to :attr:`SAMPLE` packets; beyond, counted on an evenly spread
        sample and scaled by bytes (with a margin: a level that still fills up is grown and
        the decoding goes on, nothing is decoded twice).
        """
        n = starts.size
        step = max(1, n // self.SAMPLE)
        s_start = np.ascontiguousarray(starts[::step])
        s_len = np.ascontiguousarray(lengths[::step])
        rows = np.zeros(len(self.levels), dtype=np.int64)
        state = np.zeros(k.ST_COLUMNS, dtype=np.int64)
        state[k.ST_POS] = -1
        one = np.zeros(1, dtype=np.int64)
        k.decode_packets(
            data,
            s_start,
            s_len,
            self.frame,
            self.tmpl_level,
            self.lv,
            self.children,
            self.datas,
            self.vfields,
            self.nulls,
            k.MODE_COUNT,
            np.zeros(8, dtype=np.uint8),
            one,
            one,
            one,
            rows,
            np.zeros((1, k.PK_COLUMNS), dtype=np.int64),
            np.zeros((1, k.MS_COLUMNS), dtype=np.int64),
            np.zeros((1, k.IS_COLUMNS), np.int64),
            np.zeros(k.E_COUNT, dtype=np.int64),
            state,
        )
        if step == 1:
            return rows, int(state[k.ST_MESSAGES])
        scale = max(int(lengths.sum()), 1) / max(int(s_len.sum()), 1) * 1.25
        cap = (rows * scale).astype(np.int64) + 256
        return cap, int(state[k.ST_MESSAGES] * scale) + 64

    def decode(self, buf: npt.ArrayLike, starts: npt.ArrayLike, lengths: npt.ArrayLike) -> Decoded:
        """Decode the packets ``buf[starts[i] : starts[i] + lengths[i]]``.

        Parameters
        ----------
        buf
            The packets' bytes (``uint8``, or anything ``np.frombuffer`` takes).
        starts, lengths
            Each packet's offset in ``buf`` and its length.

        Returns
        -------
        Decoded
            Per template its rows and its groups' rows, the packet and message tables, and
            the issues (skipped packets and messages, with why).

        Raises
        ------
        ValueError
            If a packet lies outside ``buf``.
        """
        data = _as_u8(buf)
        pk_start = np.ascontiguousarray(starts, dtype=np.int64)
        pk_len = np.ascontiguousarray(lengths, dtype=np.int64)
        if pk_start.shape != pk_len.shape or pk_start.ndim != 1:
            raise ValueError(f"starts {pk_start.shape} and lengths {pk_len.shape} differ")
        if pk_start.size:
            bad = np.flatnonzero((pk_start < 0) | (pk_len < 0) | (pk_start + pk_len > data.size))
            if bad.size:
                i = int(bad[0])
                raise ValueError(
                    f"packet {i} ({int(pk_start[i])}+{int(pk_len[i])}) lies outside the "
                    f"buffer of {data.size} bytes"
                )
        n_levels = len(self.levels)
        items = self.lv[:, k.LV_ITEM]
        cap, msg_cap = self._estimate(data, pk_start, pk_len)
        rows = np.zeros(n_levels, dtype=np.int64)
        base = _bases(cap * items)
        # every byte of every row is written (block, nulls, decoder columns): no zeroing
        out = np.empty(int((cap * items).sum()) or 8, dtype=np.uint8)
        messages = np.empty((msg_cap, k.MS_COLUMNS), dtype=np.int64)
        packets = np.empty((pk_start.size, k.PK_COLUMNS), dtype=np.int64)  # all written
        issues = np.empty((self.max_issues, k.IS_COLUMNS), dtype=np.int64)  # rows: written
        counts = np.zeros(k.E_COUNT, dtype=np.int64)
        state = np.zeros(k.ST_COLUMNS, dtype=np.int64)
        state[k.ST_POS] = -1
        args = (self.frame, self.tmpl_level, self.lv, self.children, self.datas, self.vfields)
        total = max(int(pk_len.sum()), 1)
        while True:
            state[k.ST_FULL] = -2
            full = k.decode_packets(
                data,
                pk_start,
                pk_len,
                *args,
                self.nulls,
                k.MODE_WRITE,
                out,
                out.view(np.int64),
                base,
                cap,
                rows,
                packets,
                messages,
                issues,
                counts,
                state,
            )
            if not full:
                break
            # a level (or the message table) is full: grow from the rate so far, go on
            at = int(state[k.ST_PACKET])
            done = max(int(pk_len[:at].sum()), 1) / total
            out, base, cap, messages = _grow(out, base, cap, rows, items, messages, state, done)
        n_msg = int(state[k.ST_MESSAGES])
        sizes = rows * items
        # a level without rows shares one empty array (a small decode has many of them)
        empties = self._empties
        views = [
            out[int(base[i]) : int(base[i] + sizes[i])].view(self._dtypes[i])
            if sizes[i]
            else empties[i]
            for i in range(n_levels)
        ]
        templates: dict[int, TemplateRows] = {}
        for tid, root in self._roots.items():
            msg = self.levels[root]
            assert isinstance(msg, Message)
            groups: dict[str, GroupRows] = {}
            for i in range(root + 1, n_levels):
                b = self.levels[i]
                if not isinstance(b, Group):
                    break
                groups[self._paths[i]] = GroupRows(b, views[i], self._parents[i])
            templates[tid] = TemplateRows(msg, views[root], groups)
        n_issues = int(counts[0])
        found = [DecodeIssue(int(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in issues[:n_issues]]
        skipped: Counter[str] = Counter()
        for code in range(1, k.E_COUNT):
            if counts[code]:
                skipped[REASONS[code]] = int(counts[code])
        table = messages[:n_msg].reshape(-1).view(MESSAGE_DTYPE)  # the same int64 columns
        return Decoded(self.schema, data, packets, table, templates, found, skipped)


def _grow(
    out: U8,
    base: I64,
    cap: I64,
    rows: I64,
    items: I64,
    messages: I64,
    state: I64,
    done: float,
) -> tuple[U8, I64, I64, I64]:
    """Return the output grown for the rest of the packets (``done``: the share decoded).

    Every level gets room for its rate so far (plus a quarter); the one that was full at
    least doubles. Rows decoded so far are moved to the new buffer.
    """
    grown = np.maximum(cap, (rows / done * 1.25).astype(np.int64) + 16)
    level = int(state[k.ST_FULL])
    if level >= 0:
        grown[level] = max(int(grown[level]), 2 * int(cap[level]) + 16)
    else:
        n = int(state[k.ST_MESSAGES])
        msg_cap = max(2 * messages.shape[0] + 16, int(n / done * 1.25) + 16)
        more = np.empty((msg_cap - n, k.MS_COLUMNS), dtype=np.int64)
        messages = np.concatenate((messages[:n], more))
    new_base = _bases(grown * items)
    new_out = np.empty(int((grown * items).sum()) or 8, dtype=np.uint8)
    for i in range(rows.size):
        used = int(rows[i] * items[i])
        new_out[new_base[i] : new_base[i] + used] = out[base[i] : base[i] + used]
    return new_out, new_base, grown, messages


def _bases(sizes: I64) -> I64:
    base = np.zeros(sizes.size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=base[1:])
    return base


def _as_u8(buf: npt.ArrayLike) -> U8:
    if isinstance(buf, np.ndarray):
        return np.ascontiguousarray(buf.reshape(-1).view(np.uint8))
    if isinstance(buf, bytes | bytearray | memoryview):
        return np.frombuffer(buf, dtype=np.uint8)
    return np.ascontiguousarray(buf, dtype=np.uint8)


def pack_packets(payloads: list[bytes]) -> tuple[U8, I64, I64]:
    """Concatenate packets into one buffer; return it with each packet's start and length."""
    lengths = np.fromiter((len(p) for p in payloads), dtype=np.int64, count=len(payloads))
    starts = np.zeros(len(payloads), dtype=np.int64)
    if len(payloads) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    buf = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    return buf, starts, lengths
