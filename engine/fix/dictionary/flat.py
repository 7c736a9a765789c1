# SPDX-License-Identifier: MIT
"""The flattened view of a dictionary: what the codec and the validator look up.

For every message (and for the header and trailer) the top-level fields in dictionary order
with their effective required flags (a field inside a component is required only if the
component reference and the field are both required, as in QuickFIX), and the repeating groups
as nested :class:`GroupDef` trees with their delimiter (the first field of an entry).
:class:`Flattener` builds them from a :class:`~engine.fix.dictionary.spec.DictionarySpec`,
expanding components.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from engine.fix.dictionary.spec import (
    KIND_OF,
    ComponentDef,
    DictionaryError,
    FieldDef,
    FieldMember,
    GroupMember,
    Member,
)

#: Pseudo message types under which header and trailer groups are registered.
HEADER_KEY = "_header_"
TRAILER_KEY = "_trailer_"


@dataclass(frozen=True, slots=True)
class FieldRef:
    """A field as it appears at one level of a message, header, trailer or group entry."""

    tag: int
    name: str
    required: bool


@dataclass(frozen=True, slots=True, eq=False)
class GroupDef:
    """A repeating group, flattened.

    Parameters
    ----------
    count_tag : int
        The NumInGroup field that starts the group (``NoPartyIDs <453>``).
    name : str
        Name of the NumInGroup field.
    required : bool
        Whether the count field is required where the group is used.
    delimiter : int
        First field of every entry.
    fields : tuple[FieldRef, ...]
        Fields of one entry in dictionary order (nested groups appear as their count field).
    groups : Mapping[int, GroupDef]
        Nested groups by count tag.
    """

    count_tag: int
    name: str
    required: bool
    delimiter: int
    fields: tuple[FieldRef, ...]
    groups: Mapping[int, GroupDef]
    #: Tags of one entry (top level only).
    tags: frozenset[int]
    #: Required tags of one entry.
    required_tags: tuple[int, ...]
    #: Position of every entry tag in ``fields`` (for order checks).
    order: Mapping[int, int]


@dataclass(frozen=True, slots=True, eq=False)
class MessageDef:
    """A message (or the header, or the trailer), flattened.

    Parameters
    ----------
    msg_type : str
        MsgType <35> value (``"D"``); ``"_header_"`` / ``"_trailer_"`` for those sections.
    name : str
        Message name (``"NewOrderSingle"``).
    category : {"admin", "app"}
        ``msgcat`` attribute.
    fields : tuple[FieldRef, ...]
        Top-level fields in dictionary order, components expanded, group count fields included.
    groups : Mapping[int, GroupDef]
        Repeating groups at the top level, by count tag.
    """

    msg_type: str
    name: str
    category: str
    fields: tuple[FieldRef, ...]
    groups: Mapping[int, GroupDef]
    tags: frozenset[int]
    required_tags: tuple[int, ...]
    order: Mapping[int, int]

    @property
    def is_admin(self) -> bool:
        """Whether this is a session-level (admin) message."""
        return self.category == "admin"


class Flattener:
    """Expand components and build GroupDefs; remembers element lines for error messages.

    Parameters
    ----------
    source : str
        Where the dictionary came from, for messages.
    fields_by_name : Mapping[str, FieldDef]
        The dictionary's fields.
    components : Mapping[str, ComponentDef]
        Its components, by name.
    """

    def __init__(
        self,
        source: str,
        fields_by_name: Mapping[str, FieldDef],
        components: Mapping[str, ComponentDef],
    ) -> None:
        self.source = source
        self.fields_by_name = fields_by_name
        self.components = components
        # Expanded component members, cached: (flat entries) by component name.
        self._comp_cache: dict[str, list[tuple[FieldRef, GroupDef | None]]] = {}
        self._expanding: set[str] = set()

    def error(self, where: str, reason: str, line: int = 0) -> DictionaryError:
        """Return the error to raise for ``where``."""
        return DictionaryError(self.source, line, where, reason)

    def _field(self, m: Member, where: str) -> FieldDef:
        fd = self.fields_by_name.get(m.name)
        if fd is None:
            kind = KIND_OF[type(m)]
            raise self.error(
                f"<{kind} name='{m.name}'> in {where}",
                f"field '{m.name}' is not defined in <fields>",
                m.line,
            )
        return fd

    def expand(
        self, members: Iterable[Member], where: str, *, outer_required: bool = True
    ) -> list[tuple[FieldRef, GroupDef | None]]:
        """Return ``members`` flattened: each field with the group it starts, if any."""
        out: list[tuple[FieldRef, GroupDef | None]] = []
        for m in members:
            if isinstance(m, FieldMember):
                fd = self._field(m, where)
                out.append((FieldRef(fd.tag, fd.name, m.required and outer_required), None))
            elif isinstance(m, GroupMember):
                g = self.group(m, where, outer_required=outer_required)
                out.append((FieldRef(g.count_tag, g.name, g.required), g))
            else:
                comp = self.component(m, where)
                req = m.required and outer_required
                if req:
                    out.extend(comp)
                else:
                    out.extend(
                        (
                            FieldRef(r.tag, r.name, False),
                            replace(g, required=False) if g is not None else None,
                        )
                        for r, g in comp
                    )
        return out

    def component(self, m: Member, where: str) -> list[tuple[FieldRef, GroupDef | None]]:
        """Return the members of the component ``m`` refers to, flattened (cached)."""
        name = m.name
        cached = self._comp_cache.get(name)
        if cached is not None:
            return cached
        comp = self.components.get(name)
        if comp is None:
            raise self.error(
                f"<component name='{name}'> in {where}",
                f"component '{name}' is not defined in <components>",
                m.line,
            )
        if name in self._expanding:
            raise self.error(
                f"<component name='{name}'> in {where}", "component includes itself", m.line
            )
        self._expanding.add(name)
        try:
            flat = self.expand(comp.members, f"<component name='{name}'>")
        finally:
            self._expanding.discard(name)
        self._comp_cache[name] = flat
        return flat

    def group(self, m: GroupMember, where: str, *, outer_required: bool) -> GroupDef:
        """Return the group ``m`` defines, flattened."""
        fd = self._field(m, where)
        inner_where = f"<group name='{m.name}'> in {where}"
        flat = self.expand(m.members, inner_where)
        if not flat:
            raise self.error(inner_where, "group has no members", m.line)
        return _make_group(fd, m.required and outer_required, flat, inner_where, self.source)


def _make_group(
    fd: FieldDef,
    required: bool,
    flat: list[tuple[FieldRef, GroupDef | None]],
    where: str,
    source: str,
) -> GroupDef:
    fields, groups, order = _collect(flat, where, source)
    return GroupDef(
        count_tag=fd.tag,
        name=fd.name,
        required=required,
        delimiter=fields[0].tag,
        fields=fields,
        groups=groups,
        tags=frozenset(order),
        required_tags=tuple(r.tag for r in fields if r.required),
        order=order,
    )


def _collect(
    flat: list[tuple[FieldRef, GroupDef | None]], where: str, source: str
) -> tuple[tuple[FieldRef, ...], dict[int, GroupDef], dict[int, int]]:
    fields: list[FieldRef] = []
    groups: dict[int, GroupDef] = {}
    order: dict[int, int] = {}
    for ref, g in flat:
        if ref.tag in order:
            # QuickFIX tolerates a field listed twice (it is a set); keep the first position,
            # but a field marked required anywhere stays required.
            if ref.required and not fields[order[ref.tag]].required:
                fields[order[ref.tag]] = ref
            continue
        order[ref.tag] = len(fields)
        fields.append(ref)
        if g is not None:
            groups[ref.tag] = g
    return tuple(fields), groups, order


def make_message(
    msg_type: str,
    name: str,
    category: str,
    flat: list[tuple[FieldRef, GroupDef | None]],
    where: str,
    source: str,
) -> MessageDef:
    """Return the flattened message of ``flat`` (what :meth:`Flattener.expand` returned)."""
    fields, groups, order = _collect(flat, where, source)
    return MessageDef(
        msg_type=msg_type,
        name=name,
        category=category,
        fields=fields,
        groups=groups,
        tags=frozenset(order),
        required_tags=tuple(r.tag for r in fields if r.required),
        order=order,
    )
