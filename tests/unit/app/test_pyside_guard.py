# SPDX-License-Identifier: MIT
"""Guard against PySide6 builds that leak references on every signal emit (6.12.0 on 3.11)."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("pyside_guard_script.py")


@pytest.mark.integration
def test_thousands_of_repaints_and_emits_leave_true_and_none_alone() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "5000"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, (
        f"PySide6 guard failed (rc {proc.returncode}); a build that drops references on "
        f"Signal.emit must not be used.\nstdout: {proc.stdout}\nstderr: {proc.stderr[-2000:]}"
    )
    assert "emits=15000 received=15000" in proc.stdout
