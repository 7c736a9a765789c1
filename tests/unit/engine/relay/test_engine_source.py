# SPDX-License-Identifier: MIT
"""An engine's market data as a relay source: what its remote server publishes, relayed.

An engine with its remote server (TLS) runs on a thread of its own; the relay, its engine
source and a subscriber run on the test's loop, over real loopback sockets. The engine's
``DepthChanged``, ``BookUpdated`` and ``TradeReported`` reach the subscriber as a book equal to
the last thing the engine said.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import Side
from engine.events import (
    BookUpdated,
    DepthChanged,
    Event,
    InstrumentAdded,
    TradeReported,
)
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayClient, RelayError
from engine.relay.server import Relay
from engine.relay.sources import EngineBooks, EngineSource
from engine.remote.server import AuditLog
from engine.remote.tls import PinStore, make_self_signed, server_context
from engine.remote.tokens import TokenStore
from tests.unit.engine.remote.conftest import ServedEngine

SYMBOLS = ["ESZ6", "NQZ6"]


def levels(m: MarketData, symbol: str) -> tuple[list[list[int]], list[list[int]]]:
    bids, asks = m.books.top(m.index[symbol], 100)
    return bids.tolist(), asks.tolist()


def depth(symbol: str, bids: list[tuple[int, int]], asks: list[tuple[int, int]]) -> DepthChanged:
    return DepthChanged(
        ts_event=1, symbol=symbol, bids=tuple(bids), asks=tuple(asks), last_trade_px_ticks=0, own=()
    )


def touch(symbol: str, bid: tuple[int, int], ask: tuple[int, int]) -> BookUpdated:
    return BookUpdated(
        ts_event=2,
        symbol=symbol,
        bid_px_ticks=bid[0],
        bid_qty_lots=bid[1],
        ask_px_ticks=ask[0],
        ask_qty_lots=ask[1],
    )


def test_engine_books_follow_depth_touch_and_trades() -> None:
    bus = MessageBus()
    trades: list[TradeReported] = []
    bus.subscribe(TradeReported, trades.append)
    m = MarketData(SYMBOLS, bus, LiveClock(), n_levels=400)
    books = EngineBooks(dict(m.index))
    m.apply(books.rows([depth("ESZ6", [(100, 5), (99, 4), (98, 3)], [(101, 6), (102, 7)])]))
    assert levels(m, "ESZ6") == ([[100, 5], [99, 4], [98, 3]], [[101, 6], [102, 7]])
    # The ask at 101 was taken, a new touch at 102 (and 103 shown later), the bid grew.
    m.apply(books.rows([touch("ESZ6", (100, 9), (102, 7))]))
    assert levels(m, "ESZ6") == ([[100, 9], [99, 4], [98, 3]], [[102, 7]])
    # A trade with its aggressor, one without (quote rule: at or above the best ask: a buy).
    m.apply(books.rows([
        TradeReported(ts_event=3, symbol="ESZ6", px_ticks=100, qty_lots=2, aggressor=Side.SELL),
        TradeReported(ts_event=4, symbol="ESZ6", px_ticks=102, qty_lots=1, aggressor=None),
    ]))  # fmt: skip
    assert [(t.px_ticks, t.qty_lots, t.aggressor) for t in trades] == [
        (100, 2, Side.SELL),
        (102, 1, Side.BUY),
    ]
    # A depth update replaces both sides: levels the engine no longer shows go.
    m.apply(books.rows([depth("ESZ6", [(99, 1)], [(102, 7), (103, 2)])]))
    assert levels(m, "ESZ6") == ([[99, 1]], [[102, 7], [103, 2]])
    # An empty side, an unknown symbol, other events: nothing else changes.
    rows = books.rows([touch("ESZ6", (0, 0), (102, 7)), touch("XXX", (1, 1), (2, 2)),
                       InstrumentAdded(ts_event=5, symbol="ESZ6", tick_size="0.25",
                                       lot_size="1", multiplier="50", currency="USD",
                                       venue="SIM")])  # fmt: skip
    m.apply(rows)
    assert levels(m, "ESZ6") == ([], [[102, 7], [103, 2]])
    assert rows.shape[0] == 1  # the bid at 99 removed; the ask unchanged: no row
    assert levels(m, "NQZ6") == ([], [])


def test_a_relay_serves_an_engines_market_data(tmp_path: Path) -> None:
    served = ServedEngine(tmp_path, tls=True)
    served.start()
    token = served.token("relay-ny4", "viewer")
    make_self_signed(tmp_path / "r.crt", tmp_path / "r.key")
    tokens = TokenStore(tmp_path / "relay-tokens.toml")
    sub_token = tokens.add("alice", "viewer", LiveClock().now_ns())
    instruments = [
        Instrument(symbol="ESZ6", tick_size=Decimal("0.25")),
        Instrument(symbol="NQZ6", tick_size=Decimal("0.5")),
    ]

    def publish(*events: Event) -> None:
        def go() -> None:
            assert served.engine is not None
            for e in events:
                served.engine.bus.publish(e)

        served.call(go)

    async def main() -> None:
        clock = LiveClock()
        market = MarketData(SYMBOLS, MessageBus(), clock, n_levels=400)
        tls = server_context(tmp_path / "r.crt", tmp_path / "r.key")
        relay = Relay(
            "r1", market, clock, tokens, audit=AuditLog(tmp_path / "a.log", clock), ssl_context=tls
        )
        assert served.server is not None
        port = served.server.port
        engine_pins = PinStore(tmp_path / "engine-pins.json")
        source = EngineSource(
            market, instruments, "127.0.0.1", port, token, pins=engine_pins, name="ny4"
        )
        relay.add_source(source)
        await relay.open()
        await source.start()
        sub = MarketData(SYMBOLS, MessageBus(), clock, n_levels=400)
        client = RelayClient(
            "127.0.0.1",
            relay.port,
            sub_token,
            SYMBOLS,
            market=sub,
            tls=True,
            pins=PinStore(tmp_path / "pins.json"),
        )
        await client.start()
        publish(
            InstrumentAdded(
                ts_event=1,
                symbol="ESZ6",
                tick_size="0.25",
                lot_size="1",
                multiplier="50",
                currency="USD",
                venue="SIM",
            ),
            InstrumentAdded(
                ts_event=1,
                symbol="NQZ6",
                tick_size="0.25",
                lot_size="1",
                multiplier="20",
                currency="USD",
                venue="SIM",
            ),
            depth("ESZ6", [(24000, 5), (23999, 4)], [(24001, 6), (24002, 7)]),
            depth("NQZ6", [(86000, 5)], [(86001, 5)]),
            touch("ESZ6", (24000, 8), (24002, 7)),
            TradeReported(
                ts_event=3, symbol="ESZ6", px_ticks=24002, qty_lots=1, aggressor=Side.BUY
            ),
        )
        want = ([[24000, 8], [23999, 4]], [[24002, 7]])
        loop = asyncio.get_running_loop()
        end = loop.time() + 20
        while levels(sub, "ESZ6") != want:
            assert loop.time() < end, levels(sub, "ESZ6")
            await asyncio.sleep(0.02)
        assert sub.last_trade_px.get("ESZ6") == 24002
        # NQZ6: the engine's tick (0.25) is not the relay's (0.5): not relayed, and said so.
        assert levels(sub, "NQZ6") == ([], [])
        (status,) = relay.status().sources
        assert (status.name, status.kind, status.symbols) == ("ny4", "engine", SYMBOLS)
        assert status.state.startswith("up; not relayed: NQZ6 (the engine's tick size is 0.25")
        assert status.rows_in >= 6
        # A refused token: one error, not a hang.
        bad = EngineSource(
            market, instruments, "127.0.0.1", port, "qw1.nope.nope", pins=engine_pins
        )
        with pytest.raises(RelayError, match="cannot attach"):
            await bad.start()
        await client.close()
        await source.stop()
        assert source.state().startswith("down")
        await relay.close()

    try:
        asyncio.run(main())
    finally:
        served.stop()
