# SPDX-License-Identifier: MIT
"""Real engine events for the widget tests, screenshots and the Monitor benchmark."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from engine.commands import Command, CommandAck, CommandError, CommandResult
from engine.enums import (
    AlertLevel,
    OrdStatus,
    OrdType,
    Side,
    StrategyState,
    TimeInForce,
)
from engine.events import (
    Alert,
    BookUpdated,
    Event,
    EventRecord,
    FixMessageSeen,
    InstrumentAdded,
    OrderChanged,
    OrderFilled,
    OrderView,
    PositionChanged,
    StrategyStatusChanged,
)

#: 2026-12-02 14:30:00 UTC in ns.
T0 = 1_796_221_800_000_000_000

_seq = itertools.count(1)


def records(events: Iterable[Event]) -> list[EventRecord]:
    """Number events as the engine's stream would."""
    return [EventRecord(next(_seq), ev) for ev in events]


def instrument(
    symbol: str = "ESZ6",
    tick: str = "0.25",
    lot: str = "1",
    ccy: str = "USD",
    multiplier: str = "50",
) -> InstrumentAdded:
    return InstrumentAdded(
        ts_event=T0,
        symbol=symbol,
        tick_size=tick,
        lot_size=lot,
        multiplier=multiplier,
        currency=ccy,
        venue="SIM",
    )


def order(
    order_id: int,
    *,
    symbol: str = "ESZ6",
    side: Side = Side.BUY,
    qty: int = 10,
    px: int = 18_000,
    status: OrdStatus = OrdStatus.NEW,
    cum: int = 0,
    avg: float = 0.0,
    strategy_id: int = 1,
    orig: tuple[str, ...] = (),
    text: str = "",
    ord_type: OrdType = OrdType.LIMIT,
    ts: int = T0,
) -> OrderView:
    leaves = (
        0 if status in (OrdStatus.FILLED, OrdStatus.CANCELED, OrdStatus.REJECTED) else qty - cum
    )
    return OrderView(
        order_id=order_id,
        client_order_id=f"C{order_id}" + (f".{len(orig)}" if orig else ""),
        orig_client_order_ids=orig,
        venue_order_id=f"V{order_id}" if status is not OrdStatus.PENDING_NEW else "",
        strategy_id=strategy_id,
        symbol=symbol,
        side=side,
        ord_type=ord_type,
        time_in_force=TimeInForce.DAY,
        qty_lots=qty,
        px_ticks=px,
        status=status,
        cum_qty_lots=cum,
        leaves_qty_lots=leaves,
        avg_px_ticks=avg,
        pending="",
        text=text,
        ts_created=ts,
        ts_sent=ts + 12_000,
        ts_acked=ts + 12_000 + 84_500 if status is not OrdStatus.PENDING_NEW else 0,
        ts_last=ts + 200_000,
    )


def changed(o: OrderView, change: str = "ack", ts: int | None = None) -> OrderChanged:
    return OrderChanged(ts_event=o.ts_last if ts is None else ts, order=o, change=change)


def fill(o: OrderView, exec_n: int, qty: int, px: int | None = None, ts: int = T0) -> OrderFilled:
    return OrderFilled(
        ts_event=ts,
        order_id=o.order_id,
        client_order_id=o.client_order_id,
        venue_order_id=o.venue_order_id,
        exec_id=f"E{o.order_id}-{exec_n}",
        strategy_id=o.strategy_id,
        symbol=o.symbol,
        side=o.side,
        last_px_ticks=o.px_ticks if px is None else px,
        last_qty_lots=qty,
        leaves_qty_lots=max(0, o.qty_lots - qty),
        ts_recv=ts + 3_000,
    )


def position(
    strategy_id: int,
    symbol: str,
    qty: int,
    avg: float,
    mark: int,
    realized: float,
    unrealized: float,
    fees: float = 0.0,
    ts: int = T0,
) -> PositionChanged:
    return PositionChanged(
        ts_event=ts,
        strategy_id=strategy_id,
        symbol=symbol,
        qty_lots=qty,
        avg_px_ticks=avg,
        mark_px_ticks=mark,
        realized_pnl=realized,
        unrealized_pnl=unrealized,
        fees=fees,
    )


def strategy(
    strategy_id: int,
    name: str,
    state: StrategyState = StrategyState.RUNNING,
    params: tuple[tuple[str, object], ...] = (
        ("spread_ticks", 2),
        ("size_lots", 5),
        ("skew", 0.25),
        ("enabled", True),
    ),
    change: str = "started",
    ts: int = T0,
) -> StrategyStatusChanged:
    return StrategyStatusChanged(
        ts_event=ts,
        strategy_id=strategy_id,
        name=name,
        state=state,
        parameters=params,
        change=change,
    )


def alert(
    text: str, level: AlertLevel = AlertLevel.WARNING, source: str = "risk", ts: int = T0
) -> Alert:
    return Alert(ts_event=ts, level=level, source=source, text=text)


def fix_message(
    fields: str,
    *,
    outbound: bool = True,
    seq: int = 1,
    ts: int = T0,
    session: str = "FIX.4.4:CLIENT->EXCHANGE",
) -> FixMessageSeen:
    raw = fields.replace("|", "\x01").encode()
    msg_type = next(f[3:] for f in fields.split("|") if f.startswith("35="))
    return FixMessageSeen(
        ts_event=ts + 9_000,
        session_id=session,
        outbound=outbound,
        msg_type=msg_type,
        seq_num=seq,
        raw=raw,
        ts_created=ts,
        ts_wire=ts + 4_500,
    )


