# SPDX-License-Identifier: MIT
"""The simulator's market as ITCH 5.0: decoded and replayed, every book is the matcher's."""

import pytest

from engine.enums import OrdType, Side, TimeInForce
from engine.feeds.itch.book import ItchBooks
from engine.feeds.itch.decode import decode_raw
from engine.instruments import Instrument
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.itch_feed import SimItchFeed, encode_message
from engine.types import BUY, SELL
from tests.factories import make_instrument

LIMIT, DAY, IOC = OrdType.LIMIT, TimeInForce.DAY, TimeInForce.IOC


def _raw(messages: list[bytes]) -> bytes:
    return b"".join(len(m).to_bytes(2, "big") + m for m in messages)


def _exchange() -> SimExchange:
    flow = FlowConfig(events_per_second=4_000, volatility_ticks=2.0)
    return SimExchange(
        [
            SimInstrument(instrument=make_instrument("ESZ6"), start_px_ticks=20_000, flow=flow),
            SimInstrument(instrument=make_instrument("NQZ6"), start_px_ticks=80_000, flow=flow),
        ],
        seed=11,
    )


def _assert_books_equal(ex: SimExchange, books: ItchBooks, scale: int) -> None:
    for i, sym in enumerate(ex.symbols):
        bids, asks = ex.depth(sym, 10_000)
        got_b = [(int(p) // scale, int(q)) for p, q, _n in books.levels(i + 1, BUY).tolist()]
        got_a = [(int(p) // scale, int(q)) for p, q, _n in books.levels(i + 1, SELL).tolist()]
        assert got_b == [(p, q) for p, q in bids if q], sym
        assert got_a == [(p, q) for p, q in asks if q], sym


def test_replayed_feed_books_equal_the_matchers_through_flow_and_client_orders() -> None:
    ex = _exchange()
    feed = SimItchFeed(ex, ts=1)
    ex.order_feed = feed
    ex.seed_books(ts=2)
    books = ItchBooks()
    scale = 2_500  # ticks of 0.25 in ITCH's 0.0001
    t = 10
    for step in range(200):
        t += 1_000_000
        ex.step(t)
        if step % 20 == 5:  # clients: rest, replace (price and size), reduce, cancel, take
            ex.submit(7, f"A{step}", "ESZ6", Side.BUY, 4, 19_990, LIMIT, DAY, ts=t)
            ex.replace(7, f"B{step}", f"A{step}", 6, 19_991, ts=t + 1)
            ex.replace(7, f"C{step}", f"B{step}", 5, 19_991, ts=t + 2)
            ex.submit(8, f"X{step}", "NQZ6", Side.SELL, 9, 79_000, LIMIT, IOC, ts=t + 3)
        if step % 20 == 15:
            ex.cancel(7, f"D{step - 10}", f"C{step - 10}", ts=t)
        if step % 50 == 49:  # replay what was published so far, in pieces
            books.apply_raw(_raw(feed.take()))
            _assert_books_equal(ex, books, scale)
    books.apply_raw(_raw(feed.take()))
    _assert_books_equal(ex, books, scale)
    assert not books.check()
    counts = books.counts()
    for t_ in "SRHAEDXU":
        assert counts.get(t_, 0) > 0, t_  # every kind of change was published
    assert books.symbol(1) == "ESZ6"
    assert books.trades.shape[0] == counts["E"]


def test_encode_message_round_trips_through_the_decoder_and_refuses_what_does_not_fit() -> None:
    raw = encode_message(
        "A",
        stock_locate=3,
        timestamp=34_200_000_000_123,
        order_reference_number=77,
        buy_sell_indicator="S",
        shares=300,
        stock="AAPL",
        price=1_912_500,
    )
    dec = decode_raw(_raw([raw]))
    row = dec["A"][0]
    assert (row["stock_locate"], row["timestamp"], row["order_reference_number"]) == (
        3, 34_200_000_000_123, 77,
    )  # fmt: skip
    assert (row["buy_sell_indicator"], row["shares"], row["stock"], row["price"]) == (
        b"S", 300, b"AAPL    ", 1_912_500,
    )  # fmt: skip
    with pytest.raises(ValueError, match="stock"):
        encode_message("A", stock="TOOLONGNAME")
    with pytest.raises(ValueError, match="shares"):
        encode_message("A", shares=1 << 32)
    with pytest.raises(ValueError, match="no field"):
        encode_message("D", price=1)


def test_a_tick_finer_than_itchs_grid_is_refused() -> None:
    fine = Instrument(symbol="FINE", tick_size="0.00001", lot_size="1", multiplier="1")
    ex = SimExchange([SimInstrument(instrument=fine, start_px_ticks=100)])
    with pytest.raises(ValueError, match=r"FINE: tick size 0\.00001"):
        SimItchFeed(ex, ts=0)
