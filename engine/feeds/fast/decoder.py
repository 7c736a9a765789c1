# SPDX-License-Identifier: MIT
"""FAST 1.1 decoding into plain Python values (the reference; the kernel path is faster).

A FAST stream is a run of messages. Each message is a presence map (stop-bit bytes, 7 bits
each), the template id (copy-coded in the global dictionary: present only when the first
bit is set) and the template's fields. Integers are stop-bit coded (7 bits a byte, the last
byte's high bit set; signed ones two's complement); an optional field that may be NULL
encodes value + 1 for non-negative integers and 0 for NULL. Operators keep their last value
in dictionaries, which this decoder carries from message to message until a reset.

    decoder = Decoder(TemplateSet.from_file("templates.xml"))
    for message in decoder.decode(payload):
        print(message.to_text())

Resets: :meth:`Decoder.reset` clears every dictionary; ``reset_per_packet=True`` does it at
the start of every :meth:`Decoder.decode` call and of every packet given to
:meth:`Decoder.decode_packets` (feeds that reset per packet); a template
with ``reset="yes"`` and the FAST session-control Reset message (template id 120, when the
set does not define 120) reset before decoding.

Errors (:class:`FastDecodeError`) say which message, at which byte offset, which field and
why (the FAST spec's error code where there is one); the messages decoded before the bad
one are in ``error.messages``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Union

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
    Template,
    TemplateRef,
    TemplateSet,
    pmap_bits,
)

#: Template id of the FAST session-control Reset message (SCP 1.1).
SCP_RESET_ID = 120
#: Longest presence map accepted, in bytes (a runaway map is reported, not read to the end).
MAX_PMAP_BYTES = 64
#: Longest sequence accepted with more elements than bytes left (elements of constants only
#: take no bytes; a longer one in bad data would otherwise fill memory).
MAX_EMPTY_SEQ = 1 << 20


class FastDecodeError(ValueError):
    """Bad FAST data: the message index, byte offset, field and reason, plus what decoded.

    Attributes
    ----------
    offset : int
        Byte offset (in the buffer given) where the bad entity starts.
    message_index : int
        Index of the message being decoded (in this call).
    field : str
        Name of the field (or ``"pmap"``, ``"template id"``) being decoded.
    messages : list[Message]
        The messages decoded before the bad one (kept; their dictionary updates stand).
    columns : Columns or None
        The same, as columns, when the column decoder raised.
    """

    def __init__(self, reason: str, offset: int, field: str, message_index: int = 0) -> None:
        self.reason = reason
        self.offset = offset
        self.field = field
        self.message_index = message_index
        self.messages: list[Message] = []
        #: Index of the packet holding the bad message (``decode_packets``; else -1), whose
        #: start ``offset`` counts from.
        self.packet_index = -1
        #: The column decoder's output up to the bad message, an
        #: :class:`engine.feeds.fast.columnar.Columns` (None from the Python decoder; typed
        #: ``object`` here because the column decoder imports this module).
        self.columns: object | None = None
        super().__init__(self._text())

    def _text(self) -> str:
        packet = f"packet {self.packet_index} " if self.packet_index >= 0 else ""
        return (
            f"FAST {packet}message {self.message_index} at offset {self.offset}: "
            f"field {self.field}: {self.reason}"
        )

    def __str__(self) -> str:
        return self._text()


#: A decoded value: scalars, sequences (lists of field dicts), groups, dynamic references.
Value = Union[Scalar, list[dict[str, "Value"]], dict[str, "Value"], "Message"]


@dataclass(frozen=True, slots=True)
class Message:
    """One decoded message: its template and its fields in template order.

    Absent optional fields are left out of ``fields``; a sequence is a list of dicts, a
    group a dict, a dynamic template reference a nested :class:`Message` (under
    ``TemplateReference``).
    """

    template_id: int
    name: str
    fields: dict[str, Value]
    #: Byte offset of the message in the buffer it was decoded from.
    offset: int = 0
    #: Its length in bytes.
    size: int = 0

    def to_text(self) -> str:
        """Return the message as rs-fastlib's ``TextMessageFactory`` writes it."""
        return f"{self.name}=<{_text_fields(self.fields)}>"

    def to_json(self) -> str:
        """Return the message as rs-fastlib's ``JsonMessageFactory`` writes it."""
        return f'{{"{self.name}":{{{_json_fields(self.fields)}}}}}'


