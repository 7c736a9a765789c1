# SPDX-License-Identifier: MIT
"""``qwconsole engine --demo`` as a real process: a live summary, clean stop on SIGTERM."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_demo_prints_summaries_with_fills_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "engine",
            "--demo",
            "--interval",
            "0.5",
            "--state-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "fills" in line and int(line.split("fills")[1].split()[0]) > 0:
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "engine stopped cleanly" in out
    assert any("orders" in ln and "P&L" in ln for ln in lines)
    assert "Traceback" not in err
    assert list((tmp_path / "journal").glob("headless-*.qwj"))
    assert list((tmp_path / "fix").iterdir())


def test_engine_subcommand_without_mode_is_a_one_line_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app", "engine"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "qwconsole engine: error: nothing to run: use --demo or --config FILE "
        "(see 'qwconsole engine --help')"
    ]
