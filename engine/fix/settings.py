# SPDX-License-Identifier: MIT
"""QuickFIX-style session settings (``.cfg``): lossless reading and writing, typed sessions.

A settings file has a ``[DEFAULT]`` section whose keys every ``[SESSION]`` inherits, and one
``[SESSION]`` section per session::

    # comment
    [DEFAULT]
    ConnectionType=initiator
    HeartBtInt=30

    [SESSION]
    BeginString=FIX.4.4
    SenderCompID=ME
    TargetCompID=THEM

Reading follows QuickFIX's ``Settings.cpp``: lines are stripped; ``#`` (and ``;``) start a
comment line; ``[NAME]`` starts a section; ``key=value`` splits at the first ``=``, both sides
stripped; keys are case-insensitive. Everything else is kept as text and reported as a warning.

Two layers:

* :class:`engine.fix.edit.document.CfgDocument` — the lossless document: every line with its
  own line ending. An unchanged document writes back byte for byte;
  :meth:`~engine.fix.edit.document.CfgDocument.set` rewrites only the line of that key (keeping
  its spelling, spacing and line ending).
* :class:`SettingsFile` (from :func:`load_settings` / :func:`parse_settings`) — the document
  plus ``.default`` (raw ``[DEFAULT]`` values), ``.sessions`` (one frozen
  :class:`SessionSettings` per ``[SESSION]``, inheritance resolved, values typed and checked)
  and ``.warnings`` (unknown keys and other tolerable oddities; QuickFIX accepts custom keys).

Errors raise :class:`SettingsError`, whose ``problems`` each name the file, the line, the key and
the reason (``HeartBtInt=abc``, a port out of range, ``StartTime=25:00``, an unknown BeginString,
FIXT.1.1 without TransportDataDictionary/AppDataDictionary/DefaultApplVerID (DataDictionary
is ignored there, with a warning, as QuickFIX ignores it), an initiator without
SocketConnectHost, …).

Every key of QuickFIX C++ 1.16's ``SessionSettings.h`` is known (``KEYS``), plus the extensions
users ask for from QuickFIX/J and QuickFIX/Go (TimeZone, Weekdays, SenderSubID …,
SocketAcceptHost, ValidateUnorderedGroupFields, CheckFieldsOutOfOrder, SocketUseSSL,
AcceptorTemplate, DynamicSessions). ``docs/fix-settings.md`` lists them with types and defaults.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import zoneinfo
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from engine.busypoll import MAX_BUSY_POLL_US
from engine.fix.application import SessionID
from engine.fix.dictionary import APPL_VER_IDS, default_dictionary_path
from engine.fix.edit.document import CfgDocument
from engine.fix.validation.issues import ValidationOptions

__all__ = [
    "BEGIN_STRINGS",
    "KEYS",
    "KeySpec",
    "SessionID",
    "SessionSettings",
    "SettingsError",
    "SettingsFile",
    "SettingsProblem",
    "TimeOfDay",
    "load_settings",
    "parse_settings",
]

#: BeginString <8> values a session may use.
BEGIN_STRINGS: tuple[str, ...] = (
    "FIX.4.0",
    "FIX.4.1",
    "FIX.4.2",
    "FIX.4.3",
    "FIX.4.4",
    "FIXT.1.1",
)

#: DefaultApplVerID accepts a code or a version name (QuickFIX accepts both).
_APPL_VER_IDS: Mapping[str, str] = APPL_VER_IDS

_VERSION_OF_CODE: Mapping[str, str] = {v: k for k, v in _APPL_VER_IDS.items()}

_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")


# ----------------------------------------------------------------------------- problems


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    """One error or warning, located.

    Parameters
    ----------
    source : str
        File name.
    line : int
        1-based line (0 if the problem is about a missing key; then it is the section line).
    key : str
        Key as spelled in the file (or the missing key's canonical name; ``""`` for a line).
    reason : str
        What is wrong.
    """

    source: str
    line: int
    key: str
    reason: str

    def __str__(self) -> str:
        key = f" {self.key}:" if self.key else ""
        where = f"{self.source}:{self.line}:" if self.line else f"{self.source}:"  # 0: the file
        return f"{where}{key} {self.reason}"


class SettingsError(ValueError):
    """A settings file has errors; ``problems`` lists all of them (the message shows them).

    ``warnings`` holds the warnings found in the same pass (for editors that show both).
    """

    def __init__(
        self, problems: list[SettingsProblem], warnings: list[SettingsProblem] | None = None
    ) -> None:
        self.problems = problems
        self.warnings = warnings or []
        super().__init__("\n".join(str(p) for p in problems))


# ----------------------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True)
class TimeOfDay:
    """A StartTime/EndTime/LogonTime/LogoutTime value.

    Parameters
    ----------
    time : datetime.time
        Clock time.
    zone : str or None
        Zone given after the time (``"17:30:00 America/New_York"``, QuickFIX/J style), or None.
    """

    time: dt.time
    zone: str | None = None

    def __str__(self) -> str:
        s = self.time.strftime("%H:%M:%S")
        return f"{s} {self.zone}" if self.zone else s


_TIME_RE = re.compile(r"([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\s+(\S+))?\Z")


def _conv_time(raw: str) -> TimeOfDay:
    m = _TIME_RE.match(raw)
    if m is None:
        raise ValueError(f"'{raw}' is not a time (HH:MM:SS, optionally followed by a time zone)")
    h, mi, s = int(m[1]), int(m[2]), int(m[3])
    if h > 23 or mi > 59 or s > 59:
        raise ValueError(f"'{raw}' is not a valid time of day")
    zone = m[4]
    if zone is not None:
        _conv_zone(zone)
    return TimeOfDay(dt.time(h, mi, s), zone)


def _conv_day(raw: str) -> int:
    """Return 1 = Sunday … 7 = Saturday (QuickFIX's DayConvertor: any unambiguous prefix)."""
    s = raw.strip().lower()
    if len(s) >= 2:
        hits = [i for i, d in enumerate(_DAYS) if d.startswith(s)]
        if len(hits) == 1:
            return hits[0] + 1
    raise ValueError(f"'{raw}' is not a day of the week (Sunday … Saturday, any abbreviation)")


def _conv_days(raw: str) -> tuple[int, ...]:
    parts = [p for p in (x.strip() for x in raw.split(",")) if p]
    if not parts:
        raise ValueError("empty list of days")
    days = [_conv_day(p) for p in parts]
    if len(set(days)) != len(days):
        raise ValueError(f"'{raw}' lists a day twice")
    return tuple(days)


def _conv_bool(raw: str) -> bool:
    if raw in ("Y", "y"):
        return True
    if raw in ("N", "n"):
        return False
    raise ValueError(f"'{raw}' is not Y or N")


def _int_in(lo: int, hi: int | None) -> Callable[[str], int]:
    def conv(raw: str) -> int:
        if not re.fullmatch(r"-?[0-9]+", raw):
            raise ValueError(f"'{raw}' is not an integer")
        v = int(raw)
        if v < lo or (hi is not None and v > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"{v} is out of range (must be {bound})")
        return v

    return conv


def _conv_zone(raw: str) -> str:
    try:
        zoneinfo.ZoneInfo(raw)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"'{raw}' is not a known time zone") from None
    return raw


def _choice(*choices: str, upper: bool = False) -> Callable[[str], str]:
    def conv(raw: str) -> str:
        v = raw.upper() if upper else raw
        if v not in choices:
            raise ValueError(f"'{raw}' is not one of {', '.join(choices)}")
        return v

    return conv


def _conv_appl_ver_id(raw: str) -> str:
    if raw in _APPL_VER_IDS or raw in _APPL_VER_IDS.values():
        return raw
    raise ValueError(f"'{raw}' is not an ApplVerID (FIX.5.0SP2, 9, FIX.4.4, 6 …)")


def _conv_str(raw: str) -> str:
    return raw


def _conv_list(raw: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def _conv_nonempty(raw: str) -> str:
    if not raw:
        raise ValueError("must not be empty")
    return raw


# ----------------------------------------------------------------------------- key table


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


_PORT = _int_in(1, 65535)
_TABLE: list[tuple[str, Callable[[str], object], str]] = [
    # identity and type
    ("BeginString", _choice(*BEGIN_STRINGS), "FIX version of the session"),
    ("SenderCompID", _conv_nonempty, "our CompID"),
    ("SenderSubID", _conv_str, "our SubID (part of the session identity)"),
    ("SenderLocationID", _conv_str, "our LocationID (part of the session identity)"),
    ("TargetCompID", _conv_nonempty, "counterparty CompID"),
    ("TargetSubID", _conv_str, "counterparty SubID (part of the session identity)"),
    ("TargetLocationID", _conv_str, "counterparty LocationID (part of the identity)"),
    ("SessionQualifier", _conv_str, "disambiguates otherwise identical sessions"),
    ("DefaultApplVerID", _conv_appl_ver_id, "FIXT.1.1: default application version"),
    ("ConnectionType", _choice("initiator", "acceptor"), "initiator or acceptor"),
    # schedule
    ("StartTime", _conv_time, "daily start of the session window"),
    ("EndTime", _conv_time, "daily end of the session window"),
    ("StartDay", _conv_day, "weekly session: first day"),
    ("EndDay", _conv_day, "weekly session: last day"),
    ("LogonTime", _conv_time, "initiator logon time inside the window"),
    ("LogoutTime", _conv_time, "initiator logout time inside the window"),
    ("LogonDay", _conv_day, "weekly: initiator logon day"),
    ("LogoutDay", _conv_day, "weekly: initiator logout day"),
    ("UseLocalTime", _conv_bool, "StartTime/EndTime in local time, not UTC"),
    ("NonStopSession", _conv_bool, "ignore the schedule, never stop"),
    ("TimeZone", _conv_zone, "zone of StartTime/EndTime (QuickFIX/J, /Go)"),
    ("Weekdays", _conv_days, "days on which a daily session runs (QuickFIX/J, /Go)"),
    # behaviour
    ("HeartBtInt", _int_in(1, None), "heartbeat interval, seconds"),
    ("ReconnectInterval", _int_in(1, None), "seconds between connection attempts"),
    ("LogonTimeout", _int_in(1, None), "seconds to wait for the Logon answer"),
    ("LogoutTimeout", _int_in(1, None), "seconds to wait for the Logout answer"),
    ("ResetOnLogon", _conv_bool, "reset sequence numbers at logon"),
    ("ResetOnLogout", _conv_bool, "reset sequence numbers after a normal logout"),
    ("ResetOnDisconnect", _conv_bool, "reset sequence numbers after a disconnect"),
    ("RefreshOnLogon", _conv_bool, "reload the store at logon (hot fail-over)"),
    ("SendResetSeqNumFlag", _conv_bool, "send 141=Y in the Logon"),
    ("SendRedundantResendRequests", _conv_bool, "send every ResendRequest"),
    ("SendNextExpectedMsgSeqNum", _conv_bool, "put 789 in the Logon"),
    ("PersistMessages", _conv_bool, "keep sent messages for resend"),
    ("MillisecondsInTimeStamp", _conv_bool, "milliseconds in timestamps (4.2+)"),
    ("TimestampPrecision", _int_in(0, 9), "fractional digits 0–9 (overrides the above)"),
    ("CheckCompID", _conv_bool, "incoming CompIDs must match the session"),
    ("CheckLatency", _conv_bool, "check SendingTime against MaxLatency"),
    ("MaxLatency", _int_in(1, None), "seconds SendingTime may be off"),
    # validation and dictionaries
    ("UseDataDictionary", _conv_bool, "validate against a data dictionary"),
    ("DataDictionary", _conv_nonempty, "dictionary XML (FIX.4.x)"),
    ("TransportDataDictionary", _conv_nonempty, "FIXT.1.1 session-layer dictionary"),
    ("AppDataDictionary", _conv_nonempty, "FIXT.1.1 application dictionary"),
    ("ValidateLengthAndChecksum", _conv_bool, "reject bad BodyLength/CheckSum"),
    ("ValidateFieldsOutOfOrder", _conv_bool, "reject header/body/trailer disorder"),
    ("CheckFieldsOutOfOrder", _conv_bool, "QuickFIX/J name of the same check"),
    ("ValidateFieldsHaveValues", _conv_bool, "reject empty fields"),
    ("ValidateUserDefinedFields", _conv_bool, "reject unknown tags >= 5000"),
    ("ValidateUnorderedGroupFields", _conv_bool, "reject group members out of order"),
    ("AllowUnknownMsgFields", _conv_bool, "accept unknown tags < 5000"),
    ("PreserveMessageFieldsOrder", _conv_bool, "keep body field order on output"),
    # connection
    ("SocketConnectHost", _conv_nonempty, "initiator: host to connect to"),
    ("SocketConnectPort", _PORT, "initiator: port to connect to"),
    (
        "HostSelectionPolicy",
        _choice("ROUNDROBIN", "PRIORITY", upper=True),
        "order of trying the fail-over hosts",
    ),
    (
        "HostSelectionPolicyPriorityStartOverInterval",
        _int_in(0, None),
        "PRIORITY: seconds before retrying the first host",
    ),
    ("SocketConnectSourceHost", _conv_nonempty, "local address for outgoing connections"),
    ("SocketConnectSourcePort", _int_in(0, 65535), "local port for outgoing connections"),
    ("SocketAcceptPort", _PORT, "acceptor: listening port"),
    ("SocketAcceptHost", _conv_nonempty, "acceptor: listening address (extension)"),
    ("SocketReuseAddress", _conv_bool, "SO_REUSEADDR on the listener"),
    ("SocketNodelay", _conv_bool, "TCP_NODELAY (this engine sets it always)"),
    ("SocketSendBufferSize", _int_in(0, None), "SO_SNDBUF, 0 = OS default"),
    ("SocketReceiveBufferSize", _int_in(0, None), "SO_RCVBUF, 0 = OS default"),
    ("AllowedRemoteAddresses", _conv_list, "acceptor IP allow-list (comma-separated)"),
    ("SocketUseSSL", _conv_bool, "use TLS (QuickFIX/J name)"),
    (
        "BusyPollMicroseconds",
        _int_in(0, MAX_BUSY_POLL_US),
        "poll the socket without sleeping this long after traffic (extension; costs a core)",
    ),
    # storage and logging
    ("FileStorePath", _conv_nonempty, "directory for sequence numbers and messages"),
    ("FileLogPath", _conv_nonempty, "directory for message and event logs"),
    ("FileLogBackupPath", _conv_nonempty, "directory for log backups"),
    ("ScreenLogShowIncoming", _conv_bool, "console: incoming messages"),
    ("ScreenLogShowOutgoing", _conv_bool, "console: outgoing messages"),
    ("ScreenLogShowEvents", _conv_bool, "console: events"),
]
for _db in ("MySQL", "PostgreSQL"):
    for _what in ("Store", "Log"):
        _p = f"{_db}{_what}"
        _TABLE += [
            (f"{_p}Database", _conv_str, f"{_db} {_what.lower()}: database"),
            (f"{_p}User", _conv_str, f"{_db} {_what.lower()}: user"),
            (f"{_p}Password", _conv_str, f"{_db} {_what.lower()}: password"),
            (f"{_p}Host", _conv_str, f"{_db} {_what.lower()}: host"),
            (f"{_p}Port", _PORT, f"{_db} {_what.lower()}: port"),
            (f"{_p}UseConnectionPool", _conv_bool, "share connections"),
        ]
for _what in ("Store", "Log"):
    _TABLE += [
        (f"Odbc{_what}User", _conv_str, f"ODBC {_what.lower()}: user"),
        (f"Odbc{_what}Password", _conv_str, f"ODBC {_what.lower()}: password"),
        (f"Odbc{_what}ConnectionString", _conv_str, "ODBC connection string"),
    ]
for _p in ("MySQLLog", "PostgreSQLLog", "OdbcLog"):
    _TABLE += [
        (f"{_p}IncomingTable", _conv_str, "table of incoming messages"),
        (f"{_p}OutgoingTable", _conv_str, "table of outgoing messages"),
        (f"{_p}EventTable", _conv_str, "table of events"),
    ]
_TABLE += [
    # TLS
    ("SSLProtocol", _conv_str, "enabled protocols"),
    ("SSLCipherSuite", _conv_str, "cipher suites (TLS <= 1.2)"),
    ("TLSCipherSuites", _conv_str, "TLS 1.3 cipher suites"),
    ("ServerCertificateFile", _conv_nonempty, "acceptor certificate"),
    ("ServerCertificateKeyFile", _conv_nonempty, "acceptor private key"),
    ("ClientCertificateFile", _conv_nonempty, "initiator certificate"),
    ("ClientCertificateKeyFile", _conv_nonempty, "initiator private key"),
    ("CertificationAuthoritiesFile", _conv_nonempty, "CA bundle"),
    ("CertificationAuthoritiesDirectory", _conv_nonempty, "CA directory"),
    ("CertificateRevocationListFile", _conv_nonempty, "CRL file"),
    ("CertificateRevocationListDirectory", _conv_nonempty, "CRL directory"),
    ("CertificateVerifyLevel", _int_in(0, 1), "0 = don't verify peer, 1 = verify"),
    # misc
    ("HttpAcceptPort", _PORT, "HTML status page port"),
    ("AcceptorTemplate", _conv_bool, "dynamic acceptor sessions (QuickFIX/J)"),
    ("DynamicSessions", _conv_bool, "dynamic acceptor sessions (QuickFIX/Go)"),
]

_FAILOVER_RE = re.compile(r"(SOCKETCONNECTHOST|SOCKETCONNECTPORT)([0-9]+)\Z")
_APPDD_RE = re.compile(r"APPDATADICTIONARY\.(.+)\Z")


# ----------------------------------------------------------------------------- session


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSettings:
    """The settings of one session, typed: the one model a ``.cfg`` file and code both build.

    :func:`load_settings` gives one per ``[SESSION]`` ([DEFAULT] inherited, checked); code
    builds one directly (``SessionSettings(begin_string="FIX.4.4", sender_comp_id="ME",
    target_comp_id="EXCH", connection_type="initiator", heart_bt_int=30)``) and
    :class:`engine.fix.session.FixSession` runs with it. The defaults here are the only ones
    (the key table's are read from them).

    Attribute names are the QuickFIX keys in snake_case; see ``docs/fix-settings.md`` for
    meanings. Booleans are bool, times :class:`TimeOfDay`, days 1 = Sunday … 7 = Saturday.

    Also: ``socket_connect_failover`` (the ``SocketConnectHost<n>``/``Port<n>`` pairs, n = 1, 2 …),
    ``app_data_dictionaries`` (``AppDataDictionary.<BeginString>`` keys), ``extra`` (unknown keys
    as written, for custom use), ``section_line`` (1-based line of the ``[SESSION]`` header).
    """

    begin_string: str
    sender_comp_id: str
    target_comp_id: str
    connection_type: str = "acceptor"
    sender_sub_id: str | None = None
    sender_location_id: str | None = None
    target_sub_id: str | None = None
    target_location_id: str | None = None
    session_qualifier: str | None = None
    default_appl_ver_id: str | None = None
    start_time: TimeOfDay | None = None
    end_time: TimeOfDay | None = None
    start_day: int | None = None
    end_day: int | None = None
    logon_time: TimeOfDay | None = None
    logout_time: TimeOfDay | None = None
    logon_day: int | None = None
    logout_day: int | None = None
    use_local_time: bool = False
    non_stop_session: bool = False
    time_zone: str | None = None
    weekdays: tuple[int, ...] | None = None
    heart_bt_int: int | None = None
    reconnect_interval: int = 30
    logon_timeout: float = 10
    logout_timeout: float = 2
    reset_on_logon: bool = False
    reset_on_logout: bool = False
    reset_on_disconnect: bool = False
    refresh_on_logon: bool = False
    send_reset_seq_num_flag: bool = False
    send_redundant_resend_requests: bool = False
    send_next_expected_msg_seq_num: bool = False
    persist_messages: bool = True
    milliseconds_in_time_stamp: bool = True
    timestamp_precision: int | None = None
    check_comp_id: bool = True
    check_latency: bool = True
    max_latency: int = 120
    use_data_dictionary: bool = True
    data_dictionary: str | None = None
    transport_data_dictionary: str | None = None
    app_data_dictionary: str | None = None
    validate_length_and_checksum: bool = True
    validate_fields_out_of_order: bool = True
    check_fields_out_of_order: bool = True
    validate_fields_have_values: bool = True
    validate_user_defined_fields: bool = True
    validate_unordered_group_fields: bool = True
    allow_unknown_msg_fields: bool = False
    preserve_message_fields_order: bool = False
    socket_connect_host: str | None = None
    socket_connect_port: int | None = None
    host_selection_policy: str = "ROUNDROBIN"
    host_selection_policy_priority_start_over_interval: int = 120
    socket_connect_source_host: str | None = None
    socket_connect_source_port: int | None = None
    socket_accept_port: int | None = None
    socket_accept_host: str | None = None
    socket_reuse_address: bool = True
    socket_nodelay: bool = True
    socket_send_buffer_size: int = 0
    socket_receive_buffer_size: int = 0
    allowed_remote_addresses: tuple[str, ...] = ()
    socket_use_ssl: bool = False
    busy_poll_microseconds: int = 0
    file_store_path: str | None = None
    file_log_path: str | None = None
    file_log_backup_path: str | None = None
    screen_log_show_incoming: bool = True
    screen_log_show_outgoing: bool = True
    screen_log_show_events: bool = True
    mysql_store_database: str | None = None
    mysql_store_user: str | None = None
    mysql_store_password: str | None = None
    mysql_store_host: str | None = None
    mysql_store_port: int | None = None
    mysql_store_use_connection_pool: bool = False
    mysql_log_database: str | None = None
    mysql_log_user: str | None = None
    mysql_log_password: str | None = None
    mysql_log_host: str | None = None
    mysql_log_port: int | None = None
    mysql_log_use_connection_pool: bool = False
    postgresql_store_database: str | None = None
    postgresql_store_user: str | None = None
    postgresql_store_password: str | None = None
    postgresql_store_host: str | None = None
    postgresql_store_port: int | None = None
    postgresql_store_use_connection_pool: bool = False
    postgresql_log_database: str | None = None
    postgresql_log_user: str | None = None
    postgresql_log_password: str | None = None
    postgresql_log_host: str | None = None
    postgresql_log_port: int | None = None
    postgresql_log_use_connection_pool: bool = False
    odbc_store_user: str | None = None
    odbc_store_password: str | None = None
    odbc_store_connection_string: str | None = None
    odbc_log_user: str | None = None
    odbc_log_password: str | None = None
    odbc_log_connection_string: str | None = None
    mysql_log_incoming_table: str | None = None
    mysql_log_outgoing_table: str | None = None
    mysql_log_event_table: str | None = None
    postgresql_log_incoming_table: str | None = None
    postgresql_log_outgoing_table: str | None = None
    postgresql_log_event_table: str | None = None
    odbc_log_incoming_table: str | None = None
    odbc_log_outgoing_table: str | None = None
    odbc_log_event_table: str | None = None
    ssl_protocol: str = "all -SSLv2"
    ssl_cipher_suite: str | None = None
    tls_cipher_suites: str | None = None
    server_certificate_file: str | None = None
    server_certificate_key_file: str | None = None
    client_certificate_file: str | None = None
    client_certificate_key_file: str | None = None
    certification_authorities_file: str | None = None
    certification_authorities_directory: str | None = None
    certificate_revocation_list_file: str | None = None
    certificate_revocation_list_directory: str | None = None
    certificate_verify_level: int = 0
    http_accept_port: int | None = None
    acceptor_template: bool = False
    dynamic_sessions: bool = False
    socket_connect_failover: tuple[tuple[str, int], ...] = ()
    app_data_dictionaries: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    section_line: int = 0

    @property
    def session_id(self) -> SessionID:
        """Return the session's identity."""
        return SessionID(
            self.begin_string,
            self.sender_comp_id,
            self.target_comp_id,
            self.session_qualifier or "",
            self.sender_sub_id or "",
            self.sender_location_id or "",
            self.target_sub_id or "",
            self.target_location_id or "",
        )

    @property
    def is_initiator(self) -> bool:
        """Whether the session connects out."""
        return self.connection_type == "initiator"

    @property
    def validation(self) -> ValidationOptions:
        """The checks incoming messages get (the ``Validate*`` keys)."""
        return ValidationOptions.from_settings(self)

    def connect_addresses(self) -> list[tuple[str, int]]:
        """Return the primary host/port followed by the fail-over ones (initiators)."""
        out: list[tuple[str, int]] = []
        if self.socket_connect_host is not None and self.socket_connect_port is not None:
            out.append((self.socket_connect_host, self.socket_connect_port))
        out.extend(self.socket_connect_failover)
        return out

    def effective_timestamp_precision(self) -> int:
        """Return SendingTime's fractional digits: TimestampPrecision, else 3 or 0.

        MillisecondsInTimeStamp only applies from FIX.4.2 on; FIX.4.0/4.1 use whole seconds.
        """
        if self.timestamp_precision is not None:
            return self.timestamp_precision
        if self.begin_string in ("FIX.4.0", "FIX.4.1"):
            return 0
        return 3 if self.milliseconds_in_time_stamp else 0

    def dictionary_paths(self, base_dir: str | Path | None = None) -> tuple[Path, dict[str, Path]]:
        """Return the session dictionary and the application dictionaries by ApplVerID code.

        Keys that are not set fall back to the dictionaries shipped in ``resources/fix``.
        Relative paths are taken from ``base_dir`` (QuickFIX: the working directory).

        Parameters
        ----------
        base_dir : str or Path, optional
            Directory relative paths are resolved against.

        Returns
        -------
        tuple[Path, dict[str, Path]]
            ``(session, {appl_ver_id: app})``: for FIX.4.x both are the same file (keyed by the
            version's ApplVerID, ``"6"`` for FIX.4.4); for FIXT.1.1 the transport dictionary and
            one entry for DefaultApplVerID plus one per ``AppDataDictionary.<BeginString>``.

        Raises
        ------
        KeyError
            If a dictionary is not configured and none ships for that version.
        """

        def resolve(p: str) -> Path:
            path = Path(p)
            return path if base_dir is None or path.is_absolute() else Path(base_dir) / path

        if self.begin_string != "FIXT.1.1":
            path = (
                resolve(self.data_dictionary)
                if self.data_dictionary
                else default_dictionary_path(self.begin_string)
            )
            return path, {_APPL_VER_IDS[self.begin_string]: path}
        session = (
            resolve(self.transport_data_dictionary)
            if self.transport_data_dictionary
            else default_dictionary_path("FIXT.1.1")
        )
        apps: dict[str, Path] = {}
        code = self.default_appl_ver_id_code()
        if code is not None:
            apps[code] = (
                resolve(self.app_data_dictionary)
                if self.app_data_dictionary
                else default_dictionary_path(_VERSION_OF_CODE[code])
            )
        for version, p in self.app_data_dictionaries.items():
            apps[_APPL_VER_IDS.get(version, version)] = resolve(p)
        return session, apps

    def default_appl_ver_id_code(self) -> str | None:
        """Return DefaultApplVerID as an ApplVerID <1128> code (``"9"``), or None."""
        v = self.default_appl_ver_id
        if v is None:
            return None
        return _APPL_VER_IDS.get(v, v)


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


# ----------------------------------------------------------------------------- the file


@dataclass(slots=True)
class _Value:
    key: str  # as spelled
    value: str
    line: int  # 1-based


#: The engines whose ``.cfg`` dialect a file may be written in, and their display names.
DIALECTS: dict[str, str] = {
    "quickfix": "QuickFIX (C++)",
    "quickfixj": "QuickFIX/J",
    "quickfixgo": "QuickFIX/Go",
    "quickfixn": "QuickFIX/n",
}
DIALECT_COMMENT = re.compile(r"^\s*[#;]\s*dialect\s*[:=]\s*(\S+)\s*$", re.IGNORECASE)
#: Keys only one engine reads: a file that sets one is written for that engine.
_DIALECT_KEYS: dict[str, frozenset[str]] = {
    "quickfixgo": frozenset({
        "SOCKETPRIVATEKEYFILE", "SOCKETCERTIFICATEFILE", "SOCKETCAFILE",
        "SOCKETINSECURESKIPVERIFY", "SOCKETMINIMUMTLSVERSION", "SQLSTOREDRIVER",
        "SQLSTOREDATASOURCENAME", "MONGOSTORECONNECTION", "MONGOSTOREDATABASE",
        "DYNAMICSESSIONS",
    }),
    "quickfixj": frozenset({
        "SOCKETCONNECTPROTOCOL", "SOCKETACCEPTPROTOCOL", "JDBCDRIVER", "JDBCURL",
        "JDBCUSER", "SCREENLOGSHOWEVENTS", "FILESTORESYNC", "SOCKETKEYSTORE",
        "SOCKETTRUSTSTORE", "SLF4JLOGEVENTCATEGORY",
    }),
    "quickfixn": frozenset({"SSLENABLE", "SSLSERVERNAME", "SSLCERTIFICATE", "SSLPROTOCOLS"}),
}  # fmt: skip
#: Keys QuickFIX/Go never reads (it validates exactly when a dictionary is named).
_GO_UNREAD = frozenset({"USEDATADICTIONARY"})


def dialect_of(document: CfgDocument) -> tuple[str, str]:
    """Return the file's dialect (a :data:`DIALECTS` key) and how it was found.

    A comment line ``# dialect: quickfixgo`` states it (other engines ignore comments);
    otherwise a key only one engine reads gives it away; otherwise QuickFIX (C++).
    """
    for line in document.lines:
        if line.kind == "comment":
            m = DIALECT_COMMENT.match(line.text)
            if m is not None and m[1].lower() in DIALECTS:
                return m[1].lower(), "stated in the file"
    for line in document.lines:
        if line.kind == "key":
            up = line.name.upper()
            for dialect, keys in _DIALECT_KEYS.items():
                if up in keys:
                    return dialect, f"inferred from {line.name}"
    return "quickfix", "default"


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
        if up in KEYS or _FAILOVER_RE.match(up) or _APPDD_RE.match(up):
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
        if go and up in _GO_UNREAD:
            if warnings is not None:
                problem = SettingsProblem(source, v.line, v.key, "QuickFIX/Go does not read "
                                          "this key (it validates exactly when a dictionary "
                                          "is named); ignored")  # fmt: skip
                if problem not in warnings:
                    warnings.append(problem)
            continue
        if spec is not None:
            try:
                kwargs[spec.attr] = spec.convert(v.value)
            except ValueError as e:
                err(v, spec.name, str(e))
            continue
        m = _FAILOVER_RE.match(up)
        if m is not None:
            failover.setdefault(int(m[2]), {})[m[1]] = v
            continue
        m = _APPDD_RE.match(up)
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
            problem = SettingsProblem(source, dd.line, dd.key, "ignored for FIXT.1.1 (as "
                                      "QuickFIX does): TransportDataDictionary and "
                                      "AppDataDictionary apply")  # fmt: skip
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
            pairs.append((_conv_nonempty(host.value), _PORT(port.value)))
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
                err(None, key, "required unless NonStopSession=Y" + (
                    " (QuickFIX/Go: or neither)" if go else ""))  # fmt: skip
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


def _check_table() -> Iterator[str]:
    # Used by the tests: every key maps to a SessionSettings attribute.
    attrs = {f.name for f in fields(SessionSettings)}
    for spec in KEYS.values():
        if spec.attr not in attrs:
            yield spec.attr
