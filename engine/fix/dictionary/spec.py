# SPDX-License-Identifier: MIT
"""What a QuickFIX-format dictionary file says: the raw spec, as written.

A dictionary file has the shape QuickFIX, QuickFIX/J, QuickFIX/n and QuickFIX/Go read::

    <fix type="FIX" major="4" minor="4" servicepack="0">
      <header> <field name="BeginString" required="Y"/> ... </header>
      <trailer> ... </trailer>
      <messages> <message name="Heartbeat" msgtype="0" msgcat="admin"> ... </message> </messages>
      <components> <component name="Instrument"> ... </component> </components>
      <fields> <field number="1" name="Account" type="STRING"> <value enum=".." .../> </field>
    </fix>

:class:`DictionarySpec` holds it exactly as written: messages, components and groups with their
component references kept (so that the dictionary can be written again and overlays applied),
fields with their enums. :class:`DictionaryError` is the one error every part of
:mod:`engine.fix.dictionary` raises for a bad file: file, line, element and reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

#: ApplVerID <1128> codes by dictionary version (FIX 5.0 volume 1 and QuickFIX's ``Values.h``).
APPL_VER_IDS: Mapping[str, str] = {
    "FIX.2.7": "0",
    "FIX.3.0": "1",
    "FIX.4.0": "2",
    "FIX.4.1": "3",
    "FIX.4.2": "4",
    "FIX.4.3": "5",
    "FIX.4.4": "6",
    "FIX.5.0": "7",
    "FIX.5.0SP1": "8",
    "FIX.5.0SP2": "9",
}

#: Field types whose value is a space-separated list of enum values.
MULTI_VALUE_TYPES: frozenset[str] = frozenset(
    {"MULTIPLEVALUESTRING", "MULTIPLECHARVALUE", "MULTIPLESTRINGVALUE"}
)


class DictionaryError(ValueError):
    """A data dictionary (or overlay) file is malformed.

    Parameters
    ----------
    source : str
        File name (or ``"<string>"``).
    line : int
        1-based line of the offending element (0 if unknown).
    element : str
        Element description, e.g. ``"<field name='Foo'>"``.
    reason : str
        What is wrong.
    """

    def __init__(self, source: str, line: int, element: str, reason: str) -> None:
        self.source = source
        self.line = line
        self.element = element
        self.reason = reason
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {element}: {reason}")


# ----------------------------------------------------------------------------- raw structure


@dataclass(frozen=True, slots=True)
class FieldDef:
    """One field of the ``<fields>`` section.

    Parameters
    ----------
    tag : int
        Tag number.
    name : str
        Field name (``"ClOrdID"``).
    type : str
        QuickFIX XML type name in upper case (``"STRING"``, ``"PRICE"``, ``"UTCTIMESTAMP"`` …).
    enums : Mapping[str, str]
        Allowed values (in file order) to their descriptions; empty if the field is free-form.
    allow_other_values : bool
        QuickFIX/J's ``allowOtherValues='Y'``: the enums describe values but do not restrict them.
    line : int
        Line in the source file (0 if built in code); not part of equality.
    """

    tag: int
    name: str
    type: str
    enums: Mapping[str, str] = field(default_factory=dict)
    allow_other_values: bool = False
    line: int = field(default=0, compare=False)

    def describe(self, value: str) -> str | None:
        """Return the description of an enum ``value``, or None if it has none."""
        return self.enums.get(value)


@dataclass(frozen=True, slots=True)
class FieldMember:
    """A ``<field name=.. required=..>`` reference inside a message, component or group."""

    name: str
    required: bool
    #: Line in the source file (0 if built in code); not part of equality.
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class ComponentMember:
    """A ``<component name=.. required=..>`` reference."""

    name: str
    required: bool
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A ``<group name=.. required=..>`` with its members; ``name`` is the NumInGroup field."""

    name: str
    required: bool
    members: tuple[Member, ...]
    line: int = field(default=0, compare=False)


Member = FieldMember | ComponentMember | GroupMember

#: The element name of a member: ``<field>``, ``<component>`` or ``<group>``.
MemberKind = Literal["field", "component", "group"]
#: The element name of each member type.
KIND_OF: Mapping[type, MemberKind] = {
    FieldMember: "field",
    ComponentMember: "component",
    GroupMember: "group",
}


@dataclass(frozen=True, slots=True)
class ComponentDef:
    """A ``<component>`` definition."""

    name: str
    members: tuple[Member, ...]


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A ``<message>`` definition as written (components not expanded)."""

    msg_type: str
    name: str
    category: str
    members: tuple[Member, ...]
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class DictionarySpec:
    """The raw content of a dictionary file, enough to write it back.

    Parameters
    ----------
    type : str
        ``"FIX"`` or ``"FIXT"``.
    major, minor, service_pack : int
        Version numbers from the ``<fix>`` element.
    header, trailer : tuple[Member, ...]
        Members of ``<header>`` and ``<trailer>``.
    messages : tuple[MessageSpec, ...]
        Messages in file order.
    components : tuple[ComponentDef, ...]
        Components in file order.
    fields : tuple[FieldDef, ...]
        Fields in file order.
    extension_pack : int | None
        ``extensionpack`` attribute, if present.
    """

    type: str
    major: int
    minor: int
    service_pack: int
    header: tuple[Member, ...]
    trailer: tuple[Member, ...]
    messages: tuple[MessageSpec, ...]
    components: tuple[ComponentDef, ...]
    fields: tuple[FieldDef, ...]
    extension_pack: int | None = None


def spec_version(spec: DictionarySpec) -> str:
    """Return the version a spec declares: ``"FIX.4.4"``, ``"FIXT.1.1"``, ``"FIX.5.0SP2"``."""
    base = f"{spec.type}.{spec.major}.{spec.minor}"
    return f"{base}SP{spec.service_pack}" if spec.service_pack else base
