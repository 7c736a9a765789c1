# SPDX-License-Identifier: MIT
"""Read an SBE message schema XML file into a :class:`~engine.feeds.sbe.schema.Schema`.

:func:`load_schema` reads any SBE 1.0 schema file (CME's ``templates_FixBinary.xml`` of MDP 3.0
versions 8, 9 and 13 among them), resolving types on first use and laying out every block's
fields at their offsets. A schema that cannot be used raises
:class:`~engine.feeds.sbe.schema.SchemaError`, naming the file, the line and the element
(``templates.xml:389: <field name="MDEntryPx">: unknown type 'PRICEX'``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from engine.feeds.sbe.schema import (
    PRIMITIVES,
    CompositePart,
    CompositeType,
    DataField,
    EncodedType,
    EnumType,
    Field,
    Group,
    Message,
    Scalar,
    Schema,
    SchemaError,
    SetType,
    TypeDef,
)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]


def _parse_xml(path: Path, data: bytes) -> tuple[ET.Element, dict[int, int]]:
    """Parse ``data`` into elements, with the line each element starts on (by ``id``)."""
    parser = expat.ParserCreate()
    lines: dict[int, int] = {}
    stack: list[ET.Element] = []
    roots: list[ET.Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        el = ET.Element(tag, attrs)
        lines[id(el)] = parser.CurrentLineNumber
        (stack[-1].append(el) if stack else roots.append(el))
        stack.append(el)

    def end(_tag: str) -> None:
        stack.pop()

    def text(chunk: str) -> None:
        if stack:
            el = stack[-1]
            if len(el):
                el[-1].tail = (el[-1].tail or "") + chunk
            else:
                el.text = (el.text or "") + chunk

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise SchemaError(f"{path}:{e.lineno}: not well-formed XML ({e})") from None
    if not roots:
        raise SchemaError(f"{path}: no root element")
    return roots[0], lines


class _Reader:
    """One schema file being read: its elements by name, types resolved on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = path.read_bytes()
        except OSError as e:
            raise SchemaError(f"{path}: cannot read the schema ({e.strerror})") from e
        self.root, self.lines = _parse_xml(path, data)
        self.elements: dict[str, ET.Element] = {}
        self.types: dict[str, TypeDef] = {}
        self._resolving: set[str] = set()
        self.byte_order = "<"

    def error(self, el: ET.Element, why: str) -> SchemaError:
        attrs = f' name="{el.get("name")}"' if el.get("name") else ""
        line = self.lines.get(id(el), 0)
        return SchemaError(f"{self.path}:{line}: <{_local(el.tag)}{attrs}>: {why}")

    def line(self, el: ET.Element) -> int:
        return self.lines.get(id(el), 0)

    def int_attr(self, el: ET.Element, name: str, default: int | None = None) -> int:
        text = el.get(name)
        if text is None:
            if default is None:
                raise self.error(el, f"attribute {name!r} is missing")
            return default
        try:
            return int(text)
        except ValueError:
            raise self.error(el, f"{name}={text!r} is not an integer") from None

    def number(self, el: ET.Element, name: str, primitive: str) -> int | float | None:
        text = el.get(name)
        if text is None:
            return None
        try:
            return float(text) if primitive in ("float", "double") else int(text, 0)
        except ValueError:
            if primitive == "char" and len(text) == 1:
                return ord(text)
            raise self.error(el, f"{name}={text!r} is not a {primitive} value") from None

    # --- types

    def collect(self) -> None:
        for types in self.root.iter():
            if _local(types.tag) != "types":
                continue
            for el in types:
                name = el.get("name")
                if not name:
                    raise self.error(el, "a type without a name")
                if name in self.elements:
                    raise self.error(el, f"type {name!r} is defined twice")
                self.elements[name] = el

    def type_named(self, name: str, user: ET.Element) -> TypeDef:
        if name in self.types:
            return self.types[name]
        if name in PRIMITIVES and name not in self.elements:
            return EncodedType(name=name, primitive=name)
        el = self.elements.get(name)
        if el is None:
            raise self.error(user, f"unknown type {name!r}")
        if name in self._resolving:
            raise self.error(el, f"type {name!r} refers to itself")
        self._resolving.add(name)
        t = self.type_def(el)
        self._resolving.discard(name)
        self.types[name] = t
        return t

    def type_def(self, el: ET.Element) -> TypeDef:
        kind = _local(el.tag)
        if kind == "type":
            return self.encoded(el)
        if kind == "composite":
            return self.composite(el)
        if kind == "enum":
            return self.enum(el)
        if kind == "set":
            return self.set(el)
        raise self.error(el, f"unknown kind of type <{kind}>")

    def encoded(self, el: ET.Element) -> EncodedType:
        name = el.get("name", "")
        primitive = el.get("primitiveType", "")
        if primitive not in PRIMITIVES:
            raise self.error(el, f"primitiveType={primitive!r} is not an SBE primitive type")
        presence = el.get("presence", "required")
        if presence not in ("required", "optional", "constant"):
            raise self.error(el, f"presence={presence!r} (required, optional or constant)")
        length = self.int_attr(el, "length", 1)
        if length < 0:
            raise self.error(el, f"length={length} is negative")
        constant: Scalar | None = None
        value_ref = el.get("valueRef")
        if presence == "constant":
            text = (el.text or "").strip()
            if value_ref:
                constant = self.value_of(value_ref, el)
            elif primitive == "char":
                constant = text
            elif not text:
                raise self.error(el, "a constant without a value")
            else:
                try:
                    constant = float(text) if primitive in ("float", "double") else int(text, 0)
                except ValueError:
                    raise self.error(el, f"constant {text!r} is not a {primitive}") from None
        null_value = self.number(el, "nullValue", primitive)
        kind, size, _ = PRIMITIVES[primitive]
        if isinstance(null_value, int) and kind[0] in "iu":
            lo, hi = (
                (0, 2 ** (8 * size) - 1)
                if kind[0] == "u"
                else (-(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1)
            )
            if not lo <= null_value <= hi:
                raise self.error(el, f"nullValue={null_value} does not fit a {primitive}")
        return EncodedType(
            name=name,
            primitive=primitive,
            length=length,
            presence=presence,
            null_value=null_value,
            min_value=self.number(el, "minValue", primitive),
            max_value=self.number(el, "maxValue", primitive),
            constant=constant,
            value_ref=value_ref,
            since_version=self.int_attr(el, "sinceVersion", 0),
            semantic_type=el.get("semanticType", ""),
            line=self.line(el),
        )

    def value_of(self, ref: str, user: ET.Element) -> Scalar:
        enum_name, _, value = ref.partition(".")
        t = self.type_named(enum_name, user)
        if not isinstance(t, EnumType) or value not in t.values:
            raise self.error(user, f"valueRef={ref!r} names no value of an enum")
        return t.values[value]

    def composite(self, el: ET.Element) -> CompositeType:
        parts: list[CompositePart] = []
        at = 0
        for child in el:
            kind = _local(child.tag)
            pname = child.get("name", "")
            if kind == "ref":
                t = self.type_named(child.get("type", ""), child)
            elif kind in ("type", "composite", "enum", "set"):
                t = self.type_def(child)
            else:
                raise self.error(child, f"<{kind}> cannot be a member of a composite")
            offset = self.int_attr(child, "offset", at)
            if offset < at:
                raise self.error(
                    child, f"offset={offset} overlaps the member before it (ends at {at})"
                )
            parts.append(CompositePart(pname, t, offset))
            at = offset + t.size
        if not parts:
            raise self.error(el, "a composite without members")
        return CompositeType(
            name=el.get("name", ""),
            parts=tuple(parts),
            size=at,
            since_version=self.int_attr(el, "sinceVersion", 0),
            semantic_type=el.get("semanticType", ""),
            line=self.line(el),
        )

    def encoding_of(self, el: ET.Element) -> EncodedType:
        enc_name = el.get("encodingType", "")
        if not enc_name:
            raise self.error(el, "encodingType is missing")
        enc = self.type_named(enc_name, el)
        if not isinstance(enc, EncodedType) or enc.presence == "constant":
            raise self.error(el, f"encodingType={enc_name!r} is not a primitive type")
        return enc

    def enum(self, el: ET.Element) -> EnumType:
        enc = self.encoding_of(el)
        values: dict[str, Scalar] = {}
        descriptions: dict[str, str] = {}
        for v in el:
            if _local(v.tag) != "validValue":
                continue
            text = (v.text or "").strip()
            name = v.get("name", "")
            if enc.primitive == "char":
                if len(text) != 1:
                    raise self.error(v, f"value {text!r} of a char enum is not one char")
                values[name] = text
            else:
                try:
                    values[name] = int(text, 0)
                except ValueError:
                    raise self.error(v, f"value {text!r} is not an integer") from None
            descriptions[name] = v.get("description", "")
        return EnumType(
            name=el.get("name", ""),
            encoding=enc,
            values=values,
            descriptions=descriptions,
            since_version=self.int_attr(el, "sinceVersion", 0),
            line=self.line(el),
        )

    def set(self, el: ET.Element) -> SetType:
        enc = self.encoding_of(el)
        choices: dict[str, int] = {}
        bits = enc.size * 8
        for c in el:
            if _local(c.tag) != "choice":
                continue
            text = (c.text or "").strip()
            try:
                bit = int(text)
            except ValueError:
                raise self.error(c, f"bit {text!r} is not an integer") from None
            if not 0 <= bit < bits:
                raise self.error(c, f"bit {bit} is outside a {enc.primitive}")
            choices[c.get("name", "")] = bit
        return SetType(
            name=el.get("name", ""),
            encoding=enc,
            choices=choices,
            since_version=self.int_attr(el, "sinceVersion", 0),
            line=self.line(el),
        )

    # --- messages

    def block_parts(
        self, el: ET.Element, owner_since: int
    ) -> tuple[list[Field], list[Group], list[DataField], int]:
        fields: list[Field] = []
        groups: list[Group] = []
        data: list[DataField] = []
        at = 0
        for child in el:
            kind = _local(child.tag)
            since = max(self.int_attr(child, "sinceVersion", 0), owner_since)
            if kind == "field":
                if groups or data:
                    raise self.error(child, "a field after a group or var data field")
                f = self.field(child, at, since)
                fields.append(f)
                at = max(at, f.offset + f.type.size)
            elif kind == "group":
                if data:
                    raise self.error(child, "a group after a var data field")
                groups.append(self.group(child, since))
            elif kind == "data":
                data.append(self.data(child, since))
        return fields, groups, data, at

    def field(self, el: ET.Element, at: int, since: int) -> Field:
        name = el.get("name", "")
        tname = el.get("type")
        if not tname:
            raise self.error(el, "type is missing")
        t = self.type_named(tname, el)
        offset = self.int_attr(el, "offset", at)
        if offset < at and t.size:
            raise self.error(el, f"offset={offset} overlaps the field before it (ends at {at})")
        presence = el.get("presence", "")
        constant: Scalar | None = None
        if presence == "constant":
            ref = el.get("valueRef")
            if not ref:
                raise self.error(el, 'presence="constant" without a valueRef')
            constant = self.value_of(ref, el)
        elif isinstance(t, EncodedType) and t.presence == "constant":
            presence, constant = "constant", t.constant
        if presence == "constant" and isinstance(t, EnumType):
            t = EncodedType(  # a constant enum field takes no bytes
                name=t.name, primitive=t.encoding.primitive, presence="constant", constant=constant
            )
        try:
            fid = int(el.get("id", "0"))
        except ValueError:
            raise self.error(el, f"id={el.get('id')!r} is not an integer") from None
        return Field(
            name=name,
            id=fid,
            type=t,
            offset=offset,
            since_version=since,
            presence=presence or "required",
            constant=constant,
            semantic_type=el.get("semanticType", ""),
            line=self.line(el),
        )

    def group(self, el: ET.Element, since: int) -> Group:
        dim_name = el.get("dimensionType", "groupSizeEncoding")
        dim = self.type_named(dim_name, el)
        if not isinstance(dim, CompositeType):
            raise self.error(el, f"dimensionType={dim_name!r} is not a composite")
        for member in ("blockLength", "numInGroup"):
            try:
                p = dim.part(member)
            except KeyError:
                raise self.error(el, f"dimensionType {dim_name!r} has no {member}") from None
            if not isinstance(p.type, EncodedType) or p.type.primitive[0] != "u":
                raise self.error(el, f"{dim_name}.{member} is not an unsigned integer")
        fields, groups, data, end = self.block_parts(el, since)
        block_length = self.int_attr(el, "blockLength", end)
        if block_length < end:
            raise self.error(
                el, f"blockLength={block_length} is shorter than its fields ({end} bytes)"
            )
        return Group(
            name=el.get("name", ""),
            id=self.int_attr(el, "id", 0),
            block_length=block_length,
            fields=tuple(fields),
            groups=tuple(groups),
            data=tuple(data),
            since_version=since,
            byte_order=self.byte_order,
            line=self.line(el),
            dimension=dim,
        )

    def data(self, el: ET.Element, since: int) -> DataField:
        tname = el.get("type", "")
        t = self.type_named(tname, el)
        if not isinstance(t, CompositeType) or len(t.parts) < 2:
            raise self.error(el, f"type {tname!r} of var data is not a length + data composite")
        length = t.parts[0]
        if not isinstance(length.type, EncodedType) or length.type.primitive[0] != "u":
            raise self.error(el, f"{tname}.{length.name} is not an unsigned length")
        return DataField(
            name=el.get("name", ""),
            id=self.int_attr(el, "id", 0),
            type=t,
            length_type=length.type,
            length_offset=length.offset,
            data_offset=t.parts[1].offset,
            since_version=since,
            line=self.line(el),
        )

    def message(self, el: ET.Element) -> Message:
        since = self.int_attr(el, "sinceVersion", 0)
        fields, groups, data, end = self.block_parts(el, since)
        block_length = self.int_attr(el, "blockLength", end)
        if block_length < end:
            raise self.error(
                el, f"blockLength={block_length} is shorter than its fields ({end} bytes)"
            )
        return Message(
            name=el.get("name", ""),
            id=self.int_attr(el, "id"),
            block_length=block_length,
            fields=tuple(fields),
            groups=tuple(groups),
            data=tuple(data),
            since_version=since,
            byte_order=self.byte_order,
            line=self.line(el),
            description=el.get("description", ""),
            semantic_type=el.get("semanticType", ""),
        )

    def schema(self) -> Schema:
        root = self.root
        if _local(root.tag) != "messageSchema":
            raise self.error(root, "the root element is not <messageSchema>")
        order = root.get("byteOrder", "littleEndian")
        if order not in ("littleEndian", "bigEndian"):
            raise self.error(root, f"byteOrder={order!r} (littleEndian or bigEndian)")
        self.byte_order = "<" if order == "littleEndian" else ">"
        self.collect()
        header = self.type_named(root.get("headerType", "messageHeader"), root)
        if not isinstance(header, CompositeType):
            raise self.error(root, "the message header type is not a composite")
        for member in ("blockLength", "templateId", "schemaId", "version"):
            try:
                p = header.part(member)
            except KeyError:
                raise self.error(root, f"the message header has no {member}") from None
            if not isinstance(p.type, EncodedType) or p.type.primitive[0] != "u":
                raise self.error(root, f"header member {member} is not an unsigned integer")
        for name in self.elements:
            self.type_named(name, self.elements[name])
        messages: dict[int, Message] = {}
        for el in root:
            if _local(el.tag) == "message":
                m = self.message(el)
                if m.id in messages:
                    raise self.error(el, f"templateId {m.id} is used twice")
                if not 0 <= m.id < 65536:
                    raise self.error(el, f"templateId {m.id} does not fit a uint16")
                messages[m.id] = m
        return Schema(
            path=self.path,
            package=root.get("package", ""),
            id=self.int_attr(root, "id", 0),
            version=self.int_attr(root, "version", 0),
            byte_order=self.byte_order,
            header=header,
            types=dict(self.types),
            messages=messages,
        )


def load_schema(path: str | Path) -> Schema:
    """Read an SBE message schema XML file.

    Parameters
    ----------
    path
        The schema file (``templates_FixBinary.xml`` for CME MDP 3.0).

    Returns
    -------
    Schema
        Its types and messages, with each block's columns at their offsets.

    Raises
    ------
    SchemaError
        If the file cannot be read or is not a usable schema; the message names the file,
        the line and the element.
    """
    return _Reader(Path(path)).schema()
