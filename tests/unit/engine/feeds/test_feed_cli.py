# SPDX-License-Identifier: MIT
"""``qwconsole gen itch`` and ``qwconsole replay``: real files, the real books."""

from pathlib import Path

import pytest

from app.cli import main as qwconsole
from engine.feeds.itch.book import ItchBooks


def test_gen_then_replay_a_day_in_pieces_checks_every_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = tmp_path / "day.itch"
    assert qwconsole(["gen", "itch", "--size", "2MB", "--stocks", "50", "--seed", "3",
                      "--out", str(day), "--quiet"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"wrote {day}: " in out
    assert 1_990_000 <= day.stat().st_size <= 2_000_100
    # Pieces of 64 KB cut between messages: the same books as the whole file at once.
    assert qwconsole(["replay", str(day), "--protocol", "itch", "--chunk", "64KB", "--check",
                      "--quiet"]) == 0  # fmt: skip
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
    assert qwconsole(["gen", "itch", "--size", "1MB", "--stocks", "20", "--out", str(day),
                      "--quiet"]) == 0  # fmt: skip
    cut = tmp_path / "cut.itch"
    cut.write_bytes(day.read_bytes()[:-7])  # the last message cut off
    assert qwconsole(["replay", str(cut), "--protocol", "itch", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "qwconsole replay: error:" in err
    assert "cut.itch" in err
    assert "Traceback" not in err
    assert qwconsole(["replay", str(tmp_path / "none.itch"), "--protocol", "itch"]) == 2
    assert "no such file" in capsys.readouterr().err
