# SPDX-License-Identifier: MIT
"""The session header read by the framing kernel, and the session's fast path on it (#18).

The decoder reads each frame's header against the session's BeginString and CompIDs
(``FixDecoder.expect_header``); a message the kernel found standard, with its BeginString,
MsgSeqNum and SendingTime, takes ``FixSession._next_app_read`` instead of slicing the header
in Python. Everything else goes the full way, so both paths must decide alike.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix import _kernels as k
from engine.fix.application import Application, SessionID
from engine.fix.codec import FixDecoder, checksum, parse_timestamp
from engine.fix.log import MemoryLog
from engine.fix.message import FixMessage
from tests.factories import fix_pair

T0 = 1_764_892_800_000_000_000  # 2025-12-05 00:00:00 UTC
READ = [k.read_header, k.read_header.py_func]  # type: ignore[attr-defined]


def frame(body: bytes, begin: bytes = b"FIX.4.4") -> bytes:
    head = b"8=" + begin + b"\x019=%d\x01" % len(body)
    return head + body + b"10=%03d\x01" % checksum(head + body)


def nos(
    seq: bytes,
    sent: bytes = b"20251205-00:00:01.250",
    sender: bytes = b"S",
    target: bytes = b"C",
    mt: bytes = b"D",
) -> bytes:
    head = b"35=%s\x0134=%s\x0149=%s\x0152=%s\x0156=%s\x01" % (mt, seq, sender, sent, target)
    return frame(head + b"11=A\x0155=X\x01")


def row_of(raw: bytes, fn: Callable[..., Any] | None = None) -> list[int]:
    dec = FixDecoder()
    dec.expect_header(b"FIX.4.4", b"S", b"C")
    batch = dec.decode_batch(raw)
    row = batch.rows[0]
    if fn is not None:  # the same frame again through this variant of the kernel
        msgs = np.array([row], dtype=np.int64)
        fields = np.ascontiguousarray(batch.fields)
        fn(raw, row[0], fields, row[2], row[3], dec._expect, msgs, 0)
        row = msgs[0].tolist()
    return row


@pytest.mark.parametrize("fn", READ)
def test_a_standard_header_is_read_whole(fn: Callable[..., Any]) -> None:
    row = row_of(nos(b"42"), fn)
    fast = k.HEAD_STANDARD | k.HEAD_BEGIN | k.HEAD_COMP_IDS | k.HEAD_SEQ | k.HEAD_SENT
    assert row[k.MSG_HEAD] == fast
    assert row[k.MSG_SEQ] == 42
    assert row[k.MSG_SENT] == T0 + 1_250_000_000


@pytest.mark.parametrize("fn", READ)
@pytest.mark.parametrize(
    ("raw", "missing"),
    [
        (nos(b"7", sender=b"X"), k.HEAD_COMP_IDS),
        (nos(b"7", target=b"CC"), k.HEAD_COMP_IDS),
        (nos(b"7", sent=b"20250230-00:00:00"), k.HEAD_SENT),  # no 30 February
        (nos(b"7", sent=b"20251205-24:00:00"), k.HEAD_SENT),
        (nos(b"7", sent=b"20251205-00:00:00."), k.HEAD_SENT),
        (nos(b"7", sent=b"20251205-00:00:00.1234567890"), k.HEAD_SENT),
        (nos(b"1" * 19), k.HEAD_SEQ),  # past what the row holds: the full path decides
        (nos(b"-1"), k.HEAD_SEQ),
        (nos(b"7").replace(b"FIX.4.4", b"FIX.4.2", 1), k.HEAD_BEGIN),
    ],
)
def test_what_does_not_match_leaves_its_flag_off(
    fn: Callable[..., Any], raw: bytes, missing: int
) -> None:
    if b"FIX.4.2" in raw:
        raw = frame(raw[raw.index(b"35=") : raw.index(b"10=")], b"FIX.4.2")
    row = row_of(raw, fn)
    assert row[k.MSG_HEAD] & k.HEAD_STANDARD
    assert not row[k.MSG_HEAD] & missing


@pytest.mark.parametrize("fn", READ)
def test_admin_types_and_other_layouts_are_marked(fn: Callable[..., Any]) -> None:
    assert row_of(nos(b"3", mt=b"0"), fn)[k.MSG_HEAD] & k.HEAD_ADMIN
    assert row_of(nos(b"3", mt=b"A"), fn)[k.MSG_HEAD] & k.HEAD_ADMIN
    assert not row_of(nos(b"3", mt=b"AE"), fn)[k.MSG_HEAD] & k.HEAD_ADMIN
    other = frame(b"35=D\x0149=S\x0134=3\x0152=20251205-00:00:01\x0156=C\x01")
    assert row_of(other, fn)[k.MSG_HEAD] == 0


def test_no_expectation_no_flags() -> None:
    batch = FixDecoder().decode_batch(nos(b"5"))
    assert batch.rows[0][k.MSG_HEAD] == 0


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([1, 1677, 1678, 1970, 2000, 2024, 2100, 2261, 2262, 9999]),
    st.integers(0, 19),
    st.integers(0, 39),
    st.integers(0, 29),
    st.integers(0, 69),
    st.integers(0, 69),
    st.text("0123456789", max_size=10),
    st.booleans(),
)
def test_the_kernel_reads_a_timestamp_as_the_parser_does(
    y: int, mo: int, d: int, h: int, mi: int, s: int, frac: str, dot: bool
) -> None:
    text = b"%04d%02d%02d-%02d:%02d:%02d" % (y, mo, d, h, mi, s)
    if dot:
        text += b"." + frac.encode()
    want = parse_timestamp(text)
    # Before 1970, and years whose ns since the epoch do not fit an int64, are left to
    # Python (no flag).
    if want is None or want < 0 or not 1678 <= y <= 2261:
        want = None
    for fn in (None, *READ):  # the decoder's own read, then each form of the kernel
        row = row_of(nos(b"7", sent=text), fn)
        assert row[k.MSG_HEAD] & k.HEAD_STANDARD
        got = row[k.MSG_SENT] if row[k.MSG_HEAD] & k.HEAD_SENT else None
        assert got == want, (fn, text)
        if want is None:
            assert row[k.MSG_SENT] == 0


class _Recorder(Application):
    def __init__(self) -> None:
        self.got: list[bytes] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.append(message.get(11) or b"")


def _deliver(
    raw: bytes | tuple[bytes, ...], with_rows: bool, spy: Callable[[], None] | None = None
) -> tuple[list[bytes], list[bytes], int, tuple[int, int], list[str]]:
    """Feed ``raw`` (one read, or a tuple of reads) to our logged-on session; return what the
    app got, what the session answered, the next expected sequence number, the resend range
    still outstanding and the session's events. ``spy`` runs once logged on."""
    clock = TestClock(T0 + 1_000_000_000)
    app = _Recorder()
    ours, _theirs, out = fix_pair(app, clock, sender="C", validate=False)
    log = ours.log = MemoryLog()
    if spy is not None:
        spy()
    dec = FixDecoder()
    if with_rows:
        dec.expect_header(*ours.expected_header())
    answer: list[bytes] = []
    for read in (raw,) if isinstance(raw, bytes) else raw:
        batch = dec.decode_batch(read)
        msgs = [m for m in batch.messages(clock.now_ns()) if m is not None]
        answer += ours.on_messages(msgs, clock.now_ns(), batch.rows if with_rows else None)
    answered = [a.split(b"\x0152=")[0] for a in answer + out]
    resend = ours.state.resend_range
    return app.got, answered, ours.store.next_target_seq_num, resend, log.events


