# SPDX-License-Identifier: MIT
"""Strategy ids are int64 end to end: a backtest with id 3,000,000,000, its journal, post-trade.

Strategy ids up to 2^63 - 1 are valid in the configuration; post-trade arrays once stored them
as int32, and such a backtest ran the whole day and then failed. Both backtest paths run here as
``qwconsole backtest`` processes and the journal is read back with the post-trade API.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.synthetic import random_walk_l2
from engine.posttrade import by_strategy, load_day

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIG_ID = 3_000_000_000


@pytest.fixture(scope="module")
def day_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("ids") / "day.npy"
    np.save(p, random_walk_l2(40_000, seed=11))
    return p


@pytest.mark.parametrize("path", ["fast", "generic"])
def test_strategy_id_3e9_through_a_backtest_and_post_trade(
    day_file: Path, tmp_path: Path, path: str
) -> None:
    out = tmp_path / "run.qwj"
    argv = [sys.executable, "-m", "app", "backtest", str(day_file), "--out", str(out),
            "--strategy-id", str(BIG_ID), "--param", "half_spread_ticks=1", "--order-ns",
            "200000", "--response-ns", "200000", "--symbol", "RW", "--quiet"]  # fmt: skip
    if path == "generic":
        argv.append("--generic")
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT, timeout=240)
    assert proc.returncode == 0, proc.stderr
    day = load_day(out)
    assert len(day.orders)
    assert len(day.executions)
    for rows in (day.orders, day.order_events, day.executions):
        assert rows.dtype["strategy"] == np.dtype(np.int64)
        assert set(rows["strategy"].tolist()) == {BIG_ID}
    assert list(by_strategy(day.executions)) == [BIG_ID]


def test_strategy_id_beyond_int64_is_one_line(day_file: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "backtest",
            str(day_file),
            "--strategy-id",
            str(2**63),
            "--out",
            "/dev/null",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert f"--strategy-id {2**63}: must be 1..{2**63 - 1}" in proc.stderr
    assert "Traceback" not in proc.stderr
