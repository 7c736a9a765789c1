# SPDX-License-Identifier: MIT
"""Writing an edited dictionary back into its own file: the same bytes where nothing changed.

:func:`engine.fix.dictionary.writer.spec_to_xml` writes a whole dictionary in one style. A user who
opened QuickFIX's ``FIX44.xml``, changed one field and saved expects a one-field diff, not a
file rewritten in another quoting. :func:`rewrite` therefore edits the original text: every
message, component and field definition (and the header and trailer) that did not change keeps
its bytes; a changed one is written again in the file's own style (quote character, ``/>`` or
`` />``, indentation unit), a new one goes after the last of its section, a removed one goes
with its line. An unchanged dictionary comes back byte for byte.
"""

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from engine.fix.dictionary.spec import (
    ComponentDef,
    ComponentMember,
    DictionarySpec,
    FieldDef,
    FieldMember,
    Member,
    MessageSpec,
)
from engine.fix.dictionary.writer import spec_to_xml

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Style:
    """How a file writes its elements."""

    quote: str = "'"
    close: str = " />"
    unit: str = " "  # one level of indentation
    eol: str = "\n"

    @classmethod
    def of(cls, text: str) -> "Style":
        """Infer the style of a dictionary file's text."""
        quote = "'" if text.count("='") >= text.count('="') else '"'
        close = " />" if text.count(" />") >= text.count("/>") - text.count(" />") else "/>"
        eol = "\r\n" if "\r\n" in text else "\n"
        m = re.search(r"^([ \t]+)<(header|messages)\b", text, re.MULTILINE)
        unit = m[1] if m else " "
        return cls(quote, close, unit, eol)

    def attr(self, name: str, value: object) -> str:
        """Return `` name='value'`` escaped for the file's quote character."""
        text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        text = text.replace(self.quote, "&apos;" if self.quote == "'" else "&quot;")
        return f" {name}={self.quote}{text}{self.quote}"


def _yn(flag: bool) -> str:
    return "Y" if flag else "N"


def _members(members: Iterable[Member], st: Style, depth: int) -> Iterator[str]:
    pad = st.unit * depth
    for m in members:
        kind = (
            "field"
            if isinstance(m, FieldMember)
            else ("component" if isinstance(m, ComponentMember) else "group")
        )
        attrs = st.attr("name", m.name) + st.attr("required", _yn(m.required))
        if isinstance(m, FieldMember | ComponentMember):
            yield f"{pad}<{kind}{attrs}{st.close}"
        else:
            yield f"{pad}<group{attrs}>"
            yield from _members(m.members, st, depth + 1)
            yield f"{pad}</group>"


def _message(ms: MessageSpec, st: Style, depth: int) -> list[str]:
    attrs = (
        st.attr("name", ms.name) + st.attr("msgtype", ms.msg_type) + st.attr("msgcat", ms.category)
    )
    pad = st.unit * depth
    return [f"{pad}<message{attrs}>", *_members(ms.members, st, depth + 1), f"{pad}</message>"]


def _component(c: ComponentDef, st: Style, depth: int) -> list[str]:
    pad = st.unit * depth
    return [
        f"{pad}<component{st.attr('name', c.name)}>",
        *_members(c.members, st, depth + 1),
        f"{pad}</component>",
    ]


def _field(fd: FieldDef, st: Style, depth: int) -> list[str]:
    pad = st.unit * depth
    attrs = st.attr("number", fd.tag) + st.attr("name", fd.name)
    if fd.type:
        attrs += st.attr("type", fd.type)
    if fd.allow_other_values:
        attrs += st.attr("allowOtherValues", "Y")
    if not fd.enums:
        return [f"{pad}<field{attrs}{st.close}"]
    values = [
        f"{pad}{st.unit}<value{st.attr('enum', k)}{st.attr('description', v)}{st.close}"
        for k, v in fd.enums.items()
    ]
    return [f"{pad}<field{attrs}>", *values, f"{pad}</field>"]


def _section(tag: str, members: tuple[Member, ...], st: Style) -> list[str]:
    if not members:
        return [f"{st.unit}<{tag}{st.close}"]
    return [f"{st.unit}<{tag}>", *_members(members, st, 2), f"{st.unit}</{tag}>"]


# ------------------------------------------------------------------ finding items in the text
_ATTR = r"""\b{name}\s*=\s*(['"])(.*?)\1"""


def _attr(tag_text: str, name: str) -> str | None:
    m = re.search(_ATTR.format(name=name), tag_text)
    return m[2] if m else None


@dataclass(frozen=True, slots=True)
class _Span:
    start: int  # the first character of the item's line (its indentation)
    end: int  # after the item's line ending
    key: str


