# SPDX-License-Identifier: MIT
"""The FIX session layer: a sans-IO state machine in QuickFIX's shape.

:class:`FixSession` owns no socket and reads no clock on its own: the transport hands it
decoded messages, garbled-frame notices and timer ticks together with ``now_ns``, and sends
the bytes it returns. When the session wants the connection closed it sets
:attr:`FixSession.wants_disconnect` (after the returned bytes are written).

Behaviour follows QuickFIX 1.16 (``Session.cpp``), which the FIX session-level acceptance
scripts encode byte for byte: Logon / Logout / Heartbeat / TestRequest / ResendRequest /
SequenceReset (gap fill and reset) / Reject handling, PossDupFlag and OrigSendingTime checks,
CompID and SendingTime checks, the out-of-order queue, resend with gap fills for admin
messages, reverse routing on rejects, ResetOnLogon / ResetOnLogout / ResetOnDisconnect /
RefreshOnLogon, FIXT.1.1 with DefaultApplVerID, and QuickFIX's exact texts.

Why one long module: like QuickFIX's ``Session.cpp`` it is one state machine, one class whose
``_next_*`` handlers, ``_verify`` and ``_generate_*`` answers share the session's state on
every message; split across files it would be the same class read in pieces, and the
per-message path (``on_messages`` -> ``_next`` -> ``_verify``) is kept in one place on purpose.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol
from zlib import adler32 as _adler32

from engine.clock import Clock, LiveClock
from engine.fastlog import get_log
from engine.fix._kernels import (
    HEAD_ADMIN,
    HEAD_COMP_IDS,
    HEAD_FAST,
    LAYOUT_UNKNOWN,
    MSG_HEAD,
    MSG_SENT,
    MSG_SEQ,
)
from engine.fix.application import (
    Application,
    DoNotSend,
    FieldNotFound,
    IncorrectDataFormat,
    IncorrectTagValue,
    RejectLogon,
    SessionID,
    UnsupportedMessageType,
)
from engine.fix.codec import (
    MessageTemplate,
    decode_one,
    encode,
    encode_body,
    finish,
    format_timestamp,
    parse_timestamp,
)
from engine.fix.dictionary import (
    APPL_VER_IDS,
    DataDictionary,
    GroupDef,
    default_dictionary_path,
)
from engine.fix.layouts import LayoutTable
from engine.fix.log import NullLog, SessionLog
from engine.fix.message import (
    ADMIN_MSG_TYPES,
    HEADER_TAGS,
    TRAILER_TAGS,
    BodyEntry,
    Field,
    FixMessage,
    Group,
    OutMessage,
    to_bytes,
)
from engine.fix.settings import SessionSettings
from engine.fix.state import SessionState
from engine.fix.store import CHUNK, MemoryStore, MessageStore
from engine.fix.validation.issues import REJECT_TEXTS, IssueKind, ValidationIssue
from engine.fix.validation.plans import layout_program
from engine.fix.validation.validator import validate_message

_log = get_log(__name__)
# (The constants below are Final: the compiled module reads them as C variables, not from
# its namespace dictionary.)
#: The inlined store of send_template appends unless the message would fill a MemoryStore
#: chunk (that one goes through MemoryStore.set, which seals the chunk).
_CHUNK_LAST: Final = CHUNK - 1

_NS: Final = 1_000_000_000
#: The largest sequence number (QuickFIX's SEQNUM is a uint64): one past it is refused.
SEQNUM_MAX = (1 << 64) - 1
#: A callback that sends many messages (a batch of orders answered from a report) hands them
#: to the transport by this many as it goes (with a responder set), rather than all when the
#: entry point returns: the peer works on the first ones while the rest are made.
STREAM_EVERY: Final = 32
#: ``SessionState.resend_range`` when no ResendRequest is outstanding.
_NO_RANGE: Final = (0, 0)
#: Columns of a decoder row and the header flags the fast path needs (engine.fix._kernels).
_HEAD: Final = MSG_HEAD
_SEQ: Final = MSG_SEQ
_SENT: Final = MSG_SENT
_HEAD_FAST: Final = HEAD_FAST
_HEAD_FAST_MASK: Final = HEAD_FAST | HEAD_ADMIN
_HEAD_COMP_IDS: Final = HEAD_COMP_IDS
#: SendingTime <52> bounds (ns) that every int64 lies within: no latency check.
_NO_WINDOW: Final = (-(1 << 64), 1 << 64)
#: A MsgType that is not a session-level one (see _next).
_NOT_ADMIN: Final = b"?"
_first = operator.itemgetter(0)

#: Version name by ApplVerID <1128> code (``APPL_VER_IDS`` is the dictionary module's table).
_VERSION_BY_APPL_VER_ID = {v: k for k, v in APPL_VER_IDS.items()}

#: BusinessRejectReason <380> texts (QuickFIX ``Values.h``).
BUSINESS_REJECT_TEXTS: dict[int, str] = {
    0: "Other",
    1: "Unknown ID",
    2: "Unknown Security",
    3: "Unsupported Message Type",
    4: "Application not available",
    5: "Conditionally Required Field Missing",
    6: "Not authorized",
    7: "DeliverTo firm not available at this time",
}

#: Routing fields swapped on a reject (QuickFIX ``Message::reverseRoute``).
_REVERSE_ROUTE = ((115, 128), (116, 129), (128, 115), (129, 116))
_REVERSE_ROUTE_41 = ((144, 145), (145, 144))


def normalize_appl_ver_id(value: str) -> str:
    """Return the ApplVerID code for ``"FIX.5.0SP2"`` or ``"9"`` alike."""
    return APPL_VER_IDS.get(value, value)


class Schedule(Protocol):
    """What the session needs from a schedule (``engine.fix.schedule``)."""

    def is_in_session(self, now_ns: int) -> bool:
        """Return True when ``now_ns`` lies inside a session window."""
        ...

    def is_same_session(self, a_ns: int, b_ns: int) -> bool:
        """Return True when both times lie in the same session window."""
        ...


_DD_CACHE: dict[str, DataDictionary] = {}


def load_dictionary(path: str | Path) -> DataDictionary:
    """Load a data dictionary once per process (they are immutable)."""
    key = str(Path(path).resolve())
    dd = _DD_CACHE.get(key)
    if dd is None:
        dd = DataDictionary.load(key)
        _DD_CACHE[key] = dd
    return dd


# ------------------------------------------------------------------------- control flow


class _Disconnect(Exception):
    """Abort processing of a message and drop the connection."""


class _NotLoggedOn(Exception):
    """A reject was due before the session was logged on: send nothing."""


class _UnsupportedVersion(Exception):
    """BeginString <8> differs from the session's."""


#: What _next answers when processing a message raises it (see FixSession._handle); anything
#: else is a crash (the connection is dropped).
_HANDLED: Final = (
    FieldNotFound,
    IncorrectTagValue,
    IncorrectDataFormat,
    UnsupportedMessageType,
    RejectLogon,
    _UnsupportedVersion,
    _Disconnect,
)

_SESSIONS: dict[SessionID, FixSession] = {}


def lookup_session(session_id: SessionID) -> FixSession | None:
    """Return the live session with this identity, or None."""
    return _SESSIONS.get(session_id)


def send_to_target(message: OutMessage, session_id: SessionID) -> bool:
    """Send ``message`` on the session ``session_id`` (QuickFIX ``Session::sendToTarget``).

    Raises
    ------
    KeyError
        If no such session exists.
    """
    session = _SESSIONS.get(session_id)
    if session is None:
        raise KeyError(str(session_id))
    return session.send(message)


#: Adler-32's modulus: the low half of a checksum is the byte sum modulo this.
_ADLER_BASE = 65_521


