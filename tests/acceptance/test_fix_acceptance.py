# SPDX-License-Identifier: MIT
"""The FIX session-level acceptance suite (QuickFIX's server scripts) against our acceptor.

The acceptor runs as a real child process (``python -m engine.fix.cli acceptor``) on a free
loopback port with ``resources/fix/acceptance.cfg``; the shared runner plays every script of
``fix42`` and ``fix44`` with exact BodyLength checks. The timer scripts (4a, 6: heartbeats,
TestRequest and the timeout disconnect, up to ~30 s each) run in their own slow tests, every
script of every version in parallel.

The other versions' suites (``fix40``, ``fix41``, ``fix43``, ``fix50``, ``fix50sp1``,
``fix50sp2``, ``validate``) are QuickFIX's published scripts, read from a copy of QuickFIX's
repository when one is present: ``$QUICKFIX_SRC`` (a checkout, or a bare git directory), else
the fetched mirror ``../.mirror/quickfix+quickfix/repo``. From a bare git directory the
``test/definitions/server`` folder is extracted into pytest's temporary directory, never into the
project. Without a copy those tests skip.
"""

from __future__ import annotations

import contextlib
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
    pytest.mark.skipif(
        not RUNNER.is_file(),
        reason=f"the shared FIX acceptance suite is absent: no {RUNNER} (../shared not present)",
    ),
]


@pytest.fixture(scope="module")
def acceptor_port() -> Iterator[int]:
    with _acceptor() as port:
        yield port


@pytest.fixture(scope="module")
def second_acceptor_port() -> Iterator[int]:
    """Another acceptor: one session (SenderCompID/TargetCompID) logs on once per acceptor."""
    with _acceptor() as port:
        yield port


@contextlib.contextmanager
def _acceptor() -> Iterator[int]:
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


def _extract_quickfix_suite(tmp_path_factory: pytest.TempPathFactory) -> Path | str:
    """Return the folder holding QuickFIX's ``fix40`` … ``validate`` folders, or why not."""
    src = _quickfix_source()
    if src is None:
        return (
            f"QuickFIX's {', '.join(QUICKFIX_VERSIONS)} scripts: no copy of QuickFIX's "
            f"repository ($QUICKFIX_SRC unset, no mirror at {MIRROR})"
        )
    if (src / DEFINITIONS).is_dir():  # a checkout
        return src / DEFINITIONS
    git = shutil.which("git")
    if git is None or not (src / "HEAD").is_file():
        return f"{src} is neither a QuickFIX checkout nor a git directory"
    archive = subprocess.run(
        [git, f"--git-dir={src}", "archive", "--format=tar", "HEAD", DEFINITIONS],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        return f"{src} has no {DEFINITIONS}: {archive.stderr.decode(errors='replace')}"
    out = tmp_path_factory.mktemp("quickfix")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(out, filter="data")
    return out / DEFINITIONS


@pytest.fixture(scope="module")
def quickfix_suite_or_reason(tmp_path_factory: pytest.TempPathFactory) -> Path | str:
    return _extract_quickfix_suite(tmp_path_factory)


@pytest.fixture(scope="module")
def quickfix_suite(quickfix_suite_or_reason: Path | str) -> Path:
    """Return the folder holding QuickFIX's ``fix40`` … ``validate`` script folders."""
    if isinstance(quickfix_suite_or_reason, str):
        pytest.skip(quickfix_suite_or_reason)
    return quickfix_suite_or_reason


TimerRuns = dict[tuple[Path, str, str], subprocess.Popen[str]]


@pytest.fixture(scope="module")
def timer_runs(
    acceptor_port: int, second_acceptor_port: int, quickfix_suite_or_reason: Path | str
) -> Iterator[TimerRuns]:
    """Start every version's timer scripts at once, each script in its own runner.

    They wait on the wall clock (heartbeat intervals, the TestRequest timeout, up to ~30 s): in
    parallel the whole lot takes as long as the longest script, not the sum. The scripts of a
    version share its session, so each script plays against its own acceptor.
    """
    suites = [(SUITE, ["fix42", "fix44"])]
    if isinstance(quickfix_suite_or_reason, Path):
        qf = quickfix_suite_or_reason
        suites.append((qf, [v for v in QUICKFIX_VERSIONS if _count(v, timers=True, suite=qf)]))
    runs = {
        (suite, v, g): _run(port, "--defs", str(suite / v), "--only", g)
        for suite, versions in suites
        for v in versions
        for g, port in zip(TIMER_SCRIPTS, (acceptor_port, second_acceptor_port), strict=True)
    }
    yield runs
    for proc in runs.values():
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _timers(runs: TimerRuns, suite: Path) -> list[str]:
    """Check the timer scripts of ``suite``: every one passed. Return the versions played."""
    passed: dict[str, int] = {}
    for (of, version, _script), proc in runs.items():
        if of != suite:
            continue
        ok, failed, out = _summary(proc)
        assert failed == 0, out
        assert ok == 1, out
        passed[version] = passed.get(version, 0) + ok
    for version, ok in passed.items():
        assert ok == _count(version, timers=True, suite=suite) == 2, version
    return sorted(passed)


@pytest.mark.parametrize("version", ["fix42", "fix44"])
def test_session_scripts_all_pass(acceptor_port: int, version: str) -> None:
    skips = [a for g in TIMER_SCRIPTS for a in ("--skip", g)]
    proc = _run(acceptor_port, "--defs", str(SUITE / version), *skips)
    passed, failed, out = _summary(proc)
    assert failed == 0, out
    assert passed == _count(version, timers=False) > 50, out


@pytest.mark.slow
def test_timer_scripts_all_pass(timer_runs: TimerRuns) -> None:
    assert _timers(timer_runs, SUITE) == ["fix42", "fix44"]


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
def test_quickfix_version_timer_scripts_all_pass(
    quickfix_suite: Path, timer_runs: TimerRuns
) -> None:
    # every version folder but validate has 4a and 6
    assert _timers(timer_runs, quickfix_suite) == sorted(set(QUICKFIX_VERSIONS) - {"validate"})
