# SPDX-License-Identifier: MIT
"""Schema-driven SBE encoding: messages and MDP 3.0 packets from plain values (issue 20).

The other direction of :class:`~engine.feeds.sbe.decoder.SbeDecoder`, for publishers (the
simulator's MDP 3.0 feed, :mod:`engine.sim.mdp3_feed`). :class:`SbeEncoder` compiles each
message's and group's block once from the :class:`~engine.feeds.sbe.schema.Schema`: its bytes
with every column null, and per column a :class:`struct.Struct` at its offset. A message is
then its header, its root block (the null row with the given columns packed in), each group's
dimension (``blockLength``, ``numInGroup``) and entries, and its var data:

    enc = SbeEncoder(load_schema("templates_FixBinary.xml"))
    msg = enc.encode(47, {"TransactTime": 5, "MatchEventIndicator": 0x84},
                     {"NoMDEntries": [{"OrderID": 1, "MDEntryPx.mantissa": 10**9, ...}]})
    packet = mdp3_packet(seq, sending_time_ns, [msg])

Columns are named as the decoder names them (``MDEntryPx.mantissa``); a column left out is
written as its null value; constants take no bytes. Char columns take ``str`` or ``bytes``
(texts are NUL-padded), a char enum its one-character value. Values that do not fit raise
:class:`EncodeError` naming the message and column.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from engine.feeds.sbe.schema import PRIMITIVES, Block, EncodedType, Group, Schema

Values = Mapping[str, Any]

#: numpy kind -> struct format character.
_STRUCT = {
    "i1": "b",
    "i2": "h",
    "i4": "i",
    "i8": "q",
    "u1": "B",
    "u2": "H",
    "u4": "I",
    "u8": "Q",
    "f4": "f",
    "f8": "d",
}

_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}

#: MDP 3.0 packet header: MsgSeqNum (u32 LE), SendingTime (u64 LE).
MDP3_HEADER = struct.Struct("<IQ")
_MSG_SIZE = struct.Struct("<H")


class EncodeError(ValueError):
    """A value that the schema cannot carry (unknown column or group, out of range, too long)."""


#: How a column is packed: ``(kind, offset, struct.pack_into, size)``; kind 0 a scalar, 1 an
#: array (values unpacked), 2 a char array (bytes, NUL-padded, at most ``size``).
_Col = tuple[int, int, Callable[..., None], int]
_SCALAR, _ARRAY, _TEXT = 0, 1, 2


class _BlockCodec:
    """One block compiled: its null bytes and each column's packer."""

    def __init__(self, block: Block, order: str, where: str) -> None:
        self.block = block
        self.where = where
        self.null = block.null_row()
        self.cols: dict[str, _Col] = {}
        for c in block.columns:
            kind = PRIMITIVES[c.type.primitive][0]
            n = c.type.length
            if kind == "S":
                self.cols[c.name] = (_TEXT, c.offset, struct.Struct(f"{n}s").pack_into, c.size)
            else:
                st = struct.Struct(f"{order}{n}{_STRUCT[kind]}")
                self.cols[c.name] = (_ARRAY if n > 1 else _SCALAR, c.offset, st.pack_into, c.size)
        self.groups: list[tuple[str, _BlockCodec, bytes, struct.Struct, int]] = []
        self.group_names: set[str] = set()
        self.data = block.data
        self.skip = {d.name for d in block.data}  # values that are not columns: var data, groups
        self.order = order

    def pack(self, values: Values, out: bytearray) -> None:
        buf = bytearray(self.null)
        cols = self.cols
        name, v = "", None
        try:
            for name, v in values.items():
                c = cols.get(name)
                if c is None:
                    if name in self.skip:
                        continue
                    raise EncodeError(f"{self.where} has no column {name!r}")
                kind, at, pack_into, size = c
                if kind == _SCALAR:
                    pack_into(buf, at, v)
                elif kind == _TEXT:
                    raw = v.encode("latin-1") if isinstance(v, str) else bytes(v)
                    if len(raw) > size:
                        raise EncodeError(
                            f"{self.where}.{name}: {raw!r} is longer than {size} bytes"
                        )
                    pack_into(buf, at, raw)
                else:
                    pack_into(buf, at, *v)
        except (struct.error, TypeError, IndexError) as e:
            raise EncodeError(f"{self.where}.{name}: {v!r} does not fit: {e}") from None
        out += buf

    def pack_rest(
        self, values: Values, groups: Mapping[str, Sequence[Values]], out: bytearray
    ) -> None:
        """Append the groups (each its dimension and entries) and the var data."""
        for name in groups:
            if name not in self.group_names:
                raise EncodeError(f"{self.where} has no group {name!r}")
        for name, codec, dim, count, n_off in self.groups:
            entries = groups.get(name, ())
            at = len(out)
            out += dim
            try:
                count.pack_into(out, at + n_off, len(entries))
            except struct.error:
                raise EncodeError(f"{codec.where}: {len(entries)} entries do not fit") from None
            nested = bool(codec.groups) or bool(codec.data)
            for e in entries:
                codec.pack(e, out)
                if nested:
                    inner = {g: e[g] for g in codec.group_names if g in e}
                    codec.pack_rest(e, inner, out)
        for d in self.data:
            raw = values.get(d.name, b"")
            raw = raw.encode("latin-1") if isinstance(raw, str) else bytes(raw)
            head = bytearray(d.data_offset)
            try:
                head[d.length_offset : d.length_offset + d.length_type.size] = len(raw).to_bytes(
                    d.length_type.size, "little" if self.order == "<" else "big"
                )
            except OverflowError:
                raise EncodeError(f"{self.where}.{d.name}: {len(raw)} bytes is too long") from None
            out += head
            out += raw


