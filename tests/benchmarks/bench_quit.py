# SPDX-License-Identifier: MIT
"""Quit benchmark: SIGTERM to process exit of the running console (target ≤ 1 s).

Run with ``python -m tests.benchmarks.bench_quit [--runs 3]``. Each run starts the console
offscreen with fresh config and state folders, waits until its engine runs (``engine
embedded running`` in the log), sends SIGTERM and times until the process has exited (waited
for, so a zombie never counts). The baseline, started alternately in the same run, is the same
console called with explicit arguments (``main(sys.argv[1:])``), which returns to the
interpreter and lets it tear Qt, numba and h5py down instead of ending the process once
everything is saved.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.benchmarks import judge

ROOT = Path(__file__).resolve().parents[2]
TARGET_S = 1.0
VARIANTS = {
    "console": [sys.executable, "-m", "app"],
    "baseline: interpreter teardown": [
        sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main(sys.argv[1:]))",
    ],
}  # fmt: skip


def quit_once(command: list[str], timeout_s: float = 120.0) -> float:
    """Start ``command``, wait for its engine to run, SIGTERM it; return seconds to exit."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            QT_QPA_PLATFORM="offscreen",
            QWCONSOLE_CONFIG_DIR=f"{tmp}/c",
            QWCONSOLE_STATE_DIR=f"{tmp}/s",
        )
        log = Path(tmp) / "s" / "qwconsole.log"
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            end = time.monotonic() + timeout_s
            while not (log.exists() and "engine embedded running" in log.read_text()):
                if time.monotonic() > end or proc.poll() is not None:
                    raise RuntimeError(f"{command}: the engine did not start")
                time.sleep(0.05)
            time.sleep(1.0)  # a second of trading
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            return time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def run(runs: int) -> dict[str, list[float]]:
    """Time ``runs`` quits of every variant, alternating."""
    times: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for _ in range(runs):
        for name, command in VARIANTS.items():
            times[name].append(quit_once(command))
    return times


def figures(times: dict[str, list[float]]) -> list[judge.Figure]:
    """Return the console's quit times (every run judged) and the baseline's."""
    base = times["baseline: interpreter teardown"]
    console = judge.Figure(
        "SIGTERM to exit, the running console", "s", times["console"], target=TARGET_S
    )
    console.note = f"{console.median / statistics.median(base):.2f}x the baseline"
    return [console, judge.Figure("  baseline: interpreter teardown", "s", base)]


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when any run of the console misses the target."""
    ap = argparse.ArgumentParser(prog="bench_quit", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md")
    a = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    figs = figures(run(a.runs))
    load = (load0, os.getloadavg()[0])
    if a.doc:
        judge.write_section(
            "quit",
            "Quit: SIGTERM to exit of the running console",
            f"python -m tests.benchmarks.bench_quit --runs {a.runs} --doc",
            figs,
            load=load,
            runs=f"{a.runs} runs per variant, alternating",
        )
    return judge.conclude(figs, load)


@pytest.mark.bench
def test_quit_benchmark() -> None:
    figs = figures(run(1))
    print()
    print(judge.table(figs))
    assert not judge.misses(figs)


if __name__ == "__main__":
    sys.exit(main())
