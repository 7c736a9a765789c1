# SPDX-License-Identifier: MIT
"""A connection's read of a few good messages takes the session in one call (#18).

``_Connection.data_received`` hands a read of 2-32 good frames to ``on_messages`` itself (what
``_process`` -> ``_burst`` do); these tests feed the venue's real connection (a session logged
on over 127.0.0.1) reads of every size, garbled frames among some, and check that the venue
and the client see what they see when the same frames arrive one per read.
"""

from __future__ import annotations

import asyncio

from engine.fix.application import Application, SessionID
from engine.fix.benchtables import er_fields
from engine.fix.codec import encode, format_timestamp
from engine.fix.message import FixMessage
from engine.fix.session import FixSession, lookup_session
from tests.factories import socket_pair

#: Reads: (orders, index of a garbled frame among them or -1).
PLAN = [(2, -1), (1, -1), (3, -1), (5, -1), (16, -1), (17, -1), (32, -1), (33, -1), (2, 1)]
PLAN += [(10, 4), (32, 0), (4, -1)]


class _Venue(Application):
    def __init__(self) -> None:
        self.got: list[bytes] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        tmpl = getattr(self, "tmpl", None)
        if tmpl is None:
            tmpl = self.tmpl = s.template(b"8", er_fields("4.4"))
        clordid = message.get(11) or b""
        self.got.append(clordid)
        s.send_template(tmpl, (clordid, b"E" + clordid, b"O" + clordid))


class _Client(Application):
    def __init__(self, expect: int) -> None:
        self.got: list[bytes] = []
        self.expect = expect
        self.done: asyncio.Future[None] | None = None

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.append(message.get(11) or b"")
        if len(self.got) == self.expect and self.done is not None:
            self.done.set_result(None)


def _order(venue: FixSession, seq: int, clordid: bytes) -> bytes:
    now = venue._clock.now_ns()
    header = [(34, b"%d" % seq), (49, b"ME"), (52, format_timestamp(now)), (56, b"EXCH")]
    body = [(11, clordid), (21, b"1"), (38, b"100"), (40, b"1"), (54, b"1"), (55, b"ES")]
    body.append((60, format_timestamp(now)))
    return encode(b"FIX.4.4", b"D", header, body)


async def _run(whole: bool) -> tuple[list[bytes], list[bytes], int, int]:
    good = sum(n - (bad >= 0) for n, bad in PLAN)
    venue_app, client_app = _Venue(), _Client(good)
    async with socket_pair(venue_app, client_app, use_data_dictionary=True) as pair:
        (conn,) = pair.acceptor.active.values()
        client_app.done = asyncio.get_running_loop().create_future()
        k = 0
        for n, bad in PLAN:
            frames: list[bytes] = []
            seq = pair.venue.next_target_seq_num
            for j in range(n):
                raw = _order(pair.venue, seq, b"c%d" % k)
                k += 1
                if j == bad:  # a wrong CheckSum: dropped, its sequence number not used
                    frames.append(raw[:-4] + (b"000" if raw[-4:-1] != b"000" else b"001") + b"\x01")
                    continue
                frames.append(raw)
                seq += 1
            if whole:
                conn.data_received(b"".join(frames))
            else:
                for raw in frames:
                    conn.data_received(raw)
            await asyncio.sleep(0)
        await asyncio.wait_for(client_app.done, 20)
        return (
            venue_app.got,
            client_app.got,
            pair.venue.next_target_seq_num,
            pair.client.next_target_seq_num,
        )


def test_reads_of_a_few_messages_give_what_reads_of_one_give() -> None:
    whole = asyncio.run(_run(True))
    single = asyncio.run(_run(False))
    venue_got, client_got, venue_next, client_next = whole
    expected = [
        b"c%d" % (sum(m for m, _ in PLAN[:i]) + j)
        for i, (n, bad) in enumerate(PLAN)
        for j in range(n)
        if j != bad
    ]
    assert venue_got == expected
    assert client_got == expected
    assert venue_next == len(expected) + 2  # the Logon, then the orders
    assert client_next == len(expected) + 2
    assert whole == single
