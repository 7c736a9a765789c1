# SPDX-License-Identifier: MIT
"""The session editor's model of a QuickFIX-style ``.cfg`` file (Qt-free).

:class:`CfgEditor` wraps the lossless :class:`engine.fix.edit.document.CfgDocument`: an
unchanged file writes back byte for byte (comments, blank lines, key order, spacing, CR LF
endings, a missing final newline), and an edit rewrites only the lines it touches. Unlike
:class:`engine.fix.settings.SettingsFile`, an edit is never refused: an editor must be able to hold
a file that is wrong for a moment (the user is half-way through switching a session to
FIXT.1.1), so :meth:`CfgEditor.problems` reports what is wrong instead, each problem
(:class:`CfgProblem`) naming the file, the line, the key and the reason.

Beyond the engine's own checks (``engine.fix.settings``), the editor adds the rules of
``fix-notes.md`` §8.9 that QuickFIX tolerates but that hurt in production: dictionary and
certificate paths that do not exist, SocketNodelay=N (only when set), ValidateLengthAndChecksum=N,
CheckLatency=N, UseDataDictionary=N, a weekly StartDay/EndDay schedule, listening on every
interface.

:meth:`CfgEditor.session_settings` gives a session's typed
:class:`~engine.fix.settings.SessionSettings` (re-exported here for the editor's users) once it
has no errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.fix.edit.document import CfgDocument, CfgLine
from engine.fix.edit.keys import PATH_DIR_KEYS, PATH_FILE_KEYS, key_info
from engine.fix.settings import (
    DIALECT_COMMENT,
    DIALECTS,
    KEYS,
    SessionSettings,
    SettingsError,
    SettingsFile,
    SettingsProblem,
    dialect_of,
)

__all__ = [
    "CfgEditor",
    "CfgProblem",
    "Section",
    "SessionSettings",
    "sessions_summary",
    "split_line_key",
]


# ----------------------------------------------------------------------------- problems


@dataclass(frozen=True, slots=True)
class CfgProblem:
    """One error or warning of an edited file.

    Parameters
    ----------
    severity : str
        ``"error"`` (the engine refuses the file) or ``"warning"`` (it runs, perhaps not as meant).
    source : str
        File name.
    line : int
        1-based line.
    key : str
        Key (``""`` when the problem is about a line or a section).
    reason : str
        What is wrong.
    section : int
        Index of the section the line belongs to (``[DEFAULT]`` counts), -1 if none.
    """

    severity: str
    source: str
    line: int
    key: str
    reason: str
    section: int

    def __str__(self) -> str:
        key = f" {self.key}:" if self.key else ""
        return f"{self.source}:{self.line}:{key} {self.reason}"


# ----------------------------------------------------------------------------- editor


@dataclass(frozen=True, slots=True)
class Section:
    """One section of the file, as the editor lists it.

    Parameters
    ----------
    index : int
        Section index for :meth:`CfgEditor.set` (``[DEFAULT]`` counts).
    name : str
        ``"DEFAULT"``, ``"SESSION"`` or another name as written.
    line : int
        1-based line of the ``[name]`` header.
    session : int
        Index among the ``[SESSION]`` sections, -1 for others.
    """

    index: int
    name: str
    line: int
    session: int


class CfgEditor:
    """An editable ``.cfg`` file that accepts every edit and reports problems.

    Parameters
    ----------
    text : str
        File content.
    source : str
        File name, used in problems and as the default save target.
    base_dir : Path, optional
        Directory relative paths are resolved against (default: the file's directory, or the
        current directory for an unsaved file).
    """

    def __init__(self, text: str = "", source: str = "untitled.cfg", base_dir: Path | None = None):
        self.source = source
        self.base_dir = base_dir if base_dir is not None else Path(source).absolute().parent
        self.document = CfgDocument(text)
        self._saved_text = text
        self._problems: list[CfgProblem] | None = None
        self._file: SettingsFile | None = None

    @classmethod
    def load(cls, path: str | Path) -> CfgEditor:
        """Read ``path`` (UTF-8; invalid bytes kept through surrogate escapes).

        Raises
        ------
        OSError
            If the file cannot be read.
        """
        p = Path(path)
        text = p.read_bytes().decode("utf-8", "surrogateescape")
        return cls(text, str(p), p.absolute().parent)

    # ------------------------------------------------------------------ text

    def text(self) -> str:
        """Return the file text (byte-identical to the input if nothing was changed)."""
        return self.document.to_text()

    def set_text(self, text: str) -> None:
        """Replace the whole content (the raw text view, undo and redo)."""
        self.document = CfgDocument(text)
        self._changed()

    @property
    def modified(self) -> bool:
        """Whether the text differs from what was last loaded or saved."""
        return self.text() != self._saved_text

    def save(self, path: str | Path | None = None) -> Path:
        """Write the text to ``path`` (default: :attr:`source`) and return where it went."""
        target = Path(path) if path is not None else Path(self.source)
        text = self.text()
        target.write_bytes(text.encode("utf-8", "surrogateescape"))
        if path is not None:
            self.source = str(target)
            self.base_dir = target.absolute().parent
            self._problems = None
        self._saved_text = text
        return target

    def _changed(self) -> None:
        self._problems = None
        self._file = None

    # ------------------------------------------------------------------ dialect and paths

    @property
    def dialect(self) -> str:
        """Return the engine the file is written for (a :data:`DIALECTS` key)."""
        return dialect_of(self.document)[0]

    def dialect_source(self) -> str:
        """Return how the dialect was found: stated in the file, inferred from a key, default."""
        return dialect_of(self.document)[1]

    def set_dialect(self, dialect: str) -> None:
        """State the dialect in the file, as a ``# dialect: NAME`` comment on its first line.

        A comment, so that every engine still reads the file unchanged; an earlier statement
        is replaced in place.

        Raises
        ------
        ValueError
            For a name that is not one of :data:`DIALECTS`.
        """
        if dialect not in DIALECTS:
            raise ValueError(f"dialect: must be one of {', '.join(DIALECTS)}, got {dialect!r}")
        lines = self.document.lines
        text = f"# dialect: {dialect}"
        for i, line in enumerate(lines):
            if line.kind == "comment" and DIALECT_COMMENT.match(line.text):
                lines[i] = CfgLine(text, line.eol or "\n", "comment", "", "")
                break
        else:
            eol = lines[0].eol if lines and lines[0].eol else "\n"
            lines.insert(0, CfgLine(text, eol, "comment", "", ""))
        self._changed()

    def set_base_dir(self, folder: str | Path) -> None:
        """Resolve relative paths from ``folder`` (where the engine that reads the file runs)."""
        self.base_dir = Path(folder).absolute()
        self._changed()

    # ------------------------------------------------------------------ structure

    def sections(self) -> list[Section]:
        """Return every section in file order."""
        out: list[Section] = []
        n_session = 0
        for i, (name, idx) in enumerate(self.document.section_lines()):
            session = -1
            if name.upper() == "SESSION":
                session = n_session
                n_session += 1
            out.append(Section(i, name, idx + 1, session))
        return out

    def default_section(self) -> int | None:
        """Return the index of the (first) ``[DEFAULT]`` section, or None."""
        for s in self.sections():
            if s.name.upper() == "DEFAULT":
                return s.index
        return None

    def session_sections(self) -> list[int]:
        """Return the section index of every ``[SESSION]``, in file order."""
        return [s.index for s in self.sections() if s.session >= 0]

    def get(self, section: int, key: str) -> str | None:
        """Return ``key``'s own value in ``section`` (last one wins), or None."""
        return self.document.get(section, key)

    def keys(self, section: int) -> list[tuple[str, str, int]]:
        """Return ``(key as spelled, value, 1-based line)`` of every key line in ``section``."""
        start, end = self._span(section)
        return [
            (line.name, line.value, i + 1)
            for i, line in enumerate(self.document.lines[start:end], start=start)
            if line.kind == "key"
        ]

    def effective(self, section: int, key: str) -> tuple[str | None, str]:
        """Return the value ``key`` takes in a ``[SESSION]`` and where it comes from.

        Returns
        -------
        tuple[str or None, str]
            ``(value, "session")``, ``(value, "default")`` (inherited from ``[DEFAULT]``) or
            ``(engine default or None, "engine")``.
        """
        own = self.get(section, key)
        if own is not None:
            return own, "session"
        d = self.default_section()
        if d is not None and d != section:
            inherited = self.get(d, key)
            if inherited is not None:
                return inherited, "default"
        info = key_info(key)
        return (info.default or None) if info else None, "engine"

    def title(self, section: int) -> str:
        """Return a short name for a section: ``"FIX.4.4:ME->THEM"`` or ``"[DEFAULT]"``."""
        name = self.document.section_lines()[section][0]
        if name.upper() != "SESSION":
            return f"[{name}]"

        def v(key: str) -> str:
            return self.effective(section, key)[0] or "?"

        s = f"{v('BeginString')}:{v('SenderCompID')}->{v('TargetCompID')}"
        qualifier = self.effective(section, "SessionQualifier")[0]
        return f"{s}:{qualifier}" if qualifier else s

    def _span(self, section: int) -> tuple[int, int]:
        heads = [idx for _, idx in self.document.section_lines()]
        start = heads[section]
        end = heads[section + 1] if section + 1 < len(heads) else len(self.document.lines)
        return start, end

    # ------------------------------------------------------------------ edits

    def set(self, section: int, key: str, value: str) -> None:
        """Set ``key`` in ``section``; an existing line keeps its spelling and spacing."""
        self.document.set(section, key, value)
        self._changed()

    def remove(self, section: int, key: str) -> bool:
        """Remove ``key`` from ``section`` (the value is inherited again); return if it was set."""
        found = self.document.remove(section, key)
        self._changed()
        return found

    def add_session(self, values: Mapping[str, str]) -> int:
        """Append a ``[SESSION]`` with ``values`` and return its section index."""
        index = self.document.add_section("SESSION", values)
        self._changed()
        return index

    def clone_session(self, section: int) -> int:
        """Append a copy of a ``[SESSION]`` (own keys only) with a new TargetCompID.

        The copy's TargetCompID gets a ``_COPY`` suffix (``_COPY2`` …) so that both sessions
        stay distinct; the user renames it. Returns the new section index.
        """
        values = {k: v for k, v, _ in self.keys(section)}
        target = self.effective(section, "TargetCompID")[0] or "TARGET"
        taken = {self.title(s) for s in self.session_sections()}
        n = 1
        while True:
            new = f"{target}_COPY" + (str(n) if n > 1 else "")
            candidate = self.title(section).replace(f"->{target}", f"->{new}", 1)
            if candidate not in taken:
                break
            n += 1
        spelled = next((k for k in values if k.upper() == "TARGETCOMPID"), "TargetCompID")
        values[spelled] = new
        return self.add_session(values)

    def delete_section(self, section: int) -> None:
        """Delete a section with its keys and the comment block written just above it."""
        start, end = self._span(section)
        lines = self.document.lines
        while start > 0 and lines[start - 1].kind == "comment":
            start -= 1
        # Keep the comment block that introduces the next section.
        while end > start and end < len(lines) and lines[end - 1].kind == "comment":
            end -= 1
        del lines[start:end]
        if start >= len(lines):  # the last section went: no blank lines left trailing
            while lines and lines[-1].kind == "blank":
                lines.pop()
        self._changed()

    # ------------------------------------------------------------------ checks

    def problems(self) -> list[CfgProblem]:
        """Return every error and warning, sorted by line."""
        if self._problems is None:
            # A [DEFAULT] key's problem is found once per session that inherits it: list it once.
            unique = list(dict.fromkeys(self._check()))
            self._problems = sorted(unique, key=lambda p: (p.line, p.severity, p.key))
        return self._problems

    def errors(self) -> list[CfgProblem]:
        """Return the problems that stop the engine from using the file."""
        return [p for p in self.problems() if p.severity == "error"]

    def section_of_line(self, line: int) -> int:
        """Return the index of the section containing 1-based ``line`` (-1 before any)."""
        found = -1
        for i, (_, idx) in enumerate(self.document.section_lines()):
            if idx + 1 <= line:
                found = i
        return found

    def _problem(self, severity: str, p: SettingsProblem) -> CfgProblem:
        return CfgProblem(
            severity, self.source, p.line, p.key, p.reason, self.section_of_line(p.line)
        )

    def _check(self) -> list[CfgProblem]:
        out: list[CfgProblem] = []
        try:
            file = SettingsFile(CfgDocument(self.text()), self.source, self.dialect)
        except SettingsError as e:
            out.extend(self._problem("error", p) for p in e.problems)
            out.extend(self._problem("warning", p) for p in e.warnings)
        else:
            out.extend(self._problem("warning", p) for p in file.warnings)
        for section in self.session_sections():
            rules = _SessionRules(self, section)
            rules.paths()
            rules.risky_switches()
            rules.listening()
            out.extend(rules.out)
        return out

    def line_of(self, section: int, key: str) -> int:
        """Return the line setting ``key`` for a session (own, else [DEFAULT]), else its header."""
        for sec in (section, self.default_section()):
            if sec is None:
                continue
            for name, _, line in reversed(self.keys(sec)):
                if name.upper() == key.upper():
                    return line
        return self.sections()[section].line

    def resolve(self, value: str) -> Path:
        """Resolve a path value as the engine does (absolute, or relative to the file)."""
        p = Path(value)
        if p.is_absolute():
            return p
        if (self.base_dir / p).exists():
            return self.base_dir / p
        return p if p.exists() else self.base_dir / p

    def problems_for(self, section: int) -> list[CfgProblem]:
        """Return the problems of one section, and those of ``[DEFAULT]`` keys it inherits."""
        default = self.default_section()
        own = {name.upper() for name, _, _ in self.keys(section)}
        return [
            p
            for p in self.problems()
            if p.section == section
            or (default is not None and p.section == default and p.key and p.key.upper() not in own)
        ]

    # ------------------------------------------------------------------ typed sessions

    def session_settings(self, section: int) -> SessionSettings | None:
        """Return the typed settings of one ``[SESSION]``, or None while it has errors."""
        keep = {section}
        d = self.default_section()
        if d is not None:
            keep.add(d)
        lines: list[CfgLine] = []
        for i in sorted(keep):
            start, end = self._span(i)
            lines.extend(self.document.lines[start:end])
        doc = CfgDocument()
        doc.lines = [
            CfgLine(line.text, line.eol or "\n", line.kind, line.name, line.value) for line in lines
        ]
        try:
            file = SettingsFile(doc, self.source, self.dialect)
        except SettingsError:
            return None
        return file.sessions[0] if file.sessions else None


