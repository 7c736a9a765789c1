# SPDX-License-Identifier: MIT
"""Our initiator and our acceptor trade every order-manager message over loopback sockets.

FIX 4.2, FIX 4.4 and FIXT.1.1 / FIX 5.0 SP2, both sides validating against the shipped
dictionaries, with file stores and file logs.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from engine.fix.application import Application, SessionID
from engine.fix.log import FileLog
from engine.fix.message import FixMessage, Group, OutMessage
from engine.fix.session import FixSession, lookup_session
from engine.fix.settings import SessionSettings
from engine.fix.store import FileStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from tests.factories import tls_contexts

pytestmark = pytest.mark.integration

# ------------------------------------------------------------------ messages of each version

#: A fixed TransactTime for the messages below.
TS = "20240102-03:04:05.678"


def _inst(version: str) -> list[tuple[int, str]]:
    return [(55, "AAPL")]


def new_order_single(version: str, clordid: str) -> OutMessage:
    body = [
        (11, clordid),
        (21, "1"),
        (38, "100"),
        (40, "2"),
        (44, "101.25"),
        (54, "1"),
        (59, "0"),
        (60, TS),
    ]
    return OutMessage("D", body + _inst(version))


def cancel_request(version: str, clordid: str, orig: str) -> OutMessage:
    body = [(11, clordid), (41, orig), (38, "100"), (54, "1"), (60, TS)]
    return OutMessage("F", body + _inst(version))


def replace_request(version: str, clordid: str, orig: str) -> OutMessage:
    body = [
        (11, clordid),
        (41, orig),
        (21, "1"),
        (38, "200"),
        (40, "2"),
        (44, "101.5"),
        (54, "1"),
        (60, TS),
    ]
    return OutMessage("G", body + _inst(version))


def status_request(version: str, clordid: str) -> OutMessage:
    return OutMessage("H", [(11, clordid), (54, "1"), *_inst(version)])


def execution_report(
    version: str, clordid: str, exec_type: str, ord_status: str, leaves: str
) -> OutMessage:
    exec_id = f"E-{clordid}-{exec_type}"
    body: list[tuple[int, str]] = [
        (6, "101.25"), (11, clordid), (14, "0"), (17, exec_id), (37, f"O-{clordid}"),
        (38, "100"), (39, ord_status), (54, "1"), (150, exec_type), (151, leaves),
    ]  # fmt: skip
    if version == "FIX.4.2":
        body.append((20, "0"))
    return OutMessage("8", body + _inst(version))


def cancel_reject(version: str, clordid: str, orig: str) -> OutMessage:
    return OutMessage(
        "9", [(11, clordid), (37, "NONE"), (39, "8"), (41, orig), (102, "1"), (434, "1")]
    )


def business_reject(ref_type: str) -> OutMessage:
    return OutMessage("j", [(58, "not today"), (372, ref_type), (380, "0")])


def md_request(version: str, req_id: str) -> OutMessage:
    msg = OutMessage("V", [(262, req_id), (263, "1"), (264, "5"), (265, "1")])
    msg.add_group(267, [[(269, "0")], [(269, "1")]])
    msg.add_group(146, [_inst(version)])
    return msg


def md_snapshot(version: str, req_id: str) -> OutMessage:
    msg = OutMessage("W", [(262, req_id), *_inst(version)])
    if version == "FIX.5.0SP2":
        msg.set(779, TS)
    # Members deliberately out of dictionary order: the session sorts them.
    msg.add_group(
        268,
        [[(270, "101.25"), (269, "0"), (271, "300")], [(271, "200"), (270, "101.5"), (269, "1")]],
    )
    return msg


def md_incremental(version: str, req_id: str) -> OutMessage:
    msg = OutMessage("X", [(262, req_id)])
    entry: list[tuple[int, str] | Group] = [(279, "0"), (269, "0"), (270, "101.3"), (271, "50")]
    entry += _inst(version)
    msg.add_group(268, [entry])
    return msg


# ------------------------------------------------------------------ applications

VERSIONS = [
    ("FIX.4.2", None, "FIX.4.2"),
    ("FIX.4.4", None, "FIX.4.4"),
    ("FIXT.1.1", "FIX.5.0SP2", "FIX.5.0SP2"),
]


class Exchange(Application):
    """Answers like a venue: acks, cancels, replaces, status, market data, rejects."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.orders: set[bytes] = set()

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        v = self.version
        mt = message.msg_type
        clordid = (message.get(11) or b"").decode()
        if mt == b"D":
            self.orders.add(message.get(11) or b"")
            s.send(execution_report(v, clordid, "0", "0", "100"))
        elif mt == b"F":
            if message.get(41) in self.orders:
                s.send(execution_report(v, clordid, "4", "4", "0"))
            else:
                s.send(cancel_reject(v, clordid, (message.get(41) or b"").decode()))
        elif mt == b"G":
            s.send(execution_report(v, clordid, "5", "0", "200"))
        elif mt == b"H":
            if message.get(11) in self.orders:
                s.send(execution_report(v, clordid, "0", "0", "100"))
            else:
                s.send(business_reject("H"))
        elif mt == b"V":
            req = (message.get(262) or b"").decode()
            s.send(md_snapshot(v, req))
            s.send(md_incremental(v, req))


