# SPDX-License-Identifier: MIT
"""The simulated exchange: client orders, participants, market data, determinism."""

import numpy as np
import pytest

from engine.book.l2 import L2Books
from engine.enums import ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.oms.venue import CancelReject
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from tests.factories import make_instrument

LIMIT, DAY = OrdType.LIMIT, TimeInForce.DAY


def make(seed: int = 1, rate: float = 0.0) -> SimExchange:
    flow = FlowConfig(events_per_second=rate, volatility_ticks=1.0)
    return SimExchange(
        [
            SimInstrument(instrument=make_instrument("ESZ6"), start_px_ticks=20_000, flow=flow),
            SimInstrument(instrument=make_instrument("NQZ6"), start_px_ticks=80_000, flow=flow),
        ],
        seed=seed,
    )


def test_client_order_rests_then_is_filled_by_an_aggressor_with_maker_flag() -> None:
    ex = make()
    ex.seed_books(ts=1)
    (ack,) = ex.submit(7, "A1", "ESZ6", Side.BUY, 3, 19_999, LIMIT, DAY, ts=2)
    assert (ack.exec_type, ack.ord_status, ack.leaves_qty_lots) == (ExecType.NEW, OrdStatus.NEW, 3)
    # Another client sells 7 at 19_999: the participants' 5 lots at 19_999 are ahead of ours.
    reports = ex.submit(8, "B1", "ESZ6", Side.SELL, 7, 19_999, LIMIT, TimeInForce.IOC, ts=3)
    ours = [r for r in reports if r.client == 7]
    theirs = [r for r in reports if r.client == 8]
    assert [(r.last_qty_lots, r.leaves_qty_lots, r.ord_status, r.maker) for r in ours] == [
        (2, 1, OrdStatus.PARTIALLY_FILLED, True)
    ]
    assert sum(r.last_qty_lots for r in theirs) == 7
    assert all(not r.maker for r in theirs if r.exec_type is ExecType.TRADE)


def test_cancel_and_replace_and_their_rejects() -> None:
    ex = make()
    ex.submit(7, "A1", "ESZ6", Side.SELL, 2, 20_010, LIMIT, DAY, ts=1)
    (rep,) = ex.replace(7, "A2", "A1", 4, 20_011, ts=2)  # type: ignore[misc]
    assert (rep.exec_type, rep.client_order_id, rep.orig_client_order_id) == (
        ExecType.REPLACED,
        "A2",
        "A1",
    )
    assert (rep.order_qty_lots, rep.px_ticks, rep.leaves_qty_lots) == (4, 20_011, 4)
    (canceled,) = ex.cancel(7, "A3", "A2", ts=3)  # type: ignore[misc]
    assert (canceled.exec_type, canceled.ord_status) == (ExecType.CANCELED, OrdStatus.CANCELED)
    late = ex.cancel(7, "A4", "A3", ts=4)
    assert isinstance(late, CancelReject)
    assert (late.reason, late.text) == (0, "too late to cancel: order is canceled")
    unknown = ex.cancel(7, "A5", "ZZ", ts=5)
    assert isinstance(unknown, CancelReject)
    assert (unknown.reason, unknown.venue_order_id) == (1, "NONE")


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("XXX", Side.BUY, 1, 20_000), "unknown symbol 'XXX' (listed here: ESZ6, NQZ6)"),
        (("ESZ6", Side.BUY, 0, 20_000), "order quantity must be > 0, got 0"),
        (("ESZ6", Side.BUY, 1, 5), "price 5 outside 18000..21999 ticks"),
    ],
)
def test_bad_orders_are_rejected_with_a_reason(args: tuple[str, Side, int, int], text: str) -> None:
    ex = make()
    (rej,) = ex.submit(1, "X", *args, LIMIT, DAY, ts=1)
    assert rej.exec_type is ExecType.REJECTED
    assert rej.text == text


def test_reports_say_why_in_words_and_acks_and_fills_say_nothing() -> None:
    ex = make()
    ex.seed_books(ts=1)
    (ack,) = ex.submit(7, "A1", "ESZ6", Side.BUY, 3, 19_990, LIMIT, DAY, ts=2)
    assert ack.text == ""  # was "reason 0"
    fills = ex.submit(7, "M1", "ESZ6", Side.BUY, 2, 0, OrdType.MARKET, TimeInForce.IOC, ts=3)
    assert [r.exec_type for r in fills] == [ExecType.NEW, ExecType.TRADE]
    assert all(r.text == "" for r in fills)
    (canceled,) = ex.cancel(7, "A2", "A1", ts=4)  # type: ignore[misc]
    assert canceled.text == "canceled on request"
    status = ex.status(7, "A1", ts=5)  # a finished order: its final state, not "unknown"
    assert status is not None
    assert (status.exec_type, status.ord_status, status.client_order_id) == (
        ExecType.ORDER_STATUS,
        OrdStatus.CANCELED,
        "A2",
    )
    assert ex.status(7, "NEVER", ts=5) is None
    # A market order for more than the book holds: its rest expires, saying so.
    *_, rest = ex.submit(8, "M2", "ESZ6", Side.SELL, 500, 0, OrdType.MARKET, DAY, ts=5)
    assert (rest.exec_type, rest.text) == (
        ExecType.EXPIRED,
        "market order remainder canceled: no more liquidity on the other side",
    )
    (_ack, ioc) = ex.submit(8, "I1", "NQZ6", Side.BUY, 1, 79_000, LIMIT, TimeInForce.IOC, ts=6)
    assert (ioc.exec_type, ioc.text) == (ExecType.EXPIRED, "IOC remainder canceled")
    # Self-trade prevention cancels the incoming order and says why.
    empty = make()
    empty.submit(9, "S1", "NQZ6", Side.SELL, 1, 80_000, LIMIT, DAY, ts=7)
    *_, stp = empty.submit(9, "B1", "NQZ6", Side.BUY, 1, 80_000, LIMIT, DAY, ts=8)
    assert stp.ord_status is OrdStatus.CANCELED
    assert stp.text.startswith("canceled by self-trade prevention")


