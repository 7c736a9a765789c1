# SPDX-License-Identifier: MIT
"""The simulated exchange: one matcher per instrument, client orders, synthetic flow, market data.

:class:`SimExchange` knows nothing of FIX: a FIX acceptor (``engine.sim.fix_app``) or an
in-process caller submits client orders and gets the order manager's own report types back
(``engine.oms.venue.ExecutionReport`` and ``CancelReject``, addressed to a client by
``client``: acks, fills, cancels, replaces and rejects with reasons). Simulated participants
— a random walk of the fair price, passive orders around it, cancels and aggressive orders at
configurable rates — make prices move and fill resting client orders. Every book change and
trade is also queued as ``L2_EVENT_DTYPE`` rows for market data (FIX or in-process).

Deterministic: with the same seed and the same sequence of calls and times, the same fills.

Why one long module: :class:`SimExchange` is one venue; client orders, synthetic flow and
playback all go through the same books, order maps and report builders (``_run``,
``_report``), and keeping them in one class is what keeps the replay deterministic.
"""

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from engine.enums import ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.events import fast_constructor
from engine.instruments import Instrument
from engine.matching.matcher import (
    EV_KIND,
    EV_LEAVES,
    EV_LIQUIDITY,
    EV_ORDER_ID,
    EV_PX,
    EV_QTY,
    EV_REASON,
    Matcher,
)
from engine.oms.order import TERMINAL
from engine.oms.venue import CancelReject, ExecutionReport
from engine.types import (
    BUY,
    CMD_CANCEL,
    CMD_NEW,
    CMD_REPLACE,
    EXEC_CANCELED,
    EXEC_EXPIRED,
    EXEC_NEW,
    EXEC_REJECTED,
    EXEC_REPLACED,
    EXEC_TRADE,
    L2_EVENT_DTYPE,
    L2_SET,
    L2_TRADE,
    LIQ_TAKER,
    LV_QTY,
    ORD_LIMIT,
    ORD_MARKET,
    REASON_BOOK_FULL,
    REASON_DUPLICATE_ID,
    REASON_FOK_UNFILLABLE,
    REASON_IOC_REMAINDER,
    REASON_NONE,
    REASON_PRICE_RANGE,
    REASON_REQUESTED,
    REASON_SELF_TRADE,
    REASON_UNKNOWN_ORDER,
    SELL,
    STP_CANCEL_TAKER,
)

_DONE = TERMINAL  # an order in one of these states leaves the exchange

#: The exchange answers in the order manager's own report types (built fast: one per event).
_report = fast_constructor(ExecutionReport)


#: A client report as the matching step leaves it, before it is an ``ExecutionReport``:
#: ``(order, exec_type, event, exec_n, status, cum, notional)`` -- the order, what happened,
#: the matcher's event (``EV_*`` positions; None for a status), the number of its ExecID
#: and the order's status, filled lots and notional right after the event (a command may
#: report one order several times). :meth:`SimExchange.report_of` makes the report;
#: ``engine.sim.fix_app`` writes FIX straight from it (no report object per event).
RawReport: TypeAlias = tuple["SimOrder", ExecType, Sequence[int] | None, int, OrdStatus, int, int]
#: Positions in a :data:`RawReport`.
RR_ORDER, RR_EXEC_TYPE, RR_EVENT, RR_EXEC_N, RR_STATUS, RR_CUM, RR_NOTIONAL = range(7)


def id_epoch(now_ns: int) -> str:
    """Return an id prefix unique to a venue run started at ``now_ns`` (base 36 milliseconds).

    Two runs share an epoch only if they start within the same millisecond.
    """
    n = now_ns // 1_000_000
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out.upper()


class OrderFeed(Protocol):
    """What sees every command the exchange matched (``SimExchange.order_feed``)."""

    def on_command(self, locate: int, ts: int, oid: int, events: Sequence[Sequence[int]]) -> None:
        """Take the matcher's events of one command on order ``oid`` (book ``locate - 1``)."""
        ...


class Playback(Protocol):
    """A recorded market played into the exchange (``engine.sim.playback.TickPlayback``)."""

    def step(self, now_ns: int) -> list["ExecutionReport"]:
        """Play everything due by ``now_ns``; return the client reports it caused."""
        ...


_EXEC_TYPES = {EXEC_REPLACED: ExecType.REPLACED, EXEC_NEW: ExecType.NEW}
#: Report statuses with no quantity left open.
_NO_LEAVES = frozenset(
    {OrdStatus.FILLED, OrdStatus.CANCELED, OrdStatus.EXPIRED, OrdStatus.REJECTED}
)
_SIDES = {int(s): s for s in Side}
_ORD_TYPES = {int(t): t for t in OrdType}