class AppTemplate:
    """The fixed layout of an application message, bound to one session.

    Built by :meth:`FixSession.template` and sent with :meth:`FixSession.send_template`: the
    header and the constant fields are encoded once, a send fills in MsgSeqNum <34>,
    SendingTime <52> and the per-message values. The bytes are the ones
    :meth:`FixSession.send` writes for the same fields (body in ascending tag order).

    Attributes
    ----------
    msg_type : bytes
        MsgType <35>.
    fields : tuple of (tag, value or None)
        Body fields as given; ``None`` marks a per-message value, filled in this order.
    slots : int
        How many values a send expects.
    session : FixSession
        The session the template belongs to.
    send : Callable[[AppTemplate, Sequence[bytes], int | None], int]
        The session's :meth:`FixSession.send_template`, bound.
    """

    __slots__ = (
        "_encoder",
        "_format",
        "_heads",
        "_order",
        "_short",
        "_starts",
        "_trailers",
        "fields",
        "msg_type",
        "send",
        "session",
        "slots",
    )

    def __init__(
        self,
        session: FixSession,
        msg_type: bytes,
        fields: tuple[tuple[int, bytes | None], ...],
        encoder: MessageTemplate,
        order: tuple[int, ...] | None,
    ) -> None:
        self.session = session
        self.msg_type = msg_type
        self.fields = fields
        self._encoder = encoder
        self.slots = encoder.slots - 2
        # Wire position -> index into the values, when the fields were not given in tag order.
        self._order = order
        # What encoder.encode2() builds a short message from: send_template() encodes itself.
        self._format, self._heads, sums, self._trailers = encoder.pieces()
        # By body length n: the byte sum of the message up to the body (sums[n] + 1), the
        # Adler-32 a send starts from: the low half of adler32(body, start) is then the byte
        # sum of the whole message up to the CheckSum, while that is under 65,521 (no modulo),
        # so for bodies up to _short bytes (about 250), whatever their bytes.
        self._starts = starts = [total + 1 for total in sums]
        short = len(starts) - 1
        while short and starts[short] + 255 * short >= _ADLER_BASE:
            short -= 1
        self._short = short
        # Read into a local and called, it skips looking the method up on the session (whose
        # attributes are too many for the interpreter's fast method lookup).
        self.send = session.send_template

    def message(self, values: Sequence[bytes]) -> OutMessage:
        """Return the message with ``values`` filled in, as an :class:`OutMessage`."""
        if len(values) != self.slots:
            raise ValueError(f"template takes {self.slots} values, got {len(values)}")
        it = iter(values)
        return OutMessage(
            self.msg_type, [(t, next(it) if v is None else v) for t, v in self.fields]
        )