class Client(Application):
    def __init__(self) -> None:
        self.inbox: asyncio.Queue[FixMessage] = asyncio.Queue()

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.inbox.put_nowait(message)


def _session(
    begin: str,
    appl: str | None,
    me: str,
    them: str,
    app: Application,
    tmp: Path,
    *,
    initiator: bool,
) -> FixSession:
    cfg = SessionSettings(
        begin_string=begin,
        sender_comp_id=me,
        target_comp_id=them,
        default_appl_ver_id=appl,
        connection_type="initiator" if initiator else "acceptor",
        heart_bt_int=5,
    )
    prefix = cfg.session_id.file_prefix
    return FixSession(cfg, FileStore(tmp / "store", prefix), app, FileLog(tmp / "log", prefix))


async def _expect(client: Client, *types: bytes) -> list[FixMessage]:
    got = [await asyncio.wait_for(client.inbox.get(), 5) for _ in types]
    assert [m.msg_type for m in got] == list(types)
    return got


@pytest.mark.parametrize(("begin", "appl", "version"), VERSIONS)
async def test_initiator_and_acceptor_trade_order_manager_messages(
    begin: str, appl: str | None, version: str, tmp_path: Path
) -> None:
    exch = _session(begin, appl, "EXCH", "CLIENT", Exchange(version), tmp_path, initiator=False)
    client_app = Client()
    client = _session(begin, appl, "CLIENT", "EXCH", client_app, tmp_path, initiator=True)
    acceptor = SocketAcceptor([exch], port=0)
    await acceptor.start()
    initiator = SocketInitiator(client, [("127.0.0.1", acceptor.port)], reconnect_interval=0.1)
    await initiator.start()
    try:
        await initiator.wait_logged_on(5)
        v = version
        assert client.send(new_order_single(v, "c1"))
        (er,) = await _expect(client_app, b"8")
        assert (er.get(150), er.get(11), er.get(151)) == (b"0", b"c1", b"100")
        client.send(replace_request(v, "c2", "c1"))
        (er,) = await _expect(client_app, b"8")
        assert (er.get(150), er.get(151)) == (b"5", b"200")
        client.send(status_request(v, "c1"))
        await _expect(client_app, b"8")
        client.send(status_request(v, "nope"))
        (bmr,) = await _expect(client_app, b"j")
        assert (bmr.get(372), bmr.get(380)) == (b"H", b"0")
        client.send(cancel_request(v, "c3", "c1"))
        (er,) = await _expect(client_app, b"8")
        assert er.get(39) == b"4"
        client.send(cancel_request(v, "c4", "unknown"))
        (rej,) = await _expect(client_app, b"9")
        assert rej.get(434) == b"1"
        client.send(md_request(v, "md1"))
        snap, inc = await _expect(client_app, b"W", b"X")
        assert snap.get_all(269) == [b"0", b"1"]
        assert snap.get_all(270) == [b"101.25", b"101.5"]
        assert inc.get(279) == b"0"
        # Nothing was rejected at the session level on either side.
        for log_file in (tmp_path / "log").glob("*.incoming.log"):
            assert b"\x0135=3\x01" not in log_file.read_bytes()
    finally:
        await initiator.stop()
        await acceptor.stop()
        exch.close()
        client.close()
    out_log = (tmp_path / "log" / f"{client.session_id.file_prefix}.outgoing.log").read_bytes()
    lines = out_log.splitlines()
    assert len(lines) >= 9
    assert all(b" : 8=" in line and line.endswith(b"\x01") for line in lines)


