# SPDX-License-Identifier: MIT
"""The journal's on-disk format: file header, record framing, record kinds, schemas, errors.

The format is documented in ``docs/journal.md``; this module is its single implementation,
shared by the writer (:mod:`engine.journal.writer`) and the reader
(:mod:`engine.journal.reader`).

Layout (all integers little-endian)::

    file   := header record*
    header := magic "QWJOURNL" (8) | major u16 | minor u16 | header_size u32 | created_ns i64
              | reserved (8 zero bytes)                                     -- 32 bytes
    record := length u32 | crc32 u32 | kind u8 | flags u8 | type_id u16 | payload (length bytes)

``crc32`` (zlib polynomial) covers the four bytes ``kind, flags, type_id`` and the payload.
Payloads are MessagePack (msgspec); events are arrays of field values whose names and types
are given once per file by a ``SCHEMA`` record.
"""

import dataclasses
import struct
import types
import typing
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from operator import attrgetter
from pathlib import Path
from typing import Any, Final

from engine import enums, events
from engine.events import Event

# ------------------------------------------------------------------------------ constants
#: First eight bytes of every journal file.
MAGIC: Final[bytes] = b"QWJOURNL"
#: Format major version: a reader refuses any other major version.
VERSION_MAJOR: Final[int] = 1
#: Format minor version: new minors only add record kinds or fields; older readers skip them.
VERSION_MINOR: Final[int] = 0

#: File header: magic, major, minor, header size, created_ns, 8 reserved bytes.
FILE_HEADER: Final = struct.Struct("<8sHHIq8x")
#: Size of the file header in bytes.
FILE_HEADER_SIZE: Final[int] = FILE_HEADER.size

#: Record header: payload length, crc32, kind, flags, type id.
RECORD_HEADER: Final = struct.Struct("<IIBBH")
#: Size of a record header in bytes.
RECORD_HEADER_SIZE: Final[int] = RECORD_HEADER.size
#: The part of the record header the CRC covers (kind, flags, type id).
_CRC_PART: Final = struct.Struct("<BBH")

#: Largest payload a record may carry (a longer length field means corruption).
MAX_PAYLOAD: Final[int] = 1 << 26

#: A writer opened the file (new or resumed): msgpack map, see :class:`JournalOpened`.
KIND_OPEN: Final[int] = 1
#: Names and types of the fields of one event class; ``type_id`` is the id it defines.
KIND_SCHEMA: Final[int] = 2
#: One engine event: ``[seq, field values...]`` in the order of its schema.
KIND_EVENT: Final[int] = 3
#: One FIX message: ``[session_id, direction, ts_created, ts_wire, ts_handled, raw]``.
KIND_FIX: Final[int] = 4
#: One log record: ``[ts, level, source, message, exc_text]``.
KIND_LOG: Final[int] = 5
#: Record kinds this version writes and understands.
KNOWN_KINDS: Final[frozenset[int]] = frozenset(
    {KIND_OPEN, KIND_SCHEMA, KIND_EVENT, KIND_FIX, KIND_LOG}
)


class FixDirection(IntEnum):
    """Direction of a journaled FIX message."""

    INBOUND = 1  # received from the counterparty
    OUTBOUND = 2  # sent to the counterparty


# --------------------------------------------------------------------------------- errors
class JournalError(Exception):
    """Base of every error the journal raises on purpose."""


class JournalFormatError(JournalError):
    """The file is not a journal, or one of a major version this code cannot read."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: not a readable journal: {reason}")
        self.path = str(path)
        self.reason = reason


class JournalCorruptError(JournalError):
    """A record inside the journal (not its torn tail) is damaged.

    Attributes name the file, the byte offset of the record, its index (0-based, counting
    records from the file header) and why it was refused.
    """

    def __init__(self, path: str | Path, offset: int, index: int, reason: str) -> None:
        super().__init__(f"{path}: record {index} at offset {offset}: {reason}")
        self.path = str(path)
        self.offset = offset
        self.index = index
        self.reason = reason


class JournalClosedError(JournalError):
    """A record was appended to a journal that is closed."""


class JournalWriteError(JournalError):
    """The writer thread could not write to disk (the cause is chained)."""


# ------------------------------------------------------------------------ decoded records
@dataclass(frozen=True, slots=True, kw_only=True)
class JournalOpened:
    """A writer opened the journal: at creation, and again on every resume after a restart."""

    ts: int  # ns since the epoch, writer's clock
    pid: int  # process id of the writer
    engine_id: str
    offset: int  # byte offset of this record: where the writer started appending


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEvent:
    """One engine event, with its number in the engine's stream (0 when it came off the bus)."""

    seq: int
    event: Event


