# SPDX-License-Identifier: MIT
"""SoupBinTCP sessions, sans-IO (no sockets: the bytes are passed by hand): login, heartbeats
both ways on the caller's clock, timeouts, logout, end of session, re-login with replay from
the server's store, and restarts from real files with nothing lost or doubled."""

from pathlib import Path

import pytest

from engine.venues.ouch import messages as m
from engine.venues.ouch.client import OuchClient, OuchHandler, OuchServerHandler, OuchServerSession
from engine.venues.ouch.soupbin import (
    CLIENT_HEARTBEAT_PACKET,
    END_OF_SESSION_PACKET,
    LOGOUT_REQUEST_PACKET,
    SERVER_HEARTBEAT_PACKET,
    ClientStatus,
    FrameReader,
    LoginRequest,
    NotLoggedIn,
    ServerStatus,
    SoupClientHandler,
    SoupClientSession,
    SoupServerHandler,
    SoupServerSession,
)
from engine.venues.ouch.store import (
    FileClientState,
    FileSequencedStore,
    MemoryClientState,
    MemorySequencedStore,
)

S = 1_000_000_000


class Got(SoupClientHandler):
    def __init__(self) -> None:
        self.seqs: list[tuple[int, bytes]] = []
        self.events: list[str] = []

    def on_sequenced(self, seq: int, payload: bytes, now_ns: int) -> None:
        self.seqs.append((seq, payload))

    def on_login_accepted(self, session: str, sequence_number: int, now_ns: int) -> None:
        self.events.append(f"accepted {session} {sequence_number}")

    def on_login_rejected(self, reason: str, now_ns: int) -> None:
        self.events.append(f"rejected {reason}")

    def on_end_of_session(self, now_ns: int) -> None:
        self.events.append("end")


class Echo(SoupServerHandler):
    """Answers every Unsequenced Data with a Sequenced Data of the same bytes."""

    def __init__(self) -> None:
        self.server: SoupServerSession | None = None
        self.got: list[bytes] = []

    def on_unsequenced(self, payload: bytes, now_ns: int) -> bytes:
        self.got.append(payload)
        assert self.server is not None
        return self.server.send_sequenced(b"echo:" + payload, now_ns)


def make_server(store: object = None, **kw: int) -> tuple[SoupServerSession, Echo]:
    echo = Echo()
    server = SoupServerSession(
        "USER",
        "PASS",
        session="SESS1",
        store=store or MemorySequencedStore(),
        handler=echo,
        **kw,  # type: ignore[arg-type]
    )
    echo.server = server
    return server, echo


def connect(client: SoupClientSession, server: SoupServerSession, now: int) -> None:
    server.on_connected(now)
    reply = server.on_data(client.on_connected(now), now)
    client.on_data(reply, now)


def test_login_accepted_then_unsequenced_out_and_sequenced_back() -> None:
    server, echo = make_server()
    got = Got()
    client = SoupClientSession("USER", "PASS", state=MemoryClientState(), handler=got)
    connect(client, server, 0)
    assert client.status is ClientStatus.LOGGED_IN
    assert server.status is ServerStatus.LOGGED_IN
    assert got.events == ["accepted SESS1 1"]
    out = server.on_data(client.send_unsequenced(b"hello", 1), 1)
    client.on_data(out, 2)
    assert echo.got == [b"hello"]
    assert got.seqs == [(1, b"echo:hello")]
    assert client.next_expected_seq == 2
    assert server.next_seq == 2


@pytest.mark.parametrize(
    ("user", "password", "session", "reason"),
    [("USER", "WRONG", "", "A"), ("NOBODY", "PASS", "", "A"), ("USER", "PASS", "OTHER", "S")],
)
def test_login_rejected(user: str, password: str, session: str, reason: str) -> None:
    server, _ = make_server()
    got = Got()
    client = SoupClientSession(
        user, password, state=MemoryClientState(), handler=got, session=session
    )
    connect(client, server, 0)
    assert got.events == [f"rejected {reason}"]
    assert client.status is ClientStatus.REJECTED
    assert client.wants_disconnect
    assert server.wants_disconnect
    with pytest.raises(NotLoggedIn):
        client.send_unsequenced(b"x", 0)


