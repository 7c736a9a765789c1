# SPDX-License-Identifier: MIT
"""Restart recovery from a journal fed by a real order manager."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from engine.clock import TestClock
from engine.enums import ExecType, KillLevel, OrdStatus, Side
from engine.events import EventRecord, KillSwitchChanged
from engine.journal import Journal, JournalCorruptError, recover
from tests.factories import make_oms, report
from tests.unit.engine.journal.helpers import T0, alert, make_view, order_changed, order_filled


def test_recover_rebuilds_last_order_states_and_fills_of_an_oms_day(tmp_path: Path) -> None:
    path = tmp_path / "day.qwj"
    rig = make_oms()
    with Journal(path, rig.clock, sync="none") as j:
        j.subscribe(rig.bus)
        a = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=10, px_ticks=18_000)
        b = rig.oms.send(strategy_id=2, side=Side.SELL, qty_lots=4, px_ticks=18_010)
        c = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=17_990)
        rig.clock.advance(1_000)
        for o in (a, b, c):
            rig.oms.on_execution_report(report(o, ExecType.NEW, OrdStatus.NEW))
        rig.oms.on_execution_report(
            report(
                a,
                ExecType.TRADE,
                OrdStatus.PARTIALLY_FILLED,
                last_qty=6,
                last_px=18_000,
                exec_id="E1",
            )
        )
        rig.oms.on_execution_report(
            report(b, ExecType.TRADE, OrdStatus.FILLED, last_qty=4, last_px=18_010, exec_id="E2")
        )
        rig.oms.cancel(c)
        rig.oms.on_execution_report(
            report(
                c,
                ExecType.CANCELED,
                OrdStatus.CANCELED,
                leaves=0,
                clordid=c.pending.client_order_id if c.pending else "",
                orig=c.client_order_id,
            )
        )
        j.on_event(KillSwitchChanged(ts_event=T0, level=KillLevel.BLOCK_NEW, actor="t", reason="r"))
    state = recover(path)
    last: dict[int, object] = {}
    for ch in rig.changes:
        last[ch.order.order_id] = ch.order
    assert state.orders == last
    assert state.orders[a.order_id].status is OrdStatus.PARTIALLY_FILLED
    assert state.orders[b.order_id].status is OrdStatus.FILLED
    assert state.orders[c.order_id].status is OrdStatus.CANCELED
    assert list(state.open_orders()) == [a.order_id]
    assert state.fills == tuple(rig.fills)
    assert state.exec_ids == {"E1", "E2"}
    assert state.position_lots() == {"ESZ6": 6 - 4}
    assert state.position_lots(strategy_id=2) == {"ESZ6": -4}
    assert state.kill_switch is not None
    assert state.kill_switch.level is KillLevel.BLOCK_NEW
    assert state.torn_tails == ()


def test_recover_over_two_files_keeps_the_latest_state_and_each_fill_once(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a.qwj", tmp_path / "b.qwj"
    new = make_view(1, status=OrdStatus.NEW, ts=T0)
    part = make_view(1, status=OrdStatus.PARTIALLY_FILLED, cum=4, ts=T0 + 10)
    done = make_view(1, status=OrdStatus.FILLED, cum=10, ts=T0 + 20)
    fill1 = order_filled(part, 4, 18_000, exec_id="E1", ts=T0 + 10, leaves=6)
    fill2 = order_filled(done, 6, 18_001, exec_id="E2", ts=T0 + 20, leaves=0)
    other = make_view(2, status=OrdStatus.NEW, ts=T0 + 5)
    seq = itertools.count(1)
    with Journal(first, TestClock(T0), sync="none") as j:
        for ev in (order_changed(new), order_changed(other), order_changed(part), fill1):
            j.on_event_record(EventRecord(next(seq), ev))
    with Journal(second, TestClock(T0), sync="none") as j:
        # After a restart the venue resends the first fill (PossResend): journaled twice.
        for ev in (fill1, order_changed(done), fill2, alert(1)):
            j.on_event_record(EventRecord(next(seq), ev))
    state = recover([first, second])
    assert state.orders == {1: done, 2: other}
    assert state.fills == (fill1, fill2)
    assert state.last_seq == 8
    assert state.ts_last == alert(1).ts_event
    assert state.position_lots() == {"ESZ6": 10}


def test_recover_drops_a_torn_tail_and_reports_it(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    view = make_view(1)
    with Journal(path, TestClock(), sync="none") as j:
        j.on_event(order_changed(view))
    data = path.read_bytes()
    path.write_bytes(data + data[-30:-10])
    state = recover(path)
    assert state.orders == {1: view}
    assert len(state.torn_tails) == 1
    assert state.torn_tails[0].offset == len(data)


def test_recover_refuses_a_corrupt_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), sync="none") as j:
        j.on_event(order_changed(make_view(1)))
        j.on_event(order_changed(make_view(2)))
    data = bytearray(path.read_bytes())
    data[120] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError, match=str(path)):
        recover(path)


def test_a_fill_that_does_not_decode_is_named_by_its_offset(tmp_path: Path) -> None:
    # The fills of a chunk decode in one batch; a record whose CRC holds but whose payload is
    # not a fill is still found and named, as a record-by-record decode would.
    from engine.journal import JournalReader
    from engine.journal import format as fmt

    path = tmp_path / "day.qwj"
    with Journal(path, TestClock(T0), sync="none") as j:
        for i in range(5):
            view = make_view(i + 1)
            j.on_event(order_filled(view, 1, 100, exec_id=f"E{i}", ts=T0 + i, leaves=0))
    good = recover(path)
    assert [f.exec_id for f in good.fills] == [f"E{i}" for i in range(5)]
    (type_id,) = [t for t, s in JournalReader(path).schemas.items() if s.name.endswith("Filled")]
    at = path.stat().st_size
    with path.open("ab") as f:  # an intact frame (CRC right) with a payload that is no fill
        f.write(fmt.frame(fmt.KIND_EVENT, type_id, b"\x92\x07\xa3abc"))
        f.write(fmt.frame(fmt.KIND_EVENT, type_id, b"\x92\x07\xa3abc"))  # not the last record
    with pytest.raises(JournalCorruptError) as e:
        recover(path)
    assert e.value.offset == at
