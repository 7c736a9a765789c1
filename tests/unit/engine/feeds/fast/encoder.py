# SPDX-License-Identifier: MIT
"""A small FAST 1.1 encoder for tests: the inverse of the decoder, written from the spec.

It encodes messages of a :class:`~engine.feeds.fast.templates.TemplateSet` (read by the
production parser, so both sides agree on the templates' structure and dictionary slots) with
the operators a market-data template set uses: none, constant, default, copy, increment and
delta (integers and decimals with one operator), presence maps, optional fields (nullable
encodings) and sequences. Strings are ASCII. It keeps its own dictionaries, as a feed handler
does, and :meth:`Encoder.reset` clears them.

    enc = Encoder(TemplateSet.from_xml(XML))
    packet = enc.encode(3, {"MsgSeqNum": 1, "MDEntries": [{...}, ...]})
"""

from __future__ import annotations

from typing import Any

from engine.feeds.fast.templates import (
    Decimal,
    Field,
    FieldType,
    Group,
    Instruction,
    Op,
    Operator,
    Sequence,
    TemplateRef,
    TemplateSet,
)

_UNDEFINED = object()


def uint(v: int) -> bytes:
    """Return ``v`` (>= 0) stop-bit coded: 7 bits a byte, high bit set on the last."""
    assert v >= 0
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(v & 0x7F)
        v >>= 7
    out.reverse()
    out[-1] |= 0x80
    return bytes(out)


def sint(v: int) -> bytes:
    """Return ``v`` stop-bit coded as a signed (two's complement) integer."""
    n = 1
    while not -(1 << (7 * n - 1)) <= v < (1 << (7 * n - 1)):
        n += 1
    u = v & ((1 << (7 * n)) - 1)
    out = [(u >> (7 * (n - 1 - j))) & 0x7F for j in range(n)]
    out[-1] |= 0x80
    return bytes(out)


def nullable_uint(v: int | None) -> bytes:
    """Return an optional unsigned integer: NULL is 0, a value ``v + 1``."""
    return b"\x80" if v is None else uint(v + 1)


def nullable_int(v: int | None) -> bytes:
    """Return an optional signed integer: NULL is 0, non-negative values ``v + 1``."""
    if v is None:
        return b"\x80"
    return sint(v + 1 if v >= 0 else v)


def ascii_(v: str | None, nullable: bool) -> bytes:
    """Return an ASCII string (stop bit on the last byte; NULL and "" as FAST 1.1 10.6.3)."""
    if v is None:
        assert nullable
        return b"\x80"
    if v == "":
        return b"\x00\x80" if nullable else b"\x80"
    raw = bytearray(v.encode("ascii"))
    raw[-1] |= 0x80
    return bytes(raw)


def pmap(bits: list[bool]) -> bytes:
    """Return a presence map of ``bits`` (trailing zero bytes dropped; at least one byte)."""
    while bits and not bits[-1]:
        bits = bits[:-1]
    groups = [bits[i : i + 7] for i in range(0, max(len(bits), 1), 7)]
    out = bytearray()
    for g in groups:
        b = 0
        for j, bit in enumerate(g):
            if bit:
                b |= 1 << (6 - j)
        out.append(b)
    out[-1] |= 0x80
    return bytes(out)


