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
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", QWCONSOLE_CONFIG_DIR=f"{tmp}/c",
                   QWCONSOLE_STATE_DIR=f"{tmp}/s")  # fmt: skip
        log = Path(tmp) / "s" / "qwconsole.log"
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
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


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when the console's median misses the target."""
    ap = argparse.ArgumentParser(prog="bench_quit", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args(argv)
    print(f"load {os.getloadavg()[0]:.2f}; {a.runs} runs per variant, alternating")
    times = run(a.runs)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, ts in times.items():
        spread = ", ".join(f"{t:.2f}" for t in ts)
        print(f"{name:<34} median {med[name]:.2f} s  ({spread})")
    base = med["baseline: interpreter teardown"]
    ok = med["console"] <= TARGET_S
    print(f"ratio {med['console'] / base:.2f}x the baseline; target <= {TARGET_S:.0f} s: "
          f"{'met' if ok else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


@pytest.mark.bench
def test_quit_benchmark_runs() -> None:
    times = run(1)
    assert all(t > 0 for ts in times.values() for t in ts)


if __name__ == "__main__":
    sys.exit(main())