def test_heartbeats_both_ways_on_the_callers_clock() -> None:
    server, _ = make_server()
    got = Got()
    client = SoupClientSession("USER", "PASS", state=MemoryClientState(), handler=got)
    connect(client, server, 0)
    # Nothing due before one second of silence; then one each way, no more until the next second.
    assert client.on_timer(S - 1) == b""
    assert server.on_timer(S - 1) == b""
    assert client.on_timer(S) == CLIENT_HEARTBEAT_PACKET
    assert server.on_timer(S) == SERVER_HEARTBEAT_PACKET
    assert client.on_timer(S + S // 2) == b""
    server.on_data(CLIENT_HEARTBEAT_PACKET, S)
    client.on_data(SERVER_HEARTBEAT_PACKET, S)
    assert server.heartbeats_received == 1
    assert client.heartbeats_received == 1
    # Data sent counts as activity: no heartbeat right after it.
    client.send_unsequenced(b"x", 2 * S - 1)
    assert client.on_timer(2 * S) == b""
    assert not client.wants_disconnect
    assert not server.wants_disconnect


def test_silence_for_the_timeout_drops_the_connection_on_both_sides() -> None:
    server, _ = make_server(timeout_ns=15 * S)
    client = SoupClientSession("USER", "PASS", state=MemoryClientState(), handler=Got())
    connect(client, server, 0)
    for t in range(1, 15):  # heartbeats go out, but none arrives
        client.on_timer(t * S)
        server.on_timer(t * S)
    assert not client.wants_disconnect
    assert not server.wants_disconnect
    client.on_timer(15 * S)
    server.on_timer(15 * S)
    assert client.wants_disconnect
    assert server.wants_disconnect


def test_an_unanswered_login_times_out() -> None:
    client = SoupClientSession(
        "USER", "PASS", state=MemoryClientState(), handler=Got(), login_timeout_ns=2 * S
    )
    client.on_connected(0)
    assert client.on_timer(S) == b""
    assert not client.wants_disconnect
    client.on_timer(2 * S)
    assert client.wants_disconnect


def test_logout_closes_and_a_new_login_resumes_without_replaying_what_was_seen() -> None:
    server, _ = make_server()
    got = Got()
    state = MemoryClientState()
    client = SoupClientSession("USER", "PASS", state=state, handler=got)
    connect(client, server, 0)
    for i in range(3):
        client.on_data(server.send_sequenced(b"m%d" % i, 1), 1)
    out = client.logout(2)
    assert out == LOGOUT_REQUEST_PACKET
    assert client.status is ClientStatus.LOGOUT_SENT
    server.on_data(out, 2)
    assert server.wants_disconnect
    server.on_disconnected(3)
    client.on_disconnected(3)
    assert server.send_sequenced(b"m3", 4) == b""  # stored while nobody is logged in
    connect(client, server, 5)
    assert client.login_request().requested_sequence_number == 5
    assert got.seqs == [(1, b"m0"), (2, b"m1"), (3, b"m2"), (4, b"m3")]
    assert got.events[-1] == "accepted SESS1 4"


def test_a_client_that_asks_for_older_messages_gets_them_once() -> None:
    server, _ = make_server()
    for i in range(5):
        server.send_sequenced(b"m%d" % i, 0)
    got = Got()
    state = MemoryClientState()
    state.set_next_expected_seq(3)
    client = SoupClientSession("USER", "PASS", state=state, handler=got)
    connect(client, server, 0)
    assert [s for s, _ in got.seqs] == [3, 4, 5]
    # A server that replays from further back than asked: the client drops what it has.
    state.set_next_expected_seq(6)
    server2, _ = make_server(store=server.store)
    client.on_disconnected(1)
    server2.on_connected(1)
    reply = server2.on_data(
        LoginRequest(username="USER", password="PASS", requested_sequence_number=1).encode(), 1
    )
    client.on_connected(1)
    client.on_data(reply, 1)
    assert [s for s, _ in got.seqs] == [3, 4, 5]
    assert client.duplicates == 5


def test_requested_sequence_zero_means_only_new_messages() -> None:
    server, _ = make_server()
    for i in range(3):
        server.send_sequenced(b"m%d" % i, 0)
    server.on_connected(0)
    reply = server.on_data(
        LoginRequest(username="user", password="PASS", requested_sequence_number=0).encode(), 0
    )
    packets = FrameReader().feed(reply)
    assert packets == [(ord("A"), b"     SESS1" + b"4".rjust(20))]


def test_a_server_that_lost_messages_is_reported_as_a_gap() -> None:
    server, _ = make_server()
    server.send_sequenced(b"m0", 0)
    got = Got()
    state = MemoryClientState()
    state.set_next_expected_seq(1)
    client = SoupClientSession("USER", "PASS", state=state, handler=got)
    server.on_connected(0)
    client.on_connected(0)
    # The server answers with 3 (it cannot replay 1 and 2).
    from engine.venues.ouch.soupbin import LoginAccepted

    client.on_data(LoginAccepted(session="SESS1", sequence_number=3).encode(), 0)
    assert client.gaps == 2
    assert state.next_expected_seq == 3


def test_end_of_session_stops_the_session_and_refuses_new_logins() -> None:
    server, _ = make_server()
    got = Got()
    client = SoupClientSession("USER", "PASS", state=MemoryClientState(), handler=got)
    connect(client, server, 0)
    out = server.end_session(1)
    assert out == END_OF_SESSION_PACKET
    assert server.wants_disconnect
    client.on_data(out, 1)
    assert got.events[-1] == "end"
    assert client.status is ClientStatus.ENDED
    assert client.wants_disconnect
    client.on_disconnected(2)
    server.on_disconnected(2)
    assert client.status is ClientStatus.ENDED
    got2 = Got()
    client2 = SoupClientSession("USER", "PASS", state=MemoryClientState(), handler=got2)
    connect(client2, server, 3)
    assert got2.events == ["rejected S"]


def test_garbage_before_login_is_dropped() -> None:
    server, _ = make_server()
    server.on_connected(0)
    assert server.on_data(b"\x00\x01U", 0) == b""
    assert server.wants_disconnect


# ----------------------------------------------------------------------------- restarts


class Recorder(OuchHandler):
    def __init__(self) -> None:
        self.msgs: list[tuple[int, m.OuchMessage]] = []

    def on_message(self, msg: m.OuchMessage, seq: int, now_ns: int, payload: bytes = b"") -> None:
        self.msgs.append((seq, msg))


class Acceptor(OuchServerHandler):
    def __init__(self) -> None:
        self.server: OuchServerSession | None = None
        self.orders: list[m.OuchMessage] = []

    def on_message(self, msg: m.OuchMessage, now_ns: int) -> bytes:
        assert self.server is not None
        assert isinstance(msg, m.EnterOrder)
        self.orders.append(msg)
        return self.server.send(accepted(msg, now_ns), now_ns)


def accepted(o: m.EnterOrder, now_ns: int) -> m.OrderAccepted:
    return m.OrderAccepted(
        timestamp=now_ns,
        user_ref_num=o.user_ref_num,
        side=o.side,
        quantity=o.quantity,
        symbol=o.symbol,
        price=o.price,
        time_in_force=o.time_in_force,
        display=o.display,
        order_reference_number=1000 + o.user_ref_num,
        capacity=o.capacity,
        inter_market_sweep_eligibility=o.inter_market_sweep_eligibility,
        cross_type=o.cross_type,
        order_state="L",
        cl_ord_id=o.cl_ord_id,
    )


def open_both(tmp: Path) -> tuple[OuchClient, Recorder, OuchServerSession, Acceptor]:
    rec = Recorder()
    client = OuchClient("USER", "PASS", state=FileClientState(tmp / "client", "USER"), handler=rec)
    acc = Acceptor()
    server = OuchServerSession(
        "USER",
        "PASS",
        session="SESS1",
        store=FileSequencedStore(tmp / "server", "USER"),
        handler=acc,
    )
    acc.server = server
    return client, rec, server, acc


def test_restart_of_both_sides_from_files_loses_and_doubles_nothing(tmp_path: Path) -> None:
    client, rec, server, acc = open_both(tmp_path)
    server.soup.on_connected(0)
    client.on_data(server.soup.on_data(client.on_connected(0), 0), 0)
    refs = []
    for i in range(5):
        ref, data = client.enter_order(
            side="B", quantity=100 + i, symbol="AAPL", price=1_000_000, cl_ord_id=f"C{i}", now_ns=i
        )
        refs.append(ref)
        reply = server.soup.on_data(data, i)
        if i < 3:  # the connection dies: the last two Accepted never reach the client
            client.on_data(reply, i)
    assert refs == [1, 2, 3, 4, 5]
    assert [s for s, _ in rec.msgs] == [1, 2, 3]
    # kill -9 of both processes: nothing is closed, the objects are just gone.
    del client, server
    client, rec2, server, acc2 = open_both(tmp_path)
    assert client.state.next_expected_seq == 4
    assert client.state.next_user_ref_num == 6
    assert server.soup.next_seq == 6
    server.soup.on_connected(10)
    client.on_data(server.soup.on_data(client.on_connected(10), 10), 10)
    assert [(s, msg.user_ref_num) for s, msg in rec2.msgs] == [(4, 4), (5, 5)]  # type: ignore[attr-defined]
    ref, data = client.enter_order(side="S", quantity=1, symbol="AAPL", price=1, now_ns=11)
    client.on_data(server.soup.on_data(data, 11), 11)
    assert ref == 6
    assert [s for s, _ in rec.msgs + rec2.msgs] == [1, 2, 3, 4, 5, 6]
    assert [o.user_ref_num for o in acc.orders + acc2.orders] == [1, 2, 3, 4, 5, 6]  # type: ignore[attr-defined]


def test_orders_are_refused_before_login_without_using_a_user_ref_num() -> None:
    state = MemoryClientState()
    client = OuchClient("USER", "PASS", state=state, handler=OuchHandler())
    with pytest.raises(NotLoggedIn):
        client.enter_order(side="B", quantity=1, symbol="A", price=1, now_ns=0)
    assert state.next_user_ref_num == 1
