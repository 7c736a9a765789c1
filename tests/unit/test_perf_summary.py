# SPDX-License-Identifier: MIT
"""docs/performance.md's summary: every judged figure of every section in one table (issue 25)."""

from pathlib import Path

import numpy as np

from app.bench import verdict_lines
from engine.fix import benchtables as bt
from tests.benchmarks import judge


def _sections(doc: Path) -> None:
    lat = judge.Figure("tick -> order, p50", "µs", [9.0, 12.0], target=10.0, note="C++: 5 µs")
    p99 = judge.Figure("  p99", "µs", [30.0, 35.0], target=40.0)
    shown = judge.Figure("  kernel alone", "µs", [0.5])  # no target: not in the summary
    judge.write_section(
        "trading",
        "Trading",
        "python -m bench_trading --doc",
        [lat, p99, shown],
        load=(0.7, 1.2),
        runs="2 runs",
        doc=doc,
    )
    rate = judge.Figure("decode", "msg/s", [2e6], target=1e6, lower_is_better=False)
    judge.write_section(
        "codec",
        "Codec",
        "python -m bench_fix --doc",
        [rate],
        load=(0.4, 0.5),
        runs="1 run",
        doc=doc,
    )


def test_summary_lists_every_judged_figure_with_command_and_load(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    _sections(doc)
    text = doc.read_text(encoding="utf-8")
    rows = judge.summary_rows(text)
    assert [r[0] for r in rows] == ["tick -> order, p50", "tick -> order, p50: p99", "decode"]
    assert [r[4] for r in rows] == ["MISSED", "met", "met"]  # every run judged: 12 > 10
    assert rows[0][6] == "`python -m bench_trading --doc`"
    assert rows[0][7] == "0.7–1.2"
    assert rows[2][6] == "`python -m bench_fix --doc`"
    assert rows[2][7] == "0.4–0.5"
    assert text.count("<!-- bench:summary -->") == 1
    assert text.index("<!-- bench:summary -->") < text.index("<!-- bench:trading -->")
    assert "3 figures with a target, 2 met and 1 missed" in text


def test_a_section_rewritten_rewrites_the_summary(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    _sections(doc)
    fast = judge.Figure("tick -> order, p50", "µs", [8.0], target=10.0)
    judge.write_section(
        "trading",
        "Trading",
        "python -m bench_trading --doc",
        [fast],
        load=(0.2, 0.2),
        runs="1 run",
        doc=doc,
    )
    text = doc.read_text(encoding="utf-8")
    assert text.count("<!-- bench:summary -->") == 1
    assert [(r[0], r[4]) for r in judge.summary_rows(text)] == [
        ("tick -> order, p50", "met"),
        ("decode", "met"),
    ]


def test_fix_tables_verdicts_join_the_summary(tmp_path: Path) -> None:
    rows = [bt.BatchRow(1, 10, 1.0, 2.0, 3.0, 20_000.0), bt.BatchRow(10, 10, 1, 2, 3, 5_000.0)]
    run = bt.ParallelRun({"FIX.4.4": np.array([50_000, 60_000, 400_000])}, 1.0)
    lines = verdict_lines(rows, {1: 1_000.0, 10: 1_000.0}, run)
    doc = tmp_path / "performance.md"
    doc.write_text(
        "# P\n\n<!-- bench:fix -->\n## FIX\n\n`qwconsole bench fix` — machine load (1-min "
        "average, 2 CPUs) 0.3 at the start, 0.6 at the end.\n\n"
        + "\n".join(lines)
        + "\n<!-- /bench:fix -->\n",
        encoding="utf-8",
    )
    got = {r[0]: (r[1], r[4]) for r in judge.summary_rows(doc.read_text(encoding="utf-8"))}
    assert got["FIX batch 1 (ping-pong), orders/s"] == ("20,000 orders/s", "met")
    assert got["FIX batch 1 vs QuickFIX"] == ("20.0 x", "met")
    assert got["FIX batch 10 vs QuickFIX"] == ("5.0 x", "MISSED")
    assert got["FIX sessions in parallel, p50"][1] == "met"
    assert got["FIX sessions in parallel, p99"][1] == "MISSED"  # 400 µs > 300 µs
