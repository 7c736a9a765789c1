# SPDX-License-Identifier: MIT
"""The bridge: state re-read after lost events, wake-ups safe from deletion; the GC pacer."""

import gc
import threading
import time

import pytest
import shiboken6
from PySide6.QtCore import QTimer

from app.bridge import EngineBridge, GcPacer
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.events import EngineSnapshot, EventRecord, InstrumentAdded, StrategyStatusChanged

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


def test_the_state_is_re_read_off_the_gui_thread_and_events_held_until_it_is_in(
    qtbot: object,
) -> None:
    gate = threading.Event()  # opened by the test once the GUI thread went on
    gate_was_open: list[bool] = []

    class SlowSnapshots(EmbeddedEngineClient):
        def snapshot(self, timeout_s: float = 2.0) -> EngineSnapshot:
            gate_was_open.append(gate.wait(10.0))  # a remote engine's round trip, slowed
            return super().snapshot(timeout_s)

    client = SlowSnapshots(configure=build_demo, max_queue=50)
    bridge = EngineBridge(client)
    batches: list[list[EventRecord]] = []
    bridge.events_received.connect(batches.append)
    # Opened from the GUI thread's event loop once flush() returned: a snapshot read inside
    # flush() would find it shut (and wait its 10 s out).
    bridge.gap_detected.connect(lambda _a, _b: QTimer.singleShot(0, gate.set))
    client.start()
    try:
        qtbot.waitUntil(lambda: bool(batches), timeout=5000)  # type: ignore[attr-defined]
        delivered = len(batches)
        time.sleep(1.0)  # far more than 50 events pile up and the oldest drop
        qtbot.waitUntil(lambda: bridge.resyncs >= 1, timeout=5000)  # type: ignore[attr-defined]
        qtbot.waitUntil(lambda: len(batches) > delivered, timeout=10_000)  # type: ignore[attr-defined]
        # The snapshot had to wait for the GUI thread to go on: it was not read there.
        assert gate_was_open[0] is True
        resync = batches[delivered]
        assert {InstrumentAdded, StrategyStatusChanged} <= {type(r.event) for r in resync}
        # After the state, the events follow it without a hole, in order.
        seqs = [r.seq for b in batches[delivered:] for r in b]
        state_seq = resync[0].seq
        after = [q for q in seqs if q > state_seq]
        assert after == list(range(state_seq + 1, state_seq + 1 + len(after))) or bridge.resyncs > 1
    finally:
        client.close()
        bridge.detach()


def test_a_deleted_bridge_is_never_touched_by_the_engine_thread(
    qtbot: object, caplog: pytest.LogCaptureFixture
) -> None:
    client = EmbeddedEngineClient(heartbeat_interval_ms=10)
    kept = EngineBridge(client)  # a second window's bridge: it must go on working
    kept_batches: list[list[EventRecord]] = []
    doomed = EngineBridge(client)
    doomed.events_received.connect(lambda b: pytest.fail("a deleted bridge delivered"))
    # ``doomed`` replaced ``kept`` as the wake-up; delete it without detach, as a window
    # torn down in a hurry would, while the engine thread keeps waking it.
    client.start()
    try:
        shiboken6.delete(doomed)
        time.sleep(0.2)  # heartbeats arrive: the engine thread calls the wake-up many times
        kept._client.set_wakeup(None)  # the relay was still called safely meanwhile
        kept.events_received.connect(kept_batches.append)
        kept.flush(force=True)
        assert kept_batches
        assert {type(r.event).__name__ for r in kept_batches[0]} >= {"EngineHeartbeat"}
        assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    finally:
        client.close()
        kept.detach()


def test_gc_pacer_freezes_survivors_and_collects_young_cycles(qtbot: object) -> None:
    pacer = GcPacer(interval_ms=20, full_every=2)
    gc.collect()
    enabled = gc.isenabled()
    pacer.start()
    try:
        assert not gc.isenabled()  # every collection runs in the GUI thread, by the pacer
        assert gc.get_freeze_count() > 0
        frozen = gc.get_freeze_count()

        class Node:
            def __init__(self) -> None:
                self.me = self  # a cycle: only the collector frees it

        survivor = [Node() for _ in range(100)]
        garbage = [Node() for _ in range(1000)]
        del garbage
        qtbot.waitUntil(lambda: pacer.passes >= 2, timeout=5000)  # type: ignore[attr-defined]
        assert pacer.collected >= 1000  # the young cycles were collected before freezing
        assert gc.get_freeze_count() >= frozen + 100  # the survivors left the generations
        assert survivor[0].me is survivor[0]
    finally:
        pacer.stop()
    assert gc.get_freeze_count() == 0
    assert not pacer.active
    assert gc.isenabled() == enabled
