# SPDX-License-Identifier: MIT
"""FIX prices and quantities of an instrument: the remembered conversions equal the exact ones."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.instruments import Instrument
from engine.venues.fix import codes as fixcodes
from engine.venues.fix.codes import FixNumbers, FixValueError, px_text, px_ticks, qty_lots, qty_text

CL = Instrument(symbol="CLF7", tick_size=Decimal("0.01"), multiplier=Decimal(1000))


@given(st.lists(st.integers(-(10**9), 10**9), max_size=50))
def test_remembered_texts_and_numbers_equal_the_decimal_conversions(ticks: list[int]) -> None:
    nums = FixNumbers(CL)
    for t in ticks + ticks:  # the second time from memory
        assert nums.px_text(t) == px_text(CL, t)
        assert nums.qty_text(abs(t)) == qty_text(CL, abs(t))
        assert nums.px_ticks(44, px_text(CL, t)) == px_ticks(CL, 44, px_text(CL, t)) == t
        text = qty_text(CL, abs(t))
        assert nums.qty_lots(38, text) == qty_lots(CL, 38, text) == abs(t)
    assert nums.symbol == b"CLF7"


def test_bad_text_fails_every_time_naming_the_tag(monkeypatch: pytest.MonkeyPatch) -> None:
    nums = FixNumbers(CL)
    for _ in range(2):  # a failure is never remembered
        with pytest.raises(FixValueError, match=r"tag 44: b'68\.505' is not a price of CLF7"):
            nums.px_ticks(44, b"68.505")
        with pytest.raises(FixValueError, match="tag 38: None is missing"):
            nums.qty_lots(38, None)
    # Memory is bounded: when full it starts afresh and still answers right.
    monkeypatch.setattr(fixcodes, "TEXT_MEMORY", 3)
    for t in range(10):
        assert nums.px_ticks(31, px_text(CL, t)) == t
    assert len(nums.ticks_of) <= 3
