# SPDX-License-Identifier: MIT
"""Pre-trade risk: each rule refuses with its name and values, per strategy and globally."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.enums import ExecType, KillLevel, OrdStatus, Side
from engine.oms.risk import RiskChecker, RiskLimits
from tests.factories import make_oms, report


def refused_text(
    rig_limits: RiskLimits, *sends: tuple[Side, int, int], ref: int | None = None
) -> str:
    rig = make_oms(rig_limits, reference_px=ref)
    order = None
    for side, qty, px in sends:
        order = rig.oms.send(strategy_id=1, side=side, qty_lots=qty, px_ticks=px)
    assert order is not None
    assert order.status is OrdStatus.REJECTED, order
    return order.text


def test_max_order_qty() -> None:
    text = refused_text(RiskLimits(max_order_qty_lots=100), (Side.BUY, 500, 10))
    assert text == "risk: max_order_qty: 500 lots > 100 lots (engine-wide)"


def test_max_order_notional_uses_the_instrument_multiplier() -> None:
    # 4000 ticks * 0.25 * 50 = 50,000 per lot; 3 lots = 150,000
    text = refused_text(RiskLimits(max_order_notional=100_000), (Side.BUY, 3, 4000))
    assert text == "risk: max_order_notional: 150,000.00 > 100,000.00 (engine-wide)"


def test_max_position_counts_working_orders_on_the_same_side() -> None:
    rig = make_oms(RiskLimits(max_position_lots=10))
    first = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=6, px_ticks=100)
    rig.oms.on_execution_report(
        report(
            first, ExecType.TRADE, OrdStatus.PARTIALLY_FILLED, last_qty=2, last_px=100, exec_id="a"
        )
    )
    second = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=5, px_ticks=100)
    assert second.status is OrdStatus.REJECTED
    assert second.text == (
        "risk: max_position: position +2 with working +4 and this order +5 lots reaches +11, "
        "beyond ±10 lots (engine-wide)"
    )
    # Reducing the position is always allowed.
    sell = rig.oms.send(strategy_id=1, side=Side.SELL, qty_lots=12, px_ticks=100)
    assert sell.status is OrdStatus.PENDING_NEW


def test_price_band_around_the_reference() -> None:
    text = refused_text(RiskLimits(price_band_ticks=20), (Side.BUY, 1, 150), ref=100)
    assert text == (
        "risk: price_band: buy at 150 ticks is 50 ticks (50.0%) above the reference 100, "
        "beyond ±20 ticks (engine-wide)"
    )
    rig = make_oms(RiskLimits(price_band_ticks=20), reference_px=100)
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=119).status
        is OrdStatus.PENDING_NEW
    )


def test_max_open_orders_and_strategy_limits_come_first() -> None:
    rig = make_oms(RiskLimits(max_open_orders=3))
    rig.risk.set_strategy_limits(7, RiskLimits(max_open_orders=1))
    assert (
        rig.oms.send(strategy_id=7, side=Side.BUY, qty_lots=1, px_ticks=100).status
        is OrdStatus.PENDING_NEW
    )
    refused = rig.oms.send(strategy_id=7, side=Side.BUY, qty_lots=1, px_ticks=100)
    assert refused.text == "risk: max_open_orders: 1 working + 1 > 1 (strategy 7)"
    rig.oms.send(strategy_id=8, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.send(strategy_id=8, side=Side.BUY, qty_lots=1, px_ticks=100)
    assert rig.oms.send(strategy_id=8, side=Side.BUY, qty_lots=1, px_ticks=100).text == (
        "risk: max_open_orders: 3 working + 1 > 3 (engine-wide)"
    )


def test_order_rate_window_slides() -> None:
    rig = make_oms(RiskLimits(max_orders_per_second=2))
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100).status
        is OrdStatus.PENDING_NEW
    )
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100).status
        is OrdStatus.PENDING_NEW
    )
    third = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    assert third.text == "risk: max_order_rate: 2 orders in the last second + 1 > 2/s (engine-wide)"
    rig.clock.advance(1_000_000_001)
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100).status
        is OrdStatus.PENDING_NEW
    )


def test_the_rate_window_forgets_old_sends_without_a_rate_limit() -> None:
    # Ten sends every 100 ms for a minute, through the order manager (which books them
    # itself when no rule applies) and through record_sent: the windows count the last
    # second's sends, and keep at most two seconds of them (not the day's: issue 16's soak).
    rig = make_oms()
    risk = rig.oms.risk
    for step in range(600):
        for _ in range(5):
            rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
            risk.record_sent(2)
        rig.clock.advance(100_000_000)
        assert risk.sent_in_window(1) == min(5 * (step + 1), 45)  # (a second ago: out)
        assert risk.sent_in_window(None) == min(10 * (step + 1), 90)
    assert risk.open_orders(1) == 3000
    kept = [len(risk._scopes[sid].sent) for sid in (1, 2)]
    assert all(45 <= n <= 100 for n in kept), kept


def test_kill_switch_blocks_new_orders_and_replace_refusal_is_alerted() -> None:
    rig = make_oms(RiskLimits(max_order_qty_lots=5))
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    assert not rig.oms.replace(order, qty_lots=9)
    assert rig.alerts[-1].text == (
        "replace of T1 refused: max_order_qty: 9 lots > 5 lots (engine-wide)"
    )
    rig.risk.kill_level = KillLevel.BLOCK_NEW
    blocked = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    assert blocked.text == "risk: kill_switch: kill switch is at BLOCK_NEW: new orders are blocked"


def test_negative_limit_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"RiskLimits\.max_open_orders must be >= 0, got -1"):
        RiskLimits(max_open_orders=-1)


def test_limits_set_while_running_apply_to_the_next_order() -> None:
    # Global and strategy limits are replaced at run time (console commands, config reload).
    rig = make_oms()
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=5, px_ticks=10).status
        is OrdStatus.PENDING_NEW
    )
    rig.risk.global_limits = RiskLimits(max_order_qty_lots=4)
    refused = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=5, px_ticks=10)
    assert refused.text == "risk: max_order_qty: 5 lots > 4 lots (engine-wide)"
    rig.risk.global_limits = RiskLimits()
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=5, px_ticks=10).status
        is OrdStatus.PENDING_NEW
    )
    rig.risk.set_strategy_limits(1, RiskLimits(max_order_qty_lots=2))
    assert rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=10).text == (
        "risk: max_order_qty: 3 lots > 2 lots (strategy 1)"
    )
    rig.risk.set_strategy_limits(1, RiskLimits())
    assert (
        rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=10).status
        is OrdStatus.PENDING_NEW
    )


@pytest.mark.parametrize(
    ("glob", "strategy", "instrument", "kill"),
    [
        (None, None, None, KillLevel.OFF),
        (RiskLimits(max_order_qty_lots=2), None, None, KillLevel.OFF),
        (None, RiskLimits(max_open_orders=0), None, KillLevel.OFF),
        (None, None, RiskLimits(price_band_ticks=1), KillLevel.OFF),
        (None, None, None, KillLevel.BLOCK_NEW),
    ],
)
def test_check_new_answers_as_check_order(
    glob: RiskLimits | None,
    strategy: RiskLimits | None,
    instrument: RiskLimits | None,
    kill: KillLevel,
) -> None:
    risk = RiskChecker(TestClock(), glob, reference_px=lambda _s: 100)
    if strategy is not None:
        risk.set_limits(strategy, strategy_id=7)
    if instrument is not None:
        risk.set_limits(instrument, symbol="ESZ6")
    risk.kill_level = kill
    for sid in (7, 8):
        for qty, px in ((1, 100), (3, 100), (1, 110)):
            new = risk.check_new(sid, "ESZ6", Side.BUY, qty, px, 12.5)
            old = risk.check_order(
                strategy_id=sid,
                symbol="ESZ6",
                side=Side.BUY,
                qty_lots=qty,
                px_ticks=px,
                tick_value=12.5,
            )
            assert new == old, (sid, qty, px)
    any_refused = glob or strategy or instrument or kill
    assert bool(any_refused) == any(
        risk.check_new(7, "ESZ6", Side.BUY, q, p, 12.5) is not None
        for q, p in ((1, 100), (3, 100), (1, 110))
    )


def test_on_new_order_sent_books_what_record_sent_and_on_working_changed_book() -> None:
    clock = TestClock()
    one, two = RiskChecker(clock), RiskChecker(clock)
    for side, qty in ((Side.BUY, 2), (Side.SELL, 5), (Side.BUY, 1)):
        one.on_new_order_sent(3, "ESZ6", side, qty)
        two.record_sent(3)
        two.on_working_changed(3, "ESZ6", side, 1, qty)
        clock.advance(400_000_000)
    limits = RiskLimits(max_orders_per_second=2, max_open_orders=3, max_position_lots=4)
    for risk in (one, two):
        risk.set_limits(limits, strategy_id=3)
    assert one.open_orders(3) == two.open_orders(3) == 3
    assert one.open_orders() == two.open_orders() == 3
    for sid in (3, 4):
        answers = [
            r.check_order(
                strategy_id=sid,
                symbol="ESZ6",
                side=Side.BUY,
                qty_lots=2,
                px_ticks=1,
                tick_value=1.0,
            )
            for r in (one, two)
        ]
        assert answers[0] == answers[1]
    refusal = one.check_new(3, "ESZ6", Side.BUY, 1, 1, 1.0)  # 3 lots working + 1: at the limit
    assert refusal is not None
    assert refusal.rule == "max_open_orders"


class _Model:
    """What risk books, as plain counters keyed as the checker once kept them (issue 25)."""

    def __init__(self) -> None:
        self.open: dict[int | None, int] = {}
        self.position: dict[tuple[int | None, str], int] = {}
        self.working: dict[tuple[int | None, str, int], int] = {}
        self.sent: list[tuple[int, int]] = []  # (monotonic ns, strategy)

    def add(self, d: dict, key: object, n: int) -> None:  # type: ignore[type-arg]
        d[key] = d.get(key, 0) + n

    def apply(
        self, risk: RiskChecker, clock: TestClock, op: tuple[str, int, str, Side, int]
    ) -> None:
        """Do ``op`` to ``risk`` and book it here."""
        kind, sid, sym, side, n = op
        if kind == "new":
            risk.on_new_order_sent(sid, sym, side, abs(n))
            self.sent.append((clock.monotonic_ns(), sid))
            for key in (None, sid):
                self.add(self.open, key, 1)
                self.add(self.working, (key, sym, int(side)), abs(n))
        elif kind == "working":
            risk.on_working_changed(sid, sym, side, n // 2, n)
            for key in (None, sid):
                self.add(self.open, key, n // 2)
                self.add(self.working, (key, sym, int(side)), n)
        elif kind in ("fill", "restore"):
            lots = int(side) * abs(n) if kind == "fill" else n
            if kind == "fill":
                risk.on_fill(sid, sym, side, abs(n))
            else:
                risk.restore_position(sid, sym, n)
            for key in (None, sid):
                self.add(self.position, (key, sym), lots)
        elif kind == "sent":
            risk.record_sent(sid)
            self.sent.append((clock.monotonic_ns(), sid))
        else:
            clock.advance(abs(n) * 300_000_000)


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["new", "working", "fill", "restore", "sent", "wait"]),
        st.sampled_from([1, 2, 20170101]),
        st.sampled_from(["ESZ6", "NQZ6"]),
        st.sampled_from([Side.BUY, Side.SELL]),
        st.integers(-3, 5),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_OPS)
def test_bookkeeping_matches_plain_counters(ops: list[tuple[str, int, str, Side, int]]) -> None:
    # Positions, working orders and lots per side, and the rate windows (per strategy and
    # engine-wide, the engine's being every strategy's sends together), after any sequence.
    clock = TestClock()
    risk, m = RiskChecker(clock), _Model()
    for op in ops:
        m.apply(risk, clock, op)
    horizon = clock.monotonic_ns() - 1_000_000_000
    for key in (None, 1, 2, 20170101, 99):
        assert risk.open_orders(key) == m.open.get(key, 0)
        in_window = [s for t, s in m.sent if t > horizon and (key is None or s == key)]
        assert risk.sent_in_window(key) == len(in_window)
        for sym in ("ESZ6", "NQZ6", "CLF7"):
            assert risk.position(sym, key) == m.position.get((key, sym), 0)
            for side in (Side.BUY, Side.SELL):
                want = m.working.get((key, sym, int(side)), 0)
                assert risk.working_lots(sym, side, key) == want
    for sym in ("ESZ6", "NQZ6", "CLF7"):
        held = sorted(k for (k, s), p in m.position.items() if k is not None and s == sym and p)
        assert risk.strategies_with_position(sym) == held


def test_engine_wide_rate_limit_counts_every_strategys_sends() -> None:
    clock = TestClock()
    risk = RiskChecker(clock, RiskLimits(max_orders_per_second=3))
    for sid in (1, 2, 3):
        assert risk.check_new(sid, "ESZ6", Side.BUY, 1, 100, 1.0) is None
        risk.on_new_order_sent(sid, "ESZ6", Side.BUY, 1)
        clock.advance(100_000_000)
    refusal = risk.check_new(4, "ESZ6", Side.BUY, 1, 100, 1.0)
    assert refusal is not None
    assert str(refusal) == "max_order_rate: 3 orders in the last second + 1 > 3/s (engine-wide)"
    clock.advance(700_000_001)  # the first send (at 0) leaves the window
    assert risk.sent_in_window() == 2
    assert risk.check_new(4, "ESZ6", Side.BUY, 1, 100, 1.0) is None