REJECT_TEXT = "risk: order exceeds max position 20 lots"


def demo_events() -> list[Event]:
    """Return a realistic session: 3 instruments, 2 strategies, ~40 orders, fills, alerts."""
    evs: list[Event] = [
        instrument("ESZ6", "0.25", "1", "USD", "50"),
        instrument("6EZ6", "0.00005", "1", "USD", "125000"),
        instrument("BTC-USD", "0.5", "0.001", "USD", "1"),
        strategy(1, "mm-es"),
        strategy(2, "taker-6e", state=StrategyState.PAUSED, change="paused",
                 params=(("threshold_ticks", 3), ("max_position", 20), ("aggressive", False))),
    ]  # fmt: skip
    spec = {"ESZ6": (18_050, 1), "6EZ6": (23_310, 2), "BTC-USD": (190_400, 1)}
    statuses = [OrdStatus.NEW, OrdStatus.PARTIALLY_FILLED, OrdStatus.FILLED, OrdStatus.CANCELED,
                OrdStatus.NEW, OrdStatus.REJECTED, OrdStatus.PENDING_NEW, OrdStatus.NEW,
                OrdStatus.FILLED, OrdStatus.PENDING_CANCEL]  # fmt: skip
    n = 0
    for sym, (mid, sid) in spec.items():
        for k in range(14):
            n += 1
            side = Side.BUY if k % 2 == 0 else Side.SELL
            st = statuses[k % len(statuses)]
            px = mid - 1 - k // 2 if side is Side.BUY else mid + 1 + k // 2
            qty = [5, 10, 1, 25, 3, 40, 2][k % 7] * (1000 if sym == "BTC-USD" else 1)
            cum = (
                qty
                if st is OrdStatus.FILLED
                else qty // 2
                if st is OrdStatus.PARTIALLY_FILLED
                else 0
            )
            ts = T0 + n * 137_000_000
            o = order(
                n,
                symbol=sym,
                side=side,
                qty=qty,
                px=px,
                status=st,
                cum=cum,
                avg=(float(px) + (0.25 if k % 3 == 0 else 0.0)) if cum else 0.0,
                strategy_id=sid if n % 9 else 0,
                orig=(f"C{n}",) if k == 4 else (),
                text=REJECT_TEXT if st is OrdStatus.REJECTED else "",
                ts=ts,
            )
            evs.append(changed(o, "fill" if cum else "ack", ts=o.ts_last))
            if cum:
                evs.append(fill(o, 1, cum, ts=o.ts_last))
    evs += [
        BookUpdated(
            ts_event=T0,
            symbol=sym,
            bid_px_ticks=mid,
            bid_qty_lots=12,
            ask_px_ticks=mid + 1,
            ask_qty_lots=7,
        )
        for sym, (mid, _sid) in spec.items()
    ]
    evs += [
        position(1, "ESZ6", 7, 18_049.5, 18_051, 1_250.0, 262.5, 12.4),
        position(1, "BTC-USD", -1_500, 190_402.0, 190_399, -84.25, 2.25, 3.1),
        position(2, "6EZ6", 3, 23_309.0, 23_310, 0.0, 18.75, 1.5),
        position(0, "ESZ6", -2, 18_060.0, 18_051, 0.0, 225.0, 0.0),
        alert("order C6 refused: exceeds max position 20 lots", AlertLevel.WARNING, "risk"),
        alert("FIX.4.4:CLIENT->EXCHANGE logged on", AlertLevel.INFO, "fix"),
        alert("unknown ExecID E99-1 for ClOrdID X77", AlertLevel.ERROR, "oms"),
        fix_message("8=FIX.4.4|9=148|35=D|34=12|49=CLIENT|56=EXCHANGE|52=20261202-14:30:01.123|"
                    "11=C1|55=ESZ6|54=1|38=5|40=2|44=4512.25|59=0|60=20261202-14:30:01.123|10=123|"),
        fix_message("8=FIX.4.4|9=180|35=8|34=15|49=EXCHANGE|56=CLIENT|52=20261202-14:30:01.124|"
                    "37=V1|11=C1|17=E1-1|150=0|39=0|55=ESZ6|54=1|38=5|44=4512.25|151=5|14=0|6=0|10=045|",
                    outbound=False, seq=15),
    ]  # fmt: skip
    return evs


def bump(o: OrderView, **changes: object) -> OrderView:
    return replace(o, **changes)  # type: ignore[arg-type]


@dataclass
class RecordingSink:
    """A command sink answering at once: an ack, or the refusal ``refuse`` returns."""

    refuse: Callable[[Command], str] = lambda _c: ""
    commands: list[Command] = field(default_factory=list)

    def __call__(self, command: Command) -> Future[CommandResult]:
        self.commands.append(command)
        future: Future[CommandResult] = Future()
        reason = self.refuse(command)
        result: CommandResult = (
            CommandError(command=command, ts_handled=T0, reason=reason)
            if reason
            else CommandAck(command=command, ts_handled=T0, detail="ok")
        )
        future.set_result(result)
        return future
