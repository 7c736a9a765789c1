# SPDX-License-Identifier: MIT
"""Self-trade prevention in the OMS: two strategies crossing each other, every mode.

Live on the demo engine (FIX on loopback to the simulator) and in a generic backtest: the same
order manager applies the same rule before the order leaves the engine, so the simulator's own
self-trade prevention never fires for our orders.
"""

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest

from engine.backtest.generic import GenericBacktest
from engine.backtest.journal import BacktestJournal
from engine.backtest.synthetic import random_walk_l2
from engine.clock import LiveClock
from engine.config.model import ConfigError
from engine.config.reader import load_config, parse_config
from engine.core import Engine, EngineState
from engine.demo import build_demo
from engine.enums import ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.events import OrderView
from engine.headless import build_from_config
from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest
from engine.oms.stp import SelfTradePrevention, StpMode, crosses
from engine.strategy.base import BookView, Strategy
from tests.factories import make_oms, report

#: How far below the touch the resting bid sits (it must not trade with the market).
DEPTH = 6


def order(oid: int, sid: int, side: Side, px: int, tif: TimeInForce = TimeInForce.DAY) -> Order:
    o = Order.pending_new(oid, f"C{oid}", sid, "X", side, OrdType.LIMIT, tif, 1, px, 0)
    o.status = OrdStatus.NEW
    return o


def test_crossing_is_price_side_and_resting_only() -> None:
    bid = order(1, 1, Side.BUY, 100)
    assert crosses(order(2, 2, Side.SELL, 100), bid)
    assert crosses(order(2, 2, Side.SELL, 99), bid)
    assert not crosses(order(2, 2, Side.SELL, 101), bid)
    assert not crosses(order(2, 2, Side.BUY, 90), bid)
    assert not crosses(order(2, 2, Side.BUY, 100), order(1, 1, Side.SELL, 100, TimeInForce.IOC))
    bid.pending = PendingRequest(
        kind="replace", client_order_id="R", prev_status=OrdStatus.NEW, qty_lots=1, px_ticks=90
    )
    assert not crosses(order(2, 2, Side.SELL, 95), bid)  # the venue moves it first


@pytest.mark.parametrize(
    ("mode", "cancel", "refused"),
    [
        (StpMode.CANCEL_NEWEST, False, True),
        (StpMode.CANCEL_OLDEST, True, False),
        (StpMode.CANCEL_BOTH, True, True),
        (StpMode.ALLOW, False, False),
    ],
)
def test_modes_groups_and_closing_orders(mode: StpMode, cancel: bool, refused: bool) -> None:
    stp = SelfTradePrevention(mode=StpMode.ALLOW)
    stp.set_strategy(2, mode)
    resting = [order(1, 1, Side.BUY, 100), order(3, 2, Side.BUY, 100)]  # its own: not counted
    d = stp.check(order(2, 2, Side.SELL, 100), resting)
    assert [o.order_id for o in d.cancel] == ([1] if cancel else [])
    assert (d.refusal is not None) is refused
    if refused:
        assert d.refusal == (
            f"self-trade prevention ({mode.value}): it would trade with order 1 of strategy 1 "
            "at 100 ticks"
        )
    closing = stp.check(order(2, 2, Side.SELL, 100), resting, closing=True)
    assert closing.refusal is None  # a flatten always goes out
    stp.set_strategy(1, None, group="other")
    assert stp.check(order(2, 2, Side.SELL, 100), resting) == stp.check(
        order(2, 2, Side.SELL, 1), []
    )


class RestingBid(Strategy):
    """Bid 1 lot ``DEPTH`` ticks below the touch, once."""

    name = "resting bid"

    def __init__(self, strategy_id: int, symbols: list[str], **params: object) -> None:
        super().__init__(strategy_id, symbols, **params)
        self.sent: OrderView | None = None
        self.now: OrderView | None = None

    def on_book(self, book: BookView) -> None:
        bid = book.best_bid()
        if self.sent is None and bid is not None:
            self.sent = self.buy(book.symbol, 1, bid[0] - DEPTH)

    def on_order(self, order: OrderView) -> None:
        if self.sent is not None and order.order_id == self.sent.order_id:
            self.now = order


class CrossingSell(Strategy):
    """Sell 1 lot at the other strategy's bid once that bid is acknowledged (a self-trade)."""

    name = "crossing sell"
    timer_interval_ms = 20

    def __init__(self, strategy_id: int, symbols: list[str], **params: object) -> None:
        super().__init__(strategy_id, symbols, **params)
        self.other: RestingBid | None = None
        self.sent: OrderView | None = None

    def on_timer(self, now_ns: int) -> None:
        bid = self.other.now if self.other is not None else None
        if self.sent is None and bid is not None and bid.status is OrdStatus.NEW:
            self.sent = self.sell(bid.symbol, 1, bid.px_ticks)


