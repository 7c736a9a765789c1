# SPDX-License-Identifier: MIT
"""Overlays: partial dictionaries layered on a base one (``docs/fix-dictionary-overlay.md``).

An overlay is in the dictionary's own XML shape, rooted at ``<fixoverlay>``: new fields and enum
values, members added to messages, components, groups, the header and the trailer, changed
required flags. :meth:`Overlay.apply_to` layers one on a base spec
(:meth:`engine.fix.dictionary.DataDictionary.with_overlay` on a loaded dictionary),
:meth:`Overlay.diff` computes one from a base and an edited spec, :meth:`Overlay.save` writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from xml.sax.saxutils import quoteattr

from engine.fix.dictionary.reader import SpecReader, XmlNode, parse_xml, read_file
from engine.fix.dictionary.spec import (
    KIND_OF,
    ComponentDef,
    ComponentMember,
    DictionaryError,
    DictionarySpec,
    FieldDef,
    FieldMember,
    GroupMember,
    Member,
    MemberKind,
    MessageSpec,
    spec_version,
)
from engine.fix.dictionary.writer import yn


@dataclass(frozen=True, slots=True)
class OverlayMember:
    """A member of a message, component, group, header or trailer in an overlay.

    Parameters
    ----------
    kind : {"field", "component", "group"}
        Element name.
    name : str
        Field, component or NumInGroup field name.
    required : bool or None
        New required flag; None keeps the base's (False for a new member).
    members : tuple[OverlayMember, ...]
        For a group: members to merge into its entries.
    """

    kind: MemberKind
    name: str
    required: bool | None = None
    members: tuple[OverlayMember, ...] = ()


@dataclass(frozen=True, slots=True)
class OverlayMessage:
    """A message changed (by ``msg_type`` or ``name``) or added (all three given)."""

    msg_type: str | None
    name: str | None
    category: str | None
    members: tuple[OverlayMember, ...]


@dataclass(frozen=True, slots=True)
class Overlay:
    """A partial dictionary layered on a base one (format: ``docs/fix-dictionary-overlay.md``).

    Parameters
    ----------
    fields : tuple[FieldDef, ...]
        New fields (``number``, ``name`` and ``type`` given), or changes to existing fields by
        name: extra ``<value>`` enums (added, or re-described) and optionally a new ``type``
        (``tag`` 0 and ``type`` ``""`` mean "keep the base's").
    header, trailer : tuple[OverlayMember, ...]
        Members merged into the header/trailer.
    messages : tuple[OverlayMessage, ...]
        Messages to change or add. Members are merged by name: an existing field or component
        gets its ``required`` flag replaced when the overlay gives one; an existing group is
        merged recursively; anything new is appended at the end of its level.
    components : tuple[tuple[str, tuple[OverlayMember, ...]], ...]
        Components to change (merged like messages) or add.
    version : str or None
        If set (``"FIX.4.4"``), the overlay refuses a base of another version.
    source : str
        File name, for messages.
    """

    fields: tuple[FieldDef, ...] = ()
    header: tuple[OverlayMember, ...] = ()
    trailer: tuple[OverlayMember, ...] = ()
    messages: tuple[OverlayMessage, ...] = ()
    components: tuple[tuple[str, tuple[OverlayMember, ...]], ...] = ()
    version: str | None = None
    source: str = "<overlay>"

    # ------------------------------------------------------------------ reading

    @classmethod
    def load(cls, path: str | Path) -> Overlay:
        """Read an overlay file.

        Raises
        ------
        DictionaryError
            With file, line, element and reason.
        """
        data, source = read_file(path)
        return cls.from_bytes(data, source)

    @classmethod
    def from_string(cls, text: str, source: str = "<string>") -> Overlay:
        """Parse an overlay from XML text."""
        return cls.from_bytes(text.encode("utf-8"), source)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> Overlay:  # noqa: C901
        """Parse an overlay from XML bytes."""
        root = parse_xml(data, source)
        r = SpecReader(source)
        if root.tag != "fixoverlay":
            raise r.error(root, "root element of an overlay must be <fixoverlay>")
        fields: list[FieldDef] = []
        header: tuple[OverlayMember, ...] = ()
        trailer: tuple[OverlayMember, ...] = ()
        messages: list[OverlayMessage] = []
        components: list[tuple[str, tuple[OverlayMember, ...]]] = []
        for sec in root.children:
            if sec.tag == "fields":
                fields.extend(r.field_def(n, need_type=False) for n in sec.children)
            elif sec.tag == "header":
                header = _overlay_members(r, sec)
            elif sec.tag == "trailer":
                trailer = _overlay_members(r, sec)
            elif sec.tag == "messages":
                for n in sec.children:
                    if n.tag != "message":
                        raise r.error(n, "only <message> elements belong in <messages>")
                    if "msgtype" not in n.attrs and "name" not in n.attrs:
                        raise r.error(n, "a message needs a 'msgtype' or a 'name'")
                    messages.append(
                        OverlayMessage(
                            n.attrs.get("msgtype"),
                            n.attrs.get("name"),
                            n.attrs.get("msgcat"),
                            _overlay_members(r, n),
                        )
                    )
            elif sec.tag == "components":
                for n in sec.children:
                    if n.tag != "component":
                        raise r.error(n, "only <component> elements belong in <components>")
                    components.append((r.attr(n, "name"), _overlay_members(r, n)))
            else:
                raise r.error(sec, "unexpected element inside <fixoverlay>")
        return cls(
            tuple(fields),
            header,
            trailer,
            tuple(messages),
            tuple(components),
            root.attrs.get("version"),
            source,
        )

    # ------------------------------------------------------------------ applying

    def apply_to(self, base: DictionarySpec) -> DictionarySpec:
        """Return ``base`` with this overlay applied.

        Raises
        ------
        DictionaryError
            If the overlay does not fit ``base`` (version, tag clash, member kind clash).
        """
        src = self.source
        if self.version:
            base_version = spec_version(base)
            if self.version != base_version:
                raise DictionaryError(
                    src,
                    0,
                    "<fixoverlay>",
                    f"overlay is for {self.version}, base is {base_version}",
                )
        components = self._apply_components(base.components)
        comps = {c.name: c for c in components}
        return replace(
            base,
            header=_merge(base.header, self.header, "<header>", src, comps),
            trailer=_merge(base.trailer, self.trailer, "<trailer>", src, comps),
            messages=self._apply_messages(base.messages, comps),
            components=components,
            fields=self._apply_fields(base.fields),
        )

    def _apply_fields(self, base: tuple[FieldDef, ...]) -> tuple[FieldDef, ...]:
        fields = list(base)
        index = {fd.name: i for i, fd in enumerate(fields)}
        tags = {fd.tag: fd.name for fd in fields}
        for fd in self.fields:
            where = f"<field name='{fd.name}'>"
            i = index.get(fd.name)
            if i is None:
                if fd.tag <= 0 or not fd.type:
                    raise DictionaryError(
                        self.source, 0, where, "a new field needs a positive 'number' and a 'type'"
                    )
                if fd.tag in tags:
                    raise DictionaryError(
                        self.source, 0, where, f"number {fd.tag} is already '{tags[fd.tag]}'"
                    )
                index[fd.name] = len(fields)
                tags[fd.tag] = fd.name
                fields.append(fd)
                continue
            old = fields[i]
            if fd.tag and fd.tag != old.tag:
                raise DictionaryError(
                    self.source, 0, where, f"number {fd.tag} differs from the base ({old.tag})"
                )
            enums = dict(old.enums)
            enums.update(fd.enums)
            other = old.allow_other_values or fd.allow_other_values
            fields[i] = FieldDef(old.tag, old.name, fd.type or old.type, enums, other, old.line)
        return tuple(fields)

    def _apply_messages(
        self, base: tuple[MessageSpec, ...], comps: Mapping[str, ComponentDef]
    ) -> tuple[MessageSpec, ...]:
        messages = list(base)
        by_type = {m.msg_type: i for i, m in enumerate(messages)}
        by_name = {m.name: i for i, m in enumerate(messages)}
        for om in self.messages:
            where = f"<message name='{om.name or om.msg_type}'>"
            j = by_type.get(om.msg_type) if om.msg_type is not None else by_name.get(om.name or "")
            if j is None:
                if om.msg_type is None or om.name is None:
                    raise DictionaryError(
                        self.source, 0, where, "a new message needs 'msgtype' and 'name'"
                    )
                by_type[om.msg_type] = len(messages)
                members = _merge((), om.members, where, self.source, comps)
                messages.append(MessageSpec(om.msg_type, om.name, om.category or "app", members))
                continue
            old = messages[j]
            messages[j] = MessageSpec(
                old.msg_type,
                old.name,
                om.category or old.category,
                _merge(old.members, om.members, where, self.source, comps),
            )
        return tuple(messages)

    def _apply_components(self, base: tuple[ComponentDef, ...]) -> tuple[ComponentDef, ...]:
        components = list(base)
        index = {c.name: i for i, c in enumerate(components)}
        for name, members in self.components:
            where = f"<component name='{name}'>"
            k = index.get(name)
            if k is None:
                index[name] = len(components)
                new = _merge((), members, where, self.source, {})
                components.append(ComponentDef(name, new))
            else:
                merged = _merge(components[k].members, members, where, self.source, {})
                components[k] = ComponentDef(name, merged)
        return tuple(components)

    # ------------------------------------------------------------------ writing

    def to_xml(self) -> str:
        """Serialize the overlay in the ``<fixoverlay>`` format."""
        head = "<fixoverlay"
        if self.version:
            head += f" version={quoteattr(self.version)}"
        lines = [head + ">"]
        if self.fields:
            lines.append(" <fields>")
            for fd in self.fields:
                lines.extend(_overlay_field_xml(fd))
            lines.append(" </fields>")
        for tag, section in (("header", self.header), ("trailer", self.trailer)):
            if section:
                lines.append(f" <{tag}>")
                lines.extend(_overlay_members_xml(section, "  "))
                lines.append(f" </{tag}>")
        lines.extend(self._messages_xml())
        lines.extend(self._components_xml())
        lines.append("</fixoverlay>")
        return "\n".join(lines) + "\n"

    def _messages_xml(self) -> list[str]:
        out: list[str] = []
        if self.messages:
            out.append(" <messages>")
            for om in self.messages:
                attrs = ""
                if om.name is not None:
                    attrs += f" name={quoteattr(om.name)}"
                if om.msg_type is not None:
                    attrs += f" msgtype={quoteattr(om.msg_type)}"
                if om.category is not None:
                    attrs += f" msgcat={quoteattr(om.category)}"
                out.append(f"  <message{attrs}>")
                out.extend(_overlay_members_xml(om.members, "   "))
                out.append("  </message>")
            out.append(" </messages>")
        return out

    def _components_xml(self) -> list[str]:
        out: list[str] = []
        if self.components:
            out.append(" <components>")
            for name, members in self.components:
                out.append(f"  <component name={quoteattr(name)}>")
                out.extend(_overlay_members_xml(members, "   "))
                out.append("  </component>")
            out.append(" </components>")
        return out

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_xml` to ``path`` (UTF-8)."""
        Path(path).write_text(self.to_xml(), encoding="utf-8")

    # ------------------------------------------------------------------ diffing

    @classmethod
    def diff(cls, base: DictionarySpec, custom: DictionarySpec) -> Overlay:
        """Return the overlay that turns ``base`` into ``custom``.

        Use it to save a dictionary edited in place as an overlay file. Applying the result to
        ``base`` gives ``custom`` when every change is one an overlay can express: new fields,
        enums, messages, components and members (appended at the end of their level), and
        changed required flags or field types.

        Raises
        ------
        ValueError
            If ``custom`` removes or reorders something, or changes a field's number: overlays
            only add and change.
        """
        fields = _diff_fields(base.fields, custom.fields)
        base_msgs = {m.msg_type: m for m in base.messages}
        messages: list[OverlayMessage] = []
        for m in custom.messages:
            old_m = base_msgs.get(m.msg_type)
            if old_m is None:
                messages.append(
                    OverlayMessage(m.msg_type, m.name, m.category, _as_overlay(m.members))
                )
                continue
            members = _diff_members(old_m.members, m.members, f"message '{m.name}'")
            category = m.category if m.category != old_m.category else None
            if members or category:
                messages.append(OverlayMessage(m.msg_type, None, category, members))
        gone = set(base_msgs) - {m.msg_type for m in custom.messages}
        if gone:
            raise ValueError(f"messages removed: {sorted(gone)}")
        base_comps = {c.name: c for c in base.components}
        components: list[tuple[str, tuple[OverlayMember, ...]]] = []
        for c in custom.components:
            old_c = base_comps.get(c.name)
            if old_c is None:
                components.append((c.name, _as_overlay(c.members)))
                continue
            members = _diff_members(old_c.members, c.members, f"component '{c.name}'")
            if members:
                components.append((c.name, members))
        gone = set(base_comps) - {c.name for c in custom.components}
        if gone:
            raise ValueError(f"components removed: {sorted(gone)}")
        return cls(
            tuple(fields),
            _diff_members(base.header, custom.header, "header"),
            _diff_members(base.trailer, custom.trailer, "trailer"),
            tuple(messages),
            tuple(components),
            spec_version(base),
        )

    # ------------------------------------------------------------------ building

    def add_field(
        self, tag: int, name: str, type_: str, enums: Mapping[str, str] | None = None
    ) -> Overlay:
        """Return a copy that also defines a new field ``tag``/``name`` of type ``type_``."""
        fd = FieldDef(tag, name, type_.upper(), dict(enums or {}))
        return replace(self, fields=(*self.fields, fd))

    def add_enums(self, name: str, enums: Mapping[str, str]) -> Overlay:
        """Return a copy that adds enum values (value → description) to field ``name``."""
        return replace(self, fields=(*self.fields, FieldDef(0, name, "", dict(enums))))

    def set_message_field(
        self, msg_type: str, name: str, *, required: bool, groups: tuple[str, ...] = ()
    ) -> Overlay:
        """Return a copy that adds field ``name`` to a message, or sets its required flag.

        Parameters
        ----------
        msg_type : str
            MsgType <35> of the message.
        name : str
            Field name.
        required : bool
            Required flag.
        groups : tuple[str, ...]
            NumInGroup names (outermost first) to descend into, to change a group entry.
        """
        member = OverlayMember("field", name, required)
        for group_name in reversed(groups):
            member = OverlayMember("group", group_name, None, (member,))
        msg = OverlayMessage(msg_type, None, None, (member,))
        return replace(self, messages=(*self.messages, msg))


