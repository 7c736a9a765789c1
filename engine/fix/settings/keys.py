# SPDX-License-Identifier: MIT
"""The key table: every ``.cfg`` key the engine knows, its converter, default and meaning.

Every key of QuickFIX C++ 1.16's ``SessionSettings.h`` is known (:data:`KEYS`), plus the
extensions users ask for from QuickFIX/J and QuickFIX/Go (TimeZone, Weekdays, SenderSubID …,
SocketAcceptHost, ValidateUnorderedGroupFields, CheckFieldsOutOfOrder, SocketUseSSL,
AcceptorTemplate, DynamicSessions). Each key's :class:`SessionSettings` attribute is its name in
snake_case, and its default is that attribute's. ``docs/fix-settings.md`` lists them with types
and defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from engine.busypoll import MAX_BUSY_POLL_US
from engine.fix.settings.model import SessionSettings
from engine.fix.settings.values import (
    choice,
    conv_appl_ver_id,
    conv_bool,
    conv_day,
    conv_days,
    conv_list,
    conv_nonempty,
    conv_port,
    conv_str,
    conv_time,
    conv_zone,
    int_in,
)

#: BeginString <8> values a session may use.
BEGIN_STRINGS: tuple[str, ...] = (
    "FIX.4.0",
    "FIX.4.1",
    "FIX.4.2",
    "FIX.4.3",
    "FIX.4.4",
    "FIXT.1.1",
)


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One known settings key.

    Parameters
    ----------
    name : str
        QuickFIX spelling (``"HeartBtInt"``).
    attr : str
        :class:`SessionSettings` attribute (``"heart_bt_int"``).
    convert : Callable[[str], object]
        Raw string → typed value; raises ValueError with the reason.
    default : object
        Value when neither the session nor ``[DEFAULT]`` sets it.
    doc : str
        One-line meaning.
    """

    name: str
    attr: str
    convert: Callable[[str], object]
    default: object
    doc: str


def _snake(name: str) -> str:
    name = name.replace("MySQL", "Mysql").replace("PostgreSQL", "Postgresql")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