class FixSession:
    """FIX session-layer state machine; owns no socket and reads no clock by itself.

    Parameters
    ----------
    config : SessionSettings
        Settings (``engine.fix.settings``: from a ``.cfg`` file or built in code).
    store : MessageStore, optional
        Sequence numbers and sent messages (default: a :class:`MemoryStore`).
    application : Application, optional
        Callbacks.
    log : SessionLog, optional
        Message and event log.
    clock : Clock, optional
        Used only for :meth:`send` calls made outside the entry points.
    schedule : Schedule, optional
        Session windows; None means always in session with no daily reset.

    Notes
    -----
    Entry points: :meth:`on_connected`, :meth:`on_message`, :meth:`on_garbled`,
    :meth:`on_timer`, :meth:`on_disconnected`; each returns the bytes to write, in order.
    """

    #: The latency check's SendingTime window for the second in which it was last made
    #: (on_messages): that second's bounds, then the window's, all ns.
    _window: tuple[int, int, int, int] = (0, 0, 0, 0)
    #: on_messages' constants, made on its first call (:meth:`_rx_constants`).
    _rx: tuple[int, int, bool, tuple[int, int]] | None = None

    def __init__(
        self,
        config: SessionSettings,
        store: MessageStore | None = None,
        application: Application | None = None,
        log: SessionLog | None = None,
        clock: Clock | None = None,
        schedule: Schedule | None = None,
    ) -> None:
        if config.is_initiator and config.heart_bt_int is None:
            raise ValueError(f"{config.session_id}: HeartBtInt is required for initiators")
        self.config = config
        self.session_id = config.session_id
        self._validation = config.validation
        self._clock: Clock = clock or LiveClock()
        self._now = self._clock.now_ns()
        self.store: MessageStore = store if store is not None else MemoryStore(self._now)
        self.app = application or Application()
        self.log: SessionLog = log or NullLog(str(self.session_id))
        self.schedule = schedule
        self._schedule_checked: tuple[int, int] = (-1, -1)
        self._schedule_ok = True
        self.state = SessionState(
            initiate=config.is_initiator,
            heart_bt_int=config.heart_bt_int or 0 if config.is_initiator else 0,
            logon_timeout=config.logon_timeout,
            logout_timeout=config.logout_timeout,
        )
        self.enabled = True
        #: Set when the session wants its connection closed (after writing what it returned).
        self.wants_disconnect = False
        self._out: list[bytes] = []
        self._depth = 0
        self._responder: Callable[[bytes], None] | None = None
        #: Set by the transport while the session handles a read of one message: the first
        #: message made then, with nothing made before it, goes to this callable at once
        #: (written before the rest of the callback and the session's own bookkeeping run,
        #: ~0.55 µs sooner on each side of a ping-pong), not with the entry point's result.
        self.answer_now: Callable[[bytes], None] | None = None
        # The application last found not to override to_app (send_template's fast path).
        self._plain_app: Application | None = None
        bs = config.begin_string
        self._bs = bs
        self._begin = bs.encode()
        self._fix42_plus = bs >= "FIX.4.2"
        self._fix41_plus = bs >= "FIX.4.1"
        self._is_fixt = bs.startswith("FIXT")
        self._sender = config.sender_comp_id.encode()
        self._target = config.target_comp_id.encode()
        # "35=<type>|34=<seq>|49=<sender>|52=<time>|56=<target>|" with % placeholders.
        self._head = (
            b"35=%b\x0134=%d\x0149="
            + self._sender.replace(b"%", b"%%")
            + b"\x0152=%b\x0156="
            + self._target.replace(b"%", b"%%")
            + b"\x01"
        )
        self._precision = config.effective_timestamp_precision()
        self._ts = b""
        # The ns during which ``_ts`` holds: [_ts_lo, _ts_hi), one unit of the precision
        # (tested with two comparisons, not a division; empty: no text yet).
        self._ts_lo = 0
        self._ts_hi = 0
        # Last SendingTime <52> found within MaxLatency, and the second it was checked in.
        self._good_sending_time = b""
        self._good_sending_sec = -1
        self._persist = config.persist_messages
        self._ts_unit = 10 ** (9 - min(max(self._precision, 0), 9))
        extra: list[Field] = []
        for tag, value in (
            (50, config.sender_sub_id),
            (142, config.sender_location_id),
            (57, config.target_sub_id),
            (143, config.target_location_id),
        ):
            if value:
                extra.append((tag, value.encode()))
        self._extra_header = extra
        self._sender_appl_ver_id = normalize_appl_ver_id(config.default_appl_ver_id or "")
        self._target_appl_ver_id = self._sender_appl_ver_id
        self._session_dd: DataDictionary | None = None
        self._app_dds: dict[str, DataDictionary] = {}
        self._group_layouts: dict[str, dict[int, tuple[int, ...]]] = {}
        self._load_dictionaries()
        #: The layouts this session found valid, for its transport's decoder to check again
        #: in a kernel (:mod:`engine.fix.layouts`); None without a data dictionary.
        self.layouts = LayoutTable() if config.use_data_dictionary else None
        # The block and table size of the last LayoutTable.recheck (_validate): once each.
        self._rechecked: tuple[int, int] = (0, 0)
        _SESSIONS[self.session_id] = self
        self.app.on_create(self.session_id)
        self._event("Created session")
        if self.schedule is not None and not self.schedule.is_same_session(
            self._now, self.store.creation_time_ns
        ):
            self.store.reset(self._now)

    # ------------------------------------------------------------------ setup

    def _load_dictionaries(self) -> None:
        cfg = self.config
        if not cfg.use_data_dictionary:
            return
        if self._is_fixt:
            path = cfg.transport_data_dictionary or str(default_dictionary_path("FIXT.1.1"))
            self._session_dd = load_dictionary(path)
            if cfg.app_data_dictionary and self._sender_appl_ver_id:
                self._app_dds[self._sender_appl_ver_id] = load_dictionary(cfg.app_data_dictionary)
            for version, p in cfg.app_data_dictionaries.items():
                self._app_dds[normalize_appl_ver_id(version)] = load_dictionary(p)
        else:
            path = cfg.data_dictionary or str(default_dictionary_path(cfg.begin_string))
            self._session_dd = load_dictionary(path)

    def _app_dd(self, msg: FixMessage) -> DataDictionary | None:
        if not self._is_fixt:
            return self._session_dd
        code = (msg.get(1128) or b"").decode("latin-1") or self._target_appl_ver_id
        code = normalize_appl_ver_id(code)
        dd = self._app_dds.get(code)
        if dd is None and code in _VERSION_BY_APPL_VER_ID:
            try:
                dd = load_dictionary(default_dictionary_path(_VERSION_BY_APPL_VER_ID[code]))
            except (KeyError, OSError):
                return None
            self._app_dds[code] = dd
        return dd

    def group_layout(
        self, msg_type: bytes, appl_ver_id: str | None = None
    ) -> dict[int, tuple[int, ...]]:
        """Return NumInGroup tag -> member tags for ``msg_type`` from the dictionary.

        Used to rebuild repeating groups from a decoded message (:meth:`OutMessage.from_message`).
        """
        code = normalize_appl_ver_id(appl_ver_id or self._target_appl_ver_id)
        key = msg_type.decode("latin-1") + "/" + code
        layout = self._group_layouts.get(key)
        if layout is None:
            layout = {}
            dd = self._session_dd
            if (
                self._is_fixt
                and self._session_dd is not None
                and not self._session_dd.is_msg_type(msg_type.decode("latin-1"))
            ):
                dd = self._app_dds.get(code) or self._app_dd(FixMessage.from_pairs([(1128, code)]))
            if dd is not None:
                mdef = dd.message(msg_type.decode("latin-1"))
                if mdef is not None:
                    _collect_groups(mdef.groups, layout)
            self._group_layouts[key] = layout
        return layout

    def _order_groups(self, msg: OutMessage) -> None:
        # Repeating-group entries go out in dictionary order, whatever order they were built in.
        dd = self._session_dd
        if self._is_fixt and dd is not None and not dd.is_msg_type(msg.msg_type.decode()):
            appl = msg.header.get(1128, b"").decode() or self._sender_appl_ver_id
            dd = self._app_dd(FixMessage.from_pairs([(1128, appl)]))
        mdef = dd.message(msg.msg_type.decode("latin-1")) if dd is not None else None
        if mdef is not None:
            _sort_groups(msg.body, mdef.groups)

    def set_responder(self, responder: Callable[[bytes], None] | None) -> None:
        """Set where :meth:`send` writes when called outside an entry point (the transport)."""
        self._responder = responder

    def close(self) -> None:
        """Unregister the session and release its store and log."""
        if _SESSIONS.get(self.session_id) is self:
            del _SESSIONS[self.session_id]
        self.log.close()
        self.store.close()

    # ------------------------------------------------------------------ properties

    @property
    def is_logged_on(self) -> bool:
        """Return True when Logon was both sent and received."""
        return self.state.logged_on

    @property
    def next_sender_seq_num(self) -> int:
        """Return the MsgSeqNum of the next message we send."""
        return self.store.next_sender_seq_num

    @property
    def next_target_seq_num(self) -> int:
        """Return the MsgSeqNum expected next."""
        return self.store.next_target_seq_num

    def set_next_sender_seq_num(self, value: int) -> None:
        """Set the next outbound MsgSeqNum."""
        self.store.set_next_sender_seq_num(value)

    def set_next_target_seq_num(self, value: int) -> None:
        """Set the next expected inbound MsgSeqNum."""
        self.store.set_next_target_seq_num(value)

    # ------------------------------------------------------------------ entry points

    def _enter(self, now_ns: int) -> None:
        self._depth += 1
        self._now = now_ns

    def _leave(self) -> list[bytes]:
        self._depth -= 1
        out = self._out
        self._out = []
        return out

    def on_connected(self, now_ns: int) -> list[bytes]:
        """Start a connection: an initiator sends its Logon."""
        self._enter(now_ns)
        try:
            st = self.state
            st.connected = True
            self.wants_disconnect = False
            st.clear_connection()
            st.last_received_ns = now_ns
            st.last_sent_ns = now_ns
            if st.initiate:
                st.heart_bt_int = self.config.heart_bt_int or 0  # set: checked in __init__
                if self._in_session(now_ns):
                    self._generate_logon()
        except Exception as e:  # nothing may escape into the transport
            self._crash(e)
        return self._leave()

    def on_message(
        self, msg: FixMessage, now_ns: int, head: Sequence[int] | None = None
    ) -> list[bytes]:
        """Process one verified inbound message and return the bytes to send.

        ``head``: the message's row of the decoder's table when the decoder read its header
        (:meth:`expected_header`; ``MSG_HEAD`` … ``MSG_SENT`` of :mod:`engine.fix._kernels`),
        which lets an in-sequence application message skip reading it again here.
        """
        if self.wants_disconnect:
            return []
        return self.on_messages((msg,), now_ns, None if head is None else (head,))

    def on_messages(
        self,
        msgs: Sequence[FixMessage],
        now_ns: int,
        heads: Sequence[Sequence[int]] | None = None,
    ) -> list[bytes]:
        """Process verified inbound messages in order and return the bytes to send.

        What :meth:`on_message` does for each (the transport's call for a read that brought
        several), in one call; stops after a message that makes the session want its
        connection closed. ``heads``, when given, holds each message's row as in
        :meth:`on_message`.
        """
        # _enter and _leave inlined: this runs for every inbound message.
        self._depth += 1
        self._now = now_ns
        log = self.log
        logged = type(log) is not NullLog
        st = self.state
        cfg = self.config
        store = self.store
        memory = store if type(store) is MemoryStore else None
        # What the fast path's test needs that no message changes, read once per call: the
        # session's constants, SendingTime's window (QuickFIX's whole-second test,
        # abs(now_s - sent_s) <= MaxLatency, as ns bounds, kept for the second it was made in).
        rx = self._rx
        if rx is None:
            rx = self._rx = self._rx_constants()
        mask, want, proven, fresh = rx
        if cfg.check_latency:
            second, end, lo, hi = self._window
            if not second <= now_ns < end:
                second = now_ns - now_ns % _NS
                late = cfg.max_latency * _NS
                lo, hi = second - late, second + _NS + late
                self._window = (second, second + _NS, lo, hi)
        else:
            lo, hi = _NO_WINDOW
        layouts = self.layouts
        # What only _next changes (a Logon, a ResendRequest sent or satisfied; a disconnect
        # also sets wants_disconnect, which ends the loop), read again after each _next: the
        # session ready for the fast path (no resend pending: the state's own (0, 0), as it
        # starts and clears, tells it without a tuple comparison), and the end of _next's
        # test of what is due, as ``last <= due``.
        ready = st.received_logon and (st.resend_range is fresh or st.resend_range == _NO_RANGE)
        hb = st.heart_bt_int * _NS
        due = now_ns - hb
        i = -1
        for msg in msgs:
            i += 1
            if self.wants_disconnect:
                break
            try:
                if logged:
                    log.on_incoming(msg.raw, now_ns)
                head = None if heads is None else heads[i]
                # An application message whose header the decoder's kernel read: _next ->
                # _next_app_read inlined (the same checks in the same order, the same
                # effects). When a check fails, or the kernel did not prove the message valid
                # when the session validates, _next takes it, nothing having changed yet.
                if not (
                    head is not None
                    and head[_HEAD] & mask == want
                    and ready
                    and head[_SEQ]
                    == (memory._target if memory is not None else store.next_target_seq_num)
                    and lo <= head[_SENT] < hi
                    and (
                        not proven
                        or (
                            layouts is not None
                            and (checked := msg._b.checked) is not None  # msg.checked
                            and checked[msg._k] == layouts.valid
                        )
                    )
                ):
                    self._next(msg, False, head)
                    ready = st.received_logon and (
                        st.resend_range is fresh or st.resend_range == _NO_RANGE
                    )
                    hb = st.heart_bt_int * _NS
                    due = now_ns - hb
                    continue
                st.last_received_ns = now_ns
                st.test_request = 0
                try:
                    self.app.from_app(msg, self.session_id)
                    if memory is not None:
                        memory._target += 1
                    else:
                        store.incr_next_target_seq_num()
                except _HANDLED as e:  # as _next answers them
                    self._handle(e, msg, _NOT_ADMIN)
                # The end of _next (_after_next), its usual answer inlined: nothing queued,
                # nothing due. Skipped only when it would do nothing (it returns at once when
                # the message made the session disconnect: no need to read that here).
                if (
                    st.queue
                    or not (st.sent_logon and self.enabled)
                    or st.sent_logout
                    or (hb and (st.last_sent_ns <= due or st.last_received_ns <= due))
                ):
                    self._after_next(st)  # (it may take queued messages: a Logon among them)
                    ready = st.received_logon and (
                        st.resend_range is fresh or st.resend_range == _NO_RANGE
                    )
                    hb = st.heart_bt_int * _NS
                    due = now_ns - hb
            except Exception as e:
                self._crash(e)
        self._depth -= 1
        out = self._out
        self._out = []
        return out

    def _rx_constants(self) -> tuple[int, int, bool, tuple[int, int]]:
        # on_messages' per-session constants (the settings are frozen; schedule and dictionary
        # are set at creation): the header flags its fast path needs (CompIDs too when they
        # are checked; none with a schedule: -1 is no flags), whether a message must have
        # been proven valid by the decoder's layout kernel, and the (0, 0) object a
        # SessionState's resend_range starts and is cleared with (the same object: one
        # constant of its module).
        cfg = self.config
        mask = _HEAD_FAST_MASK
        want = _HEAD_FAST
        if cfg.check_comp_id:
            mask |= _HEAD_COMP_IDS
            want |= _HEAD_COMP_IDS
        if self.schedule is not None:
            want = -1
        fields = SessionState.__dataclass_fields__
        fresh: tuple[int, int] = fields["resend_range"].default  # type: ignore[assignment]
        return mask, want, self._session_dd is not None, fresh

    def on_garbled(self, reason: str, data: bytes, now_ns: int) -> list[bytes]:
        """Note a dropped frame; before Logon it ends the connection (as QuickFIX does)."""
        self._enter(now_ns)
        try:
            self._event(f"Garbled message dropped ({reason}): {data[:200]!r}")
            if not self.state.received_logon:
                self._event("Logon message is not valid")
                self._disconnect()
        except Exception as e:
            self._crash(e)
        return self._leave()

    def on_timer(self, now_ns: int) -> list[bytes]:
        """Run the heartbeat, TestRequest and timeout rules."""
        if not self.state.connected or self.wants_disconnect:
            return []
        self._enter(now_ns)
        try:
            self._next_timer()
        except Exception as e:
            self._crash(e)
        return self._leave()

    def on_disconnected(self, now_ns: int) -> None:
        """Tell the session its connection is gone."""
        self._enter(now_ns)
        try:
            if self.state.connected or self.state.received_logon or self.state.sent_logon:
                self._disconnect()
            self.state.connected = False
            self.wants_disconnect = False
        except Exception as e:
            self._crash(e)
        self._leave()
        self.log.flush()

    def send(self, message: OutMessage, *, now_ns: int | None = None) -> bool:
        """Send an application (or admin) message; False when not sent now.

        Called from inside a callback, the bytes go out with the entry point's result;
        otherwise they are written through the responder set by the transport. ``now_ns``:
        the caller's clock reading, used instead of the session's clock outside an entry
        point (inside one, the entry point's time is used).
        """
        message.header.pop(43, None)
        message.header.pop(122, None)
        outside = self._depth == 0
        if outside:
            self._enter(self._clock.now_ns() if now_ns is None else now_ns)
        try:
            ok = self._send_raw(message)
        finally:
            if outside:
                self._depth -= 1
                responder = self._responder
                if responder is not None and self._out:
                    out = self._out
                    self._out = []
                    for data in out:
                        responder(data)
        return ok

    def template(
        self, msg_type: bytes | str, fields: Sequence[tuple[int, bytes | None]]
    ) -> AppTemplate:
        """Return an :class:`AppTemplate` for application messages of a fixed layout.

        Parameters
        ----------
        msg_type : bytes or str
            MsgType <35>; session-level types are refused.
        fields : sequence of (tag, value or None)
            Body fields (no header fields, no groups); ``None`` marks a value given per send,
            values being given in the order of these slots. Fields are written in ascending
            tag order, as :meth:`send` writes a body.

        Raises
        ------
        ValueError
            For a session-level MsgType or a header or trailer tag among ``fields``.
        """
        mt = to_bytes(msg_type)
        if mt in ADMIN_MSG_TYPES:
            raise ValueError(f"MsgType {mt!r} is session-level: send it through the session")
        given = tuple((t, v) for t, v in fields)
        bad = [t for t, _ in given if t in HEADER_TAGS or t in TRAILER_TAGS]
        if bad:
            raise ValueError(f"header or trailer tags in a template body: {bad}")
        slot_of: list[int] = []  # per field: its slot number (-1 for constants)
        slots = 0
        for _, v in given:
            slot_of.append(-1 if v is not None else slots)
            slots += v is None
        wire = sorted(range(len(given)), key=lambda k: given[k][0])  # stable, as send() sorts
        body = [given[k] for k in wire]
        order = tuple(slot_of[k] for k in wire if slot_of[k] >= 0)
        header: list[tuple[int, bytes | None]] = [
            (34, None),
            (49, self._sender),
            (52, None),
            (56, self._target),
        ]
        header.extend(self._extra_header)
        header.sort(key=_first)
        encoder = MessageTemplate(self._begin, mt, [*header, *body])
        identity = order == tuple(range(len(order)))
        return AppTemplate(self, mt, given, encoder, None if identity else order)

    def send_template(  # noqa: C901  (one hot path, its checks inlined)
        self, template: AppTemplate, values: Sequence[bytes], now_ns: int | None = None
    ) -> int:
        """Send ``template`` with ``values`` in its slots; like :meth:`send`, faster.

        The message is built as bytes directly, without an :class:`OutMessage`, unless the
        application overrides ``to_app`` (which must see, and may change, the message): then
        this is ``send(template.message(values))``. From inside a callback, the messages it
        gathers go to the transport by :data:`STREAM_EVERY` as they are made.

        Parameters
        ----------
        template : AppTemplate
            A template of this session (:meth:`template`).
        values : sequence of bytes
            One value per slot, in the order of the template's slots.
        now_ns : int, optional
            The caller's clock reading, ns since the epoch, used instead of reading the
            session's clock when called outside an entry point (SendingTime <52>); inside
            one (from a callback) the entry point's time is used, as :meth:`send` does.

        Returns
        -------
        int
            The message's MsgSeqNum <34> when it was sent (or queued for the transport) now;
            0 when not (not logged on, or ``to_app`` raised DoNotSend), so the result tests
            true exactly when it was sent, as the ``bool`` it used to be.

        Raises
        ------
        ValueError
            If the template belongs to another session or ``values`` has the wrong length.
        """
        if template.session is not self:
            raise ValueError("template belongs to another session")
        app = self.app
        if app is not self._plain_app:  # checked once per application object
            if type(app).to_app is not Application.to_app:
                return self._send_message(template.message(values), now_ns)
            self._plain_app = app
        outside = not self._depth  # (== 0: a comparison stored is not specialized)
        if outside:
            self._now = now = self._clock.now_ns() if now_ns is None else now_ns
        else:
            now = self._now
        st = self.state
        store = self.store
        memory = store if type(store) is MemoryStore else None
        seq = memory._sender if memory is not None else store.next_sender_seq_num
        order = template._order
        if order is not None:
            if len(values) != template.slots:
                raise ValueError(f"template takes {template.slots} values, got {len(values)}")
            values = _in_order(values, order)
        ts = self._ts
        if not self._ts_lo <= now < self._ts_hi:  # _timestamp()'s test, inlined
            ts = self._timestamp()
        # template._encoder.encode2(b"%d" % seq, ts, values), inlined (see there): the body
        # in one formatting (see MessageTemplate.pieces()), its arguments one tuple
        # concatenation when the values are a tuple (about 300 instructions fewer than
        # building ``(seq, ts, *values)``, whose list is made, extended and copied).
        body: bytes | None = None
        if type(values) is tuple:  # (a list would raise here: an exception costs ~2k more)
            try:
                body = template._format % ((seq, ts) + values)  # noqa: RUF005
            except TypeError:  # not right: _template_body says what
                body = None
        if body is None:
            body = self._template_body(template, seq, ts, values)
        n = len(body)
        if n <= template._short:  # CheckSum: see AppTemplate._starts
            cs = _adler32(body, template._starts[n]) & 255
            raw = b"".join((template._heads[n], body, template._trailers[cs]))
        else:
            raw = template._encoder.encode2(b"%d" % seq, ts, values)
        st.last_sent_ns = now
        if memory is not None:  # MemoryStore.set and incr_next_sender_seq_num, inlined
            if self._persist:
                tail = memory._tail
                if seq == memory._next and len(tail) < _CHUNK_LAST:  # the next number
                    tail.append(raw)
                    memory._next = seq + 1
                else:
                    memory.set(seq, raw)
            memory._sender = seq + 1
        else:
            if self._persist:
                store.set(seq, raw)
            store.incr_next_sender_seq_num()
        if not (st.received_logon and st.sent_logon):  # st.logged_on, inlined
            return 0
        log = self.log
        if type(log) is not NullLog:
            log.on_outgoing(raw, now)
        out = self._out
        responder = self._responder
        if outside and responder is not None:
            if not out:  # the usual send from outside: straight to the transport
                responder(raw)
                return seq
            out.append(raw)
            self._out = []
            for data in out:
                responder(data)
            return seq
        if not out:
            answer_now = self.answer_now
            if answer_now is not None:  # the answer to a read of one message: at once
                self.answer_now = None
                answer_now(raw)
                return seq
        out.append(raw)
        if len(out) >= STREAM_EVERY and responder is not None:
            self._out = []
            for data in out:
                responder(data)
        return seq

    @staticmethod
    def _template_body(
        template: AppTemplate, seq: int, ts: bytes, values: Sequence[bytes]
    ) -> bytes:
        # send_template's body for values it could not format as a tuple: any sequence, the
        # wrong number of values a ValueError, a value not bytes the formatting's TypeError.
        # (The ValueError is raised outside the handler: no chained TypeError, compiled too.)
        try:
            return template._format % (seq, ts, *values)
        except TypeError:
            if len(values) == template.slots:
                raise
        raise ValueError(f"template takes {template.slots} values, got {len(values)}")

    def _send_message(self, message: OutMessage, now_ns: int | None) -> int:
        # send() for send_template's slow path: the MsgSeqNum when sent, else 0.
        seq = self.store.next_sender_seq_num
        return seq if self.send(message, now_ns=now_ns) else 0

    def drain(self) -> list[bytes]:
        """Return (and forget) bytes produced outside entry points with no responder set."""
        out = self._out
        self._out = []
        return out

    def logout(self, reason: str = "") -> list[bytes]:
        """Start a Logout (QuickFIX ``Session::logout``) and return the bytes to send."""
        self._enter(self._clock.now_ns())
        try:
            if self.state.logged_on and not self.state.sent_logout:
                self._generate_logout(reason)
        except Exception as e:
            self._crash(e)
        return self._leave()

    def reset(self, now_ns: int) -> list[bytes]:
        """Log out if logged on, disconnect, and reset both sequence numbers to 1."""
        self._enter(now_ns)
        try:
            self._reset()
        except Exception as e:
            self._crash(e)
        return self._leave()

    # ------------------------------------------------------------------ helpers

    def _event(self, text: str) -> None:
        self.log.on_event(text, self._now)

    def _crash(self, e: Exception) -> None:
        _log.exception("%s: unexpected error", self.session_id)
        self._event(f"Unexpected error: {e!r}; disconnecting")
        self._disconnect()

    def _in_session(self, now_ns: int) -> bool:
        return self.schedule is None or self.schedule.is_in_session(now_ns)

    def _check_session_time(self) -> bool:
        if self.schedule is None:
            return True
        # One schedule evaluation per second is plenty (QuickFIX's clock has 1 s resolution).
        key = (self._now // _NS, self.store.creation_time_ns)
        if key != self._schedule_checked:
            self._schedule_ok = self.schedule.is_same_session(self._now, key[1])
            self._schedule_checked = key
        return self._schedule_ok

    def _reset(self) -> None:
        if self.state.logged_on and not self.state.sent_logout:
            self._generate_logout()
        self._disconnect()
        self.store.reset(self._now)
        self._event("Session reset")

    def _disconnect(self) -> None:
        st = self.state
        if st.connected and not self.wants_disconnect:
            self._event("Disconnecting")
        self.wants_disconnect = True
        if st.received_logon or st.sent_logon:
            st.received_logon = False
            st.sent_logon = False
            try:
                self.app.on_logout(self.session_id)
            except Exception:
                _log.exception("%s: on_logout failed", self.session_id)
        was_connected = st.connected
        st.clear_connection()
        if self.config.reset_on_disconnect and was_connected:
            st.connected = False
            self.store.reset(self._now)

    def _timestamp(self) -> bytes:
        # SendingTime changes once per unit of the precision (a millisecond by default):
        # format it once per unit, not once per message.
        now = self._now
        if not self._ts_lo <= now < self._ts_hi:
            unit = self._ts_unit
            self._ts_lo = lo = now // unit * unit
            self._ts_hi = lo + unit
            self._ts = format_timestamp(now, self._precision)
        return self._ts

    def _emit(self, raw: bytes) -> None:
        log = self.log
        if type(log) is not NullLog:
            log.on_outgoing(raw, self._now)
        out = self._out
        if not out:
            answer_now = self.answer_now
            if answer_now is not None:  # (see send_template)
                self.answer_now = None
                answer_now(raw)
                return
        out.append(raw)

    def _encode(
        self,
        msg: OutMessage,
        seq: int,
        extra: list[Field] | None = None,
        *,
        sort_body: bool = True,
    ) -> bytes:
        if not msg.header and not extra and not self._extra_header:
            # The common case: only the four fields the session fills, already in order.
            head = self._head % (msg.msg_type, seq, self._timestamp())
            return finish(self._begin, head + encode_body(msg.body, sort_body))
        header: list[Field] = [
            (34, b"%d" % seq),
            (49, self._sender),
            (52, self._timestamp()),
            (56, self._target),
        ]
        header.extend(self._extra_header)
        if msg.header:
            header.extend(msg.header.items())
        if extra:
            header.extend(extra)
        return encode(self._begin, msg.msg_type, header, msg.body, sort_body=sort_body)

    def _send_raw(self, msg: OutMessage, num: int = 0) -> bool:
        st = self.state
        store = self.store
        st.last_sent_ns = self._now
        seq = num or store.next_sender_seq_num
        mt = msg.msg_type
        if mt in ADMIN_MSG_TYPES:
            self.app.to_admin(msg, self.session_id)
            if mt == b"A" and not st.received_reset:
                flag = msg.get(141) == b"Y"
                if flag:
                    store.reset(self._now)
                    seq = store.next_sender_seq_num
                st.sent_reset = flag
            raw = self._encode(msg, seq)
            ok = mt in (b"A", b"5", b"2", b"4") or st.logged_on
        else:
            try:
                self.app.to_app(msg, self.session_id)
            except DoNotSend:
                return False
            if Group in map(type, msg.body):
                self._order_groups(msg)
            raw = self._encode(msg, seq)
            ok = st.logged_on
        if not num:
            if self.config.persist_messages:
                store.set(seq, raw)
            store.incr_next_sender_seq_num()
        if ok:
            self._emit(raw)
        return ok

    # ------------------------------------------------------------------ inbound

    def _validate(self, msg: FixMessage) -> ValidationIssue | None:
        dd = self._session_dd
        if dd is None:
            return None
        layouts = self.layouts
        assert layouts is not None
        checked = msg.checked
        if checked == layouts.valid:  # proven valid by the decoder's kernel
            return None
        unknown = layouts.base + LAYOUT_UNKNOWN
        block = msg._b
        if checked == unknown and self._rechecked != (id(block), len(layouts)):
            # Decoded before a layout was kept (the rest of a session's first read): the
            # kernel proves what it can of the block now, once per block and table size.
            self._rechecked = (id(block), len(layouts))
            try:
                checked = layouts.recheck(block, msg._k)
            except Exception:  # a shortcut must never cost the session its connection
                _log.exception("%s: layouts not checked again", self.session_id)
            if checked == layouts.valid:
                return None
        app_dd = self._app_dd(msg) if self._is_fixt else None
        if self._is_fixt and app_dd is None and not dd.is_msg_type(msg.msg_type.decode("latin-1")):
            return None
        issue = validate_message(msg, dd, app_dd, self._validation)
        if issue is None and checked == unknown:
            # A layout the kernel has not seen, found valid: the kernel checks the next ones
            # (those of this read already decoded by the recheck above, once the table grew).
            try:
                layouts.add(msg.tags, msg.get(35) or b"", layout_program(msg, dd, app_dd))
            except Exception:  # a shortcut must never cost the session its connection
                _log.exception("%s: layout not kept for the decoder", self.session_id)
        return issue

    def _next(self, msg: FixMessage, queued: bool, row: Sequence[int] | None = None) -> None:
        st = self.state
        # An application message whose header the decoder's kernel read (row): its MsgType
        # is not needed unless the fast path declines (any non-admin value means the same to
        # the handlers below).
        fast = row is not None and row[_HEAD] & _HEAD_FAST_MASK == _HEAD_FAST
        head = None if fast else msg.session_header()
        mt = _NOT_ADMIN if fast else head[1] if head is not None else (msg.get(35) or b"")
        try:
            if self.schedule is not None and not self._check_session_time():
                self._reset()
                return
            if fast:
                assert row is not None
                if not self._next_app_read(msg, row):
                    self._dispatch(msg, msg.get(35) or b"")
            elif head is None or not self._next_app_in_sequence(msg, head):
                self._dispatch(msg, mt)
        except _HANDLED as e:
            self._handle(e, msg, mt)
        self._after_next(st, queued)

    def _after_next(self, st: SessionState, queued: bool = False) -> None:
        # The end of _next: the queue (unless this message came from it), then the timer.
        if self.wants_disconnect:
            return
        if not queued and st.queue:
            self._next_queued()
        if st.received_logon and st.sent_logon:  # st.logged_on, inlined
            if self.enabled and self.schedule is None and not st.sent_logout:
                # _next_timer's usual answer, inlined: nothing due (see there).
                hb = st.heart_bt_int * _NS
                now = self._now
                if hb == 0 or (now - st.last_sent_ns < hb and now - st.last_received_ns < hb):
                    return
            self._next_timer()

    def _handle(self, e: Exception, msg: FixMessage, mt: bytes) -> None:
        # _next's answers to what processing a message raised (QuickFIX's catch clauses).
        if isinstance(e, FieldNotFound):
            if self._fix42_plus and mt not in ADMIN_MSG_TYPES:
                self._logex(self._generate_business_reject, msg, 5, e.tag)
            else:
                self._logex(self._generate_reject, msg, 1, e.tag)
                if mt == b"A":
                    self._event("Required field missing from logon")
                    self._disconnect()
        elif isinstance(e, IncorrectTagValue):
            self._logex(self._generate_reject, msg, 5, e.tag)
        elif isinstance(e, IncorrectDataFormat):
            self._logex(self._generate_reject, msg, 6, e.tag)
        elif isinstance(e, UnsupportedMessageType):
            if self._fix42_plus:
                self._logex(self._generate_business_reject, msg, 3, 0)
            else:
                self._logex(self._generate_text_reject, msg, "Unsupported message type")
        elif isinstance(e, RejectLogon):
            self._event(str(e))
            self._generate_logout(str(e))
            self._disconnect()
        elif isinstance(e, _UnsupportedVersion):
            if mt == b"5":
                self._next_logout(msg)
            else:
                self._generate_logout("Incorrect BeginString")
                self.store.incr_next_target_seq_num()
        elif isinstance(e, _Disconnect):
            self._event(str(e))
            self._disconnect()

    def _dispatch(self, msg: FixMessage, mt: bytes) -> None:  # noqa: C901  (QuickFIX's order)
        if msg.get(49) is None:
            raise FieldNotFound(49)
        if msg.get(56) is None:
            raise FieldNotFound(56)
        if msg.get(8) != self._begin:
            raise _UnsupportedVersion
        if mt == b"A" and self._is_fixt:
            v = msg.get(1137)
            if v is None:
                raise FieldNotFound(1137)
            appl = normalize_appl_ver_id(v.decode("latin-1"))
            if appl != self._target_appl_ver_id and self.layouts is not None:
                self.layouts.clear()  # layouts without ApplVerID <1128> meant the old default
            self._target_appl_ver_id = appl
            if not self._sender_appl_ver_id:
                self._sender_appl_ver_id = self._target_appl_ver_id
        issue = self._validate(msg) if self._session_dd is not None else None
        if issue is not None:
            self._on_issue(msg, mt, issue)
        elif mt not in ADMIN_MSG_TYPES:
            if self._verify(msg):
                self.store.incr_next_target_seq_num()
        elif mt == b"A":
            self._next_logon(msg)
        elif mt == b"0":
            self._next_heartbeat(msg)
        elif mt == b"1":
            self._next_test_request(msg)
        elif mt == b"4":
            self._next_sequence_reset(msg)
        elif mt == b"5":
            self._next_logout(msg)
        elif mt == b"2":
            self._next_resend_request(msg)
        elif mt == b"3":
            self._next_reject(msg)

    def _next_app_in_sequence(
        self, msg: FixMessage, head: tuple[bytes, bytes, bytes, bytes, bytes, bytes]
    ) -> bool:
        # The common case in one go: an application message in the standard header layout,
        # logged on, no resend outstanding, in sequence, on time, from the expected CompIDs and
        # (with a dictionary) valid. Every check is free of side effects; when one fails this
        # returns False having changed nothing, and the full dispatch (QuickFIX's order of
        # checks, with its rejects and texts) takes the message.
        begin, mt, seq_raw, sender, sending_time, target = head
        st = self.state
        if (
            mt in ADMIN_MSG_TYPES
            or begin != self._begin
            or not st.received_logon
            or st.resend_range != _NO_RANGE
            or not seq_raw.isdigit()
            or int(seq_raw) != self.store.next_target_seq_num
        ):
            return False
        cfg = self.config
        if cfg.check_comp_id and (sender != self._target or target != self._sender):
            return False
        if cfg.check_latency:
            now_sec = self._now // _NS
            # Senders stamp many messages alike: check each SendingTime once per second.
            if sending_time != self._good_sending_time or now_sec != self._good_sending_sec:
                ts = parse_timestamp(sending_time)
                if ts is None or abs(now_sec - ts // _NS) > cfg.max_latency:
                    return False
                self._good_sending_time = sending_time
                self._good_sending_sec = now_sec
        if self._session_dd is not None and self._validate(msg) is not None:
            return False
        # From here on exactly what _verify and _next do for a message that passes.
        st.last_received_ns = self._now
        st.test_request = 0
        self.app.from_app(msg, self.session_id)
        self.store.incr_next_target_seq_num()
        return True

    def _next_app_read(self, msg: FixMessage, row: Sequence[int]) -> bool:
        # _next_app_in_sequence for a message whose header the decoder's kernel read: the
        # standard layout, BeginString, MsgSeqNum and SendingTime parsed, not admin (HEAD_FAST,
        # checked by the caller); the same checks on its numbers, the same effects.
        st = self.state
        if (
            not st.received_logon
            or st.resend_range != _NO_RANGE
            or row[_SEQ] != self.store.next_target_seq_num
        ):
            return False
        cfg = self.config
        if cfg.check_comp_id and not row[_HEAD] & _HEAD_COMP_IDS:
            return False
        if cfg.check_latency and abs(self._now // _NS - row[_SENT] // _NS) > cfg.max_latency:
            return False
        if self._session_dd is not None and self._validate(msg) is not None:
            return False
        st.last_received_ns = self._now
        st.test_request = 0
        self.app.from_app(msg, self.session_id)
        self.store.incr_next_target_seq_num()
        return True

    def expected_header(self) -> tuple[bytes, bytes, bytes]:
        """Return the BeginString, SenderCompID and TargetCompID the counterparty must send.

        The transport has its decoder read every header against them
        (:meth:`engine.fix.codec.FixDecoder.expect_header`) and hands the rows to
        :meth:`on_messages`.
        """
        return self._begin, self._target, self._sender

    def _logex(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except (_NotLoggedOn, _Disconnect, FieldNotFound) as e:  # QuickFIX's LOGEX
            self._event(str(e) or type(e).__name__)

    def _on_issue(self, msg: FixMessage, mt: bytes, issue: ValidationIssue) -> None:
        if issue.kind is IssueKind.INCORRECT_BEGIN_STRING:
            raise _UnsupportedVersion
        if issue.kind is IssueKind.BUSINESS_REJECT:
            self._logex(self._generate_business_reject, msg, issue.reason, issue.ref_tag or 0)
            return
        self._logex(self._generate_reject, msg, issue.reason, issue.ref_tag or 0, issue.text)
        if mt == b"A" and not self.state.received_logon:
            self._event("Logon message is not valid")
            self._disconnect()

    def _next_queued(self) -> None:
        st = self.state
        while st.queue and not self.wants_disconnect:
            num = self.store.next_target_seq_num
            msg = st.queue.pop(num, None)
            if msg is None:
                return
            self._event(f"Processing QUEUED message: {num}")
            mt = msg.msg_type
            if mt in (b"A", b"2"):
                self.store.incr_next_target_seq_num()
            else:
                self._next(msg, queued=True)

    def _valid_logon_state(self, mt: bytes) -> bool:
        st = self.state
        if (mt == b"A" and st.sent_reset) or st.received_reset:
            return True
        if (mt == b"A" and not st.received_logon) or (mt != b"A" and st.received_logon):
            return True
        if mt == b"5" and st.sent_logon:
            return True
        if mt != b"5" and st.sent_logout:
            return True
        return mt == b"4"

    def _is_good_time(self, sending_time: bytes) -> bool:
        if not self.config.check_latency:
            return True
        ts = parse_timestamp(sending_time)
        if ts is None:
            raise _Disconnect("SendingTime is not a UTCTimestamp")
        return abs(self._now // _NS - ts // _NS) <= self.config.max_latency

    def _verify(  # noqa: C901  (QuickFIX Session::verify, check by check)
        self, msg: FixMessage, check_too_high: bool = True, check_too_low: bool = True
    ) -> bool:
        st = self.state
        mt = msg.get(35) or b""
        try:
            sender = msg.get(49)
            target = msg.get(56)
            sending_time = msg.get(52)
            # QuickFIX's FIELD_GET_REF: a missing field is FieldNotFound, which _next answers
            # (Reject 373=1, or BusinessMessageReject 380=5 for an application message on
            # FIX.4.2+). Only reachable when validation did not require the field already
            # (no dictionary, or a FIXT application message: see validation._required).
            if sender is None:
                raise FieldNotFound(49)
            if target is None:
                raise FieldNotFound(56)
            if sending_time is None:
                raise FieldNotFound(52)
            seq = 0
            if check_too_high or check_too_low:
                s = msg.seq_num
                if s is None:
                    if msg.get(34) is None:
                        raise FieldNotFound(34)
                    raise _Disconnect("MsgSeqNum is not a number")
                if s > SEQNUM_MAX:
                    # Past 64 bits: not a sequence number at all (the dictionary check refuses
                    # it the same way), never a gap to ask a resend for. Not counted.
                    self._generate_reject(msg, 6, 34)
                    return False
                seq = s
            if not self._valid_logon_state(mt):
                raise _Disconnect("Logon state is not valid for message")
            if not self._is_good_time(sending_time):
                self._generate_reject(msg, 10)
                self._generate_logout()
                return False
            if self.config.check_comp_id and (sender != self._target or target != self._sender):
                self._generate_reject(msg, 9)
                self._generate_logout()
                return False
            expected = self.store.next_target_seq_num
            if check_too_high and seq > expected:
                self._do_target_too_high(msg, seq)
                return False
            if check_too_low and seq < expected:
                self._do_target_too_low(msg, seq)
                return False
            if (check_too_high or check_too_low) and st.resend_requested:
                begin, end = st.resend_range
                if seq >= end:
                    self._event(
                        f"ResendRequest for messages FROM: {begin} TO: {end} has been satisfied."
                    )
                    st.resend_range = (0, 0)
        except (_Disconnect, _NotLoggedOn) as e:
            self._event(str(e) or type(e).__name__)
            self._disconnect()
            return False
        st.last_received_ns = self._now
        st.test_request = 0
        if mt in ADMIN_MSG_TYPES:
            self.app.from_admin(msg, self.session_id)
        else:
            self.app.from_app(msg, self.session_id)
        return True

    def _do_target_too_high(self, msg: FixMessage, seq: int) -> None:
        st = self.state
        self._event(
            f"MsgSeqNum too high, expecting {self.store.next_target_seq_num} but received {seq}"
        )
        st.queue[seq] = msg
        if st.resend_requested:
            begin, end = st.resend_range
            if not self.config.send_redundant_resend_requests and seq >= begin:
                self._event(
                    f"Already sent ResendRequest FROM: {begin} TO: {end}.  Not sending another."
                )
                return
        self._generate_resend_request(seq)

    def _do_target_too_low(self, msg: FixMessage, seq: int) -> None:
        if msg.get(43) != b"Y":
            text = (
                f"MsgSeqNum too low, expecting {self.store.next_target_seq_num} but received {seq}"
            )
            self._generate_logout(text)
            raise _Disconnect(text)
        self._do_poss_dup(msg)

    def _do_poss_dup(self, msg: FixMessage) -> bool:
        if msg.msg_type == b"4":
            return True
        orig = msg.get(122)
        if orig is None:
            self._generate_reject(msg, 1, 122)
            return False
        orig_ns = parse_timestamp(orig)
        sending_ns = parse_timestamp(msg.get(52) or b"")
        if orig_ns is None or sending_ns is None:
            self._generate_reject(msg, 6, 122)
            return False
        if orig_ns > sending_ns:
            self._generate_reject(msg, 10)
            self._generate_logout()
            return False
        return True

    # ------------------------------------------------------------------ _next_* (admin)

    def _next_logon(self, logon: FixMessage) -> None:  # noqa: C901  (QuickFIX Session::nextLogon)
        st = self.state
        cfg = self.config
        if cfg.refresh_on_logon:
            self.store.refresh()
        if not self.enabled:
            self._event("Session is not enabled for logon")
            self._disconnect()
            return
        if not self._in_session(self._now):
            self._event("Received logon outside of valid logon time")
            self._disconnect()
            return
        reset_flag = logon.get(141) == b"Y"
        if reset_flag and logon.seq_num != 1:
            # The spec: a Logon with ResetSeqNumFlag <141> = Y restarts both sides at 1 and is
            # itself MsgSeqNum <34> = 1. Any other number is refused before anything is reset
            # (QuickFIX would reset, then count from the Logon's own number: a gap of nothing).
            got = (logon.get(34) or b"").decode("latin-1")
            text = f"MsgSeqNum must be 1 in a Logon with ResetSeqNumFlag=Y, received {got}"
            self._event(text)
            self._generate_logout(text)
            self._disconnect()
            return
        st.received_reset = reset_flag
        if reset_flag:
            self._event("Logon contains ResetSeqNumFlag=Y, reseting sequence numbers to 1")
            if not st.sent_reset:
                self.store.reset(self._now)
        if st.should_send_logon and not reset_flag:
            self._event("Received logon response before sending request")
            self._disconnect()
            return
        if not st.initiate and cfg.reset_on_logon:
            self.store.reset(self._now)
        if not self._verify(logon, False, True):
            return
        st.received_logon = True
        if not st.initiate or (st.received_reset and not st.sent_reset):
            hb = logon.get_int(108)
            if hb is not None:
                st.heart_bt_int = hb
            self._event("Received logon request")
            self._generate_logon_response(logon)
            self._event("Responding to logon request")
        else:
            self._event("Received logon response")
        st.sent_reset = False
        st.received_reset = False
        seq = logon.seq_num or 0
        if seq > self.store.next_target_seq_num and not reset_flag:
            self._do_target_too_high(logon, seq)
        else:
            self.store.incr_next_target_seq_num()
            self._next_queued()
        if st.logged_on:
            self.app.on_logon(self.session_id)

    def _next_heartbeat(self, msg: FixMessage) -> None:
        if not self._verify(msg):
            return
        self.store.incr_next_target_seq_num()
        self._next_queued()

    def _next_test_request(self, msg: FixMessage) -> None:
        if not self._verify(msg):
            return
        self._generate_heartbeat(msg.get(112))
        self.store.incr_next_target_seq_num()
        self._next_queued()

    def _next_reject(self, msg: FixMessage) -> None:
        if not self._verify(msg):
            return
        self.store.incr_next_target_seq_num()
        self._next_queued()

    def _next_logout(self, msg: FixMessage) -> None:
        if not self._verify(msg, False, False):
            return
        if not self.state.sent_logout:
            self._event("Received logout request")
            self._generate_logout()
            self._event("Sending logout response")
        else:
            self._event("Received logout response")
        self.store.incr_next_target_seq_num()
        if self.config.reset_on_logout:
            self.store.reset(self._now)
        self._disconnect()

    def _next_sequence_reset(self, msg: FixMessage) -> None:
        gap_fill = msg.get(123) == b"Y"
        if not self._verify(msg, gap_fill, gap_fill):
            return
        new_seq = msg.get_int(36)
        if new_seq is None:
            return
        if new_seq > SEQNUM_MAX:
            self._generate_reject(msg, 6, 36)
            return
        expected = self.store.next_target_seq_num
        self._event(f"Received SequenceReset FROM: {expected} TO: {new_seq}")
        if new_seq > expected:
            self.store.set_next_target_seq_num(new_seq)
        elif new_seq < expected:
            self._generate_reject(msg, 5)

    def _next_resend_request(self, msg: FixMessage) -> None:
        if not self._verify(msg, False, False):
            return
        begin = msg.get_int(7) or 0
        end = msg.get_int(16) or 0
        self._event(f"Received ResendRequest FROM: {begin} TO: {end}")
        next_sender = self.store.next_sender_seq_num
        if (
            (self._fix42_plus and end == 0)
            or (self._bs <= "FIX.4.2" and end == 999999)
            or end >= next_sender
        ):
            end = next_sender - 1
        self._resend(begin, end)
        seq = msg.seq_num or 0
        if seq == self.store.next_target_seq_num:
            self.store.incr_next_target_seq_num()

    def _resend(self, begin: int, end: int) -> None:
        if begin < 1:
            begin = 1
        next_sender = self.store.next_sender_seq_num
        if not self.config.persist_messages:
            self._generate_sequence_reset(begin, min(end + 1, next_sender))
            return
        gap_start = 0
        current = begin
        for seq, raw in self.store.get_range(begin, end):
            stored = decode_one(raw)
            if stored is None or stored.msg_type in ADMIN_MSG_TYPES:
                if not gap_start:
                    gap_start = current
                current = seq + 1
                continue
            out = self._resend_message(stored, seq)
            if out is None:
                if not gap_start:
                    gap_start = current
            else:
                if gap_start:
                    self._generate_sequence_reset(gap_start, seq)
                    gap_start = 0
                elif current != seq:
                    self._generate_sequence_reset(current, seq)
                self._emit(out)
                self._event(f"Resending Message: {seq}")
            current = seq + 1
        if current <= end and not gap_start:
            gap_start = current
        if gap_start:
            self._generate_sequence_reset(gap_start, min(end + 1, next_sender))

    def _resend_message(self, stored: FixMessage, seq: int) -> bytes | None:
        header: dict[int, bytes] = {}
        body: list[BodyEntry] = []
        orig = b""
        for t, v in stored.pairs:
            if t in HEADER_TAGS:
                if t == 52:
                    orig = v
                elif t not in (8, 9, 35, 34, 49, 56, 43, 122):
                    header[t] = v
            elif t not in (10, 93, 89):
                body.append((t, v))
        header[43] = b"Y"
        header[122] = _match_precision(orig, self._precision)
        msg = OutMessage(stored.msg_type)
        msg.header = header
        msg.body = body
        try:
            self.app.resend_app(msg, self.session_id)
        except DoNotSend:
            return None
        return self._encode(msg, seq, sort_body=False)

    # ------------------------------------------------------------------ timers

    def _next_timer(self) -> None:  # noqa: C901  (QuickFIX Session::next)
        st = self.state
        now = self._now
        if self.enabled and self.schedule is None and st.received_logon and not st.sent_logout:
            # Nothing due (the usual answer, asked after every message): no logout pending,
            # and something was both sent and received within HeartBtInt.
            hb = st.heart_bt_int * _NS
            if hb == 0 or (now - st.last_sent_ns < hb and now - st.last_received_ns < hb):
                return
        if not self.enabled:
            if st.logged_on:
                if not st.sent_logout:
                    self._event("Initiated logout request")
                    self._generate_logout(st.logout_reason)
            else:
                return
        if not self._check_session_time():
            self._reset()
            return
        if not st.received_logon:
            if st.should_send_logon and self._in_session(now):
                self._generate_logon()
                self._event("Initiated logon request")
            elif st.sent_logon and st.logon_timed_out(now):
                self._event("Timed out waiting for logon response")
                self._disconnect()
            return
        if st.heart_bt_int == 0:
            return
        if st.logout_timed_out(now):
            self._event("Timed out waiting for logout response")
            self._disconnect()
            return
        if st.within_heartbeat(now):
            return
        if st.timed_out(now):
            self._event("Timed out waiting for heartbeat")
            self._disconnect()
        elif st.need_test_request(now):
            self._generate_test_request(b"TEST")
            st.test_request += 1
            self._event("Sent test request TEST")
        elif st.need_heartbeat(now):
            self._generate_heartbeat()

    # ------------------------------------------------------------------ _generate_*

    def _generate_logon(self) -> None:
        st = self.state
        cfg = self.config
        if cfg.refresh_on_logon:
            self.store.refresh()
        if cfg.reset_on_logon:
            self.store.reset(self._now)
        msg = OutMessage(b"A", [(98, b"0"), (108, b"%d" % st.heart_bt_int)])
        if self._should_send_reset():
            msg.set(141, b"Y")
        if self._is_fixt and self._sender_appl_ver_id:
            msg.set(1137, self._sender_appl_ver_id)
        if cfg.send_next_expected_msg_seq_num:  # QuickFIX's generateLogon
            msg.set(789, b"%d" % self.store.next_target_seq_num)
        st.last_received_ns = self._now
        st.test_request = 0
        st.sent_logon = True
        self._send_raw(msg)

    def _should_send_reset(self) -> bool:
        cfg = self.config
        return (
            self._fix41_plus
            and (
                cfg.send_reset_seq_num_flag
                or cfg.reset_on_logon
                or cfg.reset_on_logout
                or cfg.reset_on_disconnect
            )
            and self.store.next_sender_seq_num == 1
            and self.store.next_target_seq_num == 1
        )

    def _generate_logon_response(self, logon: FixMessage) -> None:
        msg = OutMessage(
            b"A", [(98, b"0"), (108, logon.get(108) or b"%d" % self.state.heart_bt_int)]
        )
        if self.state.received_reset:
            msg.set(141, b"Y")
        if self._is_fixt and self._sender_appl_ver_id:
            msg.set(1137, self._sender_appl_ver_id)
        if self.config.send_next_expected_msg_seq_num:
            # The Logon being answered is not counted yet (QuickFIX: expected target + 1).
            msg.set(789, b"%d" % (self.store.next_target_seq_num + 1))
        self._send_raw(msg)
        self.state.sent_logon = True

    def _generate_heartbeat(self, test_req_id: bytes | None = None) -> None:
        msg = OutMessage(b"0")
        if test_req_id is not None:
            msg.body.append((112, test_req_id))
        self._send_raw(msg)

    def _generate_test_request(self, test_req_id: bytes) -> None:
        self._send_raw(OutMessage(b"1", [(112, test_req_id)]))

    def _generate_resend_request(self, seq: int) -> None:
        begin = self.store.next_target_seq_num
        end = 0 if self._fix42_plus else 999999
        self._send_raw(OutMessage(b"2", [(7, b"%d" % begin), (16, b"%d" % end)]))
        self._event(f"Sent ResendRequest FROM: {begin} TO: {end}")
        self.state.resend_range = (begin, seq - 1)

    def _generate_sequence_reset(self, begin: int, new_seq: int) -> None:
        msg = OutMessage(b"4", [(36, b"%d" % new_seq), (123, b"Y")])
        msg.header[43] = b"Y"
        msg.header[122] = self._timestamp()
        self._send_raw(msg, num=begin)
        self._event(f"Sent SequenceReset TO: {new_seq}")

    def _generate_logout(self, text: str = "") -> None:
        msg = OutMessage(b"5")
        if text:
            msg.body.append((58, text.encode("latin-1", "replace")))
        self._send_raw(msg)
        self.state.sent_logout = True

    def _reverse_route(self, msg: FixMessage, out: OutMessage) -> None:
        pairs = _REVERSE_ROUTE + _REVERSE_ROUTE_41 if self._fix41_plus else _REVERSE_ROUTE
        for src, dst in pairs:
            v = msg.get(src)
            if v:
                out.header[dst] = v

    def _generate_reject(
        self, msg: FixMessage, err: int, field: int = 0, text: str | None = None
    ) -> None:
        st = self.state
        reject = OutMessage(b"3")
        self._reverse_route(msg, reject)
        mt = msg.get(35) or b""
        seq_raw = msg.get(34)
        if seq_raw:
            reject.body.append((45, seq_raw))
        if self._fix42_plus:
            if mt:
                reject.body.append((372, mt))
            if (self._bs == "FIX.4.2" and err <= 11) or self._bs > "FIX.4.2":
                reject.body.append((373, b"%d" % err))
        seq = msg.seq_num
        if mt not in (b"A", b"4") and seq == self.store.next_target_seq_num:
            self.store.incr_next_target_seq_num()
        reason = text if text is not None else REJECT_TEXTS.get(err)
        if reason and (field or err == 0):
            if self._fix42_plus:
                reject.body.append((371, b"%d" % field))
                reject.body.append((58, reason.encode()))
            else:
                reject.body.append((58, f"{reason} ({field})".encode()))
        elif reason:
            reject.body.append((58, reason.encode()))
        self._event(f"Message {seq} Rejected: {reason}")
        if not st.received_logon:
            raise _NotLoggedOn("Tried to send a reject while not logged on")
        self._send_raw(reject)

    def _generate_text_reject(self, msg: FixMessage, text: str) -> None:
        reject = OutMessage(b"3")
        self._reverse_route(msg, reject)
        mt = msg.get(35) or b""
        if self._fix42_plus:
            reject.body.append((372, mt))
        reject.body.append((45, msg.get(34) or b"0"))
        if mt not in (b"A", b"4") and msg.get(43) != b"Y":
            self.store.incr_next_target_seq_num()
        reject.body.append((58, text.encode()))
        self._send_raw(reject)
        self._event(f"Message {msg.seq_num} Rejected: {text}")

    def _generate_business_reject(self, msg: FixMessage, err: int, field: int = 0) -> None:
        # QuickFIX's Session::generateBusinessReject: RefMsgType <372>, RefSeqNum <45>,
        # BusinessRejectReason <380> and Text <58>. BusinessMessageReject defines no RefTagID
        # <371> in any version (FIX 4.2 to 5.0 SP2 dictionaries), so the tag goes into the text,
        # "Conditionally Required Field Missing (44)", as QuickFIX's populateRejectReason does;
        # a validating counterparty (ours included) would reject a 371 here. Under FIXT.1.1 the
        # body also carries DefaultApplVerID <1137>, our own (QuickFIX's m_senderDefaultApplVerID,
        # FIX.5.0 = 7 when none is known), so the counterparty can parse the reject's body.
        seq_raw = msg.get(34)
        if seq_raw is None:  # QuickFIX: getField<MsgSeqNum>() throws; nothing is sent
            raise FieldNotFound(34)
        reject = OutMessage(b"j")
        if self._is_fixt:
            reject.body.append((1137, (self._sender_appl_ver_id or "7").encode()))
        reject.body.append((372, msg.get(35) or b""))
        reject.body.append((45, seq_raw))
        reject.body.append((380, b"%d" % err))
        seq = msg.seq_num
        if seq == self.store.next_target_seq_num:
            self.store.incr_next_target_seq_num()
        reason = BUSINESS_REJECT_TEXTS.get(err)
        if reason and field:
            reject.body.append((58, f"{reason} ({field})".encode()))
            self._event(f"Message {seq} Rejected: {reason}:{field}")
        elif reason:
            reject.body.append((58, reason.encode()))
            self._event(f"Message {seq} Rejected: {reason}")
        else:
            self._event(f"Message {seq} Rejected")
        self._send_raw(reject)


def _in_order(values: Sequence[bytes], order: tuple[int, ...]) -> tuple[bytes, ...]:
    # A template's values in wire order. (A comprehension written in send_template would make
    # ``values`` a cell there, created on every call: ~250 instructions per send.)
    return tuple([values[k] for k in order])


def _match_precision(ts: bytes, precision: int) -> bytes:
    # OrigSendingTime <122> keeps the original time at the session's precision.
    if not ts:
        return ts
    base = ts[:17]
    if precision <= 0:
        return base
    frac = ts[18:] if len(ts) > 18 else b""
    return base + b"." + (frac + b"000000000")[:precision]


def _entry_tag(e: BodyEntry) -> int:
    return e.tag if isinstance(e, Group) else e[0]


def _sort_groups(entries: list[BodyEntry], groups: Mapping[int, GroupDef]) -> None:
    for e in entries:
        if isinstance(e, Group):
            g = groups.get(e.tag)
            if g is None:
                continue
            order = g.order
            for entry in e.entries:
                entry.sort(key=lambda x: order.get(_entry_tag(x), 1 << 30))
                _sort_groups(entry, g.groups)


def _collect_groups(groups: Mapping[int, GroupDef], out: dict[int, tuple[int, ...]]) -> None:
    for tag, g in groups.items():
        out[tag] = tuple(f.tag for f in g.fields)
        _collect_groups(g.groups, out)