async def test_acceptor_refuses_second_logon_and_keeps_first(tmp_path: Path) -> None:
    exch = _session(
        "FIX.4.4", None, "EXCH", "CLIENT", Application(), tmp_path / "a", initiator=False
    )
    one = _session(
        "FIX.4.4",
        None,
        "CLIENT",
        "EXCH",
        Application(),
        tmp_path / "b",
        initiator=True,
    )
    two = _session(
        "FIX.4.4",
        None,
        "CLIENT",
        "EXCH",
        Application(),
        tmp_path / "c",
        initiator=True,
    )
    acceptor = SocketAcceptor([exch], port=0)
    await acceptor.start()
    first = SocketInitiator(one, [("127.0.0.1", acceptor.port)], reconnect_interval=0.1)
    second = SocketInitiator(two, [("127.0.0.1", acceptor.port)], reconnect_interval=30)
    await first.start()
    try:
        await first.wait_logged_on(5)
        await second.start()
        await asyncio.sleep(0.5)
        assert not two.is_logged_on
        assert second.connects == 1
        assert one.is_logged_on
        assert exch.is_logged_on
    finally:
        await second.stop()
        await first.stop()
        await acceptor.stop()
        for s in (exch, one, two):
            s.close()


async def test_initiator_fails_over_to_next_host_and_reconnects(tmp_path: Path) -> None:
    exch = _session(
        "FIX.4.4", None, "EXCH", "CLIENT", Application(), tmp_path / "a", initiator=False
    )
    client = _session(
        "FIX.4.4",
        None,
        "CLIENT",
        "EXCH",
        Application(),
        tmp_path / "b",
        initiator=True,
    )
    acceptor = SocketAcceptor([exch], port=0)
    await acceptor.start()
    # A port nobody listens on comes first.
    dead = SocketAcceptor([], port=0)
    await dead.start()
    dead_port = dead.port
    await dead.stop()
    initiator = SocketInitiator(
        client, [("127.0.0.1", dead_port), ("127.0.0.1", acceptor.port)], reconnect_interval=0.05
    )
    await initiator.start()
    try:
        await initiator.wait_logged_on(5)
        seq = client.next_sender_seq_num
        # The acceptor drops the connection; the initiator comes back and keeps its numbers.
        for conn in list(acceptor.connections):
            conn.close()
        await asyncio.sleep(0.3)
        await initiator.wait_logged_on(5)
        assert initiator.connects == 2
        assert client.next_sender_seq_num == seq + 1
    finally:
        await initiator.stop()
        await acceptor.stop()
        exch.close()
        client.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not available")
async def test_initiator_and_acceptor_over_tls(tmp_path: Path) -> None:
    server_ctx, client_ctx = tls_contexts(tmp_path)
    exch = _session(
        "FIX.4.4", None, "EXCH", "CLIENT", Exchange("FIX.4.4"), tmp_path / "a", initiator=False
    )
    client_app = Client()
    client = _session("FIX.4.4", None, "CLIENT", "EXCH", client_app, tmp_path / "b", initiator=True)
    acceptor = SocketAcceptor([exch], port=0, ssl=server_ctx)
    await acceptor.start()
    initiator = SocketInitiator(
        client, [("127.0.0.1", acceptor.port)], ssl=client_ctx, server_hostname="localhost"
    )
    await initiator.start()
    try:
        await initiator.wait_logged_on(5)
        client.send(new_order_single("FIX.4.4", "tls1"))
        (er,) = await _expect(client_app, b"8")
        assert er.get(11) == b"tls1"
    finally:
        await initiator.stop()
        await acceptor.stop()
        exch.close()
        client.close()


async def test_acceptor_drops_silent_and_garbled_connections(tmp_path: Path) -> None:
    exch = _session("FIX.4.4", None, "EXCH", "CLIENT", Application(), tmp_path, initiator=False)
    acceptor = SocketAcceptor([exch], port=0, logon_timeout=0.3)
    await acceptor.start()
    try:
        # Nothing sent: closed after the logon timeout, without a byte from the acceptor.
        reader, writer = await asyncio.open_connection("127.0.0.1", acceptor.port)
        assert await asyncio.wait_for(reader.read(), 3) == b""
        writer.close()
        # A Logon with a wrong CheckSum: dropped frame before logon -> disconnect.
        reader, writer = await asyncio.open_connection("127.0.0.1", acceptor.port)
        writer.write(
            b"8=FIX.4.4\x019=63\x0135=A\x0134=1\x0149=CLIENT\x0152=20240101-00:00:00.000"
            b"\x0156=EXCH\x0198=0\x01108=30\x0110=000\x01"
        )
        assert await asyncio.wait_for(reader.read(), 3) == b""
        writer.close()
        assert not exch.is_logged_on
    finally:
        await acceptor.stop()
        exch.close()
