# SPDX-License-Identifier: MIT
"""SBE message schemas (FIX Simple Binary Encoding 1.0) as frozen dataclasses.

A :class:`Schema` (what :func:`engine.feeds.sbe.schema_xml.load_schema` reads from any SBE
schema file) holds its primitive types (with ``nullValue``, ``minValue``, ``maxValue`` and
constants), composites (PRICE / PRICENULL mantissa and constant exponent, the ``groupSize``
dimensions, ``varDataEncoding``), enums, sets (choice bits), and its messages with their fields
at their offsets, repeating groups (nested too) and var data, each element with its
``sinceVersion``.

What the decoders need is derived here too: each message's and each group's block flattened
into :class:`Column` s (one per non-constant leaf, composites as ``Field.part``) and the
numpy dtype of a decoded row (:meth:`Block.dtype`), whose fields sit at the SBE offsets so a
block's bytes *are* its row.

    schema = load_schema("templates_FixBinary.xml")
    book = schema.message(32)            # or schema.message("MDIncrementalRefreshBook32")
    book.groups[0].columns[0].name       # 'MDEntryPx.mantissa'
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

import numpy as np

#: ``primitiveType`` -> (numpy kind without byte order, size in bytes, SBE default null value).
PRIMITIVES: dict[str, tuple[str, int, int | float]] = {
    "char": ("S", 1, 0),
    "int8": ("i1", 1, -(2**7)),
    "int16": ("i2", 2, -(2**15)),
    "int32": ("i4", 4, -(2**31)),
    "int64": ("i8", 8, -(2**63)),
    "uint8": ("u1", 1, 2**8 - 1),
    "uint16": ("u2", 2, 2**16 - 1),
    "uint32": ("u4", 4, 2**32 - 1),
    "uint64": ("u8", 8, 2**64 - 1),
    "float": ("f4", 4, math.nan),
    "double": ("f8", 8, math.nan),
}

Scalar = int | float | str


class SchemaError(ValueError):
    """An SBE schema that cannot be read: names the file, line and element, and why."""


@dataclass(frozen=True, slots=True)
class EncodedType:
    """A ``<type>``: a primitive, or a fixed array of one (``length``), maybe a constant."""

    name: str
    primitive: str
    length: int = 1
    presence: str = "required"  # required | optional | constant
    null_value: int | float | None = None  # as declared; see :attr:`null`
    min_value: int | float | None = None
    max_value: int | float | None = None
    constant: Scalar | None = None  # the value of a constant (text of the element)
    value_ref: str | None = None
    since_version: int = 0
    semantic_type: str = ""
    line: int = 0

    @property
    def size(self) -> int:
        """Bytes taken in a block (0 for a constant)."""
        return 0 if self.presence == "constant" else PRIMITIVES[self.primitive][1] * self.length

    @property
    def is_string(self) -> bool:
        """A char array of more than one char (decoded as text up to the first NUL)."""
        return self.primitive == "char" and self.length > 1

    @property
    def null(self) -> int | float:
        """The raw value that means "no value": ``nullValue`` or SBE's default for the type."""
        if self.null_value is not None:
            return self.null_value
        return PRIMITIVES[self.primitive][2]


@dataclass(frozen=True, slots=True)
class EnumType:
    """An ``<enum>``: named values (ints, or one-char strings for a char encoding)."""

    name: str
    encoding: EncodedType
    values: dict[str, Scalar]  # validValue name -> raw value
    descriptions: dict[str, str]
    since_version: int = 0
    line: int = 0

    @property
    def size(self) -> int:
        """Bytes taken in a block."""
        return self.encoding.size

    def name_of(self, raw: Scalar) -> str | None:
        """Return the validValue name of ``raw`` (None for a value the schema does not name)."""
        for name, value in self.values.items():
            if value == raw:
                return name
        return None


@dataclass(frozen=True, slots=True)
class SetType:
    """A ``<set>``: a bit field whose ``choice`` s name bit positions."""

    name: str
    encoding: EncodedType
    choices: dict[str, int]  # choice name -> bit position
    since_version: int = 0
    line: int = 0

    @property
    def size(self) -> int:
        """Bytes taken in a block."""
        return self.encoding.size

    def names_of(self, raw: int) -> list[str]:
        """Return the names of the choices set in ``raw``, by bit position."""
        return [n for n, bit in sorted(self.choices.items(), key=lambda c: c[1]) if raw >> bit & 1]


@dataclass(frozen=True, slots=True)
class CompositePart:
    """One member of a composite, at its offset inside the composite."""

    name: str
    type: TypeDef
    offset: int


@dataclass(frozen=True, slots=True)
class CompositeType:
    """A ``<composite>``: members at offsets (PRICE, groupSize, varDataEncoding, ...)."""

    name: str
    parts: tuple[CompositePart, ...]
    size: int
    since_version: int = 0
    semantic_type: str = ""
    line: int = 0

    def part(self, name: str) -> CompositePart:
        """Return the member called ``name`` (KeyError if there is none)."""
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(f"composite {self.name!r} has no member {name!r}")


TypeDef = EncodedType | CompositeType | EnumType | SetType


