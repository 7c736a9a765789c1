# SPDX-License-Identifier: MIT
"""A backtest trades the instrument its data was recorded with; P&L also in currency."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.cli import money
from engine.backtest.runner import BacktestInputError, BacktestJob, job_instrument
from engine.tickstore.store import TickStore


def _store(path: Path) -> Path:
    with (
        TickStore(path, "a") as store,
        store.writer("ESH4", "20240102", tick_size="0.25", lot_size="1") as w,
    ):
        w.append("trades", np.zeros(0, w.dtype("trades")))
    return path


def test_a_store_day_gives_its_increments_and_a_contradiction_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path / "t.h5")
    job = BacktestJob(
        events=str(store), journal="x.qwj", symbol="ESH4", multiplier="50", currency="USD"
    )
    ins = job_instrument(job)
    assert (ins.tick_size, ins.lot_size, ins.multiplier, ins.currency) == (
        Decimal("0.25"),
        Decimal(1),
        Decimal(50),
        "USD",
    )
    assert ins.tick_value == Decimal("12.5")  # one ES tick on one contract
    same = BacktestJob(events=str(store), journal="x.qwj", symbol="ESH4", tick_size="0.250")
    assert job_instrument(same).tick_size == Decimal("0.25")
    wrong = BacktestJob(events=str(store), journal="x.qwj", symbol="ESH4", tick_size="0.01")
    with pytest.raises(
        BacktestInputError,
        match=r"--tick-size 0.01: .*t.h5 recorded "
        r"ESH4/20240102 with tick size 0.25",
    ):
        job_instrument(wrong)
    bad = BacktestJob(events=str(store), journal="x.qwj", symbol="ESH4", multiplier="fifty")
    with pytest.raises(BacktestInputError, match="--multiplier 'fifty': not a decimal number"):
        job_instrument(bad)


@pytest.mark.parametrize(
    ("value", "currency", "text"),
    [
        (1234.5, "USD", "+1,234.50 USD"),
        (-3.98450e-05, "USDT", "-3.98e-05 USDT"),
        (0.0, "", "+0.00 (quote currency)"),
    ],
)
def test_money_text(value: float, currency: str, text: str) -> None:
    assert money(value, currency) == text
