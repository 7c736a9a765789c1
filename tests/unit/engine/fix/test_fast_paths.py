# SPDX-License-Identifier: MIT
"""The FIX hot paths give the same results as the general code they shortcut.

Covered: the session's in-sequence application-message path (against the full QuickFIX
dispatch, fuzzed), session templates (against ``send``), ``FixMessage`` header and field
lookups, and the decoder's small-read path.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.application import Application, DoNotSend, SessionID
from engine.fix.codec import FixDecoder, decode_one, encode, format_timestamp
from engine.fix.log import MemoryLog, NullLog
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from tests.factories import assert_answered_alike

S = 1_000_000_000


class Recorder(Application):
    def __init__(self) -> None:
        self.app: list[bytes] = []
        self.admin: list[bytes] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.app.append(message.raw)

    def from_admin(self, message: FixMessage, session_id: SessionID) -> None:
        self.admin.append(message.raw)


def _session(
    clock: TestClock, app: Application | None = None, *, dictionary: bool = False, **kw: object
) -> tuple[FixSession, MemoryLog]:
    log = MemoryLog()
    cfg = SessionSettings(
        begin_string="FIX.4.4",
        sender_comp_id="ISLD",
        target_comp_id="TW",
        use_data_dictionary=dictionary,
        **kw,  # type: ignore[arg-type]
    )
    s = FixSession(cfg, MemoryStore(clock.now_ns()), app or Recorder(), log, clock)
    return s, log


def _msg(
    mt: bytes,
    seq: int,
    now_ns: int,
    body: Sequence[tuple[int, bytes]] = (),
    header: Sequence[tuple[int, bytes]] = (),
    sender: bytes = b"TW",
    target: bytes = b"ISLD",
) -> FixMessage:
    h = [(34, b"%d" % seq), (49, sender), (52, format_timestamp(now_ns, 3)), (56, target)]
    m = decode_one(encode(b"FIX.4.4", mt, h + list(header), list(body)))
    assert m is not None
    return m


def _logon(s: FixSession, clock: TestClock) -> None:
    s.on_connected(clock.now_ns())
    s.on_message(_msg(b"A", 1, clock.now_ns(), [(98, b"0"), (108, b"30")]), clock.now_ns())
    assert s.is_logged_on


NOS_BODY = [
    (11, b"c1"), (21, b"1"), (38, b"100"), (40, b"2"), (44, b"101.25"), (54, b"1"),
    (55, b"AAPL"), (59, b"0"), (60, b"20240102-03:04:05.678"),
]  # fmt: skip


# ------------------------------------------------------------------ FixMessage


def test_session_header_with_standard_layout_returns_raw_values() -> None:
    m = _msg(b"D", 7, 1_700_000_000 * S, NOS_BODY)
    assert m.session_header() == (
        b"FIX.4.4",
        b"D",
        b"7",
        b"TW",
        b"20231114-22:13:20.000",
        b"ISLD",
    )


def test_session_header_with_other_header_fields_first_returns_none() -> None:
    # PossDupFlag <43> sorts between MsgSeqNum and SenderCompID: not the standard layout.
    m = _msg(b"D", 7, 1_700_000_000 * S, NOS_BODY, header=[(43, b"Y")])
    assert m.session_header() is None
    assert m.get(43) == b"Y"


def test_get_returns_first_occurrence_before_and_after_index_is_built() -> None:
    m = FixMessage.from_pairs([(8, b"FIX.4.4"), (55, b"A"), (55, b"B"), (11, b"x")])
    assert m.get(55) == b"A"  # scanned
    assert m.get(99) is None  # scanned, missing
    assert m.get(99, b"d") == b"d"
    for _ in range(6):  # past the scan budget: the index answers
        assert m.get(55) == b"A"
    assert m.get(11) == b"x"
    assert m.get(99) is None
    assert m.get_all(55) == [b"A", b"B"]
    assert 55 in m
    assert 99 not in m


# ------------------------------------------------------------------ inbound fast path


# One inbound message: (MsgType, seq offset from expected, flavour, seconds to advance).
_EVENT = st.tuples(
    st.sampled_from([b"D", b"D", b"D", b"8", b"0", b"1", b"A", b"5"]),
    st.sampled_from([0, 0, 0, 0, 1, 2, -1]),
    st.sampled_from(
        ["plain", "plain", "plain", "possdup", "possresend", "bad_sender", "stale", "bad_body"]
    ),
    st.sampled_from([0, 0, 1, 31]),
)


def _inbound(
    mt: bytes, seq: int, flavour: str, now_ns: int
) -> FixMessage:  # builds the message a fuzz event stands for
    body: list[tuple[int, bytes]] = list(NOS_BODY) if mt in (b"D", b"8") else []
    if mt == b"1":
        body = [(112, b"T1")]
    if mt == b"A":
        body = [(98, b"0"), (108, b"30")]
    header: list[tuple[int, bytes]] = []
    sender = b"TW"
    sent = now_ns
    if flavour == "possdup":
        header = [(43, b"Y"), (122, format_timestamp(now_ns - S, 3))]
    elif flavour == "possresend":
        header = [(97, b"Y")]  # after TargetCompID: still the standard layout
    elif flavour == "bad_sender":
        sender = b"XX"
    elif flavour == "stale":
        sent = now_ns - 500 * S
    elif flavour == "bad_body" and body:
        body = body[1:]  # no ClOrdID: a dictionary reject on D
    return _msg(mt, seq, sent, body, header, sender=sender)


@pytest.mark.interpreted
@pytest.mark.parametrize("dictionary", [False, True])
@settings(max_examples=60, deadline=None)
@given(events=st.lists(_EVENT, min_size=1, max_size=25))
def test_fast_path_matches_full_dispatch(
    dictionary: bool, events: list[tuple[bytes, int, str, int]]
) -> None:
    clock_a = TestClock(1_700_000_000 * S)
    clock_b = TestClock(1_700_000_000 * S)
    app_a, app_b = Recorder(), Recorder()
    fast, log_a = _session(clock_a, app_a, dictionary=dictionary)
    full, log_b = _session(clock_b, app_b, dictionary=dictionary)
    # The reference session never takes the shortcut.
    full._next_app_in_sequence = lambda msg, head: False  # type: ignore[method-assign]
    taken = 0
    real = fast._next_app_in_sequence

    def counting(msg: FixMessage, head: tuple[bytes, bytes, bytes, bytes, bytes, bytes]) -> bool:
        nonlocal taken
        ok = real(msg, head)
        taken += ok
        return ok

    fast._next_app_in_sequence = counting  # type: ignore[method-assign]
    for s, clock in ((fast, clock_a), (full, clock_b)):
        _logon(s, clock)
    for mt, offset, flavour, advance in events:
        outs = []
        for s, clock in ((fast, clock_a), (full, clock_b)):
            clock.advance(advance * S)
            seq = max(1, s.next_target_seq_num + offset)
            outs.append(s.on_message(_inbound(mt, seq, flavour, clock.now_ns()), clock.now_ns()))
            outs.append(s.on_timer(clock.now_ns()))
        assert_answered_alike(outs, fast, full)
        if fast.wants_disconnect:
            break
    assert app_a.app == app_b.app
    assert app_a.admin == app_b.admin
    assert log_a.events == log_b.events
    assert log_a.incoming == log_b.incoming
    assert log_a.outgoing == log_b.outgoing
    fast.close()
    full.close()
    # Plain in-sequence application messages must have gone the fast way.
    if not dictionary and events[0][:3] in ((b"D", 0, "plain"), (b"8", 0, "plain")):
        assert taken >= 1


def test_fast_path_delivers_in_sequence_message_and_advances(test_clock: TestClock) -> None:
    s, log = _session(test_clock)
    _logon(s, test_clock)
    assert s.on_message(_msg(b"D", 2, test_clock.now_ns(), NOS_BODY), test_clock.now_ns()) == []
    assert s.next_target_seq_num == 3
    assert isinstance(s.app, Recorder)
    assert len(s.app.app) == 1
    assert len(log.incoming) == 2
    s.close()


def test_fast_path_with_wrong_comp_id_falls_back_to_reject_and_logout(
    test_clock: TestClock,
) -> None:
    s, _ = _session(test_clock)
    _logon(s, test_clock)
    out = s.on_message(
        _msg(b"D", 2, test_clock.now_ns(), NOS_BODY, sender=b"XX"), test_clock.now_ns()
    )
    types = [dict(m.pairs)[35] for m in FixDecoder().feed(b"".join(out))]
    assert types == [b"3", b"5"]
    assert isinstance(s.app, Recorder)
    assert s.app.app == []
    s.close()


# ------------------------------------------------------------------ templates


class ToApp(Application):
    def __init__(self, drop: bool = False) -> None:
        self.seen: list[bytes] = []
        self.drop = drop

    def to_app(self, message: OutMessage, session_id: SessionID) -> None:
        self.seen.append(message.msg_type)
        if self.drop:
            raise DoNotSend
        message.set(58, b"seen")


ER_FIELDS: list[tuple[int, bytes | None]] = [
    (37, None), (11, None), (17, None), (150, b"0"), (39, b"0"), (54, b"1"), (55, b"AAPL"),
    (6, b"0"), (14, b"0"), (151, b"100"),
]  # fmt: skip


def _er(order: bytes, clordid: bytes, exec_id: bytes) -> OutMessage:
    return OutMessage(
        b"8",
        [
            (37, order), (11, clordid), (17, exec_id), (150, b"0"), (39, b"0"), (54, b"1"),
            (55, b"AAPL"), (6, b"0"), (14, b"0"), (151, b"100"),
        ],
    )  # fmt: skip


@pytest.mark.parametrize("extra", [{}, {"sender_sub_id": "DESK", "target_location_id": "NY"}])
def test_send_template_writes_the_bytes_send_writes(
    test_clock: TestClock, extra: dict[str, str]
) -> None:
    a, _ = _session(test_clock, **extra)
    b, _ = _session(test_clock, **extra)
    for s in (a, b):
        _logon(s, test_clock)
    tmpl = a.template(b"8", ER_FIELDS)
    assert tmpl.slots == 3
    got: list[bytes] = []
    want: list[bytes] = []
    for i in range(3):
        test_clock.advance(1_234_567)
        a.set_responder(got.append)
        b.set_responder(want.append)
        assert a.send_template(tmpl, (b"O%d" % i, b"C%d" % i, b"E%d" % i))
        assert b.send(_er(b"O%d" % i, b"C%d" % i, b"E%d" % i))
    assert got == want
    assert a.next_sender_seq_num == b.next_sender_seq_num == 5
    assert a.store.get_range(2, 4) == b.store.get_range(2, 4)
    a.close()
    b.close()


def test_send_template_inside_a_callback_goes_out_with_the_entry_point(
    test_clock: TestClock,
) -> None:
    class Echo(Application):
        def from_app(self, message: FixMessage, session_id: SessionID) -> None:
            s.send_template(tmpl, (b"O1", message.get(11) or b"", b"E1"))

    s, _ = _session(test_clock, Echo())
    tmpl = s.template("8", ER_FIELDS)
    _logon(s, test_clock)
    out = s.on_message(_msg(b"D", 2, test_clock.now_ns(), NOS_BODY), test_clock.now_ns())
    assert len(out) == 1
    f = dict(FixDecoder().feed(out[0])[0].pairs)
    assert (f[35], f[34], f[11], f[37]) == (b"8", b"2", b"c1", b"O1")
    s.close()


def test_send_template_with_to_app_override_builds_a_message(test_clock: TestClock) -> None:
    app = ToApp()
    s, _ = _session(test_clock, app)
    _logon(s, test_clock)
    out: list[bytes] = []
    s.set_responder(out.append)
    assert s.send_template(s.template(b"8", ER_FIELDS), (b"O1", b"C1", b"E1"))
    assert app.seen == [b"8"]
    assert dict(FixDecoder().feed(out[0])[0].pairs)[58] == b"seen"
    app.drop = True
    assert not s.send_template(s.template(b"8", ER_FIELDS), (b"O2", b"C2", b"E2"))
    assert s.next_sender_seq_num == 3  # a dropped message takes no MsgSeqNum
    s.close()


def test_send_template_when_not_logged_on_stores_but_does_not_send(
    test_clock: TestClock,
) -> None:
    s, _ = _session(test_clock)
    out: list[bytes] = []
    s.set_responder(out.append)
    assert not s.send_template(s.template(b"8", ER_FIELDS), (b"O1", b"C1", b"E1"))
    assert out == []
    assert s.next_sender_seq_num == 2
    assert len(s.store.get_range(1, 1)) == 1
    s.close()


def test_template_refuses_admin_types_header_tags_and_foreign_sessions(
    test_clock: TestClock,
) -> None:
    a, _ = _session(test_clock)
    b, _ = _session(test_clock)
    with pytest.raises(ValueError, match="session-level"):
        a.template(b"0", [(112, None)])
    with pytest.raises(ValueError, match="header or trailer"):
        a.template(b"8", [(52, None)])
    tmpl = a.template(b"8", ER_FIELDS)
    with pytest.raises(ValueError, match="another session"):
        b.send_template(tmpl, (b"O", b"C", b"E"))
    with pytest.raises(ValueError, match="takes 3 values, got 2"):
        a.send_template(tmpl, (b"O", b"C"))
    assert a.next_sender_seq_num == 1  # a failed encode takes no MsgSeqNum
    assert tmpl.message((b"O", b"C", b"E")).get(11) == b"C"
    a.close()
    b.close()


def test_null_log_skips_message_logging_and_other_logs_get_it(test_clock: TestClock) -> None:
    s, log = _session(test_clock)
    _logon(s, test_clock)
    s.on_message(_msg(b"D", 2, test_clock.now_ns(), NOS_BODY), test_clock.now_ns())
    assert len(log.incoming) == 2
    s.log = NullLog("x")
    s.on_message(_msg(b"D", 3, test_clock.now_ns(), NOS_BODY), test_clock.now_ns())
    assert len(log.incoming) == 2
    assert s.next_target_seq_num == 4
    s.close()


# ------------------------------------------------------------------ decoder


def test_decode_batch_small_read_reports_garbled_frame_and_keeps_good_ones() -> None:
    good = encode(b"FIX.4.4", b"0", [(34, b"1"), (49, b"A"), (52, b"x"), (56, b"B")], [])
    bad = good[:-4] + b"000\x01"  # wrong CheckSum
    seen: list[str] = []
    dec = FixDecoder(on_garbled=lambda f: seen.append(f.reason))
    batch = dec.decode_batch(good + bad + good)
    assert [r[4] for r in batch.rows] == [0, 2, 0]
    assert seen == ["CheckSum does not match"]
    assert dec.garbled == 1
    assert batch.message(2).get(35) == b"0"
    assert batch.field_lists()[0][:3].tolist() == [8, 9, 35]
    # A split message waits for its tail.
    assert len(dec.decode_batch(good[:10])) == 0
    assert dec.pending == 10
    assert [m.get(34) for m in dec.feed(good[10:])] == [b"1"]


@pytest.mark.parametrize("precision", [0, 3, 6, 9])
def test_sending_time_follows_the_clock_at_every_precision(precision: int) -> None:
    clock = TestClock(1_700_000_000 * S + 999_000_000)
    s, _ = _session(clock, timestamp_precision=precision)
    _logon(s, clock)
    tmpl = s.template(b"8", ER_FIELDS)
    out: list[bytes] = []
    s.set_responder(out.append)
    steps = [0, 1, 999, 1_000, 400_000, 600_000, 1_000_000, 7, S, 0]
    for step in steps:
        clock.advance(step)
        s.send_template(tmpl, (b"O", b"C", b"E"))
        sent = dict(FixDecoder().feed(out[-1])[0].pairs)[52]
        assert sent == format_timestamp(clock.now_ns(), precision)
    s.close()


def test_latency_check_still_applies_to_a_sending_time_seen_before(test_clock: TestClock) -> None:
    s, _ = _session(test_clock)
    _logon(s, test_clock)
    sent_at = test_clock.now_ns()
    assert s.on_message(_msg(b"D", 2, sent_at, NOS_BODY), test_clock.now_ns()) == []
    test_clock.advance(500 * S)  # the same SendingTime is now far too old
    out = s.on_message(_msg(b"D", 3, sent_at, NOS_BODY), test_clock.now_ns())
    types = [dict(m.pairs)[35] for m in FixDecoder().feed(b"".join(out))]
    assert types == [b"3", b"5"]  # Reject (SendingTime accuracy problem), Logout
    s.close()
