# SPDX-License-Identifier: MIT
"""The command line, run as a real process: help, versions, and one-line errors with exit 2."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def run_cli(*args: str, tmp_path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "QWCONSOLE_CONFIG_DIR": str(tmp_path / "config"),
        "QWCONSOLE_STATE_DIR": str(tmp_path / "state"),
    }
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def test_help_lists_options_and_subcommands(tmp_path: Path) -> None:
    proc = run_cli("--help", tmp_path=tmp_path)
    assert proc.returncode == 0
    for word in ("--smoke", "--screenshot", "--workspace", "--open", "--after", "--version", "fix"):
        assert word in proc.stdout


def test_version_prints_component_versions(tmp_path: Path) -> None:
    proc = run_cli("--version", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(None, 1) for line in proc.stdout.strip().splitlines())
    assert lines["qwconsole"] == "0.1.0"
    assert lines["PySide6-Essentials"].startswith("6.11.")
    assert lines["Qt"].startswith("6.")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--workspace", "ladder"], "invalid choice: 'ladder'"),
        (["--smoke", "abc"], "'abc' is not a number of seconds"),
        (["--smoke", "-1"], "outside 0 < seconds"),
        (["--screenshot", "shot.jpg"], "'shot.jpg' must end in .png"),
        (["--after", "2"], "only makes sense with --screenshot"),
        (["--screenshot", "a.png", "--size", "10x10"], "10x10 is outside"),
        (["--smoke", "1", "--screenshot", "a.png"], "cannot be combined"),
        (["--open", "notes.txt"], "'notes.txt': not a tick store (.h5), journal (.qwj)"),
        (["--open", "missing.h5"], "missing.h5: no such file"),
    ],
)
def test_bad_argument_gets_one_line_error_and_exit_2(
    tmp_path: Path, args: list[str], fragment: str
) -> None:
    proc = run_cli(*args, tmp_path=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("qwconsole: error: ")
    assert fragment in lines[0]
    assert "Traceback" not in proc.stderr


def test_console_without_display_says_so_in_one_line(tmp_path: Path) -> None:
    env_keys = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    saved = {k: os.environ.pop(k, None) for k in env_keys}
    try:
        proc = run_cli(tmp_path=tmp_path)
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "qwconsole: error: no display (DISPLAY and WAYLAND_DISPLAY are unset); run it in a "
        "desktop session, or use --smoke or --screenshot PATH"
    ]
