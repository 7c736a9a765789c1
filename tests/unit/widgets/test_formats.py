# SPDX-License-Identifier: MIT
"""Prices and quantities formatted exactly per instrument; typed values checked."""

import pytest

from tests.unit.widgets.builders import instrument
from widgets.monitor.formats import InstrumentFormat, InstrumentFormats, fmt_money


@pytest.mark.parametrize(
    ("tick", "ticks", "text"),
    [
        ("0.25", 18_050, "4,512.50"),
        ("0.00005", 23_316, "1.16580"),
        ("0.5", 190_401, "95,200.5"),
        ("1", 1_234_567, "1,234,567"),
        ("0.25", -3, "-0.75"),
        ("0.01", 0, "0.00"),
    ],
)
def test_price_is_exact_with_consistent_decimals(tick: str, ticks: int, text: str) -> None:
    assert InstrumentFormat.from_event(instrument(tick=tick)).price(ticks) == text


def test_avg_price_has_two_more_decimals_and_qty_uses_the_lot_size() -> None:
    f = InstrumentFormat.from_event(instrument(tick="0.25", lot="0.001"))
    assert f.avg_price(18_050.5) == "4,512.6250"
    assert f.qty(1_500) == "1.500"


def test_unknown_instrument_shows_raw_ticks() -> None:
    fmts = InstrumentFormats()
    assert fmts.price("XYZ", 1234) == "1,234t"
    assert fmts.qty("XYZ", 5) == "5"


def test_parse_price_off_the_tick_grid_is_refused() -> None:
    f = InstrumentFormat.from_event(instrument(tick="0.25"))
    assert f.parse_price("4512.75") == 18_051
    assert f.parse_price("4,512.50") == 18_050
    with pytest.raises(ValueError, match=r"not on the tick grid of ESZ6 \(tick size 0.25\)"):
        f.parse_price("4512.30")
    with pytest.raises(ValueError, match="not a number"):
        f.parse_price("abc")


@pytest.mark.parametrize("text", ["0", "-1", ""])
def test_parse_qty_must_be_positive(text: str) -> None:
    f = InstrumentFormat.from_event(instrument())
    with pytest.raises(ValueError, match="quantity"):
        f.parse_qty(text)


def test_fmt_money_never_shows_minus_zero() -> None:
    assert fmt_money(-0.001) == "0.00"
    assert fmt_money(-1234.5) == "-1,234.50"
