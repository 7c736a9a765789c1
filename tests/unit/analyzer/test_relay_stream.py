# SPDX-License-Identifier: MIT
"""``analyzer.relay.RelayStream``: a relay's books, on a thread of their own, into ``LiveFeed``.

A TLS relay runs on the test's loop over 127.0.0.1; the streams run their own threads and
loops. What the Analyzer's live view is fed ends with the relay's touch and depth; a stream
nobody drains stays within its bound; a refused token is an error, not a hang.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from analyzer.live import LiveFeed
from analyzer.relay import DEPTH_LEVELS, RelayStream
from engine.clock import LiveClock
from engine.events import BookUpdated, DepthChanged, InstrumentAdded, TradeReported
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayError
from engine.relay.server import Relay
from engine.remote.tls import PinStore
from engine.remote.tokens import TokenStore
from engine.types import L2_TRADE
from tests.unit.engine.relay.synth import l2_rows
from tests.unit.engine.relay.test_status import SYMBOLS, tls_relay

INSTRUMENTS = [Instrument(symbol=s, tick_size=Decimal("0.01")) for s in SYMBOLS]


async def until(cond: Callable[[], bool], timeout_s: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def touch(market: MarketData, symbol: str) -> tuple[int, int, int, int]:
    b = market.books.best_bid(market.index[symbol]) or (0, 0)
    a = market.books.best_ask(market.index[symbol]) or (0, 0)
    return (b[0], b[1], a[0], a[1])


def run(tmp_path: Path, scenario: Callable[[Relay, MarketData, str], object]) -> None:
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("analyst", "viewer", LiveClock().now_ns())
    relay, market = tls_relay(tmp_path, tokens)

    async def main() -> None:
        await relay.open()
        try:
            await asyncio.wait_for(scenario(relay, market, token), 60)  # type: ignore[arg-type]
        finally:
            await relay.close()

    asyncio.run(main())


def test_the_live_view_gets_the_relays_books_and_trades(tmp_path: Path) -> None:
    rows = l2_rows(6000, len(SYMBOLS), seed=3)
    pins = PinStore(tmp_path / "pins.json")

    async def scenario(relay: Relay, market: MarketData, token: str) -> None:
        market.apply(rows[:1000])  # before the stream: it comes as the snapshot
        stream = RelayStream(
            "127.0.0.1",
            relay.port,
            token,
            INSTRUMENTS,
            pins=pins,
            name="analyzer-test",
            depth_interval_s=0.05,
        )
        loop = asyncio.get_running_loop()
        woken = threading.Event()
        stream.set_wakeup(woken.set)
        await loop.run_in_executor(None, stream.start)  # blocks: not on the relay's loop
        assert stream.state == "up"
        feed = LiveFeed(stream.name)
        seen: list[object] = []

        def take() -> None:
            records = stream.drain()
            seen.extend(r.event for r in records)
            feed.on_events(records)

        for i in range(1000, rows.shape[0], 500):
            market.apply(rows[i : i + 500])
            await asyncio.sleep(0.005)
            take()

        def caught_up() -> bool:
            take()
            last = {e.symbol: e for e in seen if isinstance(e, BookUpdated)}
            depth = {e.symbol: e for e in seen if isinstance(e, DepthChanged)}
            return all(s in last and s in depth and shown(last[s], depth[s]) for s in SYMBOLS)

        def shown(e: BookUpdated, d: DepthChanged) -> bool:
            got = (e.bid_px_ticks, e.bid_qty_lots, e.ask_px_ticks, e.ask_qty_lots)
            bids, asks = market.books.top(market.index[e.symbol], DEPTH_LEVELS)
            levels = ([tuple(x) for x in bids.tolist()], [tuple(x) for x in asks.tolist()])
            return got == touch(market, e.symbol) and (list(d.bids), list(d.asks)) == levels

        await until(caught_up)
        assert woken.is_set()
        # The records come as from an engine: the instruments first, numbered without gaps.
        assert [type(e) for e in seen[:3]] == [InstrumentAdded] * 3
        assert [e.symbol for e in seen[:3]] == SYMBOLS  # type: ignore[attr-defined]
        assert seen[0].tick_size == "0.01"  # type: ignore[attr-defined]
        # Every trade after the snapshot, in order, per instrument.
        later = rows[1000:]
        for b, s in enumerate(SYMBOLS):
            mine = later[(later["book"] == b) & (later["kind"] == L2_TRADE)]
            got = [
                (e.px_ticks, e.qty_lots)
                for e in seen
                if isinstance(e, TradeReported) and e.symbol == s
            ]
            assert got == list(zip(mine["px"].tolist(), mine["qty"].tolist(), strict=True))
        # The live view charts them: its last quote of each instrument is the relay's touch.
        for s in SYMBOLS:
            bbo = feed.instruments[s].live.buffers["bbo"].rows()
            assert bbo.shape[0] > 0
            last = bbo[-1]
            assert (int(last["bid_px"]), int(last["ask_px"])) == touch(market, s)[::2]
        assert feed.unknown == 0
        assert stream.dropped == 0
        await loop.run_in_executor(None, stream.close)
        assert stream.state == "closed"

    run(tmp_path, scenario)


def test_a_stream_nobody_drains_stays_bounded_and_current(tmp_path: Path) -> None:
    rows = l2_rows(20_000, len(SYMBOLS), seed=4)

    async def scenario(relay: Relay, market: MarketData, token: str) -> None:
        stream = RelayStream(
            "127.0.0.1",
            relay.port,
            token,
            INSTRUMENTS,
            pins=PinStore(tmp_path / "pins.json"),
            max_records=64,
            depth_interval_s=0,
        )
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, stream.start)
        for i in range(0, rows.shape[0], 1000):
            market.apply(rows[i : i + 1000])
            await asyncio.sleep(0)
        client = stream._client
        assert client is not None
        await until(lambda: sum(client.seq.values()) == rows.shape[0])
        records = stream.drain()
        assert len(records) == 64
        assert stream.dropped > 500  # a BookUpdated per book per batch, and the trades
        # The newest survived: numbered consecutively up to the last one made.
        seqs = [r.seq for r in records]
        assert seqs == list(range(seqs[0], seqs[0] + 64))
        last = {r.event.symbol: r.event for r in records if isinstance(r.event, BookUpdated)}
        for s, e in last.items():
            got = (e.bid_px_ticks, e.bid_qty_lots, e.ask_px_ticks, e.ask_qty_lots)
            assert got == touch(market, s)
        await loop.run_in_executor(None, stream.close)

    run(tmp_path, scenario)


def test_a_refused_token_is_an_error_and_bad_arguments_say_why(tmp_path: Path) -> None:
    async def scenario(relay: Relay, market: MarketData, token: str) -> None:
        stream = RelayStream(
            "127.0.0.1",
            relay.port,
            "qw1.nope.nope",
            INSTRUMENTS,
            pins=PinStore(tmp_path / "pins.json"),
        )
        loop = asyncio.get_running_loop()
        with pytest.raises(RelayError, match="login refused"):
            await loop.run_in_executor(None, stream.start)
        assert stream.state.startswith("failed: ")
        assert "login refused" in stream.state
        unknown = RelayStream(
            "127.0.0.1",
            relay.port,
            token,
            [Instrument(symbol="ZZZ", tick_size=Decimal("1"))],
            pins=PinStore(tmp_path / "pins.json"),
        )
        with pytest.raises(RelayError, match="does not carry ZZZ"):
            await loop.run_in_executor(None, unknown.start)

    run(tmp_path, scenario)
    with pytest.raises(ValueError, match="PinStore"):
        RelayStream("127.0.0.1", 1, "t", INSTRUMENTS)
    with pytest.raises(ValueError, match="listed twice"):
        RelayStream("127.0.0.1", 1, "t", INSTRUMENTS * 2, tls=False)
    assert np.all([RelayStream("h", 1, "t", INSTRUMENTS, tls=False).state == "idle"])
