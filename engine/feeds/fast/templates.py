# SPDX-License-Identifier: MIT
"""FAST 1.1 template definitions (with the 1.2 additions CQG-style files use), read from XML.

A template file declares messages as a tree of *instructions*: fields (integers, decimals,
strings, byte vectors), sequences (a length field then repeated elements), groups and
template references. Each field may carry one field operator (constant, default, copy,
increment, delta, tail) with an initial value and a dictionary entry named by its
``dictionary`` (global, template, type or any other name: a user-defined dictionary) and
``key`` (the field name unless given).

This module parses the XML into frozen dataclasses and resolves everything that does not
depend on the data: static template references (by name, with cycle detection), presence-map
bit use, nullability and the dictionary entry of every operator, numbered as *slots* so
that decoders keep dictionaries as flat arrays. It does not decode anything; see
:mod:`engine.feeds.fast.decoder`.

    templates = TemplateSet.from_file("templates.xml")
    templates.by_id[4].name  # 'MDHeartbeat'

Errors (:class:`TemplateError`) name the file, line and element, and say why.

What it does not read: FAST 1.2 ``define``/``enum``/``set``/``timestamp``/``boolean`` types,
``field`` wrappers and ``ns``-qualified names (namespaces are ignored: names are unique).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

#: Dictionary names with a defined scope; any other name is a user-defined dictionary.
GLOBAL = "global"
TEMPLATE = "template"
TYPE = "type"


class TemplateError(ValueError):
    """A template file that cannot be used (names the file, line and element, and why)."""


class FieldType(enum.IntEnum):
    """The FAST field types (FAST 1.2 ``int8``/``int16`` read as 32-bit integers)."""

    INT32 = 0
    UINT32 = 1
    INT64 = 2
    UINT64 = 3
    DECIMAL = 4
    ASCII = 5
    UNICODE = 6
    BYTES = 7


class Op(enum.IntEnum):
    """Field operators (FAST 1.1 section 6.3)."""

    NONE = 0
    CONSTANT = 1
    DEFAULT = 2
    COPY = 3
    INCREMENT = 4
    DELTA = 5
    TAIL = 6


#: Kinds of dictionary values; a slot holds values of one kind.
KIND_INT = 0
KIND_DECIMAL = 1
KIND_STRING = 2

_INT_TYPES = {
    "int32": FieldType.INT32,
    "uInt32": FieldType.UINT32,
    "int64": FieldType.INT64,
    "uInt64": FieldType.UINT64,
    "int8": FieldType.INT32,
    "int16": FieldType.INT32,
    "uInt8": FieldType.UINT32,
    "uInt16": FieldType.UINT32,
    "length": FieldType.UINT32,
}
_OPS = {
    "constant": Op.CONSTANT,
    "default": Op.DEFAULT,
    "copy": Op.COPY,
    "increment": Op.INCREMENT,
    "delta": Op.DELTA,
    "tail": Op.TAIL,
}
#: Bounds of the integer types: (min, max).
INT_RANGE = {
    FieldType.INT32: (-(1 << 31), (1 << 31) - 1),
    FieldType.UINT32: (0, (1 << 32) - 1),
    FieldType.INT64: (-(1 << 63), (1 << 63) - 1),
    FieldType.UINT64: (0, (1 << 64) - 1),
}


@dataclass(frozen=True, slots=True)
class Decimal:
    """A FAST scaled number: ``mantissa * 10 ** exponent`` (kept exact, never a float)."""

    exponent: int
    mantissa: int

    def __str__(self) -> str:
        """Return the number as rs-fastlib's text format writes it (``0.1``, ``20``, ``1``)."""
        e, m = self.exponent, self.mantissa
        if e >= 0:
            return str(m * 10**e)
        div = 10**-e
        if m % div == 0:
            return str(m // div)
        sign = "-" if m < 0 else ""
        q, r = divmod(abs(m), div)
        return f"{sign}{q}.{r:0{-e}d}"


#: A value an operator may hold: integers, decimals, strings (text or bytes).
Scalar = int | Decimal | str | bytes


@dataclass(frozen=True, slots=True)
class Operator:
    """A field operator with its initial value and its dictionary entry.

    ``slot`` numbers the dictionary entry (dictionary, scope owner, key, kind) within the
    :class:`TemplateSet`; -1 for operators that keep no state (none, constant, default).
    """

    op: Op
    initial: Scalar | None = None
    dictionary: str = GLOBAL
    key: str = ""
    slot: int = -1


@dataclass(frozen=True, slots=True)
class Field:
    """A scalar field; decimals with separate exponent/mantissa operators set both."""

    name: str
    id: str
    type: FieldType
    optional: bool
    operator: Operator
    line: int
    #: Separate exponent and mantissa operators of a decimal (``operator`` is then NONE).
    exponent: Operator | None = None
    mantissa: Operator | None = None

    @property
    def nullable(self) -> bool:
        """Return whether the field's wire value may be NULL (optional, not constant)."""
        return self.optional and self.operator.op != Op.CONSTANT

    @property
    def pmap_bits(self) -> int:
        """Return how many presence-map bits the field uses (FAST 1.1 table 6.3.1)."""
        if self.exponent is not None and self.mantissa is not None:
            return _bit(self.exponent.op, self.optional) + _bit(self.mantissa.op, False)
        return _bit(self.operator.op, self.optional)


def _bit(op: Op, optional: bool) -> int:
    if op == Op.CONSTANT:
        return 1 if optional else 0
    return 1 if op in (Op.DEFAULT, Op.COPY, Op.INCREMENT, Op.TAIL) else 0


@dataclass(frozen=True, slots=True)
class Sequence:
    """A sequence: its length field (an unsigned integer field) and its element."""

    name: str
    optional: bool
    length: Field
    instructions: tuple[Instruction, ...]
    line: int

    @property
    def needs_pmap(self) -> bool:
        """Return whether each element starts with a presence map."""
        return pmap_bits(self.instructions) > 0


@dataclass(frozen=True, slots=True)
class Group:
    """A group; an optional group takes one bit of the enclosing presence map."""

    name: str
    optional: bool
    instructions: tuple[Instruction, ...]
    line: int

    @property
    def needs_pmap(self) -> bool:
        """Return whether the group starts with its own presence map."""
        return pmap_bits(self.instructions) > 0


@dataclass(frozen=True, slots=True)
class TemplateRef:
    """A dynamic template reference (a nested message with its own presence map and id).

    Static references (with a name) are resolved while reading: the referenced template's
    instructions take their place and share the enclosing presence map.
    """

    line: int


Instruction = Field | Sequence | Group | TemplateRef


def pmap_bits(instructions: tuple[Instruction, ...]) -> int:
    """Return the presence-map bits a run of instructions uses (groups: one if optional)."""
    n = 0
    for ins in instructions:
        if isinstance(ins, Field):
            n += ins.pmap_bits
        elif isinstance(ins, Sequence):
            n += ins.length.pmap_bits
        elif isinstance(ins, Group):
            n += 1 if ins.optional else 0
    return n


@dataclass(frozen=True, slots=True)
class Template:
    """A template: its id, name, instructions (static references inlined), reset flag."""

    id: int
    name: str
    instructions: tuple[Instruction, ...]
    line: int
    #: Whether decoding this template first resets every dictionary (``reset="yes"``).
    reset: bool = False


@dataclass(frozen=True, slots=True)
class SlotInfo:
    """One dictionary entry: where it lives and what kind of value it holds."""

    dictionary: str
    owner: str
    key: str
    kind: int


@dataclass
class TemplateSet:
    """Every template of a file, by id and by name, with the dictionary slots they use."""

    templates: list[Template]
    slots: list[SlotInfo]
    source: str = "<string>"
    by_id: dict[int, Template] = field(init=False)
    by_name: dict[str, Template] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {t.id: t for t in self.templates}
        self.by_name = {t.name: t for t in self.templates}

    #: Slot of the template identifier (copied in the global dictionary; FAST 1.1 6.2.3).
    TEMPLATE_ID_SLOT = 0

    @classmethod
    def from_file(cls, path: str | Path) -> TemplateSet:
        """Read a FAST template XML file.

        Raises
        ------
        TemplateError
            The file cannot be read or a template is malformed (file, line, element, why).
        """
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise TemplateError(f"{p}: cannot read template file: {e.strerror}") from e
        return cls.from_xml(data, source=str(p))

    @classmethod
    def from_xml(cls, data: str | bytes, source: str = "<string>") -> TemplateSet:
        """Read FAST templates from XML text; ``source`` names it in errors."""
        root = _parse_xml(data, source)
        return _Builder(source).build(root)


# ---------------------------------------------------------------------------------------------
# A small element tree that keeps line numbers (xml.etree does not).


@dataclass
class _El:
    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_El] = field(default_factory=list)


