# SPDX-License-Identifier: MIT
"""Journal benchmark: trading-path cost per call, write throughput, read throughput.

Run with ``python -m tests.benchmarks.bench_journal [--records N]`` or
``pytest -m bench tests/benchmarks/bench_journal.py``. Figures are medians of several runs;
the stdlib ``logging`` call with a ``NullHandler`` is measured in the same run for scale.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.clock import LiveClock
from engine.enums import OrdStatus
from engine.journal import Journal, JournalReader
from engine.posttrade import load_day
from tests.unit.engine.journal.helpers import FIX_NOS, make_view, order_changed, order_filled

#: Target cost of one log call on the trading path.
TARGET_NS = 1000.0
CALLS = 20_000
REPEATS = 7


@dataclass(frozen=True, slots=True)
class Figures:
    journal_log_ns: float
    journal_event_ns: float
    journal_fix_ns: float
    stdlib_null_ns: float
    write_records_per_s: float
    write_mb_per_s: float
    records: int
    file_mb: float
    read_records_per_s: float
    posttrade_records_per_s: float


def _per_call_ns(fn: Callable[[], None], flush: Callable[[], None]) -> float:
    runs = []
    for _ in range(REPEATS):
        runs.append(timeit.timeit(fn, number=CALLS) / CALLS * 1e9)
        flush()  # the writer catches up between runs, as it does between bursts
    return statistics.median(runs)


def _hot_path(directory: Path) -> tuple[float, float, float, float]:
    with Journal(directory / "hot.qwj", LiveClock(), sync="none") as j:
        jlog = j.logger("oms")
        ev = order_changed(make_view(1))
        log_ns = _per_call_ns(lambda: jlog.info("order %s filled %d", "C1", 5), j.flush)
        event_ns = _per_call_ns(lambda: j.on_event(ev), j.flush)
        fix_ns = _per_call_ns(lambda: j.record_fix("FIX.4.4:A->B", 2, FIX_NOS, 1, 2, 3), j.flush)
    std = logging.getLogger("bench.journal.stdlib")
    std.handlers[:] = [logging.NullHandler()]
    std.propagate = False
    std.setLevel(logging.INFO)
    std_ns = _per_call_ns(lambda: std.info("order %s filled %d", "C1", 5), lambda: None)
    return log_ns, event_ns, fix_ns, std_ns


def _write_day(path: Path, n: int) -> float:
    """Append ``n`` records shaped like a trading day; return the seconds until all are on disk."""
    views = [
        make_view(i, status=OrdStatus.NEW, strategy_id=i % 4, ts=i * 1000) for i in range(1, 101)
    ]
    j = Journal(path, LiveClock(), sync="none", flush_interval_ms=20)
    log = j.logger("strategy")
    t0 = time.perf_counter()
    for i in range(n):
        k = i % 5
        v = views[i % 100]
        if k == 0:
            j.on_event(order_changed(v))
        elif k == 1:
            j.on_event(order_filled(v, 1, v.px_ticks, exec_id=f"E{i}", ts=i, leaves=5))
        elif k in (2, 3):
            j.record_fix("FIX.4.4:A->B", 1 + (k == 3), FIX_NOS, i, i + 1, i + 2)
        else:
            log.info("quote %d at %d", i, 18_000)
    j.close()
    return time.perf_counter() - t0


def run(records: int = 200_000) -> Figures:
    """Measure and return the figures (takes a few seconds for 200k records)."""
    with tempfile.TemporaryDirectory() as d:
        directory = Path(d)
        log_ns, event_ns, fix_ns, std_ns = _hot_path(directory)
        path = directory / "day.qwj"
        write_s = _write_day(path, records)
        size = path.stat().st_size
        t0 = time.perf_counter()
        n = sum(1 for _ in JournalReader(path).records())
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        day = load_day(path)
        post_s = time.perf_counter() - t0
        assert n >= records
        assert len(day.executions) == records // 5
    return Figures(
        journal_log_ns=log_ns,
        journal_event_ns=event_ns,
        journal_fix_ns=fix_ns,
        stdlib_null_ns=std_ns,
        write_records_per_s=records / write_s,
        write_mb_per_s=size / write_s / 1e6,
        records=records,
        file_mb=size / 1e6,
        read_records_per_s=n / read_s,
        posttrade_records_per_s=n / post_s,
    )


def report(f: Figures) -> str:
    """Return the figures as the lines the benchmark prints."""
    return "\n".join(
        [
            f"journal benchmark (median of {REPEATS} runs of {CALLS} calls)",
            f"  trading path, JournalLogger.info: {f.journal_log_ns:8.0f} ns/call "
            f"(target {TARGET_NS:.0f} ns: {f.journal_log_ns / TARGET_NS:.2f}x of budget)",
            f"  trading path, Journal.on_event:   {f.journal_event_ns:8.0f} ns/call",
            f"  trading path, Journal.record_fix: {f.journal_fix_ns:8.0f} ns/call",
            f"  stdlib logging + NullHandler:     {f.stdlib_null_ns:8.0f} ns/call "
            f"(journal is {f.stdlib_null_ns / f.journal_log_ns:.1f}x cheaper)",
            f"  write: {f.records} records, {f.file_mb:.1f} MB: "
            f"{f.write_records_per_s:,.0f} records/s ({f.write_mb_per_s:.1f} MB/s) "
            "append to on-disk",
            f"  read, decode every record:        {f.read_records_per_s:,.0f} records/s",
            f"  read, post-trade load_day:        {f.posttrade_records_per_s:,.0f} records/s",
        ]
    )


@pytest.mark.bench
def test_journal_benchmark() -> None:
    f = run(100_000)
    print(report(f))
    assert f.journal_log_ns < TARGET_NS
    assert f.journal_log_ns < f.stdlib_null_ns
    assert f.write_records_per_s > 50_000
    assert f.read_records_per_s > 50_000


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000, help="records in the day file")
    args = parser.parse_args()
    print(report(run(args.records)))


if __name__ == "__main__":
    main()
