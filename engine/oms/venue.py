# SPDX-License-Identifier: MIT
"""What the order manager needs of a venue, and what a venue reports back.

The order manager is exchange-independent; a venue adapter (FIX to an exchange, the built-in
simulator, the backtester's queue simulator) turns its requests into the venue's messages, with
the venue's tags, id formats and quirks, and turns the venue's answers into the reports below.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from engine.enums import ExecType, OrdStatus, OrdType, Side
from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest

_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def clordid_prefix(letter: str, now_ns: int) -> str:
    """Return a ClOrdID prefix for a venue adapter starting now: ``letter``, 6 base-36 digits, -.

    The digits are the start's millisecond (they repeat after 25 days). With the adapter's
    counter after it, an engine restarted within the same second (a supervisor, a crash loop:
    a start takes far longer than a millisecond) never repeats a ClOrdID it sent before — the
    venue would refuse it, and the order manager refuses one it has seen today. The same
    clock gives the same prefix (deterministic runs on a test clock).
    """
    v = now_ns // 1_000_000 % 36**6
    digits = ""
    for _ in range(6):
        v, r = divmod(v, 36)
        digits = _B36[r] + digits
    return f"{letter}{digits}-"


class Request(StrEnum):
    """What the order manager asks of a venue (values as ``PendingRequest.kind`` spells them)."""

    NEW = "new"
    CANCEL = "cancel"
    REPLACE = "replace"
    STATUS = "status"


class RejectReason(StrEnum):
    """Why a venue adapter hands a request back without the venue having acted on it."""

    #: The link to the venue was down: the engine never sent it (logged, no alert).
    NOT_SENT = "not sent"
    #: The protocol's session layer refused the message (FIX Reject <3>), or it was never
    #: delivered (a resend asked for it and it was gap-filled).
    SESSION = "session reject"
    #: The venue's application refused the message itself (FIX BusinessMessageReject <j>).
    BUSINESS = "business message reject"


#: Venue-neutral names of the requests, for alerts (a venue may name its own messages).
REQUEST_NAMES: Mapping[Request, str] = {
    Request.NEW: "new order",
    Request.CANCEL: "cancel request",
    Request.REPLACE: "replace request",
    Request.STATUS: "status request",
}


class Venue(Protocol):
    """An order destination as seen by ``OrderManager``."""

    @property
    def name(self) -> str:
        """Return the venue's name for displays and the journal."""
        ...

    @property
    def request_names(self) -> Mapping[Request, str]:
        """Return how alerts name each request on this venue (its own messages' names)."""
        ...

    def route(self, instrument: Instrument, sink: "ReportSink") -> None:
        """Deliver the reports of ``instrument``'s orders to ``sink`` (its order manager)."""
        ...

    def new_client_order_id(self) -> str:
        """Return a ClOrdID <11> the venue accepts and has not seen today."""
        ...

    def submit(self, order: Order) -> None:
        """Send ``order`` to the venue (FIX: a NewOrderSingle <D>)."""
        ...

    def cancel(self, order: Order, request: PendingRequest) -> None:
        """Ask the venue to cancel ``order`` (the request's id: ``request.client_order_id``)."""
        ...

    def replace(self, order: Order, request: PendingRequest) -> None:
        """Ask the venue to change ``order`` to the request's quantity and price."""
        ...

    def request_status(self, order: Order) -> None:
        """Ask the venue for the order's status (answered by an ``ExecutionReport``)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionReport:
    """An ExecutionReport <8>, normalized: prices in ticks, quantities in lots."""

    client_order_id: str  # ClOrdID <11>
    orig_client_order_id: str = ""  # OrigClOrdID <41>
    venue_order_id: str = ""  # OrderID <37>
    exec_id: str = ""  # ExecID <17>
    exec_type: ExecType
    ord_status: OrdStatus
    side: Side | None = None
    leaves_qty_lots: int  # LeavesQty <151>
    cum_qty_lots: int  # CumQty <14>
    last_qty_lots: int = 0  # LastQty <32>
    last_px_ticks: int = 0  # LastPx <31>
    order_qty_lots: int = 0  # OrderQty <38>, 0 when absent
    px_ticks: int = 0  # Price <44>, 0 when absent
    text: str = ""  # Text <58>
    poss_resend: bool = False  # PossResend <97>
    poss_dup: bool = False  # PossDupFlag <43>: the session resent it (it may be old news)
    ts_event: int = 0  # TransactTime <60>, ns
    ts_recv: int = 0  # local receive time, ns
    symbol: str = ""  # Symbol <55>, "" when the adapter leaves it out
    ord_type: OrdType | None = None  # OrdType <40>
    avg_px_ticks: float = 0.0  # AvgPx <6>, in ticks
    maker: bool = False  # a fill of a resting order (LastLiquidityInd <851> = 1)
    #: The venue's client the report is addressed to, where one venue serves several (the
    #: simulator's owners); 0 otherwise.
    client: int = 0

    @property
    def resent(self) -> bool:
        """Return whether the report may repeat one already received (43=Y or 97=Y)."""
        return self.poss_dup or self.poss_resend


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelReject:
    """An OrderCancelReject <9>."""

    client_order_id: str  # ClOrdID <11> of the rejected cancel/replace request
    orig_client_order_id: str = ""  # OrigClOrdID <41>
    venue_order_id: str = ""  # OrderID <37>
    ord_status: OrdStatus | None = None  # OrdStatus <39> of the order after the reject
    response_to_replace: bool = False  # CxlRejResponseTo <434> = 2
    reason: int | None = None  # CxlRejReason <102>
    text: str = ""  # Text <58>
    ts_recv: int = 0
    client: int = 0  # as ExecutionReport.client


class ReportSink(Protocol):
    """What a venue adapter calls on the order manager of an instrument (see ``Venue.route``)."""

    def on_execution_report(self, rep: ExecutionReport) -> object:
        """Apply an execution report."""
        ...

    def get(self, client_order_id: str) -> Order | None:
        """Return the order that has (or had) this ClOrdID, or ``None``.

        For adapters whose venue reports incrementally (OUCH: shares executed, not totals):
        an order from before a restart of the engine is known here, not in the adapter.
        """
        ...

    def on_cancel_reject(self, rej: CancelReject) -> object:
        """Apply a cancel or replace reject."""
        ...

    def on_request_rejected(
        self,
        request: Request | None,
        client_order_id: str,
        text: str,
        *,
        reason: RejectReason,
        detail: str = "",
    ) -> object:
        """Apply a request handed back (``request`` ``None``: a message that is no request).

        ``detail``: the venue's words for it (reason codes, the tag named, the message).
        """
        ...
