# SPDX-License-Identifier: MIT
"""Journal benchmark: trading-path cost per call, write throughput, read throughput.

Run with ``python -m tests.benchmarks.bench_journal [--records N] [--doc]`` or
``pytest -m bench tests/benchmarks/bench_journal.py``. Every run of a figure is judged against
its target (``tests.benchmarks.judge``: exit 1 on a miss, ``--doc`` writes the section of
``docs/performance.md``); the stdlib ``logging`` call with a ``NullHandler`` is measured in the
same run for scale.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.clock import LiveClock
from engine.enums import OrdStatus
from engine.journal import Journal, JournalReader
from engine.posttrade import load_day
from tests.benchmarks import judge
from tests.unit.engine.journal.helpers import FIX_NOS, make_view, order_changed, order_filled

#: Target cost of one log call on the trading path.
TARGET_NS = 1000.0
CALLS = 20_000
REPEATS = 7


def _per_call_ns(fn: Callable[[], None], flush: Callable[[], None]) -> list[float]:
    runs = []
    for _ in range(REPEATS):
        runs.append(timeit.timeit(fn, number=CALLS) / CALLS * 1e9)
        flush()  # the writer catches up between runs, as it does between bursts
    return runs


def _hot_path(directory: Path) -> tuple[list[float], list[float], list[float], list[float]]:
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


def run(records: int = 200_000, days: int = 3) -> list[judge.Figure]:
    """Measure and return the figures (the day file written and read ``days`` times)."""
    with tempfile.TemporaryDirectory() as d:
        directory = Path(d)
        log_ns, event_ns, fix_ns, std_ns = _hot_path(directory)
        write, read, post, mb = [], [], [], 0.0
        for k in range(days):
            path = directory / f"day{k}.qwj"
            write_s = _write_day(path, records)
            mb = path.stat().st_size / 1e6
            t0 = time.perf_counter()
            n = sum(1 for _ in JournalReader(path).records())
            read_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            day = load_day(path)
            post_s = time.perf_counter() - t0
            assert n >= records
            assert len(day.executions) == records // 5
            write.append(records / write_s)
            read.append(n / read_s)
            post.append(n / post_s)
    std = statistics.median(std_ns)
    return [
        judge.Figure("JournalLogger.info, per call", "ns", log_ns, target=TARGET_NS,
                     note=f"stdlib logging to a NullHandler: {std:,.0f} ns "
                     f"({std / statistics.median(log_ns):.0f}x)"),
        judge.Figure("Journal.on_event, per call", "ns", event_ns),
        judge.Figure("Journal.record_fix, per call", "ns", fix_ns),
        judge.Figure("stdlib logger.info to a NullHandler", "ns", std_ns),
        judge.Figure(f"append -> on disk, {records:,} mixed records", "records/s", write,
                     target=50_000, lower_is_better=False,
                     note=f"{statistics.median(write) * mb / records:.1f} MB/s ({mb:.1f} MB)"),
        judge.Figure("read and decode every record", "records/s", read, target=50_000,
                     lower_is_better=False),
        judge.Figure("post-trade load_day", "records/s", post, lower_is_better=False),
    ]  # fmt: skip


def _publish(figures: list[judge.Figure], load: tuple[float, float], records: int) -> None:
    judge.write_section(
        "journal",
        "Journal: trading-path calls, writing, reading",
        f"python -m tests.benchmarks.bench_journal --records {records} --doc",
        figures,
        load=load,
        runs=f"{REPEATS} runs of {CALLS:,} calls; the day file 3 times",
    )


@pytest.mark.bench
def test_journal_benchmark() -> None:
    load0 = os.getloadavg()[0]
    figures = run(100_000)
    load = (load0, os.getloadavg()[0])
    print()
    print(judge.table(figures))
    print(judge.load_text(*load))
    _publish(figures, load, 100_000)
    assert not judge.misses(figures)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line; exit 1 when a run misses a target."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000, help="records in the day file")
    parser.add_argument("--doc", action="store_true", help="write docs/performance.md")
    args = parser.parse_args(argv)
    load0 = os.getloadavg()[0]
    figures = run(args.records)
    load = (load0, os.getloadavg()[0])
    if args.doc:
        _publish(figures, load, args.records)
    return judge.conclude(figures, load)


if __name__ == "__main__":
    sys.exit(main())
