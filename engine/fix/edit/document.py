# SPDX-License-Identifier: MIT
"""The lossless ``.cfg`` document: every line with its own line ending (Qt-free).

A QuickFIX-style settings file is kept as a list of :class:`CfgLine`, classified the way
QuickFIX's ``Settings.cpp`` reads them: lines are stripped; ``#`` (and ``;``) start a comment
line; ``[NAME]`` starts a section; ``key=value`` splits at the first ``=``, both sides stripped;
keys are case-insensitive; anything else is kept as text (``"other"``).

An unchanged :class:`CfgDocument` writes back byte for byte (comments, blank lines, key order,
spacing, CR LF endings, a missing final newline); :meth:`CfgDocument.set` rewrites only the line
of that key, keeping its spelling, spacing and line ending. The typed reading of the same
document (inheritance, checked values) is ``engine.fix.settings.SettingsFile``; the tolerant
editor over it is :class:`engine.fix.edit.cfgeditor.CfgEditor`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CfgDocument", "CfgLine"]


@dataclass(slots=True)
class CfgLine:
    """One line of a ``.cfg`` file.

    Attributes
    ----------
    text : str
        The line without its ending.
    eol : str
        The line ending: LF, CR LF, or empty on a last line without one.
    kind : str
        ``"blank"``, ``"comment"``, ``"section"``, ``"key"`` or ``"other"``.
    name : str
        Section name (for ``"section"``) or key as spelled (for ``"key"``), stripped.
    value : str
        Value, stripped (for ``"key"``).
    """

    text: str
    eol: str
    kind: str = "other"
    name: str = ""
    value: str = ""

    @classmethod
    def parse(cls, text: str, eol: str) -> CfgLine:
        """Classify ``text`` the way QuickFIX's ``Settings.cpp`` does."""
        s = text.strip()
        if not s:
            return cls(text, eol, "blank")
        if s[0] in "#;":
            return cls(text, eol, "comment")
        if s[0] == "[" and s[-1] == "]":
            return cls(text, eol, "section", s[1:-1].strip())
        if "=" in s:
            key, _, value = s.partition("=")
            return cls(text, eol, "key", key.strip(), value.strip())
        return cls(text, eol, "other")


@dataclass(slots=True)
class _Section:
    name: str
    line: int  # index into lines, -1 for keys before any section
    keys: list[int] = field(default_factory=list)  # line indices


class CfgDocument:
    """A ``.cfg`` file as lines; writes back byte for byte.

    Parameters
    ----------
    text : str
        File content.
    """

    __slots__ = ("lines",)

    def __init__(self, text: str = "") -> None:
        self.lines: list[CfgLine] = []
        # Split on "\n" only (as getline does), so that other control characters stay in text.
        for raw in re.findall(r"[^\n]*\n|[^\n]+\Z", text):
            body = raw[:-2] if raw.endswith("\r\n") else raw.rstrip("\n")
            self.lines.append(CfgLine.parse(body, raw[len(body) :]))

    def to_text(self) -> str:
        """Return the document text."""
        return "".join(line.text + line.eol for line in self.lines)

    def _sections(self) -> list[_Section]:
        out: list[_Section] = []
        cur: _Section | None = None
        for i, line in enumerate(self.lines):
            if line.kind == "section":
                cur = _Section(line.name, i)
                out.append(cur)
            elif line.kind == "key":
                if cur is None:
                    cur = _Section("", -1)
                    out.append(cur)
                cur.keys.append(i)
        return out

    def section_lines(self) -> list[tuple[str, int]]:
        """Return ``(name, line index)`` of every section in order."""
        return [(s.name, s.line) for s in self._sections() if s.line >= 0]

    def _eol(self) -> str:
        for line in self.lines:
            if line.eol:
                return line.eol
        return "\n"

    def _section(self, index: int) -> _Section:
        secs = [s for s in self._sections() if s.line >= 0]
        return secs[index]

    def get(self, section: int, key: str) -> str | None:
        """Return the value of ``key`` (case-insensitive) in the ``section``-th section."""
        found = None
        for i in self._section(section).keys:
            if self.lines[i].name.upper() == key.upper():
                found = self.lines[i].value
        return found

    def set(self, section: int, key: str, value: str) -> None:
        """Set ``key`` in the ``section``-th section (0-based, ``[DEFAULT]`` included).

        An existing key keeps its line, spelling and spacing; only the value changes. A new key
        is added after the section's last key line.
        """
        sec = self._section(section)
        for i in reversed(sec.keys):
            line = self.lines[i]
            if line.name.upper() == key.upper():
                eq = line.text.index("=")
                after = line.text[eq + 1 :]
                lead = after[: len(after) - len(after.lstrip())]
                trail = after[len(after.rstrip()) :] if after.strip() else ""
                text = line.text[: eq + 1] + lead + value + trail
                self.lines[i] = CfgLine.parse(text, line.eol)
                return
        at = (sec.keys[-1] if sec.keys else sec.line) + 1
        eol = self._eol()
        if at > 0 and not self.lines[at - 1].eol:
            self.lines[at - 1].eol = eol
        self.lines.insert(at, CfgLine.parse(f"{key}={value}", eol))

    def remove(self, section: int, key: str) -> bool:
        """Remove every line of ``key`` in the ``section``-th section; return whether any was."""
        sec = self._section(section)
        hits = [i for i in sec.keys if self.lines[i].name.upper() == key.upper()]
        for i in reversed(hits):
            del self.lines[i]
        return bool(hits)

    def add_section(self, name: str, values: Mapping[str, str] | None = None) -> int:
        """Append a ``[name]`` section (after a blank line) and return its section index."""
        eol = self._eol()
        if self.lines and not self.lines[-1].eol:
            self.lines[-1].eol = eol
        if self.lines and self.lines[-1].kind != "blank":
            self.lines.append(CfgLine("", eol, "blank"))
        self.lines.append(CfgLine.parse(f"[{name}]", eol))
        for k, v in (values or {}).items():
            self.lines.append(CfgLine.parse(f"{k}={v}", eol))
        return len(self.section_lines()) - 1