_TABLE: list[tuple[str, Callable[[str], object], str]] = [
    # identity and type
    ("BeginString", choice(*BEGIN_STRINGS), "FIX version of the session"),
    ("SenderCompID", conv_nonempty, "our CompID"),
    ("SenderSubID", conv_str, "our SubID (part of the session identity)"),
    ("SenderLocationID", conv_str, "our LocationID (part of the session identity)"),
    ("TargetCompID", conv_nonempty, "counterparty CompID"),
    ("TargetSubID", conv_str, "counterparty SubID (part of the session identity)"),
    ("TargetLocationID", conv_str, "counterparty LocationID (part of the identity)"),
    ("SessionQualifier", conv_str, "disambiguates otherwise identical sessions"),
    ("DefaultApplVerID", conv_appl_ver_id, "FIXT.1.1: default application version"),
    ("ConnectionType", choice("initiator", "acceptor"), "initiator or acceptor"),
    # schedule
    ("StartTime", conv_time, "daily start of the session window"),
    ("EndTime", conv_time, "daily end of the session window"),
    ("StartDay", conv_day, "weekly session: first day"),
    ("EndDay", conv_day, "weekly session: last day"),
    ("LogonTime", conv_time, "initiator logon time inside the window"),
    ("LogoutTime", conv_time, "initiator logout time inside the window"),
    ("LogonDay", conv_day, "weekly: initiator logon day"),
    ("LogoutDay", conv_day, "weekly: initiator logout day"),
    ("UseLocalTime", conv_bool, "StartTime/EndTime in local time, not UTC"),
    ("NonStopSession", conv_bool, "ignore the schedule, never stop"),
    ("TimeZone", conv_zone, "zone of StartTime/EndTime (QuickFIX/J, /Go)"),
    ("Weekdays", conv_days, "days on which a daily session runs (QuickFIX/J, /Go)"),
    # behaviour
    ("HeartBtInt", int_in(1, None), "heartbeat interval, seconds"),
    ("ReconnectInterval", int_in(1, None), "seconds between connection attempts"),
    ("LogonTimeout", int_in(1, None), "seconds to wait for the Logon answer"),
    ("LogoutTimeout", int_in(1, None), "seconds to wait for the Logout answer"),
    ("ResetOnLogon", conv_bool, "reset sequence numbers at logon"),
    ("ResetOnLogout", conv_bool, "reset sequence numbers after a normal logout"),
    ("ResetOnDisconnect", conv_bool, "reset sequence numbers after a disconnect"),
    ("RefreshOnLogon", conv_bool, "reload the store at logon (hot fail-over)"),
    ("SendResetSeqNumFlag", conv_bool, "send 141=Y in the Logon"),
    ("SendRedundantResendRequests", conv_bool, "send every ResendRequest"),
    ("SendNextExpectedMsgSeqNum", conv_bool, "put 789 in the Logon"),
    ("PersistMessages", conv_bool, "keep sent messages for resend"),
    ("MillisecondsInTimeStamp", conv_bool, "milliseconds in timestamps (4.2+)"),
    ("TimestampPrecision", int_in(0, 9), "fractional digits 0–9 (overrides the above)"),
    ("CheckCompID", conv_bool, "incoming CompIDs must match the session"),
    ("CheckLatency", conv_bool, "check SendingTime against MaxLatency"),
    ("MaxLatency", int_in(1, None), "seconds SendingTime may be off"),
    # validation and dictionaries
    ("UseDataDictionary", conv_bool, "validate against a data dictionary"),
    ("DataDictionary", conv_nonempty, "dictionary XML (FIX.4.x)"),
    ("TransportDataDictionary", conv_nonempty, "FIXT.1.1 session-layer dictionary"),
    ("AppDataDictionary", conv_nonempty, "FIXT.1.1 application dictionary"),
    ("ValidateLengthAndChecksum", conv_bool, "reject bad BodyLength/CheckSum"),
    ("ValidateFieldsOutOfOrder", conv_bool, "reject header/body/trailer disorder"),
    ("CheckFieldsOutOfOrder", conv_bool, "QuickFIX/J name of the same check"),
    ("ValidateFieldsHaveValues", conv_bool, "reject empty fields"),
    ("ValidateUserDefinedFields", conv_bool, "reject unknown tags >= 5000"),
    ("ValidateUnorderedGroupFields", conv_bool, "reject group members out of order"),
    ("AllowUnknownMsgFields", conv_bool, "accept unknown tags < 5000"),
    ("PreserveMessageFieldsOrder", conv_bool, "keep body field order on output"),
    # connection
    ("SocketConnectHost", conv_nonempty, "initiator: host to connect to"),
    ("SocketConnectPort", conv_port, "initiator: port to connect to"),
    (
        "HostSelectionPolicy",
        choice("ROUNDROBIN", "PRIORITY", upper=True),
        "order of trying the fail-over hosts",
    ),
    (
        "HostSelectionPolicyPriorityStartOverInterval",
        int_in(0, None),
        "PRIORITY: seconds before retrying the first host",
    ),
    ("SocketConnectSourceHost", conv_nonempty, "local address for outgoing connections"),
    ("SocketConnectSourcePort", int_in(0, 65535), "local port for outgoing connections"),
    ("SocketAcceptPort", conv_port, "acceptor: listening port"),
    ("SocketAcceptHost", conv_nonempty, "acceptor: listening address (extension)"),
    ("SocketReuseAddress", conv_bool, "SO_REUSEADDR on the listener"),
    ("SocketNodelay", conv_bool, "TCP_NODELAY (this engine sets it always)"),
    ("SocketSendBufferSize", int_in(0, None), "SO_SNDBUF, 0 = OS default"),
    ("SocketReceiveBufferSize", int_in(0, None), "SO_RCVBUF, 0 = OS default"),
    ("AllowedRemoteAddresses", conv_list, "acceptor IP allow-list (comma-separated)"),
    ("SocketUseSSL", conv_bool, "use TLS (QuickFIX/J name)"),
    (
        "BusyPollMicroseconds",
        int_in(0, MAX_BUSY_POLL_US),
        "poll the socket without sleeping this long after traffic (extension; costs a core)",
    ),
    # storage and logging
    ("FileStorePath", conv_nonempty, "directory for sequence numbers and messages"),
    ("FileLogPath", conv_nonempty, "directory for message and event logs"),
    ("FileLogBackupPath", conv_nonempty, "directory for log backups"),
    ("ScreenLogShowIncoming", conv_bool, "console: incoming messages"),
    ("ScreenLogShowOutgoing", conv_bool, "console: outgoing messages"),
    ("ScreenLogShowEvents", conv_bool, "console: events"),
]
for _db in ("MySQL", "PostgreSQL"):
    for _what in ("Store", "Log"):
        _p = f"{_db}{_what}"
        _TABLE += [
            (f"{_p}Database", conv_str, f"{_db} {_what.lower()}: database"),
            (f"{_p}User", conv_str, f"{_db} {_what.lower()}: user"),
            (f"{_p}Password", conv_str, f"{_db} {_what.lower()}: password"),
            (f"{_p}Host", conv_str, f"{_db} {_what.lower()}: host"),
            (f"{_p}Port", conv_port, f"{_db} {_what.lower()}: port"),
            (f"{_p}UseConnectionPool", conv_bool, "share connections"),
        ]
