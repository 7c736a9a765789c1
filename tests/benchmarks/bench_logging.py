# SPDX-License-Identifier: MIT
"""What a log call costs the trading thread, with the console's real handlers (#25 point 3).

Run: ``python -m tests.benchmarks.bench_logging [--calls N] [--doc]`` or ``pytest -m bench -s``.

The console's configuration is installed as the console installs it (``app.logs.configure``:
the rotating log file, the terse stderr handler, the error counter, and the engine's log queue
started), plus the journal's handler on a real journal as the embedded engine adds it. Then,
in the same run, per call on the calling thread:

* an engine log call (``engine.fastlog``): queued, the handlers run on the log writer thread;
* the same call at a disabled level (DEBUG);
* the same message through a plain standard-library logger (the handlers on the calling thread:
  what every engine call cost before);
* ``JournalLogger.info`` (journal only, for scale).

Each call is timed on its own (the timer's cost, measured in the same burst, subtracted), in 7
bursts of ``--calls`` calls; the target is judged on every burst's median. The writer catches
up between bursts; it works during a burst too and competes for the GIL, which the p99 and the
mean over a burst show. Every message is then checked in the log file.
"""

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from app import logs
from engine import fastlog
from engine.clock import LiveClock
from engine.journal import Journal
from engine.journal.logging_handler import JournalHandler
from tests.benchmarks import judge

BURSTS = 7
TARGET_NS = 1_000.0


def _burst(call: Callable[..., None], n: int) -> tuple[float, float, float]:
    """Return (p50, p99, mean) ns per call of ``n`` calls, each timed on its own.

    The timer's own cost (two ``perf_counter_ns`` calls and the loop, measured around an
    empty call in the same burst) is subtracted.
    """
    per_call = np.empty(n, np.int64)
    empty = np.empty(n, np.int64)
    clock = time.perf_counter_ns
    nothing = _nothing
    t_start = clock()
    for i in range(n):
        t0 = clock()
        call("order %s filled %d at %d", "C1", i, 24_000)
        per_call[i] = clock() - t0
    mean = (clock() - t_start) / n
    for i in range(n):
        t0 = clock()
        nothing("order %s filled %d at %d", "C1", i, 24_000)
        empty[i] = clock() - t0
    base = float(np.median(empty))
    return float(np.median(per_call)) - base, float(np.percentile(per_call, 99)) - base, mean


def _nothing(msg: str, *args: object) -> None:
    pass


def measure(calls: int, directory: Path) -> list[judge.Figure]:
    """Install the console's logging under ``directory`` and measure; return the figures."""
    log_file = directory / "qwconsole.log"
    logs.configure(log_file=log_file)
    journal = Journal(directory / "bench.qwj", LiveClock(), sync="none")
    jhandler = JournalHandler(journal, logging.INFO)
    root = logging.getLogger()
    root.addHandler(jhandler)
    engine_log = fastlog.get_log("engine.bench")
    std_log = logging.getLogger("engine.bench.stdlib")
    jlog = journal.logger("engine.bench.journal", logging.INFO)
    figs = {
        "queued": judge.Figure("engine log call, queued (INFO), p50", "ns", target=TARGET_NS),
        "queued99": judge.Figure("  same, p99 (the writer holds the GIL at times)", "ns"),
        "burst": judge.Figure("  same, mean per call over a burst, writer busy", "ns"),
        "disabled": judge.Figure("engine log call, level disabled (DEBUG), p50", "ns"),
        "stdlib": judge.Figure("stdlib logger.info, same handlers, on the caller, p50", "ns"),
        "journal": judge.Figure("JournalLogger.info (journal only), p50", "ns"),
    }
    try:
        for _ in range(BURSTS):
            p50, p99, mean = _burst(engine_log.info, calls)
            figs["queued"].runs.append(p50)
            figs["queued99"].runs.append(p99)
            figs["burst"].runs.append(mean)
            fastlog.flush(120)
            figs["disabled"].runs.append(_burst(engine_log.debug, calls)[0])
            figs["stdlib"].runs.append(_burst(std_log.info, calls // 10)[0])
            figs["journal"].runs.append(_burst(jlog.info, calls)[0])
            journal.flush()
        fastlog.flush(60)
        for h in root.handlers:
            h.flush()
        text = log_file.read_text(encoding="utf-8")
        queued_lines = text.count(" engine.bench: order C1 filled ")
        assert queued_lines == BURSTS * calls, f"{queued_lines} of {BURSTS * calls} in the file"
        assert " MainThread engine.bench: order C1 filled 0 at 24000" in text
    finally:
        fastlog.stop()
        root.removeHandler(jhandler)
        journal.close()
        for h in list(root.handlers):
            if getattr(h, "_qwconsole", False):
                root.removeHandler(h)
                h.close()
    q, s = figs["queued"], figs["stdlib"]
    q.note = f"stdlib on the caller / queued: {s.median / q.median:.0f}x"
    return list(figs.values())


def run(calls: int = 20_000) -> tuple[list[judge.Figure], tuple[float, float]]:
    """Measure in a temporary folder; return the figures and the load at start and end."""
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        figures = measure(calls, Path(d))
    return figures, (load0, os.getloadavg()[0])


def _publish(figures: list[judge.Figure], load: tuple[float, float], calls: int) -> None:
    judge.write_section(
        "logging",
        "Logging on the trading thread",
        f"python -m tests.benchmarks.bench_logging --calls {calls} --doc",
        figures,
        load=load,
        runs=f"{BURSTS} bursts of {calls:,} calls, the console's handlers",
    )


@pytest.mark.bench
def test_logging_benchmark() -> None:
    figures, load = run(5_000)
    print()
    print(judge.table(figures))
    print(judge.load_text(*load))
    _publish(figures, load, 5_000)
    assert not judge.misses(figures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_logging", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--doc", action="store_true", help="write docs/performance.md")
    opts = parser.parse_args(argv)
    figures, load = run(opts.calls)
    if opts.doc:
        _publish(figures, load, opts.calls)
    return judge.conclude(figures, load)


if __name__ == "__main__":
    sys.exit(main())
