# SPDX-License-Identifier: MIT
"""FixSession driven directly (sans-IO) with a TestClock: logon, timers, gaps, resends."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.application import Application, SessionID
from engine.fix.codec import FixDecoder, decode_one, encode, format_timestamp
from engine.fix.log import MemoryLog
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore

S = 1_000_000_000


class Recorder(Application):
    def __init__(self) -> None:
        self.app: list[FixMessage] = []
        self.logons = 0
        self.logouts = 0

    def on_logon(self, session_id: SessionID) -> None:
        self.logons += 1

    def on_logout(self, session_id: SessionID) -> None:
        self.logouts += 1

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.app.append(message)


class Peer:
    """The counterparty: builds messages stamped with the test clock."""

    def __init__(self, clock: TestClock, begin: bytes = b"FIX.4.4") -> None:
        self.clock = clock
        self.begin = begin

    def msg(
        self,
        mt: str,
        seq: int,
        body: Sequence[tuple[int, bytes]] = (),
        header: Sequence[tuple[int, bytes]] = (),
    ) -> FixMessage:
        h = [
            (34, b"%d" % seq),
            (49, b"TW"),
            (52, format_timestamp(self.clock.now_ns(), 3)),
            (56, b"ISLD"),
        ]
        raw = encode(self.begin, mt.encode(), h + list(header), list(body))
        m = decode_one(raw)
        assert m is not None
        return m


def fields(raw: bytes) -> dict[int, bytes]:
    m = decode_one(raw)
    assert m is not None
    return dict(m.pairs)


def make(clock: TestClock, **kw: object) -> tuple[FixSession, Recorder, MemoryLog]:
    app = Recorder()
    log = MemoryLog()
    cfg = SessionSettings(begin_string="FIX.4.4", sender_comp_id="ISLD", target_comp_id="TW", **kw)  # type: ignore[arg-type]
    s = FixSession(cfg, MemoryStore(clock.now_ns()), app, log, clock)
    return s, app, log


def logon(s: FixSession, peer: Peer, clock: TestClock, hb: int = 30) -> list[bytes]:
    s.on_connected(clock.now_ns())
    return s.on_message(peer.msg("A", 1, [(98, b"0"), (108, b"%d" % hb)]), clock.now_ns())


def test_acceptor_logon_answers_with_logon_and_logs_on(test_clock: TestClock) -> None:
    s, app, _ = make(test_clock)
    out = logon(s, Peer(test_clock), test_clock)
    assert len(out) == 1
    f = fields(out[0])
    assert (f[35], f[34], f[49], f[56], f[108]) == (b"A", b"1", b"ISLD", b"TW", b"30")
    assert s.is_logged_on
    assert app.logons == 1
    assert s.next_target_seq_num == 2


def test_timers_heartbeat_then_test_request_then_disconnect(test_clock: TestClock) -> None:
    s, app, _ = make(test_clock)
    logon(s, Peer(test_clock), test_clock, hb=10)
    test_clock.advance(9 * S)
    assert s.on_timer(test_clock.now_ns()) == []
    test_clock.advance(1 * S)
    (hb,) = s.on_timer(test_clock.now_ns())
    assert fields(hb)[35] == b"0"
    test_clock.advance(2 * S)
    (tr,) = s.on_timer(test_clock.now_ns())
    assert (fields(tr)[35], fields(tr)[112]) == (b"1", b"TEST")
    test_clock.advance(11 * S)
    assert s.on_timer(test_clock.now_ns()) == []
    assert not s.wants_disconnect
    test_clock.advance(1 * S)
    s.on_timer(test_clock.now_ns())
    assert s.wants_disconnect
    assert app.logouts == 1


def test_gap_sends_resend_request_and_processes_queue_in_order(test_clock: TestClock) -> None:
    s, app, _ = make(test_clock)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    nos = [
        (11, b"a"),
        (21, b"1"),
        (38, b"1"),
        (40, b"1"),
        (54, b"1"),
        (55, b"X"),
        (60, format_timestamp(test_clock.now_ns(), 0)),
    ]
    (rr,) = s.on_message(peer.msg("D", 4, nos), test_clock.now_ns())
    f = fields(rr)
    assert (f[35], f[7], f[16]) == (b"2", b"2", b"0")
    assert app.app == []
    s.on_message(peer.msg("D", 2, nos), test_clock.now_ns())
    s.on_message(peer.msg("D", 3, nos), test_clock.now_ns())
    assert [m.seq_num for m in app.app] == [2, 3, 4]
    assert s.next_target_seq_num == 5


def test_seq_too_low_without_possdup_logs_out_and_disconnects(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    s.on_message(peer.msg("0", 2), test_clock.now_ns())
    (lo,) = s.on_message(peer.msg("0", 2), test_clock.now_ns())
    assert fields(lo)[58] == b"MsgSeqNum too low, expecting 3 but received 2"
    assert s.wants_disconnect


def test_resend_request_resends_app_messages_and_gap_fills_admin(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    sent_at = test_clock.now_ns()
    assert s.send(
        OutMessage(
            "8",
            [
                (37, "o"),
                (17, "e"),
                (150, "0"),
                (39, "0"),
                (55, "X"),
                (54, "1"),
                (151, "1"),
                (14, "0"),
                (6, "0"),
            ],
        )
    )
    s.drain()
    test_clock.advance(31 * S)
    s.on_timer(test_clock.now_ns())  # heartbeat 3
    test_clock.advance(1 * S)
    out = s.on_message(peer.msg("2", 2, [(7, b"1"), (16, b"0")]), test_clock.now_ns())
    got = [fields(o) for o in out]
    assert [(g[35], g[34]) for g in got] == [(b"4", b"1"), (b"8", b"2"), (b"4", b"3")]
    assert (got[0][36], got[0][123], got[0][43]) == (b"2", b"Y", b"Y")
    assert got[1][43] == b"Y"
    assert got[1][122] == format_timestamp(sent_at, 3)
    assert got[2][36] == b"4"


def test_initiator_with_reset_on_logon_sends_reset_flag(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock, connection_type="initiator", heart_bt_int=5, reset_on_logon=True)
    s.store.set_next_sender_seq_num(9)
    (out,) = s.on_connected(test_clock.now_ns())
    f = fields(out)
    assert (f[35], f[34], f[108], f[141]) == (b"A", b"1", b"5", b"Y")


def test_validation_reject_names_tag_and_advances(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    (rj,) = s.on_message(peer.msg("0", 2, [(999, b"HI")]), test_clock.now_ns())
    f = fields(rj)
    assert (f[35], f[45], f[58], f[371], f[373]) == (
        b"3",
        b"2",
        b"Invalid tag number",
        b"999",
        b"0",
    )
    assert s.next_target_seq_num == 3


def test_decoded_garbage_before_logon_disconnects(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock)
    s.on_connected(test_clock.now_ns())
    assert s.on_garbled("CheckSum does not match", b"8=FIX.4.4\x01", test_clock.now_ns()) == []
    assert s.wants_disconnect


_KINDS = st.sampled_from(["0", "1", "2", "4", "D", "garbled", "logout_bad", "possdup"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_KINDS, st.integers(-2, 6), st.binary(max_size=12)), max_size=25))
def test_session_fuzzed_inbound_never_raises_and_keeps_accepted(
    ops: list[tuple[str, int, bytes]],
) -> None:
    clock = TestClock()
    s, app, log = make(clock)
    peer = Peer(clock)
    logon(s, peer, clock)
    dec = FixDecoder()
    accepted: list[int] = []
    for kind, delta, raw_junk in ops:
        junk = raw_junk.replace(b"\x01", b"")
        if s.wants_disconnect:
            break
        clock.advance(S // 10)
        seq = max(0, s.next_target_seq_num + delta)
        if kind == "garbled":
            raw = encode(b"FIX.4.4", b"0", [(34, b"%d" % seq)], [(58, junk)])
            for m in dec.feed(raw[:-2] + b"9\x01"):
                s.on_message(m, clock.now_ns())
            s.on_garbled("CheckSum does not match", raw, clock.now_ns())
            continue
        if kind == "possdup":
            msg = peer.msg("0", seq, header=[(43, b"Y"), (122, junk.hex().encode())])
        elif kind == "D":
            msg = peer.msg(
                "D",
                seq,
                [
                    (11, junk.hex().encode() or b"x"),
                    (21, b"1"),
                    (38, b"1"),
                    (40, b"1"),
                    (54, b"1"),
                    (55, b"X"),
                    (60, format_timestamp(clock.now_ns(), 0)),
                ],
            )
        elif kind == "2":
            msg = peer.msg("2", seq, [(7, b"1"), (16, b"0")])
        elif kind == "4":
            msg = peer.msg("4", seq, [(36, b"%d" % (seq + delta))])
        elif kind == "logout_bad":
            msg = peer.msg("5", seq, [(58, junk)])
        else:
            msg = peer.msg(kind, seq, [(112, b"T")] if kind == "1" else [])
        before = len(app.app)
        out = s.on_message(msg, clock.now_ns())
        assert all(decode_one(o) is not None for o in out)
        if len(app.app) > before:
            accepted.append(app.app[-1].seq_num or 0)
    # No internal error was swallowed by the entry points' safety net.
    assert not [e for e in log.events if e.startswith("Unexpected error")]
    # Every application message handed over was accepted once, in increasing MsgSeqNum order.
    assert accepted == sorted(set(accepted))


def test_reset_on_logout_restarts_sequence_numbers(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock, reset_on_logout=True)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    (lo,) = s.on_message(peer.msg("5", 2), test_clock.now_ns())
    assert fields(lo)[35] == b"5"
    assert s.wants_disconnect
    assert (s.next_sender_seq_num, s.next_target_seq_num) == (1, 1)


def test_reset_on_disconnect_restarts_sequence_numbers(test_clock: TestClock) -> None:
    s, app, _ = make(test_clock, reset_on_disconnect=True)
    logon(s, Peer(test_clock), test_clock)
    assert s.next_sender_seq_num == 2
    s.on_disconnected(test_clock.now_ns())
    assert (s.next_sender_seq_num, s.next_target_seq_num) == (1, 1)
    assert app.logouts == 1


def test_without_reset_policies_sequence_numbers_survive_disconnect(test_clock: TestClock) -> None:
    s, _, _ = make(test_clock)
    logon(s, Peer(test_clock), test_clock)
    s.on_disconnected(test_clock.now_ns())
    assert (s.next_sender_seq_num, s.next_target_seq_num) == (2, 2)


def test_daily_schedule_resets_store_when_a_new_day_starts(test_clock: TestClock) -> None:
    import datetime as dt

    from engine.fix.schedule import SessionSchedule

    day = 86_400 * S
    test_clock.set((1_700_000_000 * S // day + 1) * day - 60 * S)  # 23:59:00 UTC
    sched = SessionSchedule(start_time=dt.time(0, 0), end_time=dt.time(0, 0))
    app = Recorder()
    cfg = SessionSettings(begin_string="FIX.4.4", sender_comp_id="ISLD", target_comp_id="TW")
    s = FixSession(cfg, MemoryStore(test_clock.now_ns()), app, MemoryLog(), test_clock, sched)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    s.on_message(peer.msg("0", 2), test_clock.now_ns())
    assert s.next_target_seq_num == 3
    test_clock.advance(61 * S)  # 00:00:01 the next day
    out = s.on_timer(test_clock.now_ns())
    assert [fields(o)[35] for o in out] == [b"5"]
    assert s.wants_disconnect
    assert (s.next_sender_seq_num, s.next_target_seq_num) == (1, 1)
    assert s.store.creation_time_ns == test_clock.now_ns()


def _fixt(clock: TestClock) -> tuple[FixSession, Peer]:
    cfg = SessionSettings(
        begin_string="FIXT.1.1",
        sender_comp_id="ISLD",
        target_comp_id="TW",
        default_appl_ver_id="FIX.5.0SP2",
    )
    return FixSession(cfg, MemoryStore(clock.now_ns()), Recorder(), MemoryLog(), clock), Peer(
        clock, b"FIXT.1.1"
    )


def test_fixt_logon_without_default_appl_ver_id_disconnects_silently(test_clock: TestClock) -> None:
    s, peer = _fixt(test_clock)
    s.on_connected(test_clock.now_ns())
    out = s.on_message(peer.msg("A", 1, [(98, b"0"), (108, b"30")]), test_clock.now_ns())
    assert out == []
    assert s.wants_disconnect


def test_fixt_logon_answers_with_default_appl_ver_id(test_clock: TestClock) -> None:
    s, peer = _fixt(test_clock)
    s.on_connected(test_clock.now_ns())
    (out,) = s.on_message(
        peer.msg("A", 1, [(98, b"0"), (108, b"30"), (1137, b"9")]), test_clock.now_ns()
    )
    f = fields(out)
    assert (f[8], f[35], f[1137]) == (b"FIXT.1.1", b"A", b"9")
    assert s.is_logged_on


def test_possdup_resend_of_missed_message_is_delivered_once(test_clock: TestClock) -> None:
    s, app, _ = make(test_clock)
    peer = Peer(test_clock)
    logon(s, peer, test_clock)
    nos = [
        (11, b"a"),
        (21, b"1"),
        (38, b"1"),
        (40, b"1"),
        (54, b"1"),
        (55, b"X"),
        (60, format_timestamp(test_clock.now_ns(), 0)),
    ]
    s.on_message(peer.msg("D", 3, nos), test_clock.now_ns())  # gap: 2 missing
    orig = format_timestamp(test_clock.now_ns() - S, 3)
    s.on_message(peer.msg("D", 2, nos, header=[(43, b"Y"), (122, orig)]), test_clock.now_ns())
    s.on_message(peer.msg("D", 2, nos, header=[(43, b"Y"), (122, orig)]), test_clock.now_ns())
    assert [m.seq_num for m in app.app] == [2, 3]


def test_a_burst_in_one_call_is_the_same_as_message_by_message(test_clock: TestClock) -> None:
    """``on_messages`` (the transport's call for a read that brought several messages) gives
    the bytes, deliveries and sequence numbers of ``on_message`` called for each, and stops
    at a message after which the session wants its connection closed."""
    nos = [
        (11, b"a"),
        (21, b"1"),
        (38, b"1"),
        (40, b"1"),
        (54, b"1"),
        (55, b"X"),
        (60, format_timestamp(test_clock.now_ns(), 0)),
    ]
    peer = Peer(test_clock)
    burst = [
        peer.msg("D", 2, nos),
        peer.msg("D", 5, nos),  # a gap: ResendRequest, queued
        peer.msg("D", 3, nos),
        peer.msg("D", 4, nos),  # fills the gap: 5 comes out of the queue
        peer.msg("0", 6),
        peer.msg("D", 7, [(11, b"b")]),  # required fields missing: rejected
        peer.msg("D", 8, nos),
        peer.msg("D", 3, nos),  # too low without PossDup: Logout, disconnect
        peer.msg("D", 9, nos),  # never processed
    ]
    results = []
    for together in (False, True):
        s, app, log = make(test_clock)
        logon(s, peer, test_clock)
        if together:
            out = s.on_messages(burst, test_clock.now_ns())
        else:
            out = []
            for m in burst:
                if s.wants_disconnect:
                    break
                out += s.on_message(m, test_clock.now_ns())
        assert s.wants_disconnect
        results.append((
            [fields(raw) | {52: b""} for raw in out],
            [m.seq_num for m in app.app],
            (s.next_sender_seq_num, s.next_target_seq_num),
            list(log.events),
            list(log.incoming),
        ))  # fmt: skip
    assert results[0] == results[1]
    sent, delivered, seqs, _, incoming = results[1]
    assert len(incoming) == 1 + 8  # the Logon, then the burst up to the one that ended it
    assert [f[35] for f in sent] == [b"2", b"3", b"5"]  # ResendRequest, Reject, Logout
    assert delivered == [2, 3, 4, 5, 8]
    assert seqs == (5, 9)
