# SPDX-License-Identifier: MIT
"""``qwconsole backtest`` as a real process: a run, a sweep, one-line errors, Ctrl+C."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.synthetic import random_walk_l2
from engine.journal import JournalReader, LogEntry
from engine.posttrade import load_day

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _qw(*args: str) -> list[str]:
    return [sys.executable, "-m", "app", "backtest", *args]


@pytest.fixture(scope="module")
def day_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("bt") / "day.npy"
    np.save(p, random_walk_l2(40_000, seed=11))
    return p


def test_backtest_writes_a_journal_post_trade_reads(day_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.qwj"
    proc = subprocess.run(
        _qw(
            str(day_file),
            "--out",
            str(out),
            "--param",
            "half_spread_ticks=1",
            "--order-ns",
            "200000",
            "--response-ns",
            "200000",
            "--symbol",
            "RW",
        ),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    assert "events/s" in proc.stderr  # the progress line
    day = load_day(out)
    assert day.symbols == ("RW",)
    assert f"{len(day.orders):,} orders" in proc.stdout
    assert f"{len(day.executions):,} fills" in proc.stdout


def test_backtest_sweep_prints_one_line_per_run(day_file: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        _qw(
            str(day_file),
            "--sweep",
            "half_spread_ticks=1,2",
            "--out-dir",
            str(tmp_path),
            "--workers",
            "2",
            "--quiet",
        ),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # Each run as it ends (in any order), naming its day and parameter values.
    runs = sorted(ln.split(":")[0] for ln in lines[:2])
    assert runs == [
        f"d000-p000 (day {day_file}, half_spread_ticks=1)",
        f"d000-p001 (day {day_file}, half_spread_ticks=2)",
    ]
    assert sorted(p.name for p in tmp_path.glob("*.qwj")) == ["d000-p000.qwj", "d000-p001.qwj"]
    # Then the table, in sweep order, the best P&L of the day marked.
    head, *rows = lines[2:5]
    assert head.split() == [
        "run",
        "day",
        "half_spread_ticks",
        "fills",
        "position",
        "P&L",
        "tick-lots",
        "P&L",
    ]
    assert [r.split()[:3] for r in rows] == [
        ["d000-p000", day_file.name, "1"],
        ["d000-p001", day_file.name, "2"],
    ]
    pnl = {r.split()[0]: float(r.split()[5].replace(",", "")) for r in rows}
    starred = [r.split()[0] for r in rows if r.endswith("*")]
    assert starred == [k for k, v in pnl.items() if v == max(pnl.values())]  # ties: each


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.npy"], "missing.npy: no such file"),
        (["{day}", "--level", "l3"], "a l3 backtest needs L3_EVENT_DTYPE"),
        (["{day}", "--param", "nope=1"], "unknown parameter 'nope'"),
        (["{day}", "--queue", "fifo"], "queue model 'fifo'"),
    ],
)
def test_backtest_bad_input_is_one_line_and_exit_2(
    day_file: Path, args: list[str], expected: str
) -> None:
    argv = [a.replace("{day}", str(day_file)) for a in args]
    proc = subprocess.run(
        _qw(*argv, "--quiet", "--out", "/dev/null"),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_ctrl_c_leaves_a_valid_partial_journal(tmp_path: Path) -> None:
    src = tmp_path / "long.npy"
    np.save(src, random_walk_l2(400_000, seed=5))
    out = tmp_path / "partial.qwj"
    proc = subprocess.Popen(
        _qw(str(src), "--generic", "--strategy", "market-maker", "--out", str(out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + 120
    while "events/s" not in seen and time.monotonic() < deadline:
        seen += proc.stderr.read(1)
    proc.send_signal(signal.SIGINT)
    stdout, _err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert stdout.startswith("CANCELED")
    reader = JournalReader(out)
    logs = [r for r in reader.records() if isinstance(r, LogEntry)]
    assert reader.torn_tail is None
    assert "backtest canceled" in logs[-1].message
    assert len(load_day(out).orders) > 0
