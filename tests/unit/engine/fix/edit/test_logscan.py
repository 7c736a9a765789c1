# SPDX-License-Identifier: MIT
"""Tests for engine.fix.edit.logscan: unknown tags in a FIX log, ready to add to a dictionary."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.fix.dictionary import DataDictionary
from engine.fix.edit.dicteditor import DictionaryEditor
from engine.fix.edit.logscan import guess_type, scan_lines, scan_log

ROOT = Path(__file__).resolve().parents[5]


@pytest.fixture(scope="module")
def fix44() -> DataDictionary:
    return DataDictionary.load(ROOT / "resources" / "fix" / "FIX44.xml")


def _msg(*fields: tuple[int, str], sep: str = "\x01") -> str:
    return sep.join(f"{t}={v}" for t, v in fields) + sep


def test_scan_lists_unknown_tags_with_samples(fix44: DataDictionary, tmp_path: Path) -> None:
    log = tmp_path / "FIX.4.4-ME-THEM.incoming.log"
    lines = [
        "20261202-12:00:00.000000000 : "
        + _msg((8, "FIX.4.4"), (35, "8"), (55, "EURUSD"), (5001, "A"), (9001, "1.25")),
        "20261202-12:00:01.000000000 : "
        + _msg((8, "FIX.4.4"), (35, "8"), (5001, "P"), (9001, "2"), (7777, "20261202-12:00:00")),
        "not a FIX line",
        _msg((8, "FIX.4.4"), (35, "D"), (5001, "A"), (9001, "3.5"), sep="|"),
    ]
    log.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    result = scan_log(log, fix44)
    assert (result.messages, result.lines, result.skipped) == (3, 4, 1)
    by_tag = {u.tag: u for u in result.unknown}
    assert list(by_tag) == [5001, 7777, 9001]
    venue = by_tag[5001]
    assert (venue.count, venue.samples, venue.msg_types, venue.first_line) == (
        3,
        ["A", "P"],
        ["8", "D"],
        1,
    )
    assert venue.guessed_type == "CHAR"
    assert by_tag[9001].guessed_type == "FLOAT"
    assert by_tag[7777].guessed_type == "UTCTIMESTAMP"
    # Ready to add: the suggestion is accepted by the dictionary editor.
    ed = DictionaryEditor(fix44)
    for u in result.unknown:
        ed.add_field(u.tag, u.suggested_name, u.guessed_type)
    assert scan_log(log, ed.dictionary()).unknown == []


def test_scan_reports_progress_and_can_be_cancelled(fix44: DataDictionary) -> None:
    lines = [_msg((8, "FIX.4.4"), (35, "0"), (5001, str(i))) for i in range(12_000)]
    seen: list[int] = []
    result = scan_lines(lines, fix44, progress=seen.append, cancelled=lambda: len(seen) >= 2)
    assert seen == [5000, 10000]
    assert result.cancelled
    assert result.messages == 9999
    assert result.unknown[0].samples == ["0", "1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "22"], "INT"),
        (["1", "2.5"], "FLOAT"),
        (["Y", "N"], "BOOLEAN"),
        (["A", "B"], "CHAR"),
        (["20261202"], "UTCDATEONLY"),
        (["12:00:00.123"], "UTCTIMEONLY"),
        (["abc", "1"], "STRING"),
        ([], "STRING"),
    ],
)
def test_guess_type(values: list[str], expected: str) -> None:
    assert guess_type(values) == expected
