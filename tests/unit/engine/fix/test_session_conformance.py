# SPDX-License-Identifier: MIT
"""Session-level conformance of :class:`FixSession`, written from the FIX specification.

The scenarios are the session-level test cases of FIX 4.4 Volume 2 ("FIX Session-level Test
Cases and Expected Behaviors"; the reference ids in the test names, 1S and 1B.a to 20, are that
chapter's) plus its message recovery and standard-header rules. They need nothing outside the
repository: the counterparty is written here as FIX text, framed by this file's own encoder
(BodyLength <9>, CheckSum <10>), decoded by the engine's :class:`FixDecoder` as the transport
does, and what the session sends back is compared **byte for byte** with the expected message,
framed the same way: the clock is a :class:`TestClock`, so SendingTime <52> is known exactly.
Where the transport decides (which session a connection belongs to, garbled bytes on the wire)
the test runs a real :class:`SocketAcceptor` on 127.0.0.1.

Our side is the acceptor ``ISLD``; the counterparty is ``TW``. Where the specification leaves a
choice (reject texts, which problem of several is reported), the session follows QuickFIX 1.16,
as ``engine/fix/session.py`` says; the expected bytes here are QuickFIX's.

Scenarios covered elsewhere and not repeated here: plain Logon answer, heartbeat / TestRequest /
timeout timers, gap with application messages, MsgSeqNum too low without PossDupFlag, PossDup
duplicates ignored, ResendRequest to infinity, invalid tag number (``test_session.py``); sequence
number past 64 bits, BusinessMessageReject (FIX.4.4 and FIXT.1.1), Logon with ResetSeqNumFlag
(``test_conformance.py``); validation precedence by reason (``test_validation.py``); second
Logon for a connected session, garbled Logon, silent connection
(``tests/integration/test_fix_interop.py``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.clock import TestClock
from engine.fix.application import Application, SessionID
from engine.fix.codec import FixDecoder
from engine.fix.log import MemoryLog
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor

S = 1_000_000_000
RESOURCES = Path(__file__).resolve().parents[4] / "resources" / "fix"
DICTIONARIES = {
    "FIX.4.0": "FIX40.xml",
    "FIX.4.1": "FIX41.xml",
    "FIX.4.2": "FIX42.xml",
    "FIX.4.3": "FIX43.xml",
    "FIX.4.4": "FIX44.xml",
}
#: A NewOrderSingle body valid in FIX.4.4 (TransactTime <60> is filled in as ``<TIME>``).
NOS = "11=ID|21=3|40=1|54=1|55=INTC|60=<TIME>"
#: An ExecutionReport body valid in FIX.4.4, for messages our side sends.
ER = [(6, "0"), (14, "0"), (17, "E1"), (37, "O1"), (39, "0"), (54, "1"), (55, "INTC")]
ER += [(150, "0"), (151, "100")]


# ----------------------------------------------------------------------------- the wire


def stamp(ns: int, digits: int = 3) -> str:
    """Return the UTCTimestamp for ``ns`` with ``digits`` fractional digits (0 or 3)."""
    sec, frac = divmod(ns, S)
    text = dt.datetime.fromtimestamp(sec, dt.UTC).strftime("%Y%m%d-%H:%M:%S")
    return text + (f".{frac // 10 ** (9 - digits):0{digits}d}" if digits else "")


def frame(begin: str, text: str) -> bytes:
    """Return ``text`` (``35=0|34=2|...``, ``|`` for SOH) as a complete FIX message.

    BeginString <8> and BodyLength <9> are put first and CheckSum <10> last, computed as the
    standard trailer defines them (byte count after ``9=...|`` up to ``10=``; byte sum mod 256).
    """
    body = text.replace("|", "\x01").encode("latin-1") + b"\x01"
    head = f"8={begin}\x019={len(body)}\x01".encode()
    msg = head + body
    return msg + b"10=%03d\x01" % (sum(msg) % 256)


def readable(raw: list[bytes]) -> list[str]:
    """Messages with SOH shown as ``|`` (for readable assertion diffs)."""
    return [m.decode("latin-1").replace("\x01", "|") for m in raw]


_TIME = re.compile(r"<TIME([+-]\d+)?>")


class Recorder(Application):
    """Keeps the application messages delivered and counts logons and logouts."""

    def __init__(self) -> None:
        self.delivered: list[tuple[bytes, int]] = []
        self.logons = 0
        self.logouts = 0

    def on_logon(self, session_id: SessionID) -> None:
        self.logons += 1

    def on_logout(self, session_id: SessionID) -> None:
        self.logouts += 1

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.delivered.append((message.msg_type, message.seq_num or 0))


@dataclass
class Rig:
    """Our acceptor session and the counterparty's side of the wire, on one test clock."""

    session: FixSession
    clock: TestClock
    app: Recorder
    begin: str
    digits: int
    decoder: FixDecoder = field(default_factory=FixDecoder)

    def text(self, text: str) -> str:
        """``text`` with ``<TIME>`` / ``<TIME+n>`` / ``<TIME-n>`` replaced by the clock's time."""
        now = self.clock.now_ns()
        return _TIME.sub(lambda m: stamp(now + int(m.group(1) or 0) * S, self.digits), text)

    def send(self, text: str) -> list[bytes]:
        """Frame ``text`` as the counterparty and deliver it; return what the session sent."""
        return self.deliver(frame(self.begin, self.text(text)))

    def deliver(self, data: bytes) -> list[bytes]:
        """Deliver raw bytes through the decoder, as the transport does.

        Messages are handed over before dropped frames: give one frame per call where the
        order of good and garbled frames matters.
        """
        dropped: list[tuple[str, bytes]] = []
        self.decoder.on_garbled = lambda d: dropped.append((d.reason, d.data))
        self.decoder.layouts = self.session.layouts
        now = self.clock.now_ns()
        out: list[bytes] = []
        for msg in self.decoder.feed(data, now):
            out += self.session.on_message(msg, now)
        for reason, raw in dropped:
            out += self.session.on_garbled(reason, raw, now)
        return out

    def ours(self, *texts: str) -> list[str]:
        """Our expected messages (``35=0|34=2|49=ISLD|52=<TIME>|56=TW|...``), readable."""
        return readable([frame(self.begin, self.text(t)) for t in texts])

    def tick(self, seconds: float = 0) -> list[bytes]:
        """Advance the clock and run the session's timers; return what it sent."""
        self.clock.advance(round(seconds * S))
        return self.session.on_timer(self.clock.now_ns())

    def ended(self) -> bool:
        """Return True when the session wants its connection closed."""
        return self.session.wants_disconnect

    def logon(self, heart_bt_int: int = 30) -> None:
        """Connect and log on with MsgSeqNum 1; check our Logon answer byte for byte."""
        self.session.on_connected(self.clock.now_ns())
        appl = "|1137=9" if self.begin == "FIXT.1.1" else ""
        out = self.send(f"35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0|108={heart_bt_int}{appl}")
        assert readable(out) == self.ours(
            f"35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108={heart_bt_int}{appl}"
        )
        assert self.session.is_logged_on


