# SPDX-License-Identifier: MIT
"""``qwconsole reconcile`` over what ``qwconsole engine --demo`` left behind, restart included."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def qwconsole(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_demo_run_twice_the_same_day_reconciles_with_exit_0(tmp_path: Path) -> None:
    for _run in range(2):  # the second run is a restart: it recovers from the first's journal
        demo = qwconsole("engine", "--demo", "--seconds", "4", "--state-dir", str(tmp_path))
        assert demo.returncode == 0, demo.stderr
        assert "engine stopped cleanly" in demo.stdout

    proc = qwconsole("reconcile", str(tmp_path), timeout=60)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.rstrip().splitlines()
    assert lines[-1].startswith("Reconciled ")
    assert "agree in the journal, the recovery and the venue's messages" in lines[-1]
    fills = int(lines[-1].split(": ")[1].split()[0])
    assert fills > 0
    assert any(ln.startswith("FIX.4.4:QWCONSOLE->QWSIM") for ln in lines)
    assert any("FIX.4.4-QWSIM-QWCONSOLE.body" in ln for ln in lines)
    # CLF7 trades over OUCH: its account's fills against the simulator's OUCH store.
    ouch = next(ln for ln in lines if ln.startswith("OUCH QWC1"))
    assert "CLF7" in ouch
    assert ouch.rstrip().endswith("ok")
    assert any(ln.startswith("  OUCH") and ".soupseq" in ln for ln in lines)


def test_reconcile_of_a_directory_without_journal_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = qwconsole("reconcile", str(tmp_path), timeout=60)

    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"qwconsole reconcile: error: {tmp_path}: no journal (*.qwj) in it or in its journal/ "
        "folder"
    ]