for _what in ("Store", "Log"):
    _TABLE += [
        (f"Odbc{_what}User", conv_str, f"ODBC {_what.lower()}: user"),
        (f"Odbc{_what}Password", conv_str, f"ODBC {_what.lower()}: password"),
        (f"Odbc{_what}ConnectionString", conv_str, "ODBC connection string"),
    ]
for _p in ("MySQLLog", "PostgreSQLLog", "OdbcLog"):
    _TABLE += [
        (f"{_p}IncomingTable", conv_str, "table of incoming messages"),
        (f"{_p}OutgoingTable", conv_str, "table of outgoing messages"),
        (f"{_p}EventTable", conv_str, "table of events"),
    ]
_TABLE += [
    # TLS
    ("SSLProtocol", conv_str, "enabled protocols"),
    ("SSLCipherSuite", conv_str, "cipher suites (TLS <= 1.2)"),
    ("TLSCipherSuites", conv_str, "TLS 1.3 cipher suites"),
    ("ServerCertificateFile", conv_nonempty, "acceptor certificate"),
    ("ServerCertificateKeyFile", conv_nonempty, "acceptor private key"),
    ("ClientCertificateFile", conv_nonempty, "initiator certificate"),
    ("ClientCertificateKeyFile", conv_nonempty, "initiator private key"),
    ("CertificationAuthoritiesFile", conv_nonempty, "CA bundle"),
    ("CertificationAuthoritiesDirectory", conv_nonempty, "CA directory"),
    ("CertificateRevocationListFile", conv_nonempty, "CRL file"),
    ("CertificateRevocationListDirectory", conv_nonempty, "CRL directory"),
    ("CertificateVerifyLevel", int_in(0, 1), "0 = don't verify peer, 1 = verify"),
    # misc
    ("HttpAcceptPort", conv_port, "HTML status page port"),
    ("AcceptorTemplate", conv_bool, "dynamic acceptor sessions (QuickFIX/J)"),
    ("DynamicSessions", conv_bool, "dynamic acceptor sessions (QuickFIX/Go)"),
]

#: ``SocketConnectHost<n>`` / ``SocketConnectPort<n>``: the fail-over addresses (upper case).
FAILOVER_RE = re.compile(r"(SOCKETCONNECTHOST|SOCKETCONNECTPORT)([0-9]+)\Z")
#: ``AppDataDictionary.<BeginString>``: an application dictionary per version (upper case).
APPDD_RE = re.compile(r"APPDATADICTIONARY\.(.+)\Z")


#: Keys a session must set: no default is shown for them (ConnectionType's "acceptor" is only
#: for sessions built in code; HeartBtInt is required for initiators, learnt from the Logon by
#: acceptors).
_NO_DEFAULT = frozenset({"begin_string", "sender_comp_id", "target_comp_id", "connection_type"})


def _default(f: Any) -> object:
    if f.name in _NO_DEFAULT or (f.default is MISSING and f.default_factory is MISSING):
        return None
    return f.default if f.default is not MISSING else f.default_factory()


_DEFAULTS = {f.name: _default(f) for f in fields(SessionSettings)}
#: Every known key by upper-case name; defaults are :class:`SessionSettings`'.
KEYS: Mapping[str, KeySpec] = {
    name.upper(): KeySpec(name, _snake(name), conv, _DEFAULTS[_snake(name)], doc)
    for name, conv, doc in _TABLE
}


def _check_table() -> Iterator[str]:
    # Used by the tests: every key maps to a SessionSettings attribute.
    attrs = {f.name for f in fields(SessionSettings)}
    for spec in KEYS.values():
        if spec.attr not in attrs:
            yield spec.attr