def _text_fields(fields: dict[str, Value]) -> str:
    parts: list[str] = []
    for name, v in fields.items():
        if isinstance(v, list):
            parts.append(f"{name}=" + "".join(f"<{_text_fields(item)}>" for item in v))
        elif isinstance(v, dict):
            parts.append(f"{name}=<{_text_fields(v)}>")
        elif isinstance(v, Message):
            parts.append(f"TemplateReference=<{v.to_text()}>")
        elif isinstance(v, bytes):
            parts.append(f"{name}={v.hex()}")
        else:
            parts.append(f"{name}={v}")
    return "|".join(parts)


def _json_fields(fields: dict[str, Value]) -> str:
    parts: list[str] = []
    for name, v in fields.items():
        if isinstance(v, list):
            items = ",".join(f"{{{_json_fields(item)}}}" for item in v)
            parts.append(f'"{name}":[{items}]')
        elif isinstance(v, dict):
            parts.append(f'"{name}":{{{_json_fields(v)}}}')
        elif isinstance(v, Message):
            parts.append(f'"TemplateReference":{v.to_json()}')
        elif isinstance(v, str):
            parts.append(f'"{name}":"{v}"')
        elif isinstance(v, bytes):
            parts.append(f'"{name}":"{v.hex()}"')
        elif isinstance(v, Decimal):
            # rs-fastlib's Display: a fixed number of digits, ".0" kept on whole numbers
            text = f"{v.mantissa * 10**v.exponent}.0" if v.exponent >= 0 else _fixed(v)
            parts.append(f'"{name}":{text}')
        else:
            parts.append(f'"{name}":{v}')
    return ",".join(parts)


def _fixed(v: Decimal) -> str:
    div = 10**-v.exponent
    q, r = divmod(abs(v.mantissa), div)
    return f"{'-' if v.mantissa < 0 else ''}{q}.{r:0{-v.exponent}d}"


class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"


#: Dictionary state of an entry never assigned since the last reset.
UNDEFINED = _Undefined()
#: A dictionary entry holds a value, ``None`` (empty: the field was absent) or UNDEFINED.
DictValue = Scalar | None | _Undefined


class _Pmap:
    __slots__ = ("bits", "offset", "pos")

    def __init__(self, bits: int, nbits: int, offset: int = 0) -> None:
        self.bits = bits  # the map's bits, the first one highest
        self.pos = nbits  # bits left
        self.offset = offset  # where the map starts in the buffer

    def next(self) -> bool:
        if self.pos == 0:
            return False  # bits past the end of the map read as zero (FAST 1.1 6.2.1)
        self.pos -= 1
        return bool((self.bits >> self.pos) & 1)


