# SPDX-License-Identifier: MIT
"""Strategies named by reference on every command line: bad ones are one line and exit 2."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.synthetic import random_walk_l2

pytestmark = pytest.mark.integration

QWCONSOLE = Path(sys.executable).with_name("qwconsole")

GOOD = """\
from engine.strategy.base import Strategy


class Quiet(Strategy):
    name = "quiet"
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(QWCONSOLE), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "quiet.py").write_text(GOOD)
    (tmp_path / "broken.py").write_text("import os\n\nos.nope()\n")
    np.save(tmp_path / "day.npy", random_walk_l2(2_000, seed=1))
    return tmp_path


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_backtest_fast_path_refuses_a_python_strategy(folder: Path) -> None:
    line = one_error_line(
        run("backtest", "day.npy", "--strategy", "quiet.py:Quiet", "--fast", cwd=folder)
    )
    assert (
        "--fast: Quiet is a Python strategy; the fast path runs compiled quoting strategies only"
        " (a QuotingStrategy subclass with a @quote_rule, such as mm" in line
    )


def test_backtest_generic_path_runs_a_file_strategy(folder: Path) -> None:
    proc = run(
        "backtest",
        "day.npy",
        "--strategy",
        "quiet.py:Quiet",
        "--out",
        "q.qwj",
        "--quiet",
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 orders" in proc.stdout
    assert (folder / "q.qwj").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("backtest", "day.npy", "--strategy", "broken.py:Quiet"),
        ("--strategy", "broken.py:Quiet", "--smoke", "1"),
    ],
)
def test_an_import_failure_names_file_line_and_exception(
    folder: Path, args: tuple[str, ...]
) -> None:
    line = one_error_line(run(*args, cwd=folder))
    assert (
        f"strategy broken.py:Quiet: {folder / 'broken.py'}, line 3: AttributeError: module 'os' "
        "has no attribute 'nope'"
    ) in line


def test_headless_engine_names_the_strategy_entry(folder: Path) -> None:
    (folder / "engine.toml").write_text(
        '[simulator]\nenabled = true\n\n[[strategies]]\nid = 5\nclass = "broken.py:Quiet"\n'
    )
    line = one_error_line(run("engine", "--config", "engine.toml", "--seconds", "1", cwd=folder))
    where = f"{folder / 'broken.py'}, line 3: AttributeError"
    assert line.startswith(
        f"qwconsole engine: error: engine.toml: strategies[0]: strategy broken.py:Quiet: {where}"
    )


def test_console_strategy_options_are_checked_before_a_window(folder: Path) -> None:
    line = one_error_line(run("--strategy", "quiet.py:Quiet", "--symbols", "IBM", cwd=folder))
    assert "--symbols: IBM not traded by the demo (ESZ6, NQZ6, CLF7)" in line
    line = one_error_line(run("--param", "a=1", cwd=folder))
    assert "--symbols and --param only make sense with --strategy" in line
