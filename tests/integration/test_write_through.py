# SPDX-License-Identifier: MIT
"""Output of a burst is written as it is made, every WRITE_EVERY messages, not all at the end:
the peer works on the first answers while the rest are made. Real sessions on 127.0.0.1."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.fix.application import Application, SessionID
from engine.fix.benchtables import er_fields, nos_fields
from engine.fix.message import FixMessage
from engine.fix.session import lookup_session
from engine.fix.transport import WRITE_EVERY
from tests.factories import socket_pair

pytestmark = pytest.mark.integration

ORDERS = 600


class _Counting:
    """The connection's real transport, with its writes counted."""

    def __init__(self, transport: Any) -> None:
        self._t = transport
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self._t.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._t, name)


class _Venue(Application):
    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        tmpl = getattr(self, "tmpl", None)
        if tmpl is None:
            tmpl = self.tmpl = s.template(b"8", er_fields("4.4"))
        clordid = message.get(11) or b""
        s.send_template(tmpl, (clordid, b"E" + clordid, b"O" + clordid))


class _Client(Application):
    def __init__(self) -> None:
        self.got: list[bytes] = []
        self.done: asyncio.Future[None] | None = None

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.append(message.get(11) or b"")
        if len(self.got) == ORDERS and self.done is not None:
            self.done.set_result(None)


async def _burst() -> tuple[int, int, list[bytes], int, int]:
    app = _Client()
    async with socket_pair(_Venue(), app, use_data_dictionary=True) as pair:
        (venue_conn,) = pair.acceptor.active.values()
        (client_conn,) = pair.initiator.active.values()
        venue_t = venue_conn._transport = _Counting(venue_conn._transport)  # type: ignore[assignment]
        client_t = client_conn._transport = _Counting(client_conn._transport)  # type: ignore[assignment]
        client = pair.client
        nos = client.template(b"D", nos_fields("4.4"))
        app.done = asyncio.get_running_loop().create_future()
        for i in range(ORDERS):  # one loop iteration: nothing is read meanwhile
            client.send_template(nos, (b"c%d" % i,))
        await asyncio.wait_for(app.done, 20)
        return (
            client_t.writes,
            venue_t.writes,
            app.got,
            client.store.next_target_seq_num,
            pair.venue.store.next_target_seq_num,
        )


def test_a_burst_is_written_as_it_is_made_in_order() -> None:
    client_writes, venue_writes, got, client_next_in, venue_next_in = asyncio.run(_burst())
    # Every answer, in order, each message in sequence (no gap, no resend, no reject).
    assert got == [b"c%d" % i for i in range(ORDERS)]
    assert venue_next_in == ORDERS + 2  # Logon + the orders
    assert client_next_in == ORDERS + 2
    # The client's sends from one loop iteration are gathered until the loop comes round
    # (engine/fix/transport.py), and go out at least every WRITE_EVERY messages.
    assert WRITE_EVERY <= 64
    assert client_writes >= ORDERS // 64
    # The venue read many orders at a time (the client wrote them while it could not read);
    # its answers to each read went out every WRITE_EVERY, not once per read.
    assert venue_writes >= ORDERS // 64
