# SPDX-License-Identifier: MIT
"""The dictionary editor's model: an editable QuickFIX XML dictionary (Qt-free).

:class:`DictionaryEditor` holds a base dictionary (as loaded) and an edited copy of its raw
:class:`engine.fix.dictionary.DictionarySpec`. Edits replace the spec (it is immutable), so an
editor can keep the previous spec for undo. The edited dictionary

* is browsed through :meth:`DictionaryEditor.nodes` (messages, components, groups, header,
  trailer, fields) and searched with :meth:`DictionaryEditor.search`;
* is changed with :meth:`~DictionaryEditor.add_field` (custom tags >= 5000, a type, enum values),
  :meth:`~DictionaryEditor.set_enums`, :meth:`~DictionaryEditor.add_member` (a field added to a
  message, component or group, required or optional), :meth:`~DictionaryEditor.set_required` and
  :meth:`~DictionaryEditor.remove_member`; each edit is checked and raises
  :class:`DictEditError` with the reason when it would break the dictionary;
* is compared with the base (:meth:`~DictionaryEditor.diff`, one plain line per change);
* is saved as a full dictionary (:meth:`~DictionaryEditor.save_full`, QuickFIX XML) or as an
  overlay over the base (:meth:`~DictionaryEditor.save_overlay`; the format is in
  ``docs/fix-dictionary-overlay.md``);
* validates a pasted FIX message field by field (:meth:`~DictionaryEditor.check_message`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from engine.fix.dictionary import (
    ComponentMember,
    DataDictionary,
    DictionaryError,
    DictionarySpec,
    FieldDef,
    FieldMember,
    GroupMember,
    Member,
    Overlay,
    default_dictionary_path,
    spec_to_xml,
)
from engine.fix.dictionary.rewrite import rewrite
from engine.fix.edit.splitting import split_fields
from engine.fix.fields import check_format
from engine.fix.validation.walk import find_issues

__all__ = [
    "FIELD_TYPES",
    "DictEditError",
    "DictionaryEditor",
    "FieldCheck",
    "FieldDef",
    "Node",
    "Path_",
]

#: Field types of QuickFIX XML dictionaries (FIX 4.0 … 5.0 SP2).
FIELD_TYPES: tuple[str, ...] = (
    "STRING",
    "CHAR",
    "INT",
    "FLOAT",
    "PRICE",
    "QTY",
    "AMT",
    "PRICEOFFSET",
    "PERCENTAGE",
    "BOOLEAN",
    "LENGTH",
    "SEQNUM",
    "NUMINGROUP",
    "TAGNUM",
    "DAYOFMONTH",
    "UTCTIMESTAMP",
    "UTCTIMEONLY",
    "UTCDATEONLY",
    "UTCDATE",
    "LOCALMKTDATE",
    "TZTIMEONLY",
    "TZTIMESTAMP",
    "MONTHYEAR",
    "TIME",
    "DATE",
    "CURRENCY",
    "COUNTRY",
    "EXCHANGE",
    "LANGUAGE",
    "MULTIPLEVALUESTRING",
    "MULTIPLECHARVALUE",
    "MULTIPLESTRINGVALUE",
    "DATA",
    "XMLDATA",
    "XID",
    "XIDREF",
)

#: Where a member list lives: ``("message", "D")``, ``("component", "Parties")``,
#: ``("header",)``, ``("trailer",)``, followed by group names to descend into
#: (``("message", "D", "NoPartyIDs")``).
Path_ = tuple[str, ...]

_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


class DictEditError(ValueError):
    """An edit would break the dictionary; the message says why."""


@dataclass(frozen=True, slots=True)
class Node:
    """One browsable item.

    Parameters
    ----------
    kind : str
        ``"message"``, ``"component"``, ``"group"``, ``"header"``, ``"trailer"`` or ``"field"``.
    name : str
        Display name (message name, component name, group NumInGroup name, field name).
    key : str
        Message type, field tag, or the name again.
    path : tuple[str, ...]
        Member list path (see :data:`Path_`); empty for fields.
    detail : str
        One line: ``"35=D, app, 42 members"``, ``"tag 54 CHAR, 3 values"``.
    """

    kind: str
    name: str
    key: str
    path: Path_
    detail: str


@dataclass(frozen=True, slots=True)
class FieldCheck:
    """One field of a checked message.

    Parameters
    ----------
    position : int
        1-based position in the message.
    tag : int
        Tag number (-1 when the pair could not be read).
    name : str
        Field name, ``""`` if the dictionary does not know the tag.
    value : str
        Value as received.
    meaning : str
        Enum description, ``""`` if none.
    status : str
        ``"ok"``, ``"error"`` or ``"warning"``.
    note : str
        Why, in words (``"unknown tag"``, ``"Value is incorrect (out of range) for this tag"``).
    """

    position: int
    tag: int
    name: str
    value: str
    meaning: str
    status: str
    note: str


def _members_at(spec: DictionarySpec, path: Path_) -> tuple[Member, ...]:
    head = path[0]
    members: tuple[Member, ...]
    if head == "header":
        members, rest = spec.header, path[1:]
    elif head == "trailer":
        members, rest = spec.trailer, path[1:]
    elif head == "message":
        msg = next((m for m in spec.messages if m.msg_type == path[1]), None)
        if msg is None:
            raise DictEditError(f"no message with MsgType {path[1]!r}")
        members, rest = msg.members, path[2:]
    elif head == "component":
        comp = next((c for c in spec.components if c.name == path[1]), None)
        if comp is None:
            raise DictEditError(f"no component {path[1]!r}")
        members, rest = comp.members, path[2:]
    else:
        raise DictEditError(f"unknown place {path!r}")
    for group_name in rest:
        group = next(
            (m for m in members if isinstance(m, GroupMember) and m.name == group_name), None
        )
        if group is None:
            raise DictEditError(f"no group {group_name!r} in {_where(path)}")
        members = group.members
    return members


def _replace_members(
    members: tuple[Member, ...], groups: Sequence[str], new: tuple[Member, ...]
) -> tuple[Member, ...]:
    if not groups:
        return new
    out: list[Member] = []
    for m in members:
        if isinstance(m, GroupMember) and m.name == groups[0]:
            m = replace(m, members=_replace_members(m.members, groups[1:], new))
        out.append(m)
    return tuple(out)


def _with_members(spec: DictionarySpec, path: Path_, new: tuple[Member, ...]) -> DictionarySpec:
    head = path[0]
    if head == "header":
        return replace(spec, header=_replace_members(spec.header, path[1:], new))
    if head == "trailer":
        return replace(spec, trailer=_replace_members(spec.trailer, path[1:], new))
    if head == "message":
        msgs = tuple(
            replace(m, members=_replace_members(m.members, path[2:], new))
            if m.msg_type == path[1]
            else m
            for m in spec.messages
        )
        return replace(spec, messages=msgs)
    comps = tuple(
        replace(c, members=_replace_members(c.members, path[2:], new)) if c.name == path[1] else c
        for c in spec.components
    )
    return replace(spec, components=comps)


def _where(path: Path_) -> str:
    head = {"message": "message", "component": "component"}.get(path[0])
    base = f"{head} {path[1]}" if head else path[0]
    return " / ".join([base, *path[2 if head else 1 :]])


def _count_fields(members: Iterable[Member]) -> str:
    n = sum(1 for _ in members)
    return f"{n} member" if n == 1 else f"{n} members"


class DictionaryEditor:
    """An edited QuickFIX dictionary with its base.

    Parameters
    ----------
    base : DataDictionary
        The dictionary as loaded (diffs and overlays are against it).
    spec : DictionarySpec, optional
        The edited content (default: the base's).
    """

    def __init__(self, base: DataDictionary, spec: DictionarySpec | None = None) -> None:
        self.base = base
        self.spec = spec if spec is not None else base.spec
        self.source = base.source
        self._built: tuple[DictionarySpec, DataDictionary] | None = (base.spec, base)
        self._session_dd: DataDictionary | None = None
        self._nodes: tuple[DictionarySpec, list[Node]] | None = None
        #: The text the base was read from (None when built in code): saves edit it in place.
        self.original: str | None = None

    @classmethod
    def load(cls, path: str | Path, overlay: str | Path | None = None) -> DictionaryEditor:
        """Load a dictionary (and optionally an overlay to continue editing).

        Raises
        ------
        DictionaryError
            With file, line and element when the XML is wrong.
        """
        base = DataDictionary.load(path)
        ed = cls(base) if overlay is None else cls(base, base.with_overlay(overlay).spec)
        try:
            ed.original = Path(path).read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            ed.original = None  # read a moment ago: a save then writes the whole file
        return ed

    # ------------------------------------------------------------------ state

    @property
    def modified(self) -> bool:
        """Whether the edited content differs from the base."""
        return self.spec != self.base.spec

    def dictionary(self) -> DataDictionary:
        """Return the edited dictionary, built (cached until the next edit)."""
        if self._built is None or self._built[0] is not self.spec:
            self._built = (self.spec, DataDictionary.from_spec(self.spec, self.source))
        return self._built[1]

    def restore(self, spec: object) -> None:
        """Make ``spec`` (a :class:`DictionarySpec` taken from :attr:`spec`) current (undo)."""
        if not isinstance(spec, DictionarySpec):
            raise TypeError(f"expected a DictionarySpec, got {type(spec).__name__}")
        self.spec = spec
        self._nodes = None

    def _commit(self, spec: DictionarySpec, *, build: bool = False) -> None:
        # The edits check what they change themselves; building the flattened dictionary (a
        # quarter second for FIX 5.0 SP2) waits until something needs it, unless the edit
        # can break the structure in ways only the build sees (``build=True``).
        if build:
            try:
                built = DataDictionary.from_spec(spec, self.source)
            except DictionaryError as e:
                raise DictEditError(str(e)) from e
            self._built = (spec, built)
        self.spec = spec
        self._nodes = None

    # ------------------------------------------------------------------ browsing

    def nodes(self) -> list[Node]:
        """Return every message, component, group, header/trailer and field, for a tree."""
        if self._nodes is not None and self._nodes[0] is self.spec:
            return self._nodes[1]
        out = self._make_nodes()
        self._nodes = (self.spec, out)
        return out

    def _make_nodes(self) -> list[Node]:
        out: list[Node] = [
            Node("header", "Header", "header", ("header",), _count_fields(self.spec.header)),
            Node("trailer", "Trailer", "trailer", ("trailer",), _count_fields(self.spec.trailer)),
        ]
        for m in self.spec.messages:
            path: Path_ = ("message", m.msg_type)
            out.append(
                Node(
                    "message",
                    m.name,
                    m.msg_type,
                    path,
                    f"{m.category}, {_count_fields(m.members)}",
                )
            )
            out.extend(self._groups(m.members, path))
        for c in self.spec.components:
            cpath: Path_ = ("component", c.name)
            out.append(Node("component", c.name, c.name, cpath, _count_fields(c.members)))
            out.extend(self._groups(c.members, cpath))
        for fd in self.spec.fields:
            enums = f", {len(fd.enums)} value{'s' if len(fd.enums) > 1 else ''}" if fd.enums else ""
            out.append(Node("field", fd.name, str(fd.tag), (), f"{fd.type}{enums}"))
        return out

    def _groups(self, members: Iterable[Member], path: Path_) -> Iterable[Node]:
        for m in members:
            if isinstance(m, GroupMember):
                gpath = (*path, m.name)
                yield Node("group", m.name, m.name, gpath, f"in {_where(path)}")
                yield from self._groups(m.members, gpath)

    def search(self, text: str) -> list[Node]:
        """Return nodes whose name, MsgType, tag or enum values/descriptions match ``text``."""
        needle = text.strip().lower()
        if not needle:
            return self.nodes()
        if needle.startswith("35="):  # MsgType is case-sensitive (D is not d)
            return [
                n for n in self.nodes() if n.kind == "message" and f"35={n.key}" == text.strip()
            ]
        by_name = {fd.name: fd for fd in self.spec.fields}
        out = []
        for n in self.nodes():
            hay = f"{n.name} {n.key}".lower()
            if needle in hay:
                out.append(n)
                continue
            fd = by_name.get(n.name) if n.kind == "field" else None
            if fd is not None and any(needle in f"{k} {v}".lower() for k, v in fd.enums.items()):
                out.append(n)
        return out

    def members(self, path: Path_) -> tuple[Member, ...]:
        """Return the members at ``path`` (see :data:`Path_`)."""
        return _members_at(self.spec, path)

    def member_rows(self, path: Path_) -> list[tuple[str, str, bool, int, str]]:
        """Return ``(kind, name, required, tag, type)`` of each member at ``path``.

        ``kind`` is ``"field"``, ``"component"`` or ``"group"``; a group's tag and type are its
        NumInGroup field's; a component has tag -1 and type ``""``.
        """
        out = []
        for m in _members_at(self.spec, path):
            kind = _kind(m)
            fd = self.field(m.name) if kind != "component" else None
            out.append((kind, m.name, m.required, fd.tag if fd else -1, fd.type if fd else ""))
        return out

    def field(self, name_or_tag: str | int) -> FieldDef | None:
        """Return a field of the edited dictionary by name or tag."""
        for fd in self.spec.fields:
            if fd.name == name_or_tag or fd.tag == name_or_tag:
                return fd
        return None

    # ------------------------------------------------------------------ edits

    def add_field(
        self,
        tag: int,
        name: str,
        type_: str,
        enums: Mapping[str, str] | None = None,
        *,
        custom_only: bool = True,
    ) -> FieldDef:
        """Define a new field.

        Parameters
        ----------
        tag : int
            Tag number; user-defined fields are >= 5000 (checked unless ``custom_only=False``).
        name : str
            Field name (a letter, then letters, digits, ``_``).
        type_ : str
            One of :data:`FIELD_TYPES` (case-insensitive).
        enums : Mapping[str, str], optional
            Allowed values and their descriptions.

        Raises
        ------
        DictEditError
            A tag below 5000, a tag or name already used, a bad name or type.
        """
        t = type_.strip().upper()
        if custom_only and tag < 5000:
            raise DictEditError(f"tag {tag}: user-defined fields use tags 5000 and above")
        if tag <= 0:
            raise DictEditError(f"tag {tag}: must be a positive number")
        if not _NAME_RE.match(name):
            raise DictEditError(f"name {name!r}: use a letter, then letters, digits or _")
        if t not in FIELD_TYPES:
            raise DictEditError(f"type {type_!r}: not a FIX type ({', '.join(FIELD_TYPES[:8])} …)")
        for fd in self.spec.fields:
            if fd.tag == tag:
                raise DictEditError(f"tag {tag} is already field {fd.name}")
            if fd.name == name:
                raise DictEditError(f"name {name} is already tag {fd.tag}")
        new = FieldDef(tag, name, t, dict(self._check_enums(t, enums or {})))
        self._commit(replace(self.spec, fields=(*self.spec.fields, new)))
        return new

    def _check_enums(self, type_: str, enums: Mapping[str, str]) -> Mapping[str, str]:
        for value, desc in enums.items():
            if not value:
                raise DictEditError("an enum value cannot be empty")
            if not desc or not _NAME_RE.match(desc):
                raise DictEditError(
                    f"value {value!r}: description {desc!r} must be a word such as NEW_VALUE"
                )
            if not check_format(type_, value.encode("latin-1", "replace")):
                raise DictEditError(f"value {value!r} is not a valid {type_}")
        return enums

    def set_enums(self, field_name: str, enums: Mapping[str, str]) -> None:
        """Replace the enum values (value → description) of a field.

        Raises
        ------
        DictEditError
            Unknown field, an empty value, a description that is not a word, a value of the
            wrong type.
        """
        fd = self.field(field_name)
        if fd is None:
            raise DictEditError(f"no field {field_name!r}")
        self._check_enums(fd.type, enums)
        fields = tuple(
            replace(f, enums=dict(enums)) if f.name == field_name else f for f in self.spec.fields
        )
        self._commit(replace(self.spec, fields=fields))

    def add_member(self, path: Path_, field_name: str, *, required: bool) -> None:
        """Add field ``field_name`` at the end of the member list at ``path``.

        Raises
        ------
        DictEditError
            Unknown field or place, or the field is already there.
        """
        if self.field(field_name) is None:
            raise DictEditError(f"no field {field_name!r}: define it first")
        members = _members_at(self.spec, path)
        if any(m.name == field_name for m in members):
            raise DictEditError(f"{field_name} is already in {_where(path)}")
        if len(path) == 2 and field_name in self._names_in(members):
            raise DictEditError(f"{field_name} is already in {_where(path)} through a component")
        new = (*members, FieldMember(field_name, required))
        self._commit(_with_members(self.spec, path, new))

    def _names_in(self, members: Iterable[Member], seen: frozenset[str] = frozenset()) -> set[str]:
        # Field names reachable at this level through components (not inside groups).
        comps = {c.name: c for c in self.spec.components}
        out: set[str] = set()
        for m in members:
            if isinstance(m, ComponentMember) and m.name not in seen and m.name in comps:
                out |= self._names_in(comps[m.name].members, seen | {m.name})
            else:
                out.add(m.name)
        return out

    def set_required(self, path: Path_, name: str, *, required: bool) -> None:
        """Mark member ``name`` (field, component or group) at ``path`` required or optional."""
        members = _members_at(self.spec, path)
        if not any(m.name == name for m in members):
            raise DictEditError(f"{name} is not a member of {_where(path)}")
        new = tuple(replace(m, required=required) if m.name == name else m for m in members)
        self._commit(_with_members(self.spec, path, new))

    def remove_member(self, path: Path_, name: str) -> None:
        """Remove member ``name`` from the list at ``path`` (a full dictionary only)."""
        members = _members_at(self.spec, path)
        if not any(m.name == name for m in members):
            raise DictEditError(f"{name} is not a member of {_where(path)}")
        new = tuple(m for m in members if m.name != name)
        self._commit(_with_members(self.spec, path, new), build=True)

    # ------------------------------------------------------------------ diff and save

    def diff(self) -> list[str]:
        """Return the changes against the base, one plain line each (empty if none)."""
        base, cur = self.base.spec, self.spec
        out: list[str] = []
        old_fields = {f.name: f for f in base.fields}
        for fd in cur.fields:
            old = old_fields.pop(fd.name, None)
            if old is None:
                enums = f" with values {_enum_words(fd.enums)}" if fd.enums else ""
                out.append(f"+ field {fd.name} ({fd.tag}, {fd.type}){enums}")
                continue
            if old.type != fd.type:
                out.append(f"~ field {fd.name}: type {old.type} → {fd.type}")
            added = {k: v for k, v in fd.enums.items() if k not in old.enums}
            gone = {k: v for k, v in old.enums.items() if k not in fd.enums}
            renamed = {k: v for k, v in fd.enums.items() if k in old.enums and old.enums[k] != v}
            if added:
                out.append(f"+ values of {fd.name}: {_enum_words(added)}")
            if gone:
                out.append(f"- values of {fd.name}: {_enum_words(gone)}")
            if renamed:
                out.append(f"~ values of {fd.name}: {_enum_words(renamed)}")
        out.extend(f"- field {name}" for name in old_fields)
        for label, old_m, new_m in self._member_lists(base, cur):
            out.extend(_diff_member_words(label, old_m, new_m))
        return out

    @staticmethod
    def _member_lists(
        base: DictionarySpec, cur: DictionarySpec
    ) -> Iterable[tuple[str, tuple[Member, ...], tuple[Member, ...]]]:
        yield "header", base.header, cur.header
        yield "trailer", base.trailer, cur.trailer
        old_msgs = {m.msg_type: m for m in base.messages}
        for m in cur.messages:
            old = old_msgs.get(m.msg_type)
            yield f"message {m.name} (35={m.msg_type})", old.members if old else (), m.members
        old_comps = {c.name: c for c in base.components}
        for c in cur.components:
            oc = old_comps.get(c.name)
            yield f"component {c.name}", oc.members if oc else (), c.members

    def to_xml(self) -> str:
        """Return the edited dictionary as a complete QuickFIX XML document.

        A dictionary loaded from a file is that file's text with only the changed definitions
        written again, in its own style (:func:`engine.fix.dictionary.rewrite.rewrite`):
        unchanged, it is the same bytes.
        """
        if self.original is not None:
            return rewrite(self.original, self.base.spec, self.spec)
        return spec_to_xml(self.spec)

    def save_full(self, path: str | Path) -> Path:
        """Write the edited dictionary as a complete QuickFIX XML file."""
        p = Path(path)
        p.write_bytes(self.to_xml().encode("utf-8", "surrogateescape"))
        return p

    def overlay(self) -> Overlay:
        """Return the overlay that turns the base into the edited dictionary.

        Raises
        ------
        DictEditError
            If the edits remove something (an overlay only adds and changes).
        """
        try:
            return Overlay.diff(self.base.spec, self.spec)
        except ValueError as e:
            raise DictEditError(f"cannot save as an overlay: {e}; save a full dictionary") from e

    def save_overlay(self, path: str | Path) -> Path:
        """Write the changes as an overlay file over the base (see :meth:`overlay`)."""
        p = Path(path)
        self.overlay().save(p)
        return p

    # ------------------------------------------------------------------ checking messages

    def session_dictionary(self) -> DataDictionary:
        """Return the dictionary for the header and trailer (FIXT.1.1 for FIX 5.x)."""
        dd = self.dictionary()
        if not dd.is_app_only:
            return dd
        if self._session_dd is None:
            self._session_dd = DataDictionary.load(default_dictionary_path("FIXT.1.1"))
        return self._session_dd

    def check_message(self, text: str) -> list[FieldCheck]:
        """Validate a pasted message against the edited dictionary, field by field.

        Every field gets a row: its name and enum meaning, and whether the dictionary accepts
        it there. The problems :func:`engine.fix.validation.walk.find_issues` reports are attached
        to the field they name (or to the MsgType row); BodyLength and CheckSum are checked too.
        """
        pairs = split_fields(text, from_begin=True)
        dd = self.dictionary()
        session = self.session_dictionary()
        app = dd if session is not dd else None
        rows: list[FieldCheck] = []
        for i, (tag, raw) in enumerate(pairs, start=1):
            value = raw.decode("latin-1")
            fd = dd.field(tag) or session.field(tag)
            name = fd.name if fd is not None else ""
            meaning = (fd.describe(value) or "") if fd is not None else ""
            note, status = "", "ok"
            if tag < 0:
                note, status = "not tag=value", "error"
            elif fd is None:
                note = "unknown tag" + (" (user-defined range)" if tag >= 5000 else "")
                status = "error"
            rows.append(FieldCheck(i, tag, name, value, meaning, status, note))
        if not pairs or any(t < 0 for t, _ in pairs):
            return rows
        issues = find_issues([(t, v) for t, v in pairs], session, app)
        for issue in issues:
            idx = _row_for(rows, issue.ref_tag)
            r = rows[idx]
            text = issue.text
            if issue.ref_tag is not None and r.tag != issue.ref_tag:  # a tag that is not there
                fd = dd.field(issue.ref_tag) or session.field(issue.ref_tag)
                named = f"{fd.name} ({issue.ref_tag})" if fd is not None else str(issue.ref_tag)
                text = f"{text}: {named}"
            note = text if not r.note else f"{r.note}; {text}"
            rows[idx] = replace(r, status="error", note=note)
        for idx, note in _frame_checks(pairs):
            r = rows[idx]
            rows[idx] = replace(r, status="warning" if r.status == "ok" else r.status, note=note)
        return rows


def _row_for(rows: list[FieldCheck], tag: int | None) -> int:
    if tag is not None:
        for i, r in enumerate(rows):
            if r.tag == tag:
                return i
    for i, r in enumerate(rows):
        if r.tag == 35:
            return i
    return 0


def _frame_checks(pairs: Sequence[tuple[int, bytes]]) -> Iterable[tuple[int, str]]:
    # BodyLength <9> and CheckSum <10> of a pasted message (warnings: pasted text is often
    # edited by hand, and the separators may have been changed).
    wire = [f"{t}=".encode() + v + b"\x01" for t, v in pairs]
    tags = [t for t, _ in pairs]
    if 9 in tags and 10 in tags:
        i9, i10 = tags.index(9), tags.index(10)
        body = sum(len(w) for w in wire[i9 + 1 : i10])
        try:
            stated = int(pairs[i9][1])
        except ValueError:
            stated = -1
        if stated != body:
            yield i9, f"BodyLength says {pairs[i9][1].decode('latin-1')}, the body has {body}"
        total = sum(sum(w) for w in wire[:i10]) % 256
        if pairs[i10][1] != f"{total:03d}".encode():
            yield i10, f"CheckSum says {pairs[i10][1].decode('latin-1')}, computed {total:03d}"


def _enum_words(enums: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in enums.items())


def _diff_member_words(
    label: str, old: tuple[Member, ...], new: tuple[Member, ...]
) -> Iterable[str]:
    old_by = {m.name: m for m in old}
    new_by = {m.name: m for m in new}
    for m in new:
        o = old_by.get(m.name)
        if o is None:
            req = "required" if m.required else "optional"
            yield f"+ {label}: {_kind(m)} {m.name} ({req})"
            continue
        if o.required != m.required:
            yield (
                f"~ {label}: {m.name} "
                f"{'optional → required' if m.required else 'required → optional'}"
            )
        if isinstance(m, GroupMember) and isinstance(o, GroupMember):
            yield from _diff_member_words(f"{label} / {m.name}", o.members, m.members)
    for m in old:
        if m.name not in new_by:
            yield f"- {label}: {_kind(m)} {m.name}"


def _kind(m: Member) -> str:
    if isinstance(m, GroupMember):
        return "group"
    if isinstance(m, ComponentMember):
        return "component"
    return "field"
