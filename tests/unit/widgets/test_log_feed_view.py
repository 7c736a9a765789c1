# SPDX-License-Identifier: MIT
import pytest

from engine.events import EventRecord, LogRecorded
from widgets.log_view import LogView

pytestmark = pytest.mark.gui


def test_engine_log_records_show_with_their_level_and_count_as_alerts(qtbot: object) -> None:
    view = LogView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.on_events([
        EventRecord(1, LogRecorded(ts_event=1, level=30, source="engine.fix", text="slow peer")),
        EventRecord(2, LogRecorded(ts_event=2, level=40, source="engine.oms", text="bad fill")),
    ])  # fmt: skip
    lines = [(e.level, e.source, e.text) for e in reversed(view.visible_entries())]
    assert lines == [(30, "engine.fix", "slow peer"), (40, "engine.oms", "bad fill")]
    assert view.unread == 2
