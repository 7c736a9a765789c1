# SPDX-License-Identifier: MIT
"""Names and value meanings of FIX fields, and whole messages explained (Qt-free).

The FIX inspector (``widgets/fix_inspector.py``) is given a :class:`FieldDescriber` by the app.
It looks tags up in the shipped QuickFIX dictionaries (FIX 4.4 first, then the newer and older
versions, so custom and session-level tags are found too), and its
:meth:`FieldDescriber.explain_checked` splits a message into header, body and trailer with its
repeating groups as a tree of :class:`FieldNode`, against the message's own dictionary (its
session's file, or the shipped one of its BeginString <8>, and for FIXT.1.1 its ApplVerID
<1128>), and marks every field that fails that dictionary's validation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from engine.fix.dictionary import (
    APPL_VER_IDS,
    DataDictionary,
    DictionaryError,
    default_dictionary_path,
)
from engine.fix.edit.nodes import FieldNode
from engine.fix.edit.splitting import split_fields
from engine.fix.fields import FieldMap, parse_message
from engine.fix.validation.issues import ValidationIssue
from engine.fix.validation.walk import find_issues

__all__ = ["LOADING", "VERSIONS", "FieldDescriber", "FieldNode", "humanize"]

log = logging.getLogger(__name__)

#: A session's dictionary file being read.
LOADING: Final = "loading"

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
        #: Session id -> its dictionary files as the engine reported them (``""``: shipped).
        self._sessions: dict[str, tuple[str, str]] = {}
        #: Dictionary file -> loaded, or why not (``LOADING`` while a thread reads it).
        self._files: dict[str, DataDictionary | str] = {}
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

    # ------------------------------------------------------------------ sessions' own files
    def note_session(self, session_id: str, dictionary: str, app_dictionary: str = "") -> None:
        """Check ``session_id``'s messages against its own dictionary files from now on.

        The paths are the engine's (``SessionStatusChanged``); each file is read once, on a
        thread. Until it is in, or where it cannot be read here (a remote engine's file), the
        shipped dictionary of the message's version stands in, and
        :meth:`explain_checked` says so.
        """
        paths = (dictionary, app_dictionary)
        if self._sessions.get(session_id) == paths:
            return
        self._sessions[session_id] = paths
        for path in paths:
            if path and path not in self._files:
                self._files[path] = LOADING
                threading.Thread(
                    target=self._load_file, args=(path,), name="fix-dictionary", daemon=True
                ).start()

    def _load_file(self, path: str) -> None:
        try:
            self._files[path] = DataDictionary.load(path)
        except (DictionaryError, OSError, KeyError, ValueError) as e:
            self._files[path] = f"not readable here ({e})"

    def file_loaded(self, path: str) -> bool:
        """Return whether ``path`` was read (or found unreadable): tests and progress."""
        return self._files.get(path, LOADING) is not LOADING

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

    def _pick(
        self, path: str, shipped: DataDictionary | None, name: str, notes: list[str]
    ) -> tuple[DataDictionary | None, str]:
        """Return the session's own file at ``path`` if read, else the shipped dictionary."""
        if path:
            got = self._files.get(path, LOADING)
            if isinstance(got, DataDictionary):
                return got, Path(path).name
            notes.append(f"{Path(path).name} {'is still loading' if got is LOADING else got}")
        return shipped, name

    def _message_dictionaries(
        self, pairs: Sequence[tuple[int, bytes]], session_id: str = ""
    ) -> tuple[DataDictionary | None, DataDictionary | None, str]:
        """Return the session and application dictionaries of a message, and their names.

        The session's own files where the engine reported them and they are read; else the
        shipped dictionaries of its BeginString <8> (and ApplVerID <1128> under FIXT.1.1).
        """
        begin = next((v.decode("latin-1") for t, v in pairs if t == 8), "")
        own, own_app = self._sessions.get(session_id, ("", ""))
        notes: list[str] = []
        shipped = self.dictionary(begin) if begin else None
        session, name = self._pick(own, shipped, f"the shipped {begin} dictionary", notes)
        if session is None:
            return None, None, ""
        app, names = None, [name]
        if begin == "FIXT.1.1":
            code = next((v.decode("latin-1") for t, v in pairs if t == 1128), "9")
            version = next((ver for ver, c in APPL_VER_IDS.items() if c == code), "FIX.5.0SP2")
            app, name = self._pick(
                own_app, self.dictionary(version), f"the shipped {version} dictionary", notes
            )
            names.append(name)
        label = " and ".join(names)
        if notes:
            label += f" (the session's {'; '.join(notes)})"
        return session, app, label

    def explain_checked(
        self, raw: bytes, session_id: str = ""
    ) -> tuple[tuple[FieldNode, ...], str]:
        """Return ``raw`` as sections of checked fields, and the dictionaries it was checked by.

        Header, Body and Trailer, groups as entries. Each field carries its name and the
        meaning of its value; a field that fails the dictionary's validation carries
        QuickFIX's reason in ``problem``, and a required field that is missing appears with
        the value ``(missing)``. The second item names the dictionaries in words (``""``: none
        for the message's BeginString, and the fields come back as one flat, unchecked list).
        With the ``session_id`` of a session whose own dictionary files were noted
        (:meth:`note_session`), those are used.
        """
        fields = split_fields(raw)
        pairs = [(t, v) for t, v in fields if t >= 0]
        malformed = [v for t, v in fields if t < 0]
        session, app, against = self._message_dictionaries(pairs, session_id)
        if session is None:
            return tuple(self._flat(fields)), ""
        own = tuple(dd for dd in (app, session) if dd is not None)
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
            nodes = self._nodes(part, problems, own)
            present = _count(nodes)
            nodes += [
                FieldNode(
                    m.ref_tag or -1,
                    self._describe(m.ref_tag or 0, b"", own)[0],
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
        return tuple(sections), against

    def _describe(self, tag: int, value: bytes, own: tuple[DataDictionary, ...]) -> tuple[str, str]:
        """Name and meaning from the message's dictionaries first (custom fields), then any."""
        text = value.decode("latin-1")
        for dd in own:
            field = dd.field(tag)
            if field is not None:
                meaning = field.enums.get(text, "")
                return field.name, humanize(meaning) if meaning else self(tag, value)[1]
        return self(tag, value)

    def _nodes(
        self, part: FieldMap, problems: dict[int, list[str]], own: tuple[DataDictionary, ...]
    ) -> list[FieldNode]:
        out = []
        for tag, value in part.fields:
            name, meaning = self._describe(tag, value, own)
            entries = part.groups.get(tag, [])
            children = []
            for n, entry in enumerate(entries, 1):
                sub = self._nodes(entry, problems, own)
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
