# SPDX-License-Identifier: MIT
"""The FIX session-level acceptance suite (QuickFIX's server scripts) against our acceptor.

The acceptor runs as a real child process (``python -m engine.fix.cli acceptor``) on a free
loopback port with ``resources/fix/acceptance.cfg``; the shared runner plays every script of
``fix42`` and ``fix44`` with exact BodyLength checks. The timer scripts (4a, 6: heartbeats,
TestRequest and the timeout disconnect, ~30 s each) run in their own slow test, both versions
in parallel.

The other versions' suites (``fix40``, ``fix41``, ``fix43``, ``fix50``, ``fix50sp1``,
``fix50sp2``, ``validate``) are QuickFIX's published scripts, read from a copy of QuickFIX's
repository when one is present: ``$QUICKFIX_SRC`` (a checkout, or a bare git directory), else
the fetched mirror ``../.mirror/quickfix+quickfix/repo``. From a bare git directory the
``test/definitions/server`` folder is extracted into pytest's temporary directory, never into the
project. Without a copy those tests skip.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
RUNNER = SHARED / "tools" / "fix_acceptance.py"
SUITE = SHARED / "fix-acceptance" / "server"
CFG = ROOT / "resources" / "fix" / "acceptance.cfg"
TIMER_SCRIPTS = ("4a_*", "6_*")
#: QuickFIX's suites not kept in ../shared, run from QuickFIX's repository when it is at hand.
QUICKFIX_VERSIONS = ("fix40", "fix41", "fix43", "fix50", "fix50sp1", "fix50sp2", "validate")
DEFINITIONS = "test/definitions/server"
MIRROR = ROOT.parent / ".mirror" / "quickfix+quickfix" / "repo"

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


def _count(version: str, *, timers: bool, suite: Path = SUITE) -> int:
    names = [p.name for p in (suite / version).glob("*.def")]
    is_timer = [any(Path(n).match(g) for g in TIMER_SCRIPTS) for n in names]
    return sum(1 for t in is_timer if t == timers)


def _quickfix_source() -> Path | None:
    env = os.environ.get("QUICKFIX_SRC")
    if env:
        return Path(env)
    return MIRROR if MIRROR.is_dir() else None


@pytest.fixture(scope="module")
def quickfix_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder holding QuickFIX's ``fix40`` … ``validate`` script folders."""
    src = _quickfix_source()
    if src is None:
        pytest.skip("no copy of QuickFIX's repository (set QUICKFIX_SRC or fetch the mirror)")
    if (src / DEFINITIONS).is_dir():  # a checkout
        return src / DEFINITIONS
    git = shutil.which("git")
    if git is None or not (src / "HEAD").is_file():
        pytest.skip(f"{src} is neither a QuickFIX checkout nor a git directory")
    archive = subprocess.run(
        [git, f"--git-dir={src}", "archive", "--format=tar", "HEAD", DEFINITIONS],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(f"{src} has no {DEFINITIONS}: {archive.stderr.decode(errors='replace')}")
    out = tmp_path_factory.mktemp("quickfix")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(out, filter="data")
    return out / DEFINITIONS


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


@pytest.mark.parametrize("version", QUICKFIX_VERSIONS)
def test_quickfix_version_scripts_all_pass(
    quickfix_suite: Path, acceptor_port: int, version: str
) -> None:
    # quickfix_suite first: without QuickFIX's scripts no acceptor is started just to be stopped
    folder = quickfix_suite / version
    assert folder.is_dir(), f"QuickFIX's {version} scripts are missing from {quickfix_suite}"
    skips = [a for g in TIMER_SCRIPTS for a in ("--skip", g)]
    proc = _run(acceptor_port, "--defs", str(folder), *skips)
    passed, failed, out = _summary(proc)
    assert failed == 0, out
    assert passed == _count(version, timers=False, suite=quickfix_suite) > 0, out


@pytest.mark.slow
def test_quickfix_version_timer_scripts_all_pass(quickfix_suite: Path, acceptor_port: int) -> None:
    only = [a for g in TIMER_SCRIPTS for a in ("--only", g)]
    timed = [v for v in QUICKFIX_VERSIONS if _count(v, timers=True, suite=quickfix_suite)]
    assert len(timed) == 6  # every version folder but validate has 4a and 6
    procs = {v: _run(acceptor_port, "--defs", str(quickfix_suite / v), *only) for v in timed}
    for version, proc in procs.items():
        passed, failed, out = _summary(proc)
        assert failed == 0, out
        assert passed == _count(version, timers=True, suite=quickfix_suite) == 2, out
