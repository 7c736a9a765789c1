# SPDX-License-Identifier: MIT
"""``qwconsole gen itch`` and ``qwconsole replay``: real files, the real books."""

import subprocess
import sys
from pathlib import Path

import pytest

from engine.feeds.cli import gen_main, replay_main
from engine.feeds.itch.book import ItchBooks

ROOT = Path(__file__).resolve().parents[4]


def qwconsole(argv: list[str]) -> int:
    """Run ``qwconsole gen|replay`` in this process (app.cli's main registers import hooks
    for the whole process: the other tests must not see them)."""
    return {"gen": gen_main, "replay": replay_main}[argv[0]](argv[1:])


def test_gen_then_replay_a_day_in_pieces_checks_every_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = tmp_path / "day.itch"
    assert (
        qwconsole(
            [
                "gen",
                "itch",
                "--size",
                "2MB",
                "--stocks",
                "50",
                "--seed",
                "3",
                "--out",
                str(day),
                "--quiet",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"wrote {day}: " in out
    assert 1_990_000 <= day.stat().st_size <= 2_000_100
    # Pieces of 64 KB cut between messages: the same books as the whole file at once.
    assert (
        qwconsole(
            ["replay", str(day), "--protocol", "itch", "--chunk", "64KB", "--check", "--quiet"]
        )
        == 0
    )
    out = capsys.readouterr().out
    whole = ItchBooks()
    n = whole.apply_file(day)
    assert f"{n:,} messages" in out
    assert f"{whole.n_orders:,} orders resting on {whole.n_levels:,} levels" in out
    assert "every book checked" in out


def test_bad_input_is_one_line_and_a_nonzero_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert qwconsole(["gen", "itch", "--size", "ten", "--out", str(tmp_path / "x")]) == 2
    assert "size: 'ten' is not a size" in capsys.readouterr().err
    day = tmp_path / "day.itch"
    assert (
        qwconsole(["gen", "itch", "--size", "1MB", "--stocks", "20", "--out", str(day), "--quiet"])
        == 0
    )
    cut = tmp_path / "cut.itch"
    cut.write_bytes(day.read_bytes()[:-7])  # the last message cut off
    assert qwconsole(["replay", str(cut), "--protocol", "itch", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "qwconsole replay: error:" in err
    assert "cut.itch" in err
    assert "Traceback" not in err
    assert qwconsole(["replay", str(tmp_path / "none.itch"), "--protocol", "itch"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_console_dispatches_gen_and_replay(tmp_path: Path) -> None:
    day = tmp_path / "day.itch"
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "gen",
            "itch",
            "--size",
            "1MB",
            "--stocks",
            "20",
            "--out",
            str(day),
            "--quiet",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gen.returncode == 0, gen.stderr
    rep = subprocess.run(
        [sys.executable, "-m", "app", "replay", str(day), "--protocol", "itch", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.startswith(f"replayed {day}: ")