class Encoder:
    """Encode messages of a template set, keeping the operators' dictionaries."""

    def __init__(self, templates: TemplateSet) -> None:
        self.templates = templates
        self.dictionary: list[Any] = [_UNDEFINED] * len(templates.slots)

    def reset(self) -> None:
        """Clear every dictionary (as the decoder's reset)."""
        self.dictionary = [_UNDEFINED] * len(self.templates.slots)

    def encode(self, template_id: int, fields: dict[str, Any]) -> bytes:
        """Return one message of template ``template_id`` holding ``fields`` (name -> value)."""
        t = self.templates.by_id[template_id]
        if t.reset:
            self.reset()
        bits: list[bool] = []
        body = bytearray()
        slot = TemplateSet.TEMPLATE_ID_SLOT
        if self.dictionary[slot] == template_id:
            bits.append(False)
        else:
            bits.append(True)
            body += uint(template_id)
            self.dictionary[slot] = template_id
        self._run(t.instructions, fields, bits, body)
        return pmap(bits) + bytes(body)

    def _run(
        self,
        instructions: tuple[Instruction, ...],
        fields: dict[str, Any],
        bits: list[bool],
        body: bytearray,
    ) -> None:
        for ins in instructions:
            if isinstance(ins, Field):
                self._field(
                    ins, ins.operator, ins.type, ins.optional, fields.get(ins.name), bits, body
                )
            elif isinstance(ins, Sequence):
                items = fields.get(ins.name)
                n = None if items is None else len(items)
                ln = ins.length
                self._field(ln, ln.operator, ln.type, ins.optional, n, bits, body)
                for item in items or []:
                    sub_bits: list[bool] = []
                    sub = bytearray()
                    self._run(ins.instructions, item, sub_bits, sub)
                    body += (pmap(sub_bits) if ins.needs_pmap else b"") + sub
            elif isinstance(ins, Group | TemplateRef):
                raise NotImplementedError("the test encoder has no groups or dynamic refs")

    def _write(self, ftype: FieldType, v: Any, nullable: bool, body: bytearray) -> None:
        if ftype == FieldType.DECIMAL:
            if v is None:
                body += b"\x80"
                return
            assert isinstance(v, Decimal)
            body += nullable_int(v.exponent) if nullable else sint(v.exponent)
            body += sint(v.mantissa)
        elif ftype == FieldType.ASCII:
            body += ascii_(v, nullable)
        elif ftype in (FieldType.UINT32, FieldType.UINT64):
            body += nullable_uint(v) if nullable else uint(v)
        elif ftype in (FieldType.INT32, FieldType.INT64):
            body += nullable_int(v) if nullable else sint(v)
        else:
            raise NotImplementedError(f"the test encoder does not write {ftype.name}")

    def _field(
        self,
        f: Field,
        op: Operator,
        ftype: FieldType,
        optional: bool,
        v: Any,
        bits: list[bool],
        body: bytearray,
    ) -> None:
        if f.exponent is not None:
            raise NotImplementedError("the test encoder has no split decimal operators")
        if v is None and not optional and op.op in (Op.CONSTANT, Op.DEFAULT):
            v = op.initial  # a mandatory constant (or default) goes without saying
        if v is None and not optional:
            raise ValueError(f"{f.name}: mandatory field without a value")
        nullable = optional and op.op != Op.CONSTANT
        kind = op.op
        if kind == Op.NONE:
            self._write(ftype, v, nullable, body)
        elif kind == Op.CONSTANT:
            if v is not None and v != op.initial:
                raise ValueError(f"{f.name}: constant {op.initial!r}, not {v!r}")
            if optional:
                bits.append(v is not None)
        elif kind == Op.DEFAULT:
            if v == op.initial:
                bits.append(False)
            else:
                bits.append(True)
                self._write(ftype, v, nullable, body)
        elif kind in (Op.COPY, Op.INCREMENT):
            self._copy_increment(op, ftype, nullable, v, bits, body)
        elif kind == Op.DELTA:
            self._delta(op, ftype, nullable, v, body)
        else:
            raise NotImplementedError(f"the test encoder has no {kind.name} operator")

    def _copy_increment(
        self,
        op: Operator,
        ftype: FieldType,
        nullable: bool,
        v: Any,
        bits: list[bool],
        body: bytearray,
    ) -> None:
        prev = self.dictionary[op.slot]
        if prev is _UNDEFINED:
            implied = op.initial  # None: nothing to copy, the value must be sent
            known = op.initial is not None
        else:
            implied = prev + 1 if op.op == Op.INCREMENT and isinstance(prev, int) else prev
            known = True
        if known and v == implied:
            bits.append(False)
        else:
            bits.append(True)
            self._write(ftype, v, nullable, body)
        self.dictionary[op.slot] = v

    def _delta(
        self, op: Operator, ftype: FieldType, nullable: bool, v: Any, body: bytearray
    ) -> None:
        if v is None:
            body += b"\x80"  # NULL; the dictionary keeps its value
            return
        prev = self.dictionary[op.slot]
        base = prev if prev is not _UNDEFINED and prev is not None else op.initial
        if ftype == FieldType.DECIMAL:
            b = base if isinstance(base, Decimal) else Decimal(0, 0)
            de = v.exponent - b.exponent
            body += nullable_int(de) if nullable else sint(de)
            body += sint(v.mantissa - b.mantissa)
        else:
            d = v - (base if isinstance(base, int) else 0)
            body += nullable_int(d) if nullable else sint(d)
        self.dictionary[op.slot] = v


__all__ = ["Encoder", "ascii_", "nullable_int", "nullable_uint", "pmap", "sint", "uint"]