class _SessionRules:
    # The editor's own checks for one [SESSION] (fix-notes.md §8.9), beyond the engine's.

    def __init__(self, editor: CfgEditor, section: int) -> None:
        self.editor = editor
        self.section = section
        self.out: list[CfgProblem] = []

    def add(self, severity: str, key: str, reason: str) -> None:
        line = self.editor.line_of(self.section, key)
        # A key inherited from [DEFAULT] is that section's problem (listed once, not per session).
        section = self.editor.section_of_line(line)
        if section != self.editor.default_section():
            section = self.section
        self.out.append(CfgProblem(severity, self.editor.source, line, key, reason, section))

    def eff(self, key: str) -> str:
        return (self.editor.effective(self.section, key)[0] or "").strip()

    def paths(self) -> None:
        for key in sorted(PATH_FILE_KEYS | PATH_DIR_KEYS):
            value = self.eff(key)
            if not value:
                continue
            path = self.editor.resolve(value)
            if key in PATH_FILE_KEYS and not path.is_file():
                self.add("error", KEYS[key].name, f"file not found: {path}")
            elif key in PATH_DIR_KEYS and path.exists() and not path.is_dir():
                self.add("error", KEYS[key].name, f"not a directory: {path}")
        for name, value, _ in self.editor.keys(self.section):
            if name.upper().startswith("APPDATADICTIONARY."):
                path = self.editor.resolve(value)
                if not path.is_file():
                    self.add("error", name, f"file not found: {path}")

    def risky_switches(self) -> None:
        if self.eff("SocketNodelay").upper() == "N":  # unset: QuickFIX's default, Y
            self.add(
                "warning",
                "SocketNodelay",
                "N: QuickFIX would delay small messages "
                "(Nagle); this engine sets TCP_NODELAY regardless",
            )
        for key, why in (
            ("ValidateLengthAndChecksum", "corrupted messages will be accepted"),
            ("CheckLatency", "stale messages (old SendingTime) will be accepted"),
            ("UseDataDictionary", "repeating groups cannot be parsed without a dictionary"),
        ):
            if self.eff(key).upper() == "N":
                self.add("warning", key, f"N: {why}")
        if self.eff("StartDay") or self.eff("EndDay"):
            self.add(
                "warning",
                "StartDay",
                "StartDay/EndDay make this a weekly session (one reset a week); use Weekdays "
                "for a daily session on some days",
            )

    def listening(self) -> None:
        if self.eff("ConnectionType").lower() != "acceptor":
            return
        host = self.eff("SocketAcceptHost")
        if host in ("0.0.0.0", "::", "*"):
            self.add("warning", "SocketAcceptHost", f"{host} listens on every network interface")
        elif not host:
            self.add(
                "warning",
                "SocketAcceptHost",
                "not set: QuickFIX listens on every interface (qwconsole on 127.0.0.1); set "
                "the address counterparties use",
            )


def split_line_key(problem: str) -> tuple[int, str] | None:
    """Parse ``"file:LINE: Key: reason"`` back into ``(line, key)`` (for error links)."""
    m = re.search(r":(\d+):(?: ([A-Za-z0-9.]+):)?", problem)
    if m is None:
        return None
    return int(m[1]), m[2] or ""


def sessions_summary(editor: CfgEditor) -> Sequence[tuple[int, str, str]]:
    """Return ``(section, title, connection type)`` of every ``[SESSION]``."""
    return [
        (s, editor.title(s), editor.effective(s, "ConnectionType")[0] or "?")
        for s in editor.session_sections()
    ]
