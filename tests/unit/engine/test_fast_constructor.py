# SPDX-License-Identifier: MIT
"""``fast_constructor`` builds the same frozen events as their dataclass ``__init__``."""

import dataclasses
from dataclasses import dataclass, field

import pytest

from engine.enums import EngineState, ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.events import (
    BookUpdated,
    EngineStateChanged,
    OrderChanged,
    OrderFilled,
    OrderView,
    fast_constructor,
)
from engine.oms.venue import ExecutionReport

VIEW = {
    "order_id": 7, "client_order_id": "C7", "orig_client_order_ids": ("C6",),
    "venue_order_id": "V7", "strategy_id": 3, "symbol": "ESZ6", "side": Side.SELL,
    "ord_type": OrdType.LIMIT, "time_in_force": TimeInForce.IOC, "qty_lots": 4,
    "px_ticks": 24_001, "status": OrdStatus.PARTIALLY_FILLED, "cum_qty_lots": 1,
    "leaves_qty_lots": 3, "avg_px_ticks": 24_001.0, "pending": "cancel", "text": "t",
    "ts_created": 1, "ts_sent": 2, "ts_acked": 3, "ts_last": 4,
}  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "kw"),
    [
        (OrderView, VIEW),
        (OrderChanged, {"ts_event": 5, "order": OrderView(**VIEW), "change": "fill"}),
        (
            BookUpdated,
            {
                "ts_event": 5,
                "symbol": "ESZ6",
                "bid_px_ticks": 1,
                "bid_qty_lots": 2,
                "ask_px_ticks": 3,
                "ask_qty_lots": 4,
            },
        ),
        (
            OrderFilled,
            {
                "ts_event": 5,
                "order_id": 7,
                "client_order_id": "C7",
                "venue_order_id": "V7",
                "exec_id": "E1",
                "strategy_id": 3,
                "symbol": "ESZ6",
                "side": Side.BUY,
                "last_px_ticks": 9,
                "last_qty_lots": 1,
                "leaves_qty_lots": 0,
                "ts_recv": 6,
            },
        ),
        (EngineStateChanged, {"ts_event": 1, "engine_id": "e", "state": EngineState.RUNNING}),
    ],
)
def test_same_event_as_the_dataclass(cls: type, kw: dict[str, object]) -> None:
    fast = fast_constructor(cls)(**kw)
    slow = cls(**kw)
    assert type(fast) is cls
    assert fast == slow
    assert hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(fast, next(iter(kw)), 0)


def test_defaults_and_wrong_arguments() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Sample:
        a: int
        b: str = "x"
        c: list[int] = field(default_factory=list)

    make = fast_constructor(Sample)
    first, second = make(a=1), make(a=1)
    assert first == Sample(a=1)
    assert first.c is not second.c  # a new list each time, as the factory says
    assert make(a=2, b="y", c=[1]) == Sample(a=2, b="y", c=[1])
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'a'"):
        make()
    with pytest.raises(TypeError, match="unexpected keyword argument 'd'"):
        make(a=1, d=2)
    with pytest.raises(TypeError):
        make(1)


def test_only_slotted_dataclasses() -> None:
    @dataclass(frozen=True)
    class Plain:
        a: int

    with pytest.raises(TypeError, match="not a slotted dataclass"):
        fast_constructor(Plain)


def test_positional_constructor_takes_the_fields_in_order() -> None:
    make = fast_constructor(OrderView, positional=True)
    names = [f.name for f in dataclasses.fields(OrderView)]
    built = make(*(VIEW[n] for n in names))
    assert type(built) is OrderView
    assert built == OrderView(**VIEW)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.status = OrdStatus.FILLED  # type: ignore[misc]
    with pytest.raises(TypeError):
        make(*(VIEW[n] for n in names[:-1]))  # one field short


def test_no_positional_constructor_when_a_required_field_follows_a_default() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Mixed:
        a: int = 0
        b: int

    assert fast_constructor(Mixed)(b=2) == Mixed(b=2)
    with pytest.raises(TypeError, match="field 'b' without a default follows one"):
        fast_constructor(Mixed, positional=True)


def test_every_field_positional_takes_defaulted_fields_too_in_order() -> None:
    # The FIX adapter's ExecutionReport: keyword-only, required fields after defaulted ones.
    make = fast_constructor(ExecutionReport, positional=True, every_field=True)
    kw: dict[str, object] = {
        "client_order_id": "A",
        "orig_client_order_id": "O",
        "venue_order_id": "V",
        "exec_id": "E",
        "exec_type": ExecType.TRADE,
        "ord_status": OrdStatus.PARTIALLY_FILLED,
        "side": Side.SELL,
        "leaves_qty_lots": 2,
        "cum_qty_lots": 1,
        "last_qty_lots": 1,
        "last_px_ticks": 24_000,
        "order_qty_lots": 3,
        "px_ticks": 24_001,
        "text": "t",
        "poss_resend": True,
        "poss_dup": False,
        "ts_event": 5,
        "ts_recv": 6,
        "symbol": "ESZ6",
        "ord_type": OrdType.LIMIT,
        "avg_px_ticks": 24_000.0,
        "maker": True,
        "client": 7,
    }
    names = [f.name for f in dataclasses.fields(ExecutionReport)]
    assert sorted(names) == sorted(kw)
    built = make(*(kw[n] for n in names))
    assert type(built) is ExecutionReport
    assert built == ExecutionReport(**kw)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.cum_qty_lots = 3  # type: ignore[misc]
    with pytest.raises(TypeError):  # no defaults: every field is required
        make(*(kw[n] for n in names[:-1]))
    with pytest.raises(TypeError, match="every_field needs positional=True"):
        fast_constructor(ExecutionReport, every_field=True)
