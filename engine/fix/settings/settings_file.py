# SPDX-License-Identifier: MIT
"""A ``.cfg`` file read: :class:`SettingsFile`, :func:`load_settings`, :func:`parse_settings`.

Reading follows QuickFIX's ``Settings.cpp``: lines are stripped; ``#`` (and ``;``) start a
comment line; ``[NAME]`` starts a section; ``key=value`` splits at the first ``=``, both sides
stripped; keys are case-insensitive. Everything else is kept as text and reported.

:class:`SettingsFile` is the lossless document (:class:`engine.fix.edit.document.CfgDocument`)
plus ``.default`` (raw ``[DEFAULT]`` values), ``.sessions`` (one frozen
:class:`~engine.fix.settings.model.SessionSettings` per ``[SESSION]``, inheritance resolved,
values typed and checked, the cross-key rules applied) and ``.warnings`` (unknown keys and
other tolerable oddities; QuickFIX accepts custom keys). Edits through it keep the sessions in
sync and are refused, leaving the document as it was, when they would make the file invalid.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.fix.application import SessionID
from engine.fix.edit.document import CfgDocument
from engine.fix.settings.dialects import GO_UNREAD, dialect_of
from engine.fix.settings.keys import APPDD_RE, FAILOVER_RE, KEYS
from engine.fix.settings.model import SessionSettings
from engine.fix.settings.problems import SettingsError, SettingsProblem
from engine.fix.settings.values import TimeOfDay, conv_nonempty, conv_port


@dataclass(slots=True)
class _Value:
    key: str  # as spelled
    value: str
    line: int  # 1-based


class SettingsFile:
    """A parsed ``.cfg`` file: lossless document, sessions and warnings.

    Attributes
    ----------
    document : CfgDocument
        The lines; edit through :meth:`set` (or :meth:`remove`, :meth:`add_session`) to keep
        ``sessions`` in sync.
    default : Mapping[str, str]
        Raw ``[DEFAULT]`` values by key as spelled.
    sessions : list[SessionSettings]
        One per ``[SESSION]``, in file order.
    warnings : list[SettingsProblem]
        Unknown keys, duplicate keys, lines QuickFIX ignores.
    source : str
        File name.
    """

    __slots__ = (
        "_broken", "_raw", "default", "dialect", "document", "sessions", "source", "warnings"
    )  # fmt: skip

    def __init__(
        self, document: CfgDocument, source: str = "<string>", dialect: str | None = None
    ) -> None:
        self.document = document
        self.source = source
        #: The engine the file is written for (:data:`DIALECTS`); inferred when not given.
        self.dialect = dialect if dialect is not None else dialect_of(document)[0]
        self.default: Mapping[str, str] = {}
        self.sessions: list[SessionSettings] = []
        self.warnings: list[SettingsProblem] = []
        self._raw: tuple[dict[str, _Value], list[tuple[int, dict[str, _Value]]]] = ({}, [])
        #: Keys that lines without '=' seem to set, by section line (0: [DEFAULT]).
        self._broken: dict[int, set[str]] = {}
        self._build()

    def to_text(self) -> str:
        """Return the file text (byte-identical to the input if nothing was changed)."""
        return self.document.to_text()

    def save(self, path: str | Path | None = None) -> None:
        """Write the file to ``path`` (default: where it was read from), bytes as in memory."""
        target = Path(path) if path is not None else Path(self.source)
        target.write_bytes(self.to_text().encode("utf-8", "surrogateescape"))

    def set(self, section: int, key: str, value: str) -> None:
        """Set ``key`` in the ``section``-th section (``[DEFAULT]`` counts) and re-check.

        Raises
        ------
        SettingsError
            If the change makes the file invalid; the document is left unchanged then.
        """
        self._edit(lambda: self.document.set(section, key, value))

    def remove(self, section: int, key: str) -> bool:
        """Remove ``key`` from the ``section``-th section and re-check; return whether it was set.

        Raises
        ------
        SettingsError
            If the change makes the file invalid; the document is left unchanged then.
        """
        found: list[bool] = []
        self._edit(lambda: found.append(self.document.remove(section, key)))
        return found[0]

    def add_session(self, values: Mapping[str, str]) -> SessionSettings:
        """Append a ``[SESSION]`` with ``values`` (key → raw value) and return it.

        Raises
        ------
        SettingsError
            If the new session is invalid; the document is left unchanged then.
        """
        self._edit(lambda: self.document.add_section("SESSION", values))
        return self.sessions[-1]

    def session_section(self, session: int) -> int:
        """Return the section index (for :meth:`set`) of the ``session``-th ``[SESSION]``."""
        names = [n.upper() for n, _ in self.document.section_lines()]
        return [i for i, n in enumerate(names) if n == "SESSION"][session]

    def value_source(self, session: int, key: str) -> tuple[str | None, str]:
        """Return the effective raw value of ``key`` for a session and where it comes from.

        Returns
        -------
        tuple[str or None, str]
            ``(value, "session")``, ``(value, "default")`` (inherited from ``[DEFAULT]``) or
            ``(engine default or None, "engine")``.
        """
        up = key.upper()
        default, sessions = self._raw
        own = sessions[session][1].get(up)
        if own is not None:
            return own.value, "session"
        inherited = default.get(up)
        if inherited is not None:
            return inherited.value, "default"
        spec = KEYS.get(up)
        if spec is None or spec.default is None:
            return None, "engine"
        d = spec.default
        text = (
            ("Y" if d else "N")
            if isinstance(d, bool)
            else ",".join(d)
            if isinstance(d, tuple)
            else str(d)
        )
        return text, "engine"

    def _edit(self, change: Callable[[], object]) -> None:
        before = [replace(line) for line in self.document.lines]
        change()
        try:
            self._build()
        except SettingsError:
            self.document.lines = before
            self._build()
            raise

    def session(self, session_id: SessionID) -> SessionSettings | None:
        """Return the session with ``session_id`` or None."""
        for s in self.sessions:
            if s.session_id == session_id:
                return s
        return None

    def _build(self) -> None:
        self.warnings = []
        errors: list[SettingsProblem] = []
        default, sessions = self._raw = self._scan(errors)
        self.default = {v.key: v.value for v in default.values()}
        built: list[SessionSettings] = []
        seen: dict[SessionID, int] = {}
        for line_no, own in sessions:
            merged = {**default, **own}
            broken = frozenset(self._broken.get(0, set()) | self._broken.get(line_no, set()))
            s = _make_session(
                merged, line_no, self.source, errors, broken, self.warnings, self.dialect
            )
            if s is None:
                continue
            sid = s.session_id
            if sid in seen:
                errors.append(
                    SettingsProblem(
                        self.source, line_no, "", f"session {sid} already defined at {seen[sid]}"
                    )
                )
            seen[sid] = line_no
            built.append(s)
        if errors:
            raise SettingsError(errors, self.warnings)
        self.sessions = built

    def _scan(
        self, errors: list[SettingsProblem]
    ) -> tuple[dict[str, _Value], list[tuple[int, dict[str, _Value]]]]:
        default: dict[str, _Value] = {}
        sessions: list[tuple[int, dict[str, _Value]]] = []
        current: dict[str, _Value] | None = None
        section = 0  # line of the current [SESSION] (0: [DEFAULT])
        self._broken = {}
        for i, line in enumerate(self.document.lines, start=1):
            if line.kind == "section":
                name = line.name.upper()
                section = i if name == "SESSION" else 0
                if name == "DEFAULT":
                    if default:
                        self._warn(i, "", "second [DEFAULT] section: its keys override the first")
                    current = default
                elif name == "SESSION":
                    current = {}
                    sessions.append((i, current))
                else:
                    self._warn(i, "", f"unknown section [{line.name}] is ignored")
                    current = None
            elif line.kind == "key":
                if current is None:
                    self._warn(i, line.name, "key outside [DEFAULT]/[SESSION] is ignored")
                    continue
                up = line.name.upper()
                if up in current:
                    self._warn(i, line.name, f"repeated key (line {current[up].line} ignored)")
                current[up] = _Value(line.name, line.value, i)
                self._check_known(i, line.name, errors)
            elif line.kind == "other":
                # QuickFIX skips such a line; the key it meant to set then goes missing and
                # the error would name the section instead of this line.
                text = line.text.strip()
                shown = text if len(text) <= 40 else text[:37] + "..."
                why = f"{shown!r} is not key=value, a [section] or a # comment (no '=')"
                errors.append(SettingsProblem(self.source, i, "", why))
                word = re.split(r"[\s:]", text, maxsplit=1)[0].upper()
                if word in KEYS:  # not reported again as missing, at the section's line
                    self._broken.setdefault(section, set()).add(word)
        return default, sessions

    def _warn(self, line: int, key: str, reason: str) -> None:
        self.warnings.append(SettingsProblem(self.source, line, key, reason))

    def _check_known(self, line: int, key: str, errors: list[SettingsProblem]) -> None:
        up = key.upper()
        if up in KEYS or FAILOVER_RE.match(up) or APPDD_RE.match(up):
            return
        near = difflib.get_close_matches(up, KEYS, n=1, cutoff=0.8)
        if near:  # a misspelt key would silently leave the setting at its default
            known = KEYS[near[0]].name
            errors.append(
                SettingsProblem(self.source, line, key, f"unknown key; did you mean {known}?")
            )
            return
        self._warn(line, key, "unknown key (kept, not used by the engine)")


def _make_session(  # noqa: C901 - a flat list of cross-key rules reads best in one place
    values: Mapping[str, _Value],
    line_no: int,
    source: str,
    errors: list[SettingsProblem],
    broken: frozenset[str] = frozenset(),
    warnings: list[SettingsProblem] | None = None,
    dialect: str = "quickfix",
) -> SessionSettings | None:
    kwargs: dict[str, Any] = {"section_line": line_no}
    go = dialect == "quickfixgo"
    extra: dict[str, str] = {}
    failover: dict[int, dict[str, _Value]] = {}
    appdd: dict[str, str] = {}
    n_errors = len(errors)
    n_broken = [0]  # missing keys a line without '=' meant to set (reported at that line)

    def err(v: _Value | None, key: str, reason: str) -> None:
        if v is None and key.upper() in broken:
            n_broken[0] += 1
            return
        errors.append(
            SettingsProblem(source, v.line if v else line_no, v.key if v else key, reason)
        )

    for up, v in values.items():
        spec = KEYS.get(up)
        if go and up in GO_UNREAD:
            if warnings is not None:
                problem = SettingsProblem(
                    source,
                    v.line,
                    v.key,
                    "QuickFIX/Go does not read "
                    "this key (it validates exactly when a dictionary "
                    "is named); ignored",
                )
                if problem not in warnings:
                    warnings.append(problem)
            continue
        if spec is not None:
            try:
                kwargs[spec.attr] = spec.convert(v.value)
            except ValueError as e:
                err(v, spec.name, str(e))
            continue
        m = FAILOVER_RE.match(up)
        if m is not None:
            failover.setdefault(int(m[2]), {})[m[1]] = v
            continue
        m = APPDD_RE.match(up)
        if m is not None:
            appdd[v.key.split(".", 1)[1]] = v.value
            continue
        extra[v.key] = v.value

    def has(key: str) -> bool:
        return KEYS[key.upper()].attr in kwargs

    def val(key: str) -> _Value | None:
        return values.get(key.upper())

    for key in ("BeginString", "SenderCompID", "TargetCompID", "ConnectionType"):
        if key.upper() not in values:
            err(None, key, "required key is missing")
    if len(errors) > n_errors or n_broken[0]:
        return None

    begin = kwargs["begin_string"]
    if go:  # validation exactly when dictionaries are named
        named = ("TransportDataDictionary",) if begin == "FIXT.1.1" else ("DataDictionary",)
        kwargs["use_data_dictionary"] = all(has(k) for k in named)
    use_dd = kwargs.get("use_data_dictionary", True)
    if begin == "FIXT.1.1":
        if not has("DefaultApplVerID"):
            err(None, "DefaultApplVerID", "required for FIXT.1.1 sessions")
        dd = val("DataDictionary")
        if dd is not None and warnings is not None:  # QuickFIX ignores it under FIXT too
            problem = SettingsProblem(
                source,
                dd.line,
                dd.key,
                "ignored for FIXT.1.1 (as "
                "QuickFIX does): TransportDataDictionary and "
                "AppDataDictionary apply",
            )
            if problem not in warnings:  # a [DEFAULT] key: once, not once per session
                warnings.append(problem)
        if use_dd:
            for key in ("TransportDataDictionary", "AppDataDictionary"):
                if not has(key):
                    err(None, key, "required for FIXT.1.1 sessions with UseDataDictionary=Y")
    else:
        for key in ("TransportDataDictionary", "AppDataDictionary", "DefaultApplVerID"):
            if has(key):
                err(val(key), key, f"only for FIXT.1.1 sessions, not {begin}")
        if appdd:
            err(None, "AppDataDictionary", f"only for FIXT.1.1 sessions, not {begin}")

    if kwargs["connection_type"] == "initiator":
        for key in ("SocketConnectHost", "SocketConnectPort", "HeartBtInt"):
            if not has(key):
                err(None, key, "required for initiators")
    elif not has("SocketAcceptPort"):
        err(None, "SocketAcceptPort", "required for acceptors")

    pairs: list[tuple[str, int]] = []
    for n in sorted(failover):
        parts = failover[n]
        host, port = parts.get("SOCKETCONNECTHOST"), parts.get("SOCKETCONNECTPORT")
        first = host or port
        if n != len(pairs) + 1:
            err(first, f"SocketConnectHost{n}", f"fail-over number {n} skips {len(pairs) + 1}")
        if host is None or port is None:
            missing = f"SocketConnectHost{n}" if host is None else f"SocketConnectPort{n}"
            err(first, missing, f"{missing} is missing (hosts and ports come in pairs)")
            continue
        try:
            pairs.append((conv_nonempty(host.value), conv_port(port.value)))
        except ValueError as e:
            err(port, port.key, str(e))
    kwargs["socket_connect_failover"] = tuple(pairs)
    kwargs["app_data_dictionaries"] = appdd
    kwargs["extra"] = extra

    if go and not has("StartTime") and not has("EndTime"):
        kwargs["non_stop_session"] = True  # QuickFIX/Go: no session times, always in session
    if not kwargs.get("non_stop_session", False):
        for key in ("StartTime", "EndTime"):
            if key.upper() not in values:
                err(
                    None,
                    key,
                    "required unless NonStopSession=Y"
                    + (" (QuickFIX/Go: or neither)" if go else ""),
                )
    if has("StartDay") != has("EndDay"):
        key = "EndDay" if has("StartDay") else "StartDay"
        err(None, key, "StartDay and EndDay go together")
    if has("Weekdays") and (has("StartDay") or has("EndDay")):
        err(val("Weekdays"), "Weekdays", "cannot be combined with StartDay/EndDay")
    st, et = kwargs.get("start_time"), kwargs.get("end_time")
    for key in ("LogonTime", "LogoutTime"):
        t = kwargs.get(KEYS[key.upper()].attr)
        if t is not None and st is not None and et is not None and not _inside(t, st, et):
            err(val(key), key, "must lie between StartTime and EndTime")
    if len(errors) > n_errors or n_broken[0]:
        return None
    return SessionSettings(**kwargs)


def _inside(t: TimeOfDay, start: TimeOfDay, end: TimeOfDay) -> bool:
    if start.time < end.time:
        return start.time <= t.time <= end.time
    if start.time > end.time:
        return t.time >= start.time or t.time <= end.time
    return True


def parse_settings(text: str, source: str = "<string>") -> SettingsFile:
    """Parse ``.cfg`` text.

    Raises
    ------
    SettingsError
        With every problem found (file, line, key, reason).
    """
    return SettingsFile(CfgDocument(text), source)


def load_settings(path: str | Path) -> SettingsFile:
    """Read a QuickFIX-style ``.cfg`` file.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8; invalid bytes are kept through surrogate escapes).

    Returns
    -------
    SettingsFile
        ``.sessions``, ``.default``, ``.warnings``; ``.to_text()`` gives the bytes back.

    Raises
    ------
    SettingsError
        If the file cannot be read or has errors.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise SettingsError([SettingsProblem(str(p), 0, "", e.strerror or str(e))]) from e
    return SettingsFile(CfgDocument(raw.decode("utf-8", "surrogateescape")), str(p))