@dataclass(frozen=True, slots=True, kw_only=True)
class FixMessageRecord:
    """One FIX message as it went over the wire, with its three timestamps."""

    session_id: str  # QuickFIX-style id, e.g. ``FIX.4.4:CLIENT->EXCHANGE``
    direction: FixDirection
    raw: bytes  # the message bytes, SOH-separated, exactly as sent or received
    ts_created: int  # built (outbound) or first byte read (inbound), ns
    ts_wire: int  # written to (outbound) or framed from (inbound) the socket, ns
    ts_handled: int  # handed to the session / application, ns


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One log record (from :class:`engine.journal.JournalLogger` or the logging handler)."""

    ts: int  # ns since the epoch
    level: int  # ``logging`` level number
    source: str  # logger name
    message: str  # formatted message
    exc_text: str  # formatted exception, "" if none


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownEvent(Event):
    """An event whose class this process does not know (or whose fields no longer fit).

    ``fields`` keeps the recorded field names and decoded values in schema order.
    """

    type_name: str
    fields: tuple[tuple[str, Any], ...]


#: What :meth:`engine.journal.JournalReader.records` yields.
JournalRecord = JournalOpened | JournalEvent | FixMessageRecord | LogEntry


# ------------------------------------------------------------------------------ framing
def pack_file_header(created_ns: int) -> bytes:
    """Return the 32-byte file header of a new journal."""
    return FILE_HEADER.pack(MAGIC, VERSION_MAJOR, VERSION_MINOR, FILE_HEADER_SIZE, created_ns)


def unpack_file_header(path: str | Path, data: bytes | memoryview) -> tuple[int, int, int, int]:
    """Check a file header; return ``(major, minor, header_size, created_ns)``.

    Raises
    ------
    JournalFormatError
        If the magic is wrong, the file is too short or the major version is not ours.
    """
    if len(data) < FILE_HEADER_SIZE:
        raise JournalFormatError(
            path, f"{len(data)} bytes is shorter than the {FILE_HEADER_SIZE}-byte file header"
        )
    magic, major, minor, size, created = FILE_HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise JournalFormatError(path, f"bad magic {bytes(magic)!r}, expected {MAGIC!r}")
    if major != VERSION_MAJOR:
        raise JournalFormatError(
            path, f"format version {major}.{minor}; this reader reads {VERSION_MAJOR}.x"
        )
    if size < FILE_HEADER_SIZE or size > len(data):
        raise JournalFormatError(path, f"bad header size {size}")
    return major, minor, size, created


def frame(kind: int, type_id: int, payload: bytes) -> bytes:
    """Return one framed record: header (length, CRC, kind, flags, type id) + payload."""
    part = _CRC_PART.pack(kind, 0, type_id)
    crc = zlib.crc32(payload, zlib.crc32(part))
    return RECORD_HEADER.pack(len(payload), crc, kind, 0, type_id) + payload


# ------------------------------------------------------------------------ type registry
_REGISTRY: dict[str, type] = {}


def qualified_name(cls: type) -> str:
    """Return ``module.QualName`` of a class, the name schemas record."""
    return f"{cls.__module__}.{cls.__qualname__}"


def register_type(cls: type) -> None:
    """Make an event dataclass or an ``IntEnum`` decodable by name.

    Every dataclass and ``IntEnum`` of :mod:`engine.events` and :mod:`engine.enums` is
    registered on import; a component that defines its own event classes elsewhere registers
    them so that a reader in another process rebuilds them (instead of :class:`UnknownEvent`).
    """
    _REGISTRY[qualified_name(cls)] = cls


def _register_builtin() -> None:
    for module in (events, enums):
        for value in vars(module).values():
            if isinstance(value, type) and (
                dataclasses.is_dataclass(value) or issubclass(value, IntEnum)
            ):
                register_type(value)
    register_type(FixDirection)
    register_type(UnknownEvent)


_register_builtin()


def lookup_type(name: str) -> type | None:
    """Return the registered class called ``name`` (see :func:`qualified_name`), or ``None``."""
    return _REGISTRY.get(name)


# ---------------------------------------------------------------------------- schemas
#: Field type codes written in schemas.
CODE_INT: Final[str] = "int"
CODE_FLOAT: Final[str] = "float"
CODE_STR: Final[str] = "str"
CODE_BOOL: Final[str] = "bool"
CODE_BYTES: Final[str] = "bytes"
CODE_TUPLE: Final[str] = "tuple"
CODE_ANY: Final[str] = "any"
#: Prefix of an enum field's code, followed by the enum's qualified name.
CODE_ENUM: Final[str] = "enum:"
#: Prefix of a nested dataclass field's code, followed by its schema's type id.
CODE_STRUCT: Final[str] = "struct:"
#: Prefix of an optional field's code (``X | None``), followed by the code of ``X``.
CODE_OPTIONAL: Final[str] = "opt:"
#: Prefix of a ``tuple[X, ...]`` field of dataclasses (each element a map of its fields),
#: followed by the qualified name of ``X``.
CODE_TUPLE_OF: Final[str] = "tuple_of:"

_SIMPLE_CODES: Final[dict[object, str]] = {
    int: CODE_INT,
    float: CODE_FLOAT,
    str: CODE_STR,
    bool: CODE_BOOL,
    bytes: CODE_BYTES,
}

Flattener = Callable[[Any], Sequence[Any]]


@dataclass(frozen=True, slots=True)
class WriteSchema:
    """How the writer encodes one dataclass: its type id, schema payload and flattener."""

    type_id: int
    name: str
    fields: tuple[tuple[str, str], ...]
    flatten: Flattener


def field_codes(
    cls: type, nested_id: Callable[[type], int]
) -> tuple[tuple[tuple[str, str], ...], dict[int, type]]:
    """Return the ``(name, code)`` pairs of a dataclass and its nested dataclass fields.

    ``nested_id`` returns the type id of a nested dataclass (defining its schema first).
    """
    hints = typing.get_type_hints(cls)
    codes: list[tuple[str, str]] = []
    nested: dict[int, type] = {}
    for i, f in enumerate(dataclasses.fields(cls)):
        codes.append((f.name, _code_for(hints.get(f.name, Any), i, nested, nested_id)))
    return tuple(codes), nested


def _code_for(tp: Any, i: int, nested: dict[int, type], nested_id: Callable[[type], int]) -> str:
    code = _SIMPLE_CODES.get(tp)
    if code is not None:
        return code
    if isinstance(tp, type) and issubclass(tp, IntEnum):
        return CODE_ENUM + qualified_name(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        nested[i] = tp
        return CODE_STRUCT + str(nested_id(tp))
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            return CODE_TUPLE_OF + qualified_name(item)
        return CODE_TUPLE
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        inner = [a for a in args if a is not type(None)]
        if len(args) == 2 and len(inner) == 1:  # X | None
            return CODE_OPTIONAL + _code_for(inner[0], i, nested, nested_id)
    return CODE_ANY


def make_flattener(names: Sequence[str], nested: dict[int, Flattener]) -> Flattener:
    """Return a function mapping a dataclass instance to the sequence of its field values."""
    if not names:
        return lambda _obj: ()
    getter = attrgetter(*names)
    if len(names) == 1:
        single = nested.get(0)
        if single is None:
            return lambda obj: (getter(obj),)
        return lambda obj: (single(getter(obj)),)
    if not nested:
        return typing.cast(Flattener, getter)
    items = tuple(nested.items())

    def flatten(obj: Any) -> Sequence[Any]:
        values = list(getter(obj))
        for i, fn in items:
            values[i] = fn(values[i])
        return values

    return flatten


# ---------------------------------------------------------------------- read schemas
Converter = Callable[[Any], Any]


class ReadSchema:
    """How the reader rebuilds one recorded dataclass from its array of field values.

    Parameters
    ----------
    type_id : int
        The id the schema record defined.
    name : str
        Qualified class name as recorded.
    fields : tuple[tuple[str, str], ...]
        ``(field name, type code)`` pairs in payload order.
    nested : dict[int, ReadSchema]
        Schemas already defined in the same file, by type id (for ``struct:`` fields).
    """

    __slots__ = (
        "_build_kwargs",
        "_names",
        "_wanted",
        "cls",
        "convs",
        "fields",
        "index",
        "name",
        "offset",
        "record_index",
        "type_id",
    )

    def __init__(
        self,
        type_id: int,
        name: str,
        fields: tuple[tuple[str, str], ...],
        nested: dict[int, "ReadSchema"],
    ) -> None:
        self.type_id = type_id
        self.name = name
        self.fields = fields
        #: Byte offset and index of the SCHEMA record in its file (-1 when not from a file).
        self.offset = -1
        self.record_index = -1
        #: Position of each field in the payload array (after ``seq`` for events).
        self.index = {n: i for i, (n, _c) in enumerate(fields)}
        self.convs: tuple[tuple[int, Converter], ...] = tuple(
            (i, conv)
            for i, (_n, code) in enumerate(fields)
            if (conv := _converter(code, nested)) is not None
        )
        cls = lookup_type(name)
        self.cls = cls if cls is not None and dataclasses.is_dataclass(cls) else None
        self._build_kwargs = self._fits()
        self._names = self._kwargs_plan()
        self._wanted = (
            frozenset(f.name for f in dataclasses.fields(self.cls)) if self.cls else frozenset()
        )

    def _fits(self) -> bool:
        # The class can be built if every field it requires was recorded.
        if self.cls is None:
            return False
        for f in dataclasses.fields(self.cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required and f.name not in self.index:
                return False
        return True

    def _kwargs_plan(self) -> tuple[str, ...] | None:
        # Names to zip with the values; None when some recorded fields must be dropped.
        if self.cls is None:
            return None
        wanted = {f.name for f in dataclasses.fields(self.cls)}
        names = tuple(n for n, _c in self.fields)
        return names if wanted.issuperset(names) else None

    def convert(self, values: list[Any]) -> list[Any]:
        """Apply the field converters (enums, tuples, nested classes) in place; return it."""
        for i, conv in self.convs:
            values[i] = conv(values[i])
        return values

    def build(self, values: list[Any]) -> Any:
        """Return the instance the values describe, or an :class:`UnknownEvent`-like fallback.

        Raises
        ------
        ValueError
            If the number of values does not match the schema.
        """
        if len(values) != len(self.fields):
            raise ValueError(
                f"{self.name}: {len(values)} values for a schema of {len(self.fields)} fields"
            )
        try:
            self.convert(values)
        except (ValueError, TypeError):
            return self._unknown(values)
        if self._build_kwargs and self.cls is not None:
            if self._names is not None:
                kwargs = dict(zip(self._names, values, strict=True))
            else:  # the class lost fields since the file was written: drop those values
                wanted = self._wanted
                kwargs = {
                    n: v for (n, _c), v in zip(self.fields, values, strict=True) if n in wanted
                }
            try:
                return self.cls(**kwargs)
            except (TypeError, ValueError):
                pass
        return self._unknown(values)

    def _unknown(self, values: list[Any]) -> UnknownEvent:
        pairs = tuple((n, v) for (n, _c), v in zip(self.fields, values, strict=True))
        ts = dict(pairs).get("ts_event", 0)
        return UnknownEvent(
            ts_event=ts if isinstance(ts, int) else 0, type_name=self.name, fields=pairs
        )


def _converter(code: str, nested: dict[int, ReadSchema]) -> Converter | None:
    if code.startswith(CODE_OPTIONAL):
        inner = _converter(code[len(CODE_OPTIONAL) :], nested)
        if inner is None:
            return None
        return lambda v: None if v is None else inner(v)
    if code == CODE_TUPLE:
        return _to_tuple
    if code.startswith(CODE_TUPLE_OF):
        item_cls = lookup_type(code[len(CODE_TUPLE_OF) :])
        return _to_tuple if item_cls is None else _tuple_of(item_cls)
    if code.startswith(CODE_ENUM):
        enum_cls = lookup_type(code[len(CODE_ENUM) :])
        if enum_cls is None or not issubclass(enum_cls, IntEnum):
            return None  # an enum this process does not know: keep the integer
        return _enum_of(enum_cls)
    if code.startswith(CODE_STRUCT):
        try:
            sub = nested[int(code[len(CODE_STRUCT) :])]
        except (KeyError, ValueError):
            raise ValueError(f"field type {code!r} refers to no schema defined before") from None

        def build_nested(v: Any) -> Any:
            if not isinstance(v, list):
                raise TypeError(f"nested {sub.name} is not an array")
            return sub.build(v)

        return build_nested
    return None


def _enum_of(enum_cls: type[IntEnum]) -> Converter:
    """Return ``enum_cls(v)`` as a dict lookup (a restart converts millions of values)."""
    members = {int(m): m for m in enum_cls}
    get = members.get

    def to_enum(v: Any) -> Any:
        m = get(v)
        return m if m is not None else enum_cls(v)  # a value it lacks raises as before

    return to_enum


def _tuple_of(cls: type) -> Converter:
    """Rebuild a tuple of ``cls`` instances from their recorded maps (enums restored)."""
    hints = typing.get_type_hints(cls)
    enums = {
        name: tp for name, tp in hints.items() if isinstance(tp, type) and issubclass(tp, IntEnum)
    }

    def build(v: Any) -> Any:
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            return _to_tuple(v)
        try:
            return tuple(
                cls(**{k: (enums[k](x) if k in enums else x) for k, x in item.items()})
                for item in v
            )
        except (TypeError, ValueError):
            return _to_tuple(v)  # the class changed since the journal was written

    return build


def _to_tuple(v: Any) -> Any:
    return tuple(_to_tuple(x) for x in v) if isinstance(v, list) else v
