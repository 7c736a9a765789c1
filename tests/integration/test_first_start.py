# SPDX-License-Identifier: MIT
"""A fresh install's first start, as real processes (issue 21).

* ``python -m engine.warmup`` (what ``packaging/bootstrap.sh run|test|env`` runs) leaves every
  kernel in the cache: the headless demo engine started after it compiles nothing and trades
  within seconds. The test measures process start to the first fill and fails above 60 s (the
  target is 15 s; the figure is printed). It uses the cache the suite runs on, which on a clean
  clone ``bootstrap.sh test`` has just filled from empty with the same command (the count of
  kernels compiled on an empty cache, ``EXPECTED_COMPILES``, is checked by the bundle's test,
  which compiles them into the bundle: tests/packaging/test_bundle.py);
* an engine stopped with SIGTERM while it compiles exits at once, not when the compiler is done:
  that test has its own empty ``NUMBA_CACHE_DIR`` (from a source checkout numba then keeps the
  compiled code there, never in the tree's ``__pycache__`` the rest of the suite uses).
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: The issue's CI limit for first start to first fill after the bootstrap's warm step.
FIRST_FILL_LIMIT_S = 60.0
#: SIGTERM (or Ctrl+Q) to process exit, at any moment of a start.
EXIT_LIMIT_S = 2.0
_FILLS = re.compile(r"fills\s+(\d+)")


def _env(cache: Path, tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    return base | {
        "NUMBA_CACHE_DIR": str(cache),
        "PYTHONPATH": str(ROOT),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PYTHONUNBUFFERED": "1",
    }


def _engine(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "app", "engine", "--demo", "--no-journal", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_engine_stopped_while_kernels_compile_exits_at_once(tmp_path: Path) -> None:
    proc = _engine(_env(tmp_path / "numba-cache", tmp_path), "--interval", "0.2")
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            lines.append(line)
            if "compiling kernels (first start only)" in line:
                break
            assert time.monotonic() < deadline, "".join(lines)
        else:
            pytest.fail("the engine never said it compiles kernels:\n" + "".join(lines))
        time.sleep(0.5)  # well inside a compilation
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
        seconds = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    out = "".join(lines) + rest
    print(f"first start: SIGTERM while compiling to exit {seconds:.2f} s")
    assert proc.returncode == 0, out
    assert "engine stopped cleanly" in out
    assert "Traceback" not in out
    assert seconds <= EXIT_LIMIT_S, out


def test_first_fill_after_the_bootstrap_warm_step(tmp_path: Path) -> None:
    # The tree's cache, as bootstrap's warm step leaves it (no NUMBA_CACHE_DIR of our own).
    env = {k: v for k, v in _env(tmp_path, tmp_path).items() if k != "NUMBA_CACHE_DIR"}
    t0 = time.monotonic()
    warm = subprocess.run(
        [sys.executable, "-m", "engine.warmup"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    warm_s = time.monotonic() - t0
    assert warm.returncode == 0, warm.stdout + warm.stderr
    lines = warm.stdout.splitlines()
    # Either everything was there, or what was missing was compiled (and said so).
    done = re.fullmatch(
        r"bootstrap: (?:kernels ready \(loaded from the cache|(\d+) kernels "
        r"compiled into the cache) in [\d.]+ s\)?",
        lines[-1],
    )
    assert done is not None, lines
    compiled = int(done[1] or 0)
    again = subprocess.run(
        [sys.executable, "-m", "engine.warmup"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert again.stdout.startswith("bootstrap: kernels ready (loaded from the cache in ")

    t0 = time.monotonic()
    proc = _engine(env, "--interval", "0.1", "--seconds", str(FIRST_FILL_LIMIT_S + 5))
    assert proc.stdout is not None
    first_fill = None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            m = _FILLS.search(line)
            if m and int(m.group(1)) > 0:
                first_fill = time.monotonic() - t0
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
    out = "".join(lines) + rest
    print(
        f"first start: warm step {warm_s:.1f} s ({compiled} kernels compiled), then process "
        f"start to first fill {first_fill if first_fill is None else round(first_fill, 2)} s "
        f"(limit {FIRST_FILL_LIMIT_S:g} s, target 15 s)"
    )
    assert first_fill is not None, out
    assert first_fill <= FIRST_FILL_LIMIT_S
    assert "compiling kernels (first start only)" not in out  # everything came from the cache
    assert proc.returncode == 0, out


def test_console_closed_while_kernels_compile_exits_at_once(tmp_path: Path) -> None:
    env = _env(tmp_path / "numba-cache", tmp_path)
    env = {k: v for k, v in env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    state = tmp_path / "console-state"
    env |= {
        "QT_QPA_PLATFORM": "offscreen",
        "QWCONSOLE_STATE_DIR": str(state),
        "QWCONSOLE_CONFIG_DIR": str(tmp_path / "config"),
    }
    argv = [sys.executable, "-m", "app", "--smoke", "60"]
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    log = state / "qwconsole.log"
    try:
        deadline = time.monotonic() + 120
        while "kernel-warm-up engine.jit: compiled" not in (
            log.read_text(encoding="utf-8") if log.exists() else ""
        ):
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "no kernel compiled on the warm-up thread"
            time.sleep(0.05)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # what Ctrl+Q and closing the window also do
        out, _ = proc.communicate(timeout=30)
        seconds = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    print(f"first start: console SIGTERM while compiling to exit {seconds:.2f} s")
    assert seconds <= EXIT_LIMIT_S, out
    assert "Traceback" not in out
    assert "exiting while kernels still compile" in log.read_text(encoding="utf-8")