def test_cancel_and_replace_rejects_name_the_problem() -> None:
    ex = make()
    ex.submit(7, "A1", "ESZ6", Side.SELL, 3, 19_999, LIMIT, DAY, ts=2)  # alone in the book
    ex.submit(8, "B1", "ESZ6", Side.BUY, 2, 19_999, LIMIT, TimeInForce.IOC, ts=3)  # fills 2
    small = ex.replace(7, "A2", "A1", 2, 19_999, ts=4)
    assert isinstance(small, CancelReject)
    assert small.text == "invalid replace: quantity 2 lots must exceed the 2 lots already filled"
    far = ex.replace(7, "A3", "A1", 5, 5, ts=5)
    assert isinstance(far, CancelReject)
    assert far.text == "invalid replace: price 5 outside 18000..21999 ticks"
    unknown = ex.cancel(7, "A4", "NOPE", ts=6)
    assert isinstance(unknown, CancelReject)
    assert unknown.text == "unknown order: no order with ClOrdID 'NOPE'"
    refused = ex.refuse_new(7, "A5", "ESZ6", Side.BUY, LIMIT, "price off the grid", ts=7)
    assert (refused.exec_type, refused.text, refused.venue_order_id) == (
        ExecType.REJECTED,
        "price off the grid",
        "NONE",
    )
    (ack,) = ex.submit(7, "A5", "ESZ6", Side.BUY, 1, 19_990, LIMIT, DAY, ts=8)  # id still free
    assert ack.exec_type is ExecType.NEW


def test_duplicate_clordid_rejected_and_cancel_on_disconnect() -> None:
    ex = make()
    ex.submit(1, "X", "ESZ6", Side.BUY, 1, 19_990, LIMIT, DAY, ts=1)
    (dup,) = ex.submit(1, "X", "ESZ6", Side.BUY, 1, 19_990, LIMIT, DAY, ts=2)
    assert dup.text == "duplicate ClOrdID 'X'"
    ex.submit(1, "Y", "NQZ6", Side.SELL, 1, 80_010, LIMIT, DAY, ts=3)
    gone = ex.cancel_owner(1, ts=4)
    assert sorted(r.client_order_id for r in gone) == ["X", "Y"]
    assert all(r.ord_status is OrdStatus.CANCELED for r in gone)
    assert {r.text for r in gone} == {
        "canceled: the client's session disconnected (cancel on disconnect)"
    }


def test_market_data_rebuilds_the_exchange_book_exactly() -> None:
    ex = make(rate=2000.0)
    ex.seed_books(ts=0)
    for i in range(1, 201):
        ex.step(i * 10_000_000)
    events = ex.drain_market_events()
    assert ex.trades > 0
    books = L2Books(2, 4096, [20_000, 80_000])
    books.apply(events)
    for b, sym in enumerate(ex.symbols):
        bids, asks = ex.depth(sym, 10)
        got_b, got_a = books.top(b, 10)
        assert [tuple(x) for x in got_b.tolist()] == bids
        assert [tuple(x) for x in got_a.tolist()] == asks
        assert bids[0][0] < asks[0][0]  # never crossed


def test_same_seed_same_fills() -> None:
    def run(seed: int) -> list[tuple[str, int, int]]:
        ex = make(seed=seed, rate=1000.0)
        ex.seed_books(ts=0)
        fills = []
        for i in range(1, 300):
            ts = i * 10_000_000
            if i % 10 == 0:
                ex.submit(
                    5,
                    f"C{i}",
                    "ESZ6",
                    Side.BUY if i % 20 else Side.SELL,
                    2,
                    20_000,
                    LIMIT,
                    DAY,
                    ts=ts,
                )
            fills += [
                (r.client_order_id, r.last_px_ticks, r.last_qty_lots)
                for r in ex.step(ts)
                if r.exec_type is ExecType.TRADE
            ]
        return fills

    a, b, c = run(3), run(3), run(4)
    assert a == b
    assert a
    assert a != c


def test_participants_move_the_price() -> None:
    ex = make(rate=500.0)
    ex.seed_books(ts=0)
    mids = []
    for i in range(1, 2001):
        ex.step(i * 10_000_000)
        bids, asks = ex.depth("ESZ6", 1)
        if bids and asks:
            mids.append((bids[0][0] + asks[0][0]) / 2)
    assert np.ptp(mids) >= 3  # the fair price walked several ticks in 20 simulated seconds
