# SPDX-License-Identifier: MIT
"""Positions and P&L: kernels (compiled and ``.py_func``) against a plain-Python ledger."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.instruments import Instrument
from engine.portfolio import _kernels as k
from engine.portfolio.positions import PositionBook
from engine.types import BUY, FILL_DTYPE, POSITION_DTYPE, SELL

INSTRUMENTS = [
    Instrument(symbol="ESH4", tick_size="0.25", multiplier="50"),
    Instrument(symbol="BTCUSDT", tick_size="0.01", lot_size="0.001"),
]


class RefLedger:
    """Average-cost ledger, one fill at a time, in plain Python floats."""

    def __init__(self) -> None:
        self.qty = 0
        self.cost = 0.0
        self.realized = 0.0
        self.fees = 0.0
        self.volume = 0

    def fill(self, side: int, px: int, qty: int, fee: float, tv: float) -> None:
        dq = side * qty
        if self.qty == 0 or (self.qty > 0) == (dq > 0):
            self.qty += dq
            self.cost += dq * px
        else:
            close = min(qty, abs(self.qty))
            avg = self.cost / self.qty
            sgn = 1 if self.qty > 0 else -1
            self.realized += sgn * close * (px - avg) * tv
            q1 = self.qty + dq
            if q1 == 0:
                self.cost = 0.0
            elif (q1 > 0) == (self.qty > 0):
                self.cost = avg * q1
            else:
                self.cost = float(q1 * px)
            self.qty = q1
        self.fees += fee
        self.volume += qty


_fill = st.tuples(
    st.integers(0, 1),  # strategy
    st.integers(0, 1),  # instrument
    st.sampled_from([BUY, SELL]),
    st.integers(19_000, 19_100),
    st.integers(1, 9),
    st.sampled_from([0.0, 0.5, -0.25, 1.75]),
)


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=150, deadline=None)
@given(fills=st.lists(_fill, max_size=60), split=st.integers(1, 60))
def test_pnl_kernel_matches_reference(
    mode: str, fills: list[tuple[int, int, int, int, int, float]], split: int
) -> None:
    tv = np.array([float(i.tick_value) for i in INSTRUMENTS])
    pos = np.zeros((2, 2), POSITION_DTYPE)
    arr = np.zeros(len(fills), FILL_DTYPE)
    for j, (s, i, sd, px, q, fee) in enumerate(fills):
        arr[j] = (j, j, px, q, fee, s, i, sd, 0)
    fn = k.apply_fills if mode == "jit" else k.apply_fills.py_func
    one = k.apply_fill if mode == "jit" else k.apply_fill.py_func
    # first part as a batch, the rest fill by fill: both paths must agree with the ledger
    fn(pos, arr[:split], tv)
    for f in arr[split:]:
        one(
            pos,
            int(f["strategy"]),
            int(f["instrument"]),
            int(f["side"]),
            int(f["px"]),
            int(f["qty"]),
            float(f["fee"]),
            int(f["ts"]),
            float(tv[f["instrument"]]),
        )
    ref = {(s, i): RefLedger() for s in range(2) for i in range(2)}
    for s, i, sd, px, q, fee in fills:
        ref[(s, i)].fill(sd, px, q, fee, float(tv[i]))
    for (s, i), r in ref.items():
        p = pos[s, i]
        assert p["qty"] == r.qty
        assert p["cost"] == r.cost
        assert p["realized"] == r.realized
        assert p["fees"] == r.fees
        assert p["volume"] == r.volume
    # conservation: with every position closed at the mark, P&L is the cash flow
    marks = np.array([19_050.0, 19_050.0])
    out = np.zeros((2, 2))
    (k.unrealized if mode == "jit" else k.unrealized.py_func)(pos, marks, tv, out)
    for (s, i), r in ref.items():
        cash = sum(-sd * q * px for (s2, i2, sd, px, q, _f) in fills if (s2, i2) == (s, i))
        expect = (cash + r.qty * marks[i]) * tv[i]
        assert math.isclose(r.realized + out[s, i], expect, rel_tol=1e-9, abs_tol=1e-6)


def test_position_book_round_trip_and_reversal() -> None:
    book = PositionBook(1, INSTRUMENTS)
    book.on_fill(0, 0, BUY, 19_000, 2, fee=2.0)  # long 2 @ 4750.00
    book.on_fill(0, 0, BUY, 19_004, 2, fee=2.0)  # long 4 @ avg 19_002 ticks
    p = book.position(0, 0, mark=19_010)
    assert (p.qty, p.avg_px) == (4, 19_002.0)
    assert p.unrealized == pytest.approx(4 * 8 * 12.5)  # 8 ticks * $12.50 per tick
    book.on_fill(0, 0, SELL, 19_006, 6, fee=3.0)  # close 4 (+4 ticks each), open short 2
    p = book.position(0, 0)
    assert p.qty == -2
    assert p.avg_px == 19_006.0
    assert p.realized == pytest.approx(4 * 4 * 12.5)
    assert p.fees == 7.0
    assert p.volume == 10
    assert p.net == pytest.approx(200.0 - 7.0)
    u = book.unrealized([19_000.0, 0.0])
    assert u[0, 0] == pytest.approx(2 * 6 * 12.5)


def test_position_book_batch_equals_incremental() -> None:
    rng = np.random.default_rng(3)
    n = 2_000
    fills = np.zeros(n, FILL_DTYPE)
    fills["strategy"] = rng.integers(0, 3, n)
    fills["instrument"] = rng.integers(0, 2, n)
    fills["side"] = rng.choice([BUY, SELL], n)
    fills["px"] = 19_000 + rng.integers(-50, 50, n)
    fills["qty"] = rng.integers(1, 5, n)
    fills["fee"] = 0.1
    a = PositionBook(3, INSTRUMENTS)
    b = PositionBook(3, INSTRUMENTS)
    a.apply(fills)
    for f in fills:
        b.on_fill(
            int(f["strategy"]),
            int(f["instrument"]),
            int(f["side"]),
            int(f["px"]),
            int(f["qty"]),
            float(f["fee"]),
            int(f["ts"]),
        )
    np.testing.assert_array_equal(a.state, b.state)
    assert a.state["n_fills"].sum() == n


def test_position_book_rejects_bad_fills_naming_field_and_value() -> None:
    book = PositionBook(2, INSTRUMENTS)
    fills = np.zeros(2, FILL_DTYPE)
    fills["side"] = BUY
    fills["qty"] = [1, 0]
    with pytest.raises(ValueError, match=r"fills\[1\]\.qty: must be > 0, got 0"):
        book.apply(fills)
    fills["qty"] = 1
    fills["instrument"][0] = 2
    with pytest.raises(ValueError, match=r"fills\[0\]\.instrument: must be in \[0, 2\), got 2"):
        book.apply(fills)
    with pytest.raises(ValueError, match="side: must be BUY"):
        book.on_fill(0, 0, 0, 1, 1)
    with pytest.raises(ValueError, match="strategy: must be in"):
        book.position(5, 0)
    with pytest.raises(ValueError, match="read-only"):
        book.state["qty"][0, 0] = 1
    assert book.state["n_fills"].sum() == 0


def test_position_book_grows_keeping_positions() -> None:
    book = PositionBook(2, INSTRUMENTS)
    book.on_fill(1, 0, BUY, 19_000, 3)
    with pytest.raises(ValueError, match=r"strategy: must be in \[0, 2\), got 2"):
        book.on_fill(2, 0, BUY, 19_000, 1)
    book.grow(201)
    assert book.n_strategies >= 201
    book.on_fill(200, 1, SELL, 19_000, 2)
    assert book.position(1, 0).qty == 3
    assert book.position(200, 1).qty == -2
    book.grow(5)  # never shrinks
    assert book.n_strategies >= 201
    assert book.position(200, 1).qty == -2
