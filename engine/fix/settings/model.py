# SPDX-License-Identifier: MIT
"""The typed settings of one session: :class:`SessionSettings`.

The one model a ``.cfg`` file (:mod:`engine.fix.settings.settings_file`) and code both build;
:class:`engine.fix.session.FixSession` runs with it. Its field defaults are the only defaults:
the key table (:mod:`engine.fix.settings.keys`) reads them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.fix.application import SessionID
from engine.fix.dictionary import APPL_VER_IDS, default_dictionary_path
from engine.fix.settings.values import TimeOfDay
from engine.fix.validation.issues import ValidationOptions

_VERSION_OF_CODE: Mapping[str, str] = {v: k for k, v in APPL_VER_IDS.items()}


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
            return path, {APPL_VER_IDS[self.begin_string]: path}
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
            apps[APPL_VER_IDS.get(version, version)] = resolve(p)
        return session, apps

    def default_appl_ver_id_code(self) -> str | None:
        """Return DefaultApplVerID as an ApplVerID <1128> code (``"9"``), or None."""
        v = self.default_appl_ver_id
        if v is None:
            return None
        return APPL_VER_IDS.get(v, v)