@pytest.mark.parametrize(
    "raw",
    [
        nos(b"2") + nos(b"3"),  # in sequence: the fast path
        nos(b"5"),  # too high: a ResendRequest
        nos(b"1"),  # too low, no PossDupFlag: Logout
        nos(b"2", sender=b"X"),  # CompID wrong: Reject and Logout
        nos(b"2", sent=b"20251204-00:00:00"),  # SendingTime a day off: Reject and Logout
        nos(b"2", mt=b"0") + nos(b"3"),  # admin first
        # A gap, then the resent messages: in sequence while a resend is outstanding (not
        # the fast path), the last of them satisfying it.
        nos(b"5") + nos(b"2") + nos(b"3") + nos(b"4"),
        nos(b"5") + nos(b"2"),
        # The same over reads: the resend outstanding when a read comes in, then satisfied
        # (the session's own (0, 0) again, not the one a state starts with).
        (nos(b"5"), nos(b"2"), nos(b"3") + nos(b"4"), nos(b"6")),
    ],
)
def test_both_paths_decide_alike(raw: bytes | tuple[bytes, ...]) -> None:
    assert _deliver(raw, with_rows=True) == _deliver(raw, with_rows=False)


@pytest.mark.interpreted
def test_the_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = FixMessage.session_header

    def spy() -> None:
        monkeypatch.setattr(FixMessage, "session_header", lambda m: calls.append(1) or real(m))

    got, _, next_seq, _, _ = _deliver(nos(b"2") + nos(b"3"), with_rows=True, spy=spy)
    assert got == [b"A", b"A"]
    assert next_seq == 4
    assert calls == []  # the header was not read again in Python
    _deliver(nos(b"2") + nos(b"3"), with_rows=False, spy=calls.clear)
    assert calls == [1, 1]  # without the rows it is


@pytest.mark.interpreted
def test_a_resend_outstanding_keeps_reads_off_the_fast_path() -> None:
    # Whether a resend is outstanding is read at the start of a read (on_messages: the
    # state's own (0, 0) tells it at once, the session's (0, 0) once one was satisfied):
    # while one is, every message goes the general way (_next), which tracks the resend;
    # once satisfied, the fast path again.
    clock = TestClock(T0 + 1_000_000_000)
    ours, _theirs, _out = fix_pair(_Recorder(), clock, sender="C", validate=False)
    dec = FixDecoder()
    dec.expect_header(*ours.expected_header())
    general: list[int] = []
    real = ours._next

    def counting(msg: FixMessage, queued: bool, row: Any = None) -> None:
        general.append(msg.get_int(34) or 0)
        real(msg, queued, row)

    ours._next = counting  # type: ignore[method-assign]

    def read(raw: bytes) -> None:
        batch = dec.decode_batch(raw)
        msgs = [m for m in batch.messages(clock.now_ns()) if m is not None]
        ours.on_messages(msgs, clock.now_ns(), batch.rows)

    read(nos(b"2"))
    assert general == []  # in sequence, nothing outstanding: the fast path
    read(nos(b"5"))  # a gap: ResendRequest for 3 .. 4, 5 queued
    assert ours.state.resend_range == (3, 4)
    read(nos(b"3"))
    read(nos(b"4"))  # satisfies it; the queued 5 follows
    assert general == [5, 3, 4, 5]
    assert ours.state.resend_range == (0, 0)
    assert ours.store.next_target_seq_num == 6
    read(nos(b"6"))
    assert general == [5, 3, 4, 5]  # the fast path again
    assert ours.store.next_target_seq_num == 7
    ours.close()
