# SPDX-License-Identifier: MIT
"""Reading dictionary XML: expat into a small node tree, the tree into a :class:`DictionarySpec`.

The parser is expat with a minimal node tree (ElementTree keeps no line numbers), so every
:class:`~engine.fix.dictionary.spec.DictionaryError` names the file, the line, the element and
the reason. :class:`SpecReader` also reads the members and fields of overlay files
(:mod:`engine.fix.dictionary.overlay`). :func:`default_dictionary_path` finds the dictionaries
the project ships in ``resources/fix/``.
"""

from __future__ import annotations

import xml.parsers.expat
from pathlib import Path

from engine.fix.dictionary.spec import (
    ComponentDef,
    ComponentMember,
    DictionaryError,
    DictionarySpec,
    FieldDef,
    FieldMember,
    GroupMember,
    Member,
    MessageSpec,
)

_RESOURCE_DIR = Path(__file__).resolve().parents[3] / "resources" / "fix"


def default_dictionary_path(version: str) -> Path:
    """Return the path of the dictionary the project ships for a FIX version.

    Parameters
    ----------
    version : str
        ``"FIX.4.0"`` … ``"FIX.4.4"``, ``"FIX.5.0"``, ``"FIX.5.0SP1"``, ``"FIX.5.0SP2"`` or
        ``"FIXT.1.1"``.

    Returns
    -------
    Path
        ``resources/fix/FIX44.xml`` and so on.

    Raises
    ------
    KeyError
        If no dictionary ships for ``version``.
    """
    name = version.replace(".", "")
    path = _RESOURCE_DIR / f"{name}.xml"
    if not path.is_file():
        raise KeyError(version)
    return path


class XmlNode:
    """An element: its tag, attributes, line and children (expat gives the line)."""

    __slots__ = ("attrs", "children", "line", "tag")

    def __init__(self, tag: str, attrs: dict[str, str], line: int) -> None:
        self.tag = tag
        self.attrs = attrs
        self.line = line
        self.children: list[XmlNode] = []

    def describe(self) -> str:
        """Return the element as messages name it: ``<field name='Foo'>``."""
        key = self.attrs.get("name") or self.attrs.get("enum") or self.attrs.get("number")
        if key is None:
            return f"<{self.tag}>"
        attr = "name" if "name" in self.attrs else ("enum" if "enum" in self.attrs else "number")
        return f"<{self.tag} {attr}='{key}'>"