def pair() -> tuple[RestingBid, CrossingSell]:
    rest, cross = RestingBid(11, ["ESZ6"]), CrossingSell(12, ["ESZ6"])
    cross.other = rest
    return rest, cross


OUTCOMES = [
    # mode, the resting bid canceled by us, the crossing sell refused by us
    (StpMode.CANCEL_NEWEST, False, True),
    (StpMode.CANCEL_OLDEST, True, False),
    (StpMode.CANCEL_BOTH, True, True),
    (StpMode.ALLOW, False, False),
]


def check(
    mode: StpMode, rest: RestingBid, cross: CrossingSell, canceled: bool, refused: bool
) -> None:
    assert cross.sent is not None, "the crossing order was never sent"
    assert rest.now is not None
    if refused:
        assert cross.sent.status is OrdStatus.REJECTED
        assert cross.sent.text.startswith(f"self-trade prevention ({mode.value})")
    else:
        assert cross.sent.status is not OrdStatus.REJECTED, cross.sent.text
    if canceled:
        assert rest.now.status is OrdStatus.CANCELED
        assert "self-trade" not in rest.now.text  # we canceled it; the venue never had to
    else:
        assert rest.now.status is not OrdStatus.CANCELED, rest.now.text


@pytest.mark.parametrize(("mode", "canceled", "refused"), OUTCOMES)
async def test_live_demo_engine_two_strategies_crossing(
    mode: StpMode, canceled: bool, refused: bool
) -> None:
    engine = Engine(LiveClock(), engine_id="stp")
    desk = build_demo(engine)
    desk.router.stp.mode = mode
    rest, cross = pair()
    desk.add_strategy(rest, autostart=True)
    desk.add_strategy(cross, autostart=True)
    task = asyncio.create_task(engine.run())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    try:
        while loop.time() < deadline:
            done = cross.sent is not None and (
                cross.sent.status is OrdStatus.REJECTED
                or (
                    cross.sent.order_id
                    and desk.router.find(cross.sent.order_id) is not None
                    and desk.router.find(cross.sent.order_id)[0].is_terminal
                )  # type: ignore[index]
            )
            settled = rest.now is not None and (
                not canceled or rest.now.status is OrdStatus.CANCELED
            )
            if done and settled:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        found = (
            desk.router.find(cross.sent.order_id) if cross.sent and cross.sent.order_id else None
        )
        if found is not None:
            cross.sent = found[0].view()
    finally:
        engine.request_stop()
        await task
    assert engine.state is EngineState.STOPPED
    assert cross.sent is not None
    stuck = cross.sent.status is OrdStatus.REJECTED and "cannot be canceled first" in (
        cross.sent.text
    )
    if mode is StpMode.CANCEL_OLDEST and stuck:
        # The sell also met a market-maker quote with a replace on its way (the demo quotes
        # all the time): refused, nothing canceled — never left to the venue's prevention.
        assert rest.now is not None
        assert rest.now.status is not OrdStatus.CANCELED
    else:
        check(mode, rest, cross, canceled, refused)
    if mode is not StpMode.ALLOW:  # the simulator never had to prevent one
        assert "canceled by self-trade prevention" not in cross.sent.text


@pytest.mark.parametrize(("mode", "canceled", "refused"), OUTCOMES)
def test_generic_backtest_two_strategies_crossing(
    tmp_path: Path, mode: StpMode, canceled: bool, refused: bool
) -> None:
    rest, cross = RestingBid(11, ["RW"]), CrossingSell(12, ["RW"])
    cross.other = rest
    gen = GenericBacktest(
        [rest, cross],
        Instrument(symbol="RW", tick_size=Decimal("0.01")),
        stp=SelfTradePrevention(mode=mode),
    )
    ev = random_walk_l2(20_000, seed=4)
    with BacktestJournal(f"{tmp_path}/stp.qwj", int(ev["ts"][0])) as jr:
        gen.run(ev, jr)
    check(mode, rest, cross, canceled, refused)


async def test_engine_toml_sets_the_modes_and_groups(tmp_path: Path) -> None:
    toml = tmp_path / "engine.toml"
    toml.write_text(
        '[simulator]\nenabled = true\n\n[stp]\nmode = "cancel_both"\n\n'
        '[[strategies]]\nid = 5\nclass = "MarketMaker"\nstp = "allow"\nstp_group = "mm"\n\n'
        '[[strategies]]\nid = 6\nclass = "Taker"\n'
    )
    engine = Engine(LiveClock(), engine_id="stp-toml")
    desk = build_from_config(engine, load_config(toml))
    stp = desk.router.stp
    assert (stp.mode_of(5), stp.mode_of(6), stp.mode_of(0)) == (
        StpMode.ALLOW, StpMode.CANCEL_BOTH, StpMode.CANCEL_BOTH
    )  # fmt: skip
    assert stp.groups == {5: "mm"}
    assert all(m.stp is stp for m in desk.router.managers.values())
    with pytest.raises(ConfigError, match=r"stp\.mode: 'newest': must be one of cancel_newest"):
        parse_config('[stp]\nmode = "newest"\n')


