# SPDX-License-Identifier: MIT
"""FAST decoding into columns: the template set compiled for :mod:`engine.feeds.fast._kernels`.

:class:`ColumnDecoder` compiles a :class:`~engine.feeds.fast.templates.TemplateSet` once into
int64 tables and decodes whole buffers of messages with one kernel call into
:class:`Columns`: one structured array per template (one row per message) and one per
sequence (one row per element, ``parent`` = the row of the record holding it, and the
holder's ``<Seq>_first`` / ``<Seq>`` columns give the first child row and the count).
Every column is 8 bytes: integers (``u8`` for uInt64), decimals as ``<F>`` (mantissa) and
``<F>_exp``, strings as ``<F>_off`` / ``<F>_len`` (:meth:`Columns.raw`: into the decoded
buffer for values read from it, into :attr:`Columns.heap` for the others). Whether an
optional field is present is a bit of the row's ``_mask<k>`` columns
(:meth:`Columns.present`). Group fields are columns of the holding row, named
``<Group>.<F>``. Mandatory constants have no column (:attr:`KindLayout.constants`).

    decoder = ColumnDecoder(TemplateSet.from_file("templates.xml"))
    cols = decoder.decode(payload)
    cols.tables["MDHeartbeat"]["MsgSeqNum"]

The dictionaries persist between calls, as in :class:`~engine.feeds.fast.decoder.Decoder`,
and the same resets apply. Errors raise :class:`~engine.feeds.fast.decoder.FastDecodeError`
with ``error.columns`` (and ``error.messages``) holding the messages decoded before the bad
one. Not the same as the Python decoder: the session-control Reset message writes no row, and
the NULL-shifted encodings of the largest uInt64 and int64 (2**64 and 2**63 on the wire)
are reported as out of range.

:func:`warm_up` runs the kernels once on a small template set, so none compiles on a live
packet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from engine.feeds.fast import _kernels as k
from engine.feeds.fast.decoder import SCP_RESET_ID, FastDecodeError, Message, Value
from engine.feeds.fast.templates import (
    INT_RANGE,
    Decimal,
    Field,
    FieldType,
    Group,
    Instruction,
    Op,
    Operator,
    Scalar,
    Sequence,
    TemplateError,
    TemplateRef,
    TemplateSet,
)

#: No packet boundaries: one stream.
_NO_BOUNDS = np.zeros(0, np.int64)

_CLS = {
    FieldType.INT32: k.C_INT,
    FieldType.INT64: k.C_INT,
    FieldType.UINT32: k.C_UINT,
    FieldType.UINT64: k.C_UINT,
    FieldType.DECIMAL: k.C_DEC,
    FieldType.ASCII: k.C_ASCII,
    FieldType.UNICODE: k.C_BYTES,
    FieldType.BYTES: k.C_BYTES,
}
_REASONS = {
    k.ERR_CUT: "entity cut off at the end of the buffer",
    k.ERR_LONG_INT: "stop-bit integer over 10 bytes",
    k.ERR_UNKNOWN_TID: "unknown template id {val} (ERR D9)",
    k.ERR_NO_TID: "template id not in the stream and no previous one (ERR D5)",
    k.ERR_PMAP_LONG: f"presence map longer than {k.MAX_PMAP} bytes",
    k.ERR_PMAP_OVERLONG: "overlong presence map: its last byte holds no set bit (ERR R7)",
    k.ERR_PMAP_BITS: "presence map has more bits set than its fields use (ERR R8)",
    k.ERR_RANGE: "value {val} is outside the field's type (ERR R4)",
    k.ERR_NO_VALUE: "no value, no previous value and no initial value (ERR D5)",
    k.ERR_EMPTY_PREV: "previous value is empty (ERR D6)",
    k.ERR_SUBTRACT: "delta removes {val} characters, more than the base holds (ERR D7)",
    k.ERR_EXPONENT: "decimal exponent {val} outside [-63, 63] (ERR R1)",
    k.ERR_DEPTH: "templates nested deeper than the decoder's stack",
    k.ERR_BYTES: "byte vector runs past the end of the buffer",
    k.ERR_PACKET: "message runs past the end of its packet",
    k.ERR_SEQ_LENGTH: (
        f"sequence of {{val}} elements: more than the bytes left and {k.MAX_EMPTY_SEQ}"
    ),
}


@dataclass
class _Item:
    """One instruction of a kind, as :meth:`Columns.messages` rebuilds values from columns."""

    what: str  # "field", "const", "seq", "group", "dynref"
    name: str
    col: int = 0
    pbit: int = -1
    ftype: FieldType = FieldType.UINT32
    child: int = -1
    items: list[_Item] = field(default_factory=list)
    value: Scalar | None = None  # a mandatory constant's value


def _is_fixed(f: Field) -> bool:
    return f.operator.op == Op.CONSTANT and not f.optional and f.exponent is None


@dataclass
class KindLayout:
    """The table of one record kind: a template's messages or a sequence's elements."""

    name: str
    template_id: int
    columns: list[tuple[str, str]]
    items: list[_Item]
    nmask: int
    #: Whether rows are messages (a template's table) rather than sequence elements.
    top: bool = False
    #: Mandatory constants: the same in every row, so not decoded and without a column.
    constants: dict[str, Scalar] = field(default_factory=dict)

    @property
    def dtype(self) -> np.dtype[np.void]:
        """Return the structured dtype of a row (every column 8 bytes)."""
        return np.dtype(self.columns)

    @property
    def width(self) -> int:
        """Return the row width in int64 columns."""
        return len(self.columns)


class _Compiler:
    def __init__(self, templates: TemplateSet) -> None:
        self.ts = templates
        self.prog: list[list[int]] = []
        self.names: list[str] = []
        self.consts = bytearray()
        self.kinds: list[KindLayout] = []
        self.kind_of_tid: dict[int, int] = {}
        self.pending: list[tuple[Sequence, int, str]] = []
        self.seq_items: dict[int, _Item] = {}

    def const(self, v: bytes) -> tuple[int, int]:
        at = self.consts.find(v) if v else 0
        if at < 0:
            at = len(self.consts)
            self.consts += v
        return at, len(v)

    def compile(self) -> None:
        for t in self.ts.templates:  # a kind per template first: dynamic references find them
            self.kind_of_tid[t.id] = len(self.kinds)
            self.kinds.append(KindLayout(t.name, t.id, [], [], 0, top=True))
        self.tmpl = np.zeros((len(self.ts.templates), k.T_WIDTH), np.int64)
        for i, t in enumerate(self.ts.templates):
            kind = self.kind_of_tid[t.id]
            start = len(self.prog)
            self.body(t.instructions, kind, t.name, t.id)
            self.tmpl[i] = (t.id, kind, start, len(self.prog), int(t.reset))
            while self.pending:
                seq, seq_ip, path = self.pending.pop(0)
                child = len(self.kinds)
                self.kinds.append(KindLayout(f"{path}.{seq.name}", t.id, [], [], 0))
                s0 = len(self.prog)
                items = self.body(seq.instructions, child, f"{path}.{seq.name}", t.id)
                self.prog[seq_ip][k.I_CHILD] = child
                self.prog[seq_ip][k.I_START] = s0
                self.prog[seq_ip][k.I_END] = len(self.prog)
                self.prog[seq_ip][k.I_PMAP] = int(seq.needs_pmap)
                self.seq_items[seq_ip].child = child
                self.seq_items[seq_ip].items = items

    def body(
        self, instructions: tuple[Instruction, ...], kind: int, path: str, tid: int
    ) -> list[_Item]:
        layout = self.kinds[kind]
        nbits = _count_pbits(instructions)
        nmask = max(1, (nbits + 63) // 64)
        layout.nmask = nmask
        layout.columns = [("msg", "i8"), ("offset", "i8"), ("parent", "i8")]
        layout.columns += [(f"_mask{i}", "i8") for i in range(nmask)]
        self._pbit = 0
        layout.items = self.emit(instructions, kind, path, "")
        names = [c[0] for c in layout.columns]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise TemplateError(f"{self.ts.source}: {path}: two columns named {dup!r}")
        return layout.items

    def new_pbit(self, optional: bool) -> int:
        if not optional:
            return -1
        self._pbit += 1
        return self._pbit - 1

    def row(self, name: str, **kw: int) -> int:
        r = [0] * k.I_WIDTH
        r[k.I_SLOT] = -1
        r[k.I_PBIT] = -1
        for key, v in kw.items():
            r[getattr(k, key)] = v
        self.prog.append(r)
        self.names.append(name)
        return len(self.prog) - 1

    def emit(
        self, instructions: tuple[Instruction, ...], kind: int, path: str, prefix: str
    ) -> list[_Item]:
        cols = self.kinds[kind].columns
        items: list[_Item] = []
        for ins in instructions:
            if isinstance(ins, Field) and _is_fixed(ins):
                # a mandatory constant: no instruction, no column (KindLayout.constants)
                assert ins.operator.initial is not None
                items.append(
                    _Item("const", prefix + ins.name, ftype=ins.type, value=ins.operator.initial)
                )
                self.kinds[kind].constants[prefix + ins.name] = ins.operator.initial
            elif isinstance(ins, Field):
                col = len(cols)
                pbit = self.new_pbit(ins.optional)
                self.field(ins, col, pbit, f"{path}.{ins.name}", kind)
                name = prefix + ins.name
                if ins.type == FieldType.DECIMAL:
                    cols += [(name, "i8"), (name + "_exp", "i8")]
                elif _CLS[ins.type] >= k.C_ASCII:
                    cols += [(name + "_off", "i8"), (name + "_len", "i8")]
                else:
                    cols.append((name, "u8" if ins.type == FieldType.UINT64 else "i8"))
                items.append(_Item("field", prefix + ins.name, col, pbit, ins.type))
            elif isinstance(ins, Sequence):
                col = len(cols)
                pbit = self.new_pbit(ins.optional)
                self.field(ins.length, col, pbit, f"{path}.{ins.name}", kind)
                seq_ip = self.row(f"{path}.{ins.name}", I_OP=k.OP_SEQ, I_COL=col, I_PBIT=pbit)
                cols += [(prefix + ins.name, "i8"), (prefix + ins.name + "_first", "i8")]
                item = _Item("seq", prefix + ins.name, col, pbit)
                self.seq_items[seq_ip] = item
                self.pending.append((ins, seq_ip, path))
                items.append(item)
            elif isinstance(ins, Group):
                pbit = self.new_pbit(ins.optional)
                gip = self.row(
                    f"{path}.{ins.name}",
                    I_OP=k.OP_GROUP,
                    I_OPT=int(ins.optional),
                    I_USEBIT=int(ins.optional),
                    I_PBIT=pbit,
                    I_PMAP=int(ins.needs_pmap),
                )
                sub = self.emit(ins.instructions, kind, f"{path}.{ins.name}", f"{ins.name}.")
                self.prog[gip][k.I_END] = len(self.prog)
                items.append(_Item("group", ins.name, 0, pbit, items=sub))
            else:
                assert isinstance(ins, TemplateRef)
                col = len(cols)
                self.row(f"{path}.TemplateReference", I_OP=k.OP_DYNREF, I_COL=col)
                cols += [("TemplateReference_tid", "i8"), ("TemplateReference_row", "i8")]
                items.append(_Item("dynref", "TemplateReference", col))
        return items

    def field(self, f: Field, col: int, pbit: int, name: str, kind: int) -> None:
        cls = _CLS[f.type]
        if f.exponent is not None and f.mantissa is not None:
            e, m = f.exponent, f.mantissa
            ekw = self.op_cols(e, FieldType.INT32, f.optional)
            ekw.update(I_CLS=k.C_INT, I_COL=col + 1, I_PBIT=pbit, I_SKIP=1, I_CHECK=1)
            self.row(name, **ekw, I_LO=-63, I_HI=63)
            self.row(name, **self.op_cols(m, FieldType.INT64, False), I_CLS=k.C_INT, I_COL=col)
            return
        kw = self.op_cols(f.operator, f.type, f.optional)
        if f.type in (FieldType.INT32, FieldType.UINT32):
            lo, hi = INT_RANGE[f.type]
            kw.update(I_CHECK=1, I_LO=lo, I_HI=hi)
        self.row(name, **kw, I_CLS=cls, I_COL=col, I_PBIT=pbit)

    def op_cols(self, op: Operator, ftype: FieldType, optional: bool) -> dict[str, int]:
        usebit = op.op in (Op.DEFAULT, Op.COPY, Op.INCREMENT, Op.TAIL) or (
            op.op == Op.CONSTANT and optional
        )
        kw = {
            "I_W64": int(ftype in (FieldType.INT64, FieldType.UINT64)),
            "I_USEBIT": int(usebit),
            "I_OP": int(op.op),
            "I_SLOT": op.slot,
            "I_NULL": int(optional and op.op != Op.CONSTANT),
            "I_OPT": int(optional),
        }
        v = op.initial
        if v is None:
            return kw
        kw["I_HASINIT"] = 1
        if isinstance(v, Decimal):
            kw.update(I_IV=v.mantissa, I_IE=v.exponent)
        elif isinstance(v, str | bytes):
            raw = v.encode("utf-8") if isinstance(v, str) else v
            kw["I_IV"], kw["I_IE"] = self.const(raw)
        else:
            kw["I_IV"] = v - (1 << 64) if v >= 1 << 63 else v
        return kw


def _count_pbits(instructions: tuple[Instruction, ...]) -> int:
    n = 0
    for ins in instructions:
        if isinstance(ins, Field | Sequence):
            n += int(ins.optional)
        elif isinstance(ins, Group):
            n += int(ins.optional) + _count_pbits(ins.instructions)
    return n


@dataclass
class Columns:
    """Decoded messages as one structured array per record kind (see the module docstring)."""

    tables: dict[str, npt.NDArray[np.void]]
    #: Bytes of the values not read from the buffer (constants, dictionary values, deltas).
    heap: npt.NDArray[np.uint8]
    n_messages: int
    layouts: dict[str, KindLayout]
    _by_index: list[str] = field(default_factory=list)
    #: The decoded buffer: a string column below ``len(buf)`` points into it.
    buf: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, np.uint8))
    #: Where each packet starts in ``buf`` (:meth:`ColumnDecoder.decode_packets`; else empty):
    #: ``np.searchsorted(packets, rows["offset"], "right") - 1`` is each row's packet.
    packets: npt.NDArray[np.int64] = field(default_factory=lambda: _NO_BOUNDS)

    def raw(self, offset: int, length: int, ascii: bool) -> bytes:
        """Return the bytes of a string column's (offset, length).

        Offsets below ``len(buf)`` are in the buffer (an ASCII value's last byte still has
        the stop bit, cleared here); the others are ``len(buf)`` + an offset into ``heap``.
        """
        n = len(self.buf)
        if offset >= n:
            return self.heap[offset - n : offset - n + length].tobytes()
        raw = bytearray(self.buf[offset : offset + length].tobytes())
        if ascii and raw:
            raw[-1] &= 0x7F
        return bytes(raw)

    def present(self, table: str, name: str) -> npt.NDArray[np.bool_]:
        """Return whether field ``name`` is present in each row of ``table``."""
        layout = self.layouts[table]
        item = _find(layout.items, name)
        rows = self.tables[table]
        if item is None:
            raise KeyError(f"{table} has no field {name!r}")
        if item.pbit < 0:
            return np.ones(len(rows), bool)
        mask = rows[f"_mask{item.pbit // 64}"].astype(np.int64)
        return ((mask >> (item.pbit % 64)) & 1).astype(bool)

    def string(self, table: str, name: str, row: int) -> str | bytes | None:
        """Return string field ``name`` of ``row`` (None when absent)."""
        layout = self.layouts[table]
        item = _find(layout.items, name)
        if item is None:
            raise KeyError(f"{table} has no field {name!r}")
        r = self.tables[table][row]
        return self._scalar(item, r)  # type: ignore[return-value]

    def strings(self, table: str, name: str) -> list[str | bytes | None]:
        """Return string field ``name`` of every row of ``table`` (None where absent)."""
        layout = self.layouts[table]
        item = _find(layout.items, name)
        if item is None or _CLS[item.ftype] < k.C_ASCII:
            raise KeyError(f"{table} has no string field {name!r}")
        if item.what == "const":
            return [item.value] * len(self.tables[table])  # type: ignore[list-item]
        rows = self.tables[table]
        present = self.present(table, name)
        offs, lens = rows[name + "_off"].tolist(), rows[name + "_len"].tolist()
        ascii_ = item.ftype == FieldType.ASCII
        out: list[str | bytes | None] = []
        for ok, off, ln in zip(present.tolist(), offs, lens, strict=True):
            if not ok:
                out.append(None)
                continue
            raw = self.raw(off, ln, ascii_)
            if item.ftype == FieldType.BYTES:
                out.append(raw)
            else:
                out.append(raw.decode("latin-1" if ascii_ else "utf-8", "replace"))
        return out

    def _scalar(self, item: _Item, r: np.void) -> Value | None:
        if item.what == "const":
            return item.value
        if item.pbit >= 0 and not (int(r[f"_mask{item.pbit // 64}"]) >> (item.pbit % 64)) & 1:
            return None
        if item.ftype == FieldType.DECIMAL:
            return Decimal(int(r[item.name + "_exp"]), int(r[item.name]))
        if _CLS[item.ftype] >= k.C_ASCII:
            off, ln = int(r[item.name + "_off"]), int(r[item.name + "_len"])
            raw = self.raw(off, ln, item.ftype == FieldType.ASCII)
            if item.ftype == FieldType.ASCII:
                return raw.decode("latin-1")
            if item.ftype == FieldType.UNICODE:
                return raw.decode("utf-8", "replace")
            return raw
        return int(r[item.name])

    def messages(self) -> list[Message]:
        """Return the messages as :class:`Message` values, in stream order (cold path)."""
        tops: list[tuple[int, str, int]] = []
        for name, layout in self.layouts.items():
            if not layout.top:
                continue
            rows = self.tables[name]
            top = np.flatnonzero(rows["parent"] == -1)
            tops.extend((int(rows["msg"][i]), name, int(i)) for i in top)
        tops.sort()
        return [self._message(name, row) for _, name, row in tops]

    def _message(self, name: str, row: int) -> Message:
        layout = self.layouts[name]
        r = self.tables[name][row]
        fields = self._fields(layout.items, r)
        return Message(layout.template_id, name, fields, int(r["offset"]))

    def _fields(self, items: list[_Item], r: np.void) -> dict[str, Value]:
        out: dict[str, Value] = {}
        for it in items:
            short = it.name.rsplit(".", 1)[-1]
            if it.what in ("field", "const"):
                v = self._scalar(it, r)
                if v is not None:
                    out[short] = v
            elif it.what == "seq":
                if it.pbit >= 0 and not (int(r[f"_mask{it.pbit // 64}"]) >> (it.pbit % 64)) & 1:
                    continue
                child = self._by_index[it.child]
                first, count = int(r[it.name + "_first"]), int(r[it.name])
                rows = self.tables[child]
                out[short] = [self._fields(it.items, rows[i]) for i in range(first, first + count)]
            elif it.what == "group":
                if it.pbit >= 0 and not (int(r[f"_mask{it.pbit // 64}"]) >> (it.pbit % 64)) & 1:
                    continue
                out[short] = self._fields(it.items, r)
            else:
                tid, row = int(r["TemplateReference_tid"]), int(r["TemplateReference_row"])
                name = next(n for n, lay in self.layouts.items() if lay.template_id == tid)
                out["TemplateReference"] = self._message(name, row)
        return out


def _find(items: list[_Item], name: str) -> _Item | None:
    for it in items:
        if it.name == name:
            return it
        if it.what == "group":
            sub = _find(it.items, name)
            if sub is not None:
                return sub
    return None


class ColumnDecoder:
    """Decode FAST messages into :class:`Columns` with the compiled kernel.

    Parameters
    ----------
    templates : TemplateSet
        The templates.
    reset_per_packet : bool
        Reset every dictionary at the start of each :meth:`decode` call.
    slot_bytes : int
        Room for one string in the dictionaries (grown when a longer string arrives).
    """

    def __init__(
        self, templates: TemplateSet, *, reset_per_packet: bool = False, slot_bytes: int = 64
    ) -> None:
        c = _Compiler(templates)
        c.compile()
        self.templates = templates
        self.reset_per_packet = reset_per_packet
        self.layouts = c.kinds
        self._names = c.names
        self._prog = k.pack_program(np.array(c.prog, np.int64).reshape(-1, k.I_WIDTH))
        self._consts = np.frombuffer(bytes(c.consts) or b"\0", np.uint8).copy()
        self._tmpl = c.tmpl
        nslots = len(templates.slots)
        longest = max((len(c.consts), slot_bytes))
        self._dstate = np.zeros(nslots, np.int8)
        self._dval = np.zeros(nslots, np.int64)
        self._dexp = np.zeros(nslots, np.int64)
        self._dstr = np.zeros((nslots, longest), np.uint8)
        self._stack = np.zeros((64, k.F_WIDTH), np.int64)
        self._state = np.zeros(k.S_WIDTH, np.int64)
        self._rows_per_byte = np.full(len(self.layouts), 1 / 256)
        #: The arrays of the last ``decode(reuse=True)``: out, heap, capacities.
        self._keep: (
            tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], npt.NDArray[np.int64]] | None
        ) = None
        #: The kernel (tests swap in ``decode_columns.py_func`` to run it uncompiled).
        self._kernel: Callable[..., int] = k.decode_columns
        defined = {t.id for t in templates.templates}
        self._reset_tid = -1 if SCP_RESET_ID in defined else SCP_RESET_ID

    def reset(self) -> None:
        """Set every dictionary entry back to undefined (FAST 1.1 6.5)."""
        k.reset_dictionaries(self._dstate)

    def decode(
        self, buf: bytes | bytearray | memoryview | npt.NDArray[np.uint8], *, reuse: bool = False
    ) -> Columns:
        """Decode every message of ``buf`` into columns.

        Parameters
        ----------
        buf : bytes-like or uint8 array
            Messages back to back (kept: string columns point into it).
        reuse : bool
            Decode into the arrays of the last ``reuse=True`` call when they are large
            enough, instead of fresh ones: that call's :class:`Columns` is overwritten
            (a stream decoded batch after batch saves mapping fresh memory each time), and
            a column of an absent field holds whatever was there (see
            :meth:`Columns.present`).

        Raises
        ------
        FastDecodeError
            At the first bad message (offset, field, reason); ``error.columns`` holds the
            messages decoded before it.
        """
        data = np.frombuffer(buf, np.uint8) if not isinstance(buf, np.ndarray) else buf
        if self.reset_per_packet:
            self.reset()
        return self._decode(data, _NO_BOUNDS, 0, reuse)

    def decode_packets(self, payloads: Iterable[bytes], *, reuse: bool = False) -> Columns:
        """Decode the messages of several packets (datagram payloads) in one call.

        With ``reset_per_packet`` the dictionaries are reset at the start of every packet;
        a message running past the end of its packet is an error. :attr:`Columns.packets`
        holds where each packet starts in :attr:`Columns.buf`; an error's ``offset`` is in
        its packet (``error.packet_index``). Otherwise as :meth:`decode`.
        """
        parts = list(payloads)
        data = np.frombuffer(b"".join(parts), np.uint8)
        starts = np.cumsum([0] + [len(p) for p in parts[:-1]]).astype(np.int64)
        return self._decode(data, starts, int(self.reset_per_packet), reuse)

    def _decode(
        self,
        data: npt.NDArray[np.uint8],
        bounds: npt.NDArray[np.int64],
        reset_each: int,
        reuse: bool,
    ) -> Columns:
        nk = len(self.layouts)
        widths = np.array([lay.width for lay in self.layouts], np.int64)
        caps = np.maximum(64, (self._rows_per_byte * len(data) * 1.25).astype(np.int64) + 16)
        kinds = np.zeros((nk, k.K_COLS), np.int64)
        kinds[:, k.K_WIDTH] = widths
        kinds[:, k.K_NMASK] = [lay.nmask for lay in self.layouts]
        keep = self._keep if reuse else None
        if keep is not None and np.all(keep[2] >= caps):
            caps = keep[2].copy()
            out = self._layout(kinds, caps, None, None, keep[0])
        else:
            out = self._layout(kinds, caps, None, None)
        hsize = len(data) // 4 + 65536
        heap = keep[1] if keep is not None and len(keep[1]) >= hsize else np.empty(hsize, np.uint8)
        heap[: len(self._consts)] = self._consts  # constants are referred to, not copied
        rows = np.zeros(nk, np.int64)
        state = self._state
        state[:] = 0
        state[k.S_HEAP] = len(self._consts)
        pos = 0
        nmsg = 0
        while True:
            saved = (self._dstate.copy(), self._dval.copy(), self._dexp.copy(), self._dstr.copy())
            rows0, heap0 = rows.copy(), int(state[k.S_HEAP])
            status = self._kernel(
                data,
                pos,
                self._prog,
                self._consts,
                self._tmpl,
                kinds,
                rows,
                out,
                heap,
                self._dstate,
                self._dval,
                self._dexp,
                self._dstr,
                self._stack,
                state,
                nmsg,
                TemplateSet.TEMPLATE_ID_SLOT,
                self._reset_tid,
                bounds,
                reset_each,
            )
            if status in (k.ST_NEED_ROWS, k.ST_NEED_HEAP, k.ST_NEED_SLOT):
                self._dstate[:], self._dval[:], self._dexp[:] = saved[0], saved[1], saved[2]
                self._dstr = saved[3]
                rows[:] = rows0
                state[k.S_HEAP] = heap0
                if status == k.ST_NEED_SLOT:
                    self._dstr = np.zeros((len(self._dstr), 2 * self._dstr.shape[1]), np.uint8)
                    self._dstr[:, : saved[3].shape[1]] = saved[3]
                elif status == k.ST_NEED_HEAP:
                    heap = np.concatenate([heap, np.empty(len(heap), np.uint8)])
                else:
                    grow = caps.copy()
                    grow[int(state[k.S_ERR_VAL])] *= 4
                    out = self._layout(kinds, grow, out, rows)
                    caps = grow
                continue
            nmsg += int(state[k.S_NMSG])
            pos = int(state[k.S_POS])
            if status == k.ST_STOP:
                low = kinds[:, k.K_CAP] - rows < 16
                grow = np.where(low, caps * 2, caps)
                out = self._layout(kinds, grow, out, rows)
                caps = grow
                if len(heap) - state[k.S_HEAP] < 4096:
                    heap = np.concatenate([heap, np.empty(len(heap), np.uint8)])
                continue
            break
        if len(data):
            self._rows_per_byte = np.maximum(rows / len(data), 1 / 64)
        if reuse:
            self._keep = (out, heap, caps)
        if status != k.ST_OK:
            self._raise(status, state, data, kinds, rows, out, heap, nmsg, bounds)
        cols = self._columns(data, kinds, rows, out, heap, nmsg)
        cols.packets = bounds
        return cols

    def _layout(
        self,
        kinds: npt.NDArray[np.int64],
        caps: npt.NDArray[np.int64],
        old: npt.NDArray[np.int64] | None,
        rows: npt.NDArray[np.int64] | None,
        into: npt.NDArray[np.int64] | None = None,
    ) -> npt.NDArray[np.int64]:
        widths = kinds[:, k.K_WIDTH]
        sizes = caps * widths
        bases = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        out = np.zeros(int(sizes.sum()), np.int64) if into is None else into
        if old is not None and rows is not None:
            for i in range(len(kinds)):
                used = int(rows[i] * widths[i])
                ob, nb = int(kinds[i, k.K_BASE]), int(bases[i])
                out[nb : nb + used] = old[ob : ob + used]
        kinds[:, k.K_BASE] = bases
        kinds[:, k.K_CAP] = caps
        return out

    def _columns(
        self,
        data: npt.NDArray[np.uint8],
        kinds: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int64],
        out: npt.NDArray[np.int64],
        heap: npt.NDArray[np.uint8],
        nmsg: int,
    ) -> Columns:
        tables: dict[str, npt.NDArray[np.void]] = {}
        for i, lay in enumerate(self.layouts):
            base, w = int(kinds[i, k.K_BASE]), lay.width
            n = int(rows[i])
            tables[lay.name] = (
                out[base : base + n * w].view(lay.dtype) if n else np.zeros(0, lay.dtype)
            )
        layouts = {lay.name: lay for lay in self.layouts}
        used = int(self._state[k.S_HEAP])
        names = [lay.name for lay in self.layouts]
        return Columns(tables, heap[:used], nmsg, layouts, names, data)

    def _raise(
        self,
        status: int,
        state: npt.NDArray[np.int64],
        data: npt.NDArray[np.uint8],
        kinds: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int64],
        out: npt.NDArray[np.int64],
        heap: npt.NDArray[np.uint8],
        nmsg: int,
        bounds: npt.NDArray[np.int64],
    ) -> None:
        # Keep the rows of the complete messages: rows are appended in message order.
        for i, lay in enumerate(self.layouts):
            base, w = int(kinds[i, k.K_BASE]), lay.width
            msgs = out[base : base + int(rows[i]) * w : w]
            rows[i] = int(np.searchsorted(msgs, nmsg))
        partial = self._columns(data, kinds, rows, out, heap, nmsg)
        ins = int(state[k.S_ERR_INS])
        if status in (k.ERR_UNKNOWN_TID, k.ERR_NO_TID):
            where = "template id"
        elif ins < 0 or status in (k.ERR_PMAP_LONG, k.ERR_PMAP_OVERLONG, k.ERR_PMAP_BITS):
            where = "pmap"
        else:
            where = self._names[ins].split(".", 1)[-1]
        reason = _REASONS.get(status, f"status {status}").format(val=int(state[k.S_ERR_VAL]))
        offset, packet = int(state[k.S_ERR_POS]), -1
        if len(bounds):
            packet = int(np.searchsorted(bounds, offset, side="right")) - 1
            offset -= int(bounds[packet])
            partial.packets = bounds
        if status == k.ERR_PACKET:
            where = "message"
        err = FastDecodeError(reason, offset, where, nmsg)
        err.packet_index = packet
        err.columns = partial
        err.messages = partial.messages()
        raise err


# ----------------------------------------------------------------------------- warm-up

_WARM_XML = """<templates>
  <template name="W" id="1">
    <uInt32 name="U" id="1"><copy/></uInt32>
    <int64 name="I" id="2"><delta/></int64>
    <decimal name="D" id="3" presence="optional"><copy/></decimal>
    <string name="S" id="4"><tail value="AB"/></string>
    <sequence name="Q"><length name="N" id="5"/><uInt64 name="V" id="6"/></sequence>
  </template>
</templates>"""

# pmap (template id, U, D, S present), id 1, U 7, I +1, D -1/5 (0.5), S "Z", one element, V 9
_WARM_MESSAGE = bytes([0xF8, 0x81, 0x87, 0x81, 0xFF, 0x85, 0xDA, 0x81, 0x89])


def warm_up() -> None:
    """Run the FAST kernels once, so none compiles on a live packet.

    A small template set of every value class and operator decodes a few hand-made messages
    into columns, from bytes (a read-only buffer) and from a writable array (numba compiles
    each), and resets the dictionaries.

    Raises
    ------
    RuntimeError
        A decoded value differs from the one encoded.
    """
    decoder = ColumnDecoder(TemplateSet.from_xml(_WARM_XML, source="<fast warm-up>"))
    for data in (_WARM_MESSAGE * 2, np.frombuffer(_WARM_MESSAGE, np.uint8).copy()):
        cols = decoder.decode(data)
        decoder.reset()
        texts = [m.to_text() for m in cols.messages()]
        if texts[0] != "W=<U=7|I=1|D=0.5|S=AZ|Q=<V=9>>":
            raise RuntimeError(f"FAST warm-up decoded {texts[0]!r}")