@dataclass(frozen=True, slots=True)
class Column:
    """One decoded leaf of a block: a primitive (or array of one) at an offset of the block.

    ``name`` is the field's name, joined with the composite members' names by dots
    (``MDEntryPx.mantissa``). ``exponent`` is the constant exponent of a decimal composite's
    mantissa (the value is ``mantissa * 10**exponent``). A row's raw value equals
    :attr:`null` when the field has no value; :meth:`is_null` tests a whole column.
    """

    name: str
    field: str
    offset: int
    type: EncodedType
    enum: EnumType | None = None
    set: SetType | None = None
    since_version: int = 0
    exponent: int | None = None

    @property
    def size(self) -> int:
        """Bytes taken in the block."""
        return self.type.size

    @property
    def null(self) -> int | float:
        """The raw value meaning "no value" (for a char column, the NUL byte's 0; a set's 0)."""
        return 0 if self.set is not None else self.type.null

    def numpy_format(self, order: str) -> str | tuple[str, tuple[int]]:
        """Return the numpy format of this column in byte order ``order`` ('<' or '>')."""
        kind, _size, _null = PRIMITIVES[self.type.primitive]
        if kind == "S":
            return f"S{self.type.length}"
        if self.type.length > 1:
            return (order + kind, (self.type.length,))
        return order + kind

    def null_bytes(self, order: str) -> bytes:
        """Return the bytes of this column's null value in byte order ``order``."""
        fmt = self.numpy_format(order)
        if isinstance(fmt, str) and fmt.startswith("S"):
            return bytes(self.size)
        base = fmt if isinstance(fmt, str) else fmt[0]
        one = np.array([self.null], dtype=np.dtype(base).newbyteorder("=")).astype(base)
        return one.tobytes() * self.type.length

    def is_null(self, values: np.ndarray) -> np.ndarray:
        """Return a bool mask of the rows of ``values`` (this column) that carry no value."""
        if isinstance(self.null, float) and math.isnan(self.null):
            return np.asarray(np.isnan(values), dtype=np.bool_)
        if values.dtype.kind == "S":
            return np.asarray(values == b"", dtype=np.bool_)
        return np.asarray(values == self.null, dtype=np.bool_)

    def value(self, raw: Any) -> Any:
        """Return the Python value of one raw value: None for null, text for a string."""
        if self.type.is_string:
            return bytes(raw).split(b"\0", 1)[0].decode("latin-1")
        if isinstance(raw, bytes):
            return (
                None if raw == b"" and self.type.null_value is not None else raw.decode("latin-1")
            )
        if self.type.length > 1:
            return [int(v) for v in raw]
        v = raw.item() if hasattr(raw, "item") else raw
        if self.type.primitive in ("float", "double"):
            return None if math.isnan(v) else float(v)
        if (
            self.type.presence == "optional" or self.type.null_value is not None
        ) and v == self.null:
            return None
        if self.enum is not None and self.enum.encoding.null_value is not None and v == self.null:
            return None
        return int(v)


@dataclass(frozen=True, slots=True)
class Field:
    """A ``<field>`` of a message or group block."""

    name: str
    id: int
    type: TypeDef
    offset: int
    since_version: int = 0
    presence: str = "required"
    constant: Scalar | None = None  # a constant field's value (presence or its type's)
    semantic_type: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class DataField:
    """A ``<data>`` field: a length, then that many bytes (after every group of the block)."""

    name: str
    id: int
    type: CompositeType
    length_type: EncodedType
    length_offset: int
    data_offset: int  # where the bytes start, from the start of the composite
    since_version: int = 0
    line: int = 0