def _diff_fields(base: tuple[FieldDef, ...], custom: tuple[FieldDef, ...]) -> list[FieldDef]:
    base_fields = {fd.name: fd for fd in base}
    fields: list[FieldDef] = []
    for fd in custom:
        old = base_fields.get(fd.name)
        if old is None:
            fields.append(fd)
            continue
        if fd.tag != old.tag:
            raise ValueError(f"field '{fd.name}' changes number {old.tag} -> {fd.tag}")
        removed = [e for e in old.enums if e not in fd.enums]
        if removed:
            raise ValueError(f"field '{fd.name}' loses enum values {removed}")
        enums = {e: d for e, d in fd.enums.items() if old.enums.get(e) != d}
        type_ = fd.type if fd.type != old.type else ""
        other = fd.allow_other_values and not old.allow_other_values
        if enums or type_ or other:
            fields.append(FieldDef(0, fd.name, type_, enums, other))
    missing = set(base_fields) - {fd.name for fd in custom}
    if missing:
        raise ValueError(f"fields removed: {sorted(missing)}")
    return fields


def _as_overlay(members: tuple[Member, ...]) -> tuple[OverlayMember, ...]:
    out: list[OverlayMember] = []
    for m in members:
        inner = _as_overlay(m.members) if isinstance(m, GroupMember) else ()
        out.append(OverlayMember(KIND_OF[type(m)], m.name, m.required, inner))
    return tuple(out)


