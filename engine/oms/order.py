# SPDX-License-Identifier: MIT
"""The universal order and its state machine, which follows FIX OrdStatus <39>.

An :class:`Order` is owned by one ``OrderManager``; everything outside sees immutable
:class:`engine.events.OrderView` snapshots. The venue's execution reports are the truth about an
order; :data:`ORDER_STATE_TABLE` says which moves a report may make, and a move outside it is
applied but raised as an alert (the venue is right about its own book; the trader must know).
"""

from dataclasses import dataclass, field

from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import OrderView, fast_constructor

S = OrdStatus
_new = object.__new__
_new_view = fast_constructor(OrderView, positional=True)

#: States after which nothing more happens to an order.
TERMINAL: frozenset[OrdStatus] = frozenset({S.FILLED, S.CANCELED, S.REJECTED, S.EXPIRED})

#: States in which an order can still trade (it is working at the venue or on its way).
WORKING: frozenset[OrdStatus] = frozenset(
    {
        S.PENDING_NEW,
        S.NEW,
        S.PARTIALLY_FILLED,
        S.PENDING_CANCEL,
        S.PENDING_REPLACE,
        S.SUSPENDED,
        S.ACCEPTED_FOR_BIDDING,
        S.CALCULATED,
        S.STOPPED,
    }
)

_LIVE_MOVES = frozenset(
    {
        S.NEW,
        S.PARTIALLY_FILLED,
        S.FILLED,
        S.CANCELED,
        S.EXPIRED,
        S.DONE_FOR_DAY,
        S.PENDING_CANCEL,
        S.PENDING_REPLACE,
        S.SUSPENDED,
        S.STOPPED,
        S.CALCULATED,
        S.REPLACED,
    }
)

#: Allowed moves: current status -> statuses a report may put the order in.
ORDER_STATE_TABLE: dict[OrdStatus, frozenset[OrdStatus]] = {
    S.PENDING_NEW: _LIVE_MOVES | {S.PENDING_NEW, S.REJECTED, S.ACCEPTED_FOR_BIDDING},
    S.NEW: _LIVE_MOVES,
    S.PARTIALLY_FILLED: _LIVE_MOVES - {S.NEW},
    # A cancel or replace may be sent before the venue acknowledged the order, which the venue
    # may then reject.
    S.PENDING_CANCEL: _LIVE_MOVES | {S.REJECTED},
    S.PENDING_REPLACE: _LIVE_MOVES | {S.REJECTED},
    S.SUSPENDED: _LIVE_MOVES,
    S.STOPPED: _LIVE_MOVES,
    S.CALCULATED: _LIVE_MOVES,
    S.ACCEPTED_FOR_BIDDING: _LIVE_MOVES,
    S.REPLACED: _LIVE_MOVES,
    S.DONE_FOR_DAY: frozenset({S.DONE_FOR_DAY, S.CANCELED, S.EXPIRED, S.NEW, S.PARTIALLY_FILLED}),
    S.FILLED: frozenset({S.FILLED}),
    S.CANCELED: frozenset({S.CANCELED}),
    S.REJECTED: frozenset({S.REJECTED}),
    S.EXPIRED: frozenset({S.EXPIRED}),
}


def is_allowed(current: OrdStatus, new: OrdStatus) -> bool:
    """Return whether a report may move an order from ``current`` to ``new``."""
    return new in ORDER_STATE_TABLE[current]


@dataclass(slots=True, kw_only=True)
class PendingRequest:
    """A cancel or replace the venue has not answered yet."""

    kind: str  # "cancel" or "replace"
    client_order_id: str  # ClOrdID <11> of the request
    prev_status: OrdStatus  # status to return to if the request is rejected
    qty_lots: int = 0  # replace: new OrderQty
    px_ticks: int = 0  # replace: new Price
    ts_sent: int = 0


@dataclass(slots=True, kw_only=True)
class Order:
    """One order through its life, cancel/replace chain included (mutable; owned by the OMS)."""

    order_id: int
    client_order_id: str
    strategy_id: int
    symbol: str
    side: Side
    ord_type: OrdType
    time_in_force: TimeInForce
    qty_lots: int
    px_ticks: int
    ts_created: int
    status: OrdStatus = OrdStatus.PENDING_NEW
    venue_order_id: str = ""
    chain: tuple[str, ...] = ()  # earlier ClOrdIDs of this order, oldest first
    cum_qty_lots: int = 0
    leaves_qty_lots: int = 0
    notional_ticks_lots: int = 0  # sum of last_px_ticks * last_qty_lots, for AvgPx
    pending: PendingRequest | None = None
    text: str = ""
    ts_sent: int = 0
    ts_acked: int = 0
    ts_last: int = 0
    #: The view the order manager last published (``None`` if it built none since the last
    #: change): what :meth:`view` returns now, without building it again.
    published: OrderView | None = field(default=None, repr=False, compare=False)

    @classmethod
    def pending_new(
        cls,
        order_id: int,
        client_order_id: str,
        strategy_id: int,
        symbol: str,
        side: Side,
        ord_type: OrdType,
        time_in_force: TimeInForce,
        qty_lots: int,
        px_ticks: int,
        ts: int,
    ) -> "Order":
        """Return a new order about to be sent: ``PENDING_NEW``, all of it left, created at ``ts``.

        The same order as ``Order(...)`` with these fields, ``leaves_qty_lots=qty_lots`` and
        ``ts_last=ts``, in half the time (the order manager makes one per order sent). A test
        checks that every field is set as the generated ``__init__`` sets it.
        """
        o = _new(cls)
        o.order_id, o.client_order_id, o.strategy_id = order_id, client_order_id, strategy_id
        o.symbol, o.side, o.ord_type, o.time_in_force = symbol, side, ord_type, time_in_force
        o.qty_lots, o.px_ticks, o.ts_created = qty_lots, px_ticks, ts
        o.status = OrdStatus.PENDING_NEW
        o.venue_order_id = ""
        o.chain = ()
        o.cum_qty_lots = 0
        o.leaves_qty_lots = qty_lots
        o.notional_ticks_lots = 0
        o.pending = None
        o.text = ""
        o.ts_sent = o.ts_acked = 0
        o.ts_last = ts
        o.published = None
        return o

    @property
    def is_terminal(self) -> bool:
        """Return whether nothing more can happen to this order."""
        return self.status in TERMINAL

    @property
    def is_working(self) -> bool:
        """Return whether the order can still trade."""
        return self.status in WORKING

    @property
    def avg_px_ticks(self) -> float:
        """Return the average fill price in ticks (0.0 before the first fill)."""
        return self.notional_ticks_lots / self.cum_qty_lots if self.cum_qty_lots else 0.0

    def view(self) -> OrderView:
        """Return an immutable snapshot of the order."""
        # Positional, in OrderView's field order (a test checks it against OrderView(**...)).
        cum = self.cum_qty_lots
        pending = self.pending
        return _new_view(
            self.order_id, self.client_order_id, self.chain, self.venue_order_id,
            self.strategy_id, self.symbol, self.side, self.ord_type, self.time_in_force,
            self.qty_lots, self.px_ticks, self.status, cum, self.leaves_qty_lots,
            self.notional_ticks_lots / cum if cum else 0.0, pending.kind if pending else "",
            self.text, self.ts_created, self.ts_sent, self.ts_acked, self.ts_last,
        )  # fmt: skip
