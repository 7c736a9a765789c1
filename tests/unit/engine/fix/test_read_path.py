# SPDX-License-Identifier: MIT
"""The one-message-per-read path of #18 gives what the general code gives.

Covered: ``FixSession.on_message`` with the decoder's row (the transport's call for a read of
one message: its checks and the application callback inlined) against the full QuickFIX
dispatch, fuzzed, callbacks that raise included; the decoder's one-frame batch against the
batch its general constructor makes; the compiled entry of the framing kernel against the
kernel's dispatcher; ``send_template``'s sequence number and clock reading; ``SessionID``'s
kept hash.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix import _kernels as k
from engine.fix import codec
from engine.fix.application import (
    Application,
    FieldNotFound,
    IncorrectDataFormat,
    IncorrectTagValue,
    SessionID,
    UnsupportedMessageType,
)
from engine.fix.codec import DecodedBatch, FixDecoder, decode_one, encode, format_timestamp
from engine.fix.log import MemoryLog
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import AppTemplate, FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import FileStore, MemoryStore
from engine.fix.validation.plans import layout_program
from engine.fix.validation.validator import validate_message
from tests.factories import assert_answered_alike

S = 1_000_000_000
T0 = 1_700_000_000 * S

ER_FIELDS: list[tuple[int, bytes | None]] = [
    (6, b"0"), (11, None), (14, b"0"), (17, None), (37, None), (38, b"100"), (39, b"0"),
    (54, b"1"), (55, b"AAPL"), (150, b"0"), (151, b"100"),
]  # fmt: skip


class Venue(Application):
    """Records what it gets; ClOrdID <11> says what to do besides (raise, answer, crash)."""

    def __init__(self) -> None:
        self.got: list[bytes] = []
        self.admin: list[bytes] = []
        self.session: FixSession | None = None
        self.er: AppTemplate | None = None

    def from_admin(self, message: FixMessage, session_id: SessionID) -> None:
        self.admin.append(message.raw)

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.append(message.raw)
        action = message.get(11) or b""
        if action == b"fnf":
            raise FieldNotFound(58)
        if action == b"itv":
            raise IncorrectTagValue(55)
        if action == b"idf":
            raise IncorrectDataFormat(44)
        if action == b"umt":
            raise UnsupportedMessageType()
        if action == b"boom":
            raise RuntimeError("the application failed")
        if action == b"send":
            assert self.session is not None
            assert self.er is not None
            seq = self.session.next_sender_seq_num
            assert self.session.send_template(self.er, (action, b"E1", b"O1")) == seq


def _session(clock: TestClock, app: Venue, dictionary: bool) -> tuple[FixSession, MemoryLog]:
    log = MemoryLog()
    cfg = SessionSettings(
        begin_string="FIX.4.4",
        sender_comp_id="ISLD",
        target_comp_id="TW",
        use_data_dictionary=dictionary,
    )
    s = FixSession(cfg, MemoryStore(clock.now_ns()), app, log, clock)
    app.session = s
    app.er = s.template(b"8", ER_FIELDS)
    return s, log


def _raw(
    mt: bytes,
    seq: int,
    now_ns: int,
    body: Sequence[tuple[int, bytes]] = (),
    header: Sequence[tuple[int, bytes]] = (),
    sender: bytes = b"TW",
) -> bytes:
    h = [(34, b"%d" % seq), (49, sender), (52, format_timestamp(now_ns, 3)), (56, b"ISLD")]
    return encode(b"FIX.4.4", mt, h + list(header), list(body))


def _nos(clordid: bytes) -> list[tuple[int, bytes]]:
    return [
        (11, clordid), (21, b"1"), (38, b"100"), (40, b"2"), (44, b"101.25"), (54, b"1"),
        (55, b"AAPL"), (59, b"0"), (60, b"20231114-22:13:20.000"),
    ]  # fmt: skip


def _inbound(mt: bytes, seq: int, flavour: str, action: bytes, now_ns: int) -> bytes:
    body: list[tuple[int, bytes]] = _nos(action) if mt in (b"D", b"8") else []
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
        header = [(97, b"Y")]
    elif flavour == "bad_sender":
        sender = b"XX"
    elif flavour == "stale":
        sent = now_ns - 500 * S
    elif flavour == "bad_body" and body:
        body = body[1:]  # no ClOrdID: a dictionary reject on D
    elif flavour == "bad_price" and body:
        body = [(t, b"1.2.3" if t == 44 else v) for t, v in body]  # same layout, bad value
    return _raw(mt, seq, sent, body, header, sender=sender)


class Reader:
    """What the transport does with a read (engine.fix.transport._Connection._process)."""

    def __init__(self, session: FixSession) -> None:
        self.session = session
        self.decoder = FixDecoder()
        self.decoder.layouts = session.layouts
        self.decoder.expect_header(*session.expected_header())

    def read(self, data: bytes, now: int) -> list[bytes]:
        batch = self.decoder.decode_batch(data)
        rows = batch.rows
        assert all(not r[4] for r in rows)
        if len(rows) > 1:  # a burst: _Connection._burst
            msgs = [m for m in batch.messages(now) if m is not None]
            return self.session.on_messages(msgs, now, rows)
        return self.session.on_message(batch.single_message(now), now, rows[0])


def _logon(s: FixSession, clock: TestClock) -> None:
    s.on_connected(clock.now_ns())
    logon = decode_one(_raw(b"A", 1, clock.now_ns(), [(98, b"0"), (108, b"30")]))
    assert logon is not None
    s.on_message(logon, clock.now_ns())
    assert s.is_logged_on


# One inbound message: MsgType (empty: none, the timer only), seq offset from expected,
# flavour, application action, seconds to advance (idle spells bring TestRequests), and how
# many orders follow it in the same read (a burst, on_messages with the decoder's rows).
_EVENT = st.tuples(
    st.sampled_from([b"D", b"D", b"D", b"D", b"8", b"0", b"1", b"A", b"5", b"", b""]),
    st.sampled_from([0, 0, 0, 0, 0, 1, 2, -1]),
    st.sampled_from(
        ["plain"] * 6 + ["possdup", "possresend", "bad_sender", "stale", "bad_body", "bad_price"]
    ),
    st.sampled_from([b"ok"] * 6 + [b"send", b"send", b"fnf", b"itv", b"idf", b"umt", b"boom"]),
    st.sampled_from([0, 0, 1, 31, 40]),
    st.sampled_from([0, 0, 0, 1, 2]),
)


@pytest.mark.interpreted
@pytest.mark.parametrize("dictionary", [False, True])
@settings(max_examples=150, deadline=None)
@given(events=st.lists(_EVENT, min_size=1, max_size=30))
@example(  # a TestRequest outstanding, answered by an order: the next heartbeat is due
    events=[
        (b"D", 0, "plain", b"ok", 0, 0),
        (b"", 0, "plain", b"ok", 40, 0),
        (b"D", 0, "plain", b"ok", 0, 0),
        (b"", 0, "plain", b"ok", 31, 0),
    ]
)
def test_one_message_read_matches_full_dispatch(
    dictionary: bool, events: list[tuple[bytes, int, str, bytes, int, int]]
) -> None:
    clock_a = TestClock(T0)
    clock_b = TestClock(T0)
    app_a, app_b = Venue(), Venue()
    fast, log_a = _session(clock_a, app_a, dictionary)
    full, log_b = _session(clock_b, app_b, dictionary)
    # The reference never takes a shortcut: no decoder rows, no in-sequence shortcut.
    full._next_app_in_sequence = lambda msg, head: False  # type: ignore[method-assign]
    reader = Reader(fast)
    for s, clock in ((fast, clock_a), (full, clock_b)):
        _logon(s, clock)
    try:
        for mt, offset, flavour, action, advance, burst in events:
            outs: list[list[bytes]] = []
            for s, clock in ((fast, clock_a), (full, clock_b)):
                clock.advance(advance * S)
                now = clock.now_ns()
                seq = max(1, s.next_target_seq_num + offset)
                raw = _inbound(mt, seq, flavour, action, now) if mt else b""
                if burst:  # more orders in the same read, in sequence after this one
                    raw += b"".join(
                        _inbound(b"D", seq + 1 + j, "plain", b"send" if j else b"ok", now)
                        for j in range(burst)
                    )
                if not raw:
                    outs.append([])
                elif s is fast:
                    outs.append(reader.read(raw, now))
                else:
                    msgs = FixDecoder().feed(raw)
                    outs.append(s.on_messages(msgs, now))
                outs.append(s.on_timer(now))
            assert_answered_alike(outs, fast, full)
            if fast.wants_disconnect:
                break
        assert app_a.got == app_b.got
        assert app_a.admin == app_b.admin
        assert log_a.events == log_b.events
        assert log_a.incoming == log_b.incoming
        assert log_a.outgoing == log_b.outgoing
    finally:
        fast.close()
        full.close()


@pytest.mark.interpreted
@pytest.mark.parametrize("dictionary", [False, True])
def test_an_in_sequence_order_is_read_without_the_general_path(dictionary: bool) -> None:
    clock = TestClock(T0)
    app = Venue()
    s, _ = _session(clock, app, dictionary)
    _logon(s, clock)
    general: list[int] = []
    real = s._next

    def spy(*args: object) -> None:
        general.append(1)
        real(*args)  # type: ignore[arg-type]

    s._next = spy  # type: ignore[method-assign,assignment]
    reader = Reader(s)
    try:
        for i in range(3):
            out = reader.read(_raw(b"D", 2 + i, clock.now_ns(), _nos(b"send")), clock.now_ns())
            assert len(out) == 1
            assert b"\x0135=8\x01" in out[0]
            assert b"\x0134=%d\x01" % (2 + i) in out[0]
        assert s.next_target_seq_num == 5
        # With a dictionary the first message of a layout is validated the general way; the
        # decoder's kernel proves the next ones.
        assert general == ([1] if dictionary else [])
        # A message out of sequence goes the general way (a ResendRequest).
        out = reader.read(_raw(b"D", 9, clock.now_ns(), _nos(b"ok")), clock.now_ns())
        assert general[-1:] == [1]
        assert b"\x0135=2\x01" in out[0]
    finally:
        s.close()


# ------------------------------------------------------------------ the decoder


@st.composite
def _frames(draw: st.DrawFn) -> bytes:
    n = draw(st.integers(min_value=1, max_value=3))
    out = b""
    for i in range(n):
        clordid = draw(st.binary(min_size=1, max_size=12).filter(lambda b: b"\x01" not in b))
        out += _raw(b"D", 2 + i, T0, _nos(clordid))
    cut = draw(st.sampled_from(["none", "none", "tail", "garble"]))
    if cut == "tail":
        out = out[: draw(st.integers(min_value=1, max_value=len(out)))]
    elif cut == "garble":
        at = draw(st.integers(min_value=0, max_value=len(out) - 1))
        out = out[:at] + b"\x7f" + out[at + 1 :]
    return out


@settings(max_examples=150, deadline=None)
@given(data=st.data(), layouts=st.booleans())
def test_one_frame_batch_equals_the_general_batch(data: st.DataObject, layouts: bool) -> None:
    s, _ = _session(TestClock(T0), Venue(), dictionary=layouts)
    try:
        dec = FixDecoder()
        dec.layouts = s.layouts
        dec.expect_header(*s.expected_header())
        if layouts:  # a layout kept: the kernel marks the frames
            msg = decode_one(_raw(b"D", 2, T0, _nos(b"x")))
            assert msg is not None
            assert s.layouts is not None
            assert s._session_dd is not None
            # Validated first: a layout's program comes from the dictionary's plans, which a
            # validation makes (run alone, this test has no other test's validations to lean on).
            assert validate_message(msg, s._session_dd, None, s._validation) is None
            s.layouts.add(msg.tags, b"D", layout_program(msg, s._session_dd, None))
        for _ in range(3):
            raw = data.draw(_frames())
            batch = dec.decode_batch(raw)
            n = len(batch)
            ref = DecodedBatch(
                batch.buf,
                dec._msgs,
                dec._fields,
                None,
                batch.checked,
                frames=n,
                nfields=batch.fields.shape[1],
                views=dec._views,
            )
            assert batch.rows == ref.rows
            assert [list(a) for a in batch.field_lists()] == [list(a) for a in ref.field_lists()]
            assert np.array_equal(batch.msgs, ref.msgs)
            assert np.array_equal(batch.fields, ref.fields)
            mine = batch.messages(5)
            theirs = ref.messages(5)
            assert [m and (m.raw, m.pairs, m.checked, m.ts_recv) for m in mine] == [
                m and (m.raw, m.pairs, m.checked, m.ts_recv) for m in theirs
            ]
            if n == 1 and not batch.rows[0][4]:
                # A one-frame read's message: from the block the decoder made with the batch
                # (the first call), then made anew (a second call), as the general batch
                # makes it.
                def seen(m: FixMessage) -> tuple[object, ...]:
                    b = m._b
                    return (m.raw, m.pairs, m.checked, m.ts_recv, m.tags, b.first, b.cuts, b.codes)

                general = seen(ref.single_message(7))
                first = batch.single_message(7)
                assert seen(first) == general
                assert seen(batch.single_message(9)) == (*general[:3], 9, *general[4:])
                assert first.ts_recv == 7  # the second call made its own block
            if layouts and n == 1 and not batch.rows[0][4]:
                assert s.layouts is not None
                assert batch.checked == [s.layouts.valid]
    finally:
        s.close()


@settings(max_examples=100, deadline=None)
@given(raw=_frames())
def test_the_compiled_entry_frames_as_the_dispatcher_does(raw: bytes) -> None:
    dec = FixDecoder()
    s, _ = _session(TestClock(T0), Venue(), dictionary=True)
    try:
        assert s.layouts is not None
        msg = decode_one(_raw(b"D", 2, T0, _nos(b"x")))
        assert msg is not None
        assert s._session_dd is not None
        assert validate_message(msg, s._session_dd, None, s._validation) is None
        s.layouts.add(msg.tags, b"D", layout_program(msg, s._session_dd, None))
        dec.layouts = s.layouts
        dec.expect_header(*s.expected_header())
        dec.decode_batch(_raw(b"D", 2, T0, _nos(b"warm")))  # the entry is found after a call
        entry = codec._scan_and_check[0]
        assert entry is not None

        def run(fn: object) -> tuple[object, ...]:
            # The separate tables scan_and_check takes (what the workspace packs).
            msgs = np.zeros((256, k.MSG_COLUMNS), np.int64)
            fields = np.zeros((3, 8192), np.int64)
            out = np.zeros(256, np.int64)
            assert s.layouts is not None
            got = fn(  # type: ignore[operator]
                raw,
                len(raw),
                msgs,
                fields,
                dec._data_tags.copy(),
                dec._expect.copy(),
                s.layouts.table,
                out,
                s.layouts.base,
            )
            return got, msgs.tobytes(), fields.tobytes(), out.tobytes()

        def run_ws(fn: object) -> tuple[object, ...]:
            # The decoder's way: one workspace array holding the same tables.
            ws, msgs, fields, out, _, _ = k.workspace(256, 8192, dec._data_tags, dec._expect)
            assert s.layouts is not None
            got = fn(raw, ws, s.layouts.table, s.layouts.base)  # type: ignore[operator]
            return got, msgs.tobytes(), fields.tobytes(), out.tobytes()

        expected = run(k.scan_and_check)
        assert run_ws(entry) == expected
        assert run_ws(k.scan_and_check_ws) == expected
    finally:
        s.close()


def test_compiled_entry_is_none_for_types_never_compiled() -> None:
    args = (np.zeros(3, np.float32), 0, 3)
    assert k.compiled_entry(k.checksum, args) is None
    assert k.compiled_entry(object(), args) is None


# ------------------------------------------------------------------ send_template


class _Plain(Application):
    pass


class _Tagging(Application):
    def to_app(self, message: OutMessage, session_id: SessionID) -> None:
        message.set(58, b"tagged")


def _logged_on(app: Application, store: MemoryStore | FileStore | None = None) -> FixSession:
    clock = TestClock(T0)
    cfg = SessionSettings(
        begin_string="FIX.4.4", sender_comp_id="ISLD", target_comp_id="TW", heart_bt_int=30
    )
    s = FixSession(cfg, store or MemoryStore(), app, MemoryLog(), clock)
    _logon(s, clock)
    return s


@pytest.mark.parametrize("app", [_Plain, _Tagging])
def test_send_template_returns_the_sequence_number_and_takes_the_callers_clock(
    app: type[Application],
) -> None:
    s = _logged_on(app())
    try:
        sent: list[bytes] = []
        s.set_responder(sent.append)
        tmpl = s.template(b"8", ER_FIELDS)
        first = s.next_sender_seq_num
        assert s.send_template(tmpl, (b"C1", b"E1", b"O1")) == first
        when = T0 + 3_600 * S + 123_456_789
        assert s.send_template(tmpl, (b"C2", b"E2", b"O2"), now_ns=when) == first + 1
        assert b"\x0152=20231114-23:13:20.123\x01" in sent[-1]
        assert s.next_sender_seq_num == first + 2
        assert (b"\x0158=tagged\x01" in sent[-1]) == (app is _Tagging)
        s.on_disconnected(T0)
        assert s.send_template(tmpl, (b"C3", b"E3", b"O3"), now_ns=when) == 0  # not sent
        assert s.next_sender_seq_num == first + 3  # but numbered and kept, as send() does
    finally:
        s.close()


def test_send_template_writes_the_same_bytes_to_either_store(tmp_path: Path) -> None:
    outs = []
    for store in (MemoryStore(), FileStore(tmp_path, "FIX.4.4-ISLD-TW")):
        s = _logged_on(_Plain(), store)
        sent: list[bytes] = []
        s.set_responder(sent.append)
        tmpl = s.template(b"8", ER_FIELDS)
        for i in range(3):
            s.send_template(tmpl, (b"C%d" % i, b"E", b"O"), now_ns=T0 + i)
        outs.append((sent, s.store.get_range(1, 10), s.next_sender_seq_num))
        s.close()
    assert outs[0] == outs[1]


# ------------------------------------------------------------------ SessionID


def test_session_id_hash_is_the_fields_hash_and_survives_copies() -> None:
    sid = SessionID("FIX.4.4", "ME", "YOU", qualifier="q", target_sub_id="DESK")
    values = tuple(getattr(sid, f.name) for f in dataclasses.fields(sid))
    assert hash(sid) == hash(values)
    assert hash(sid) == hash(sid)  # kept
    for other in (pickle.loads(pickle.dumps(sid)), copy.copy(sid), copy.deepcopy(sid)):
        assert other == sid
        assert hash(other) == hash(sid)
    assert dataclasses.asdict(sid) == dict(
        zip([f.name for f in dataclasses.fields(sid)], values, strict=True)
    )
    assert {sid: 1}[SessionID("FIX.4.4", "ME", "YOU", qualifier="q", target_sub_id="DESK")] == 1
    assert SessionID("FIX.4.4", "ME", "YOU") != sid


def test_one_frame_reads_stay_right_after_the_tables_grow() -> None:
    dec = FixDecoder()
    one = _raw(b"D", 2, T0, _nos(b"first"))
    got = dec.decode_batch(one).messages()[0]
    assert got is not None
    assert got.pairs == FixDecoder().feed(one)[0].pairs
    many = b"".join(_raw(b"D", 3 + i, T0, _nos(b"m%d" % i)) for i in range(700))
    assert len(dec.decode_batch(many)) == 700  # more fields than the table held: it grows
    for clordid in (b"after", b"x"):  # the same field count as before, then another one
        raw = _raw(b"D", 9, T0, _nos(clordid))
        batch = dec.decode_batch(raw)
        msg = batch.messages()[0]
        assert msg is not None
        assert msg.pairs == FixDecoder().feed(raw)[0].pairs
        assert [list(a) for a in batch.field_lists()] == [
            batch.tags.tolist(),
            batch.vstart.tolist(),
            batch.vend.tolist(),
        ]
