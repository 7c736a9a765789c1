# SPDX-License-Identifier: MIT
"""Builders for journal tests and the journal benchmark."""

from __future__ import annotations

from engine.enums import AlertLevel, OrdStatus, OrdType, Side, TimeInForce
from engine.events import Alert, OrderChanged, OrderFilled, OrderView

T0 = 1_700_000_000_000_000_000


def make_view(
    order_id: int = 1,
    *,
    status: OrdStatus = OrdStatus.NEW,
    strategy_id: int = 7,
    symbol: str = "ESZ6",
    side: Side = Side.BUY,
    qty: int = 10,
    px: int = 18_000,
    cum: int = 0,
    ts: int = T0,
    client_order_id: str | None = None,
) -> OrderView:
    return OrderView(
        order_id=order_id,
        client_order_id=client_order_id or f"C{order_id}",
        orig_client_order_ids=(),
        venue_order_id=f"V{order_id}",
        strategy_id=strategy_id,
        symbol=symbol,
        side=side,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=qty,
        px_ticks=px,
        status=status,
        cum_qty_lots=cum,
        leaves_qty_lots=qty - cum,
        avg_px_ticks=float(px) if cum else 0.0,
        pending="",
        text="",
        ts_created=T0,
        ts_sent=T0 + 1,
        ts_acked=T0 + 2 if status is not OrdStatus.PENDING_NEW else 0,
        ts_last=ts,
    )


def order_changed(view: OrderView, change: str = "ack") -> OrderChanged:
    return OrderChanged(ts_event=view.ts_last, order=view, change=change)


def order_filled(
    view: OrderView, qty: int, px: int, *, exec_id: str, ts: int, leaves: int
) -> OrderFilled:
    return OrderFilled(
        ts_event=ts,
        order_id=view.order_id,
        client_order_id=view.client_order_id,
        venue_order_id=view.venue_order_id,
        exec_id=exec_id,
        strategy_id=view.strategy_id,
        symbol=view.symbol,
        side=view.side,
        last_px_ticks=px,
        last_qty_lots=qty,
        leaves_qty_lots=leaves,
        ts_recv=ts + 5,
    )


def alert(i: int) -> Alert:
    return Alert(ts_event=T0 + i, level=AlertLevel.WARNING, source="risk", text=f"alert {i}")


FIX_NOS = (
    b"8=FIX.4.4\x019=148\x0135=D\x0134=1080\x0149=CLIENT\x0152=20261202-11:00:00.000\x01"
    b"56=EXCHANGE\x0111=C1\x0121=1\x0138=10\x0140=2\x0144=4500.25\x0154=1\x0155=ESZ6\x01"
    b"60=20261202-11:00:00.000\x0110=092\x01"
)
