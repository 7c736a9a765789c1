# SPDX-License-Identifier: MIT
"""The exchange-independent order manager: one per instrument and trading day.

It creates orders (risk checks, ClOrdID, state PendingNew), hands them to a venue adapter, and
applies what the venue answers — execution reports, cancel rejects, session and business
rejects — to the universal :class:`engine.oms.order.Order`, publishing an
:class:`engine.events.OrderChanged` for every change and an :class:`engine.events.Alert` for
anything a trader must look at.

Memory is bounded by what is open, not by the day: an order that reaches a terminal state
leaves the hot structures (:attr:`OrderManager.orders`, which holds only orders that may still
change) for :attr:`OrderManager.archive`, the last :data:`ARCHIVE_ORDERS` done orders kept whole
(their ClOrdIDs, OrderID and ExecIDs still recognised, so a late or resent report of one is judged
exactly as before). Beyond the archive a done order is remembered compactly (a hash of each
ClOrdID, its order id, strategy and side: 32 bytes) for the last :data:`RETIRED_MEMORY` ClOrdIDs:
a resent report of one is ignored quietly, a fill nobody flagged as resent is booked with an
alert (a fill is never dropped). The journal holds every order of the day.

Why one long module: :class:`OrderManager` is one state machine (like QuickFIX's ``Session``):
creating orders and applying each kind of venue answer all read and change the same open,
archived and retired order maps, so its handlers stay together in one class.
"""

import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from math import isqrt
from typing import TypeVar

import numpy as np

from engine.bus import MessageBus
from engine.clock import Clock
from engine.enums import AlertLevel, ExecType, KillLevel, OrdStatus, OrdType, Side, TimeInForce
from engine.events import (
    ALERTED,
    Alert,
    OrderChanged,
    OrderFilled,
    OrderView,
    fast_constructor,
)
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.oms.order import ORDER_STATE_TABLE, TERMINAL, WORKING, Order, PendingRequest
from engine.oms.request import OrderRequest, client_order_id_problem
from engine.oms.risk import (
    MAX_NOTIONAL_TICKS_LOTS as MAX_NOTIONAL,
)
from engine.oms.risk import (
    MAX_ORDER_QTY_LOTS,
    MAX_PX_TICKS,
    RiskChecker,
    _Exposure,
    _Scope,
    order_problem,
)
from engine.oms.stp import SelfTradePrevention
from engine.oms.venue import CancelReject, ExecutionReport, RejectReason, Request, Venue

log = get_log(__name__)

T = TypeVar("T")

# Built per order change and per fill: the fast constructors (engine.events.fast_constructor).
_order_changed = fast_constructor(OrderChanged)
_order_filled = fast_constructor(OrderFilled)
_order_filled_of = fast_constructor(OrderFilled, positional=True)  # a fill's, in field order

_FILL_TYPES = frozenset({ExecType.TRADE, ExecType.PARTIAL_FILL, ExecType.FILL})

_REJ = OrdStatus.REJECTED
_OFF = KillLevel.OFF
_PENDING_NEW = OrdStatus.PENDING_NEW
#: A bare Order (its slots unset): object.__new__(Order) with the class bound in, called
#: with no argument (~90 instructions fewer per order; issue 25).
_new_order = partial(object.__new__, Order)
_REPLACED_STATUS = OrdStatus.REPLACED
_ORDER_STATUS = ExecType.ORDER_STATUS
_REJECTED_EXEC = ExecType.REJECTED
_NEW_EXEC = ExecType.NEW
_LIMIT = OrdType.LIMIT
#: A quantity and a limit price up to this are sane whatever the other is (order_problem()
#: is None): within the quantity and price maxima, their product within the notional one.
#: Below 2**30, so the interpreter compares them as small ints.
_PLAIN = min(MAX_ORDER_QTY_LOTS, MAX_PX_TICKS, isqrt(MAX_NOTIONAL), 2**30 - 1)
_MARKET = OrdType.MARKET

#: Done (terminal) orders an order manager keeps whole, newest last (:attr:`OrderManager.archive`).
ARCHIVE_ORDERS = 2_000
#: ClOrdIDs of done orders beyond the archive remembered compactly, per order manager.
RETIRED_MEMORY = 100_000


#: How long a new order, cancel or replace may go unanswered before an alert and a status
#: request (:meth:`OrderManager.check_unanswered`), seconds; the engine's default.
ANSWER_TIMEOUT_S = 10.0

#: Engine-wide order ids (stable across cancel/replace chains and instruments).
_order_ids = itertools.count(1)
_NEVER = object()


def _iterator_of(source: Callable[[], T]) -> Iterator[T]:
    # An iterator whose next() is source(): the iterator itself when source is its __next__
    # (next() then calls it without building an argument tuple, unlike source()).
    owner = getattr(source, "__self__", None)
    if isinstance(owner, Iterator) and owner.__next__ == source:
        return owner
    return iter(source, _NEVER)