def _uint_part(group: Group, member: str) -> tuple[int, int]:
    assert group.dimension is not None
    p = group.dimension.part(member)
    assert isinstance(p.type, EncodedType)
    return p.offset, p.type.size


def _compile(block: Block, order: str, where: str) -> _BlockCodec:
    codec = _BlockCodec(block, order, where)
    bo: Literal["little", "big"] = "little" if order == "<" else "big"
    for g in block.groups:
        inner = _compile(g, order, f"{where}.{g.name}")
        assert g.dimension is not None
        dim = bytearray(g.dimension.size)
        off, size = _uint_part(g, "blockLength")
        dim[off : off + size] = g.block_length.to_bytes(size, bo)
        n_off, n_size = _uint_part(g, "numInGroup")
        count = struct.Struct(f"{order}{_UINT[n_size]}")  # numInGroup, at n_off
        codec.groups.append((g.name, inner, bytes(dim), count, n_off))
        codec.group_names.add(g.name)
        codec.skip.add(g.name)
    return codec


class SbeEncoder:
    """Encode any message of a schema from plain values (see the module docstring).

    Parameters
    ----------
    schema : Schema
        The schema the messages are sent with (its id and version go in every header).
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        order = schema.byte_order
        self._order = order
        self._codecs: dict[int, _BlockCodec] = {}
        self._headers: dict[int, bytes] = {}
        bo: Literal["little", "big"] = "little" if order == "<" else "big"
        for tid, msg in schema.messages.items():
            self._codecs[tid] = _compile(msg, order, msg.name)
            head = bytearray(schema.header.size)
            for member, value in (
                ("blockLength", msg.block_length),
                ("templateId", tid),
                ("schemaId", schema.id),
                ("version", schema.version),
            ):
                off, size = schema.header_offset(member)
                head[off : off + size] = value.to_bytes(size, bo)
            self._headers[tid] = bytes(head)
        self._by_name = {m.name: t for t, m in schema.messages.items()}
        self._by_name.update(
            {m.description: t for t, m in schema.messages.items() if m.description}
        )

    def template_id(self, key: int | str) -> int:
        """Return the templateId of a message given by id or name (KeyError if unknown)."""
        if isinstance(key, int) and key in self._codecs:
            return key
        if isinstance(key, str) and key in self._by_name:
            return self._by_name[key]
        raise KeyError(
            f"{self.schema.path.name} (schema {self.schema.id} v{self.schema.version}) "
            f"has no message {key!r}"
        )

    def encode(
        self,
        template: int | str,
        root: Values,
        groups: Mapping[str, Sequence[Values]] | None = None,
    ) -> bytes:
        """Return one SBE message: header, root block, groups, var data.

        Raises
        ------
        EncodeError
            For a column or group the message does not have, or a value that does not fit.
        KeyError
            For a template the schema does not have.
        """
        tid = self.template_id(template)
        codec = self._codecs[tid]
        out = bytearray(self._headers[tid])
        codec.pack(root, out)
        codec.pack_rest(root, groups or {}, out)
        return bytes(out)


def mdp3_packet(seq: int, sending_time: int, messages: Sequence[bytes]) -> bytes:
    """Return an MDP 3.0 packet: MsgSeqNum, SendingTime, then each message after its MsgSize.

    Raises
    ------
    EncodeError
        If a message is longer than a MsgSize can say (65,533 bytes).
    """
    parts = [MDP3_HEADER.pack(seq, sending_time)]
    for m in messages:
        if len(m) + 2 > 0xFFFF:
            raise EncodeError(f"an MDP 3.0 message of {len(m)} bytes does not fit MsgSize")
        parts.append(_MSG_SIZE.pack(len(m) + 2))
        parts.append(m)
    return b"".join(parts)


def pack_mdp3(
    messages: Sequence[bytes], max_payload: int, first_seq: int, sending_time: int
) -> list[bytes]:
    """Return ``messages`` packed into as few MDP 3.0 packets of ``max_payload`` bytes as fit.

    Packets are numbered from ``first_seq``; a message alone larger than ``max_payload`` goes
    in a packet of its own.
    """
    out: list[bytes] = []
    i, n = 0, len(messages)
    seq = first_seq
    while i < n:
        size = MDP3_HEADER.size
        j = i
        while j < n and (j == i or size + 2 + len(messages[j]) <= max_payload):
            size += 2 + len(messages[j])
            j += 1
        out.append(mdp3_packet(seq, sending_time, messages[i:j]))
        seq += 1
        i = j
    return out


__all__ = ["MDP3_HEADER", "EncodeError", "SbeEncoder", "mdp3_packet", "pack_mdp3"]
