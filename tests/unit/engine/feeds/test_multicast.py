# SPDX-License-Identifier: MIT
"""A MoldUDP64 feed over real multicast on loopback: A/B arbitration, re-requests, losses."""

import asyncio
import contextlib

import pytest

from engine.feeds.arbiter import Arbiter, MoldUdp64
from engine.feeds.multicast import FeedReceiver, Group, MoldPublisher
from tests.factories import free_udp_port, multicast_or_skip

SESSION = b"TESTSESS01"


def _groups() -> tuple[Group, Group]:
    return Group("239.255.20.1", free_udp_port()), Group("239.255.20.2", free_udp_port())


@pytest.fixture(scope="module", autouse=True)
def _loopback_multicast() -> None:
    multicast_or_skip()


def _messages(n: int) -> list[bytes]:
    return [f"message {i:06d}".encode() for i in range(1, n + 1)]


async def _run(
    n: int,
    drop: object,
    *,
    recovery: bool,
    arbiter: Arbiter | None = None,
    batch: int = 50,
) -> tuple[list[bytes], FeedReceiver, MoldPublisher]:
    a, b = _groups()
    pub = MoldPublisher(SESSION, a, b)
    pub.drop = drop  # type: ignore[assignment]
    port = await pub.serve_requests() if recovery else 0
    got: list[bytes] = []
    done = asyncio.Event()

    def on_packets(packets: list[bytes], now_ns: int) -> None:
        for p in packets:
            got.extend(MoldUdp64.messages(p))
        if len(got) + rx.arbiter.stats.lost_messages >= n:
            done.set()

    rx = FeedReceiver(
        a,
        b,
        on_packets,
        session=SESSION,
        recovery=("127.0.0.1", port) if recovery else None,
        arbiter=arbiter or Arbiter(MoldUdp64(), next_seq=1),
        on_lost=lambda n: told.append((n, len(got))),
    )
    told: list[tuple[int, int]] = []
    rx.lost_told = told  # type: ignore[attr-defined]
    await rx.start()
    msgs = _messages(n)
    for i in range(0, n, batch):
        pub.publish(msgs[i : i + batch])
        await asyncio.sleep(0)
    pub.heartbeat()  # says what the last number was: a gap at the end shows too
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 5)
    rx.close()
    pub.close()
    return got, rx, pub


def test_every_message_arrives_once_in_order_when_each_feed_misses_some() -> None:
    # A misses one packet in three, B another one in three: each packet reaches one feed at
    # least, so nothing is missing once both are merged.
    def drop(feed: int, seq: int) -> bool:
        k = (seq - 1) // 10  # packets of 10 messages
        return (feed == 0 and k % 3 == 0) or (feed == 1 and k % 3 == 1)

    got, rx, _ = asyncio.run(_run(3_000, drop, recovery=False, batch=10))
    assert got == _messages(3_000)
    st = rx.arbiter.stats
    assert st.gaps == 0
    assert st.lost_messages == 0
    assert st.packets[0] > 0
    assert st.packets[1] > 0


def test_packets_missing_from_both_feeds_are_re_requested_and_delivered_in_order() -> None:
    def drop(feed: int, seq: int) -> bool:
        return 1_001 <= seq <= 1_050 or 2_501 <= seq <= 2_510  # both feeds lose these

    got, rx, pub = asyncio.run(_run(3_000, drop, recovery=True, batch=10))
    assert got == _messages(3_000)
    st = rx.arbiter.stats
    assert st.gaps == 2
    assert st.recovered_messages == 60
    assert st.lost_messages == 0
    assert rx.requests_sent >= 2
    assert pub.requests_answered >= 2


def test_without_a_retransmission_server_the_gap_is_declared_lost_and_the_rest_delivered() -> None:
    def drop(feed: int, seq: int) -> bool:
        return 101 <= seq <= 110

    arb = Arbiter(
        MoldUdp64(), next_seq=1, gap_timeout_ns=1_000_000, retry_ns=5_000_000, max_retries=2
    )
    got, rx, _ = asyncio.run(_run(500, drop, recovery=False, arbiter=arb, batch=10))
    expected = _messages(500)
    assert got == expected[:100] + expected[110:]
    assert rx.arbiter.stats.lost_messages == 10
    assert rx.lost_told == [(10, 100)]  # told before the packets after the gap came
