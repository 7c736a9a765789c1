# SPDX-License-Identifier: MIT
"""Names and value meanings of FIX fields, and whole messages explained, for the FIX inspector.

The inspector lives in ``widgets/`` and may not import the FIX engine; the app gives it a
:class:`FieldDescriber`, which looks tags up in the shipped QuickFIX dictionaries (FIX 4.4 first,
then the newer and older versions, so custom and session-level tags are found too), and whose
:meth:`FieldDescriber.explain` splits a message into header, body and trailer with its repeating
groups as a tree, against the message's own dictionary (its BeginString <8>, and for FIXT.1.1
its ApplVerID <1128>), and marks every field that fails that dictionary's validation.
"""

import logging
import threading
from collections.abc import Sequence

from engine.fix.dictionary import (
    APPL_VER_IDS,
    DataDictionary,
    DictionaryError,
    default_dictionary_path,
)
from engine.fix.fields import FieldMap, parse_message
from engine.fix.validation import ValidationIssue, find_issues
from widgets.fix_inspector import FieldNode, parse_fields

log = logging.getLogger(__name__)

#: Dictionaries consulted, in order, for a tag's name and enum descriptions.
VERSIONS = ("FIX.4.4", "FIX.5.0SP2", "FIXT.1.1", "FIX.4.2")


