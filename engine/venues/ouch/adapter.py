# SPDX-License-Identifier: MIT
"""The OUCH venue adapter: the order manager's requests as OUCH 5.0 messages, and back.

:class:`OuchVenue` is an :class:`engine.oms.venue.Venue`. A new order is an Enter Order, a
cancel a Cancel Order (quantity 0), a replace a Replace Order; the answers (Order Accepted,
Order Replaced, Order Executed, Order Canceled, Rejected) become the order manager's own
:class:`ExecutionReport` and :class:`CancelReject`, as a FIX venue's would.

Identities: OUCH names an order by its UserRefNum, which only ever increases over the day and
is kept across restarts by the session's state (``FileClientState``). The adapter takes one
for every ClOrdID the order manager asks for, and the ClOrdID *is* it: ``O<UserRefNum>``.
Orders of an earlier run of the engine (restored from the journal) are thus known by their
ClOrdIDs, without a table to persist.

OUCH reports are incremental (an execution says how many shares traded, not the order's
totals); the adapter keeps each order's quantities to state them as the order manager expects,
and asks the order manager for an order it does not know (one from before a restart).

OUCH has no order status request: the session layer replays every message the engine did not
take (re-login with the next expected sequence number), which is what a status request is for
on FIX. A status request is answered from what the adapter knows, marked as such.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from engine.clock import Clock
from engine.enums import ExecType, OrdStatus, OrdType, Side
from engine.events import Event, VenueLinkChanged
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest
from engine.oms.venue import (
    CancelReject,
    ExecutionReport,
    RejectReason,
    ReportSink,
    Request,
)
from engine.venues.ouch.codes import (
    IOC_REMAINDER,
    MARKET_PRICE,
    OUCH_TO_SIDE,
    SELF_MATCH,
    SIDE_TO_OUCH,
    TIF_TO_OUCH,
    cancel_reason_text,
    reject_reason_text,
)
from engine.venues.ouch.messages import (
    AiqCanceled,
    BrokenTrade,
    CancelOrder,
    OrderAccepted,
    OrderCanceled,
    OrderExecuted,
    OrderReplaced,
    OuchMessage,
    PriceScale,
    Rejected,
    ReplaceOrder,
    TagValue,
    TradeCorrection,
    encode_options,
)
from engine.venues.ouch.messages import CancelReject as OuchCancelReject

log = get_log(__name__)

#: What alerts call the requests on an OUCH venue.
OUCH_REQUEST_NAMES: Mapping[Request, str] = {
    Request.NEW: "Enter Order",
    Request.CANCEL: "Cancel Order",
    Request.REPLACE: "Replace Order",
    Request.STATUS: "status request (answered from the adapter: OUCH has none)",
}

#: ClOrdIDs of this venue: ``O`` and the UserRefNum.
PREFIX = "O"


class OrderEntry(Protocol):
    """What the adapter needs of its OUCH session (``engine.venues.ouch``'s client)."""

    @property
    def logged_in(self) -> bool:
        """Return whether the session is logged in (a message sent now reaches the venue)."""
        ...

    def take_user_ref_num(self) -> int:
        """Return the next UserRefNum, persisted before it is returned."""
        ...

    def send(self, message: OuchMessage) -> None:
        """Send ``message`` as Unsequenced Data."""
        ...

    def enter_order(
        self,
        user_ref_num: int,
        *,
        side: str,
        quantity: int,
        symbol: str,
        price: int,
        time_in_force: str,
        cl_ord_id: str,
        appendage: bytes,
    ) -> None:
        """Send an Enter Order (the hot path: no message object is built)."""
        ...


@dataclass(slots=True)
class _Live:
    """One order as the adapter knows it: quantities in lots, prices in ticks."""

    symbol: str
    side: Side
    ord_type: OrdType
    qty: int  # total ordered (cum + leaves)
    cum: int
    leaves: int
    px: int
    notional: int = 0  # sum of fill price x quantity, for AvgPx
    cancel_id: str = ""  # the ClOrdID of a cancel request on its way


def user_ref_num(client_order_id: str) -> int | None:
    """Return the UserRefNum of one of this venue's ClOrdIDs, ``None`` for another's."""
    if client_order_id.startswith(PREFIX) and client_order_id[1:].isdigit():
        return int(client_order_id[1:])
    return None


class OuchVenue:
    """Venue adapter speaking OUCH 5.0 through an :class:`OrderEntry` session.

    Parameters
    ----------
    clock : Clock
        Receive times of reports.
    name : str
        The venue's name for displays and the journal.
    defer : Callable
        Schedules a callable on the engine loop (``loop.call_soon``): refusals are delivered
        later, never inside the call that caused them.
    firm : str
        The Firm appendage of Enter Orders ("" for none).
    publish : Callable | None
        Where the link's :class:`VenueLinkChanged` goes (the engine bus).
    """

    def __init__(
        self,
        clock: Clock,
        *,
        name: str = "OUCH",
        defer: Callable[[Callable[[], object]], object],
        firm: str = "",
        publish: Callable[[Event], object] | None = None,
    ) -> None:
        self.clock = clock
        self._name = name
        self.defer = defer
        self.publish = publish
        self._appendage = encode_options((TagValue.of("Firm", firm),)) if firm else b""
        self._entry: OrderEntry | None = None
        self._sinks: dict[str, ReportSink] = {}
        self._scales: dict[str, PriceScale] = {}
        self._live: dict[int, _Live] = {}
        #: A replace on its way, by its UserRefNum: (the order's ClOrdID, the request's).
        self._replacing: dict[int, tuple[str, str]] = {}
        self.reports_unmatched = 0

    # ------------------------------------------------------------------ venue
    @property
    def name(self) -> str:
        """Return the venue's name."""
        return self._name

    @property
    def request_names(self) -> Mapping[Request, str]:
        """Return the OUCH names of the requests, for alerts."""
        return OUCH_REQUEST_NAMES

    def bind(self, entry: OrderEntry) -> None:
        """Send through ``entry`` (the OUCH session) from now on."""
        self._entry = entry

    def route(self, instrument: Instrument, sink: ReportSink) -> None:
        """Deliver the reports of ``instrument``'s orders to ``sink``."""
        self._scales[instrument.symbol] = PriceScale(instrument)  # refuses an unfit grid
        self._sinks[instrument.symbol] = sink

    def new_client_order_id(self) -> str:
        """Return ``O<UserRefNum>`` with a UserRefNum taken from the session's state."""
        if self._entry is None:
            raise RuntimeError(f"OUCH venue {self._name}: no session bound")
        return f"{PREFIX}{self._entry.take_user_ref_num()}"

    def submit(self, order: Order) -> None:
        """Send an Enter Order."""
        ref = user_ref_num(order.client_order_id)
        scale = self._scales[order.symbol]
        if ref is None or not self._can_send(Request.NEW, order.symbol, order.client_order_id):
            return
        self._live[ref] = _Live(
            order.symbol,
            order.side,
            order.ord_type,
            order.qty_lots,
            0,
            order.qty_lots,
            order.px_ticks,
        )
        market = order.ord_type is OrdType.MARKET
        assert self._entry is not None
        self._entry.enter_order(
            ref,
            side=SIDE_TO_OUCH[order.side],
            quantity=scale.quantity_from_lots(order.qty_lots),
            symbol=order.symbol,
            price=MARKET_PRICE if market else scale.price_from_ticks(order.px_ticks),
            time_in_force=TIF_TO_OUCH.get(order.time_in_force, "0"),
            cl_ord_id=order.client_order_id,
            appendage=self._appendage,
        )

    def cancel(self, order: Order, request: PendingRequest) -> None:
        """Send a Cancel Order (quantity 0) for the order's current UserRefNum."""
        ref = user_ref_num(order.client_order_id)
        if ref is None or not self._can_send(Request.CANCEL, order.symbol, request.client_order_id):
            return
        self._known(ref, order.client_order_id, order.symbol).cancel_id = request.client_order_id
        assert self._entry is not None
        self._entry.send(CancelOrder(user_ref_num=ref, quantity=0))

    def replace(self, order: Order, request: PendingRequest) -> None:
        """Send a Replace Order: the request's ClOrdID's UserRefNum, its price and quantity.

        OUCH's Quantity is the shares to be open after the replace; the order manager's, the
        order's total: the filled quantity is taken off.
        """
        orig = user_ref_num(order.client_order_id)
        new = user_ref_num(request.client_order_id)
        if orig is None or new is None:
            return
        if not self._can_send(Request.REPLACE, order.symbol, request.client_order_id):
            return
        live = self._known(orig, order.client_order_id, order.symbol)
        scale = self._scales[order.symbol]
        self._replacing[new] = (order.client_order_id, request.client_order_id)
        assert self._entry is not None
        self._entry.send(
            ReplaceOrder(
                orig_user_ref_num=orig,
                user_ref_num=new,
                quantity=scale.quantity_from_lots(max(request.qty_lots - live.cum, 0)),
                price=scale.price_from_ticks(request.px_ticks),
                time_in_force=TIF_TO_OUCH.get(order.time_in_force, "0"),
                cl_ord_id=request.client_order_id,
            )
        )

    def request_status(self, order: Order) -> None:
        """Answer from what the adapter knows (OUCH has no status request; see the module)."""
        ref = user_ref_num(order.client_order_id)
        sink = self._sinks.get(order.symbol)
        if ref is None or sink is None:
            return
        live = self._known(ref, order.client_order_id, order.symbol)
        rep = self._report(
            ref,
            live,
            ExecType.ORDER_STATUS,
            order.client_order_id,
            text="status as the OUCH adapter knows it",
        )
        self.defer(lambda: sink.on_execution_report(rep))

    def _can_send(self, request: Request, symbol: str, client_order_id: str) -> bool:
        if self._entry is not None and self._entry.logged_in:
            return True
        sink = self._sinks[symbol]
        text = f"the OUCH session of {self._name} is not logged in"
        self.defer(
            lambda: sink.on_request_rejected(
                request, client_order_id, text, reason=RejectReason.NOT_SENT
            )
        )
        return False

    def _known(self, ref: int, client_order_id: str, symbol: str) -> _Live:
        """Return the order of ``ref``, from the order manager if this run never saw it."""
        live = self._live.get(ref)
        if live is None:
            order = self._sinks[symbol].get(client_order_id) if symbol in self._sinks else None
            if order is None:
                live = _Live(symbol, Side.BUY, OrdType.LIMIT, 0, 0, 0, 0)
            else:
                live = _Live(
                    order.symbol,
                    order.side,
                    order.ord_type,
                    order.cum_qty_lots + order.leaves_qty_lots,
                    order.cum_qty_lots,
                    order.leaves_qty_lots,
                    order.px_ticks,
                    order.notional_ticks_lots,
                )
            self._live[ref] = live
        return live

    # ------------------------------------------------------------------ link
    def link_changed(
        self, up: bool, *, detail: str = "", state: str = "", next_out: int = 0, next_in: int = 0
    ) -> VenueLinkChanged:
        """Tell the engine the session went up or down (the desk reconciles on up)."""
        event = VenueLinkChanged(
            ts_event=self.clock.now_ns(),
            venue=self._name,
            protocol="OUCH",
            up=up,
            detail=detail,
            state=state,
            next_out=next_out,
            next_in=next_in,
        )
        if self.publish is not None:
            self.publish(event)
        return event

    # ------------------------------------------------------------------ reports
    def on_message(self, message: OuchMessage, *, resent: bool = False) -> None:
        """Apply one outbound message of the venue (``resent``: from a replay).

        Raises nothing for a message it cannot place: it is logged and counted in
        :attr:`reports_unmatched`.
        """
        ref = getattr(message, "user_ref_num", None)
        if ref is None:
            log.info("OUCH %s: %s", self._name, message)
            return
        if isinstance(message, OrderReplaced):
            self._replaced(message, resent)
            return
        if isinstance(message, Rejected) and ref in self._replacing:
            orig_id, new_id = self._replacing.pop(ref)
            self._deliver_reject(orig_id, new_id, message)
            return
        live = self._live.get(ref)
        clordid = f"{PREFIX}{ref}"
        if live is None:
            live = self._find(ref, clordid)
            if live is None:
                self.reports_unmatched += 1
                log.warning(
                    "OUCH %s: %s for unknown UserRefNum %d ignored",
                    self._name,
                    type(message).__name__,
                    ref,
                )
                return
        rep = self._apply(ref, live, message, resent)
        if live.leaves == 0:  # done (filled, canceled, rejected): out of the working set; a
            self._live.pop(ref, None)  # late message finds it through the order manager
        if rep is not None:
            self._deliver(live.symbol, rep)

    def _apply(
        self, ref: int, live: _Live, message: OuchMessage, resent: bool
    ) -> ExecutionReport | None:
        # The order manager's report of one message about a known order (None: no report).
        clordid = f"{PREFIX}{ref}"
        rep: ExecutionReport | None = None
        if isinstance(message, OrderAccepted):
            rep = self._accepted(ref, live, message, resent)
        elif isinstance(message, OrderExecuted):
            rep = self._executed(ref, live, message, resent)
        elif isinstance(message, OrderCanceled):
            rep = self._canceled(ref, live, message, resent)
        elif isinstance(message, Rejected):
            live.leaves = 0
            rep = self._report(
                ref,
                live,
                ExecType.REJECTED,
                clordid,
                text=f"rejected by the venue: {reject_reason_text(message.reason)}",
                resent=resent,
            )
        elif isinstance(message, AiqCanceled):  # self-match prevention took shares off
            rep = self._canceled(
                ref,
                live,
                OrderCanceled(
                    timestamp=message.timestamp,
                    user_ref_num=ref,
                    quantity=message.decrement_shares,
                    reason=SELF_MATCH,
                ),
                resent,
            )
        elif isinstance(message, BrokenTrade | TradeCorrection):
            rep = self._busted(ref, live, message, resent)
        elif isinstance(message, OuchCancelReject) and live.cancel_id:
            self._cancel_refused(ref, live)
        else:
            log.info("OUCH %s: %s", self._name, message)
        return rep

    def _busted(
        self, ref: int, live: _Live, m: BrokenTrade | TradeCorrection, resent: bool
    ) -> ExecutionReport:
        # The venue broke or corrected an execution: the order manager alerts on it.
        scale = self._scales[live.symbol]
        if isinstance(m, TradeCorrection):
            et, text = ExecType.TRADE_CORRECT, f"execution M{m.match_number} corrected"
            last_qty, last_px = (
                scale.lots_from_quantity(m.quantity),
                scale.ticks_from_price(m.price),
            )
        else:
            et, text = ExecType.TRADE_CANCEL, f"execution M{m.match_number} broken ({m.reason})"
            last_qty = last_px = 0
        return self._report(
            ref,
            live,
            et,
            f"{PREFIX}{ref}",
            exec_id=f"M{m.match_number}",
            last_qty=last_qty,
            last_px=last_px,
            text=text,
            resent=resent,
        )

    def _cancel_refused(self, ref: int, live: _Live) -> None:
        # A Cancel Order the venue cannot carry out now (the order is in a cross).
        sink = self._sinks[live.symbol]
        rej = CancelReject(
            client_order_id=live.cancel_id,
            orig_client_order_id=f"{PREFIX}{ref}",
            ord_status=_open_status(live),
            text="cancel refused by the venue: the order is in a cross",
            ts_recv=self.clock.now_ns(),
        )
        live.cancel_id = ""
        self.defer(lambda: sink.on_cancel_reject(rej))

    def _find(self, ref: int, clordid: str) -> _Live | None:
        for symbol, sink in self._sinks.items():
            if sink.get(clordid) is not None:
                return self._known(ref, clordid, symbol)
        return None

    def _accepted(self, ref: int, live: _Live, m: OrderAccepted, resent: bool) -> ExecutionReport:
        scale = self._scales[live.symbol]
        live.leaves = scale.lots_from_quantity(m.quantity) if m.order_state == "L" else 0
        live.qty = live.cum + live.leaves if m.order_state == "L" else live.qty
        if m.price != MARKET_PRICE:
            live.px = scale.ticks_from_price(m.price)
        live.side = OUCH_TO_SIDE.get(m.side, live.side)
        et = ExecType.NEW if m.order_state == "L" else ExecType.CANCELED
        text = "" if m.order_state == "L" else "accepted dead (OrderState D)"
        return self._report(
            ref,
            live,
            et,
            f"{PREFIX}{ref}",
            text=text,
            resent=resent,
            venue_order_id=str(m.order_reference_number),
        )

    def _executed(self, ref: int, live: _Live, m: OrderExecuted, resent: bool) -> ExecutionReport:
        scale = self._scales[live.symbol]
        qty = scale.lots_from_quantity(m.quantity)
        px = scale.ticks_from_price(m.price)
        live.cum += qty
        live.leaves = max(live.leaves - qty, 0)
        live.notional += qty * px
        return self._report(
            ref,
            live,
            ExecType.TRADE,
            f"{PREFIX}{ref}",
            last_qty=qty,
            last_px=px,
            exec_id=f"M{m.match_number}",
            maker=m.liquidity_flag == "A",
            resent=resent,
        )

    def _canceled(self, ref: int, live: _Live, m: OrderCanceled, resent: bool) -> ExecutionReport:
        qty = self._scales[live.symbol].lots_from_quantity(m.quantity)
        live.leaves = max(live.leaves - qty, 0)
        text = cancel_reason_text(m.reason)
        if live.leaves:  # part of the order canceled: the rest still works
            live.qty = live.cum + live.leaves
            return self._report(
                ref,
                live,
                ExecType.RESTATED,
                f"{PREFIX}{ref}",
                resent=resent,
                text=f"{qty} lots canceled by the venue: {text}",
            )
        clordid, orig = f"{PREFIX}{ref}", ""
        if live.cancel_id:
            clordid, orig, live.cancel_id = live.cancel_id, f"{PREFIX}{ref}", ""
        et = ExecType.EXPIRED if m.reason == IOC_REMAINDER else ExecType.CANCELED
        return self._report(ref, live, et, clordid, orig=orig, text=text, resent=resent)

    def _replaced(self, m: OrderReplaced, resent: bool) -> None:
        pending = self._replacing.pop(m.user_ref_num, None)
        orig_id = pending[0] if pending else f"{PREFIX}{m.orig_user_ref_num}"
        new_id = pending[1] if pending else f"{PREFIX}{m.user_ref_num}"
        old = self._live.pop(m.orig_user_ref_num, None) or self._find(m.orig_user_ref_num, orig_id)
        if old is None:
            self.reports_unmatched += 1
            log.warning(
                "OUCH %s: OrderReplaced of unknown UserRefNum %d ignored",
                self._name,
                m.orig_user_ref_num,
            )
            return
        self._live.pop(m.orig_user_ref_num, None)
        scale = self._scales[old.symbol]
        old.leaves = scale.lots_from_quantity(m.quantity) if m.order_state == "L" else 0
        old.qty = old.cum + old.leaves
        old.px = scale.ticks_from_price(m.price)
        self._live[m.user_ref_num] = old
        rep = self._report(
            m.user_ref_num,
            old,
            ExecType.REPLACED,
            new_id,
            orig=orig_id,
            venue_order_id=str(m.order_reference_number),
            resent=resent,
        )
        self._deliver(old.symbol, rep)

    def _deliver_reject(self, orig_id: str, new_id: str, m: Rejected) -> None:
        ref = user_ref_num(orig_id)
        live = None if ref is None else self._live.get(ref) or self._find(ref, orig_id)
        if live is None or ref is None:
            log.warning("OUCH %s: Rejected replace %s of an unknown order", self._name, new_id)
            return
        sink = self._sinks[live.symbol]
        rej = CancelReject(
            client_order_id=new_id,
            orig_client_order_id=orig_id,
            ord_status=_open_status(live) if live.leaves else OrdStatus.CANCELED,
            response_to_replace=True,
            text=f"replace rejected by the venue: {reject_reason_text(m.reason)}",
            ts_recv=self.clock.now_ns(),
        )
        if not live.leaves:  # a done order found again: not back in the working set
            self._live.pop(ref, None)
        self.defer(lambda: sink.on_cancel_reject(rej))

    def _report(
        self,
        ref: int,
        live: _Live,
        et: ExecType,
        clordid: str,
        *,
        orig: str = "",
        venue_order_id: str = "",
        last_qty: int = 0,
        last_px: int = 0,
        exec_id: str = "",
        maker: bool = False,
        text: str = "",
        resent: bool = False,
    ) -> ExecutionReport:
        if et in (ExecType.CANCELED, ExecType.EXPIRED, ExecType.REJECTED):
            status = {
                ExecType.CANCELED: OrdStatus.CANCELED,
                ExecType.EXPIRED: OrdStatus.EXPIRED,
                ExecType.REJECTED: OrdStatus.REJECTED,
            }[et]
        elif live.leaves == 0 and live.cum:
            status = OrdStatus.FILLED
        else:
            status = _open_status(live)
        return ExecutionReport(
            client_order_id=clordid,
            orig_client_order_id=orig,
            venue_order_id=venue_order_id,
            exec_id=exec_id or (f"R{ref}-{et.name}" if et is not ExecType.ORDER_STATUS else ""),
            exec_type=et,
            ord_status=status,
            side=live.side,
            leaves_qty_lots=live.leaves if status not in _DONE else 0,
            cum_qty_lots=live.cum,
            last_qty_lots=last_qty,
            last_px_ticks=last_px,
            order_qty_lots=live.qty,
            px_ticks=live.px,
            text=text,
            poss_resend=resent,
            ts_recv=self.clock.now_ns(),
            symbol=live.symbol,
            ord_type=live.ord_type,
            avg_px_ticks=live.notional / live.cum if live.cum else 0.0,
            maker=maker,
        )

    def _deliver(self, symbol: str, rep: ExecutionReport) -> None:
        sink = self._sinks.get(symbol)
        if sink is None:
            self.reports_unmatched += 1
            return
        sink.on_execution_report(rep)


def _open_status(live: _Live) -> OrdStatus:
    # The status of an order still open at the venue: partly filled or not.
    return OrdStatus.PARTIALLY_FILLED if live.cum else OrdStatus.NEW


_DONE = (OrdStatus.CANCELED, OrdStatus.EXPIRED, OrdStatus.REJECTED, OrdStatus.FILLED)