#: Finished client orders the exchange remembers (status requests, "too late to cancel"); older
#: ones are forgotten, oldest first, so a day of orders keeps the simulator's memory bounded.
DONE_MEMORY = 20_000

#: Owner id of the simulated participants (they never self-trade among themselves).
FLOW_OWNER = -1

#: Text <58> of a report, by the matcher's reason: every reject, cancel and expiry says why.
_REASON_TEXT = {
    REASON_NONE: "",  # an ack, a fill, a replace: nothing to explain (was shown as "reason 0")
    REASON_UNKNOWN_ORDER: "unknown order",
    REASON_DUPLICATE_ID: "duplicate order id",
    REASON_BOOK_FULL: "canceled: the book is full, no room to rest the order",
    REASON_PRICE_RANGE: "price outside the allowed range",
    REASON_IOC_REMAINDER: "IOC remainder canceled",
    REASON_FOK_UNFILLABLE: "FOK could not be filled in full",
    REASON_SELF_TRADE: "canceled by self-trade prevention: it would have traded with your own "
    "resting order",
    REASON_REQUESTED: "canceled on request",
}
#: Text of the unfilled rest of a market order (it expires like an IOC's).
_MARKET_REMAINDER_TEXT = "market order remainder canceled: no more liquidity on the other side"
#: Text of the cancels of :meth:`SimExchange.cancel_owner` when a client's session drops.
DISCONNECT_TEXT = "canceled: the client's session disconnected (cancel on disconnect)"
#: Text of the cancels of every working client order when the exchange closes.
CLOSE_TEXT = "canceled: the exchange simulator stopped"


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowConfig:
    """Simulated participants of one instrument.

    Parameters
    ----------
    events_per_second : float
        Rate of participant actions (orders and cancels).
    volatility_ticks : float
        Standard deviation of the fair price's random walk over one second, ticks.
    passive_share, cancel_share : float
        Shares of actions that add a passive order / cancel one (the rest take liquidity).
    max_qty_lots : int
        Largest participant order.
    depth_ticks : int
        Passive orders rest up to this far from the fair price.
    max_resting : int
        Most participant orders resting in the book at once: a new passive order beyond it
        first cancels a random resting one (the fair price wanders; without it, orders left
        behind would pile up in the book all day).
    """

    events_per_second: float = 200.0
    volatility_ticks: float = 2.0
    passive_share: float = 0.6
    cancel_share: float = 0.3
    max_qty_lots: int = 10
    depth_ticks: int = 10
    max_resting: int = 2_000

    def __post_init__(self) -> None:
        if self.events_per_second < 0 or self.volatility_ticks < 0:
            raise ValueError("FlowConfig: rates and volatility must be >= 0")
        if not 0 <= self.passive_share + self.cancel_share <= 1:
            raise ValueError("FlowConfig: passive_share + cancel_share must be within 0..1")
        if self.max_qty_lots < 1 or self.depth_ticks < 1 or self.max_resting < 1:
            raise ValueError("FlowConfig: max_qty_lots, depth_ticks and max_resting must be >= 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class SimInstrument:
    """An instrument listed on the simulator, with its price range and its flow."""

    instrument: Instrument
    start_px_ticks: int
    n_levels: int = 4000  # price range: start ± n_levels / 2
    flow: FlowConfig = FlowConfig()


class SimOrder:
    """A client's or participant's order as the exchange keeps it (mutable, one per order).

    Attributes
    ----------
    id, owner : int
        Exchange order id and owner (``FLOW_OWNER`` for the simulated participants).
    clordid, orig : str
        The ClOrdID <11> it answers to now and the one before (a cancel or replace).
    symbol : str
        Its instrument.
    side, type, tif : int
        ``BUY``/``SELL``, ``ORD_LIMIT``/``ORD_MARKET`` and the TimeInForce code.
    qty, px, cum, notional : int
        Order quantity (lots), limit price (ticks), lots filled and their notional (ticks).
    status : OrdStatus
        Its state.
    """

    __slots__ = (
        "clordid",
        "cum",
        "id",
        "notional",
        "orig",
        "owner",
        "px",
        "qty",
        "side",
        "status",
        "symbol",
        "tif",
        "type",
    )

    def __init__(
        self,
        oid: int,
        owner: int,
        clordid: str,
        symbol: str,
        side: int,
        qty: int,
        px: int,
        ord_type: int,
        tif: int,
    ) -> None:
        self.id, self.owner, self.clordid, self.orig = oid, owner, clordid, ""
        self.symbol, self.side, self.qty, self.px = symbol, side, qty, px
        self.type, self.tif = ord_type, tif
        self.cum = self.notional = 0
        self.status = OrdStatus.NEW


class _Book:
    """One listed instrument: its matcher, fair price and participants' resting orders."""

    def __init__(self, index: int, listing: SimInstrument) -> None:
        self.index = index
        self.listing = listing
        self.symbol = listing.instrument.symbol
        self.px_min = listing.start_px_ticks - listing.n_levels // 2
        self.px_max = self.px_min + listing.n_levels - 1
        self.matcher = Matcher(
            self.px_min, listing.n_levels, capacity=1 << 12, stp=STP_CANCEL_TAKER
        )
        self.fair = float(listing.start_px_ticks)
        self.flow_ids: list[int] = []


class SimExchange:
    """A simulated exchange for several instruments.

    Parameters
    ----------
    listings : Sequence[SimInstrument]
        What trades here.
    seed : int
        Seed of the participants' random numbers.
    epoch : str
        Prefix of every ExecID <17> and OrderID <37> this exchange gives out. A venue that
        restarts the same day must not give an id twice (a client de-duplicates executions by
        ExecID): give each run its own epoch (:func:`id_epoch`). ``""`` numbers from ``X1``
        (tests that compare ids).
    """

    def __init__(
        self, listings: Sequence[SimInstrument], *, seed: int = 1, epoch: str = ""
    ) -> None:
        if not listings:
            raise ValueError("SimExchange: at least one instrument is needed")
        self.books = {x.instrument.symbol: _Book(i, x) for i, x in enumerate(listings)}
        if len(self.books) != len(listings):
            raise ValueError("SimExchange: instrument symbols must be unique")
        self.rng = np.random.default_rng(seed)
        self._orders: dict[int, SimOrder] = {}
        # Client orders that are done, in their last state (the last DONE_MEMORY of them), and
        # (owner, ClOrdID) -> order id of every client order working or remembered there.
        self._final: dict[int, SimOrder] = {}
        self._by_client: dict[tuple[int, str], int] = {}
        self._clordids: dict[int, list[str]] = {}  # order id -> its ClOrdIDs (keys above)
        self._next_id = 1
        self._exec_n = 0
        self._epoch = f"{epoch}-" if epoch else ""
        self._md: list[tuple[int, int, int, int, int, int]] = []  # ts, px, qty, book, side, kind
        self._last_step_ns: int | None = None
        self.trades = 0
        self._playbacks: list[Playback] = []  # recorded markets played into the books
        #: Told every matched command (the market by order, e.g. ``SimItchFeed``), or None.
        self.order_feed: OrderFeed | None = None

    @property
    def symbols(self) -> list[str]:
        """Return the listed symbols, in book-index order."""
        return list(self.books)

    def symbol_of(self, index: int) -> str:
        """Return the symbol of book ``index``."""
        return self.symbols[index]

    def resting(self, oid: int) -> tuple[int, int, int] | None:
        """Return ``(side, px_ticks, leaves_lots)`` of an order resting in a book, else None."""
        order = self._orders.get(oid)
        if order is None or order.status in _DONE or order.type != ORD_LIMIT:
            return None
        leaves = order.qty - order.cum
        return (order.side, order.px, leaves) if leaves > 0 else None

    # ------------------------------------------------------------------ client requests
    def submit(
        self,
        owner: int,
        client_order_id: str,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        ord_type: OrdType,
        time_in_force: TimeInForce,
        ts: int,
    ) -> list[ExecutionReport]:
        """Enter a client's new order; return the reports for every client it touched."""
        raws = self.submit_raw(
            owner, client_order_id, symbol, side, qty_lots, px_ticks, ord_type, time_in_force, ts
        )
        if isinstance(raws, ExecutionReport):
            return [raws]
        report_of = self.report_of
        return [report_of(r, ts) for r in raws]

    def submit_raw(
        self,
        owner: int,
        client_order_id: str,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        ord_type: OrdType,
        time_in_force: TimeInForce,
        ts: int,
    ) -> list[RawReport] | ExecutionReport:
        """:meth:`submit`, its reports left raw (:data:`RawReport`); a reject comes made.

        The same checks, matching and state as :meth:`submit`; ``[report_of(r, ts) for r in
        result]`` (or ``[result]`` for a reject) is what :meth:`submit` returns.
        """
        book = self.books.get(symbol)
        key = (owner, client_order_id)
        if (
            book is None
            or key in self._by_client
            or qty_lots <= 0
            or (ord_type is OrdType.LIMIT and not book.px_min <= px_ticks <= book.px_max)
        ):
            reject = ""
            if book is None:
                reject = f"unknown symbol {symbol!r} (listed here: {', '.join(self.books)})"
            elif key in self._by_client:
                reject = f"duplicate ClOrdID {client_order_id!r}"
            elif qty_lots <= 0:
                reject = f"order quantity must be > 0, got {qty_lots}"
            else:
                reject = f"price {px_ticks} outside {book.px_min}..{book.px_max} ticks"
            return self._reject(
                owner, client_order_id, symbol, side, ord_type, qty_lots, px_ticks, reject, ts
            )
        oid = self._next_id  # _new_id(), inlined
        self._next_id = oid + 1
        sd, tif = int(side), int(time_in_force)
        self._orders[oid] = SimOrder(
            oid, owner, client_order_id, symbol, sd, qty_lots, px_ticks, int(ord_type), tif
        )
        self._by_client[key] = oid
        self._clordids[oid] = [client_order_id]
        typ = ORD_MARKET if ord_type is OrdType.MARKET else ORD_LIMIT
        return self._run_raw(book, ts, oid, px_ticks, qty_lots, owner, sd, CMD_NEW, typ, tif)

    def cancel(
        self, owner: int, client_order_id: str, orig_client_order_id: str, ts: int
    ) -> list[ExecutionReport] | CancelReject:
        """Cancel a client's order (OrderCancelRequest <F>)."""
        order = self._client_order(owner, orig_client_order_id)
        if order is None or order.status not in (OrdStatus.NEW, OrdStatus.PARTIALLY_FILLED):
            return self._cancel_reject(
                owner, client_order_id, orig_client_order_id, order, replace=False
            )
        order.orig, order.clordid = order.clordid, client_order_id
        self._by_client[(owner, client_order_id)] = order.id
        self._clordids[order.id].append(client_order_id)
        return self._run(
            self.books[order.symbol],
            ts,
            order.id,
            0,
            0,
            owner,
            order.side,
            CMD_CANCEL,
            order.type,
            order.tif,
        )

    def replace(
        self,
        owner: int,
        client_order_id: str,
        orig_client_order_id: str,
        qty_lots: int,
        px_ticks: int,
        ts: int,
    ) -> list[ExecutionReport] | CancelReject:
        """Change quantity and price of a client's order (OrderCancelReplaceRequest <G>)."""
        order = self._client_order(owner, orig_client_order_id)
        book = self.books[order.symbol] if order is not None else None
        if (
            order is None
            or book is None
            or order.status not in (OrdStatus.NEW, OrdStatus.PARTIALLY_FILLED)
        ):
            return self._cancel_reject(
                owner, client_order_id, orig_client_order_id, order, replace=True
            )
        why = ""
        if qty_lots <= order.cum:
            why = (
                f"invalid replace: quantity {qty_lots} lots must exceed the {order.cum} lots "
                "already filled"
            )
        elif order.type == ORD_LIMIT and not book.px_min <= px_ticks <= book.px_max:
            why = f"invalid replace: price {px_ticks} outside {book.px_min}..{book.px_max} ticks"
        if why:
            return self._cancel_reject(
                owner, client_order_id, orig_client_order_id, order, replace=True, text=why
            )
        order.orig, order.clordid = order.clordid, client_order_id
        self._by_client[(owner, client_order_id)] = order.id
        self._clordids[order.id].append(client_order_id)
        old_px, order.qty, order.px = order.px, qty_lots, px_ticks
        return self._run(
            book,
            ts,
            order.id,
            px_ticks,
            qty_lots - order.cum,
            owner,
            order.side,
            CMD_REPLACE,
            order.type,
            order.tif,
            extra_px=old_px,
        )

    def status(self, owner: int, client_order_id: str, ts: int) -> ExecutionReport | None:
        """Return the current state of a client's order (OrderStatusRequest <H>).

        A finished order (filled, canceled, expired) is reported in its final state; ``None``
        for an order this exchange never had (or had before a restart).
        """
        oid = self._by_client.get((owner, client_order_id))
        order = None if oid is None else self._orders.get(oid) or self._final.get(oid)
        if order is None:
            return None
        return self._report(order, ExecType.ORDER_STATUS, ts)

    def unknown_status(
        self, owner: int, client_order_id: str, symbol: str, side: Side, ts: int
    ) -> ExecutionReport:
        """Return the answer to a status request for an order this exchange does not know."""
        rep = self._reject(
            owner, client_order_id, symbol, side, OrdType.LIMIT, 0, 0, "unknown order", ts
        )
        return replace(rep, exec_type=ExecType.ORDER_STATUS)

    def cancel_owner(
        self, owner: int, ts: int, text: str = DISCONNECT_TEXT
    ) -> list[ExecutionReport]:
        """Cancel every working order of a client, saying why (default: cancel on disconnect)."""
        out: list[ExecutionReport] = []
        report_of = self.report_of
        for order in list(self._orders.values()):
            if order.owner == owner and order.status in (OrdStatus.NEW, OrdStatus.PARTIALLY_FILLED):
                raws = self._run_raw(
                    self.books[order.symbol],
                    ts,
                    order.id,
                    0,
                    0,
                    owner,
                    order.side,
                    CMD_CANCEL,
                    order.type,
                    order.tif,
                )
                out += [report_of(r, ts, text if r[1] is ExecType.CANCELED else None) for r in raws]
        return out

    # ------------------------------------------------------------------ market data
    def drain_market_events(self) -> npt.NDArray[np.void]:
        """Return (and forget) the book changes and trades since the last call, in order."""
        out = np.zeros(len(self._md), L2_EVENT_DTYPE)
        for i, row in enumerate(self._md):
            out[i] = row
        self._md.clear()
        return out

    def depth(self, symbol: str, depth: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Return the best ``depth`` bid and ask levels ``(px_ticks, qty_lots)`` of a book."""
        book = self.books[symbol]
        lv = book.matcher.book
        bids: list[tuple[int, int]] = []
        asks: list[tuple[int, int]] = []
        best = lv.best_bid()
        px = best[0] if best else None
        while px is not None and px >= book.px_min and len(bids) < depth:
            qty, _n = lv.depth_at(BUY, px)
            if qty:
                bids.append((px, qty))
            px -= 1
        best = lv.best_ask()
        px = best[0] if best else None
        while px is not None and px <= book.px_max and len(asks) < depth:
            qty, _n = lv.depth_at(SELL, px)
            if qty:
                asks.append((px, qty))
            px += 1
        return bids, asks

    # ------------------------------------------------------------------ participants
    def seed_books(self, ts: int, levels: int = 5, qty_lots: int = 5) -> list[ExecutionReport]:
        """Rest participant orders on ``levels`` ticks either side of each fair price."""
        out: list[ExecutionReport] = []
        for book in self.books.values():
            fair = round(book.fair)
            for d in range(1, levels + 1):
                out += self._flow_order(book, BUY, fair - d, qty_lots, ORD_LIMIT, ts)
                out += self._flow_order(book, SELL, fair + d, qty_lots, ORD_LIMIT, ts)
        return out

    def step(self, now_ns: int) -> list[ExecutionReport]:
        """Let the participants act for the time since the last step; return client reports."""
        if self._last_step_ns is None:
            self._last_step_ns = now_ns
            return []
        dt = (now_ns - self._last_step_ns) / 1e9
        if dt <= 0:
            return []
        self._last_step_ns = now_ns
        out: list[ExecutionReport] = []
        for playback in self._playbacks:
            out += playback.step(now_ns)
        for book in self.books.values():
            out += self._flow(book, dt, now_ns)
        return out

    # ------------------------------------------------------------------ playback hooks
    def attach_playback(self, playback: "Playback") -> None:
        """Play ``playback`` (recorded ticks, ``engine.sim.playback``) on every :meth:`step`."""
        self._playbacks.append(playback)

    def add_flow_order(
        self, symbol: str, side: int, px: int, qty: int, ts: int, *, ioc: bool = False
    ) -> tuple[int, list[ExecutionReport]]:
        """Enter a participant order (resting, or IOC); return its id and the client reports.

        Unlike the random participants' orders, these are never canceled by the flow.
        """
        book = self.books[symbol]
        px = min(max(px, book.px_min), book.px_max)
        oid = self._new_id()
        tif = 3 if ioc else 1
        self._orders[oid] = SimOrder(oid, FLOW_OWNER, "", symbol, side, qty, px, ORD_LIMIT, tif)
        out = self._run(book, ts, oid, px, qty, FLOW_OWNER, side, CMD_NEW, ORD_LIMIT, tif)
        return oid, out

    def flow_leaves(self, oid: int) -> int:
        """Open lots of a participant order (0 once it is done)."""
        order = self._orders.get(oid)
        return 0 if order is None else order.qty - order.cum

    def reduce_flow_order(self, oid: int, leaves: int, ts: int) -> list[ExecutionReport]:
        """Reduce a participant order to ``leaves`` lots (keeping its place), or cancel it."""
        order = self._orders.get(oid)
        if order is None or leaves >= order.qty - order.cum:
            return []
        book = self.books[order.symbol]
        if leaves <= 0:
            return self._run(book, ts, oid, 0, 0, FLOW_OWNER, order.side, CMD_CANCEL, ORD_LIMIT, 1)
        order.qty = order.cum + leaves
        return self._run(
            book, ts, oid, order.px, leaves, FLOW_OWNER, order.side, CMD_REPLACE, ORD_LIMIT, 1
        )

    def _flow(self, book: _Book, dt: float, ts: int) -> list[ExecutionReport]:
        flow, rng = book.listing.flow, self.rng
        book.fair += float(rng.normal(0.0, flow.volatility_ticks * math.sqrt(dt)))
        margin = flow.depth_ticks + 2
        book.fair = min(max(book.fair, book.px_min + margin), book.px_max - margin)
        out: list[ExecutionReport] = []
        for _ in range(min(int(rng.poisson(flow.events_per_second * dt)), 10_000)):
            u = float(rng.random())
            side = BUY if rng.random() < 0.5 else SELL
            qty = int(rng.integers(1, flow.max_qty_lots + 1))
            if u < flow.passive_share:
                dist = 1 + int(rng.geometric(0.35)) - 1
                dist = min(dist, flow.depth_ticks)
                px = math.floor(book.fair) - dist if side == BUY else math.ceil(book.fair) + dist
                if len(book.flow_ids) >= flow.max_resting:
                    out += self._cancel_flow(book, ts)
                out += self._flow_order(book, side, px, qty, ORD_LIMIT, ts)
            elif u < flow.passive_share + flow.cancel_share:
                out += self._cancel_flow(book, ts)
            else:
                # Take liquidity up to a price a little through the fair value (IOC).
                px = math.ceil(book.fair) + 1 if side == BUY else math.floor(book.fair) - 1
                out += self._flow_order(book, side, px, qty, ORD_LIMIT, ts, ioc=True)
        return out

    def _cancel_flow(self, book: _Book, ts: int) -> list[ExecutionReport]:
        # A random resting participant order leaves the book.
        if not book.flow_ids:
            return []
        i = int(self.rng.integers(len(book.flow_ids)))
        oid = book.flow_ids[i]
        book.flow_ids[i] = book.flow_ids[-1]
        book.flow_ids.pop()
        order = self._orders.get(oid)
        if order is None:
            return []
        return self._run(book, ts, oid, 0, 0, FLOW_OWNER, order.side, CMD_CANCEL, ORD_LIMIT, 1)

    def _flow_order(
        self,
        book: _Book,
        side: int,
        px: int,
        qty: int,
        ord_type: int,
        ts: int,
        *,
        ioc: bool = False,
    ) -> list[ExecutionReport]:
        px = min(max(px, book.px_min), book.px_max)
        oid = self._new_id()
        order = SimOrder(oid, FLOW_OWNER, "", book.symbol, side, qty, px, ord_type, 3 if ioc else 1)
        self._orders[oid] = order
        out = self._run(
            book, ts, oid, px, qty, FLOW_OWNER, side, CMD_NEW, ord_type, 3 if ioc else 1
        )
        if oid in self._orders and not ioc:
            book.flow_ids.append(oid)
        return out

    # ------------------------------------------------------------------ matching
    def _run(
        self,
        book: _Book,
        ts: int,
        oid: int,
        px: int,
        qty: int,
        owner: int,
        side: int,
        action: int,
        ord_type: int,
        tif: int,
        extra_px: int | None = None,
    ) -> list[ExecutionReport]:
        # _run_raw with its client reports made.
        raws = self._run_raw(book, ts, oid, px, qty, owner, side, action, ord_type, tif, extra_px)
        if not raws:
            return []
        report_of = self.report_of
        return [report_of(r, ts) for r in raws]

    def _run_raw(  # noqa: C901  (one hot loop: the events applied inline)
        self,
        book: _Book,
        ts: int,
        oid: int,
        px: int,
        qty: int,
        owner: int,
        side: int,
        action: int,
        ord_type: int,
        tif: int,
        extra_px: int | None = None,
    ) -> list[RawReport]:
        # One command through the book's matcher; its events applied to the orders, the
        # client reports returned raw and the levels it touched queued as market data.
        events = book.matcher.submit_one(ts, oid, px, qty, owner, side, action, ord_type, tif)
        touched: list[tuple[int, int]] = []
        if ord_type == ORD_LIMIT and action != CMD_CANCEL:
            touched.append((side, px))
        if extra_px is not None:
            touched.append((side, extra_px))
        out: list[RawReport] = []
        orders = self._orders
        md = self._md
        for ev in events:
            order = orders.get(ev[EV_ORDER_ID])
            if order is None:
                continue
            kind = ev[EV_KIND]
            if kind == EXEC_NEW:
                et = ExecType.NEW
            elif kind == EXEC_TRADE:
                fill_qty, fill_px = ev[EV_QTY], ev[EV_PX]
                order.cum += fill_qty
                order.notional += fill_qty * fill_px
                touched.append((order.side, fill_px))
                if ev[EV_LIQUIDITY] == LIQ_TAKER:
                    self.trades += 1
                    md.append((ts, fill_px, fill_qty, book.index, order.side, L2_TRADE))
                order.status = (
                    OrdStatus.FILLED if ev[EV_LEAVES] == 0 else OrdStatus.PARTIALLY_FILLED
                )
                et = ExecType.TRADE
            elif kind in (EXEC_CANCELED, EXEC_EXPIRED):
                touched.append((order.side, order.px))
                if kind == EXEC_CANCELED:
                    order.status, et = OrdStatus.CANCELED, ExecType.CANCELED
                else:
                    order.status, et = OrdStatus.EXPIRED, ExecType.EXPIRED
            elif kind == EXEC_REJECTED:
                order.status, et = OrdStatus.REJECTED, ExecType.REJECTED
            elif kind == EXEC_REPLACED:
                et = ExecType.REPLACED
            else:
                continue
            status = order.status
            client = order.owner != FLOW_OWNER
            if status in _DONE:
                orders.pop(order.id, None)
                if client:
                    self._done(order)
            if client:
                self._exec_n += 1
                out.append((order, et, ev, self._exec_n, status, order.cum, order.notional))
        if self.order_feed is not None:
            self.order_feed.on_command(book.index + 1, ts, oid, events)
        if touched:
            if len(touched) > 1:
                touched = sorted(set(touched))
            lv = book.matcher.arrays.lv
            px_min, px_max, index = book.px_min, book.px_max, book.index
            for side_, px_ in touched:
                if px_min <= px_ <= px_max:
                    # L3Book.depth_at's quantity, read in place (side_index: BUY 0, SELL 1).
                    level_qty = lv.item((1 - side_) >> 1, px_ - px_min, LV_QTY)
                    md.append((ts, px_, level_qty, index, side_, L2_SET))
        return out

    def _report(self, order: SimOrder, et: ExecType, ts: int) -> ExecutionReport:
        # A report of the order's current state (a status request: no event).
        self._exec_n += 1
        return self.report_of(
            (order, et, None, self._exec_n, order.status, order.cum, order.notional), ts
        )

    def report_of(self, raw: RawReport, ts: int, text: str | None = None) -> ExecutionReport:
        """Return the ``ExecutionReport`` of a raw report made at ``ts``.

        ``text``: its Text <58> instead of the matcher's reason (a cancel on disconnect).
        """
        order, et, ev, exec_n, status, cum, notional = raw
        fill = ev is not None and et is ExecType.TRADE
        leaves = 0 if status in _NO_LEAVES else order.qty - cum
        reason = ev[EV_REASON] if ev is not None else REASON_NONE
        if text is not None:
            pass
        elif reason == REASON_IOC_REMAINDER and order.type == ORD_MARKET:
            text = _MARKET_REMAINDER_TEXT
        else:
            text = _REASON_TEXT.get(reason, f"matcher reason code {reason}")
        return _report(
            client=order.owner,
            client_order_id=order.clordid,
            orig_client_order_id=order.orig if et in (ExecType.CANCELED, ExecType.REPLACED) else "",
            venue_order_id=f"{self._epoch}{order.id}",
            exec_id=f"{self._epoch}X{exec_n}",
            exec_type=et,
            ord_status=status,
            symbol=order.symbol,
            side=_SIDES[order.side],
            ord_type=_ORD_TYPES[order.type],
            order_qty_lots=order.qty,
            px_ticks=order.px if order.type == ORD_LIMIT else 0,
            last_qty_lots=ev[EV_QTY] if fill and ev is not None else 0,
            last_px_ticks=ev[EV_PX] if fill and ev is not None else 0,
            leaves_qty_lots=leaves,
            cum_qty_lots=cum,
            avg_px_ticks=notional / cum if cum else 0.0,
            text=text,
            maker=fill and ev is not None and ev[EV_LIQUIDITY] != LIQ_TAKER,
            ts_event=ts,
            ts_recv=ts,
        )

    @property
    def epoch(self) -> str:
        """The prefix of ExecIDs and OrderIDs (``""`` or the epoch given, with its ``-``)."""
        return self._epoch

    @staticmethod
    def report_text(raw: RawReport) -> str:
        """Return Text <58> of a raw report (``""`` when there is nothing to explain)."""
        order, _et, ev = raw[0], raw[1], raw[2]
        reason = ev[EV_REASON] if ev is not None else REASON_NONE
        if reason == REASON_NONE:
            return ""
        if reason == REASON_IOC_REMAINDER and order.type == ORD_MARKET:
            return _MARKET_REMAINDER_TEXT
        return _REASON_TEXT.get(reason, f"matcher reason code {reason}")

    def _reject(
        self,
        owner: int,
        clordid: str,
        symbol: str,
        side: Side,
        ord_type: OrdType,
        qty: int,
        px: int,
        text: str,
        ts: int,
    ) -> ExecutionReport:
        self._exec_n += 1
        return _report(
            client=owner,
            client_order_id=clordid,
            orig_client_order_id="",
            venue_order_id="NONE",
            exec_id=f"{self._epoch}X{self._exec_n}",
            exec_type=ExecType.REJECTED,
            ord_status=OrdStatus.REJECTED,
            symbol=symbol,
            side=side,
            ord_type=ord_type,
            order_qty_lots=qty,
            px_ticks=px,
            last_qty_lots=0,
            last_px_ticks=0,
            leaves_qty_lots=0,
            cum_qty_lots=0,
            avg_px_ticks=0.0,
            text=text,
            maker=False,
            ts_event=ts,
            ts_recv=ts,
        )

    def refuse_new(
        self,
        owner: int,
        client_order_id: str,
        symbol: str,
        side: Side,
        ord_type: OrdType,
        text: str,
        ts: int,
    ) -> ExecutionReport:
        """Return the reject of a new order refused before it reached the book, with ``text``.

        For what a gateway finds wrong (a price off the tick grid, ...); the order is not
        entered and its ClOrdID stays free.
        """
        return self._reject(owner, client_order_id, symbol, side, ord_type, 0, 0, text, ts)

    def refuse_cancel(
        self,
        owner: int,
        client_order_id: str,
        orig_client_order_id: str,
        text: str,
        *,
        replace: bool,
    ) -> CancelReject:
        """Return the refusal of a cancel or replace request with ``text`` (order left as is)."""
        order = self._client_order(owner, orig_client_order_id)
        return self._cancel_reject(
            owner, client_order_id, orig_client_order_id, order, replace=replace, text=text
        )

    def _cancel_reject(
        self,
        owner: int,
        clordid: str,
        orig: str,
        order: SimOrder | None,
        *,
        replace: bool,
        text: str = "",
    ) -> CancelReject:
        what = "replace" if replace else "cancel"
        if order is None:
            known = self._by_client.get((owner, orig))
            done = self._final.get(known) if known is not None else None
            final = done.status if done is not None else None
            return CancelReject(
                client=owner,
                client_order_id=clordid,
                orig_client_order_id=orig,
                venue_order_id=f"{self._epoch}{known}" if known is not None else "NONE",
                ord_status=final if final is not None else OrdStatus.REJECTED,
                response_to_replace=replace,
                reason=0 if known is not None else 1,
                text=f"too late to {what}: order is {final.name.lower()}"
                if final is not None
                else f"unknown order: no order with ClOrdID {orig!r}",
            )
        return CancelReject(
            client=owner,
            client_order_id=clordid,
            orig_client_order_id=orig,
            venue_order_id=f"{self._epoch}{order.id}",
            ord_status=order.status,
            response_to_replace=replace,
            reason=0,
            text=text or f"too late to {what}: order is {order.status.name.lower()}",
        )

    def _done(self, order: SimOrder) -> None:
        # Remember a finished client order (status requests, late cancels); forget the oldest
        # beyond DONE_MEMORY, ClOrdIDs and all.
        final = self._final
        final[order.id] = order
        if len(final) > DONE_MEMORY:
            for oid in list(itertools.islice(final, DONE_MEMORY // 10)):
                old = final.pop(oid)
                for clordid in self._clordids.pop(oid, ()):
                    key = (old.owner, clordid)
                    if self._by_client.get(key) == oid:
                        del self._by_client[key]

    def _client_order(self, owner: int, clordid: str) -> SimOrder | None:
        oid = self._by_client.get((owner, clordid))
        return self._orders.get(oid) if oid is not None else None

    def _new_id(self) -> int:
        oid = self._next_id
        self._next_id += 1
        return oid