def _parse_xml(data: str | bytes, source: str) -> _El:
    parser = expat.ParserCreate(namespace_separator=" ")
    stack: list[_El] = []
    roots: list[_El] = []

    def start(tag: str, attrib: dict[str, str]) -> None:
        el = _El(tag.rsplit(" ", 1)[-1], dict(attrib), parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(el)
        stack.append(el)

    def end(_tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise TemplateError(f"{source}:{e.lineno}: not well-formed XML: {e}") from e
    if not roots:
        raise TemplateError(f"{source}: no XML element")
    return roots[0]


_FIELD_TAGS = {*_INT_TYPES, "decimal", "string", "byteVector"}


@dataclass(frozen=True)
class _Scope:
    """What an instruction inherits from where it appears."""

    dictionary: str
    template: str
    type_name: str


class _Builder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.slots: list[SlotInfo] = [SlotInfo(GLOBAL, "", "<templateId>", KIND_INT)]
        self.slot_ix: dict[tuple[str, str, str, int], int] = {
            (GLOBAL, "", "<templateId>", KIND_INT): 0
        }
        self.raw: dict[str, _El] = {}
        self.root_dict = GLOBAL
        self.done: dict[str, tuple[Instruction, ...]] = {}
        self.busy: list[str] = []

    def err(self, el: _El, why: str) -> TemplateError:
        name = el.attrib.get("name")
        what = f"<{el.tag} name={name!r}>" if name else f"<{el.tag}>"
        return TemplateError(f"{self.source}:{el.line}: {what}: {why}")

    def build(self, root: _El) -> TemplateSet:
        if root.tag == "template":
            tmpl_els = [root]
        elif root.tag == "templates":
            self.root_dict = root.attrib.get("dictionary", GLOBAL)
            tmpl_els = [c for c in root.children if c.tag == "template"]
            for c in root.children:
                if c.tag != "template":
                    raise self.err(c, "only <template> elements may appear in <templates>")
        else:
            raise self.err(root, "the root element must be <templates> or <template>")
        for el in tmpl_els:
            name = el.attrib.get("name")
            if not name:
                raise self.err(el, "a template needs a name")
            if name in self.raw:
                raise self.err(el, f"template name {name!r} is used twice")
            self.raw[name] = el
        templates: list[Template] = []
        seen_ids: dict[int, str] = {}
        for name, el in self.raw.items():
            instructions = self.template_body(name)
            if "id" not in el.attrib:
                continue  # only referenced statically (a header such as CQG's MsgHeader)
            tid = self.template_id(el)
            if tid in seen_ids:
                raise self.err(el, f"id {tid} is also template {seen_ids[tid]!r}")
            seen_ids[tid] = name
            reset = el.attrib.get("reset", "").lower() in ("y", "yes", "true", "1")
            templates.append(Template(tid, name, instructions, el.line, reset))
        return TemplateSet(templates, self.slots, self.source)

    def template_id(self, el: _El) -> int:
        text = el.attrib["id"]
        try:
            tid = int(text)
        except ValueError:
            raise self.err(el, f"id {text!r} is not an integer") from None
        if not 0 <= tid < 1 << 32:
            raise self.err(el, f"id {tid} is outside uInt32")
        return tid

    def template_body(self, name: str) -> tuple[Instruction, ...]:
        if name in self.done:
            return self.done[name]
        el = self.raw[name]
        if name in self.busy:
            chain = " -> ".join([*self.busy, name])
            raise self.err(el, f"static template references form a cycle: {chain}")
        self.busy.append(name)
        type_name = name
        for c in el.children:
            if c.tag == "typeRef":
                type_name = c.attrib.get("name", name)
        scope = _Scope(el.attrib.get("dictionary", self.root_dict), name, type_name)
        body = self.instructions(el.children, scope)
        self.busy.pop()
        self.done[name] = body
        return body

    def instructions(self, els: list[_El], scope: _Scope) -> tuple[Instruction, ...]:
        out: list[Instruction] = []
        for c in els:
            if c.tag == "typeRef":
                continue
            if c.tag in _FIELD_TAGS and c.tag != "length":
                out.append(self.field(c, scope))
            elif c.tag == "sequence":
                out.append(self.sequence(c, scope))
            elif c.tag == "group":
                out.append(self.group(c, scope))
            elif c.tag == "templateRef":
                ref = c.attrib.get("name")
                if ref is None:
                    out.append(TemplateRef(c.line))
                elif ref not in self.raw:
                    raise self.err(c, f"references template {ref!r}, which is not defined")
                else:
                    out.extend(self.template_body(ref))
            elif c.tag == "length":
                raise self.err(c, "<length> may only be the first element of a <sequence>")
            else:
                raise self.err(c, "unknown element (not a FAST 1.1 instruction)")
        return tuple(out)

    def presence(self, el: _El) -> bool:
        p = el.attrib.get("presence", "mandatory")
        if p not in ("mandatory", "optional"):
            raise self.err(el, f"presence {p!r} is neither 'mandatory' nor 'optional'")
        return p == "optional"

    def sub_scope(self, el: _El, scope: _Scope) -> _Scope:
        type_name = scope.type_name
        for c in el.children:
            if c.tag == "typeRef":
                type_name = c.attrib.get("name", type_name)
        return _Scope(el.attrib.get("dictionary", scope.dictionary), scope.template, type_name)

    def sequence(self, el: _El, scope: _Scope) -> Sequence:
        name = el.attrib.get("name")
        if not name:
            raise self.err(el, "a sequence needs a name")
        optional = self.presence(el)
        inner = self.sub_scope(el, scope)
        body = [c for c in el.children if c.tag != "typeRef"]
        if body and body[0].tag == "length":
            len_el = body.pop(0)
            len_el.attrib.setdefault("name", f"{name}.length")
            len_el.attrib["presence"] = "optional" if optional else "mandatory"
            length = self.field(len_el, inner, ftype=FieldType.UINT32)
        else:
            length = Field(
                f"{name}.length", "", FieldType.UINT32, optional, Operator(Op.NONE), el.line
            )
        return Sequence(name, optional, length, self.instructions(body, inner), el.line)

    def group(self, el: _El, scope: _Scope) -> Group:
        name = el.attrib.get("name")
        if not name:
            raise self.err(el, "a group needs a name")
        inner = self.sub_scope(el, scope)
        return Group(name, self.presence(el), self.instructions(el.children, inner), el.line)

    def field(self, el: _El, scope: _Scope, ftype: FieldType | None = None) -> Field:
        name = el.attrib.get("name")
        if not name:
            raise self.err(el, "a field needs a name")
        optional = self.presence(el)
        if ftype is None:
            if el.tag in _INT_TYPES:
                ftype = _INT_TYPES[el.tag]
            elif el.tag == "decimal":
                ftype = FieldType.DECIMAL
            elif el.tag == "string":
                cs = el.attrib.get("charset", "ascii")
                if cs not in ("ascii", "unicode"):
                    raise self.err(el, f"charset {cs!r} is neither 'ascii' nor 'unicode'")
                ftype = FieldType.UNICODE if cs == "unicode" else FieldType.ASCII
            else:
                ftype = FieldType.BYTES
        ops = [c for c in el.children if c.tag in _OPS]
        parts = {c.tag: c for c in el.children if c.tag in ("exponent", "mantissa")}
        for c in el.children:
            if c.tag not in _OPS and c.tag not in ("exponent", "mantissa", "length"):
                raise self.err(c, f"unknown element inside <{el.tag} name={name!r}>")
        if len(ops) > 1:
            raise self.err(ops[1], f"field {name!r} has more than one operator")
        if parts and (ftype != FieldType.DECIMAL or ops):
            raise self.err(el, "exponent/mantissa only in a decimal without a field operator")
        fid = el.attrib.get("id", "")
        if parts:
            exp = self.operator(
                parts.get("exponent"), name + ".exponent", FieldType.INT32, optional, scope
            )
            man = self.operator(
                parts.get("mantissa"), name + ".mantissa", FieldType.INT64, False, scope
            )
            return Field(name, fid, ftype, optional, Operator(Op.NONE), el.line, exp, man)
        op = self.operator(ops[0] if ops else None, name, ftype, optional, scope)
        return Field(name, fid, ftype, optional, op, el.line)

    def operator(
        self, el: _El | None, name: str, ftype: FieldType, optional: bool, scope: _Scope
    ) -> Operator:
        if el is None:
            return Operator(Op.NONE)
        if el.tag in ("exponent", "mantissa"):
            inner = [c for c in el.children if c.tag in _OPS]
            if len(inner) > 1:
                raise self.err(inner[1], f"{el.tag} of {name!r} has more than one operator")
            return self.operator(inner[0] if inner else None, name, ftype, optional, scope)
        op = _OPS[el.tag]
        text = el.attrib.get("value")
        initial = None if text is None else self.initial(el, text, ftype)
        if op == Op.CONSTANT and initial is None:
            raise self.err(el, f"constant of {name!r} needs a value (ERR S4)")
        if op == Op.DEFAULT and initial is None and not optional:
            raise self.err(el, f"default of mandatory {name!r} needs a value (ERR S5)")
        if op == Op.INCREMENT and ftype in (FieldType.DECIMAL, *_STRINGS):
            raise self.err(el, f"increment applies to integers only, not {ftype.name} (ERR S2)")
        if op == Op.TAIL and ftype not in _STRINGS:
            raise self.err(el, f"tail applies to strings and byte vectors, not {ftype.name}")
        if op in (Op.NONE, Op.CONSTANT, Op.DEFAULT):
            return Operator(op, initial)
        dictionary = el.attrib.get("dictionary", scope.dictionary)
        key = el.attrib.get("key", name)
        owner = {TEMPLATE: scope.template, TYPE: scope.type_name}.get(dictionary, "")
        kind = KIND_DECIMAL if ftype == FieldType.DECIMAL else KIND_INT
        kind = KIND_STRING if ftype in _STRINGS else kind
        ident = (dictionary, owner, key, kind)
        slot = self.slot_ix.get(ident)
        if slot is None:
            slot = self.slot_ix[ident] = len(self.slots)
            self.slots.append(SlotInfo(*ident))
        return Operator(op, initial, dictionary, key, slot)

    def initial(self, el: _El, text: str, ftype: FieldType) -> Scalar:
        if ftype in (FieldType.ASCII, FieldType.UNICODE):
            return text
        if ftype == FieldType.BYTES:
            try:
                return bytes.fromhex(text)
            except ValueError:
                raise self.err(el, f"value {text!r} is not hex digits (byteVector)") from None
        if ftype == FieldType.DECIMAL:
            d = parse_decimal(text)
            if d is None:
                raise self.err(el, f"value {text!r} is not a decimal number (ERR S3)")
            return d
        try:
            v = int(text)
        except ValueError:
            raise self.err(el, f"value {text!r} is not an integer (ERR S3)") from None
        lo, hi = INT_RANGE[ftype]
        if not lo <= v <= hi:
            raise self.err(el, f"value {v} is outside {ftype.name} (ERR S3)")
        return v


_STRINGS = (FieldType.ASCII, FieldType.UNICODE, FieldType.BYTES)
_DECIMAL_RE = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$")


def parse_decimal(text: str) -> Decimal | None:
    """Return the normalized decimal of ``text`` (``"0.10"`` -> (-1, 1)), or None."""
    m = _DECIMAL_RE.match(text.strip())
    if not m or not (m.group(2) or m.group(3)):
        return None
    sign, whole, frac, exp = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    mant = int((whole or "0") + frac) * (-1 if sign == "-" else 1)
    e = -len(frac) + (int(exp) if exp else 0)
    if mant == 0:
        return Decimal(0, 0)
    while mant % 10 == 0:
        mant //= 10
        e += 1
    return Decimal(e, mant)
