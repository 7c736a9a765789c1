# SPDX-License-Identifier: MIT
"""A restart reads a day's fills into columns by kernel: the same fills a full decode finds."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from engine.clock import TestClock
from engine.enums import OrdStatus, Side
from engine.events import EventRecord, OrderFilled
from engine.journal import Journal, read_journal, recover
from engine.journal.fills import FillColumns, _fnv1a
from engine.journal.format import JournalEvent
from tests.unit.engine.journal.helpers import T0, make_view, order_changed, order_filled


def _day(path: Path, n: int, seed: int = 3) -> list[OrderFilled]:
    """Journal ``n`` fills over three symbols and four strategies; return them."""
    rng = np.random.default_rng(seed)
    fills = []
    seq = itertools.count(1)
    with Journal(path, TestClock(T0), sync="none") as j:
        for i in range(n):
            view = make_view(
                i + 1,
                status=OrdStatus.FILLED,
                strategy_id=int(rng.integers(1, 5)),
                symbol=("ESZ6", "NQZ6", "CLF7")[int(rng.integers(0, 3))],
                side=Side.BUY if rng.random() < 0.5 else Side.SELL,
                qty=5,
                cum=5,
                ts=T0 + i,
            )
            fill = order_filled(
                view,
                int(rng.integers(1, 6)),
                int(rng.integers(17_000, 19_000)),
                exec_id=f"X{i}" if i % 7 else "",
                ts=T0 + i,
                leaves=0,
            )
            j.on_event_record(EventRecord(next(seq), order_changed(view)))
            j.on_event_record(EventRecord(next(seq), fill))
            fills.append(fill)
    return fills


def test_kernel_columns_equal_the_fully_decoded_fills(tmp_path: Path) -> None:
    path = tmp_path / "day.qwj"
    fills = _day(path, 5_000)
    decoded = [
        r.event
        for r in read_journal(path)
        if isinstance(r, JournalEvent) and isinstance(r.event, OrderFilled)
    ]
    assert decoded == fills
    state = recover(path, done_orders=10)
    want = FillColumns.of(fills)
    got = state.fill_columns
    assert len(got) == 5_000
    assert sorted(got.symbols) == sorted(want.symbols)
    names = np.array(got.symbols)[got.symbol].tolist()
    assert names == [f.symbol for f in fills]
    for name in ("order_id", "strategy_id", "side", "px", "qty", "ts"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    expect: dict[str, int] = {}
    for f in fills:
        expect[f.symbol] = expect.get(f.symbol, 0) + int(f.side) * f.last_qty_lots
    assert state.position_lots() == expect
    by_strategy: dict[tuple[int, str], int] = {}
    for f in fills:
        key = (f.strategy_id, f.symbol)
        by_strategy[key] = by_strategy.get(key, 0) + int(f.side) * f.last_qty_lots
    assert got.positions_by_strategy() == by_strategy
    # Fill events only for the orders kept (the newest 10 done per instrument).
    assert state.fills == tuple(f for f in fills if f.order_id in state.orders)
    assert 10 <= len(state.fills) <= 30


def test_a_fill_journaled_twice_is_kept_once_and_a_reused_exec_id_twice(tmp_path: Path) -> None:
    first, second = tmp_path / "a.qwj", tmp_path / "b.qwj"
    a = make_view(1, status=OrdStatus.PARTIALLY_FILLED, cum=4)
    b = make_view(2, status=OrdStatus.FILLED, cum=10, symbol="NQZ6")
    f1 = order_filled(a, 4, 18_000, exec_id="E1", ts=T0 + 1, leaves=6)
    same_id_other_symbol = order_filled(b, 10, 21_000, exec_id="E1", ts=T0 + 2, leaves=0)
    reused = order_filled(a, 2, 18_005, exec_id="E1", ts=T0 + 3, leaves=4)  # another fill
    seq = itertools.count(1)
    with Journal(first, TestClock(T0), sync="none") as j:
        for ev in (f1, same_id_other_symbol):
            j.on_event_record(EventRecord(next(seq), ev))
    with Journal(second, TestClock(T0), sync="none") as j:
        for ev in (f1, reused, reused, same_id_other_symbol):  # resent after a restart
            j.on_event_record(EventRecord(next(seq), ev))
    state = recover([first, second])
    assert state.fills == (f1, same_id_other_symbol, reused)
    assert (state.duplicate_fills, state.reused_exec_ids) == (3, 1)
    assert state.position_lots() == {"ESZ6": 6, "NQZ6": 10}
    assert len(state.fill_columns) == 3


def test_a_fill_the_kernel_cannot_read_is_decoded_and_a_bad_side_is_not_a_fill(
    tmp_path: Path,
) -> None:
    # A side outside BUY/SELL sends the chunk to the full decode, which does not make a fill
    # of that record (as before the kernel) and keeps the others.
    path = tmp_path / "day.qwj"
    view = make_view(1, status=OrdStatus.FILLED, cum=10)
    good = order_filled(view, 3, 18_000, exec_id="G", ts=T0, leaves=7)
    odd = order_filled(view, 3, 18_000, exec_id="B", ts=T0, leaves=7)
    object.__setattr__(odd, "side", 5)
    with Journal(path, TestClock(T0), sync="none") as j:
        j.on_event(good)
        j.on_event(odd)
    state = recover(path)
    assert state.fills == (good,)
    assert state.position_lots() == {"ESZ6": 3}


@pytest.mark.parametrize("text", ["", "E1", "ÉXEC-ü-42", "x" * 300])
def test_the_python_hash_is_the_kernels(tmp_path: Path, text: str) -> None:
    # Fills the kernel cannot read are hashed in Python; both must agree on the same ExecID.
    from engine.journal import _kernels as jk

    data = text.encode()
    rows = np.zeros((1, jk.FRAME_COLUMNS), np.int64)
    rows[0, jk.F_POS] = -12  # the kernel skips the 12-byte record header
    out = np.zeros((1, 3), np.int64)
    # want field 0 after the "sequence number": make the array hold two strings.
    packed = np.frombuffer(b"\x92" + _mp_str(b"seq") + _mp_str(data), np.uint8)
    assert jk.event_fields(packed, rows, np.array([0]), np.array([jk.FIELD_STR]), out) == -1
    assert (out[0, 1], out[0, 2]) == (len(data), _fnv1a(data))
    assert bytes(packed[out[0, 0] : out[0, 0] + out[0, 1]]) == data


def _mp_str(data: bytes) -> bytes:
    n = len(data)
    if n < 32:
        return bytes([0xA0 | n]) + data
    if n < 256:
        return b"\xd9" + bytes([n]) + data
    return b"\xda" + n.to_bytes(2, "big") + data
