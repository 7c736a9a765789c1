# SPDX-License-Identifier: MIT
"""The session editor's model of a QuickFIX-style ``.cfg`` file (Qt-free).

:class:`CfgEditor` wraps the lossless :class:`engine.fix.settings.CfgDocument`: an unchanged file
writes back byte for byte (comments, blank lines, key order, spacing, CR LF endings, a missing
final newline), and an edit rewrites only the lines it touches. Unlike
:class:`engine.fix.settings.SettingsFile`, an edit is never refused: an editor must be able to hold
a file that is wrong for a moment (the user is half-way through switching a session to
FIXT.1.1), so :meth:`CfgEditor.problems` reports what is wrong instead, each problem naming the
file, the line, the key and the reason.

Beyond the engine's own checks (``engine.fix.settings``), the editor adds the rules of
``fix-notes.md`` §8.9 that QuickFIX tolerates but that hurt in production: dictionary and
certificate paths that do not exist, SocketNodelay=N (only when set), ValidateLengthAndChecksum=N,
CheckLatency=N, UseDataDictionary=N, a weekly StartDay/EndDay schedule, listening on every
interface.

It also turns settings into plain words: :func:`schedule_preview` (in session now? next logon,
next reset, the next 7 days in the session's zone and the local one) and
:func:`reset_explanation` (what ResetOnLogon, ResetOnLogout, ResetOnDisconnect,
SendResetSeqNumFlag, RefreshOnLogon and PersistMessages will do).

:data:`KEY_GROUPS` sorts every known key into the groups of ``fix-notes.md`` §8 (identity,
schedule, behaviour, validation and dictionaries, connection, storage and logging, TLS, misc),
with the editor widget kind of each (:func:`key_info`).
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.fix.schedule import SessionSchedule
from engine.fix.settings import (
    BEGIN_STRINGS,
    DIALECT_COMMENT,
    DIALECTS,
    KEYS,
    CfgDocument,
    CfgLine,
    SessionSettings,
    SettingsError,
    SettingsFile,
    SettingsProblem,
    dialect_of,
)

__all__ = [
    "KEY_GROUPS",
    "CfgEditor",
    "CfgProblem",
    "KeyInfo",
    "LogonOutcome",
    "Section",
    "key_info",
    "reset_explanation",
    "schedule_preview",
    "try_logon",
]

_NS = 1_000_000_000

#: Every known key by editor group, in the order of ``fix-notes.md`` §8.
KEY_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Identity",
        (
            "BeginString",
            "SenderCompID",
            "TargetCompID",
            "ConnectionType",
            "DefaultApplVerID",
            "SessionQualifier",
            "SenderSubID",
            "SenderLocationID",
            "TargetSubID",
            "TargetLocationID",
        ),
    ),
    (
        "Schedule",
        (
            "StartTime",
            "EndTime",
            "StartDay",
            "EndDay",
            "Weekdays",
            "TimeZone",
            "UseLocalTime",
            "NonStopSession",
            "LogonTime",
            "LogoutTime",
            "LogonDay",
            "LogoutDay",
        ),
    ),
    (
        "Behaviour",
        (
            "HeartBtInt",
            "ReconnectInterval",
            "LogonTimeout",
            "LogoutTimeout",
            "ResetOnLogon",
            "ResetOnLogout",
            "ResetOnDisconnect",
            "RefreshOnLogon",
            "SendResetSeqNumFlag",
            "SendRedundantResendRequests",
            "SendNextExpectedMsgSeqNum",
            "PersistMessages",
            "MillisecondsInTimeStamp",
            "TimestampPrecision",
            "CheckCompID",
            "CheckLatency",
            "MaxLatency",
        ),
    ),
    (
        "Validation and dictionaries",
        (
            "UseDataDictionary",
            "DataDictionary",
            "TransportDataDictionary",
            "AppDataDictionary",
            "ValidateLengthAndChecksum",
            "ValidateFieldsOutOfOrder",
            "CheckFieldsOutOfOrder",
            "ValidateFieldsHaveValues",
            "ValidateUserDefinedFields",
            "ValidateUnorderedGroupFields",
            "AllowUnknownMsgFields",
            "PreserveMessageFieldsOrder",
        ),
    ),
    (
        "Connection",
        (
            "SocketConnectHost",
            "SocketConnectPort",
            "HostSelectionPolicy",
            "HostSelectionPolicyPriorityStartOverInterval",
            "SocketConnectSourceHost",
            "SocketConnectSourcePort",
            "SocketAcceptHost",
            "SocketAcceptPort",
            "AllowedRemoteAddresses",
            "SocketReuseAddress",
            "SocketNodelay",
            "SocketSendBufferSize",
            "SocketReceiveBufferSize",
            "BusyPollMicroseconds",
        ),
    ),
    (
        "Storage and logging",
        (
            "FileStorePath",
            "FileLogPath",
            "FileLogBackupPath",
            "ScreenLogShowIncoming",
            "ScreenLogShowOutgoing",
            "ScreenLogShowEvents",
            *(
                f"{db}{what}{part}"
                for db in ("MySQL", "PostgreSQL")
                for what in ("Store", "Log")
                for part in ("Database", "User", "Password", "Host", "Port", "UseConnectionPool")
            ),
            *(
                f"{db}Log{part}"
                for db in ("MySQL", "PostgreSQL", "Odbc")
                for part in ("IncomingTable", "OutgoingTable", "EventTable")
            ),
            *(
                f"Odbc{what}{part}"
                for what in ("Store", "Log")
                for part in ("User", "Password", "ConnectionString")
            ),
        ),
    ),
    (
        "TLS",
        (
            "SocketUseSSL",
            "SSLProtocol",
            "SSLCipherSuite",
            "TLSCipherSuites",
            "ServerCertificateFile",
            "ServerCertificateKeyFile",
            "ClientCertificateFile",
            "ClientCertificateKeyFile",
            "CertificationAuthoritiesFile",
            "CertificationAuthoritiesDirectory",
            "CertificateRevocationListFile",
            "CertificateRevocationListDirectory",
            "CertificateVerifyLevel",
        ),
    ),
    ("Misc", ("HttpAcceptPort", "AcceptorTemplate", "DynamicSessions")),
)

_PATH_FILES = frozenset(
    {
        "DATADICTIONARY",
        "TRANSPORTDATADICTIONARY",
        "APPDATADICTIONARY",
        "SERVERCERTIFICATEFILE",
        "SERVERCERTIFICATEKEYFILE",
        "CLIENTCERTIFICATEFILE",
        "CLIENTCERTIFICATEKEYFILE",
        "CERTIFICATIONAUTHORITIESFILE",
        "CERTIFICATEREVOCATIONLISTFILE",
    }
)
_PATH_DIRS = frozenset(
    {
        "FILESTOREPATH",
        "FILELOGPATH",
        "FILELOGBACKUPPATH",
        "CERTIFICATIONAUTHORITIESDIRECTORY",
        "CERTIFICATEREVOCATIONLISTDIRECTORY",
    }
)
_APPL_VER_CHOICES = (
    "FIX.5.0SP2",
    "FIX.5.0SP1",
    "FIX.5.0",
    "FIX.4.4",
    "FIX.4.3",
    "FIX.4.2",
    "FIX.4.1",
    "FIX.4.0",
)
_DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """How the editor shows one key.

    Parameters
    ----------
    name : str
        QuickFIX spelling.
    group : str
        Group title from :data:`KEY_GROUPS`.
    kind : str
        ``"bool"``, ``"int"``, ``"choice"``, ``"time"``, ``"day"``, ``"days"``, ``"zone"``,
        ``"file"``, ``"dir"``, ``"secret"`` or ``"text"``.
    choices : tuple[str, ...]
        Allowed values for ``"choice"`` (and suggestions for ``"day"``).
    default : str
        Engine default as written in a file (``"Y"``, ``"30"``), ``""`` if none.
    doc : str
        One-line meaning.
    """

    name: str
    group: str
    kind: str
    choices: tuple[str, ...]
    default: str
    doc: str


_CHOICES: Mapping[str, tuple[str, ...]] = {
    "BEGINSTRING": BEGIN_STRINGS,
    "CONNECTIONTYPE": ("initiator", "acceptor"),
    "HOSTSELECTIONPOLICY": ("ROUNDROBIN", "PRIORITY"),
    "DEFAULTAPPLVERID": _APPL_VER_CHOICES,
}


def _kind(name: str, default: object) -> tuple[str, tuple[str, ...]]:
    up = name.upper()
    if isinstance(default, bool):
        return "bool", ("Y", "N")
    if up in _CHOICES:
        return "choice", _CHOICES[up]
    if up.endswith("DAY"):
        return "day", _DAY_NAMES
    named = {"WEEKDAYS": "days", "TIMEZONE": "zone"}
    kind = named.get(up) or (
        "time"
        if up.endswith("TIME")
        else "file"
        if up in _PATH_FILES
        else "dir"
        if up in _PATH_DIRS
        else "secret"
        if up.endswith("PASSWORD")
        else "int"
        if isinstance(default, int) or "PORT" in up or up in _INT_KEYS
        else "text"
    )
    return kind, ()


_INT_KEYS = frozenset(
    {
        "HEARTBTINT",
        "TIMESTAMPPRECISION",
        "MAXLATENCY",
        "RECONNECTINTERVAL",
        "LOGONTIMEOUT",
        "LOGOUTTIMEOUT",
        "CERTIFICATEVERIFYLEVEL",
    }
)


def _default_text(d: object) -> str:
    if d is None:
        return ""
    if isinstance(d, bool):
        return "Y" if d else "N"
    if isinstance(d, tuple):
        return ",".join(str(x) for x in d)
    return str(d)


def _build_infos() -> dict[str, KeyInfo]:
    out: dict[str, KeyInfo] = {}
    for group, names in KEY_GROUPS:
        for name in names:
            spec = KEYS[name.upper()]
            kind, choices = _kind(spec.name, spec.default)
            out[name.upper()] = KeyInfo(
                spec.name, group, kind, choices, _default_text(spec.default), spec.doc
            )
    return out


_INFOS = _build_infos()


def key_info(name: str) -> KeyInfo | None:
    """Return how the editor shows key ``name`` (case-insensitive), or None if unknown."""
    return _INFOS.get(name.upper())


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
            p for p in self.problems()
            if p.section == section
            or (default is not None and p.section == default and p.key and p.key.upper() not in own)
        ]  # fmt: skip

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
        for key in sorted(_PATH_FILES | _PATH_DIRS):
            value = self.eff(key)
            if not value:
                continue
            path = self.editor.resolve(value)
            if key in _PATH_FILES and not path.is_file():
                self.add("error", KEYS[key].name, f"file not found: {path}")
            elif key in _PATH_DIRS and path.exists() and not path.is_dir():
                self.add("error", KEYS[key].name, f"not a directory: {path}")
        for name, value, _ in self.editor.keys(self.section):
            if name.upper().startswith("APPDATADICTIONARY."):
                path = self.editor.resolve(value)
                if not path.is_file():
                    self.add("error", name, f"file not found: {path}")

    def risky_switches(self) -> None:
        if self.eff("SocketNodelay").upper() == "N":  # unset: QuickFIX's default, Y
            self.add("warning", "SocketNodelay", "N: QuickFIX would delay small messages "
                     "(Nagle); this engine sets TCP_NODELAY regardless")  # fmt: skip
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


# ----------------------------------------------------------------------------- plain words


def _zone_of(s: SessionSettings) -> tuple[dt.tzinfo, str]:
    for t in (s.start_time, s.end_time):
        if t is not None and t.zone:
            return zoneinfo.ZoneInfo(t.zone), t.zone
    if s.time_zone:
        return zoneinfo.ZoneInfo(s.time_zone), s.time_zone
    if s.use_local_time:
        local = dt.datetime.fromtimestamp(0).astimezone().tzinfo
        assert local is not None
        return local, "local time"
    return dt.UTC, "UTC"


def _fmt(ns: int, zone: dt.tzinfo) -> str:
    t = dt.datetime.fromtimestamp(ns / _NS, tz=dt.UTC).astimezone(zone)
    return t.strftime("%a %Y-%m-%d %H:%M:%S %Z")


def _short(start_ns: int, end_ns: int, zone: dt.tzinfo) -> str:
    # "Wed 12-02 08:00 → 17:00 EST", with the end's day when it differs.
    a = dt.datetime.fromtimestamp(start_ns / _NS, tz=dt.UTC).astimezone(zone)
    b = dt.datetime.fromtimestamp(end_ns / _NS, tz=dt.UTC).astimezone(zone)
    end = b.strftime("%H:%M") if a.date() == b.date() else b.strftime("%a %m-%d %H:%M")
    return f"{a:%a %m-%d %H:%M} → {end} {b:%Z}"


def _span_words(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def schedule_preview(
    s: SessionSettings, now_ns: int, local: dt.tzinfo | None = None, days: int = 7
) -> list[str]:
    """Describe a session's schedule in plain words.

    Parameters
    ----------
    s : SessionSettings
        The session.
    now_ns : int
        Current time, ns since the epoch (injected: nothing here reads the clock).
    local : tzinfo, optional
        The user's zone, shown next to the session's (default: the machine's).
    days : int
        How many days of windows to list.

    Returns
    -------
    list[str]
        Lines: kind of schedule, in session now or not, next logon and reset, the windows of the
        next ``days`` days in the session's zone and in ``local``.
    """
    local = local or dt.datetime.fromtimestamp(now_ns / _NS, tz=dt.UTC).astimezone().tzinfo
    assert local is not None
    if s.non_stop_session:
        return [
            "Non-stop session: always in session, sequence numbers never reset by the schedule."
        ]
    zone, zone_name = _zone_of(s)
    sched = SessionSchedule.from_settings(s)
    st, et = s.start_time, s.end_time
    assert st is not None
    assert et is not None
    lines: list[str] = []
    if s.start_day is not None and s.end_day is not None:
        lines.append(
            f"Weekly session from {_DAY_NAMES[s.start_day - 1]} {st.time} to "
            f"{_DAY_NAMES[s.end_day - 1]} {et.time} ({zone_name}); sequence numbers reset once a "
            "week."
        )
    elif st.time == et.time:
        lines.append(
            f"24-hour daily session (StartTime = EndTime = {st.time}): always in session; "
            f"sequence numbers reset when the date changes at midnight {zone_name}."
        )
    else:
        over = " (overnight: ends the next day)" if st.time > et.time else ""
        which = (
            "on " + ", ".join(_DAY_NAMES[d - 1][:3] for d in sorted(s.weekdays))
            if s.weekdays
            else "every day"
        )
        lines.append(
            f"Daily session {which}, {st.time} to {et.time} {zone_name}{over}; sequence "
            "numbers reset at each start."
        )
    in_session = sched.is_in_session(now_ns)
    nxt_end = sched.next_end_ns(now_ns)
    nxt_start = sched.next_start_ns(now_ns)
    if in_session:
        until = f" until {_fmt(nxt_end, zone)}" if nxt_end is not None else ""
        lines.append(f"In session now{until}.")
    else:
        lines.append("Not in session now.")
    if nxt_start is not None:
        wait = _span_words((nxt_start - now_ns) // _NS)
        lines.append(
            f"Next reset and logon: {_fmt(nxt_start, zone)} = {_fmt(nxt_start, local)} (in {wait})."
        )
    if s.connection_type == "initiator" and (s.logon_time or s.logout_time):
        logon = SessionSchedule.from_settings(s, logon=True)
        nl = logon.next_start_ns(now_ns)
        if nl is not None:
            lines.append(f"Initiator logs on at LogonTime: next {_fmt(nl, zone)}.")
    horizon = now_ns + days * 86_400 * _NS
    windows = sched.windows(now_ns, horizon)
    if windows:
        lines.append(f"Next {days} days, {zone_name} (your time):")
        for start, end, _ in windows[:14]:
            here, there = _short(start, end, zone), _short(start, end, local)
            lines.append(f"  {here}   ({there})" if there != here else f"  {here}")
    elif not in_session:
        lines.append(f"No session window in the next {days} days.")
    return lines


def reset_explanation(s: SessionSettings) -> list[str]:
    """Say what the sequence-number and recovery settings of a session will do."""
    init = s.connection_type == "initiator"
    out: list[str] = []
    if s.reset_on_logon:
        out.append(
            "ResetOnLogon=Y: both sequence numbers go back to 1 at every logon; "
            + (
                "as an initiator we send 141=Y (ResetSeqNumFlag) in our Logon, as QuickFIX C++ "
                "does."
                if init
                else "a counterparty's Logon is answered with 141=Y."
            )
            + " Messages missed while disconnected are never resent."
        )
    else:
        out.append(
            "ResetOnLogon=N: sequence numbers continue across logons; a gap is filled by a "
            "ResendRequest."
        )
    if s.reset_on_logout:
        out.append("ResetOnLogout=Y: after a normal Logout, the next session starts at 1.")
    if s.reset_on_disconnect:
        out.append(
            "ResetOnDisconnect=Y: if the connection drops without a Logout, the next session "
            "starts at 1 (messages in flight are lost)."
        )
    if s.send_reset_seq_num_flag and not s.reset_on_logon:
        out.append("SendResetSeqNumFlag=Y: our Logon asks the counterparty to reset (141=Y).")
    if s.refresh_on_logon:
        out.append(
            "RefreshOnLogon=Y: sequence numbers and sent messages are re-read from the store at "
            "logon (hot fail-over from another process)."
        )
    if not s.persist_messages:
        out.append(
            "PersistMessages=N: sent messages are not kept; a ResendRequest is answered with "
            "a gap fill only."
        )
    if s.send_next_expected_msg_seq_num:
        out.append("SendNextExpectedMsgSeqNum=Y: our Logon carries 789 for fast recovery.")
    if not (s.reset_on_logon or s.reset_on_logout or s.reset_on_disconnect):
        out.append("Outside these, sequence numbers reset only when a new schedule window starts.")
    return out


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


# ----------------------------------------------------------------------------- test connection


@dataclass(frozen=True, slots=True)
class LogonOutcome:
    """What a test logon did.

    Parameters
    ----------
    ok : bool
        Whether the counterparty answered our Logon with a Logon.
    summary : str
        One line for the user (``"Logged on to 127.0.0.1:5001 in 12 ms; logged out"``).
    sent : tuple[str, ...]
        Messages we sent, SOH shown as ``|``.
    received : tuple[str, ...]
        Messages we received, SOH shown as ``|``.
    events : tuple[str, ...]
        Session events (connect, logon, logout, errors).
    """

    ok: bool
    summary: str
    sent: tuple[str, ...]
    received: tuple[str, ...]
    events: tuple[str, ...]


class _RecordingLog:
    # A SessionLog that keeps everything, for the test logon's report.

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.received: list[str] = []
        self.events: list[str] = []

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        self.received.append(message.decode("latin-1").replace("\x01", "|"))

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        self.sent.append(message.decode("latin-1").replace("\x01", "|"))

    def on_event(self, text: str, now_ns: int) -> None:
        self.events.append(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


async def try_logon(
    settings: SessionSettings, base_dir: Path, timeout_s: float = 5.0
) -> LogonOutcome:
    """Connect an initiator session, log on, log out, and report what happened.

    The test uses a fresh in-memory store (sequence numbers start at 1) and no file log, so the
    real session's store and logs are not touched, and it ignores the schedule. A counterparty
    that expects higher sequence numbers may answer with a Logout; that is shown as the outcome.

    Parameters
    ----------
    settings : SessionSettings
        An initiator session.
    base_dir : Path
        Directory relative dictionary paths are resolved against.
    timeout_s : float
        Seconds to wait for the connection and the Logon answer.
    """
    import asyncio
    from dataclasses import replace as dc_replace

    from engine.clock import LiveClock
    from engine.fix.application import Application
    from engine.fix.session import FixSession
    from engine.fix.store import MemoryStore
    from engine.fix.transport import SocketInitiator

    if settings.connection_type != "initiator":
        return LogonOutcome(
            False, "Only initiator sessions can test a connection (this one accepts).", (), (), ()
        )

    def resolve(p: str | None) -> str | None:
        if p is None:
            return None
        path = Path(p)
        return str(path if path.is_absolute() or path.exists() else base_dir / path)

    config = dc_replace(
        settings,
        data_dictionary=resolve(settings.data_dictionary),
        transport_data_dictionary=resolve(settings.transport_data_dictionary),
        app_data_dictionary=resolve(settings.app_data_dictionary),
        app_data_dictionaries={
            k: resolve(v) or v for k, v in settings.app_data_dictionaries.items()
        },
    )
    clock = LiveClock()
    log = _RecordingLog()
    try:
        session = FixSession(config, MemoryStore(clock.now_ns()), Application(), log, clock, None)
    except (OSError, ValueError) as e:
        return LogonOutcome(False, f"Cannot create the session: {e}", (), (), ())
    hosts = settings.connect_addresses()
    initiator = SocketInitiator(session, hosts, reconnect_interval=timeout_s, clock=clock)
    where = ", ".join(f"{h}:{p}" for h, p in hosts)
    t0 = clock.now_ns()
    await initiator.start()
    try:
        await initiator.wait_logged_on(timeout_s)
    except TimeoutError:
        await initiator.stop(logout=False)
        session.close()
        why = log.events[-1] if log.events else "no answer"
        if initiator.connects == 0:
            why = "connection refused or unreachable"
        summary = f"No logon with {where} within {timeout_s:g} s: {why}"
        return LogonOutcome(False, summary, tuple(log.sent), tuple(log.received), tuple(log.events))
    took_ms = (clock.now_ns() - t0) / 1e6
    await initiator.stop(logout=True)
    await asyncio.sleep(0)
    session.close()
    summary = f"Logged on to {where} in {took_ms:.0f} ms, then logged out."
    return LogonOutcome(True, summary, tuple(log.sent), tuple(log.received), tuple(log.events))