MakeRig = Callable[..., Rig]


@pytest.fixture
def make_rig() -> Iterator[MakeRig]:
    """Return a factory of rigs (FIX.4.4 by default); their sessions are closed afterwards."""
    made: list[FixSession] = []

    def factory(begin: str = "FIX.4.4", **settings: object) -> Rig:
        clock = TestClock()
        app = Recorder()
        if begin == "FIXT.1.1":
            dictionaries: dict[str, object] = {
                "transport_data_dictionary": str(RESOURCES / "FIXT11.xml"),
                "app_data_dictionary": str(RESOURCES / "FIX50SP2.xml"),
                "default_appl_ver_id": "FIX.5.0SP2",
            }
        else:
            dictionaries = {"data_dictionary": str(RESOURCES / DICTIONARIES[begin])}
        cfg = SessionSettings(
            begin_string=begin,
            sender_comp_id="ISLD",
            target_comp_id="TW",
            **(dictionaries | settings),  # type: ignore[arg-type]
        )
        s = FixSession(cfg, MemoryStore(clock.now_ns()), app, MemoryLog(), clock)
        made.append(s)
        return Rig(s, clock, app, begin, 0 if begin < "FIX.4.2" else 3)

    yield factory
    for s in made:
        s.close()


@pytest.fixture
def rig(make_rig: MakeRig) -> Rig:
    """A FIX.4.4 rig, not yet connected."""
    return make_rig()


def _send_app(rig: Rig) -> None:
    """Send an ExecutionReport from our side (outside an entry point) and forget the bytes."""
    assert rig.session.send(OutMessage("8", list(ER)))
    rig.session.drain()


# ----------------------------------------------------------------------------- logon


