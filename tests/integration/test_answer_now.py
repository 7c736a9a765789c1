# SPDX-License-Identifier: MIT
"""The answer to a read of one message leaves at once; the answers to a read of several, together.

An acceptor session on 127.0.0.1 against a raw socket peer in a thread of its own. The
acceptor's application answers a NewOrderSingle with an ExecutionReport, then waits (still in
its callback) for the peer to say whether the report has reached it:

* a read of one NewOrderSingle: its first answer is written before the callback returns
  (``FixSession.answer_now``), and what the callback sends after it follows in order;
* a read of two: the answers are gathered and written when the read is done, as before.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable

import pytest

from engine.clock import LiveClock
from engine.fix.application import Application, SessionID
from engine.fix.codec import FixDecoder, encode, format_timestamp
from engine.fix.message import FixMessage
from engine.fix.session import FixSession, lookup_session
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor

pytestmark = pytest.mark.integration

_BEGIN = b"FIX.4.4"
_REPORT: list[tuple[int, bytes | None]] = [
    (6, b"0"), (11, None), (14, b"0"), (17, None), (37, None), (39, b"0"), (54, b"1"),
    (55, b"X"), (150, b"0"), (151, b"1"),
]  # fmt: skip


def _msg(msg_type: bytes, seq: int, body: list[tuple[int, bytes]]) -> bytes:
    sent = format_timestamp(LiveClock().now_ns(), 3)
    head = [(34, b"%d" % seq), (49, b"PEER"), (52, sent), (56, b"VENUE")]
    return encode(_BEGIN, msg_type, head, body)


class _Peer(threading.Thread):
    """Logs on, sends what it is told, sets ``arrived`` when an ExecutionReport comes."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.arrived = threading.Event()
        self.reports: list[bytes] = []  # ClOrdID <11> of each report, in order of arrival
        self.logged_on = threading.Event()
        self.seq = 1

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def run(self) -> None:
        dec = FixDecoder()
        self.send(_msg(b"A", 1, [(98, b"0"), (108, b"30"), (141, b"Y")]))
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            for m in dec.feed(data):
                if m.msg_type == b"A":
                    self.logged_on.set()
                elif m.msg_type == b"8":
                    self.reports.append(m.get(11) or b"")
                    self.arrived.set()


class _Venue(Application):
    """Answers each order with a report, waits for the peer's word, then sends a second one."""

    def __init__(self, peer: list[_Peer]) -> None:
        self.peer = peer
        self.seen_in_callback: list[bool] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        clordid = message.get(11) or b""
        tmpl = s.template(b"8", _REPORT)
        peer = self.peer[0]
        peer.arrived.clear()
        s.send_template(tmpl, (clordid, b"E" + clordid, b"O" + clordid))
        # Still in the callback: has the report reached the peer?
        self.seen_in_callback.append(peer.arrived.wait(0.5))
        s.send_template(tmpl, (clordid + b"-2", b"F" + clordid, b"O" + clordid))


def _order(seq: int, clordid: bytes) -> bytes:
    return _msg(b"D", seq, [(11, clordid), (21, b"1"), (38, b"1"), (40, b"1"), (54, b"1"),
                            (55, b"X"), (60, b"20261206-10:00:00.000")])  # fmt: skip


async def _run() -> tuple[list[bool], list[bytes]]:
    peer: list[_Peer] = []
    app = _Venue(peer)
    session = FixSession(
        SessionSettings(
            begin_string="FIX.4.4",
            sender_comp_id="VENUE",
            target_comp_id="PEER",
            use_data_dictionary=False,
        ),
        MemoryStore(),
        app,
    )
    acceptor = SocketAcceptor([session], port=0)
    await acceptor.start()
    loop = asyncio.get_running_loop()
    p = _Peer(acceptor.port)
    peer.append(p)
    try:
        p.start()
        assert await loop.run_in_executor(None, p.logged_on.wait, 10)
        p.send(_order(2, b"one"))  # a read of one message
        await _wait(lambda: len(p.reports) >= 2)
        p.send(_order(3, b"a") + _order(4, b"b"))  # one write: a read of two
        await _wait(lambda: len(p.reports) >= 6)
        return app.seen_in_callback, p.reports
    finally:
        await acceptor.stop()
        session.close()
        p.sock.close()
        p.join(5)


async def _wait(done: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("the reports did not come")
        await asyncio.sleep(0.01)


def test_the_answer_to_a_lone_message_leaves_before_its_callback_returns() -> None:
    seen, reports = asyncio.run(_run())
    # One order alone: its report reached the peer while the callback still ran.
    assert seen[0] is True
    # Two orders in one read: nothing is written until the read is done.
    assert seen[1:] == [False, False]
    # Every report, in the order sent.
    assert reports == [b"one", b"one-2", b"a", b"a-2", b"b", b"b-2"]