def _diff_members(
    base: tuple[Member, ...], custom: tuple[Member, ...], where: str
) -> tuple[OverlayMember, ...]:
    names = [m.name for m in custom]
    base_names = [m.name for m in base]
    if names[: len(base_names)] != base_names:
        raise ValueError(f"{where}: members removed or reordered; an overlay can only append")
    out: list[OverlayMember] = []
    for old, new in zip(base, custom, strict=False):
        kind = KIND_OF[type(new)]
        if type(old) is not type(new):
            raise ValueError(f"{where}: '{new.name}' changes from {KIND_OF[type(old)]} to {kind}")
        inner: tuple[OverlayMember, ...] = ()
        if isinstance(old, GroupMember) and isinstance(new, GroupMember):
            inner = _diff_members(old.members, new.members, f"{where}, group '{new.name}'")
        if inner or old.required != new.required:
            required = new.required if old.required != new.required else None
            out.append(OverlayMember(kind, new.name, required, inner))
    out.extend(_as_overlay(custom[len(base) :]))
    return tuple(out)


def _overlay_members(r: SpecReader, node: XmlNode) -> tuple[OverlayMember, ...]:
    out: list[OverlayMember] = []
    for child in node.children:
        if child.tag not in ("field", "component", "group"):
            raise r.error(child, f"unexpected element inside <{node.tag}>")
        req = r.required(child) if "required" in child.attrs else None
        inner = _overlay_members(r, child) if child.tag == "group" else ()
        kind: MemberKind = (
            "field" if child.tag == "field" else "group" if child.tag == "group" else "component"
        )
        out.append(OverlayMember(kind, r.attr(child, "name"), req, inner))
    return tuple(out)


