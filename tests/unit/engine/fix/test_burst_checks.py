# SPDX-License-Identifier: MIT
"""``FixSession.on_messages`` with the decoder's rows answers as the general path does (#18).

The fast path reads what no message changes once per call (the header flags it needs, the
SendingTime window of the latency check, the heartbeat due time); these tests drive it and the
general path (no rows: every message through ``_next``, QuickFIX's checks in QuickFIX's order)
with the same reads, bursts of orders whose SendingTime sits on either side of the MaxLatency
bound to the nanosecond, with CompIDs wrong or checked or not, and compare everything the
sessions say and do.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.codec import FixDecoder, decode_one, encode, format_timestamp
from engine.fix.log import MemoryLog
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from tests.factories import assert_answered_alike
from tests.unit.engine.fix.test_read_path import ER_FIELDS, T0, Reader, Venue, _nos

S = 1_000_000_000


def _session(
    clock: TestClock, app: Venue, dictionary: bool, comp_ids: bool, latency: bool, max_latency: int
) -> tuple[FixSession, MemoryLog]:
    log = MemoryLog()
    cfg = SessionSettings(
        begin_string="FIX.4.4",
        sender_comp_id="ISLD",
        target_comp_id="TW",
        use_data_dictionary=dictionary,
        check_comp_id=comp_ids,
        check_latency=latency,
        max_latency=max_latency,
    )
    s = FixSession(cfg, MemoryStore(clock.now_ns()), app, log, clock)
    app.session = s
    app.er = s.template(b"8", ER_FIELDS)
    return s, log


def _order(seq: int, sent: int, precision: int, sender: bytes, action: bytes) -> bytes:
    h = [(34, b"%d" % seq), (49, sender), (52, format_timestamp(sent, precision)), (56, b"ISLD")]
    return encode(b"FIX.4.4", b"D", h, _nos(action))


# One order of a burst: SendingTime as (whole seconds, ns) off an edge of the latency window
# (or off now), its precision, seq offset, a wrong SenderCompID, the application action.
_ORDER = st.tuples(
    st.sampled_from(["now", "early", "late", "first", "last"]),
    st.sampled_from([0, 0, -1, 1]),
    st.sampled_from([0, 1, -1, S - 1, -(S - 1), 999_999, -1_000_000]),
    st.sampled_from([3, 6, 9]),
    st.sampled_from([0, 0, 0, 0, 1, -1]),
    st.sampled_from([False] * 8 + [True]),
    st.sampled_from([b"ok"] * 6 + [b"send", b"fnf", b"boom"]),
)
# A read: ns to advance first (off whole seconds too), then its orders.
_READ = st.tuples(
    st.sampled_from([0, 1, S - 1, S // 2, 30 * S, 31 * S + 7]),
    st.lists(_ORDER, min_size=1, max_size=5),
)


@pytest.mark.parametrize("dictionary", [False, True])
@settings(max_examples=150, deadline=None)
@given(
    reads=st.lists(_READ, min_size=1, max_size=8),
    comp_ids=st.booleans(),
    latency=st.booleans(),
    max_latency=st.sampled_from([0, 1, 2, 120]),
)
@example(  # every order 2 s off with MaxLatency 2, either side, to the ns
    reads=[(S // 2, [("early", 0, 0, 9, 0, False, b"ok"), ("late", 0, 0, 9, 0, False, b"ok")])],
    comp_ids=True,
    latency=True,
    max_latency=2,
)
def test_a_burst_with_rows_answers_as_the_general_path(
    dictionary: bool,
    reads: list[tuple[int, list[tuple[str, int, int, int, int, bool, bytes]]]],
    comp_ids: bool,
    latency: bool,
    max_latency: int,
) -> None:
    clocks = TestClock(T0), TestClock(T0)
    apps = Venue(), Venue()
    pair = [
        _session(c, a, dictionary, comp_ids, latency, max_latency)
        for c, a in zip(clocks, apps, strict=True)
    ]
    fast, full = pair[0][0], pair[1][0]
    reader = Reader(fast)
    try:
        for s, clock in zip((fast, full), clocks, strict=True):
            s.on_connected(clock.now_ns())
            logon = decode_one(
                encode(
                    b"FIX.4.4",
                    b"A",
                    [
                        (34, b"1"),
                        (49, b"TW"),
                        (52, format_timestamp(clock.now_ns())),
                        (56, b"ISLD"),
                    ],
                    [(98, b"0"), (108, b"30")],
                )
            )
            assert logon is not None
            s.on_message(logon, clock.now_ns())
            assert s.is_logged_on
        for advance, orders in reads:
            outs: list[list[bytes]] = []
            for s, clock in zip((fast, full), clocks, strict=True):
                clock.advance(advance)
                now = clock.now_ns()
                seq = s.next_target_seq_num
                raw = b""
                for where, secs, ns, precision, offset, bad, action in orders:
                    bound = max_latency * S
                    # The window's edges: now +- MaxLatency, and its whole-second bounds.
                    base = {
                        "now": now,
                        "early": now - bound,
                        "late": now + bound,
                        "first": (now // S) * S - bound,
                        "last": (now // S + 1) * S + bound,
                    }[where]
                    sent = base + secs * S + ns
                    raw += _order(seq + offset, sent, precision, b"XX" if bad else b"TW", action)
                    seq += 1
                if s is fast:
                    outs.append(reader.read(raw, now))
                else:  # no rows: every message through _next
                    outs.append(s.on_messages(FixDecoder().feed(raw), now))
                outs.append(s.on_timer(now))
            assert_answered_alike(outs, fast, full)
            if fast.wants_disconnect:
                break
        assert apps[0].got == apps[1].got
        assert apps[0].admin == apps[1].admin
        log_a, log_b = pair[0][1], pair[1][1]
        assert log_a.events == log_b.events
        assert log_a.incoming == log_b.incoming
        assert log_a.outgoing == log_b.outgoing
    finally:
        fast.close()
        full.close()


def test_fewer_rows_than_messages_crash_the_session_after_the_first() -> None:
    clock = TestClock(T0)
    s, log = _session(clock, Venue(), False, True, True, 120)
    reader = Reader(s)
    try:
        s.on_connected(clock.now_ns())
        logon = decode_one(
            encode(
                b"FIX.4.4",
                b"A",
                [(34, b"1"), (49, b"TW"), (52, format_timestamp(clock.now_ns())), (56, b"ISLD")],
                [(98, b"0"), (108, b"30")],
            )
        )
        assert logon is not None
        s.on_message(logon, clock.now_ns())
        now = clock.now_ns()
        raw = _order(2, now, 3, b"TW", b"ok") + _order(3, now, 3, b"TW", b"ok")
        batch = reader.decoder.decode_batch(raw)
        s.on_messages(batch.good_messages(now), now, batch.rows[:1])
        assert s.next_target_seq_num == 3  # the first taken
        assert s.wants_disconnect
        assert any("Unexpected error: IndexError" in e for e in log.events)
        assert len(log.incoming) == 3  # the Logon and both orders
    finally:
        s.close()
