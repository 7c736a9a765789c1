# SPDX-License-Identifier: MIT
"""Post-trade API: journal to structured arrays, grouping by strategy, as-of market joins."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from engine.clock import TestClock
from engine.enums import OrdStatus, Side
from engine.events import EventRecord
from engine.journal import Journal, JournalCorruptError
from engine.journal import format as fmt
from engine.posttrade import asof_join, by_strategy, join_market, joined_dtype, load_day
from engine.types import (
    EXECUTION_DTYPE,
    JOURNAL_ORDER_DTYPE,
    MARKET_SNAPSHOT_DTYPE,
    ORDER_EVENT_DTYPE,
)
from tests.unit.engine.journal.helpers import T0, alert, make_view, order_changed, order_filled


def _write_day(path: Path) -> None:
    """Two strategies, two symbols, three orders; ts in ns offsets from T0."""
    a0 = make_view(1, status=OrdStatus.NEW, strategy_id=1, ts=T0 + 100)
    a1 = make_view(1, status=OrdStatus.PARTIALLY_FILLED, strategy_id=1, cum=4, ts=T0 + 300)
    b0 = make_view(
        2,
        status=OrdStatus.NEW,
        strategy_id=2,
        symbol="NQZ6",
        side=Side.SELL,
        px=21_000,
        ts=T0 + 200,
    )
    b1 = make_view(
        2,
        status=OrdStatus.FILLED,
        strategy_id=2,
        symbol="NQZ6",
        side=Side.SELL,
        px=21_000,
        cum=10,
        ts=T0 + 500,
    )
    c0 = make_view(3, status=OrdStatus.NEW, strategy_id=1, qty=2, px=17_990, ts=T0 + 50)
    with Journal(path, TestClock(T0), sync="none") as j:
        events = (
            order_changed(c0),
            order_changed(a0),
            alert(1),
            order_changed(b0),
            order_changed(a1),
            order_filled(a1, 4, 18_000, exec_id="E1", ts=T0 + 300, leaves=6),
            order_changed(b1),
            order_filled(b1, 10, 21_000, exec_id="E2", ts=T0 + 500, leaves=0),
        )
        for seq, ev in enumerate(events, start=1):
            j.on_event_record(EventRecord(seq, ev))


@pytest.fixture
def day_path(tmp_path: Path) -> Path:
    path = tmp_path / "day.qwj"
    _write_day(path)
    return path


def test_load_day_gives_orders_changes_and_executions(day_path: Path) -> None:
    day = load_day(day_path)
    assert day.orders.dtype == JOURNAL_ORDER_DTYPE
    assert day.order_events.dtype == ORDER_EVENT_DTYPE
    assert day.executions.dtype == EXECUTION_DTYPE
    assert day.symbols == ("ESZ6", "NQZ6")
    # One row per order, last state, by ts_created then order id.
    assert day.orders["order_id"].tolist() == [1, 2, 3]
    assert day.orders["status"].tolist() == [
        OrdStatus.PARTIALLY_FILLED,
        OrdStatus.FILLED,
        OrdStatus.NEW,
    ]
    assert day.orders["n_changes"].tolist() == [2, 2, 1]
    assert day.orders["cum_qty"].tolist() == [4, 10, 0]
    assert day.orders["ts"].tolist() == [T0 + 300, T0 + 500, T0 + 50]
    assert day.orders["instrument"].tolist() == [0, 1, 0]
    assert day.orders["side"].tolist() == [1, -1, 1]
    # Every change, in journal order, with the engine's sequence numbers.
    assert day.order_events["order_id"].tolist() == [3, 1, 2, 1, 2]
    assert day.order_events["seq"].tolist() == [1, 2, 4, 5, 7]
    # Executions.
    ex = day.executions
    assert ex["order_id"].tolist() == [1, 2]
    assert ex["qty"].tolist() == [4, 10]
    assert ex["px"].tolist() == [18_000, 21_000]
    assert ex["ts_recv"].tolist() == [T0 + 305, T0 + 505]
    assert ex["strategy"].tolist() == [1, 2]
    assert day.exec_ids == ("E1", "E2")
    assert day.client_order_ids == {1: "C1", 2: "C2", 3: "C3"}
    assert day.instrument("NQZ6") == 1
    with pytest.raises(KeyError, match="CLZ6"):
        day.instrument("CLZ6")


def test_load_day_of_an_empty_journal_gives_empty_arrays(tmp_path: Path) -> None:
    path = tmp_path / "empty.qwj"
    Journal(path, TestClock(), sync="none").close()
    day = load_day(path)
    assert (len(day.orders), len(day.order_events), len(day.executions)) == (0, 0, 0)
    assert day.orders.dtype == JOURNAL_ORDER_DTYPE


def test_by_strategy_splits_rows_and_keeps_their_order(day_path: Path) -> None:
    day = load_day(day_path)
    groups = by_strategy(day.order_events)
    assert sorted(groups) == [1, 2]
    assert groups[1]["order_id"].tolist() == [3, 1, 1]
    assert groups[2]["order_id"].tolist() == [2, 2]
    assert by_strategy(day.executions[:0]) == {}
    with pytest.raises(ValueError, match="no 'strategy' column"):
        by_strategy(np.zeros(2, dtype=MARKET_SNAPSHOT_DTYPE))


def _market(rows: list[tuple[int, ...]]) -> np.ndarray:
    return np.array(rows, dtype=MARKET_SNAPSHOT_DTYPE)


def test_asof_join_takes_the_last_snapshot_at_or_before_each_row() -> None:
    rows = np.zeros(4, dtype=EXECUTION_DTYPE)
    rows["ts"] = [5, 10, 15, 100]
    rows["qty"] = [1, 2, 3, 4]
    market = _market(
        [
            (10, 99, 5, 101, 6, 100, 1),
            (10, 98, 5, 102, 6, 100, 2),  # same ts: the later row wins
            (20, 97, 5, 103, 6, 101, 3),
        ]
    )
    out = asof_join(rows, market)
    assert out.dtype == joined_dtype(EXECUTION_DTYPE)
    assert out["qty"].tolist() == [1, 2, 3, 4]
    assert out["mkt_ts"].tolist() == [-1, 10, 10, 20]
    assert out["mkt_bid_px"].tolist() == [0, 98, 98, 97]
    assert out["mkt_ask_px"].tolist() == [0, 102, 102, 103]
    assert out["mkt_last_qty"].tolist() == [0, 2, 2, 3]


def test_asof_join_refuses_unsorted_or_foreign_market_arrays() -> None:
    rows = np.zeros(1, dtype=EXECUTION_DTYPE)
    with pytest.raises(ValueError, match="row 1 goes back in time"):
        asof_join(rows, _market([(10, 0, 0, 0, 0, 0, 0), (5, 0, 0, 0, 0, 0, 0)]))
    with pytest.raises(ValueError, match="MARKET_SNAPSHOT_DTYPE"):
        asof_join(rows, np.zeros(1, dtype=[("ts", "i8")]))
    with pytest.raises(ValueError, match="'ts_created'"):
        asof_join(rows, _market([]), ts_field="ts_created")


def test_join_market_uses_each_instruments_own_snapshots(day_path: Path) -> None:
    day = load_day(day_path)
    es = _market([(T0, 17_999, 3, 18_001, 4, 18_000, 1), (T0 + 400, 1, 1, 2, 2, 3, 3)])
    nq = _market([(T0 + 450, 20_999, 7, 21_001, 8, 21_000, 2)])
    fills = join_market(day.executions, {"ESZ6": es, "NQZ6": nq}, day.symbols)
    assert fills["order_id"].tolist() == [1, 2]
    assert fills["mkt_ts"].tolist() == [T0, T0 + 450]
    assert fills["mkt_bid_px"].tolist() == [17_999, 20_999]
    orders = join_market(day.orders, {"NQZ6": nq}, day.symbols, ts_field="ts_created")
    assert orders["mkt_ts"].tolist() == [-1, -1, -1]  # no ES market given; NQ starts later


def test_docs_example_runs_on_a_real_journal(
    day_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (Path(__file__).resolve().parents[4] / "docs" / "journal.md").read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```python\n")[1:]]
    [example] = [b for b in blocks if "load_day(" in b and "by_strategy(fills)" in b]
    assert len(example.strip().splitlines()) <= 12
    es = _market([(T0, 17_998, 3, 18_001, 4, 18_000, 1)])
    code = example.replace('"journal/2026-12-02.qwj"', repr(str(day_path)))
    exec(compile(code, "docs/journal.md", "exec"), {"es_snapshots": es})
    out = capsys.readouterr().out.splitlines()
    # Strategy 2 traded NQ, for which no market was given: its fill is left out.
    assert out == ["strategy 1: 2 orders, 1 fills, 4 lots, edge vs mid -2.0 tick-lots"]


def test_load_day_names_the_schema_it_cannot_use(tmp_path: Path) -> None:
    path = tmp_path / "old.qwj"
    schema = msgspec.msgpack.encode(["engine.events.OrderChanged", [["ts_event", "int"]]])
    path.write_bytes(fmt.pack_file_header(0) + fmt.frame(fmt.KIND_SCHEMA, 1, schema))
    with pytest.raises(JournalCorruptError, match="lacks field 'order'") as info:
        load_day(path)
    assert (info.value.offset, info.value.index) == (32, 0)
