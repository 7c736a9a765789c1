# SPDX-License-Identifier: MIT
"""Writing a whole dictionary as QuickFIX-format XML: :func:`spec_to_xml`.

One style (single-quoted attributes, one-space indentation, ``/>`` closers). Writing an edited
dictionary back into its own file, keeping the bytes of what did not change, is
:func:`engine.fix.dictionary.rewrite.rewrite`'s job.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from xml.sax.saxutils import quoteattr

from engine.fix.dictionary.spec import (
    ComponentMember,
    DictionarySpec,
    FieldDef,
    FieldMember,
    Member,
)


def yn(flag: bool) -> str:
    """Return the XML form of a flag: ``Y`` or ``N``."""
    return "Y" if flag else "N"


def _members_xml(members: Iterable[Member], indent: str) -> Iterator[str]:
    for m in members:
        if isinstance(m, FieldMember):
            yield f"{indent}<field name={quoteattr(m.name)} required='{yn(m.required)}' />"
        elif isinstance(m, ComponentMember):
            yield f"{indent}<component name={quoteattr(m.name)} required='{yn(m.required)}' />"
        else:
            yield f"{indent}<group name={quoteattr(m.name)} required='{yn(m.required)}'>"
            yield from _members_xml(m.members, indent + " ")
            yield f"{indent}</group>"


def _section_xml(tag: str, members: tuple[Member, ...]) -> Iterator[str]:
    if not members:
        yield f" <{tag} />"
        return
    yield f" <{tag}>"
    yield from _members_xml(members, "  ")
    yield f" </{tag}>"


def _field_xml(fd: FieldDef, indent: str = "  ") -> Iterator[str]:
    attrs = f"number='{fd.tag}' name={quoteattr(fd.name)}"
    if fd.type:
        attrs += f" type={quoteattr(fd.type)}"
    if fd.allow_other_values:
        attrs += " allowOtherValues='Y'"
    if not fd.enums:
        yield f"{indent}<field {attrs} />"
        return
    yield f"{indent}<field {attrs}>"
    for enum, desc in fd.enums.items():
        yield f"{indent} <value enum={quoteattr(enum)} description={quoteattr(desc)} />"
    yield f"{indent}</field>"


def spec_to_xml(spec: DictionarySpec) -> str:
    """Serialize a raw spec as a QuickFIX-format dictionary (single-quoted attributes)."""
    head = (
        f"<fix type='{spec.type}' major='{spec.major}' minor='{spec.minor}' "
        f"servicepack='{spec.service_pack}'"
    )
    if spec.extension_pack is not None:
        head += f" extensionpack='{spec.extension_pack}'"
    lines = [head + ">"]
    lines.extend(_section_xml("header", spec.header))
    lines.append(" <messages>")
    for ms in spec.messages:
        lines.append(
            f"  <message name={quoteattr(ms.name)} msgtype={quoteattr(ms.msg_type)} "
            f"msgcat={quoteattr(ms.category)}>"
        )
        lines.extend(_members_xml(ms.members, "   "))
        lines.append("  </message>")
    lines.append(" </messages>")
    lines.extend(_section_xml("trailer", spec.trailer))
    if spec.components:
        lines.append(" <components>")
        for c in spec.components:
            lines.append(f"  <component name={quoteattr(c.name)}>")
            lines.extend(_members_xml(c.members, "   "))
            lines.append("  </component>")
        lines.append(" </components>")
    else:
        lines.append(" <components />")
    lines.append(" <fields>")
    for fd in spec.fields:
        lines.extend(_field_xml(fd))
    lines.append(" </fields>")
    lines.append("</fix>")
    return "\n".join(lines) + "\n"