def parse_xml(data: bytes, source: str) -> XmlNode:
    """Parse XML ``data`` into a node tree; raise :class:`DictionaryError` where it is not XML."""
    parser = xml.parsers.expat.ParserCreate()
    root: list[XmlNode] = []
    stack: list[XmlNode] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = XmlNode(tag, attrs, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise DictionaryError(
            source, e.lineno, "XML", xml.parsers.expat.errors.messages[e.code]
        ) from e
    return root[0]


class SpecReader:
    """Turn a node tree into raw specs, reporting errors with lines.

    Parameters
    ----------
    source : str
        File name (or ``"<string>"``), for messages.
    """

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, node: XmlNode, reason: str) -> DictionaryError:
        """Return the error to raise for ``node``."""
        return DictionaryError(self.source, node.line, node.describe(), reason)

    def attr(self, node: XmlNode, name: str) -> str:
        """Return attribute ``name`` of ``node``, stripped; it must be there and not blank."""
        value = node.attrs.get(name)
        if value is None or not value.strip():
            raise self.error(node, f"missing attribute '{name}'")
        return value.strip()

    def required(self, node: XmlNode, *, default: bool = False) -> bool:
        """Return the ``required`` flag of ``node`` (``Y`` or ``N``; ``default`` if absent)."""
        raw = node.attrs.get("required")
        if raw is None:
            return default
        if raw in ("Y", "y"):
            return True
        if raw in ("N", "n"):
            return False
        raise self.error(node, f"attribute required='{raw}' must be Y or N")

    def int_attr(self, node: XmlNode, name: str, default: int | None = None) -> int:
        """Return attribute ``name`` as an integer (``default`` if absent and given)."""
        raw = node.attrs.get(name)
        if raw is None:
            if default is None:
                raise self.error(node, f"missing attribute '{name}'")
            return default
        try:
            return int(raw)
        except ValueError:
            raise self.error(node, f"attribute {name}='{raw}' is not an integer") from None

    def members(self, node: XmlNode) -> tuple[Member, ...]:
        """Return the field, component and group references inside ``node``."""
        out: list[Member] = []
        for child in node.children:
            if child.tag not in ("field", "component", "group"):
                raise self.error(child, f"unexpected element inside <{node.tag}>")
            name, req, line = self.attr(child, "name"), self.required(child), child.line
            if child.tag == "field":
                out.append(FieldMember(name, req, line))
            elif child.tag == "component":
                out.append(ComponentMember(name, req, line))
            else:
                out.append(GroupMember(name, req, self.members(child), line))
        return tuple(out)

    def field_def(self, node: XmlNode, *, need_type: bool = True) -> FieldDef:
        """Return the ``<field>`` definition ``node`` (an overlay's may omit number and type)."""
        if node.tag != "field":
            raise self.error(node, "only <field> elements belong in <fields>")
        tag = self.int_attr(node, "number", default=None if need_type else 0)
        if need_type and tag <= 0:
            raise self.error(node, f"field number {tag} must be positive")
        name = self.attr(node, "name")
        type_ = node.attrs.get("type", "").strip().upper()
        if need_type and not type_:
            raise self.error(node, "missing attribute 'type'")
        enums: dict[str, str] = {}
        for value in node.children:
            if value.tag != "value":
                raise self.error(value, "only <value> elements belong in <field>")
            enum = value.attrs.get("enum")
            if enum is None or enum == "":
                raise self.error(value, "missing attribute 'enum'")
            enums[enum] = value.attrs.get("description", "")
        other = node.attrs.get("allowOtherValues", "N") in ("Y", "y")
        return FieldDef(tag, name, type_, enums, other, node.line)

    def section(self, root: XmlNode, name: str) -> XmlNode | None:
        """Return the one ``<name>`` section of ``root``, or None."""
        found = [c for c in root.children if c.tag == name]
        if len(found) > 1:
            raise self.error(found[1], f"<{name}> appears more than once")
        return found[0] if found else None

    def spec(self, root: XmlNode) -> DictionarySpec:
        """Return the raw spec of a whole ``<fix>`` document."""
        if root.tag != "fix":
            raise self.error(root, "root element must be <fix>")
        type_ = root.attrs.get("type", "FIX").strip() or "FIX"
        if type_ not in ("FIX", "FIXT"):
            raise self.error(root, f"type='{type_}' must be FIX or FIXT")
        major = self.int_attr(root, "major")
        minor = self.int_attr(root, "minor")
        sp = self.int_attr(root, "servicepack", default=0)
        ep_raw = root.attrs.get("extensionpack")
        ep = self.int_attr(root, "extensionpack") if ep_raw is not None else None
        sections = {}
        for name in ("header", "trailer", "messages", "components", "fields"):
            sections[name] = self.section(root, name)
        for child in root.children:
            if child.tag not in sections:
                raise self.error(child, "unexpected element inside <fix>")
        for name in ("header", "trailer", "messages", "fields"):
            if sections[name] is None:
                raise self.error(root, f"<{name}> section not found")
        fields_node = sections["fields"]
        assert fields_node is not None  # checked above
        fields = tuple(self.field_def(n) for n in fields_node.children)
        messages = []
        msgs_node = sections["messages"]
        assert msgs_node is not None
        for node in msgs_node.children:
            if node.tag != "message":
                raise self.error(node, "only <message> elements belong in <messages>")
            messages.append(
                MessageSpec(
                    self.attr(node, "msgtype"),
                    self.attr(node, "name"),
                    node.attrs.get("msgcat", "app").strip() or "app",
                    self.members(node),
                    node.line,
                )
            )
        components = []
        comps_node = sections["components"]
        for node in comps_node.children if comps_node is not None else ():
            if node.tag != "component":
                raise self.error(node, "only <component> elements belong in <components>")
            components.append(ComponentDef(self.attr(node, "name"), self.members(node)))
        header = sections["header"]
        trailer = sections["trailer"]
        assert header is not None
        assert trailer is not None
        return DictionarySpec(
            type_,
            major,
            minor,
            sp,
            self.members(header),
            self.members(trailer),
            tuple(messages),
            tuple(components),
            fields,
            ep,
        )


def read_spec(data: bytes, source: str) -> DictionarySpec:
    """Parse a dictionary's XML ``data`` into its raw spec.

    Raises
    ------
    DictionaryError
        If ``data`` is not XML or not a dictionary (file, line, element, reason).
    """
    return SpecReader(source).spec(parse_xml(data, source))


def read_file(path: str | Path) -> tuple[bytes, str]:
    """Return the bytes of a dictionary or overlay file and its name for messages.

    Raises
    ------
    DictionaryError
        If the file cannot be read.
    """
    p = Path(path)
    try:
        return p.read_bytes(), str(p)
    except OSError as e:
        raise DictionaryError(str(p), 0, "file", e.strerror or str(e)) from e
