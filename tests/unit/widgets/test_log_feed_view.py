# SPDX-License-Identifier: MIT
import pytest

from engine.events import EventRecord, LogRecorded, VenueLinkChanged
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


def test_a_non_fix_link_going_down_and_up_is_logged_and_a_fix_twin_is_not(qtbot: object) -> None:
    view = LogView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.on_events([
        EventRecord(1, VenueLinkChanged(ts_event=1, venue="X", protocol="OUCH", up=False,
                                        detail="QWC1@127.0.0.1:5002", state="Disconnected",
                                        next_out=7, next_in=12)),
        EventRecord(2, VenueLinkChanged(ts_event=2, venue="X", protocol="OUCH", up=True,
                                        detail="QWC1@127.0.0.1:5002", state="Logged in")),
        EventRecord(3, VenueLinkChanged(ts_event=3, venue="F", protocol="FIX", up=True)),
    ])  # fmt: skip
    lines = [(e.level, e.source, e.text) for e in reversed(view.visible_entries())]
    assert lines == [
        (30, "ouch", "OUCH QWC1@127.0.0.1:5002 disconnected (next out 7, in 12)"),
        (20, "ouch", "OUCH QWC1@127.0.0.1:5002 logged in"),
    ]
