# SPDX-License-Identifier: MIT
"""How the session editor shows each ``.cfg`` key: groups, widget kinds, defaults (Qt-free).

:data:`KEY_GROUPS` sorts every known key into the groups of ``fix-notes.md`` §8 (identity,
schedule, behaviour, validation and dictionaries, connection, storage and logging, TLS, misc),
and :func:`key_info` gives the editor widget kind of each (:class:`KeyInfo`). The key table
itself (names, types, defaults, meanings) is ``engine.fix.settings.KEYS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.fix.settings import BEGIN_STRINGS, KEYS

__all__ = [
    "DAY_NAMES",
    "KEY_GROUPS",
    "PATH_DIR_KEYS",
    "PATH_FILE_KEYS",
    "KeyInfo",
    "key_info",
]

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

#: Keys whose value is a file path (checked to exist by the editor).
PATH_FILE_KEYS = frozenset(
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
#: Keys whose value is a directory path.
PATH_DIR_KEYS = frozenset(
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
#: Day names, Sunday first (StartDay/EndDay number them from 1).
DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


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
        return "day", DAY_NAMES
    named = {"WEEKDAYS": "days", "TIMEZONE": "zone"}
    kind = named.get(up) or (
        "time"
        if up.endswith("TIME")
        else "file"
        if up in PATH_FILE_KEYS
        else "dir"
        if up in PATH_DIR_KEYS
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
