# SPDX-License-Identifier: MIT
"""Instrument conversions between display units and ticks/lots, and enum mirrors."""

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import enums, types
from engine.instruments import Instrument

ES = Instrument(symbol="ESH4", tick_size="0.25", multiplier=50)
BTC = Instrument(symbol="BTCUSDT", tick_size="0.01", lot_size="0.00001", currency="USDT")


def test_scalar_conversions_are_exact() -> None:
    assert ES.price_to_ticks("4800.25") == 19_201
    assert ES.price_to_ticks(4800.25) == 19_201
    assert ES.ticks_to_price(19_201) == Decimal("4800.25")
    assert BTC.price_to_ticks("61737.63") == 6_173_763
    assert BTC.qty_to_lots("0.02") == 2_000
    assert BTC.lots_to_qty(2_000) == Decimal("0.02")
    assert ES.tick_value == Decimal("12.5")


@given(ticks=st.integers(-(10**12), 10**12))
def test_ticks_round_trip_through_prices(ticks: int) -> None:
    assert BTC.price_to_ticks(BTC.ticks_to_price(ticks)) == ticks
    assert int(BTC.prices_to_ticks(BTC.ticks_to_prices([ticks]))[0]) == ticks


def test_array_conversions_round_float_noise_only() -> None:
    px = np.array([61737.63, 61837.64, 0.01])
    np.testing.assert_array_equal(BTC.prices_to_ticks(px), [6_173_763, 6_183_764, 1])
    np.testing.assert_array_equal(BTC.qtys_to_lots([0.02, 1.5]), [2_000, 150_000])
    with pytest.raises(ValueError, match=r"prices\[1\]: 4800.1 is not a multiple of 0.25 \(ESH4\)"):
        ES.prices_to_ticks([4800.0, 4800.1])
    with pytest.raises(ValueError, match=r"prices\[0\]: must be finite"):
        ES.prices_to_ticks([float("nan")])


def test_bad_values_name_field_and_value() -> None:
    with pytest.raises(ValueError, match=r"price: '4800.1' is not a multiple of tick_size 0.25"):
        ES.price_to_ticks("4800.1")
    with pytest.raises(ValueError, match="qty: not a number: 'abc'"):
        ES.qty_to_lots("abc")
    with pytest.raises(ValueError, match=r"Instrument\.tick_size: must be > 0, got 0"):
        Instrument(symbol="X", tick_size=0)
    with pytest.raises(ValueError, match=r"Instrument\.symbol: must not be empty"):
        Instrument(symbol="", tick_size="1")
    with pytest.raises(AttributeError):
        ES.tick_size = Decimal(1)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("enum", "prefix"),
    [
        (enums.Liquidity, "LIQ_"),
        (enums.Reason, "REASON_"),
        (enums.CmdAction, "CMD_"),
        (enums.StpMode, "STP_"),
        (enums.L3Action, "L3_"),
        (enums.L2Kind, "L2_"),
        (enums.QueueModelKind, "QM_"),
        (enums.TimeInForce, "TIF_"),
        (enums.OrdType, "ORD_"),
    ],
)
def test_enums_mirror_kernel_constants(enum: type, prefix: str) -> None:
    for member in enum:  # type: ignore[attr-defined]
        assert getattr(types, prefix + member.name) == member.value


def test_exec_type_mirrors_matcher_codes() -> None:
    for name in ("NEW", "CANCELED", "REPLACED", "REJECTED", "EXPIRED", "TRADE"):
        assert getattr(types, "EXEC_" + name) == enums.ExecType[name]
