# SPDX-License-Identifier: MIT
"""The bridge re-reads the engine's state when events were lost."""

import time

import pytest

from app.bridge import EngineBridge
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.events import EventRecord, InstrumentAdded, StrategyStatusChanged

pytestmark = pytest.mark.gui


def test_lost_events_are_replaced_by_a_snapshot_of_the_state(qtbot: object) -> None:
    client = EmbeddedEngineClient(configure=build_demo, max_queue=50)
    bridge = EngineBridge(client)
    batches: list[list[EventRecord]] = []
    gaps: list[int] = []  # index of the batch that follows each gap
    bridge.events_received.connect(batches.append)
    bridge.gap_detected.connect(lambda _a, _b: gaps.append(len(batches)))
    client.start()
    try:
        qtbot.waitUntil(lambda: bool(batches), timeout=5000)  # type: ignore[attr-defined]
        time.sleep(1.0)  # the GUI is busy: far more than 50 events pile up and the oldest drop
        qtbot.waitUntil(lambda: bool(gaps) and len(batches) > gaps[0], timeout=5000)  # type: ignore[attr-defined]
        resync = batches[gaps[0]]
        kinds = {type(r.event) for r in resync}
        assert InstrumentAdded in kinds
        assert StrategyStatusChanged in kinds
        assert client.dropped > 0
    finally:
        client.close()
        bridge.detach()