class OrderManager:
    """Orders of one instrument on one venue for one trading day.

    Parameters
    ----------
    instrument : Instrument
        The instrument (static data such as Symbol <55> is set once, here).
    venue : Venue
        Where orders go; it calls back ``on_execution_report`` and friends.
    bus : MessageBus
        Where order events and alerts are published.
    clock : Clock
        Time source.
    risk : RiskChecker
        Pre-trade checks (shared by every order manager of the engine).
    security_desc : str
        SecurityDesc <107>, for venues that need it.
    next_order_id : Callable[[], int] | None
        Source of engine-wide order ids.
    archive_orders, retired_memory : int
        Done orders kept whole; ClOrdIDs of older done orders remembered compactly (see the
        module docstring).
    """

    def __init__(
        self,
        instrument: Instrument,
        venue: Venue,
        bus: MessageBus,
        clock: Clock,
        risk: RiskChecker,
        *,
        security_desc: str = "",
        next_order_id: Callable[[], int] | None = None,
        archive_orders: int = ARCHIVE_ORDERS,
        retired_memory: int = RETIRED_MEMORY,
    ) -> None:
        self.instrument = instrument
        self.symbol = instrument.symbol
        self.security_desc = security_desc
        self.venue = venue
        self.bus = bus
        self.clock = clock
        self.risk = risk
        # Whether anyone listens to OrderChanged (kept current by the bus): read per change.
        self._order_changed = bus.interest(OrderChanged)
        self._order_filled = bus.interest(OrderFilled)
        self._next_order_id = next_order_id or _order_ids.__next__
        self._order_ids = _iterator_of(self._next_order_id)
        # The venue's ClOrdID source and the clocks' readings, looked up once (the venue and
        # the clocks are this manager's and its risk checker's for good).
        self._client_order_ids = _iterator_of(venue.new_client_order_id)
        self._now_ns = clock.now_ns
        self._monotonic_ns = risk.clock.monotonic_ns
        self._tick_value = float(instrument.tick_value)
        # Risk's exposures of this instrument (made now if new; risk never drops them): the
        # order path books a new order into them itself (_send_new).
        self._exposure = risk._exposure[self.symbol]
        self._every = self._exposure.every  # the engine's exposure in it
        # strategy id -> its scope in risk and its exposure in this instrument (risk's, made
        # on a strategy's first order here; risk never drops them): one lookup per order.
        self._risk_of: dict[int, tuple[_Scope, _Exposure]] = {}
        #: Orders that may still change (not terminal), by order id.
        self.orders: dict[int, Order] = {}
        # strategy id -> how many of ``orders`` are its own: self-trade prevention looks at the
        # orders only when another strategy holds some (one strategy per instrument: no scan).
        self._held: dict[int, int] = {}
        #: Done orders, oldest first: the last ``archive_orders`` of them.
        self.archive: OrderedDict[int, Order] = OrderedDict()
        #: Orders created (sent or refused) since the start, restored ones not counted.
        self.created = 0
        self._archive_size = max(1, archive_orders)
        self._aliases: dict[int, list[str]] = {}  # order id -> ClOrdIDs of its cancels/replaces
        self._execs_of: dict[int, list[str]] = {}  # order id -> ExecIDs of its fills
        # Done orders beyond the archive, a ring of (hash of a ClOrdID, order id, strategy, side).
        self._retired = np.zeros((max(1, retired_memory), 4), np.int64)
        self._retired_n = 0
        self._by_clordid: dict[str, Order] = {}
        self._by_venue_id: dict[str, Order] = {}
        # ExecID <17> -> (order id, LastQty, LastPx) of the fill it named: the ids are the
        # venue's (one venue per order manager), a repeat naming the same fill is a duplicate.
        self._exec_ids: dict[str, tuple[int, int, int]] = {}
        #: Reports not applied: duplicates and resent reports that were old news.
        self.duplicates_ignored = 0
        #: Reports whose state move the order state table refused (each raised an alert).
        self.transitions_refused = 0
        # order_id -> the leaves risk counts for a working order; None (or absent): not working.
        self._counted: dict[int, int | None] = {}
        #: Why the last :meth:`replace` that returned ``False`` was refused.
        self.replace_refused = ""
        # Orders asked about because a request went unanswered (check_unanswered): order id ->
        # (ClOrdID of the request, when the status was last asked, times asked; -1: the venue
        # rejected the status request, not asked again).
        self._asked: dict[int, tuple[str, int, int]] = {}
        self._watch_since = 0
        #: Requests the venue left unanswered past the timeout (each raised an alert).
        self.unanswered_requests = 0
        #: Self-trade prevention asked about every new order (the router sets it).
        self.stp: SelfTradePrevention | None = None

    def use_order_ids(self, next_order_id: Callable[[], int]) -> None:
        """Take the ids of new orders from ``next_order_id`` from now on (the router's)."""
        self._next_order_id = next_order_id
        self._order_ids = _iterator_of(next_order_id)

    # ------------------------------------------------------------------ queries
    def get(self, client_order_id: str) -> Order | None:
        """Return the order that has (or had) this ClOrdID, or ``None``."""
        return self._by_clordid.get(client_order_id)

    def lookup(self, order_id: int) -> Order | None:
        """Return an order by its engine-wide id, open or in the archive, or ``None``."""
        return self.orders.get(order_id) or self.archive.get(order_id)

    def archived(self, limit: int = 100, before_order_id: int | None = None) -> list[Order]:
        """Return up to ``limit`` done orders, newest done first, done before ``before_order_id``.

        One page of the archive for a blotter: the next page starts before the last one's id.
        """
        out: list[Order] = []
        skipping = before_order_id is not None
        for order in reversed(self.archive.values()):
            if skipping:
                skipping = order.order_id != before_order_id
                continue
            out.append(order)
            if len(out) >= limit:
                break
        return out

    def working(self, strategy_id: int | None = None) -> Iterator[Order]:
        """Iterate over working orders, of one strategy or all."""
        for order in self.orders.values():
            if order.is_working and (strategy_id is None or order.strategy_id == strategy_id):
                yield order

    # ------------------------------------------------------------------ recovery
    def restore(self, view: OrderView, fills: Iterable[OrderFilled] = ()) -> Order:
        """Rebuild an order from its last journaled view (engine restart).

        ``fills`` are the order's journaled fills: a venue that resends one of them (43=Y after
        a restart) is recognised by its ExecID <17>.

        A cancel or replace that was pending is forgotten (its fate is unknown until the venue
        answers a status request); the order takes the status it had before the request.
        """
        status = view.status
        if status in (OrdStatus.PENDING_CANCEL, OrdStatus.PENDING_REPLACE):
            status = OrdStatus.PARTIALLY_FILLED if view.cum_qty_lots else OrdStatus.NEW
        order = Order(
            order_id=view.order_id,
            client_order_id=view.client_order_id,
            strategy_id=view.strategy_id,
            symbol=self.symbol,
            side=view.side,
            ord_type=view.ord_type,
            time_in_force=view.time_in_force,
            qty_lots=view.qty_lots,
            px_ticks=view.px_ticks,
            ts_created=view.ts_created,
            status=status,
            venue_order_id=view.venue_order_id,
            chain=view.orig_client_order_ids,
            cum_qty_lots=view.cum_qty_lots,
            leaves_qty_lots=view.leaves_qty_lots,
            notional_ticks_lots=round(view.avg_px_ticks * view.cum_qty_lots),
            text=view.text,
            ts_sent=view.ts_sent,
            ts_acked=view.ts_acked,
            ts_last=view.ts_last,
        )
        self._hold(order)
        for clordid in (*order.chain, order.client_order_id):
            self._by_clordid[clordid] = order
        if order.venue_order_id:
            self._by_venue_id[order.venue_order_id] = order
        for f in fills:
            if f.exec_id:
                self._exec_ids[f.exec_id] = (order.order_id, f.last_qty_lots, f.last_px_ticks)
                self._execs_of.setdefault(order.order_id, []).append(f.exec_id)
        self._sync_risk(order)
        if order.is_terminal:
            self._retire(order)
        return order

    # ------------------------------------------------------------------ requests
    def send(
        self,
        *,
        side: Side,
        qty_lots: int,
        px_ticks: int = 0,
        ord_type: OrdType = OrdType.LIMIT,
        time_in_force: TimeInForce = TimeInForce.DAY,
        strategy_id: int = 0,
        client_order_id: str | None = None,
        band_override: bool = False,
        risk_exempt: bool = False,
    ) -> Order:
        """Check, create and send one order; return it (``REJECTED`` with the reason if refused).

        The arguments are the fields of an :class:`engine.oms.request.OrderRequest` but its
        symbol (this manager's instrument), keyword-only.
        ``risk_exempt`` skips the pre-trade checks; only flattening uses it. ``band_override``
        skips the price band only; only a manual order the user confirmed uses it.

        Raises
        ------
        ValueError
            For a malformed request (quantity outside 1..10^9 lots, a limit order without a
            price or with a price <= 0 or beyond the engine's integer range, a ClOrdID that no
            venue takes): a bug in the caller, not a trading decision. Nothing reaches the venue.
        """
        return self._send_new(
            side,
            qty_lots,
            px_ticks,
            ord_type,
            time_in_force,
            strategy_id,
            client_order_id,
            band_override,
            risk_exempt,
        )

    def _send_new(
        self,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        ord_type: OrdType,
        time_in_force: TimeInForce,
        strategy_id: int,
        client_order_id: str | None,
        band_override: bool,
        risk_exempt: bool,
    ) -> Order:
        # send() with every argument positional and given: the entry of the router's send()
        # and the strategy context's (a keyword call costs more per order than the rest of
        # the call). Same checks, same errors, same order state (issue 25).
        limit = ord_type is _LIMIT
        if (
            client_order_id is not None
            or not 1 <= qty_lots <= _PLAIN
            or (limit and not 0 < px_ticks <= _PLAIN)
        ):  # order_problem() is None for anything else: asked only here
            self._check_request(qty_lots, px_ticks, limit, client_order_id)
        if ord_type is _MARKET:
            px_ticks = 0
        # (Callables kept in attributes are read into locals first: a call of self.f() looks
        # f up as a method, the slow way when it is an attribute; so is a static method.)
        now_ns = self._now_ns
        now = now_ns()  # created and sent at once: one time for both
        clordid = client_order_id or next(self._client_order_ids)  # (venue.new_client_order_id())
        # Order.pending_new(...), inlined: the Order its __init__ would build, PENDING_NEW,
        # all of it left, created now (test_send_fast_path compares every field).
        order = _new_order()
        order.order_id = oid = next(self._order_ids)  # (self._next_order_id())
        order.client_order_id = clordid
        order.strategy_id = strategy_id
        order.symbol = self.symbol
        order.side = side
        order.ord_type = ord_type
        order.time_in_force = time_in_force
        order.qty_lots = order.leaves_qty_lots = qty_lots
        order.px_ticks = px_ticks
        order.ts_created = order.ts_last = now
        order.status = _PENDING_NEW
        order.venue_order_id = order.text = ""
        order.chain = ()
        order.cum_qty_lots = order.notional_ticks_lots = order.ts_sent = order.ts_acked = 0
        order.pending = order.published = None
        orders = self.orders
        held = self._held
        if oid not in orders:  # _hold(order), inlined
            held[strategy_id] = held.get(strategy_id, 0) + 1
        orders[oid] = order
        self.created += 1
        # The ClOrdID taken for this order unless another order has it (one lookup).
        if self._by_clordid.setdefault(clordid, order) is not order:
            return self._refuse(order, f"duplicate ClOrdID {clordid!r}: already used today")
        if risk_exempt or (self.stp is not None and len(held) > 1) or oid in self._counted:
            # (len(_held) > 1: _others_hold(), this order being held)
            return self._send_checked(order, band_override, risk_exempt)
        # The usual order (no self-trade prevention to ask between the check and the send):
        # risk's check, then on_new_order_sent()'s booking, inlined, as _send_checked() does.
        risk = self.risk
        if not (
            (
                risk.kill_level is _OFF
                and risk.global_limits is risk._glob
                and not risk._glob_active
                and not risk.instrument_limits
                and strategy_id not in risk.strategy_limits
            )  # risk.no_rule_applies(strategy_id), inlined
            or risk.passes_new(
                strategy_id, self.symbol, side, qty_lots, px_ticks, self._tick_value, band_override
            )
        ):  # a rule refuses it: check_new() names the rule
            refusal = risk.check_new(
                strategy_id, self.symbol, side, qty_lots, px_ticks, self._tick_value, band_override
            )
            if refusal is not None:
                return self._refuse(order, f"risk: {refusal}")
        monotonic_ns = self._monotonic_ns  # (a local: see now_ns above)
        mono = monotonic_ns()
        try:
            scope, own = self._risk_of[strategy_id]
        except KeyError:
            scope, own = self._risk_of[strategy_id] = (
                risk._scopes[strategy_id],
                self._exposure[strategy_id],
            )
        scope.sent.append(mono)
        if mono >= scope.trim_at:  # (as RiskChecker.record_sent)
            scope.trim(mono)
        scope.open += 1
        if side > 0:
            self._every.buy += qty_lots
            own.buy += qty_lots
        else:
            self._every.sell += qty_lots
            own.sell += qty_lots
        order.ts_sent = now
        self._counted[oid] = qty_lots
        if self._order_changed.wanted:  # (bus.wants(OrderChanged))
            self._publish(order, "new")
        # else: _publish() would do nothing more (a PENDING_NEW order is held, not retired)
        self.venue.submit(order)
        return order

    def _send_checked(self, order: Order, band_override: bool, risk_exempt: bool) -> Order:
        # The rest of _send_new() for an order self-trade prevention is asked about, a
        # flattening order (risk_exempt) or one risk counted already: the risk check, STP,
        # then risk books it sent.
        risk = self.risk
        strategy_id, side, qty_lots = order.strategy_id, order.side, order.qty_lots
        if not risk_exempt:
            refusal = risk.check_new(
                strategy_id,
                self.symbol,
                side,
                qty_lots,
                order.px_ticks,
                self._tick_value,
                band_override,
            )
            if refusal is not None:
                return self._refuse(order, f"risk: {refusal}")
        if self.stp is not None and len(self._held) > 1:  # _others_hold(): this one is held
            stp = self.stp.check(order, self.orders.values(), closing=risk_exempt)
            stuck = "" if stp.refusal is not None else self._stp_stuck(stp.cancel)
            if not stuck:
                self.cancel_many(stp.cancel)  # sent first: the venue takes them first
            if stp.refusal is not None or stuck:
                return self._refuse(order, stp.refusal or stuck)
        order.ts_sent = order.ts_created  # created and sent at once
        oid = order.order_id
        counted = self._counted
        if oid not in counted:  # _sync_risk() of a new working order, with record_sent()
            risk.on_new_order_sent(strategy_id, self.symbol, side, qty_lots)
            counted[oid] = qty_lots
        else:
            risk.record_sent(strategy_id)
            self._sync_risk(order)
        if self._order_changed.wanted:  # (bus.wants(OrderChanged))
            self._publish(order, "new")
        # else: _publish() would do nothing more (a PENDING_NEW order is held, not retired)
        self.venue.submit(order)
        return order

    def _check_request(
        self, qty_lots: int, px_ticks: int, limit: bool, client_order_id: str | None
    ) -> None:
        """Raise ``ValueError`` for a malformed request (see :meth:`send`)."""
        problem = order_problem(qty_lots, px_ticks, limit=limit)
        if problem is None and client_order_id is not None:
            problem = client_order_id_problem(client_order_id)
        if problem is not None:
            raise ValueError(f"{self.symbol}: {problem}")

    def submit(self, request: OrderRequest) -> Order:
        """Send ``request`` (its symbol must be this manager's) as :meth:`send` does."""
        if request.symbol != self.symbol:
            raise ValueError(
                f"order request for {request.symbol!r} sent to the order manager of {self.symbol!r}"
            )
        return self.send(
            side=request.side,
            qty_lots=request.qty_lots,
            px_ticks=request.px_ticks,
            ord_type=request.ord_type,
            time_in_force=request.time_in_force,
            strategy_id=request.strategy_id,
            client_order_id=request.client_order_id,
            band_override=request.band_override,
        )

    def send_many(self, requests: Iterable[OrderRequest]) -> list[Order]:
        """Send a portfolio of orders in one call; each is checked and answered on its own."""
        return [self.submit(r) for r in requests]

    def cancel(self, order: Order) -> bool:
        """Ask the venue to cancel ``order``; return ``False`` if there is nothing to cancel.

        An order with a pending cancel or replace is not asked again (the answer to the first
        request decides).
        """
        if not order.is_working or order.pending is not None:
            return False
        request = PendingRequest(
            kind="cancel",
            client_order_id=self.venue.new_client_order_id(),
            prev_status=order.status,
            ts_sent=self.clock.now_ns(),
        )
        order.pending = request
        self._by_clordid[request.client_order_id] = order
        self._aliases.setdefault(order.order_id, []).append(request.client_order_id)
        order.status = OrdStatus.PENDING_CANCEL
        order.ts_last = request.ts_sent
        self._publish(order, "cancel sent")
        self.venue.cancel(order, request)
        return True

    @staticmethod
    def _stp_stuck(orders: tuple[Order, ...]) -> str:
        """Say why the resting orders self-trade prevention would cancel cannot all be.

        An order with a request on its way (a replace) cannot be canceled before the venue
        answers it, so an order sent after the cancels would meet it at the venue: the caller
        then cancels nothing and refuses the order, instead of leaving it to the venue's own
        self-trade prevention. ``""``: they can.
        """
        for o in orders:
            if o.is_working and o.pending is not None:
                return (
                    f"self-trade prevention: order {o.order_id} of strategy {o.strategy_id} at "
                    f"{o.px_ticks} ticks has a {o.pending.kind} pending and cannot be canceled "
                    "first; not sent"
                )
        return ""

    def cancel_many(self, orders: Iterable[Order]) -> int:
        """Cancel several orders in one call; return how many cancels were sent."""
        return sum(self.cancel(o) for o in list(orders))

    def cancel_all(self, strategy_id: int | None = None, side: Side | None = None) -> int:
        """Cancel every working order (of a strategy, of a side); return how many were sent."""
        return self.cancel_many(
            o for o in self.working(strategy_id) if side is None or o.side is side
        )

    def replace(
        self,
        order: Order,
        *,
        qty_lots: int | None = None,
        px_ticks: int | None = None,
        band_override: bool = False,
    ) -> bool:
        """Ask the venue to change quantity and/or price; ``False`` if not possible now.

        Risk checks the new values; a refusal is published as an alert and the order is left
        as it was. Why it returned ``False`` is in :attr:`replace_refused`. ``band_override``
        skips the price band (a manual order the user confirmed).

        Raises
        ------
        ValueError
            For impossible values (quantity not above the filled quantity or beyond 10^9 lots,
            a limit price <= 0 or beyond the engine's integer range).
        """
        if not order.is_working or order.pending is not None:
            self.replace_refused = (
                f"{order.client_order_id} has a {order.pending.kind} pending: wait for the "
                "venue's answer"
                if order.pending is not None
                else f"{order.client_order_id} is {order.status.name}: nothing to replace"
            )
            return False
        new_qty = order.qty_lots if qty_lots is None else qty_lots
        new_px = order.px_ticks if px_ticks is None else px_ticks
        if new_qty <= order.cum_qty_lots:
            raise ValueError(
                f"{order.client_order_id}: new quantity {new_qty} lots must exceed the "
                f"{order.cum_qty_lots} lots already filled"
            )
        problem = order_problem(new_qty, new_px, limit=order.ord_type is OrdType.LIMIT)
        if problem is not None:
            raise ValueError(f"{order.client_order_id}: {problem}")
        refusal = self.risk.check_order(
            strategy_id=order.strategy_id,
            symbol=self.symbol,
            side=order.side,
            qty_lots=new_qty,
            px_ticks=new_px,
            tick_value=self._tick_value,
            is_replace=True,
            extra_qty_lots=max(0, new_qty - order.qty_lots),
            band_override=band_override,
        )
        if refusal is not None:
            self.replace_refused = f"risk: {refusal}"
            self._alert(
                AlertLevel.WARNING, f"replace of {order.client_order_id} refused: {refusal}"
            )
            return False
        if (
            self.stp is not None
            and new_px != order.px_ticks
            and self._others_hold(order.strategy_id)
        ):  # moved across another strategy's orders?
            stp = self.stp.check(order, self.orders.values(), px_ticks=new_px)
            stuck = "" if stp.refusal is not None else self._stp_stuck(stp.cancel)
            if not stuck:
                self.cancel_many(stp.cancel)
            if stp.refusal is not None or stuck:
                self.replace_refused = stp.refusal or stuck
                return False
        self.risk.record_sent(order.strategy_id)
        request = PendingRequest(
            kind="replace",
            client_order_id=self.venue.new_client_order_id(),
            prev_status=order.status,
            qty_lots=new_qty,
            px_ticks=new_px,
            ts_sent=self.clock.now_ns(),
        )
        order.pending = request
        self._by_clordid[request.client_order_id] = order
        self._aliases.setdefault(order.order_id, []).append(request.client_order_id)
        order.status = OrdStatus.PENDING_REPLACE
        order.ts_last = request.ts_sent
        self._publish(order, "replace sent")
        self.venue.replace(order, request)
        return True

    def request_status(self, order: Order) -> None:
        """Ask the venue for the order's status (OrderStatusRequest <H>)."""
        self.venue.request_status(order)

    # ------------------------------------------------------------------ venue answers
    def on_execution_report(self, rep: ExecutionReport) -> Order | None:
        """Apply an ExecutionReport <8>; return the order, or ``None`` if it is unknown."""
        et = rep.exec_type
        if self._asked and et is _ORDER_STATUS:
            self._status_answered(rep)
        order = self._by_clordid.get(rep.client_order_id)  # _find()'s first lookup, inlined
        if order is None:
            order = self._find(rep.client_order_id, rep.orig_client_order_id, rep.venue_order_id)
        if order is None:
            self._report_of_unknown(rep)
            return None
        if et in _FILL_TYPES:
            if rep.exec_id and self._duplicate_fill(order, rep):
                return order
        elif not self._report_applies(order, rep):
            return order
        now = self.clock.now_ns()
        venue_id = rep.venue_order_id
        if venue_id and venue_id != order.venue_order_id:
            order.venue_order_id = venue_id
            self._by_venue_id[venue_id] = order
        # A status answer "rejected" (unknown to the venue) acknowledges nothing either.
        if not order.ts_acked and et is not _REJECTED_EXEC and rep.ord_status is not _REJ:
            order.ts_acked = rep.ts_recv or now
        change = "ack" if et is _NEW_EXEC else self._apply_exec_type(order, rep)
        if not self._apply_status(order, rep):
            change += " (state kept)"
        order.text = rep.text or order.text
        order.ts_last = now
        self._sync_risk(order)
        self._publish(order, change)
        return order

    def _duplicate_fill(self, order: Order, rep: ExecutionReport) -> bool:
        """Return whether ``rep`` repeats a fill already applied (and remember it if not).

        A repeat is the same ExecID <17> for the same order, quantity and price: ignored, once
        or resent (43=Y). The same ExecID naming another fill is the venue reusing ids: the
        fill is real and is applied, with an alert (never drop a genuinely new fill).
        """
        key = (order.order_id, rep.last_qty_lots, rep.last_px_ticks)
        seen = self._exec_ids.get(rep.exec_id)
        if seen is None:
            self._exec_ids[rep.exec_id] = key
            self._execs_of.setdefault(order.order_id, []).append(rep.exec_id)
            return False
        if seen == key:
            self.duplicates_ignored += 1
            log.log(
                logging.INFO if rep.resent else logging.WARNING,
                "%s: duplicate ExecID %s on %s ignored (PossDupFlag=%s, PossResend=%s)",
                self.symbol,
                rep.exec_id,
                order.client_order_id,
                rep.poss_dup,
                rep.poss_resend,
            )
            return True
        self._alert(
            AlertLevel.ERROR,
            f"ExecID {rep.exec_id!r} reused by the venue for another fill ({order.client_order_id}"
            f" {rep.last_qty_lots} lots at {rep.last_px_ticks} ticks); the fill is booked",
        )
        return False

    def _report_applies(self, order: Order, rep: ExecutionReport) -> bool:
        """Return whether a report without a fill may change ``order``.

        Old news is ignored: a report that would move the order's state backwards (a lower
        CumQty <14>, a status the state table does not allow from where the order is) or
        that repeats its current state. Resent reports (43=Y) are expected to be old news and
        are ignored quietly; any other refused move raises an alert.
        """
        new = rep.ord_status  # the status the report moves the order to
        if new is _REPLACED_STATUS:  # FIX 4.0-4.2: the old order's status after a replace
            new = OrdStatus.PARTIALLY_FILLED if rep.cum_qty_lots else OrdStatus.NEW
        backwards = rep.cum_qty_lots < order.cum_qty_lots
        if not backwards and new in ORDER_STATE_TABLE[order.status]:
            if not (
                (rep.poss_dup or rep.poss_resend)
                and order.status in TERMINAL
                and new is order.status
            ):
                return True
        elif rep.exec_type is _ORDER_STATUS and _venue_lost(order, rep, new):
            return True  # the venue no longer knows a working order: _apply_status says so
        # A status answer is a snapshot that reports in flight may have overtaken: quiet too.
        quiet = rep.resent or rep.exec_type is ExecType.ORDER_STATUS
        if quiet or (order.is_terminal and new is order.status and not backwards):
            self.duplicates_ignored += 1
            log.info(
                "%s: %s report for %s ignored: order is %s, CumQty %d (report: %s, CumQty %d, "
                "PossDupFlag=%s)",
                self.symbol,
                rep.exec_type.name,
                order.client_order_id,
                order.status.name,
                order.cum_qty_lots,
                new.name,
                rep.cum_qty_lots,
                rep.poss_dup,
            )
            return False
        self._refuse_transition(order, rep, new)
        return False

    def _refuse_transition(self, order: Order, rep: ExecutionReport, new: OrdStatus) -> None:
        self.transitions_refused += 1
        self._alert(
            AlertLevel.ERROR,
            f"{order.client_order_id}: venue report would move the order from "
            f"{order.status.name} (CumQty {order.cum_qty_lots}) to {new.name} (CumQty "
            f"{rep.cum_qty_lots}, ExecType {rep.exec_type.name}, ExecID {rep.exec_id!r}); the "
            "order state table does not allow it: not applied",
        )

    def _apply_exec_type(self, order: Order, rep: ExecutionReport) -> str:
        et, pending = rep.exec_type, order.pending
        if et in _FILL_TYPES:
            return self._apply_fill(order, rep)
        if et is ExecType.REPLACED:
            return self._apply_replace(order, rep)
        if et is ExecType.CANCELED:
            if pending is not None:
                order.pending = None
                return "canceled"
            if rep.resent:  # our request's answer, resent after a restart forgot the request
                return "canceled (resent)"
            self._alert(
                AlertLevel.WARNING,
                f"unsolicited cancel of {order.client_order_id}"
                + (f": {rep.text}" if rep.text else ""),
            )
            return "canceled (unsolicited)"
        if et is ExecType.REJECTED:
            return "rejected"
        if et in (ExecType.TRADE_CANCEL, ExecType.TRADE_CORRECT):
            self._alert(
                AlertLevel.WARNING,
                f"{et.name.lower()} on {order.client_order_id}: ExecID={rep.exec_id!r}, "
                f"CumQty now {rep.cum_qty_lots} lots",
            )
            return et.name.lower()
        if et is ExecType.NEW:
            return "ack"
        return et.name.lower()

    def _apply_fill(self, order: Order, rep: ExecutionReport) -> str:
        if rep.last_qty_lots <= 0:
            self._alert(
                AlertLevel.ERROR,
                f"fill without a quantity on {order.client_order_id}: ExecID={rep.exec_id!r}",
            )
            return "fill?"
        order.notional_ticks_lots += rep.last_px_ticks * rep.last_qty_lots
        self.risk.on_fill(order.strategy_id, self.symbol, order.side, rep.last_qty_lots)
        # OrderFilled(ts_event, order_id, client_order_id, venue_order_id, exec_id,
        # strategy_id, symbol, side, last_px_ticks, last_qty_lots, leaves_qty_lots, ts_recv),
        # positionally (a test checks the event against OrderFilled(**...)); built only for
        # a listener (the journal, positions, strategies: in the engine, always).
        if self._order_filled.wanted:
            self.bus.publish(
                _order_filled_of(
                    rep.ts_event or self.clock.now_ns(), order.order_id, order.client_order_id,
                    order.venue_order_id, rep.exec_id, order.strategy_id, self.symbol,
                    order.side, rep.last_px_ticks, rep.last_qty_lots, rep.leaves_qty_lots,
                    rep.ts_recv,
                )
            )  # fmt: skip
        return "fill"

    def _apply_replace(self, order: Order, rep: ExecutionReport) -> str:
        pending = order.pending
        if pending is not None and pending.kind == "replace":
            order.qty_lots, order.px_ticks = pending.qty_lots, pending.px_ticks
            new_id = pending.client_order_id
            order.pending = None
        else:
            new_id = rep.client_order_id
            if not rep.resent:  # resent: our request's answer, forgotten by a restart
                self._alert(AlertLevel.INFO, f"unsolicited replace of {order.client_order_id}")
        if rep.order_qty_lots:
            order.qty_lots = rep.order_qty_lots
        if rep.px_ticks:
            order.px_ticks = rep.px_ticks
        if new_id != order.client_order_id:
            order.chain = (*order.chain, order.client_order_id)
            order.client_order_id = new_id
            self._by_clordid[new_id] = order
        return "replaced"

    def _apply_status(self, order: Order, rep: ExecutionReport) -> bool:
        """Move ``order`` to the report's state; ``False`` if the state table refused the move.

        A fill is booked whatever the state (the venue traded); its report moves the order
        only forward: CumQty <14> never decreases and a terminal order stays terminal.
        """
        new = rep.ord_status  # as in _report_applies()
        if new is _REPLACED_STATUS:
            new = OrdStatus.PARTIALLY_FILLED if rep.cum_qty_lots else OrdStatus.NEW
        if rep.exec_type is _ORDER_STATUS and _venue_lost(order, rep, new):
            # A status request for an order the venue acknowledged, answered "unknown": the
            # venue has lost it (a restart of the venue). It cannot trade any more.
            self._alert(
                AlertLevel.WARNING,
                f"the venue no longer knows {order.client_order_id} (status request answered "
                f"{rep.text or 'rejected'!r}); the order is considered canceled",
            )
            new = OrdStatus.CANCELED
            order.pending = None
        if rep.cum_qty_lots < order.cum_qty_lots or new not in ORDER_STATE_TABLE[order.status]:
            if rep.exec_type in _FILL_TYPES:  # the fill itself was booked by _apply_fill
                if rep.resent:
                    log.info(
                        "%s: resent fill %s on %s %s: order state kept",
                        self.symbol,
                        rep.exec_id,
                        order.status.name,
                        order.client_order_id,
                    )
                else:
                    self._refuse_transition(order, rep, new)
                order.cum_qty_lots = max(order.cum_qty_lots, rep.cum_qty_lots)
                return False
            self._refuse_transition(order, rep, new)
            return False
        if order.pending is not None and new in (OrdStatus.NEW, OrdStatus.PARTIALLY_FILLED):
            # A fill or restatement while our request is open: the order stays pending.
            order.pending.prev_status = new
            new = (
                OrdStatus.PENDING_CANCEL
                if order.pending.kind == "cancel"
                else OrdStatus.PENDING_REPLACE
            )
        order.status = new
        order.cum_qty_lots = rep.cum_qty_lots
        if new in TERMINAL:  # (order.is_terminal)
            order.leaves_qty_lots = 0
            order.pending = None
        else:
            order.leaves_qty_lots = rep.leaves_qty_lots
        return True

    def on_cancel_reject(self, rej: CancelReject) -> Order | None:
        """Apply an OrderCancelReject <9>: the request ends, the order stays as the venue says."""
        order = self._find(rej.client_order_id, rej.orig_client_order_id, rej.venue_order_id)
        what = "replace" if rej.response_to_replace else "cancel"
        if order is None:
            if self._retired_lookup(rej.client_order_id, rej.orig_client_order_id) is not None:
                log.info(
                    "%s: %s reject of %s, an order done long ago: %s",
                    self.symbol,
                    what,
                    rej.orig_client_order_id or rej.client_order_id,
                    rej.text,
                )
                return None
            self._alert(
                AlertLevel.WARNING,
                f"{what} reject for an unknown order: ClOrdID={rej.client_order_id!r} "
                f"OrigClOrdID={rej.orig_client_order_id!r}: {rej.text}",
            )
            return None
        pending = order.pending
        restored = pending.prev_status if pending is not None else order.status
        if rej.ord_status is not None and rej.ord_status not in (
            OrdStatus.PENDING_CANCEL,
            OrdStatus.PENDING_REPLACE,
        ):
            restored = rej.ord_status
        order.pending = None
        order.status = restored
        if order.is_terminal:
            order.leaves_qty_lots = 0
        order.text = rej.text
        order.ts_last = self.clock.now_ns()
        self._sync_risk(order)
        self._publish(order, f"{what} rejected")
        # Losing a race with a fill is routine for a quoting strategy; anything else is not.
        self._alert(
            AlertLevel.INFO if order.is_terminal else AlertLevel.WARNING,
            f"{what} of {order.client_order_id} rejected"
            + (f" (CxlRejReason {rej.reason})" if rej.reason is not None else "")
            + (f": {rej.text}" if rej.text else ""),
        )
        return order

    def on_request_rejected(
        self,
        request: Request | None,
        client_order_id: str,
        text: str,
        *,
        reason: RejectReason,
        detail: str = "",
    ) -> Order | None:
        """Apply a request the venue adapter hands back without the venue having acted on it.

        A rejected new order leaves the order ``REJECTED``; a rejected cancel or replace ends
        the pending request as a cancel reject would; a rejected status request leaves the
        order as it is. Each raises an alert naming the request (as the venue calls it), the
        order, the reason (``text``, and ``detail``: the venue's codes in words and the field
        it names) and what became of the order, unless the request was never sent
        (:attr:`RejectReason.NOT_SENT`: logged, the order's text says why). ``request``
        ``None``: a message that is no order request (the alert names it from ``detail``).
        """
        order = self._by_clordid.get(client_order_id)
        kind = reason.value
        what = self.venue.request_names[request] if request is not None else "a message"
        why = text + (f" [{detail}]" if detail else "")
        if order is None:
            if self._retired_lookup(client_order_id) is not None:
                log.info(
                    "%s: %s of the %s for %s, an order done long ago: %s",
                    self.symbol,
                    kind,
                    what,
                    client_order_id,
                    text,
                )
                return None
            self._alert(
                AlertLevel.WARNING,
                f"{kind} of {what} for unknown ClOrdID {client_order_id!r}: {why}",
            )
            return None
        pending = order.pending
        if request is Request.NEW and not order.ts_acked and not order.is_terminal:
            # Never reached the venue's book (a cancel sent meanwhile dies with it).
            order.status = OrdStatus.REJECTED
            order.pending = None
            order.leaves_qty_lots = 0
            order.text = f"{kind}: {text}"
            order.ts_last = self.clock.now_ns()
            self._sync_risk(order)
            self._publish(order, "rejected")
            outcome = "the order is REJECTED"
        elif (
            request in (Request.CANCEL, Request.REPLACE)
            and pending is not None
            and pending.client_order_id == client_order_id
        ):
            order.status = pending.prev_status
            order.pending = None
            order.text = f"{kind}: {text}"
            order.ts_last = self.clock.now_ns()
            self._sync_risk(order)
            self._publish(order, f"{request} rejected")
            outcome = f"the {request} ended, the order stays {order.status.name}"
        else:
            if request is Request.STATUS and order.order_id in self._asked:
                asked = self._asked[order.order_id]
                self._asked[order.order_id] = (asked[0], asked[1], -1)  # not asked again
            outcome = f"the order stays {order.status.name}"
        if reason is not RejectReason.NOT_SENT:
            self._alert(
                AlertLevel.WARNING,
                f"{kind} of {what} {client_order_id}{self._of_order(order, client_order_id)}: "
                f"{why}; {outcome}",
            )
        else:
            log.info(
                "%s: %s of %s %s: %s; %s", self.symbol, kind, what, client_order_id, why, outcome
            )
        return order

    # ------------------------------------------------------------------ unanswered requests
    def check_unanswered(self, timeout_ns: int) -> int:
        """Raise an alert for each request the venue left unanswered; ask for the order's status.

        A new order still ``PENDING_NEW``, or a cancel or replace still pending, ``timeout_ns``
        after it was sent (or after the first check, for orders restored at a restart), gets an
        alert naming it and an OrderStatusRequest <H>; the answer resolves it (a pending cancel
        or replace ends, the order takes the status the venue reports; an order the venue never
        got is ``REJECTED``). Without an answer to that either, a further ``timeout_ns`` later,
        an ERROR alert says so once and the status is asked again each period. Call it
        periodically (the trading desk does, every second). Returns how many requests were
        found unanswered by this call.
        """
        now = self.clock.now_ns()
        if not self._watch_since:
            self._watch_since = now
        asked = self._asked
        for oid, (clordid, _ts, _n) in list(asked.items()):
            order = self.orders.get(oid)
            if order is None or self._awaited(order) != clordid:
                del asked[oid]  # answered
        found = 0
        for order in list(self.orders.values()):
            request = self._awaited(order)
            if request is None:
                continue
            entry = asked.get(order.order_id)
            if entry is None:
                p = order.pending
                sent = p.ts_sent if p is not None else order.ts_sent
                if now - max(sent, self._watch_since) < timeout_ns:
                    continue
                found += 1
                self.unanswered_requests += 1
                what = self.venue.request_names[Request(p.kind) if p is not None else Request.NEW]
                self._alert(
                    AlertLevel.WARNING,
                    f"no answer from the venue to the {what} {request}"
                    f"{self._of_order(order, request)} within {timeout_ns / 1e9:g} s; the order "
                    f"is {order.status.name}: asking the venue for its status",
                )
                asked[order.order_id] = (request, now, 1)
                self.venue.request_status(order)
            elif entry[2] > 0 and now - entry[1] >= timeout_ns:
                if entry[2] == 1:
                    self._alert(
                        AlertLevel.ERROR,
                        f"still no answer from the venue about {order.client_order_id}, not to "
                        f"the status request either; the order stays {order.status.name} "
                        "(counted against the risk limits): check it with the venue",
                    )
                asked[order.order_id] = (request, now, entry[2] + 1)
                self.venue.request_status(order)
        return found

    @staticmethod
    def _awaited(order: Order) -> str | None:
        """Return the ClOrdID of the order's request still awaiting an answer, or ``None``."""
        if order.pending is not None:
            return order.pending.client_order_id
        if order.status is OrdStatus.PENDING_NEW and not order.ts_acked:
            return order.client_order_id
        return None

    def _status_answered(self, rep: ExecutionReport) -> None:
        """Resolve an order asked about by :meth:`check_unanswered` with the venue's answer.

        A cancel or replace still pending is over (the venue's answer to it was lost, or it
        never arrived); the report then sets the order's status as the venue has it.
        """
        order = self._find(rep.client_order_id, rep.orig_client_order_id, rep.venue_order_id)
        entry = self._asked.pop(order.order_id, None) if order is not None else None
        if order is None or entry is None:
            return
        pending = order.pending
        names = self.venue.request_names
        request = names[Request.NEW]
        if pending is not None and pending.client_order_id == entry[0]:
            request = names[Request(pending.kind)]
            order.status = pending.prev_status
            order.pending = None
            order.text = f"{pending.kind} unanswered by the venue"
            order.ts_last = self.clock.now_ns()
            self._sync_risk(order)
            self._publish(order, f"{pending.kind} unanswered")
        self._alert(
            AlertLevel.WARNING,
            f"the venue's status of {order.client_order_id} resolves the unanswered {request} "
            f"{entry[0]}: {rep.ord_status.name}" + (f" ({rep.text})" if rep.text else ""),
        )

    def _of_order(self, order: Order, client_order_id: str) -> str:
        """Return `` of order X (BUY 2 ESZ6 at 24000 ticks, strategy 1)`` for alerts."""
        px = f" at {order.px_ticks} ticks" if order.px_ticks else ""
        of = (
            f" of order {order.client_order_id}" if client_order_id != order.client_order_id else ""
        )
        return (
            f"{of} ({order.side.name} {order.qty_lots} {self.symbol}{px}, strategy "
            f"{order.strategy_id})"
        )

    # ------------------------------------------------------------------ internals
    def _find(self, clordid: str, orig: str, venue_id: str) -> Order | None:
        return (
            self._by_clordid.get(clordid)
            or (self._by_clordid.get(orig) if orig else None)
            or (self._by_venue_id.get(venue_id) if venue_id else None)
        )

    def _refuse(self, order: Order, reason: str) -> Order:
        order.status = OrdStatus.REJECTED
        order.leaves_qty_lots = 0
        order.text = reason
        self._publish(order, f"refused: {reason}")
        self._alert(AlertLevel.WARNING, f"order refused ({order.client_order_id}): {reason}")
        return order

    def _sync_risk(self, order: Order) -> None:
        # Tell risk what changed since it last counted the order: whether it works (one open
        # order more or less) and its leaves (None: not working, no leaves counted).
        was = self._counted.get(order.order_id)
        leaves = order.leaves_qty_lots if order.status in WORKING else None  # (is_working)
        if leaves != was:
            self.risk.on_working_changed(
                order.strategy_id,
                self.symbol,
                order.side,
                (leaves is not None) - (was is not None),
                (leaves or 0) - (was or 0),
            )
            self._counted[order.order_id] = leaves

    def _publish(self, order: Order, change: str) -> None:
        if not self._order_changed.wanted:  # nobody listens: build no view
            order.published = None
        else:
            view = order.published = order.view()
            self.bus.publish(_order_changed(ts_event=order.ts_last, order=view, change=change))
        if order.status in TERMINAL:
            self._retire(order)
        elif order.order_id not in self.orders:  # a done order a venue report revived
            self.archive.pop(order.order_id, None)
            self._hold(order)

    # ------------------------------------------------------------------ retirement
    def _hold(self, order: Order) -> None:
        """Put an order into the hot structures (``orders``)."""
        if order.order_id not in self.orders:
            held = self._held
            held[order.strategy_id] = held.get(order.strategy_id, 0) + 1
        self.orders[order.order_id] = order

    def _others_hold(self, strategy_id: int) -> bool:
        """Return whether a strategy other than ``strategy_id`` holds open orders here."""
        held = self._held
        return len(held) > 1 or (bool(held) and strategy_id not in held)

    def _retire(self, order: Order) -> None:
        """Move a done order from the hot structures into the archive (bounded)."""
        oid = order.order_id
        if self.orders.pop(oid, None) is None:
            return
        held = self._held
        sid = order.strategy_id
        if held[sid] == 1:
            del held[sid]
        else:
            held[sid] -= 1
        self._counted.pop(oid, None)
        archive = self.archive
        archive[oid] = order
        if len(archive) > self._archive_size:
            self._forget(archive.popitem(last=False)[1])  # O(1): an OrderedDict

    def _forget(self, order: Order) -> None:
        """Drop an order leaving the archive: only a compact record of its ClOrdIDs stays."""
        oid = order.order_id
        by_clordid = self._by_clordid
        ring = self._retired
        size = ring.shape[0]
        for clordid in {*order.chain, order.client_order_id, *self._aliases.pop(oid, ())}:
            if by_clordid.get(clordid) is order:
                del by_clordid[clordid]
            ring[self._retired_n % size] = (hash(clordid), oid, order.strategy_id, int(order.side))
            self._retired_n += 1
        venue_id = order.venue_order_id
        if venue_id and self._by_venue_id.get(venue_id) is order:
            del self._by_venue_id[venue_id]
        exec_ids = self._exec_ids
        for exec_id in self._execs_of.pop(oid, ()):
            seen = exec_ids.get(exec_id)
            if seen is not None and seen[0] == oid:
                del exec_ids[exec_id]

    def _retired_lookup(self, *client_order_ids: str) -> tuple[int, int, int] | None:
        """Return (order id, strategy, side) of a done order beyond the archive, else ``None``.

        A scan of the compact ring (a few hundred µs): only reports of orders the order
        manager no longer holds come here.
        """
        n = min(self._retired_n, self._retired.shape[0])
        if not n:
            return None
        hashes = self._retired[:n, 0]
        for clordid in client_order_ids:
            if clordid:
                hit = np.flatnonzero(hashes == hash(clordid))
                if hit.size:
                    _h, oid, sid, side = self._retired[hit[-1]].tolist()
                    return oid, sid, side
        return None

    def _report_of_unknown(self, rep: ExecutionReport) -> None:
        """Handle a report of an order not held: done long ago (compact memory), or unknown."""
        retired = self._retired_lookup(rep.client_order_id, rep.orig_client_order_id)
        if retired is None:
            self._alert(
                AlertLevel.WARNING,
                f"execution report for an unknown order: ClOrdID={rep.client_order_id!r} "
                f"OrigClOrdID={rep.orig_client_order_id!r} OrderID={rep.venue_order_id!r} "
                f"ExecType={rep.exec_type.name} ExecID={rep.exec_id!r}",
            )
            return
        oid, strategy_id, side = retired
        if rep.exec_type not in _FILL_TYPES or rep.resent or rep.last_qty_lots <= 0:
            # Old news about a done order (a resend after a restart): quiet, counted.
            self.duplicates_ignored += 1
            log.info(
                "%s: %s report for %s, an order done long ago, ignored (PossDupFlag=%s)",
                self.symbol,
                rep.exec_type.name,
                rep.client_order_id,
                rep.poss_dup,
            )
            return
        # A fill not flagged as resent, for an order done before the archive's horizon: its
        # ExecIDs are no longer held, so it may be new. A fill is never dropped: booked, said.
        self.risk.on_fill(strategy_id, self.symbol, Side(side), rep.last_qty_lots)
        self.bus.publish(
            _order_filled(
                ts_event=rep.ts_event or self.clock.now_ns(),
                order_id=oid,
                client_order_id=rep.client_order_id,
                venue_order_id=rep.venue_order_id,
                exec_id=rep.exec_id,
                strategy_id=strategy_id,
                symbol=self.symbol,
                side=Side(side),
                last_px_ticks=rep.last_px_ticks,
                last_qty_lots=rep.last_qty_lots,
                leaves_qty_lots=rep.leaves_qty_lots,
                ts_recv=rep.ts_recv,
            )
        )
        self._alert(
            AlertLevel.ERROR,
            f"fill ExecID {rep.exec_id!r} for {rep.client_order_id}, an order done more than "
            f"{self._archive_size:,} orders ago: booked ({rep.last_qty_lots} lots at "
            f"{rep.last_px_ticks} ticks); if the venue sent it before, `qwconsole reconcile` "
            "shows the difference",
        )

    def _alert(self, level: AlertLevel, text: str) -> None:
        log.log(int(level), "%s: %s", self.symbol, text, extra=ALERTED)
        self.bus.publish(Alert(ts_event=self.clock.now_ns(), level=level, source="oms", text=text))


def _venue_lost(order: Order, rep: ExecutionReport, new: OrdStatus) -> bool:
    """Return whether ``rep`` says the venue no longer knows an order it had acknowledged.

    A status request answered "unknown" (rejected) for a working, acknowledged order: the venue
    lost it (a venue restart); the order cannot trade any more.
    """
    return (
        rep.exec_type is ExecType.ORDER_STATUS
        and new is OrdStatus.REJECTED
        and bool(order.ts_acked)
        and not order.is_terminal
    )
