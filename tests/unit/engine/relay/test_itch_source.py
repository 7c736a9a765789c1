# SPDX-License-Identifier: MIT
"""An ITCH 5.0 multicast feed (MoldUDP64 on loopback, A and B) relayed to a subscriber."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from pathlib import Path

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.feeds.multicast import Group, MoldPublisher
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.relay.server import Relay
from engine.relay.sources import ItchSource
from engine.remote.tokens import TokenStore
from engine.sim.itch_feed import encode_message
from engine.types import SELL
from tests.factories import free_udp_port, multicast_or_skip


def test_itch_feed_through_the_relay(tmp_path: Path) -> None:
    multicast_or_skip()
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("alice", "viewer", LiveClock().now_ns())
    a, b = Group("239.255.21.1", free_udp_port()), Group("239.255.21.2", free_udp_port())
    ins = [
        Instrument(symbol="AAA", tick_size=Decimal("0.01")),
        Instrument(symbol="BBB", tick_size=Decimal("0.01")),
    ]

    def add(ref: int, side: str, shares: int, px: int, locate: int = 1) -> bytes:
        return encode_message(
            "A",
            stock_locate=locate,
            order_reference_number=ref,
            buy_sell_indicator=side,
            shares=shares,
            stock="AAA",
            price=px * 100,
        )

    async def main() -> None:
        clock = LiveClock()
        market = MarketData(["AAA", "BBB"], MessageBus(), clock, n_levels=200)
        relay = Relay("r", market, clock, tokens)
        await relay.open()
        src = ItchSource(market, clock, ins, a, b, session=b"SESSION001")
        await src.start()
        pub = MoldPublisher(b"SESSION001", a, b)
        sub = MarketData(["BBB", "AAA"], MessageBus(), clock, n_levels=200)  # other order
        client = RelayClient("127.0.0.1", relay.port, token, ["AAA"], market=sub)
        await client.start()
        pub.publish(
            [
                encode_message("R", stock_locate=1, stock="AAA"),
                add(1, "B", 100, 1000),
                add(2, "B", 50, 999),
                add(3, "S", 70, 1002),
            ]
        )
        pub.publish(
            [encode_message("D", stock_locate=1, order_reference_number=2), add(4, "S", 30, 1001)]
        )
        deadline = time.monotonic() + 5
        # both packets applied by the relay, and everything it relayed applied by the client
        while market.books.depth_at(0, SELL, 1001) != 30 or client.seq["AAA"] < relay.rings[0].head:
            assert time.monotonic() < deadline, "the feed did not come through"
            await asyncio.sleep(0.01)
        bids, asks = sub.books.top(sub.index["AAA"], 10)
        assert bids.tolist() == [[1000, 100]]
        assert asks.tolist() == [[1001, 30], [1002, 70]]
        assert market.books.top(0, 10)[0].tolist() == [[1000, 100]]
        assert client.gaps == 0
        await client.close()
        await src.stop()
        pub.close()
        await relay.close()

    asyncio.run(main())