def test_1b_a_logon_with_msg_seq_num_too_high_answers_logon_then_resend_request(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 1B.a: a Logon above the expected MsgSeqNum is accepted, then a gap."""
    rig.session.on_connected(rig.clock.now_ns())
    out = rig.send("35=A|34=5|49=TW|52=<TIME>|56=ISLD|98=0|108=30")
    assert readable(out) == rig.ours(
        "35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30",
        "35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=1|16=0",
    )
    assert rig.session.is_logged_on
    assert rig.app.logons == 1
    # The counterparty fills 1-4 with one gap fill; the Logon (5) waiting in the queue counts.
    assert rig.send("35=4|34=1|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME>|36=5|123=Y") == []
    assert rig.session.next_target_seq_num == 6
    out = rig.send("35=1|34=6|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=3|49=ISLD|52=<TIME>|56=TW|112=HELLO")


@pytest.mark.parametrize(
    "comp_ids", ["49=WT|52=<TIME>|56=ISLD", "49=TW|52=<TIME>|56=DLSI"], ids=["sender", "target"]
)
def test_1b_c_logon_with_wrong_comp_id_disconnects_without_a_word(rig: Rig, comp_ids: str) -> None:
    """FIX 4.4 Vol. 2 test 1B.c: an invalid Logon ends the connection; nothing is sent."""
    rig.session.on_connected(rig.clock.now_ns())
    assert rig.send(f"35=A|34=1|{comp_ids}|98=0|108=30") == []
    assert rig.ended()
    assert not rig.session.is_logged_on
    assert rig.app.logons == 0
    assert (rig.session.next_sender_seq_num, rig.session.next_target_seq_num) == (1, 1)


def test_1b_d_logon_with_sending_time_out_of_range_disconnects_without_a_word(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 1B.d: a Logon whose SendingTime is off by > 2 min is not answered."""
    rig.session.on_connected(rig.clock.now_ns())
    assert rig.send("35=A|34=1|49=TW|52=20010101-00:00:00|56=ISLD|98=0|108=30") == []
    assert rig.ended()
    assert rig.app.logons == 0
    assert rig.session.next_sender_seq_num == 1  # no Reject or Logout consumed a number


def test_1b_e_first_message_not_a_logon_disconnects_without_a_word(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 1B.e: the first message must be a Logon; otherwise disconnect."""
    rig.session.on_connected(rig.clock.now_ns())
    assert rig.send("35=0|34=1|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.ended()
    assert not rig.session.is_logged_on
    assert rig.session.next_target_seq_num == 1


def test_logon_with_reset_seq_num_flag_while_logged_on_restarts_both_sides_at_1(rig: Rig) -> None:
    """FIX 4.4 Vol. 2, Logon <A>: ResetSeqNumFlag=Y resets both sides to 1, and is echoed."""
    rig.logon()
    for seq in range(2, 10):
        assert rig.send(f"35=0|34={seq}|49=TW|52=<TIME>|56=ISLD") == []
    out = rig.send("35=1|34=10|49=TW|52=<TIME>|56=ISLD|112=1")
    assert readable(out) == rig.ours("35=0|34=2|49=ISLD|52=<TIME>|56=TW|112=1")
    out = rig.send("35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0|108=30|141=Y")
    assert readable(out) == rig.ours("35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30|141=Y")
    out = rig.send("35=1|34=2|49=TW|52=<TIME>|56=ISLD|112=1")
    assert readable(out) == rig.ours("35=0|34=2|49=ISLD|52=<TIME>|56=TW|112=1")
    assert (rig.session.next_sender_seq_num, rig.session.next_target_seq_num) == (3, 3)
    assert rig.session.is_logged_on


# ----------------------------------------------------------------------------- heartbeats


def test_4b_test_request_is_answered_by_a_heartbeat_with_its_test_req_id(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 4b: a TestRequest is answered by a Heartbeat carrying its TestReqID."""
    rig.logon()
    out = rig.send("35=1|34=2|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=2|49=ISLD|52=<TIME>|56=TW|112=HELLO")
    assert rig.session.next_target_seq_num == 3


def test_6_answered_test_request_keeps_the_session_and_silence_ends_it(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 6: TestRequest after HeartBtInt + margin; its answer clears it."""
    rig.logon(heart_bt_int=6)
    hb = "35=0|34={}|49=ISLD|52=<TIME>|56=TW"
    tr = "35=1|34={}|49=ISLD|52=<TIME>|56=TW|112=TEST"
    assert rig.tick(5.999) == []
    assert readable(rig.tick(0.001)) == rig.ours(hb.format(2))  # t=6: nothing sent for 6 s
    assert rig.send("35=0|34=2|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.tick(5.999) == []
    assert readable(rig.tick(0.001)) == rig.ours(hb.format(3))  # t=12
    assert rig.tick(1.199) == []
    assert readable(rig.tick(0.001)) == rig.ours(tr.format(4))  # t=13.2: 1.2 x 6 s silent
    assert rig.send("35=0|34=3|49=TW|52=<TIME>|56=ISLD|112=TEST") == []  # the answer
    assert rig.tick(5.999) == []
    assert readable(rig.tick(0.001)) == rig.ours(hb.format(5))  # heartbeats again, no timeout
    assert rig.send("35=0|34=4|49=TW|52=<TIME>|56=ISLD") == []  # t=19.2
    assert readable(rig.tick(6)) == rig.ours(hb.format(6))  # t=25.2
    assert readable(rig.tick(1.2)) == rig.ours(tr.format(7))  # t=26.4: silent for 7.2 s
    assert rig.tick(7.199) == []
    assert not rig.ended()
    assert rig.tick(0.001) == []  # t=33.6: 2.4 x HeartBtInt without a word
    assert rig.ended()
    assert rig.app.logouts == 1


# ----------------------------------------------------------------------------- MsgSeqNum


def test_2b_gap_asks_one_resend_and_queued_messages_follow_the_fill(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 2b: MsgSeqNum too high -> ResendRequest; queued ones then in order."""
    rig.logon()
    for seq in (2, 3, 4):
        assert rig.send(f"35=0|34={seq}|49=TW|52=<TIME>|56=ISLD") == []
    out = rig.send("35=0|34=10|49=TW|52=<TIME>|56=ISLD")
    assert readable(out) == rig.ours("35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=5|16=0")
    # Still in the gap: no second ResendRequest (SendRedundantResendRequests=N).
    assert rig.send("35=1|34=11|49=TW|52=<TIME>|56=ISLD|112=LATE") == []
    for seq in range(5, 9):
        assert rig.send(f"35=0|34={seq}|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.session.next_target_seq_num == 9
    # 9 closes the gap: 10 and the TestRequest 11 come out of the queue, in order.
    out = rig.send("35=0|34=9|49=TW|52=<TIME>|56=ISLD")
    assert readable(out) == rig.ours("35=0|34=3|49=ISLD|52=<TIME>|56=TW|112=LATE")
    assert rig.session.next_target_seq_num == 12
    out = rig.send("35=5|34=12|49=TW|52=<TIME>|56=ISLD")
    assert readable(out) == rig.ours("35=5|34=4|49=ISLD|52=<TIME>|56=TW")
    assert rig.ended()


@pytest.mark.parametrize(
    ("begin", "end_seq_no"),
    [("FIX.4.0", 999999), ("FIX.4.1", 999999), ("FIX.4.2", 0), ("FIX.4.3", 0), ("FIX.4.4", 0)],
)
def test_2b_resend_request_asks_to_infinity_in_each_version(
    make_rig: MakeRig, begin: str, end_seq_no: int
) -> None:
    """FIX 4.2 ResendRequest <2>: EndSeqNo 0 means infinity; 999999 before FIX 4.2."""
    rig = make_rig(begin)
    rig.logon()
    out = rig.send("35=0|34=4|49=TW|52=<TIME>|56=ISLD")
    # FIX.4.0 and 4.1 stamp whole seconds (``<TIME>`` follows the version here).
    assert readable(out) == rig.ours(f"35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=2|16={end_seq_no}")


def test_2g_possdup_without_orig_sending_time_is_rejected_and_not_counted(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 2g: PossDupFlag=Y without OrigSendingTime -> Reject 373=1, 371=122."""
    rig.logon()
    assert rig.send(f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|{NOS}") == []
    assert rig.send(f"35=D|34=3|49=TW|52=<TIME>|56=ISLD|{NOS}") == []
    out = rig.send(f"35=D|34=2|43=Y|49=TW|52=<TIME>|56=ISLD|{NOS}")
    assert readable(out) == rig.ours(
        "35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=2|58=Required tag missing|371=122|372=D|373=1"
    )
    assert rig.session.next_target_seq_num == 4
    out = rig.send("35=1|34=4|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=3|49=ISLD|52=<TIME>|56=TW|112=HELLO")
    assert rig.app.delivered == [(b"D", 2), (b"D", 3)]


def test_2f_possdup_with_orig_sending_time_after_sending_time_rejects_and_logs_out(
    rig: Rig,
) -> None:
    """FIX 4.4 Vol. 2 test 2f: OrigSendingTime later than SendingTime -> Reject 10, Logout."""
    rig.logon()
    assert rig.send(f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|{NOS}") == []
    assert rig.send(f"35=D|34=3|49=TW|52=<TIME>|56=ISLD|{NOS}") == []
    out = rig.send(f"35=D|34=2|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME+10>|{NOS}")
    assert readable(out) == rig.ours(
        "35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=2|58=SendingTime accuracy problem|372=D|373=10",
        "35=5|34=3|49=ISLD|52=<TIME>|56=TW",
    )
    assert not rig.ended()  # waits for the Logout answer
    assert rig.send("35=5|34=4|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.ended()
    assert rig.app.delivered == [(b"D", 2), (b"D", 3)]


def test_7_received_reject_is_counted_and_not_answered(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 7: a Reject increments the inbound MsgSeqNum; no answer."""
    rig.logon()
    assert rig.send("35=3|34=2|49=TW|52=<TIME>|56=ISLD|45=1") == []
    assert rig.session.next_target_seq_num == 3
    out = rig.send("35=5|34=3|49=TW|52=<TIME>|56=ISLD")
    assert readable(out) == rig.ours("35=5|34=2|49=ISLD|52=<TIME>|56=TW")


def test_7_2b_reject_with_msg_seq_num_too_high_is_a_gap(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 tests 2b, 7: a Reject is sequenced like any message (QuickFIX: not)."""
    rig.logon()
    out = rig.send("35=3|34=4|49=TW|52=<TIME>|56=ISLD|45=1")
    assert readable(out) == rig.ours("35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=2|16=0")
    assert rig.session.next_target_seq_num == 2
    assert rig.send("35=4|34=2|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME>|36=4|123=Y") == []
    assert rig.session.next_target_seq_num == 5  # the queued Reject counted after the fill


# ----------------------------------------------------------------------------- SequenceReset


def test_10_gap_fill_in_sequence_moves_the_expected_number(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 10: SequenceReset-GapFill at the expected MsgSeqNum sets NewSeqNo."""
    rig.logon()
    assert rig.send("35=4|34=2|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME>|36=5|123=Y") == []
    assert rig.session.next_target_seq_num == 5
    out = rig.send("35=1|34=5|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=2|49=ISLD|52=<TIME>|56=TW|112=HELLO")


def test_10_gap_fill_too_high_asks_resend_and_is_applied_after_the_fill(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 10: a GapFill above the expected number is a gap like any message."""
    rig.logon()
    out = rig.send("35=4|34=10|49=TW|52=<TIME>|56=ISLD|36=20|123=Y")
    assert readable(out) == rig.ours("35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=2|16=0")
    assert rig.send("35=1|34=20|49=TW|52=<TIME>|56=ISLD|112=HELLO") == []
    assert rig.session.next_target_seq_num == 2
    # The counterparty fills 2-9; then the queued GapFill (10 -> 20) and TestRequest (20) run.
    out = rig.send("35=4|34=2|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME>|36=10|123=Y")
    assert readable(out) == rig.ours("35=0|34=3|49=ISLD|52=<TIME>|56=TW|112=HELLO")
    assert rig.session.next_target_seq_num == 21


def test_10_gap_fill_too_low_is_ignored_with_possdup_and_fatal_without(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 10: a GapFill below the expected number: PossDup ignored, else Logout."""
    rig.logon()
    out = rig.send("35=4|34=1|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME-1>|36=20|123=Y")
    assert out == []
    assert rig.session.next_target_seq_num == 2
    out = rig.send("35=1|34=2|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=2|49=ISLD|52=<TIME>|56=TW|112=HELLO")
    out = rig.send("35=4|34=1|49=TW|52=<TIME>|56=ISLD|36=20|123=Y")
    assert readable(out) == rig.ours(
        "35=5|34=3|49=ISLD|52=<TIME>|56=TW|58=MsgSeqNum too low, expecting 3 but received 1"
    )
    assert rig.ended()


def test_11_sequence_reset_ignores_msg_seq_num_and_refuses_to_go_back(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 11: SequenceReset-Reset: NewSeqNo > expected sets it, < is Reject 5."""
    rig.logon()
    assert rig.send("35=4|34=0|49=TW|52=<TIME>|56=ISLD|36=25") == []
    assert rig.session.next_target_seq_num == 25
    out = rig.send("35=1|34=25|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=2|49=ISLD|52=<TIME>|56=TW|112=HELLO")
    # Equal to the expected number (GapFillFlag=N written out): nothing changes.
    assert rig.send("35=4|34=0|49=TW|52=<TIME>|56=ISLD|36=26|123=N") == []
    assert rig.session.next_target_seq_num == 26
    # Lower: Reject "value is incorrect" naming the reset's own MsgSeqNum, no RefTagID.
    out = rig.send("35=4|34=0|49=TW|52=<TIME>|56=ISLD|36=1")
    assert readable(out) == rig.ours(
        "35=3|34=3|49=ISLD|52=<TIME>|56=TW|45=0"
        "|58=Value is incorrect (out of range) for this tag|372=4|373=5"
    )
    assert rig.session.next_target_seq_num == 26
    out = rig.send("35=1|34=26|49=TW|52=<TIME>|56=ISLD|112=HELLO")
    assert readable(out) == rig.ours("35=0|34=4|49=ISLD|52=<TIME>|56=TW|112=HELLO")


# ----------------------------------------------------------------------------- resend


def test_8_resend_request_gap_fills_admin_runs_and_resends_app_messages(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 8: admin runs -> one GapFill; app messages resent, PossDup + 122."""
    rig.logon()
    tr = "35=1|34={}|49=TW|52=<TIME>|56=ISLD|112=HELLO"
    sent_at: dict[int, str] = {}
    for peer_seq in (2, 3, 4):  # our 2-4: Heartbeats (admin)
        rig.clock.advance(S)
        assert len(rig.send(tr.format(peer_seq))) == 1
    for ours in (5, 6):  # our 5-6: ExecutionReports (application)
        rig.clock.advance(S)
        sent_at[ours] = rig.text("<TIME>")
        _send_app(rig)
    for peer_seq in (5, 6):  # our 7-8: Heartbeats
        rig.clock.advance(S)
        assert len(rig.send(tr.format(peer_seq))) == 1
    rig.clock.advance(S)
    sent_at[9] = rig.text("<TIME>")
    _send_app(rig)  # our 9
    rig.clock.advance(S)
    body = "|".join(f"{t}={v}" for t, v in ER)
    gap = "35=4|34={}|43=Y|49=ISLD|52=<TIME>|56=TW|122=<TIME>|36={}|123=Y"
    app = "35=8|34={0}|43=Y|49=ISLD|52=<TIME>|56=TW|122={1}|" + body

    def resent(seq: int) -> str:
        return app.format(seq, sent_at[seq])

    rr = "35=2|34={}|49=TW|52=<TIME>|56=ISLD|7=2|16={}"
    out = rig.send(rr.format(7, 4))
    assert readable(out) == rig.ours(gap.format(2, 5))
    out = rig.send(rr.format(8, 6))
    assert readable(out) == rig.ours(gap.format(2, 5), resent(5), resent(6))
    out = rig.send(rr.format(9, 8))
    assert readable(out) == rig.ours(gap.format(2, 5), resent(5), resent(6), gap.format(7, 9))
    out = rig.send(rr.format(10, 9))
    assert readable(out) == rig.ours(
        gap.format(2, 5), resent(5), resent(6), gap.format(7, 9), resent(9)
    )
    # Resending took no new numbers on either side.
    out = rig.send(tr.format(11))
    assert readable(out) == rig.ours("35=0|34=10|49=ISLD|52=<TIME>|56=TW|112=HELLO")


def test_20_resend_request_during_our_own_gap_is_answered_at_once(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 20: simultaneous ResendRequests: each side answers the other's."""
    rig.logon()
    sent_at = []
    for _ in range(2):  # our 2, 3: ExecutionReports
        rig.clock.advance(S)
        sent_at.append(rig.text("<TIME>"))
        _send_app(rig)
    rig.clock.advance(S)
    out = rig.send("35=0|34=7|49=TW|52=<TIME>|56=ISLD")  # peer's 2-6 missing
    assert readable(out) == rig.ours("35=2|34=4|49=ISLD|52=<TIME>|56=TW|7=2|16=0")
    out = rig.send("35=2|34=8|49=TW|52=<TIME>|56=ISLD|7=2|16=3")
    body = "|".join(f"{t}={v}" for t, v in ER)
    assert readable(out) == rig.ours(
        f"35=8|34=2|43=Y|49=ISLD|52=<TIME>|56=TW|122={sent_at[0]}|{body}",
        f"35=8|34=3|43=Y|49=ISLD|52=<TIME>|56=TW|122={sent_at[1]}|{body}",
    )
    # The peer's gap is filled; the Heartbeat 7 waiting in the queue is then counted. (The
    # ResendRequest 8 arrived out of order and was not queued, as in QuickFIX: the next
    # message, 9, would reveal it as a gap of its own.)
    for seq in range(2, 7):
        assert rig.send(f"35=0|34={seq}|43=Y|49=TW|52=<TIME>|56=ISLD|122=<TIME>") == []
    assert rig.session.next_target_seq_num == 8
    assert rig.session.next_sender_seq_num == 5


# ----------------------------------------------------------------------------- rejects

#: (inbound after the standard header ``35=<type>|34=2|...``, expected Reject body after 45=2)
MALFORMED = {
    "14a_invalid_tag_number": (
        "35=0|34=2|49=TW|52=<TIME>|56=ISLD|5000=HI",
        "58=Invalid tag number|371=5000|372=0|373=0",
    ),
    "14b_required_header_tag_missing": (
        "35=0|34=2|49=TW|52=<TIME>",
        "58=Required tag missing|371=56|372=0|373=1",
    ),
    "14b_required_body_tag_missing": (
        "35=D|49=TW|34=2|56=ISLD|52=<TIME>|40=1|60=<TIME>|54=1|21=3",
        "58=Required tag missing|371=11|372=D|373=1",
    ),
    "14c_tag_not_defined_for_message_type": (
        "35=0|34=2|49=TW|52=<TIME>|56=ISLD|55=MSFT",
        "58=Tag not defined for this message type|371=55|372=0|373=2",
    ),
    "14d_header_tag_specified_without_a_value": (
        "35=0|34=2|49=TW|52=<TIME>|56=",
        "58=Tag specified without a value|371=56|372=0|373=4",
    ),
    "14d_body_tag_specified_without_a_value": (
        "35=1|34=2|49=TW|52=<TIME>|56=ISLD|112=",
        "58=Tag specified without a value|371=112|372=1|373=4",
    ),
    "14e_value_out_of_range": (
        "35=D|34=2|49=TW|52=<TIME>|56=ISLD|11=ID|21=4|40=1|54=1|55=INTC|60=<TIME>",
        "58=Value is incorrect (out of range) for this tag|371=21|372=D|373=5",
    ),
    "14f_incorrect_data_format": (
        "35=D|34=2|49=TW|52=<TIME>|56=ISLD|11=ID|21=1|38=+200.00|40=1|54=1|55=INTC|60=<TIME>",
        "58=Incorrect data format for value|371=38|372=D|373=6",
    ),
    "14g_header_field_after_body": (
        "35=D|55=MSFT|34=2|49=TW|52=<TIME>|56=ISLD|11=id|21=3|40=1|54=1|60=<TIME>",
        "58=Tag specified out of required order|371=34|372=D|373=14",
    ),
    "14h_tag_appears_more_than_once": (
        "35=D|34=2|49=TW|52=<TIME>|56=ISLD|11=ID|21=1|40=1|40=2|54=1|55=INTC|60=<TIME>",
        "58=Tag appears more than once|371=40|372=D|373=13",
    ),
    "14i_num_in_group_count_wrong": (
        f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|{NOS}|386=3|336=PRE-OPEN|336=AFTER-HOURS",
        "58=Incorrect NumInGroup count for repeating group|371=386|372=D|373=16",
    ),
    "2q_invalid_msg_type": (
        "35=*|34=2|49=TW|52=<TIME>|56=ISLD",
        "58=Invalid MsgType|372=*|373=11",
    ),
    # QuickFIX's order, not the wire's: required fields first, then each field in tag order
    # (a value out of range in 167 before the unknown tag 999 written ahead of it).
    "precedence_required_before_invalid_tag": (
        "35=D|34=2|49=TW|52=<TIME>|56=ISLD|999=X|21=3|40=1|54=1|55=INTC|60=<TIME>",
        "58=Required tag missing|371=11|372=D|373=1",
    ),
    "precedence_lower_tag_first": (
        f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|999=X|{NOS}|167=BOO",
        "58=Value is incorrect (out of range) for this tag|371=167|372=D|373=5",
    ),
}


@pytest.mark.parametrize(("inbound", "reject"), MALFORMED.values(), ids=MALFORMED.keys())
def test_14_malformed_message_gets_a_session_reject_and_is_counted(
    rig: Rig, inbound: str, reject: str
) -> None:
    """FIX 4.4 Vol. 2 test 14a-i / 2q: Reject <3> naming the problem; inbound MsgSeqNum +1."""
    rig.logon()
    out = rig.send(inbound)
    assert readable(out) == rig.ours(f"35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=2|{reject}")
    assert rig.session.next_target_seq_num == 3
    assert rig.app.delivered == []
    out = rig.send("35=1|34=3|49=TW|52=<TIME>|56=ISLD|112=NEXT")
    assert readable(out) == rig.ours("35=0|34=3|49=ISLD|52=<TIME>|56=TW|112=NEXT")


@pytest.mark.parametrize("offset", ["-121", "+121"])
def test_2o_sending_time_off_by_more_than_two_minutes_rejects_and_logs_out(
    rig: Rig, offset: str
) -> None:
    """FIX 4.4 Vol. 2 test 2o: SendingTime accuracy -> Reject 373=10, then Logout."""
    rig.logon()
    edge = offset[0] + "120"
    assert rig.send(f"35=0|34=2|49=TW|52=<TIME{edge}>|56=ISLD") == []  # 120 s is still fine
    out = rig.send(f"35=0|34=3|49=TW|52=<TIME{offset}>|56=ISLD")
    assert readable(out) == rig.ours(
        "35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=3|58=SendingTime accuracy problem|372=0|373=10",
        "35=5|34=3|49=ISLD|52=<TIME>|56=TW",
    )
    assert rig.send("35=5|34=4|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.ended()


@pytest.mark.parametrize(
    "comp_ids",
    ["49=WT|52=<TIME>|56=ISLD", "49=TW|52=<TIME>|56=DLSI", "49=WT|52=<TIME>|56=DLSI"],
    ids=["sender", "target", "both"],
)
def test_2k_comp_id_not_matching_the_session_rejects_and_logs_out(rig: Rig, comp_ids: str) -> None:
    """FIX 4.4 Vol. 2 test 2k: wrong SenderCompID/TargetCompID -> Reject 373=9, then Logout."""
    rig.logon()
    out = rig.send(f"35=D|34=2|{comp_ids}|{NOS}")
    assert readable(out) == rig.ours(
        "35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=2|58=CompID problem|372=D|373=9",
        "35=5|34=3|49=ISLD|52=<TIME>|56=TW",
    )
    assert rig.app.delivered == []
    assert rig.send("35=5|34=3|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.ended()


@pytest.mark.parametrize("answered", [True, False], ids=["answered", "unanswered"])
def test_2i_begin_string_not_the_sessions_logs_out(rig: Rig, answered: bool) -> None:
    """FIX 4.4 Vol. 2 test 2i: unexpected BeginString -> Logout; disconnect on answer or timeout."""
    rig.logon()
    out = rig.deliver(frame("FIX.4.1", rig.text("35=1|34=2|49=TW|52=<TIME>|56=ISLD|112=id")))
    assert readable(out) == rig.ours("35=5|34=2|49=ISLD|52=<TIME>|56=TW|58=Incorrect BeginString")
    assert not rig.ended()
    if answered:
        assert rig.send("35=5|34=3|49=TW|52=<TIME>|56=ISLD") == []
        assert rig.ended()
    else:  # LogoutTimeout (2 s by default) without an answer
        assert rig.tick(1.999) == []
        assert not rig.ended()
        assert rig.tick(0.001) == []
        assert rig.ended()
    assert rig.app.logouts == 1


@pytest.mark.parametrize("answered", [True, False], ids=["answered", "unanswered"])
def test_12_13a_logout_we_start_ends_on_the_answer_or_after_logout_timeout(
    rig: Rig, answered: bool
) -> None:
    """FIX 4.4 Vol. 2 tests 12, 13a: our Logout is answered by a Logout, then we disconnect."""
    rig.logon()
    out = rig.session.logout("bye")
    assert readable(out) == rig.ours("35=5|34=2|49=ISLD|52=<TIME>|56=TW|58=bye")
    assert rig.session.logout() == []  # only one Logout
    if answered:
        assert rig.send("35=5|34=2|49=TW|52=<TIME>|56=ISLD") == []  # no second Logout
        assert rig.session.next_target_seq_num == 3
    else:
        assert rig.tick(1.999) == []
        assert not rig.ended()
        assert rig.tick(0.001) == []
    assert rig.ended()
    assert rig.app.logouts == 1


# ----------------------------------------------------------------------------- over sockets


class WirePeer:
    """The counterparty on a real TCP connection to our acceptor."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.buf = b""

    async def write(self, data: bytes) -> None:
        """Write raw bytes."""
        self.writer.write(data)
        await self.writer.drain()

    async def expect(self) -> bytes:
        """Return the next complete message the acceptor sent (ends with ``10=nnn<SOH>``)."""
        end = _CHECKSUM.search(self.buf)
        while end is None:
            chunk = await asyncio.wait_for(self.reader.read(4096), WAIT_S)
            assert chunk, f"connection closed; pending {self.buf!r}"
            self.buf += chunk
            end = _CHECKSUM.search(self.buf)
        msg, self.buf = self.buf[: end.end()], self.buf[end.end() :]
        return msg

    async def closed_silently(self) -> bool:
        """Return True when the acceptor closes the connection without sending anything more."""
        rest = await asyncio.wait_for(self.reader.read(), WAIT_S)
        return self.buf + rest == b""

    def close(self) -> None:
        """Close our end."""
        self.writer.close()


_CHECKSUM = re.compile(rb"\x0110=\d{3}\x01")
#: Seconds a socket read may wait before the test fails (answers come in milliseconds).
WAIT_S = 5.0


@dataclass
class Venue:
    """Our acceptor session ``ISLD`` behind a real :class:`SocketAcceptor` on 127.0.0.1."""

    rig: Rig
    acceptor: SocketAcceptor

    async def connect(self) -> WirePeer:
        """Open a connection as the counterparty."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.acceptor.port)
        return WirePeer(reader, writer)


@asynccontextmanager
async def listening(rig: Rig) -> AsyncIterator[Venue]:
    """Our FIX.4.4 acceptor on a free loopback port, on the rig's test clock."""
    acceptor = SocketAcceptor([rig.session], port=0, clock=rig.clock, logon_timeout=5)
    await acceptor.start()
    try:
        yield Venue(rig, acceptor)
    finally:
        await acceptor.stop(logout=False)


@pytest.mark.parametrize(
    ("begin", "text"),
    [
        ("FIX.4.4", "35=A|34=1|49=WT|52=<TIME>|56=ISLD|98=0|108=30"),
        ("FIX.4.4", "35=A|34=1|49=TW|52=<TIME>|56=DLSI|98=0|108=30"),
        ("FIX.3.9", "35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0|108=30"),
        ("FIX.4.4", "35=A|34=1|49=TW|52=20010101-00:00:00|56=ISLD|98=0|108=30"),
        ("FIX.4.4", "35=0|34=1|49=TW|52=<TIME>|56=ISLD"),
    ],
    ids=["1B.c-sender", "1B.c-target", "1B.d-begin-string", "1B.d-sending-time", "1B.e-not-logon"],
)
@pytest.mark.integration
async def test_1b_cde_invalid_logon_over_tcp_is_dropped_without_a_byte(
    rig: Rig, begin: str, text: str
) -> None:
    """FIX 4.4 Vol. 2 tests 1B.c-e: an invalid first message: disconnect without a message."""
    async with listening(rig) as venue:
        await _invalid_logon(venue, begin, text)


async def _invalid_logon(venue: Venue, begin: str, text: str) -> None:
    peer = await venue.connect()
    try:
        await peer.write(frame(begin, venue.rig.text(text)))
        assert await peer.closed_silently()
    finally:
        peer.close()
    session = venue.rig.session
    assert not session.is_logged_on
    assert (session.next_sender_seq_num, session.next_target_seq_num) == (1, 1)
    # The session is free again: a valid Logon on a new connection is answered.
    peer = await venue.connect()
    try:
        await peer.write(
            frame("FIX.4.4", venue.rig.text("35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0|108=30"))
        )
        assert readable([await peer.expect()]) == venue.rig.ours(
            "35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30"
        )
    finally:
        peer.close()


@pytest.mark.integration
async def test_2d_3b_2m_2t_garbled_frames_are_dropped_and_reveal_a_gap(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 tests 2d, 2m, 2t, 3b: garbled frames are ignored; MsgSeqNum not consumed."""
    async with listening(rig) as venue:
        await _garbled(venue)


async def _garbled(venue: Venue) -> None:
    rig = venue.rig
    peer = await venue.connect()
    try:
        await peer.write(
            frame("FIX.4.4", rig.text("35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0|108=30"))
        )
        assert readable([await peer.expect()]) == rig.ours(
            "35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30"
        )
        hb2 = frame("FIX.4.4", rig.text("35=0|34=2|49=TW|52=<TIME>|56=ISLD"))
        bad_sum = hb2[:-4] + b"%03d\x01" % ((int(hb2[-4:-1]) + 1) % 256)
        nos3 = frame("FIX.4.4", rig.text(f"35=D|34=3|49=TW|52=<TIME>|56=ISLD|{NOS}"))
        bad_field = frame("FIX.4.4", rig.text(f"35=D|34=3|49garbled=TW|52=<TIME>|56=ISLD|{NOS}"))
        bad_length = re.sub(rb"\x019=\d+\x01", b"\x019=30\x01", nos3, count=1)
        # 2t: MsgType <35> before BeginString <8>; and MsgType after MsgSeqNum <34>.
        type_first = b"35=0\x01" + frame("FIX.4.4", rig.text("34=3|49=TW|52=<TIME>|56=ISLD"))
        type_fourth = frame("FIX.4.4", rig.text("34=3|35=0|49=TW|52=<TIME>|56=ISLD"))
        for garbled in (bad_sum, hb2, bad_field, bad_length, type_first, type_fourth):
            await peer.write(garbled)
        await peer.write(frame("FIX.4.4", rig.text("35=1|34=4|49=TW|52=<TIME>|56=ISLD|112=SYNC")))
        # 2 counted; the four garbled frames after it took no number: 3 is missing.
        assert readable([await peer.expect()]) == rig.ours(
            "35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=3|16=0"
        )
        await peer.write(nos3)
        assert readable([await peer.expect()]) == rig.ours(
            "35=0|34=3|49=ISLD|52=<TIME>|56=TW|112=SYNC"
        )
        assert rig.app.delivered == [(b"D", 3)]
        assert rig.session.next_target_seq_num == 5
        log = rig.session.log
        assert isinstance(log, MemoryLog)
        dropped = [e.split("(")[1].split(")")[0] for e in log.events if e.startswith("Garbled")]
        assert dropped == [
            "CheckSum does not match",
            "malformed field",
            "BodyLength does not match",
            "bytes outside any message",
            "first three fields are not 8, 9, 35",
            "first three fields are not 8, 9, 35",
        ]
    finally:
        peer.close()


# ----------------------------------------------------------------------------- more logon


def test_1b_d_logon_without_heart_bt_int_disconnects_without_a_word(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 1B.d: a Logon missing a required field is invalid: disconnect only."""
    rig.session.on_connected(rig.clock.now_ns())
    assert rig.send("35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0") == []
    assert rig.ended()
    assert rig.app.logons == 0
    assert rig.session.next_sender_seq_num == 1


def _initiator(make_rig: MakeRig) -> Rig:
    rig = make_rig(connection_type="initiator", heart_bt_int=30)
    out = rig.session.on_connected(rig.clock.now_ns())
    assert readable(out) == rig.ours("35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30")
    return rig


def test_1s_initiator_logon_unanswered_within_logon_timeout_disconnects(make_rig: MakeRig) -> None:
    """FIX 4.4 Vol. 2 test 1S: no Logon answer within LogonTimeout (10 s) -> disconnect."""
    rig = _initiator(make_rig)
    assert rig.tick(9.999) == []
    assert not rig.ended()
    assert rig.tick(0.001) == []
    assert rig.ended()


def test_1s_initiator_logon_answer_with_seq_too_high_asks_resend(make_rig: MakeRig) -> None:
    """FIX 4.4 Vol. 2 test 1S: a Logon answer above the expected MsgSeqNum -> ResendRequest."""
    rig = _initiator(make_rig)
    out = rig.send("35=A|34=4|49=TW|52=<TIME>|56=ISLD|98=0|108=30")
    assert readable(out) == rig.ours("35=2|34=2|49=ISLD|52=<TIME>|56=TW|7=1|16=0")
    assert rig.session.is_logged_on
    assert rig.app.logons == 1


def test_1s_initiator_first_answer_not_a_logon_disconnects(make_rig: MakeRig) -> None:
    """FIX 4.4 Vol. 2 test 1S: the answer to our Logon must be a Logon: otherwise disconnect."""
    rig = _initiator(make_rig)
    assert rig.send("35=0|34=1|49=TW|52=<TIME>|56=ISLD") == []
    assert rig.ended()
    assert rig.app.logons == 0


@pytest.mark.parametrize("role", ["acceptor", "initiator"])
def test_logon_carries_next_expected_msg_seq_num_when_configured(
    make_rig: MakeRig, role: str
) -> None:
    """FIX 4.4 Vol. 2, Logon <A>: NextExpectedMsgSeqNum <789> is the next MsgSeqNum expected."""
    if role == "initiator":
        rig = make_rig(
            connection_type="initiator", heart_bt_int=30, send_next_expected_msg_seq_num=True
        )
        out = rig.session.on_connected(rig.clock.now_ns())
        assert readable(out) == rig.ours("35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30|789=1")
    else:
        rig = make_rig(send_next_expected_msg_seq_num=True)
        rig.session.on_connected(rig.clock.now_ns())
        out = rig.send("35=A|34=1|49=TW|52=<TIME>|56=ISLD|98=0|108=30")
        # the answer counts the Logon just received: 2 is expected next
        assert readable(out) == rig.ours("35=A|34=1|49=ISLD|52=<TIME>|56=TW|98=0|108=30|789=2")


# ----------------------------------------------------------------------------- variants


def test_8_without_persisted_messages_the_whole_range_is_one_gap_fill(make_rig: MakeRig) -> None:
    """FIX 4.4 Vol. 2 test 8 / Message Recovery: what cannot be resent is gap-filled."""
    rig = make_rig(persist_messages=False)
    rig.logon()
    for _ in range(3):  # our 2-4: ExecutionReports, not kept
        _send_app(rig)
    out = rig.send("35=2|34=2|49=TW|52=<TIME>|56=ISLD|7=2|16=3")
    assert readable(out) == rig.ours("35=4|34=2|43=Y|49=ISLD|52=<TIME>|56=TW|122=<TIME>|36=4|123=Y")
    out = rig.send("35=2|34=3|49=TW|52=<TIME>|56=ISLD|7=2|16=0")
    assert readable(out) == rig.ours("35=4|34=2|43=Y|49=ISLD|52=<TIME>|56=TW|122=<TIME>|36=5|123=Y")


def test_fixt_session_rules_hold_under_fixt_1_1(make_rig: MakeRig) -> None:
    """FIXT 1.1: the FIX 4.4 session rules, with DefaultApplVerID <1137> on the Logon."""
    rig = make_rig("FIXT.1.1")
    rig.logon()
    sent_at = rig.text("<TIME>")
    _send_app(rig)  # our 2
    rig.clock.advance(S)
    out = rig.send("35=0|34=3|49=TW|52=<TIME>|56=ISLD")
    assert readable(out) == rig.ours("35=2|34=3|49=ISLD|52=<TIME>|56=TW|7=2|16=0")
    out = rig.send("35=2|34=2|49=TW|52=<TIME>|56=ISLD|7=2|16=0")
    body = "|".join(f"{t}={v}" for t, v in ER)
    assert readable(out) == rig.ours(
        f"35=8|34=2|43=Y|49=ISLD|52=<TIME>|56=TW|122={sent_at}|{body}",
        "35=4|34=3|43=Y|49=ISLD|52=<TIME>|56=TW|122=<TIME>|36=4|123=Y",
    )
    assert rig.session.next_target_seq_num == 4  # the queued Heartbeat 3 followed
    # An application message checked against the application dictionary (FIX.5.0SP2).
    out = rig.send("35=D|34=4|49=TW|52=<TIME>|56=ISLD|11=ID|21=4|40=1|54=1|55=INTC|60=<TIME>")
    assert readable(out) == rig.ours(
        "35=3|34=4|49=ISLD|52=<TIME>|56=TW|45=4"
        "|58=Value is incorrect (out of range) for this tag|371=21|372=D|373=5"
    )


@pytest.mark.parametrize(
    ("routing", "reversed_routing"),
    [
        ("115=JCD", "128=JCD"),
        ("128=JCD", "115=JCD"),
        ("115=JCD|116=CS|144=CHI", "128=JCD|129=CS|145=CHI"),
        ("128=JCD|129=CS|145=CHI", "115=JCD|116=CS|144=CHI"),
    ],
)
def test_18_reject_of_a_third_party_message_is_routed_back(
    rig: Rig, routing: str, reversed_routing: str
) -> None:
    """FIX 4.4 Vol. 2 test 18: OnBehalfOf* <115/116/144> come back as DeliverTo* and vice versa."""
    rig.logon()
    out = rig.send(
        f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|{routing}|11=ID|21=3|38=100|40=w|54=1|55=INTC|60=<TIME>"
    )
    assert readable(out) == rig.ours(
        f"35=3|34=2|49=ISLD|52=<TIME>|56=TW|{reversed_routing}|45=2"
        "|58=Value is incorrect (out of range) for this tag|371=40|372=D|373=5"
    )


@pytest.mark.parametrize("routing", ["115", "128"])
def test_18_empty_routing_field_is_not_routed_back(rig: Rig, routing: str) -> None:
    """FIX 4.4 Vol. 2 tests 14d, 18: an empty routing field is rejected and not reversed."""
    rig.logon()
    out = rig.send(f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|{routing}=|{NOS}")
    assert readable(out) == rig.ours(
        "35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=2"
        f"|58=Tag specified without a value|371={routing}|372=D|373=4"
    )


def test_15_21_fields_in_any_order_and_empty_groups_are_accepted(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 tests 15, 21: header and body fields in any order; NumInGroup 0 is valid."""
    rig.logon()
    assert rig.send(f"35=D|34=2|49=TW|52=<TIME>|56=ISLD|{NOS}") == []
    reordered = "35=D|49=TW|34=3|56=ISLD|52=<TIME>|40=1|55=MSFT|60=<TIME>|54=1|21=3|11=id"
    assert rig.send(reordered) == []
    assert rig.send("35=d|34=4|49=TW|56=ISLD|52=<TIME>|320=R1|322=S1|323=6|55=TBS|454=0") == []
    assert rig.app.delivered == [(b"D", 2), (b"D", 3), (b"d", 4)]
    # What we send goes out in the standard order: header, then body in ascending tag order.
    assert rig.session.send(OutMessage("8", list(reversed(ER))))
    body = "|".join(f"{t}={v}" for t, v in ER)
    assert readable(rig.session.drain()) == rig.ours(f"35=8|34=2|49=ISLD|52=<TIME>|56=TW|{body}")


def test_16_messages_sent_while_disconnected_are_recovered_by_resend(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 16: messages queued while disconnected reach the peer on resend."""
    rig.logon()
    rig.session.on_disconnected(rig.clock.now_ns())
    rig.clock.advance(S)
    queued_at = rig.text("<TIME>")
    assert not rig.session.send(OutMessage("8", list(ER)))  # not sent now: kept as 2
    assert rig.session.drain() == []
    rig.clock.advance(S)
    rig.session.on_connected(rig.clock.now_ns())
    out = rig.send("35=A|34=2|49=TW|52=<TIME>|56=ISLD|98=0|108=30")
    assert readable(out) == rig.ours("35=A|34=3|49=ISLD|52=<TIME>|56=TW|98=0|108=30")
    # The peer expected 2 and sees 3: it asks, and the queued ExecutionReport comes.
    out = rig.send("35=2|34=3|49=TW|52=<TIME>|56=ISLD|7=2|16=0")
    body = "|".join(f"{t}={v}" for t, v in ER)
    assert readable(out) == rig.ours(
        f"35=8|34=2|43=Y|49=ISLD|52=<TIME>|56=TW|122={queued_at}|{body}",
        "35=4|34=3|43=Y|49=ISLD|52=<TIME>|56=TW|122=<TIME>|36=4|123=Y",
    )


def test_13b_unsolicited_logout_is_answered_then_disconnected(rig: Rig) -> None:
    """FIX 4.4 Vol. 2 test 13b: an unsolicited Logout is answered by a Logout; then disconnect."""
    rig.logon()
    out = rig.send("35=5|34=2|49=TW|52=<TIME>|56=ISLD|58=closing")
    assert readable(out) == rig.ours("35=5|34=2|49=ISLD|52=<TIME>|56=TW")
    assert rig.ended()
    assert rig.app.logouts == 1
    assert (rig.session.next_sender_seq_num, rig.session.next_target_seq_num) == (3, 3)


@pytest.mark.parametrize(
    ("begin", "inbound", "reject"),
    [
        ("FIX.4.0", "35=0|55=MSFT", "58=Tag not defined for this message type (55)"),
        ("FIX.4.1", "35=0|55=MSFT", "58=Tag not defined for this message type (55)"),
        ("FIX.4.2", "35=0|55=MSFT", "58=Tag not defined for this message type|371=55|372=0|373=2"),
        ("FIX.4.3", "35=0|55=MSFT", "58=Tag not defined for this message type|371=55|372=0|373=2"),
        # FIX.4.2 defines SessionRejectReason codes up to 11 only: 13 is left out.
        ("FIX.4.2", "35=1|112=A|112=B", "58=Tag appears more than once|371=112|372=1"),
        ("FIX.4.3", "35=1|112=A|112=B", "58=Tag appears more than once|371=112|372=1|373=13"),
    ],
)
def test_14_reject_layout_follows_the_version(
    make_rig: MakeRig, begin: str, inbound: str, reject: str
) -> None:
    """FIX 4.0-4.3 Reject <3>: RefTagID/RefMsgType/SessionRejectReason exist from FIX 4.2 on."""
    rig = make_rig(begin)
    rig.logon()
    mt, _, body = inbound.partition("|")
    out = rig.send(f"{mt}|34=2|49=TW|52=<TIME>|56=ISLD|{body}")
    assert readable(out) == rig.ours(f"35=3|34=2|49=ISLD|52=<TIME>|56=TW|45=2|{reject}")
    assert rig.session.next_target_seq_num == 3
