# SPDX-License-Identifier: MIT
"""The pre-trade check's fast test answers as the full check, on any limits and state (issue 25).

``RiskChecker.check_new`` and ``new_order`` first ask ``passes_new`` whether every rule
passes, and build a refusal with ``check_order`` only when one does not. Here random limits
(engine-wide, per strategy, per instrument), kill levels, reference prices, positions,
working orders and send times are set, and for random orders ``passes_new`` must be exactly
``check_order(...) is None``; ``check_new`` and ``new_order`` must return what ``check_order``
returns, and ``new_order`` must book exactly the orders it passes.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.enums import KillLevel, Side
from engine.oms.risk import RiskChecker, RiskLimits

SYMBOLS = ("ESZ6", "NQZ6")
STRATEGIES = (0, 1, 2)


def _limit(values: st.SearchStrategy[int | float]) -> st.SearchStrategy[int | float | None]:
    # Off two times in three: a few rules per scope, so that each gets to refuse alone.
    return st.one_of(st.none(), st.none(), values)


_limits = st.builds(
    RiskLimits,
    max_order_qty_lots=_limit(st.integers(0, 6)),
    max_order_notional=_limit(st.floats(0, 1_500, allow_nan=False)),
    max_position_lots=_limit(st.integers(0, 8)),
    price_band_ticks=_limit(st.integers(0, 6)),
    price_band_pct=_limit(st.floats(0, 10, allow_nan=False)),
    max_open_orders=_limit(st.integers(0, 6)),
    max_orders_per_second=_limit(st.integers(0, 6)),
)
_bands = st.builds(
    RiskLimits,
    price_band_ticks=_limit(st.integers(0, 6)),
    price_band_pct=_limit(st.floats(0, 10, allow_nan=False)),
)
_orders = st.tuples(
    st.sampled_from(STRATEGIES),
    st.sampled_from(SYMBOLS),
    st.sampled_from([Side.BUY, Side.SELL]),
    st.integers(1, 7),  # lots
    st.integers(-3, 110),  # price, ticks (0: a market order; negative: a spread's price)
    st.booleans(),  # band_override
)


@settings(max_examples=1000, deadline=None)
@given(
    glob=_limits,
    own=st.dictionaries(st.sampled_from(STRATEGIES), _limits, max_size=2),
    bands=st.dictionaries(st.sampled_from(SYMBOLS), _bands, max_size=2),
    kill=st.sampled_from(list(KillLevel)),
    refs=st.dictionaries(st.sampled_from(SYMBOLS), st.one_of(st.integers(-5, 105)), max_size=2),
    fills=st.lists(
        st.tuples(st.sampled_from(STRATEGIES), st.sampled_from(SYMBOLS), st.integers(-6, 6)),
        max_size=4,
    ),
    working=st.lists(
        st.tuples(
            st.sampled_from(STRATEGIES),
            st.sampled_from(SYMBOLS),
            st.sampled_from([Side.BUY, Side.SELL]),
            st.integers(1, 4),
        ),
        max_size=6,
    ),
    steps=st.lists(st.tuples(_orders, st.integers(0, 700)), min_size=1, max_size=25),
)
def test_the_fast_test_answers_as_check_order(
    glob: RiskLimits,
    own: dict[int, RiskLimits],
    bands: dict[str, RiskLimits],
    kill: KillLevel,
    refs: dict[str, int],
    fills: list[tuple[int, str, int]],
    working: list[tuple[int, str, Side, int]],
    steps: list[tuple[tuple[int, str, Side, int, int, bool], int]],
) -> None:
    clock = TestClock()
    risk = RiskChecker(clock, glob, reference_px=refs.get)
    for sid, limits in own.items():
        risk.set_limits(limits, strategy_id=sid)
    for symbol, band in bands.items():
        risk.set_limits(band, symbol=symbol)
    for sid, symbol, lots in fills:
        if lots:
            risk.on_fill(sid, symbol, Side.BUY if lots > 0 else Side.SELL, abs(lots))
    for sid, symbol, side, lots in working:  # orders of several strategies already working
        risk.on_working_changed(sid, symbol, side, 1, lots)
    for (sid, symbol, side, qty, px, override), wait_ms in steps:
        # Every other step the kill switch as drawn (off in the others: rules get their turn).
        risk.kill_level = kill if wait_ms % 2 else KillLevel.OFF
        args = (sid, symbol, side, qty, px, 12.5, override)
        full = risk.check_order(
            strategy_id=sid,
            symbol=symbol,
            side=side,
            qty_lots=qty,
            px_ticks=px,
            tick_value=12.5,
            band_override=override,
        )
        assert risk.passes_new(*args) == (full is None), (args, full)
        assert risk.check_new(*args) == full
        before = (risk.open_orders(sid), risk.sent_in_window(sid), risk.working_lots(symbol, side))
        assert risk.new_order(*args) == full
        after = (risk.open_orders(sid), risk.sent_in_window(sid), risk.working_lots(symbol, side))
        booked = (before[0] + 1, before[1] + 1, before[2] + qty)
        assert after == (before if full is not None else booked)
        clock.advance(wait_ms * 1_000_000)