class Decoder:
    """Decode FAST messages of a template set, keeping the operators' dictionaries.

    Parameters
    ----------
    templates : TemplateSet
        The templates (from :meth:`TemplateSet.from_file`).
    reset_per_packet : bool
        Reset every dictionary at the start of each :meth:`decode` call.
    """

    def __init__(self, templates: TemplateSet, *, reset_per_packet: bool = False) -> None:
        self.templates = templates
        self.reset_per_packet = reset_per_packet
        self.dictionary: list[DictValue] = [UNDEFINED] * len(templates.slots)
        self._buf = b""
        self._pos = 0
        self._field = ""
        self._msg_ix = 0

    def reset(self) -> None:
        """Set every dictionary entry back to undefined (FAST 1.1 6.5)."""
        self.dictionary = [UNDEFINED] * len(self.templates.slots)

    def decode(self, buf: bytes | bytearray | memoryview) -> list[Message]:
        """Return every message of ``buf`` (a packet's payload: messages back to back).

        Raises
        ------
        FastDecodeError
            At the first bad message; ``error.messages`` holds the ones decoded before it.
        """
        if self.reset_per_packet:
            self.reset()
        return list(self.iter_decode(buf))

    def decode_packets(self, payloads: Iterable[bytes | bytearray | memoryview]) -> list[Message]:
        """Return the messages of several packets, resetting before each if configured.

        Raises
        ------
        FastDecodeError
            As :meth:`decode`, with ``packet_index`` set and ``offset`` in that packet;
            ``error.messages`` holds every message decoded before (earlier packets too).
        """
        out: list[Message] = []
        for i, payload in enumerate(payloads):
            if self.reset_per_packet:
                self.reset()
            before = len(out)
            try:
                out.extend(self.iter_decode(payload))
            except FastDecodeError as e:
                e.packet_index = i
                e.message_index += before
                e.messages = out[:before] + e.messages  # earlier packets, then this one's
                raise
        return out

    def iter_decode(self, buf: bytes | bytearray | memoryview) -> Iterator[Message]:
        """Yield the messages of ``buf`` one at a time (no reset; errors as :meth:`decode`)."""
        self._buf = bytes(buf)
        self._pos = 0
        self._msg_ix = 0
        done: list[Message] = []
        while self._pos < len(self._buf):
            try:
                msg = self._message()
            except FastDecodeError as e:
                e.message_index = self._msg_ix
                e.messages = done
                raise
            done.append(msg)
            self._msg_ix += 1
            yield msg

    # --- primitives -----------------------------------------------------------------------

    def _fail(self, reason: str, offset: int | None = None) -> FastDecodeError:
        return FastDecodeError(
            reason, self._pos if offset is None else offset, self._field, self._msg_ix
        )

    def _uint(self) -> int:
        buf, pos, start = self._buf, self._pos, self._pos
        v = 0
        while True:
            if pos >= len(buf):
                raise self._fail(f"stop-bit entity cut off after {pos - start} bytes", start)
            c = buf[pos]
            pos += 1
            v = (v << 7) | (c & 0x7F)
            if c & 0x80:
                break
            if pos - start >= 10:
                raise self._fail("stop-bit integer over 10 bytes", start)
        self._pos = pos
        return v

    def _int(self) -> int:
        start = self._pos
        first = self._buf[start] if start < len(self._buf) else 0
        v = self._uint()
        if first & 0x40:  # sign bit of the first byte: two's complement negative
            v -= 1 << (7 * (self._pos - start))
        return v

    def _nullable_uint(self, nullable: bool) -> int | None:
        v = self._uint()
        if not nullable:
            return v
        return None if v == 0 else v - 1

    def _nullable_int(self, nullable: bool) -> int | None:
        v = self._int()
        if not nullable:
            return v
        if v == 0:
            return None
        return v - 1 if v > 0 else v

    def _ascii(self, nullable: bool) -> str | None:
        buf, pos, start = self._buf, self._pos, self._pos
        while True:
            if pos >= len(buf):
                raise self._fail(f"string cut off after {pos - start} bytes", start)
            if buf[pos] & 0x80:
                break
            pos += 1
        raw = bytearray(buf[start : pos + 1])
        raw[-1] &= 0x7F
        self._pos = pos + 1
        if nullable:  # 0x80 is NULL, 0x00 0x80 is "", 0x00 0x00 0x80 is "\0"
            if raw == b"\x00":
                return None
            if raw[0] == 0 and len(raw) <= 3:
                raw = raw[1:]
        if raw == b"\x00":
            return ""
        if raw == b"\x00\x00":
            return "\x00"
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError:  # 7-bit bytes always decode; kept for clarity
            raise self._fail("string is not ASCII", start) from None

    def _bytes(self, nullable: bool) -> bytes | None:
        start = self._pos
        n = self._nullable_uint(nullable)
        if n is None:
            return None
        if self._pos + n > len(self._buf):
            raise self._fail(f"byte vector of {n} bytes runs past the end", start)
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def _pmap(self) -> _Pmap:
        buf, pos, start = self._buf, self._pos, self._pos
        bits = 0
        while True:
            if pos >= len(buf):
                raise self._fail(f"presence map cut off after {pos - start} bytes", start)
            c = buf[pos]
            pos += 1
            bits = (bits << 7) | (c & 0x7F)
            if c & 0x80:
                break
            if pos - start >= MAX_PMAP_BYTES:
                raise self._fail(f"presence map longer than {MAX_PMAP_BYTES} bytes", start)
        if pos - start > 1 and buf[pos - 1] == 0x80:
            raise self._fail(
                "overlong presence map: its last byte holds no set bit (ERR R7)", start
            )
        self._pos = pos
        return _Pmap(bits, 7 * (pos - start), start)

    # --- messages and instructions --------------------------------------------------------

    def _message(self) -> Message:
        start = self._pos
        self._field = "pmap"
        pmap = self._pmap()
        tmpl = self._template_id(pmap)
        fields: dict[str, Value] = {}
        self._instructions(tmpl.instructions, pmap, fields)
        self._check_pmap(pmap)
        return Message(tmpl.id, tmpl.name, fields, start, self._pos - start)

    def _template_id(self, pmap: _Pmap) -> Template:
        self._field = "template id"
        start = self._pos
        if pmap.next():
            tid = self._uint()
            self.dictionary[TemplateSet.TEMPLATE_ID_SLOT] = tid
        else:
            prev = self.dictionary[TemplateSet.TEMPLATE_ID_SLOT]
            if not isinstance(prev, int):
                raise self._fail("template id not in the stream and no previous one (ERR D5)")
            tid = prev
        tmpl = self.templates.by_id.get(tid)
        if tmpl is None and tid == SCP_RESET_ID:
            self.reset()
            return Template(SCP_RESET_ID, "Reset", (), 0, True)
        if tmpl is None:
            raise self._fail(f"unknown template id {tid} (ERR D9)", start)
        if tmpl.reset:
            self.reset()
            self.dictionary[TemplateSet.TEMPLATE_ID_SLOT] = tid
        return tmpl

    def _check_pmap(self, pmap: _Pmap) -> None:
        if pmap.pos and pmap.bits & ((1 << pmap.pos) - 1):
            self._field = "pmap"
            raise self._fail(
                "presence map has more bits set than its fields use (ERR R8)", pmap.offset
            )

    def _instructions(
        self, instructions: tuple[Instruction, ...], pmap: _Pmap, out: dict[str, Value]
    ) -> None:
        for ins in instructions:
            if isinstance(ins, Field):
                self._field = ins.name
                v = self._field_value(ins, pmap)
                if v is not None:
                    out[ins.name] = v
            elif isinstance(ins, Sequence):
                self._sequence(ins, pmap, out)
            elif isinstance(ins, Group):
                self._group(ins, pmap, out)
            else:
                self._dynamic_ref(ins, out)

    def _sequence(self, seq: Sequence, pmap: _Pmap, out: dict[str, Value]) -> None:
        self._field = seq.length.name
        n = self._field_value(seq.length, pmap)
        if n is None:
            return
        assert isinstance(n, int)
        if n > len(self._buf) - self._pos and n > MAX_EMPTY_SEQ:
            raise self._fail(
                f"sequence of {n} elements: more than the bytes left and {MAX_EMPTY_SEQ}"
            )
        needs_pmap = pmap_bits(seq.instructions) > 0
        items: list[dict[str, Value]] = []
        for _ in range(n):
            item: dict[str, Value] = {}
            if needs_pmap:
                self._field = f"{seq.name} pmap"
                inner = self._pmap()
                self._instructions(seq.instructions, inner, item)
                self._check_pmap(inner)
            else:
                self._instructions(seq.instructions, _Pmap(0, 0), item)
            items.append(item)
        out[seq.name] = items

    def _group(self, group: Group, pmap: _Pmap, out: dict[str, Value]) -> None:
        if group.optional and not pmap.next():
            return
        item: dict[str, Value] = {}
        if pmap_bits(group.instructions) > 0:
            self._field = f"{group.name} pmap"
            inner = self._pmap()
            self._instructions(group.instructions, inner, item)
            self._check_pmap(inner)
        else:
            self._instructions(group.instructions, _Pmap(0, 0), item)
        out[group.name] = item

    def _dynamic_ref(self, ref: TemplateRef, out: dict[str, Value]) -> None:
        start = self._pos
        self._field = "pmap"
        pmap = self._pmap()
        tmpl = self._template_id(pmap)
        fields: dict[str, Value] = {}
        self._instructions(tmpl.instructions, pmap, fields)
        self._check_pmap(pmap)
        key = "TemplateReference"
        n = 1
        while key in out:
            n += 1
            key = f"TemplateReference#{n}"
        out[key] = Message(tmpl.id, tmpl.name, fields, start, self._pos - start)

    # --- fields and operators -------------------------------------------------------------

    def _read(self, f: Field, ftype: FieldType, nullable: bool) -> Scalar | None:
        """Read a value of ``ftype`` from the stream (None: NULL)."""
        start = self._pos
        if ftype in (FieldType.UINT32, FieldType.UINT64):
            v: Scalar | None = self._nullable_uint(nullable)
        elif ftype in (FieldType.INT32, FieldType.INT64):
            v = self._nullable_int(nullable)
        elif ftype == FieldType.DECIMAL:
            e = self._nullable_int(nullable)
            if e is None:
                return None
            if not -63 <= e <= 63:
                raise self._fail(f"decimal exponent {e} outside [-63, 63] (ERR R1)", start)
            m = self._int()
            self._check_range(m, FieldType.INT64, start)
            v = Decimal(e, m)
        elif ftype == FieldType.ASCII:
            v = self._ascii(nullable)
        elif ftype == FieldType.UNICODE:
            b = self._bytes(nullable)
            if b is None:
                return None
            try:
                v = b.decode("utf-8")
            except UnicodeDecodeError as e:
                raise self._fail(f"unicode string is not UTF-8 ({e.reason})", start) from None
        else:
            v = self._bytes(nullable)
        if isinstance(v, int):
            self._check_range(v, ftype, start)
        return v

    def _check_range(self, v: int, ftype: FieldType, start: int) -> None:
        lo, hi = INT_RANGE[ftype]
        if not lo <= v <= hi:
            raise self._fail(f"value {v} is outside {ftype.name} (ERR R4)", start)

    def _field_value(self, f: Field, pmap: _Pmap) -> Scalar | None:
        if f.exponent is not None and f.mantissa is not None:
            e = self._apply(f, f.exponent, FieldType.INT32, f.optional, pmap)
            if e is None:
                return None
            m = self._apply(f, f.mantissa, FieldType.INT64, False, pmap)
            assert isinstance(e, int)
            assert isinstance(m, int)
            return Decimal(e, m)
        return self._apply(f, f.operator, f.type, f.optional, pmap)

    def _apply(
        self, f: Field, op: Operator, ftype: FieldType, optional: bool, pmap: _Pmap
    ) -> Scalar | None:
        nullable = optional and op.op != Op.CONSTANT
        kind = op.op
        if kind == Op.NONE:
            return self._read(f, ftype, nullable)
        if kind == Op.CONSTANT:
            if optional and not pmap.next():
                return None
            return op.initial
        if kind == Op.DEFAULT:
            if pmap.next():
                return self._read(f, ftype, nullable)
            if op.initial is None and not optional:
                raise self._fail("default operator without a value (ERR D5)")
            return op.initial
        if kind == Op.DELTA:
            return self._delta(f, op, ftype, nullable)
        prev = self.dictionary[op.slot]
        if kind == Op.TAIL:
            return self._tail(f, op, ftype, nullable, pmap.next(), prev)
        return self._copy_increment(f, op, ftype, optional, pmap.next(), prev)

    def _copy_increment(
        self,
        f: Field,
        op: Operator,
        ftype: FieldType,
        optional: bool,
        present: bool,
        prev: DictValue,
    ) -> Scalar | None:
        d = self.dictionary
        kind = op.op
        if present:  # the value is in the stream
            v = self._read(f, ftype, optional)
            d[op.slot] = v
            return v
        if isinstance(prev, _Undefined):
            if op.initial is None and not optional:
                raise self._fail(f"{kind.name.lower()}: no value, no previous, no initial (D5)")
            d[op.slot] = op.initial
            return op.initial
        if prev is None:
            if not optional:
                raise self._fail(f"{kind.name.lower()}: previous value is empty (ERR D6)")
            return None
        if kind == Op.INCREMENT:
            assert isinstance(prev, int)
            v = prev + 1
            self._check_range(v, ftype, self._pos)
            d[op.slot] = v
            return v
        return prev

    def _base(self, op: Operator, ftype: FieldType, empty_ok: bool) -> Scalar:
        prev = self.dictionary[op.slot]
        if prev is None and not empty_ok:
            raise self._fail("delta: previous value is empty (ERR D6)")
        if prev is None or isinstance(prev, _Undefined):
            if op.initial is not None:
                return op.initial
            if ftype == FieldType.DECIMAL:
                return Decimal(0, 0)
            if ftype in (FieldType.ASCII, FieldType.UNICODE):
                return ""
            return b"" if ftype == FieldType.BYTES else 0
        return prev

    def _delta(self, f: Field, op: Operator, ftype: FieldType, nullable: bool) -> Scalar | None:
        start = self._pos
        if ftype == FieldType.DECIMAL:
            de = self._nullable_int(nullable)
            if de is None:
                return None
            dm = self._int()
            base = self._base(op, ftype, False)
            assert isinstance(base, Decimal)
            dv = Decimal(base.exponent + de, base.mantissa + dm)
            self._check_range(dv.mantissa, FieldType.INT64, start)
            if not -63 <= dv.exponent <= 63:
                raise self._fail(f"decimal exponent {dv.exponent} outside [-63, 63]", start)
            v: Scalar = dv
        elif ftype in (FieldType.ASCII, FieldType.UNICODE, FieldType.BYTES):
            sub = self._nullable_int(nullable)
            if sub is None:
                return None
            diff = self._read(
                f, FieldType.ASCII if ftype == FieldType.ASCII else FieldType.BYTES, False
            )
            base = self._base(op, ftype, False)
            if ftype == FieldType.UNICODE:
                assert isinstance(diff, bytes)
                assert isinstance(base, str)
                spliced = self._splice(base.encode("utf-8"), sub, diff, start)
                assert isinstance(spliced, bytes)
                v = spliced.decode("utf-8", "replace")
            else:
                assert isinstance(diff, str | bytes)
                assert isinstance(base, str | bytes)
                v = self._splice(base, sub, diff, start)
        else:
            delta = self._nullable_int(nullable)
            if delta is None:
                return None
            base = self._base(op, ftype, False)
            assert isinstance(base, int)
            v = base + delta
            self._check_range(v, ftype, start)
        self.dictionary[op.slot] = v
        return v

    def _splice(self, base: str | bytes, sub: int, diff: str | bytes, start: int) -> str | bytes:
        front = sub < 0
        n = -sub - 1 if front else sub  # a negative length is excess-1 coded (FAST 1.1 6.3.7.3)
        if n > len(base):
            raise self._fail(
                f"delta removes {n} from a value of length {len(base)} (ERR D7)", start
            )
        if isinstance(base, str):
            d = diff if isinstance(diff, str) else diff.decode("latin-1")
            return d + base[n:] if front else base[: len(base) - n] + d
        b = diff if isinstance(diff, bytes) else diff.encode("latin-1")
        return b + base[n:] if front else base[: len(base) - n] + b

    def _tail(
        self,
        f: Field,
        op: Operator,
        ftype: FieldType,
        nullable: bool,
        present: bool,
        prev: DictValue,
    ) -> Scalar | None:
        d = self.dictionary
        if present:
            raw = self._read(
                f, FieldType.ASCII if ftype == FieldType.ASCII else FieldType.BYTES, nullable
            )
            if raw is None:
                d[op.slot] = None
                return None
            base = self._base(op, ftype, True)
            if ftype == FieldType.UNICODE:
                assert isinstance(raw, bytes)
                assert isinstance(base, str)
                b = base.encode("utf-8")
                v: Scalar = (b[: len(b) - len(raw)] + raw if len(raw) <= len(b) else raw).decode(
                    "utf-8", "replace"
                )
            else:
                assert isinstance(raw, str | bytes)
                assert isinstance(base, str | bytes)
                v = raw if len(raw) >= len(base) else base[: len(base) - len(raw)] + raw  # type: ignore[operator]
            d[op.slot] = v
            return v
        if isinstance(prev, _Undefined):
            if op.initial is None and not nullable:
                raise self._fail("tail: no value, no previous, no initial (ERR D6)")
            d[op.slot] = op.initial
            return op.initial
        if prev is None:
            if not nullable:
                raise self._fail("tail: previous value is empty (ERR D7)")
            return None
        return prev
