# SPDX-License-Identifier: MIT
"""OUCH over real sockets on 127.0.0.1: the client link logs in, trades, keeps heartbeats up,
reconnects after a drop with the next expected sequence number, and a restart of both sides
from their files resumes with nothing lost or doubled."""

import asyncio
from pathlib import Path

import pytest

from engine.venues.ouch import messages as m
from engine.venues.ouch.client import OuchClient, OuchServerSession
from engine.venues.ouch.link import SoupClientLink, SoupServerListener
from engine.venues.ouch.soupbin import ClientStatus
from engine.venues.ouch.store import FileClientState, FileSequencedStore
from tests.unit.engine.venues.ouch.test_soupbin import Acceptor, Recorder

pytestmark = pytest.mark.integration

MS = 1_000_000


async def until(cond: object, within_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not cond():  # type: ignore[operator]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


class Side:
    """Both ends, built on files in ``tmp`` (build again to 'restart' from them)."""

    def __init__(self, tmp: Path, *, hb_ms: int = 1000, timeout_ms: int = 15000) -> None:
        self.rec = Recorder()
        self.client = OuchClient(
            "USER",
            "PASS",
            state=FileClientState(tmp / "client", "USER"),
            handler=self.rec,
            heartbeat_interval_ns=hb_ms * MS,
            timeout_ns=timeout_ms * MS,
        )
        self.acc = Acceptor()
        self.server = OuchServerSession(
            "USER",
            "PASS",
            session="SESS1",
            store=FileSequencedStore(tmp / "server", "USER"),
            handler=self.acc,
            heartbeat_interval_ns=hb_ms * MS,
            timeout_ns=timeout_ms * MS,
        )
        self.acc.server = self.server

    async def start(
        self, port: int = 0, busy_poll_us: int = 0
    ) -> tuple[SoupServerListener, SoupClientLink]:
        listener = SoupServerListener(
            [self.server.soup], port=port, timer_interval_s=0.01, busy_poll_us=busy_poll_us
        )
        port = await listener.start()
        link = SoupClientLink(
            self.client,
            "127.0.0.1",
            port,
            timer_interval_s=0.01,
            reconnect_min_s=0.02,
            reconnect_max_s=0.2,
            busy_poll_us=busy_poll_us,
        )
        await link.start()
        await link.wait_logged_in()
        return listener, link

    def order(self, link: SoupClientLink, i: int) -> int:
        ref, data = self.client.enter_order(
            side="B",
            quantity=100 + i,
            symbol="MSFT",
            price=4_000_000 + i,
            cl_ord_id=f"O{i}",
            now_ns=link.clock.now_ns(),
        )
        link.send(data)
        return ref


async def test_orders_over_sockets_come_back_accepted(tmp_path: Path) -> None:
    side = Side(tmp_path)
    listener, link = await side.start()
    refs = [side.order(link, i) for i in range(20)]
    await until(lambda: len(side.rec.msgs) == 20)
    assert [msg.user_ref_num for _, msg in side.rec.msgs] == refs == list(range(1, 21))  # type: ignore[attr-defined]
    assert [s for s, _ in side.rec.msgs] == list(range(1, 21))
    first = side.rec.msgs[0][1]
    assert isinstance(first, m.OrderAccepted)
    assert first.symbol == "MSFT"
    assert first.cl_ord_id == "O0"
    await link.stop()
    assert side.client.status is ClientStatus.DISCONNECTED
    await until(lambda: not listener.is_connected(side.server.soup))
    await listener.stop()


@pytest.mark.parametrize("busy_poll_us", [0, 20_000])
async def test_busy_polling_link_polls_while_trading_and_only_then(
    tmp_path: Path, busy_poll_us: int
) -> None:
    from engine.busypoll import busy_poll_for

    side = Side(tmp_path)
    listener, link = await side.start(busy_poll_us=busy_poll_us)
    spinner = busy_poll_for(asyncio.get_running_loop())
    before = spinner.iterations
    refs = [side.order(link, i) for i in range(20)]
    await until(lambda: len(side.rec.msgs) == 20)
    assert [msg.user_ref_num for _, msg in side.rec.msgs] == refs  # type: ignore[attr-defined]
    if busy_poll_us:
        assert spinner.iterations > before  # the loop polled for the answers
    else:
        assert spinner.iterations == before == 0
    await asyncio.sleep(0.1)  # five windows: quiet, the loop sleeps again
    assert not spinner.spinning
    await link.stop()
    await listener.stop()


async def test_heartbeats_keep_an_idle_link_up(tmp_path: Path) -> None:
    side = Side(tmp_path, hb_ms=20, timeout_ms=200)
    listener, link = await side.start()
    await asyncio.sleep(0.5)  # idle: only heartbeats cross
    assert side.client.is_logged_in
    assert link.connections == 1
    assert side.client.soup.heartbeats_received >= 5
    assert side.server.soup.heartbeats_received >= 5
    await link.stop()
    await listener.stop()


async def test_a_silent_server_is_dropped_and_the_link_reconnects(tmp_path: Path) -> None:
    side = Side(tmp_path, hb_ms=20, timeout_ms=150)
    listener, link = await side.start()
    # The server stops heartbeating (its timer task dies): the client times out and reconnects.
    assert listener._timer_task is not None
    listener._timer_task.cancel()
    await until(lambda: link.connections >= 2 and side.client.is_logged_in, 3.0)
    await link.stop()
    await listener.stop()


async def test_a_dropped_connection_reconnects_and_replays_what_was_missed(tmp_path: Path) -> None:
    side = Side(tmp_path)
    listener, link = await side.start()
    for i in range(3):
        side.order(link, i)
    await until(lambda: len(side.rec.msgs) == 3)
    link.drop()
    await until(lambda: not listener.is_connected(side.server.soup))
    for i in range(3, 6):  # the exchange sends while the client is away: stored
        assert not listener.send_sequenced(
            side.server.soup, m.SystemEvent(timestamp=i, event_code="S").encode()
        )
    await until(lambda: len(side.rec.msgs) == 6)  # reconnected (backoff) and replayed
    assert link.connections == 2
    assert [s for s, _ in side.rec.msgs] == [1, 2, 3, 4, 5, 6]
    await link.stop()
    await listener.stop()


async def test_restart_of_both_processes_resumes_with_nothing_lost_or_doubled(
    tmp_path: Path,
) -> None:
    side = Side(tmp_path)
    listener, link = await side.start()
    for i in range(5):
        side.order(link, i)
    await until(lambda: len(side.rec.msgs) == 5)
    port = listener.port
    # Both sides go away without a logout (as a killed process would), files left as they are.
    link.drop()
    await link.stop(logout=False)
    await listener.stop()
    restarted = Side(tmp_path)
    assert restarted.client.state.next_expected_seq == 6
    assert restarted.client.state.next_user_ref_num == 6
    assert restarted.server.soup.next_seq == 6
    listener2, link2 = await restarted.start(port)
    refs = [restarted.order(link2, i) for i in range(5, 8)]
    await until(lambda: len(restarted.rec.msgs) == 3)
    assert refs == [6, 7, 8]
    assert [s for s, _ in restarted.rec.msgs] == [6, 7, 8]
    orders = side.acc.orders + restarted.acc.orders
    assert [o.user_ref_num for o in orders] == list(range(1, 9))  # type: ignore[attr-defined]
    await link2.stop()
    await listener2.stop()


async def test_end_of_session_stops_the_link_for_good(tmp_path: Path) -> None:
    side = Side(tmp_path)
    listener, link = await side.start()
    listener.end_session(side.server.soup)
    await until(lambda: side.client.status is ClientStatus.ENDED and not link.connected)
    await asyncio.sleep(0.1)
    assert link.connections == 1  # no reconnect attempts after End of Session
    await link.stop()
    await listener.stop()


async def test_unknown_user_is_rejected_and_not_retried(tmp_path: Path) -> None:
    side = Side(tmp_path)
    listener = SoupServerListener([side.server.soup])
    port = await listener.start()
    from engine.venues.ouch.store import MemoryClientState

    stranger = OuchClient("EVE", "PASS", state=MemoryClientState(), handler=Recorder())
    link = SoupClientLink(stranger, "127.0.0.1", port, reconnect_min_s=0.01)
    await link.start()
    await until(lambda: stranger.status is ClientStatus.REJECTED and not link.connected)
    await asyncio.sleep(0.05)
    assert link.connections == 1
    await link.stop()
    await listener.stop()
