# SPDX-License-Identifier: MIT
"""The relay and its client over real loopback sockets, in one process (one asyncio loop)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.client import connect

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.marketdata import MarketData
from engine.relay.client import RelayClient, RelayError
from engine.relay.protocol import (
    RELAY_VERSION,
    Auth,
    BookSnap,
    Hello,
    Subscribe,
    Updates,
    decode_server,
    encode,
)
from engine.relay.server import ROW, Relay, _Ring
from engine.remote.server import AuditLog
from engine.remote.tokens import TokenStore
from tests.unit.engine.relay.synth import l2_rows

SYMBOLS = ["AAA", "BBB", "CCC"]


def books_of(market: MarketData) -> list[tuple[list[list[int]], list[list[int]]]]:
    """Return every level of every book (bids, asks) as lists."""
    n = market.books.n_levels
    out = []
    for b in range(len(market.symbols)):
        bids, asks = market.books.top(b, n)
        out.append((bids.tolist(), asks.tolist()))
    return out


def new_market(symbols: list[str] = SYMBOLS) -> MarketData:
    return MarketData(symbols, MessageBus(), LiveClock(), n_levels=200)


def run(
    tmp_path: Path,
    scenario: Callable[[Relay, str], Awaitable[None]],
    **relay_kw: Any,
) -> Path:
    """Run ``scenario(relay, token)`` against a relay serving on 127.0.0.1; return the audit."""
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("alice", "viewer", LiveClock().now_ns())
    audit = tmp_path / "audit.log"

    async def main() -> None:
        clock = LiveClock()
        relay = Relay("r1", new_market(), clock, tokens, audit=AuditLog(audit, clock), **relay_kw)
        await relay.open()
        try:
            await asyncio.wait_for(scenario(relay, token), 60)
        finally:
            await relay.close()

    asyncio.run(main())
    return audit


async def until(cond: Callable[[], bool], timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


def test_ring_keeps_at_least_capacity_rows_and_slices_by_number() -> None:
    ring = _Ring(10)
    for k in range(6):  # chunks of 3 rows: rows 1..18
        ring.append(bytes([k]) * 3 * ROW)
    assert ring.head == 18
    assert 10 <= ring.rows < 13
    assert ring.first == 19 - ring.rows
    data = ring.since(14, 1 << 20)  # rows 15..18: the last row of chunk 4 and chunk 5
    assert len(data) == 4 * ROW
    assert data[:ROW] == bytes([4]) * ROW
    assert data[ROW:] == bytes([5]) * 3 * ROW
    assert len(ring.since(14, 2 * ROW + 5)) == 2 * ROW  # whole rows within the budget


def test_snapshot_then_increments_keep_equal_books(tmp_path: Path) -> None:
    rows = l2_rows(20_000, 3)

    async def scenario(relay: Relay, token: str) -> None:
        relay.publish(rows[:5000])  # before anyone subscribes: the snapshot carries it
        a, b = new_market(), new_market()
        ca = RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=a)
        cb = RelayClient("127.0.0.1", relay.port, token, ["BBB"], market=b)
        await ca.start()
        await cb.start()
        assert ca.snapshots == 3
        assert cb.snapshots == 1
        for i in range(5000, rows.shape[0], 500):
            relay.market.apply(rows[i : i + 500])  # market.apply is the relay's publish
            await asyncio.sleep(0)
        heads = [r.head for r in relay.rings]
        await until(lambda: [ca.seq[s] for s in SYMBOLS] == heads)
        await until(lambda: cb.seq["BBB"] == heads[1])
        assert books_of(a) == books_of(relay.market)
        assert books_of(b)[1] == books_of(relay.market)[1]
        assert books_of(b)[0] == ([], [])  # not subscribed: never touched
        assert ca.gaps == 0
        assert ca.rows == 15_000
        await ca.close()
        await cb.close()

    audit = run(tmp_path, scenario)
    events = [json.loads(x)["event"] for x in audit.read_text().splitlines()]
    assert events.count("login") == 2
    assert events.count("subscribe") == 2


def test_reconnect_resumes_without_gap(tmp_path: Path) -> None:
    rows = l2_rows(30_000, 3, seed=2)

    async def scenario(relay: Relay, token: str) -> None:
        relay.publish(rows[:1000])
        m = new_market()
        c = RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=m)
        await c.start()
        relay.publish(rows[1000:3000])
        await until(lambda: c.seq["AAA"] == relay.rings[0].head)
        c.drop()  # the link dies; rows keep coming meanwhile
        await until(lambda: not c.connected)
        relay.publish(rows[3000:6000])
        await until(lambda: c.connected and c.seq["AAA"] == relay.rings[0].head)
        assert c.connects == 2
        assert c.resumed == 3
        assert c.snapshots == 3
        relay.publish(rows[6000:])
        heads = [r.head for r in relay.rings]
        await until(lambda: [c.seq[s] for s in SYMBOLS] == heads)
        assert c.gaps == 0
        # every row after the snapshot arrived exactly once: the counts add up
        assert c.rows == sum(heads) - sum(int((rows[:1000]["book"] == b).sum()) for b in range(3))
        assert books_of(m) == books_of(relay.market)
        await c.close()

    run(tmp_path, scenario)


def test_reconnect_too_far_behind_gets_a_snapshot(tmp_path: Path) -> None:
    rows = l2_rows(20_000, 3, seed=3)

    async def scenario(relay: Relay, token: str) -> None:
        m = new_market()
        c = RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=m)
        await c.start()
        c.drop()
        await until(lambda: not c.connected)
        relay.publish(rows)  # far more than the cache (1,000 rows per instrument)
        # Every instrument's book (the relay sends the snapshots in no particular order).
        heads = [r.head for r in relay.rings]
        await until(lambda: c.connected and [c.seq[s] for s in SYMBOLS] == heads)
        assert c.resumed == 0
        assert c.snapshots == 6
        assert c.gaps == 0
        assert books_of(m) == books_of(relay.market)
        await c.close()

    run(tmp_path, scenario, cache_rows=1000, max_lag_rows=1000)


def test_stalled_subscriber_is_conflated_and_costs_the_others_nothing(tmp_path: Path) -> None:
    rows = l2_rows(200_000, 3, seed=4)

    async def scenario(relay: Relay, token: str) -> None:
        # A subscriber that stops reading: its socket fills, the relay's send to it waits.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
        sock.connect(("127.0.0.1", relay.port))
        stalled = await connect(
            f"ws://127.0.0.1:{relay.port}/",
            sock=sock,
            max_queue=1,
            compression=None,
            max_size=1 << 28,
        )
        await stalled.send(encode(Hello(version=RELAY_VERSION, client="stalled")))
        await stalled.recv()
        await stalled.send(encode(Auth(token=token)))
        await stalled.recv()
        await stalled.send(encode(Subscribe(rid=1, symbols=SYMBOLS)))
        m = new_market()
        c = RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=m)
        await c.start()
        for i in range(0, rows.shape[0], 2000):
            relay.publish(rows[i : i + 2000])
            await asyncio.sleep(0.001)
            # bounded: the cache never holds much more than cache_rows per instrument
            assert relay.cached_bytes() <= 3 * (5000 + 2000) * ROW
        heads = [r.head for r in relay.rings]
        await until(lambda: [c.seq[s] for s in SYMBOLS] == heads)
        assert c.conflated == 0
        assert c.gaps == 0
        assert books_of(m) == books_of(relay.market)
        # The stalled one now reads: it gets the latest books, not 200,000 rows.
        got = new_market()
        seq: dict[str, int] = {}
        reasons = []
        rows_read = 0
        while seq != dict(zip(SYMBOLS, heads, strict=True)):
            frame = await asyncio.wait_for(stalled.recv(decode=False), 10)
            assert isinstance(frame, bytes)
            msg = decode_server(frame)
            if isinstance(msg, BookSnap):
                reasons.append(msg.reason)
                b = got.index[msg.symbol]
                got.books.clear(b)
                lv = np.frombuffer(msg.rows, rows.dtype).copy()
                lv["book"] = b
                got.apply(lv)
                seq[msg.symbol] = msg.seq
            elif isinstance(msg, Updates):
                for sym, first, data in msg.items:
                    if sym in seq:
                        assert first == seq[sym] + 1
                        r = np.frombuffer(data, rows.dtype).copy()
                        r["book"] = got.index[sym]
                        got.apply(r)
                        seq[sym] += r.shape[0]
                        rows_read += r.shape[0]
        assert "conflated" in reasons
        assert rows_read < rows.shape[0] // 2
        assert books_of(got) == books_of(relay.market)
        assert relay.conflations >= 1
        await stalled.close()
        await c.close()

    run(tmp_path, scenario, cache_rows=5000, max_lag_rows=5000)


def test_a_bad_token_is_refused_and_audited(tmp_path: Path) -> None:
    async def scenario(relay: Relay, token: str) -> None:
        c = RelayClient("127.0.0.1", relay.port, "qw1.nope.nope", SYMBOLS, market=new_market())
        with pytest.raises(RelayError, match="login refused: token refused"):
            await c.start()
        await c.close()
        c2 = RelayClient(
            "127.0.0.1", relay.port, token, ["ZZZ"], index={"ZZZ": 0}, on_rows=lambda r: None
        )
        with pytest.raises(RelayError, match="does not carry ZZZ"):
            await c2.start()
        await c2.close()

    audit = run(tmp_path, scenario)
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert lines[0]["event"] == "login-refused"
    assert lines[0]["reason"] == "token refused"
    assert any(x["event"] == "subscribe" and x["unknown"] == ["ZZZ"] for x in lines)
