# SPDX-License-Identifier: MIT
"""Builders shared by the tests: instruments, a recording venue, execution reports."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.bus import MessageBus
from engine.clock import Clock, TestClock
from engine.enums import ExecType, OrdStatus
from engine.events import Alert, Event, OrderChanged, OrderFilled
from engine.fix.application import Application, SessionID
from engine.fix.codec import FixDecoder
from engine.fix.log import NullLog
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession, lookup_session
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from engine.instruments import Instrument
from engine.oms.manager import OrderManager
from engine.oms.order import Order, PendingRequest
from engine.oms.risk import RiskChecker, RiskLimits
from engine.oms.venue import REQUEST_NAMES, ExecutionReport, ReportSink, Request


def make_instrument(symbol: str = "ESZ6") -> Instrument:
    return Instrument(symbol=symbol, tick_size="0.25", lot_size="1", multiplier="50")


@dataclass
class RecordingVenue:
    """A venue adapter that records what the order manager asks of it (no network)."""

    name: str = "test-venue"
    sent: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, ClOrdID, orig)
    sinks: dict[str, ReportSink] = field(default_factory=dict)
    _n: int = 0

    @property
    def request_names(self) -> Mapping[Request, str]:
        return REQUEST_NAMES

    def route(self, instrument: Instrument, sink: ReportSink) -> None:
        self.sinks[instrument.symbol] = sink

    def new_client_order_id(self) -> str:
        self._n += 1
        return f"T{self._n}"

    def submit(self, order: Order) -> None:
        self.sent.append(("new", order.client_order_id, ""))

    def cancel(self, order: Order, request: PendingRequest) -> None:
        self.sent.append(("cancel", request.client_order_id, order.client_order_id))

    def replace(self, order: Order, request: PendingRequest) -> None:
        self.sent.append(("replace", request.client_order_id, order.client_order_id))

    def request_status(self, order: Order) -> None:
        self.sent.append(("status", order.client_order_id, ""))


@dataclass
class OmsRig:
    """An order manager wired to a recording venue, a bus that keeps every event, a test clock."""

    clock: TestClock
    bus: MessageBus
    venue: RecordingVenue
    risk: RiskChecker
    oms: OrderManager
    events: list[Event]

    def of(self, kind: type[Event]) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def alerts(self) -> list[Alert]:
        return [e for e in self.events if isinstance(e, Alert)]

    @property
    def changes(self) -> list[OrderChanged]:
        return [e for e in self.events if isinstance(e, OrderChanged)]

    @property
    def fills(self) -> list[OrderFilled]:
        return [e for e in self.events if isinstance(e, OrderFilled)]


def make_oms(limits: RiskLimits | None = None, reference_px: int | None = None) -> OmsRig:
    clock = TestClock()
    bus = MessageBus()
    events: list[Event] = []
    bus.subscribe(Event, events.append)
    venue = RecordingVenue()
    risk = RiskChecker(clock, limits, reference_px=lambda _s: reference_px)
    oms = OrderManager(make_instrument(), venue, bus, clock, risk)
    return OmsRig(clock, bus, venue, risk, oms, events)


def report(
    order: Order,
    exec_type: ExecType,
    status: OrdStatus,
    *,
    cum: int | None = None,
    leaves: int | None = None,
    last_qty: int = 0,
    last_px: int = 0,
    exec_id: str = "",
    clordid: str | None = None,
    orig: str = "",
    text: str = "",
    poss_dup: bool = False,
) -> ExecutionReport:
    """An ExecutionReport for ``order`` as a venue would send it (resent with ``poss_dup``)."""
    cum_qty = order.cum_qty_lots + last_qty if cum is None else cum
    return ExecutionReport(
        client_order_id=order.client_order_id if clordid is None else clordid,
        orig_client_order_id=orig,
        venue_order_id=order.venue_order_id or f"V{order.order_id}",
        exec_id=exec_id,
        exec_type=exec_type,
        ord_status=status,
        leaves_qty_lots=(order.qty_lots - cum_qty) if leaves is None else leaves,
        cum_qty_lots=cum_qty,
        last_qty_lots=last_qty,
        last_px_ticks=last_px,
        text=text,
        poss_dup=poss_dup,
    )


@dataclass
class StaticBook:
    """A book given level by level (prices in ticks, quantities in lots), best first."""

    symbol: str
    bids: list[tuple[int, int]]
    asks: list[tuple[int, int]]

    def best_bid(self) -> tuple[int, int] | None:
        return self.bids[0] if self.bids else None

    def best_ask(self) -> tuple[int, int] | None:
        return self.asks[0] if self.asks else None

    def top(self, depth: int) -> tuple[object, object]:
        import numpy as np

        def arr(levels: list[tuple[int, int]]) -> object:
            out = np.zeros((depth, 2), dtype=np.int64)
            for i, lv in enumerate(levels[:depth]):
                out[i] = lv
            return out

        return arr(self.bids), arr(self.asks)


def assert_answered_alike(outs: list[list[bytes]], fast: FixSession, full: FixSession) -> None:
    """Assert that two sessions given the same traffic answered it alike.

    ``outs``: the fast path's session's answer to a read and then to a timer, followed by the
    general path's two; both then want (or do not want) their connection closed, and their
    sequence numbers agree.
    """
    assert outs[0] == outs[2]
    assert outs[1] == outs[3]
    assert fast.wants_disconnect == full.wants_disconnect
    assert (fast.next_sender_seq_num, fast.next_target_seq_num) == (
        full.next_sender_seq_num,
        full.next_target_seq_num,
    )


def fix_pair(
    app: Application | None,
    clock: Clock,
    *,
    begin: str = "FIX.4.4",
    sender: str = "C",
    validate: bool = True,
    precision: int | None = None,
) -> tuple[FixSession, FixSession, list[bytes]]:
    """Return our initiator session (application ``app``) logged on to a counterparty, in
    memory, the counterparty, and the list our session's later output goes to.

    ``precision``: our session's TimestampPrecision (None: its version's default)."""
    ours = FixSession(
        SessionSettings(
            begin_string=begin,
            sender_comp_id=sender,
            target_comp_id="S",
            connection_type="initiator",
            heart_bt_int=30,
            use_data_dictionary=validate,
            timestamp_precision=precision,
        ),
        MemoryStore(),
        app,
        NullLog(),
        clock,
    )
    theirs = FixSession(
        SessionSettings(
            begin_string=begin,
            sender_comp_id="S",
            target_comp_id=sender,
            use_data_dictionary=validate,
        ),
        MemoryStore(),
        None,
        NullLog(),
        clock,
    )
    d_ours, d_theirs = FixDecoder(), FixDecoder()
    now = clock.now_ns()
    for raw in ours.on_connected(now):
        for msg in d_theirs.feed(raw):
            for back in theirs.on_message(msg, now):
                for m2 in d_ours.feed(back):
                    ours.on_message(m2, now)
    assert ours.is_logged_on
    out: list[bytes] = []
    ours.set_responder(out.append)
    return ours, theirs, out


@dataclass
class SocketPair:
    """Two FIX sessions logged on to each other over 127.0.0.1 (see :func:`socket_pair`)."""

    venue: FixSession
    client: FixSession
    acceptor: SocketAcceptor
    initiator: SocketInitiator


@asynccontextmanager
async def socket_pair(
    venue_app: Application | None,
    client_app: Application | None,
    *,
    begin: str = "FIX.4.4",
    venue_id: str = "EXCH",
    client_id: str = "ME",
    **settings: Any,
) -> AsyncIterator[SocketPair]:
    """Run an acceptor (``venue_app``) and an initiator (``client_app``) on 127.0.0.1, logged
    on; ``settings`` are further :class:`SessionSettings` fields of both; stopped on exit."""
    common = {"begin_string": begin, "heart_bt_int": 30, **settings}
    venue = FixSession(
        SessionSettings(
            sender_comp_id=venue_id, target_comp_id=client_id, connection_type="acceptor", **common
        ),
        MemoryStore(),
        venue_app,
    )
    client = FixSession(
        SessionSettings(
            sender_comp_id=client_id, target_comp_id=venue_id, connection_type="initiator", **common
        ),
        MemoryStore(),
        client_app,
    )
    acceptor = SocketAcceptor([venue], port=0, timer_interval=0.5)
    await acceptor.start()
    initiator = SocketInitiator(client, [("127.0.0.1", acceptor.port)], reconnect_interval=0.2)
    await initiator.start()
    try:
        await initiator.wait_logged_on(10)
        yield SocketPair(venue, client, acceptor, initiator)
    finally:
        await initiator.stop()
        await acceptor.stop()
        client.close()
        venue.close()


def free_udp_port() -> int:
    """Return a UDP port free on 127.0.0.1 now (for a multicast group in a test)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def multicast_or_skip() -> None:
    """Skip the test unless multicast sent on loopback comes back here."""
    import time

    import pytest

    from engine.feeds.multicast import Group, open_receiver, open_sender

    g = Group("239.255.21.9", free_udp_port())
    try:
        r = open_receiver(g)
    except OSError as e:
        pytest.skip(f"no multicast on loopback here: {e}")
    s = open_sender()
    try:
        s.sendto(b"probe", (g.address, g.port))
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            try:
                if r.recv(64) == b"probe":
                    return
            except BlockingIOError:
                time.sleep(0.01)
        pytest.skip("multicast sent on loopback does not come back here")
    finally:
        r.close()
        s.close()


class AckingVenue(Application):
    """A FIX venue that answers every NewOrderSingle with an ExecutionReport of its ClOrdID."""

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        clordid = message.get(11) or b""
        s.send(OutMessage(b"8", [(11, clordid), (17, b"E" + clordid), (150, b"0")]))


class ReportQueue(Application):
    """A FIX client that queues the ClOrdID <11> of every application message it receives."""

    def __init__(self) -> None:
        self.got: asyncio.Queue[bytes] = asyncio.Queue()

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.put_nowait(message.get(11) or b"")


def tls_contexts(folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """Return (server, client) TLS contexts of a self-signed ``localhost`` certificate.

    The certificate and key are made in ``folder`` by the ``openssl`` command (skip a test
    that needs this where ``shutil.which("openssl")`` is None).
    """
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))