@dataclass(frozen=True)
class Block:
    """What messages and groups share: a block of fields, then groups, then var data."""

    name: str
    id: int
    block_length: int
    fields: tuple[Field, ...]
    groups: tuple[Group, ...]
    data: tuple[DataField, ...]
    since_version: int
    byte_order: str  # '<' or '>'
    line: int
    columns: tuple[Column, ...] = dc_field(init=False)

    def __post_init__(self) -> None:
        cols: list[Column] = []
        for f in self.fields:
            _flatten(f.name, f.name, f.type, f.offset, max(f.since_version, 0), cols)
        object.__setattr__(self, "columns", tuple(cols))

    def column(self, name: str) -> Column:
        """Return the column called ``name`` (KeyError if there is none)."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    def field(self, name: str) -> Field:
        """Return the field called ``name`` (KeyError if there is none)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def group(self, name: str) -> Group:
        """Return the repeating group called ``name`` (KeyError if there is none)."""
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"{self.name} has no group {name!r}")

    @property
    def constants(self) -> dict[str, Scalar]:
        """The constant fields (and constant composite members) with their values."""
        out: dict[str, Scalar] = {}
        for f in self.fields:
            if f.constant is not None:
                out[f.name] = f.constant
            if isinstance(f.type, CompositeType):
                for p in f.type.parts:
                    if isinstance(p.type, EncodedType) and p.type.constant is not None:
                        out[f"{f.name}.{p.name}"] = p.type.constant
        return out

    def meta_fields(self) -> list[tuple[str, str]]:
        """Return the decoder's own columns after the block's bytes (name, numpy format)."""
        raise NotImplementedError

    def dtype(self) -> np.dtype[Any]:
        """Return the numpy dtype of one decoded row.

        The block's columns sit at their SBE offsets (a row's first ``block_length`` bytes are
        the block's bytes), followed by the decoder's columns (:meth:`meta_fields`, names
        starting with ``_``, from :attr:`meta_offset`, 8-byte words) and, per var data
        field, ``<name>._start`` (offset of its bytes in the decoded buffer) and
        ``<name>._length``. The row's size is a multiple of 8.
        """
        names: list[str] = []
        formats: list[Any] = []
        offsets: list[int] = []
        for c in self.columns:
            names.append(c.name)
            formats.append(c.numpy_format(self.byte_order))
            offsets.append(c.offset)
        at = self.meta_offset
        extra = list(self.meta_fields())
        for d in self.data:
            extra += [(f"{d.name}._start", "<i8"), (f"{d.name}._length", "<i8")]
        for name, fmt in extra:
            names.append(name)
            formats.append(fmt)
            offsets.append(at)
            at += int(fmt[-1])
        return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": at})

    @property
    def meta_offset(self) -> int:
        """Offset in a decoded row of the decoder's columns: the block's end, 8-aligned."""
        return (self.block_length + 7) & ~7

    def null_row(self) -> bytes:
        """Return the block's bytes with every column null (what absent fields decode to)."""
        row = bytearray(self.block_length)
        for c in self.columns:
            row[c.offset : c.offset + c.size] = c.null_bytes(self.byte_order)
        return bytes(row)

    def walk_groups(self) -> Iterator[Group]:
        """Yield every group inside this block, depth first, in wire order."""
        for g in self.groups:
            yield g
            yield from g.walk_groups()


@dataclass(frozen=True)
class Group(Block):
    """A ``<group>``: ``numInGroup`` entries of ``block_length`` bytes, after its dimension."""

    dimension: CompositeType | None = None

    def meta_fields(self) -> list[tuple[str, str]]:
        """Return the decoder's columns of an entry: ``_msg`` and ``_parent``.

        ``_msg`` is the row of the message in its template's rows, ``_parent`` the row of
        the entry (or message) this entry belongs to, in the parent's rows.
        """
        return [("_msg", "<i8"), ("_parent", "<i8")]

    @property
    def dimension_size(self) -> int:
        """Bytes of the dimension header (blockLength and numInGroup)."""
        assert self.dimension is not None
        return self.dimension.size


@dataclass(frozen=True)
class Message(Block):
    """A ``<message>``: its root block, groups and var data; ``id`` is its templateId."""

    description: str = ""
    semantic_type: str = ""

    def meta_fields(self) -> list[tuple[str, str]]:
        """Return the decoder's columns of a message row.

        ``_packet`` is the packet number, ``_index`` the message number in the capture,
        ``_version`` and ``_block_length`` come from the message's header.
        """
        return [
            ("_packet", "<i8"),
            ("_index", "<i8"),
            ("_version", "<u4"),
            ("_block_length", "<u4"),
        ]


@dataclass(frozen=True)
class Schema:
    """A whole SBE message schema."""

    path: Path
    package: str
    id: int
    version: int
    byte_order: str  # '<' or '>'
    header: CompositeType
    types: dict[str, TypeDef]
    messages: dict[int, Message]

    def message(self, key: int | str) -> Message:
        """Return a message by templateId or name (KeyError naming the schema otherwise)."""
        if isinstance(key, int):
            if key in self.messages:
                return self.messages[key]
        else:
            for m in self.messages.values():
                if key in (m.name, m.description):
                    return m
        raise KeyError(
            f"{self.path.name} (schema {self.id} v{self.version}) has no message {key!r}"
        )

    def header_offset(self, member: str) -> tuple[int, int]:
        """Return (offset, size) of a member of the message header (``templateId``, ...)."""
        p = self.header.part(member)
        return p.offset, p.type.size


# ------------------------------------------------------------------------- flattening


def _flatten(name: str, top: str, t: TypeDef, offset: int, since: int, out: list[Column]) -> None:
    if isinstance(t, EncodedType):
        if t.presence != "constant":
            out.append(Column(name, top, offset, t, since_version=since))
    elif isinstance(t, EnumType):
        out.append(Column(name, top, offset, t.encoding, enum=t, since_version=since))
    elif isinstance(t, SetType):
        out.append(Column(name, top, offset, t.encoding, set=t, since_version=since))
    else:
        exponent: int | None = None
        for p in t.parts:
            pt = p.type
            if p.name == "exponent" and isinstance(pt, EncodedType) and pt.presence == "constant":
                exponent = pt.constant if isinstance(pt.constant, int) else None
        for p in t.parts:
            before = len(out)
            _flatten(f"{name}.{p.name}", top, p.type, offset + p.offset, since, out)
            if p.name == "mantissa" and exponent is not None and len(out) == before + 1:
                out[-1] = Column(
                    out[-1].name,
                    top,
                    out[-1].offset,
                    out[-1].type,
                    since_version=since,
                    exponent=exponent,
                )
