# SPDX-License-Identifier: MIT
"""The FIX session-level acceptance suite (QuickFIX's server scripts) against our acceptor.

The acceptor runs as a real child process (``python -m engine.fix.cli acceptor``) on a free
loopback port with ``resources/fix/acceptance.cfg``; the shared runner plays every script of
``fix42`` and ``fix44`` with exact BodyLength checks. The timer scripts (4a, 6: heartbeats,
TestRequest and the timeout disconnect, ~30 s each) run in their own slow test, both versions
in parallel.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
RUNNER = SHARED / "tools" / "fix_acceptance.py"
SUITE = SHARED / "fix-acceptance" / "server"
CFG = ROOT / "resources" / "fix" / "acceptance.cfg"
TIMER_SCRIPTS = ("4a_*", "6_*")

pytestmark = [
    pytest.mark.acceptance,
    pytest.mark.integration,
    pytest.mark.skipif(not RUNNER.is_file(), reason="shared acceptance suite not available"),
]


@pytest.fixture(scope="module")
def acceptor_port() -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.fix.cli", "acceptor", "--cfg", str(CFG), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        assert m, f"acceptor did not start: {line!r}"
        yield int(m.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == 0, f"acceptor exited with {proc.returncode}"


def _run(port: int, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUNNER), "--port", str(port), "--timeout", "40", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _summary(proc: subprocess.Popen[str]) -> tuple[int, int, str]:
    out, _ = proc.communicate(timeout=600)
    m = re.search(r"^(\d+) passed, (\d+) failed", out, re.MULTILINE)
    assert m, f"no summary line in runner output:\n{out}"
    return int(m.group(1)), int(m.group(2)), out


def _count(version: str, *, timers: bool) -> int:
    names = [p.name for p in (SUITE / version).glob("*.def")]
    is_timer = [any(Path(n).match(g) for g in TIMER_SCRIPTS) for n in names]
    return sum(1 for t in is_timer if t == timers)


@pytest.mark.parametrize("version", ["fix42", "fix44"])
def test_session_scripts_all_pass(acceptor_port: int, version: str) -> None:
    skips = [a for g in TIMER_SCRIPTS for a in ("--skip", g)]
    proc = _run(acceptor_port, "--defs", str(SUITE / version), *skips)
    passed, failed, out = _summary(proc)
    assert failed == 0, out
    assert passed == _count(version, timers=False) > 50, out


@pytest.mark.slow
def test_timer_scripts_all_pass(acceptor_port: int) -> None:
    procs = {
        v: _run(
            acceptor_port,
            "--defs",
            str(SUITE / v),
            *[a for g in TIMER_SCRIPTS for a in ("--only", g)],
        )
        for v in ("fix42", "fix44")
    }
    for version, proc in procs.items():
        passed, failed, out = _summary(proc)
        assert failed == 0, out
        assert passed == _count(version, timers=True) == 2, out
