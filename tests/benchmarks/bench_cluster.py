# SPDX-License-Identifier: MIT
"""Backtest sweeps on a local Dask cluster against the ProcessPoolExecutor, in the same run.

Run ``python -m tests.benchmarks.bench_cluster`` (``--quick`` for a short run, ``--doc`` to
write its section of docs/performance.md) or
``pytest -m bench tests/benchmarks/bench_cluster.py``.

* ``cluster_over_pool``: wall time of a 24-job sweep (4 random-walk days x 6 values of
  ``half_spread_ticks``, the compiled market maker on the fast path, one journal per job)
  on ``--cluster local:2`` (:func:`engine.backtest.cluster.run_sweep_on_cluster`: the
  ``LocalCluster`` of 2 worker processes started, the sweep run, the cluster shut down)
  over the same sweep on the ``ProcessPoolExecutor`` with 2 workers
  (:func:`engine.backtest.runner.run_sweep`: the pool spawned, the sweep run, the pool shut
  down), the pool first in odd runs, the cluster first in even ones. Judged in every run:
  at most 1.3 (issue 22).
* ``pool_s`` / ``cluster_s``: the two times of each run, reported.
* ``cluster_ship_data_s``: the cluster sweep with the days read here and shipped to the
  workers (``--ship-data``), reported, one run (not with ``--quick``).

Every run checks that the three ways give the same summaries (journal hashes included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.cluster import ClusterSpec, run_sweep_on_cluster
from engine.backtest.runner import BacktestJob, JobSummary, run_sweep, sweep_jobs
from engine.backtest.synthetic import random_walk_l2
from tests.benchmarks import judge

#: Cluster time over the pool's for the same 24-job sweep, 2 workers each (issue 22).
TARGET_RATIO = 1.3
WORKERS = 2
DAYS = 4
SPREADS = (1, 2, 3, 4, 5, 6)


def _jobs(root: Path, events: int) -> list[BacktestJob]:
    days = []
    for d in range(DAYS):
        p = root / f"day{d}.npy"
        np.save(p, random_walk_l2(events, seed=100 + d))
        days.append(str(p))
    base = BacktestJob(events=days[0], journal="", order_ns=200_000, response_ns=200_000)
    grid: list[dict[str, object]] = [{"half_spread_ticks": h} for h in SPREADS]
    return sweep_jobs(base, days, grid, root / "out")


def _clear(root: Path) -> None:
    shutil.rmtree(root / "out", ignore_errors=True)


def _timed_pool(jobs: list[BacktestJob], root: Path) -> tuple[float, list[JobSummary]]:
    _clear(root)
    (root / "out").mkdir()
    t0 = time.perf_counter()
    res = run_sweep(jobs, WORKERS)
    return time.perf_counter() - t0, res


def _timed_cluster(
    jobs: list[BacktestJob], root: Path, ship: bool = False
) -> tuple[float, list[JobSummary]]:
    _clear(root)
    t0 = time.perf_counter()
    res = run_sweep_on_cluster(jobs, ClusterSpec(workers=WORKERS), ship_data=ship)
    return time.perf_counter() - t0, res


def measure(quick: bool = False) -> list[judge.Figure]:
    """Return the figures of one benchmark run (see the module docstring)."""
    runs = 1 if quick else 2
    events = 300_000 if quick else 1_000_000
    pool_s: list[float] = []
    cluster_s: list[float] = []
    ratio: list[float] = []
    ship_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench_cluster") as tmp:
        root = Path(tmp)
        jobs = _jobs(root, events)
        for r in range(runs):
            if r % 2 == 0:  # the pool first, then the cluster first: neither always warms up
                tp, rp = _timed_pool(jobs, root)
                tc, rc = _timed_cluster(jobs, root)
            else:
                tc, rc = _timed_cluster(jobs, root)
                tp, rp = _timed_pool(jobs, root)
            if rc != rp:
                raise AssertionError("the cluster's summaries differ from the pool's")
            pool_s.append(tp)
            cluster_s.append(tc)
            ratio.append(tc / tp)
            print(f"pool {tp:.2f} s, cluster {tc:.2f} s, ratio {tc / tp:.2f}", flush=True)
        if not quick:
            ts, rs = _timed_cluster(jobs, root, ship=True)
            if rs != rp:
                raise AssertionError("the shipped-data summaries differ from the pool's")
            ship_s.append(ts)
            print(f"cluster with --ship-data {ts:.2f} s", flush=True)
    what = f"{len(jobs)} jobs ({DAYS} days x {len(SPREADS)}, {events:,} events a day)"
    figures = [
        judge.Figure(
            "cluster_over_pool", "x", ratio, target=TARGET_RATIO,
            note=f"{what}: local:{WORKERS} over ProcessPoolExecutor({WORKERS}), same run",
        ),
        judge.Figure("pool_s", "s", pool_s, note=f"ProcessPoolExecutor({WORKERS}), start to end"),
        judge.Figure("cluster_s", "s", cluster_s, note=f"LocalCluster({WORKERS}), start to end"),
    ]  # fmt: skip
    if ship_s:
        figures.append(
            judge.Figure("cluster_ship_data_s", "s", ship_s, note="days shipped from here")
        )
    return figures


@pytest.mark.bench
def test_bench_cluster() -> None:
    """The cluster sweep is within 1.3x of the pool's in every run (quick sizes)."""
    load0 = os.getloadavg()[0]
    figures = measure(quick=True)
    assert judge.conclude(figures, (load0, os.getloadavg()[0])) == 0, judge.misses(figures)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 1 if a run missed its target."""
    ap = argparse.ArgumentParser(prog="python -m tests.benchmarks.bench_cluster")
    ap.add_argument("--quick", action="store_true", help="one run of smaller days")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    figures = measure(quick=args.quick)
    load = (load0, os.getloadavg()[0])
    if args.doc:
        judge.write_section(
            "cluster",
            "Backtest sweeps on a local Dask cluster against the process pool",
            f"python -m tests.benchmarks.bench_cluster{' --quick' if args.quick else ''} --doc",
            figures,
            load=load,
            runs="2 runs each judged (1 with --quick), pool and cluster alternated",
        )
    return judge.conclude(figures, load)


if __name__ == "__main__":
    sys.exit(main())
