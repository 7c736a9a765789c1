# SPDX-License-Identifier: MIT
"""A schema-driven SBE encoder, for tests: messages and MDP 3.0 packets with known fields.

Everything comes from the :class:`~engine.feeds.sbe.schema.Schema` (the same one the decoder
reads): the message header's members at their offsets, each block's ``blockLength`` and its
columns' offsets, types and null values, each group's dimension composite (``groupSize``,
``groupSize8Byte``: ``numInGroup`` at offset 7) and var data's length composite. A message is
given as plain values:

    encode_message(schema, 47, {"TransactTime": 5, "MatchEventIndicator": 0x84},
                   {"NoMDEntries": [{"OrderID": 1, "MDEntryPx.mantissa": 10**9, ...}]})

Columns left out are written as their null value (what the decoder reads back as absent);
constant fields take no bytes. A group entry's nested groups are lists under their names, its
var data bytes under theirs. :func:`mdp3_packet` frames messages as CME does: ``MsgSeqNum``
(u32) and ``SendingTime`` (u64), then each message after its ``MsgSize`` (u16, counting itself).

:func:`values_of` turns a decoded row back into such values, so a message decoded from a real
capture can be encoded again and compared byte for byte.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.feeds.sbe.decoder import Decoded, TemplateRows
from engine.feeds.sbe.schema import Block, Column, EncodedType, Group, Schema

Values = Mapping[str, Any]


def _put(buf: bytearray, at: int, column: Column, value: Any, order: str) -> None:
    """Write one column's value at ``at`` (the block's start) + its offset."""
    fmt = column.numpy_format(order)
    if isinstance(value, str):
        value = value.encode("latin-1")
    if isinstance(fmt, str) and fmt.startswith("S"):
        raw = bytes(value)
        if len(raw) > column.size:
            raise ValueError(f"{column.name}: {raw!r} is longer than {column.size} bytes")
        raw = raw.ljust(column.size, b"\0")
    else:
        base = fmt if isinstance(fmt, str) else fmt[0]
        arr = np.asarray(value, dtype=np.dtype(base))
        if arr.size != column.type.length:
            raise ValueError(f"{column.name}: expected {column.type.length} values, got {arr.size}")
        raw = arr.tobytes()
    buf[at + column.offset : at + column.offset + column.size] = raw


def _uint(buf: bytearray, at: int, size: int, value: int, order: str) -> None:
    buf[at : at + size] = int(value).to_bytes(size, "little" if order == "<" else "big")


def encode_block(
    block: Block,
    values: Values,
    order: str,
    block_length: int | None = None,
    version: int | None = None,
) -> bytes:
    """Return a block's bytes: every column at its offset, null where ``values`` has none.

    ``block_length`` other than the schema's cuts the block or pads it with zeros (an older
    or newer sender); columns newer than ``version`` are not part of the sender's layout and
    left zero, as a sender of that version leaves its padding.
    """
    known = {c.name for c in block.columns}
    names = {g.name for g in block.groups} | {d.name for d in block.data}
    extra = [k for k in values if k not in known and k not in names and not k.startswith("_")]
    if extra:
        raise KeyError(f"{block.name} has no column {extra[0]!r}")
    buf = bytearray(block.null_row())
    for c in block.columns:
        if version is not None and c.since_version > version:
            buf[c.offset : c.offset + c.size] = bytes(c.size)
        elif c.name in values:
            _put(buf, 0, c, values[c.name], order)
    n = block.block_length if block_length is None else block_length
    return bytes(buf[:n]).ljust(n, b"\0")


def _dimension(group: Group, n: int, order: str) -> bytes:
    dim = group.dimension
    assert dim is not None
    buf = bytearray(dim.size)
    for member, value in (("blockLength", group.block_length), ("numInGroup", n)):
        p = dim.part(member)
        assert isinstance(p.type, EncodedType)
        _uint(buf, p.offset, p.type.size, value, order)
    return bytes(buf)


def _data(block: Block, values: Values, order: str) -> bytes:
    out = bytearray()
    for d in block.data:
        raw = bytes(values.get(d.name, b""))
        head = bytearray(d.data_offset)
        _uint(head, d.length_offset, d.length_type.size, len(raw), order)
        out += head + raw
    return bytes(out)


def encode_entries(
    block: Block, groups: Mapping[str, Sequence[Values]], order: str, version: int | None = None
) -> bytes:
    """Return the groups of a block (each its dimension header, then its entries), in order."""
    unknown = [g for g in groups if g not in {x.name for x in block.groups}]
    if unknown:
        raise KeyError(f"{block.name} has no group {unknown[0]!r}")
    out = bytearray()
    for g in block.groups:
        entries = groups.get(g.name, ())
        out += _dimension(g, len(entries), order)
        for e in entries:
            out += encode_block(g, e, order, version=version)
            inner = {x.name: e[x.name] for x in g.groups if x.name in e}
            out += encode_entries(g, inner, order, version)
            out += _data(g, e, order)
    return bytes(out)


def encode_message(
    schema: Schema,
    template: int | str,
    root: Values,
    groups: Mapping[str, Sequence[Values]] | None = None,
    *,
    version: int | None = None,
    block_length: int | None = None,
) -> bytes:
    """Return one SBE message: header, root block, groups, var data (from ``root``)."""
    msg = schema.message(template)
    order = schema.byte_order
    header = bytearray(schema.header.size)
    bl = msg.block_length if block_length is None else block_length
    ver = schema.version if version is None else version
    for member, value in (
        ("blockLength", bl),
        ("templateId", msg.id),
        ("schemaId", schema.id),
        ("version", ver),
    ):
        off, size = schema.header_offset(member)
        _uint(header, off, size, value, order)
    body = encode_block(msg, root, order, bl, ver)
    rest = encode_entries(msg, groups or {}, order, ver) + _data(msg, root, order)
    return bytes(header) + body + rest


def mdp3_packet(seq: int, sending_time: int, messages: Sequence[bytes]) -> bytes:
    """Return an MDP 3.0 packet: MsgSeqNum, SendingTime, then each message after its size."""
    out = bytearray(struct.pack("<IQ", seq, sending_time))
    for m in messages:
        out += struct.pack("<H", len(m) + 2) + m
    return bytes(out)


# ----------------------------------------------------------------- decoded rows back to values
def _row_values(rows: np.ndarray, i: int, block: Block) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in block.columns:
        v = rows[c.name][i]
        out[c.name] = v.tolist() if isinstance(v, np.ndarray) else v
    return out


def values_of(
    dec: Decoded, tmpl: TemplateRows, row: int
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Return a decoded message row as ``(root, groups)`` values for :func:`encode_message`.

    Nested groups' entries go under their group names in their parent entries, var data as
    bytes.
    """
    root = _row_values(tmpl.rows, row, tmpl.message)
    for d in tmpl.message.data:
        root[d.name] = dec.data(tmpl, d.name, row)

    def entries(group: Group, path: str, parent: int, top: bool) -> list[dict[str, Any]]:
        g = tmpl.groups[path]
        key = g.rows["_msg"] if top else g.rows["_parent"]
        sel = np.flatnonzero((key == parent) & (g.rows["_msg"] == row))
        out = []
        for i in sel.tolist():
            e = _row_values(g.rows, i, group)
            for d in group.data:
                e[d.name] = dec.data(g, d.name, i)
            for inner in group.groups:
                e[inner.name] = entries(inner, f"{path}.{inner.name}", i, False)
            out.append(e)
        return out

    groups = {g.name: entries(g, g.name, row, True) for g in tmpl.message.groups}
    return root, groups
