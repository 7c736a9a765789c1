# SPDX-License-Identifier: MIT
"""Property: any sequence of events, FIX messages and log records reads back unchanged."""

from __future__ import annotations

import dataclasses
import tempfile
import types
import typing
from enum import IntEnum
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import events as events_module
from engine.clock import TestClock
from engine.enums import AlertLevel, KillLevel, OrdStatus, OrdType, Side, TimeInForce
from engine.events import (
    Alert,
    Event,
    EventRecord,
    KillSwitchChanged,
    OrderChanged,
    OrderFilled,
    OrderView,
)
from engine.journal import (
    FixDirection,
    FixMessageRecord,
    Journal,
    JournalEvent,
    JournalOpened,
    LogEntry,
    read_journal,
)

I64 = st.integers(-(2**63), 2**63 - 1)
NS = st.integers(0, 2**63 - 1)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)

views = st.builds(
    OrderView,
    order_id=I64,
    client_order_id=TEXT,
    orig_client_order_ids=st.lists(TEXT, max_size=3).map(tuple),
    venue_order_id=TEXT,
    strategy_id=I64,
    symbol=TEXT,
    side=st.sampled_from(Side),
    ord_type=st.sampled_from(OrdType),
    time_in_force=st.sampled_from(TimeInForce),
    qty_lots=I64,
    px_ticks=I64,
    status=st.sampled_from(OrdStatus),
    cum_qty_lots=I64,
    leaves_qty_lots=I64,
    avg_px_ticks=st.floats(allow_nan=False),
    pending=st.sampled_from(["", "cancel", "replace"]),
    text=TEXT,
    ts_created=NS,
    ts_sent=NS,
    ts_acked=NS,
    ts_last=NS,
)
events = st.one_of(
    st.builds(OrderChanged, ts_event=NS, order=views, change=TEXT),
    st.builds(
        OrderFilled,
        ts_event=NS,
        order_id=I64,
        client_order_id=TEXT,
        venue_order_id=TEXT,
        exec_id=TEXT,
        strategy_id=I64,
        symbol=TEXT,
        side=st.sampled_from(Side),
        last_px_ticks=I64,
        last_qty_lots=I64,
        leaves_qty_lots=I64,
        ts_recv=NS,
    ),
    st.builds(Alert, ts_event=NS, level=st.sampled_from(AlertLevel), source=TEXT, text=TEXT),
    st.builds(
        KillSwitchChanged,
        ts_event=NS,
        level=st.sampled_from(KillLevel),
        actor=TEXT,
        reason=TEXT,
    ),
)
fix_records = st.builds(
    FixMessageRecord,
    session_id=TEXT,
    direction=st.sampled_from(FixDirection),
    raw=st.binary(max_size=300),
    ts_created=NS,
    ts_wire=NS,
    ts_handled=NS,
)
log_records = st.builds(
    LogEntry,
    ts=NS,
    level=st.integers(0, 60),
    source=TEXT,
    message=TEXT,
    exc_text=TEXT,
)
items = st.lists(
    st.one_of(
        st.tuples(st.integers(0, 2**62), events).map(lambda t: JournalEvent(seq=t[0], event=t[1])),
        fix_records,
        log_records,
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(records=items)
def test_journal_round_trip_of_arbitrary_records(
    records: list[JournalEvent | FixMessageRecord | LogEntry],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "j.qwj"
        with Journal(path, TestClock(), sync="none", flush_interval_ms=1000) as j:
            for r in records:
                if isinstance(r, JournalEvent):
                    if r.seq:
                        j.on_event_record(EventRecord(r.seq, r.event))
                    else:
                        j.on_event(r.event)
                elif isinstance(r, FixMessageRecord):
                    j.record_fix(
                        r.session_id, r.direction, r.raw, r.ts_created, r.ts_wire, r.ts_handled
                    )
                else:
                    j.log_formatted(r.ts, r.level, r.source, r.message, r.exc_text)
            assert j.encode_errors == 0
        back = [r for r in read_journal(path) if not isinstance(r, JournalOpened)]
    assert back == records


SIMPLE: dict[object, st.SearchStrategy[Any]] = {
    int: I64,
    float: st.floats(allow_nan=False),
    str: TEXT,
    bool: st.booleans(),
    bytes: st.binary(max_size=50),
    type(None): st.none(),
    object: st.one_of(I64, TEXT, st.floats(allow_nan=False), st.booleans()),
}


def _value_strategy(tp: Any) -> st.SearchStrategy[Any]:
    if tp in SIMPLE:
        return SIMPLE[tp]
    if isinstance(tp, type) and issubclass(tp, IntEnum):
        return st.sampled_from(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_strategy(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(_value_strategy(args[0]), max_size=3).map(tuple)
        return st.tuples(*(_value_strategy(a) for a in args))
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_value_strategy(a) for a in args))
    raise NotImplementedError(f"no strategy for {tp!r}")


def _dataclass_strategy(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    return st.builds(
        cls, **{f.name: _value_strategy(hints[f.name]) for f in dataclasses.fields(cls)}
    )


EVENT_CLASSES = sorted(
    (
        v
        for v in vars(events_module).values()
        if isinstance(v, type) and issubclass(v, Event) and v is not Event
    ),
    key=lambda c: c.__name__,
)


def test_every_engine_event_class_is_covered() -> None:
    names = {c.__name__ for c in EVENT_CLASSES}
    assert {"OrderChanged", "OrderFilled", "Alert", "KillSwitchChanged", "FixMessageSeen"} <= names


@settings(max_examples=40, deadline=None)
@given(evs=st.lists(st.one_of(*(_dataclass_strategy(c) for c in EVENT_CLASSES)), max_size=30))
def test_every_engine_event_class_round_trips_with_its_types(evs: list[Event]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "j.qwj"
        with Journal(path, TestClock(), sync="none", flush_interval_ms=1000) as j:
            for ev in evs:
                j.on_event(ev)
            j.flush()
            assert j.encode_errors == 0
        back = [r.event for r in read_journal(path) if isinstance(r, JournalEvent)]
    assert back == evs
    for a, b in zip(back, evs, strict=True):  # enums come back as enums, tuples as tuples
        for f in dataclasses.fields(a):
            assert type(getattr(a, f.name)) is type(getattr(b, f.name)), f.name