@pytest.mark.parametrize(
    ("mode", "moved", "canceled"),
    [
        (StpMode.CANCEL_NEWEST, False, False),
        (StpMode.CANCEL_OLDEST, True, True),
        (StpMode.CANCEL_BOTH, False, True),
        (StpMode.ALLOW, True, False),
    ],
)
def test_a_replace_across_another_strategys_order_is_decided_alike(
    mode: StpMode, moved: bool, canceled: bool
) -> None:
    rig = make_oms()
    rig.oms.stp = SelfTradePrevention(mode=mode)
    bid = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    ask = rig.oms.send(strategy_id=2, side=Side.SELL, qty_lots=1, px_ticks=103)
    for o in (bid, ask):
        rig.oms.on_execution_report(report(o, ExecType.NEW, OrdStatus.NEW))
    assert rig.oms.replace(ask, px_ticks=102)  # not crossing: as before
    rig.oms.on_execution_report(
        report(
            ask,
            ExecType.REPLACED,
            OrdStatus.NEW,
            clordid=ask.pending.client_order_id,  # type: ignore[union-attr]
            orig=ask.client_order_id,
        )
    )
    assert rig.oms.replace(ask, px_ticks=100) is moved
    assert (bid.pending is not None and bid.pending.kind == "cancel") is canceled
    if not moved:
        assert rig.oms.replace_refused == (
            f"self-trade prevention ({mode.value}): it would trade with order {bid.order_id} of "
            "strategy 1 at 100 ticks"
        )
        assert ask.px_ticks == 102
        assert ask.pending is None


def test_orders_are_looked_at_only_when_another_strategy_holds_some() -> None:
    """One strategy alone on an instrument pays no scan of its own working orders per order."""

    class Counting(SelfTradePrevention):
        looked = 0

        def check(self, new: Order, working: object, **kw: object) -> object:  # type: ignore[override]
            Counting.looked += 1
            return super().check(new, working, **kw)  # type: ignore[arg-type]

    rig = make_oms()
    rig.oms.stp = Counting()
    for i in range(50):
        o = rig.oms.send(
            strategy_id=1,
            side=Side.BUY if i % 2 else Side.SELL,
            qty_lots=1,
            px_ticks=90 if i % 2 else 110,
        )
        rig.oms.on_execution_report(report(o, ExecType.NEW, OrdStatus.NEW))
    assert Counting.looked == 0
    bid = rig.oms.send(
        strategy_id=2, side=Side.BUY, qty_lots=1, px_ticks=111
    )  # another strategy: looked at, and refused
    assert Counting.looked == 1
    assert bid.status is OrdStatus.REJECTED
    assert "self-trade prevention" in bid.text
    # Strategy 2 holds nothing (its order was refused): strategy 1 is alone again.
    rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=91)
    assert Counting.looked == 1
    # Once strategy 1's orders are all done, strategy 2 is alone: no look either.
    for o in list(rig.oms.orders.values()):
        rig.oms.on_execution_report(report(o, ExecType.CANCELED, OrdStatus.CANCELED, leaves=0))
    rig.oms.send(strategy_id=2, side=Side.SELL, qty_lots=1, px_ticks=80)
    assert Counting.looked == 1


@pytest.mark.parametrize("mode", [StpMode.CANCEL_OLDEST, StpMode.CANCEL_BOTH])
def test_a_resting_order_with_a_replace_on_its_way_is_not_left_to_the_venue(
    mode: StpMode,
) -> None:
    """Seen in CI: the demo's market maker had a replace in flight on the bid a crossing sell
    met; the cancel could not be sent, the sell went out and the simulator's own self-trade
    prevention canceled it. Now the sell is refused; in cancel_oldest nothing is canceled (the
    order is not sent), in cancel_both what can be canceled is."""
    rig = make_oms()
    rig.oms.stp = SelfTradePrevention(mode=mode)
    bid = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(report(bid, ExecType.NEW, OrdStatus.NEW))
    assert rig.oms.replace(bid, px_ticks=101)  # on its way
    sent = len(rig.venue.sent)
    sell = rig.oms.send(strategy_id=2, side=Side.SELL, qty_lots=1, px_ticks=100)
    assert sell.status is OrdStatus.REJECTED
    if mode is StpMode.CANCEL_OLDEST:
        assert sell.text == (
            f"self-trade prevention: order {bid.order_id} of strategy 1 at 100 ticks has a "
            "replace pending and cannot be canceled first; not sent"
        )
    else:  # refused anyway, for its own reason
        assert sell.text.startswith("self-trade prevention (cancel_both)")
    assert len(rig.venue.sent) == sent  # no new order; the bid's replace is not cancelable
    assert bid.pending is not None
    assert bid.pending.kind == "replace"
