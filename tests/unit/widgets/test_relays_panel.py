# SPDX-License-Identifier: MIT
"""The Relays panel: rows from a relay's status, aligned figures, the empty and error states.

The images go to ``$QWC_SCREENSHOTS`` when set, else to the test's temporary folder.
"""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidgetItem, QTreeWidgetItemIterator

from widgets.monitor.relays import (
    BAD,
    COLUMNS,
    NUMERIC,
    OK,
    LinkLine,
    RelayLine,
    RelaysPanel,
    SourceLine,
)

pytestmark = pytest.mark.gui

SYMS = ("AAPL", "MSFT", "NVDA", "AMZN", "META", "TSLA")


def up_line() -> RelayLine:
    return RelayLine(
        name="ny4", endpoint="10.0.4.30:7350", state="up", relay_id="relay-ny4",
        uptime_s=3 * 3600 + 7 * 60 + 5, instruments=6, rows_in_per_s=98_765.4,
        cached_rows=600_000, cached_bytes=600_000 * 32, conflations=3,
        sources=(SourceLine("itch-a", "itch", SYMS, 98_765.4, 0.4, "listening"),),
        links=(
            LinkLine("10.0.4.51:50122", "alice", "viewer", "console-alice", SYMS[:2], 32_910.0,
                     0, 0.0, 0, False),
            LinkLine("10.0.4.52:41002", "strat7", "trader", "engine-7", SYMS, 98_700.2, 12,
                     1.25, 0, False),
            LinkLine("10.0.9.8:39990", "bob", "viewer", "laptop", SYMS[2:3], 3.0, 41_250,
                     8_123.0, 3, True),
            LinkLine("10.0.4.9:51000", "ops", "viewer", "qwconsole-monitor", (), 0.0, 0, 0.0, 0,
                     False),
        ),
    )  # fmt: skip


def items(panel: RelaysPanel) -> list[QTreeWidgetItem]:
    out = []
    it = QTreeWidgetItemIterator(panel.tree)
    while it.value() is not None:
        out.append(it.value())
        it += 1
    return out


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_empty_state_says_where_to_add_a_relay(qtbot: object) -> None:
    panel = RelaysPanel(hint="/home/u/.config/qwconsole/qwconsole.ini, [relays] watch")
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    assert panel.is_empty
    assert panel.empty.text() == (
        "No relay attached — add one in /home/u/.config/qwconsole/qwconsole.ini, [relays] watch."
    )
    panel.set_relays([up_line()])
    assert panel.stack.currentWidget() is panel.tree
    panel.set_relays([])
    assert panel.stack.currentWidget() is panel.empty
    assert items(panel) == []


def test_rows_from_a_status_with_aligned_figures(qtbot: object, out_dir: Path) -> None:
    panel = RelaysPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    panel.resize(1500, 330)
    panel.show()
    qtbot.waitExposed(panel)  # type: ignore[attr-defined]
    panel.set_relays([up_line()])
    assert panel.row_texts("ny4") == [
        "ny4 (10.0.4.30:7350)", "98,765", "41,250", "8,123", "3", "relay relay-ny4",
        "6 instruments", "up 3 h 07 m · cache 600,000 rows (18.3 MiB) · 1 stalled",
    ]  # fmt: skip
    assert panel.row_texts("ny4", "sources", "itch-a") == [
        "itch-a", "98,765", "", "", "", "itch", "AAPL, MSFT, NVDA, AMZN +2",
        "listening · last row 0.4 ms ago",
    ]  # fmt: skip
    assert panel.row_texts("ny4", "links", "10.0.4.52:41002") == [
        "engine-7 10.0.4.52:41002", "98,700", "12", "1.2", "0", "strat7 (trader)",
        "AAPL, MSFT, NVDA, AMZN +2", "catching up",
    ]  # fmt: skip
    stalled = panel.row_texts("ny4", "links", "10.0.9.8:39990")
    assert stalled[1:5] == ["3", "41,250", "8,123", "3"]
    assert stalled[-1] == "stalled: not reading · conflated 3×"
    watcher = panel.row_texts("ny4", "links", "10.0.4.9:51000")
    assert watcher[1:7] == ["", "", "", "", "ops (viewer)", "—"]
    assert watcher[-1] == "watching (no subscription)"
    assert panel.row_texts("ny4", "links")[0] == "Links (4)"
    # Figures right-aligned, every cell whole (no elided figure), states coloured.
    fm = panel.tree.fontMetrics()
    for item in items(panel):
        for c in NUMERIC:
            assert item.textAlignment(c) & Qt.AlignmentFlag.AlignRight
        for c in range(len(COLUMNS) - 1):
            indent = panel.tree.indentation() * 3 if c == 0 else 0
            assert panel.tree.columnWidth(c) >= fm.horizontalAdvance(item.text(c)) + indent, (
                c,
                item.text(c),
            )
    bad = panel._items[("ny4", "links", "10.0.9.8:39990")].foreground(7).color()
    good = panel._items[("ny4", "links", "10.0.4.51:50122")].foreground(7).color()
    assert (bad, good) == (panel.tone(BAD), panel.tone(OK))
    assert bad.red() > 2 * bad.green()  # red, and green, whatever the background
    assert good.green() > 2 * good.red()
    panel.grab().save(str(out_dir / "relays-panel.png"))


def test_unreachable_and_refused_relays_are_red_rows_that_say_why(qtbot: object) -> None:
    panel = RelaysPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    panel.set_relays([up_line(), RelayLine("ld4", "10.1.0.5:7350", "connecting")])
    assert panel.row_texts("ld4")[-1] == "connecting…"
    n_up = len(items(panel))
    gone = RelayLine(
        "ny4",
        "10.0.4.30:7350",
        "unreachable",
        "connection refused (is the relay running on that port?)",
    )
    refused = RelayLine("ld4", "10.1.0.5:7350", "refused", "login refused: token refused")
    panel.set_relays([gone, refused])
    assert len(items(panel)) == 2 < n_up  # its sources and links are gone with it
    assert panel.row_texts("ny4")[-1] == (
        "⚠ unreachable: connection refused (is the relay running on that port?); retrying"
    )
    assert panel.row_texts("ld4")[-1] == ("⚠ login refused: token refused; asking again every 30 s")
    assert panel._items[("ny4",)].foreground(7).color() == panel.tone(BAD)
    # One red line across the panel, so a narrow dock shows it too.
    row = panel._items[("ny4",)]
    assert row.isFirstColumnSpanned()
    assert row.text(0) == (
        "ny4 (10.0.4.30:7350) — ⚠ unreachable: connection refused (is the relay running on "
        "that port?); retrying"
    )
    assert row.foreground(0).color() == panel.tone(BAD)
    assert panel._items[("ld4",)].toolTip(7) == "login refused: token refused"
    panel.set_relays([up_line(), refused])  # back up: its rows return
    assert len(items(panel)) == n_up
    assert not row.isFirstColumnSpanned()
    assert row.text(0) == "ny4 (10.0.4.30:7350)"
