# SPDX-License-Identifier: MIT
"""Interop with an independent SoupBinTCP implementation: Nasdaq's ``nasdaq-protocols``.

Its client logs into our server (login, an Enter Order as Unsequenced Data, the Order Accepted
back as Sequenced Data, logout, a re-login that asks for message 1 and gets it replayed), and
our client logs into its server (login with our next expected sequence number, an order, the
answer decoded, a reconnect that asks for the next message). The OUCH bytes on their side are
packed and unpacked with ``struct`` here, from the specification's layouts, not with our codec.
"""

import struct
from pathlib import Path
from typing import Any

import pytest

from engine.venues.ouch import messages as m
from engine.venues.ouch.client import OuchClient, OuchServerSession
from engine.venues.ouch.link import SoupClientLink, SoupServerListener
from engine.venues.ouch.store import FileClientState, FileSequencedStore
from tests.unit.engine.venues.ouch.test_link import until
from tests.unit.engine.venues.ouch.test_soupbin import Acceptor, Recorder

soup = pytest.importorskip("nasdaq_protocols.soup")
common = pytest.importorskip("nasdaq_protocols.common")

pytestmark = pytest.mark.integration

ENTER = struct.Struct(">cIcI8sQccccc14sH")  # Enter Order without appendage (47 bytes)
ACCEPTED = struct.Struct(">cQIcI8sQccQcccc14sH")  # Order Accepted without appendage (64 bytes)


def their_enter_order(ref: int) -> bytes:
    return ENTER.pack(
        b"O",
        ref,
        b"B",
        300,
        b"NVDA    ",
        1_234_500,
        b"0",
        b"Y",
        b"A",
        b"N",
        b"N",
        b"THEIRS".ljust(14),
        0,
    )


async def test_their_client_against_our_server(tmp_path: Path) -> None:
    acc = Acceptor()
    server = OuchServerSession(
        "TRADER",
        "SECRET",
        session="SESS1",
        store=FileSequencedStore(tmp_path, "TRADER"),
        handler=acc,
    )
    acc.server = server
    listener = SoupServerListener([server.soup])
    port = await listener.start()
    got: list[Any] = []

    async def on_msg(msg: Any) -> None:
        got.append(msg)

    client = await soup.connect_async(
        ("127.0.0.1", port),
        "TRADER",
        "SECRET",
        "",
        sequence=1,
        on_msg_coro=on_msg,
        client_heartbeat_interval=1,
        server_heartbeat_interval=5,
    )
    assert client.session_id.session == "SESS1"
    client.send_unseq_data(their_enter_order(41))
    await until(lambda: any(isinstance(x, soup.SequencedData) for x in got))
    [order] = acc.orders
    assert isinstance(order, m.EnterOrder)
    assert (order.user_ref_num, order.symbol, order.quantity, order.price, order.cl_ord_id) == (
        41,
        "NVDA",
        300,
        1_234_500,
        "THEIRS",
    )
    data = next(x for x in got if isinstance(x, soup.SequencedData)).data
    fields = ACCEPTED.unpack(data[: ACCEPTED.size])
    assert fields[0] == b"A"
    assert fields[2] == 41
    assert fields[5] == b"NVDA    "
    assert fields[6] == 1_234_500
    assert fields[13] == b"L"
    assert fields[15] == 0
    client.logout()
    await until(lambda: not listener.is_connected(server.soup))
    # Log in again asking for message 1: replayed from our store.
    got.clear()
    again = await soup.connect_async(
        ("127.0.0.1", port), "TRADER", "SECRET", "SESS1", sequence=1, on_msg_coro=on_msg
    )
    await until(lambda: any(isinstance(x, soup.SequencedData) for x in got))
    assert next(x for x in got if isinstance(x, soup.SequencedData)).data == data
    again.logout()
    await until(lambda: not listener.is_connected(server.soup))
    # Wrong password: Login Rejected 'A', which their client reports as a refusal.
    with pytest.raises(ConnectionRefusedError):
        await soup.connect_async(("127.0.0.1", port), "TRADER", "WRONG", "", sequence=1)
    await listener.stop()


async def test_our_client_against_their_server(tmp_path: Path) -> None:
    logins: list[Any] = []
    orders: list[tuple[Any, ...]] = []
    sessions: list[Any] = []

    class TheirServer(soup.SoupServerSession):  # type: ignore[misc]
        async def on_login(self, msg: Any) -> Any:
            logins.append(msg)
            if msg.user != "TRADER" or msg.password != "SECRET":
                return soup.LoginRejected("A")
            return soup.LoginAccepted("SESS9", int(msg.sequence) or 1)

        async def on_unsequenced(self, msg: Any) -> None:
            f = ENTER.unpack(msg.data[: ENTER.size])
            orders.append(f)
            self.send_seq_msg(
                ACCEPTED.pack(
                    b"A",
                    36_000_000_000_000,
                    f[1],
                    f[2],
                    f[3],
                    f[4],
                    f[5],
                    f[6],
                    f[7],
                    777,
                    f[8],
                    f[9],
                    f[10],
                    b"L",
                    f[11],
                    0,
                )
            )

    def factory() -> Any:
        s = TheirServer(client_heartbeat_interval=5, server_heartbeat_interval=1)
        sessions.append(s)
        return s

    server, serving = await common.start_server(("127.0.0.1", 0), factory)
    port = server.sockets[0].getsockname()[1]
    rec = Recorder()
    client = OuchClient("TRADER", "SECRET", state=FileClientState(tmp_path, "TRADER"), handler=rec)
    link = SoupClientLink(client, "127.0.0.1", port, reconnect_min_s=0.02)
    await link.start()
    await link.wait_logged_in()
    assert client.soup.session == "SESS9"
    ref, data = client.enter_order(
        side="B", quantity=10, symbol="AMD", price=1_500_000, cl_ord_id="OURS", now_ns=0
    )
    link.send(data)
    await until(lambda: len(rec.msgs) == 1)
    [(seq, msg)] = rec.msgs
    assert seq == 1
    assert isinstance(msg, m.OrderAccepted)
    assert (msg.user_ref_num, msg.symbol, msg.price, msg.order_reference_number) == (
        ref,
        "AMD",
        1_500_000,
        777,
    )
    assert orders[0][1:6] == (ref, b"B", 10, b"AMD     ", 1_500_000)
    assert orders[0][11] == b"OURS".ljust(14)
    # Reconnect: the Login Request asks for the next message (2) of the same session.
    link.drop()
    await until(lambda: len(logins) == 2 and client.is_logged_in)
    assert (logins[0].sequence, logins[1].sequence, logins[1].session) == ("1", "2", "SESS9")
    await link.stop()
    for s in sessions:
        await s.close()
    await common.stop_task(serving)
    server.close()
    await server.wait_closed()