def _line_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to whole lines (with the ending of the last)."""
    s = text.rfind("\n", 0, start) + 1
    nl = text.find("\n", end)
    return s, (len(text) if nl < 0 else nl + 1)


def _items(text: str, section: str, element: str, key_attr: str) -> tuple[list[_Span], int, int]:
    """Return the items of ``<section>`` and the section's inner bounds (-1, -1 if absent)."""
    open_m = re.search(rf"<{section}\s*>", text)
    if open_m is None:
        return [], -1, -1
    close = text.find(f"</{section}>", open_m.end())
    if close < 0:
        return [], -1, -1
    inner, spans = text[open_m.end() : close], []
    item = re.compile(rf"<{element}\b([^>]*?)(/?)>")
    pos = 0
    while True:
        m = item.search(inner, pos)
        if m is None:
            break
        end = m.end()
        if not m[2]:  # not self-closing: up to its end tag (items of these kinds do not nest)
            stop = inner.find(f"</{element}>", end)
            end = stop + len(f"</{element}>") if stop >= 0 else end
        key = _attr(m[1], key_attr) or ""
        s, e = _line_span(text, open_m.end() + m.start(), open_m.end() + end)
        spans.append(_Span(s, e, key))
        pos = end
    return spans, open_m.end(), close


def _whole(text: str, tag: str) -> tuple[int, int] | None:
    m = re.search(rf"<{tag}\s*/>|<{tag}\s*>.*?</{tag}>", text, re.DOTALL)
    return _line_span(text, m.start(), m.end()) if m else None


# ------------------------------------------------------------------ the rewrite
Edit = tuple[int, int, str]  # (start, end, replacement) of the original text


def _lines(items: Iterable[str], st: Style) -> str:
    return "".join(line + st.eol for line in items)


def _section_edits(
    original: str,
    st: Style,
    name: str,
    element: str,
    key_attr: str,
    old: Iterable[T],
    now: Iterable[T],
    key: Callable[[T], str],
    write: Callable[[T, Style, int], list[str]],
) -> list[Edit] | None:
    """Return the edits that make one section say ``now``; None if the text does not fit."""
    spans, inner_start, close = _items(original, name, element, key_attr)
    old_by: Mapping[str, T] = {key(x): x for x in old}
    at = {s.key: s for s in spans}
    if set(old_by) - set(at):  # the text does not hold what the spec says it does
        return None
    now_list = list(now)
    now_keys = {key(x) for x in now_list}
    edits: list[Edit] = [(at[k].start, at[k].end, "") for k in old_by if k not in now_keys]
    added: list[str] = []
    for item in now_list:
        k = key(item)
        if k not in old_by:
            added.extend(write(item, st, 2))
        elif old_by[k] != item:
            edits.append((at[k].start, at[k].end, _lines(write(item, st, 2), st)))
    if added:
        if close < 0:
            return None
        where = spans[-1].end if spans else _line_span(original, inner_start, inner_start)[1]
        edits.append((where, where, _lines(added, st)))
    return edits


def rewrite(original: str, base: DictionarySpec, new: DictionarySpec) -> str:
    """Return ``original`` (the text ``base`` was read from) edited to say ``new``.

    Falls back to :func:`spec_to_xml` when the ``<fix>`` element's own attributes changed or
    the text does not have the sections the spec was read from.
    """
    if new == base:
        return original
    head_fields = ("type", "major", "minor", "service_pack", "extension_pack")
    if any(getattr(new, f) != getattr(base, f) for f in head_fields):
        return spec_to_xml(new)
    st = Style.of(original)
    edits: list[Edit] = []  # spans never overlap
    for tag in ("header", "trailer"):
        if getattr(base, tag) != getattr(new, tag):
            span = _whole(original, tag)
            if span is None:
                return spec_to_xml(new)
            edits.append((*span, _lines(_section(tag, getattr(new, tag), st), st)))
    for found in (
        _section_edits(
            original,
            st,
            "messages",
            "message",
            "msgtype",
            base.messages,
            new.messages,
            lambda m: m.msg_type,
            _message,
        ),
        _section_edits(
            original,
            st,
            "components",
            "component",
            "name",
            base.components,
            new.components,
            lambda c: c.name,
            _component,
        ),
        _section_edits(
            original,
            st,
            "fields",
            "field",
            "number",
            base.fields,
            new.fields,
            lambda f: str(f.tag),
            _field,
        ),
    ):
        if found is None:
            return spec_to_xml(new)
        edits.extend(found)
    out, pos = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(original[pos:start])
        out.append(text)
        pos = max(pos, end)
    out.append(original[pos:])
    return "".join(out)