class FieldDescriber:
    """``(tag, value) -> (field name, meaning of the value)`` from the shipped dictionaries.

    The dictionaries (a few hundred ms to parse) load in a background thread started with the
    describer, so the GUI thread does not wait for them when the first message is inspected.
    """

    def __init__(self, versions: tuple[str, ...] = VERSIONS, *, preload: bool = True) -> None:
        self.versions = versions
        self._dds: list[DataDictionary] | None = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, bytes], tuple[str, str]] = {}
        self._by_version: dict[str, DataDictionary | None] = {}
        if preload:
            threading.Thread(
                target=self._dictionaries, name="fix-dictionaries", daemon=True
            ).start()

    def _dictionaries(self) -> list[DataDictionary]:
        with self._lock:
            if self._dds is None:
                dds = []
                for version in self.versions:
                    try:
                        dds.append(DataDictionary.load(default_dictionary_path(version)))
                    except (DictionaryError, OSError, KeyError) as e:
                        log.warning(
                            "FIX dictionary %s unavailable to the inspector: %s", version, e
                        )
                self._dds = dds
            return self._dds

    def __call__(self, tag: int, value: bytes) -> tuple[str, str]:
        """Return the field name and the meaning of ``value`` (``""`` where unknown)."""
        key = (tag, value)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        name = meaning = ""
        text = value.decode("latin-1")
        for dd in self._dictionaries():
            field = dd.field(tag)
            if field is None:
                continue
            name = name or field.name
            meaning = field.enums.get(text, "")
            if meaning:
                break
        result = (name, humanize(meaning))
        if len(self._cache) < 100_000:
            self._cache[key] = result
        return result

    # ------------------------------------------------------------------ whole messages
    def dictionary(self, version: str) -> DataDictionary | None:
        """Return the shipped dictionary of ``version`` (``FIX.4.4``, ``FIXT.1.1``…) or None."""
        if version not in self._by_version:
            dd = None
            for loaded in self._dictionaries():
                if loaded.version == version:
                    dd = loaded
            if dd is None:
                try:
                    dd = DataDictionary.load(default_dictionary_path(version))
                except (DictionaryError, OSError, KeyError, ValueError) as e:
                    log.info("no FIX dictionary %s for the inspector: %s", version, e)
            self._by_version[version] = dd
        return self._by_version[version]

    def _message_dictionaries(
        self, pairs: Sequence[tuple[int, bytes]]
    ) -> tuple[DataDictionary | None, DataDictionary | None]:
        """Return the session and application dictionaries of a message (by 8 and 1128)."""
        begin = next((v.decode("latin-1") for t, v in pairs if t == 8), "")
        session = self.dictionary(begin) if begin else None
        if session is None or begin != "FIXT.1.1":
            return session, None
        code = next((v.decode("latin-1") for t, v in pairs if t == 1128), "9")
        version = next((ver for ver, c in APPL_VER_IDS.items() if c == code), "FIX.5.0SP2")
        return session, self.dictionary(version)

    def explain(self, raw: bytes) -> tuple[FieldNode, ...]:
        """Return ``raw`` as Header, Body and Trailer sections, groups as entries, checked.

        Each field carries its name and the meaning of its value; a field that fails the
        dictionary's validation carries QuickFIX's reason in ``problem``, and a required field
        that is missing appears with the value ``(missing)``. Without a dictionary for the
        message's BeginString the fields come back as one flat, unchecked list.
        """
        pairs = [(t, v) for t, v in parse_fields(raw) if t >= 0]
        malformed = [v for t, v in parse_fields(raw) if t < 0]
        session, app = self._message_dictionaries(pairs)
        if session is None:
            return tuple(self._flat(parse_fields(raw)))
        parsed = parse_message(pairs, session, app)
        problems: dict[int, list[str]] = {}
        missing: list[ValidationIssue] = []
        for issue in find_issues(pairs, session, app):
            if issue.ref_tag is None:
                problems.setdefault(35, []).append(issue.text)
            elif any(t == issue.ref_tag for t, _ in pairs):
                problems.setdefault(issue.ref_tag, []).append(issue.text)
            else:
                missing.append(issue)
        sections = []
        for title, part in (
            ("Header", parsed.header),
            ("Body", parsed.body),
            ("Trailer", parsed.trailer),
        ):
            nodes = self._nodes(part, problems)
            present = _count(nodes)
            nodes += [
                FieldNode(
                    m.ref_tag or -1,
                    self(m.ref_tag or 0, b"")[0],
                    "(missing)",
                    problem=m.text,
                )
                for m in missing
                if _section_of(m.ref_tag, session) == title
            ]
            sections.append(FieldNode(-1, title, _fields(present), children=tuple(nodes)))
        if malformed:
            sections.append(
                FieldNode(
                    -1,
                    "Malformed",
                    _fields(len(malformed)),
                    children=tuple(
                        FieldNode(-1, "", v.decode("latin-1"), problem="not tag=value")
                        for v in malformed
                    ),
                )
            )
        return tuple(sections)

    def _nodes(self, part: FieldMap, problems: dict[int, list[str]]) -> list[FieldNode]:
        out = []
        for tag, value in part.fields:
            name, meaning = self(tag, value)
            entries = part.groups.get(tag, [])
            children = []
            for n, entry in enumerate(entries, 1):
                sub = self._nodes(entry, problems)
                children.append(
                    FieldNode(-1, f"Entry {n}", _fields(_count(sub)), children=tuple(sub))
                )
            out.append(
                FieldNode(
                    tag,
                    name,
                    value.decode("latin-1"),
                    meaning,
                    "; ".join(problems.get(tag, ())),
                    tuple(children),
                )
            )
        return out

    def _flat(self, fields: Sequence[tuple[int, bytes]]) -> list[FieldNode]:
        out = []
        for tag, value in fields:
            if tag < 0:
                out.append(FieldNode(-1, "", value.decode("latin-1"), problem="not tag=value"))
            else:
                name, meaning = self(tag, value)
                out.append(FieldNode(tag, name, value.decode("latin-1"), meaning))
        return out


def _section_of(tag: int | None, session: DataDictionary) -> str:
    if tag is None:
        return "Header"
    if tag in session.header.tags or tag in (8, 9, 35):
        return "Header"
    if tag in session.trailer.tags or tag == 10:
        return "Trailer"
    return "Body"


def _count(nodes: Sequence[FieldNode]) -> int:
    return sum((n.tag >= 0) + _count(n.children) for n in nodes)


def _fields(n: int) -> str:
    return f"{n} field{'s' if n != 1 else ''}"


def humanize(description: str) -> str:
    """Turn ``NEW_ORDER_SINGLE`` into ``New order single``; keep tokens like ``FIX50SP2``."""
    words = [w if any(c.isdigit() for c in w) else w.lower() for w in description.split("_") if w]
    if not words:
        return ""
    return " ".join([words[0][:1].upper() + words[0][1:], *words[1:]])