def _to_member(
    om: OverlayMember, where: str, source: str, comps: Mapping[str, ComponentDef]
) -> Member:
    req = bool(om.required)
    if om.kind == "field":
        return FieldMember(om.name, req)
    if om.kind == "component":
        return ComponentMember(om.name, req)
    if not om.members:
        raise DictionaryError(source, 0, f"<group name='{om.name}'> in {where}", "empty new group")
    return GroupMember(om.name, req, _merge((), om.members, where, source, comps))


def _find_in_component(
    name: str, comp: str, comps: Mapping[str, ComponentDef], depth: int = 0
) -> bool:
    c = comps.get(comp)
    if c is None or depth > 32:
        return False
    for m in c.members:
        if m.name == name:
            return True
        if isinstance(m, ComponentMember) and _find_in_component(name, m.name, comps, depth + 1):
            return True
    return False


def _inline(members: list[Member], i: int, comps: Mapping[str, ComponentDef]) -> None:
    # Replace the component reference at i by its members, so that a change made for one
    # message does not leak into every other message using the component.
    ref = members[i]
    comp = comps[ref.name]
    inlined: list[Member] = [replace(m, required=m.required and ref.required) for m in comp.members]
    members[i : i + 1] = inlined


def _merge(
    base: tuple[Member, ...],
    changes: tuple[OverlayMember, ...],
    where: str,
    source: str,
    comps: Mapping[str, ComponentDef],
) -> tuple[Member, ...]:
    out = list(base)
    for change in changes:
        index = {m.name: i for i, m in enumerate(out)}
        i = index.get(change.name)
        while i is None:
            holder = next(
                (
                    j
                    for j, m in enumerate(out)
                    if isinstance(m, ComponentMember)
                    and _find_in_component(change.name, m.name, comps)
                ),
                None,
            )
            if holder is None:
                break
            _inline(out, holder, comps)
            index = {m.name: k for k, m in enumerate(out)}
            i = index.get(change.name)
        if i is None:
            out.append(_to_member(change, where, source, comps))
            continue
        old = out[i]
        old_kind = KIND_OF[type(old)]
        if old_kind != change.kind:
            raise DictionaryError(
                source,
                0,
                where,
                f"'{change.name}' is a {old_kind} in the base, not a {change.kind}",
            )
        required = old.required if change.required is None else change.required
        if isinstance(old, GroupMember):
            inner_where = f"<group name='{old.name}'> in {where}"
            merged = _merge(old.members, change.members, inner_where, source, comps)
            out[i] = GroupMember(old.name, required, merged, old.line)
        else:
            out[i] = replace(old, required=required)
    return tuple(out)


def _overlay_field_xml(fd: FieldDef) -> Iterator[str]:
    attrs = f"name={quoteattr(fd.name)}"
    if fd.tag:
        attrs = f"number='{fd.tag}' " + attrs
    if fd.type:
        attrs += f" type={quoteattr(fd.type)}"
    if fd.allow_other_values:
        attrs += " allowOtherValues='Y'"
    if not fd.enums:
        yield f"  <field {attrs} />"
        return
    yield f"  <field {attrs}>"
    for enum, desc in fd.enums.items():
        yield f"   <value enum={quoteattr(enum)} description={quoteattr(desc)} />"
    yield "  </field>"


def _overlay_members_xml(members: Iterable[OverlayMember], indent: str) -> Iterator[str]:
    for m in members:
        req = "" if m.required is None else f" required='{yn(m.required)}'"
        if m.kind != "group":
            yield f"{indent}<{m.kind} name={quoteattr(m.name)}{req} />"
        else:
            yield f"{indent}<group name={quoteattr(m.name)}{req}>"
            yield from _overlay_members_xml(m.members, indent + " ")
            yield f"{indent}</group>"
