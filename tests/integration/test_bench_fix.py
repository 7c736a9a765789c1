# SPDX-License-Identifier: MIT
"""``qwconsole bench fix`` measures both tables for real and writes them (issue 18 point 4)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from app.bench import batch_lines
from engine.fix import benchtables as bt

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_bench_fix_prints_and_writes_both_tables(tmp_path: Path) -> None:
    doc = tmp_path / "perf.md"
    doc.write_text("# Kept\n\nearlier text\n", encoding="utf-8")
    png = tmp_path / "hist.png"
    cmd = [sys.executable, "-m", "app", "bench", "fix", "--orders-per-row", "60",
           "--batches", "1", "10", "--round-trips", "250", "--warmup", "10",
           "--png", str(png), "--doc", str(doc), "--no-quickfix"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout
    # Targets are judged: exit 1 with a MISSED line per miss, 0 only without any.
    assert done.returncode == (1 if "MISSED:" in out else 0), out + done.stderr
    assert "Traceback" not in done.stderr
    # Measured row by row: each batch size's runs follow each other (no QuickFIX here).
    progress = [line.strip() for line in out.splitlines() if line.startswith("  batch ")]
    assert progress == [
        "batch 1: busy polling, sleeping when idle …",
        "batch 10: busy polling, sleeping when idle …",
    ]
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    batch_rows = [r for r in rows if r.split("|")[1].strip() in ("1", "10")]
    assert [r.split("|")[2].strip() for r in batch_rows] == ["60", "60"]  # orders per row
    versions = [r.split("|")[1].strip() for r in rows if r.split("|")[2].strip() == "50"]
    assert versions == list(bt.VERSIONS)  # 250 round trips over five sessions: 50 each
    assert any(r.startswith("| all five | 250 |") for r in rows)
    # both tables again with busy polling off: the sleeping columns and row
    assert all(len(r.split("|")) == 10 for r in batch_rows)  # 6 columns + 2 sleeping
    assert all(float(r.split("|")[8].replace(",", "")) > 0 for r in batch_rows)
    assert any(r.startswith("| all five, sleeping when idle | 250 |") for r in rows)
    # the transport floor of the same run: four transports, as many round trips as a row
    floor = {r.split("|")[1].strip(): r.split("|") for r in rows if "socket" in r or "loop" in r}
    assert sorted(floor) == [
        "blocking sockets", "busy-polled sockets", "event loop (the engine's), busy polling",
        "event loop (the engine's), sleeping when idle",
    ]  # fmt: skip
    for cells in floor.values():
        assert cells[2].strip() == "60"
        assert float(cells[3].replace(",", "")) > 0  # round trips per second
        assert cells[6].strip().endswith("x")  # batch 1 as a share of the floor
    image = QImage(str(png))
    assert not image.isNull()
    assert (image.width(), image.height()) == (1100, 600)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Kept\n\nearlier text\n")
    assert text.count("<!-- bench:fix -->") == 1
    assert "| all five | 250 |" in text
    # Run again: the section is replaced, not appended.
    subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert doc.read_text(encoding="utf-8").count("<!-- bench:fix -->") == 1


@pytest.mark.parametrize("busy_poll_us", [0, 500])
def test_every_version_round_trips_with_validation_on(busy_poll_us: int) -> None:
    run = bt.parallel_sessions(total=25, warmup=2, busy_poll_us=busy_poll_us)
    assert sorted(run.per_version) == sorted(bt.VERSIONS)
    assert all(a.size == 5 and (a > 0).all() for a in run.per_version.values())


def test_ratio_against_quickfix_is_judged() -> None:
    rows = [bt.BatchRow(1, 10, 1.0, 2.0, 3.0, 20_000.0), bt.BatchRow(10, 10, 1, 2, 3, 5_000.0)]
    lines, misses = batch_lines(rows, {1: 1_000.0, 10: 1_000.0})
    assert lines[2].endswith("| 1,000 | 20.0x |")
    assert misses == ["batch 10: 5.0x QuickFIX (target >= 10x)"]


@pytest.mark.skipif(importlib.util.find_spec("quickfix") is None, reason="quickfix not installed")
def test_quickfix_column() -> None:
    from engine.fix import qfpeer

    rates = qfpeer.batch_table(100, (1, 10))
    assert set(rates) == {1, 10}
    assert all(r > 0 for r in rates.values())


def test_a_venue_child_whose_benchmark_went_away_exits_quietly() -> None:
    # `qwconsole bench fix` killed before it read the child's port: the child's write fails
    # (a closed pipe) and it must leave without a traceback on the terminal.
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.fix.benchtables", "--serve"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the port is written
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err, err.decode()
