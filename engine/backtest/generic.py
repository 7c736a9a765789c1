# SPDX-License-Identifier: MIT
"""The generic backtest: any ``Strategy`` through the production ``OrderManager``.

The strategy, the :class:`engine.strategy.runner.StrategyRunner`, the
:class:`engine.oms.router.OrderRouter` (risk, order managers) and the message bus are the
production ones; only the clock (:class:`engine.clock.TestClock`, moved by the replay) and
the venue (:class:`BacktestVenue`, an :class:`engine.oms.venue.Venue`) are simulated. The
venue keeps the market book and the own orders' queue positions with the kernels of
:mod:`engine.matching` (exact FIFO in L3, a queue model in L2:
:class:`engine.backtest.own_queue.OwnQueue`); strategies read the book through
:mod:`engine.backtest.views`.

One timeline, in time order (ties in this order): the venue applies market event ``i`` at
its exchange time ``ts``; the venue's answers reach the order manager ``response`` later;
the strategy sees event ``i`` at ``ts + feed`` (a ``BookUpdated`` on the bus at the end of
each venue update, at most every ``book_interval_ns``; a ``TradeReported`` for each trade
when a strategy overrides ``on_trade``). A request sent at local time ``t`` is carried
out at the venue at ``t + order`` (never before an earlier request), before the market
events of that time.

The strategies and the order stack are Python, so the rate is set by the callbacks: a
venue update's rows are replayed in one kernel call and the strategies called once at its
end (about 1M events/s on Binance depth, 41 rows an update; some 80k where every event is
its own update, as in market-by-order data). The compiled fast path
(:mod:`engine.backtest.fast`) is the one for whole days and sweeps.
"""

import heapq
import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.backtest.journal import BacktestJournal
from engine.backtest.models import ConstantLatency, LatencyModel, Level
from engine.backtest.own_queue import OwnQueue
from engine.backtest.rules import (
    MarketRules,
    TradingStatus,
    l2_window,
    l3_window,
    market_rules,
)
from engine.backtest.views import L2View, L3View
from engine.book._kernels import l2_apply
from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.events import BookUpdated, Event, OrderFilled, TradeReported
from engine.instruments import Instrument
from engine.matching.models import ConservativeQueue, QueueModel
from engine.oms.order import Order, PendingRequest
from engine.oms.router import OrderRouter
from engine.oms.stp import SelfTradePrevention
from engine.oms.venue import CancelReject, ExecutionReport, ReportSink, Request
from engine.strategy.base import Strategy
from engine.strategy.runner import LiveContext, StrategyRunner
from engine.types import (
    BUY,
    FILL_DTYPE,
    L2_EVENT_DTYPE,
    L2_TRADE,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    OWN_ACTIVE,
    OWN_CANCELED,
    OWN_FILLED,
    OWN_PENDING,
    PRIO_DEFAULT,
    SELL,
)
from engine.venues.backtest.adapter import BacktestVenue

_NEVER = int(np.iinfo(np.int64).max)
_INF = float("inf")
_NO_FILLS = np.zeros(0, FILL_DTYPE)


def _int(t: float) -> int:
    """Return a timeline time as an int64 bound (``_INF``: the largest int64)."""
    return _NEVER if t == _INF else int(t)


def _bisect_near(a: list[int], x: int, lo: int) -> int:
    """``bisect_right(a, x, lo)``, looking in the next 128 items first (one update's rows)."""
    hi = min(len(a), lo + 128)
    k = bisect_right(a, x, lo, hi)
    return k if k < hi else bisect_right(a, x, hi)


# --------------------------------------------------------------------------- the venue
@dataclass(slots=True)
class _Request:
    kind: str  # "new", "cancel", "replace", "status"
    order: Order
    request: PendingRequest | None
    t_arrive: int
    seq: int = 0


Progress = Callable[[int, int], None]
Cancel = Callable[[], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class GenericResult:
    """What a generic run did."""

    events: int  # market events replayed
    strategy_calls: int  # BookUpdated events delivered to strategies
    orders: int  # orders created
    fills: int  # fills reported
    canceled: bool  # stopped before the end of the data
    last_ts: int  # exchange time of the last replayed event
    cash_ticks: int = 0  # -sum(side * qty * px) of the fills, tick-lots


class GenericBacktest:
    """Replay one instrument's events through the production strategy and order stack.

    Parameters
    ----------
    strategies : Sequence[Strategy]
        Strategies to run (each trades ``instrument``).
    instrument : Instrument
        The instrument replayed.
    level : {"l2", "l3"}
        ``L2_EVENT_DTYPE`` rows with a queue model, or ``L3_EVENT_DTYPE`` (exact queue).
    queue : QueueModel
        L2 queue model.
    latency : LatencyModel
        Feed, order and response latencies.
    book_interval_ns : int
        Least simulated time between two book updates delivered to the strategies (0: every
        event).
    n_levels : int, optional
        L2 price window, ticks (default: sized from the data, see
        :func:`engine.backtest.rules.l2_window`; it re-centres when too narrow).
    stp : SelfTradePrevention, optional
        Self-trade prevention rules, as configured live (default: cancel newest between
        strategies, as live; ``engine.oms.stp``).
    """

    def __init__(
        self,
        strategies: Sequence[Strategy],
        instrument: Instrument,
        *,
        level: Level = "l2",
        queue: QueueModel | None = None,
        latency: LatencyModel | None = None,
        book_interval_ns: int = 0,
        n_levels: int | None = None,
        stp: SelfTradePrevention | None = None,
    ) -> None:
        if level not in ("l2", "l3"):
            raise ValueError(f"level: must be 'l2' or 'l3', got {level!r}")
        if book_interval_ns < 0:
            raise ValueError(f"book_interval_ns: must be >= 0, got {book_interval_ns}")
        self.strategies = list(strategies)
        self.instrument = instrument
        self.level = level
        self.queue = queue if queue is not None else ConservativeQueue()
        self.latency = latency if latency is not None else ConstantLatency()
        self.book_interval_ns = book_interval_ns
        self.n_levels = n_levels
        self.stp = stp
        self.rules = MarketRules(0)  # of the last run
        self.status = TradingStatus.always_trading()  # of the last run
        self.halted_requests = 0  # new orders and replaces rejected while halted (last run)
        self._reset()

    def _reset(self) -> None:
        # run state: every run starts from scratch
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._arrivals: list[_Request] = []  # requests on their way to the venue (FIFO)
        self._rows: dict[int, Order] = {}  # own row -> order
        self._row_of: dict[int, int] = {}  # order_id -> current own row
        self._last_arrive = 0
        self._vi = -1  # last event the venue applied
        self._sj = -1  # last event the strategies saw
        self._last_answer = 0  # local time the latest answer reaches the order manager
        self._sent_orders = 0  # new orders sent to the venue
        self._prior: dict[int, int] = {}  # order_id -> lots filled on earlier rows (replaces)
        self._exec_ids = itertools.count(1)
        self._fills = 0

    # ------------------------------------------------------------------ running
    def run(
        self,
        events: npt.NDArray[np.void],
        journal: BacktestJournal | str | Path | None = None,
        *,
        progress: Progress | None = None,
        cancel: Cancel | None = None,
        progress_every: int = 65_536,
        open_ts: int | None = None,
        status: TradingStatus | None = None,
    ) -> GenericResult:
        """Replay ``events``; journal every engine event to ``journal``.

        The market-state rules of :mod:`engine.backtest.rules` apply: events before the live
        market (snapshot, pre-open, crossed book; ``open_ts`` is the session's first trade
        when the events carry none) only rebuild the books, and strategies see whole venue
        updates. ``status`` is the instrument's recorded trading status: while it says the
        market did not trade, no own order fills and new orders and replaces are rejected.

        Raises
        ------
        ValueError
            For events of the wrong dtype, malformed or out of time order.
        """
        want = L2_EVENT_DTYPE if self.level == "l2" else L3_EVENT_DTYPE
        if events.dtype != want:
            raise ValueError(
                f"events: a {self.level.upper()} backtest needs {self.level.upper()}_EVENT_DTYPE "
                f"rows, got dtype {events.dtype}"
            )
        ev = np.ascontiguousarray(events)
        n = int(ev.shape[0])
        if n == 0:
            raise ValueError("events: nothing to replay (0 rows)")
        if bool((np.diff(ev["ts"]) < 0).any()):
            bad = int(np.argmax(np.diff(ev["ts"]) < 0)) + 1
            raise ValueError(f"events: row {bad} is earlier than row {bad - 1}; sort by ts")
        ts0 = int(ev["ts"][0])
        self.rules = market_rules(ev, self.level, open_ts, self.n_levels, count_crossed=False)
        self.status = status if status is not None else TradingStatus.always_trading()
        own_journal = not isinstance(journal, BacktestJournal) and journal is not None
        jr = BacktestJournal(journal, ts0) if own_journal else journal  # type: ignore[arg-type]
        try:
            return self._run(
                ev,
                jr if isinstance(jr, BacktestJournal) else None,
                progress,
                cancel,
                progress_every,
            )
        finally:
            if own_journal and isinstance(jr, BacktestJournal):
                jr.close()

    def _setup(self, ev: npt.NDArray[np.void], ts0: int, same_book: bool) -> None:
        self._reset()
        self.clock = TestClock(ts0)
        self.bus = MessageBus()
        self.router = OrderRouter(self.bus, self.clock)
        if self.stp is not None:  # the live rules, counted on this run's bus
            self.stp.attach(self.bus, self.clock)
            self.router.stp = self.stp
        self.venue = BacktestVenue(self._request)
        self.manager = self.router.add_instrument(self.instrument, self.venue)
        sym = self.instrument.symbol
        if self.level == "l2":
            n_levels, centre = l2_window(ev, self.n_levels)
            vb: L2Books | L3Book = L2Books(1, n_levels, centre=centre)
            vb.validate(ev)
            local: L2Books | L3Book = L2Books(1, n_levels, centre=centre)
            # the strategies' own copy changes only in _see_rows: its touch is held
            self.view: L2View | L3View = L2View(local, sym, held=True)  # type: ignore[arg-type]
        else:
            px_min, n_px = l3_window(ev)
            vb = L3Book(px_min, n_px, 1 << 12, PRIO_DEFAULT)
            vb.validate(ev)
            local = L3Book(px_min, n_px, 1 << 12, PRIO_DEFAULT)
            self.view = L3View(local, sym)
        self.local = local
        if same_book:  # no feed latency: the strategies read the venue's book itself
            self.view = L2View(vb, sym) if isinstance(vb, L2Books) else L3View(vb, sym)
        self.own = OwnQueue(self.level, vb, self.queue)
        self.ctx = LiveContext(self.router, self.clock, lambda s: self.view if s == sym else None)
        self.runner = StrategyRunner(self.bus, self.clock, self.ctx)

    def _run(  # noqa: C901 (the one timeline loop)
        self,
        ev: npt.NDArray[np.void],
        journal: BacktestJournal | None,
        progress: Progress | None,
        cancel: Cancel | None,
        progress_every: int,
    ) -> GenericResult:
        n = int(ev.shape[0])
        ts_l = ev["ts"].tolist()
        feed, olat, rlat = self.latency.arrays(n)
        same_book = feed.shape[0] == 1 and int(feed[0]) == 0
        live = min(self.rules.live_from, n)
        end_l = self.rules.group_end.tolist()
        self._setup(ev, ts_l[min(live, n - 1)], same_book)
        if live:  # warm-up: the books only (engine.backtest.rules)
            self.own.book.apply(ev[:live])
            if not same_book:
                self._see_rows(ev[:live])
        if journal is not None:
            record = journal.on_event

            def keep(e: Event) -> None:
                if not isinstance(e, BookUpdated | TradeReported):
                    record(e)

            self.bus.subscribe(Event, keep)
        cash = [0]

        def paid(e: OrderFilled) -> None:
            cash[0] -= int(e.side) * e.last_qty_lots * e.last_px_ticks

        self.bus.subscribe(OrderFilled, paid)
        self._olat, self._rlat = olat, rlat
        halted = self.status.halted_rows(ev["ts"])
        halted_l: list[bool] = halted.tolist() if bool(halted.any()) else []
        flips: list[int] = (np.flatnonzero(halted[1:] != halted[:-1]) + 1).tolist()
        self.halted_requests = 0
        self._ev_ts = ev["ts"]
        is_l2 = self.level == "l2"
        trade = (ev["kind"] == L2_TRADE) if is_l2 else (ev["action"] == L3_EXECUTE)
        ev_ts = ev["ts"]
        see = ev_ts + feed  # when the strategies see each row (feed: one value or one per row)
        # rows that call the strategies: ends of venue updates, and trades when a strategy
        # handles them (the run's bus is its own; the journal keeps no trades)
        hear = any(type(s).on_trade is not Strategy.on_trade for s in self.strategies)
        loud = (trade if hear else False) | (self.rules.group_end != 0)
        loud_at = np.append(np.flatnonzero(loud), n)
        loud_l = loud_at.tolist()
        # per loud row: where its run of rows starts and when the last of them is seen
        starts = np.concatenate(([0], loud_at[:-1] + 1)).astype(np.int64)
        run_seen = (
            np.maximum.reduceat(see[: loud_l[-2] + 1], starts[:-1]).tolist()
            if len(loud_l) > 1
            else []
        )
        starts_l = starts.tolist()
        see_l = see.tolist()
        k_loud = 0
        # the trade rows and their fields, as lists only when a strategy hears trades
        trade_l, px_l, qty_l, side_l = (
            (trade.tolist(), ev["px"].tolist(), ev["qty"].tolist(), ev["side"].tolist())
            if hear
            else ([], [], [], [])
        )
        timers = [s.timer_interval_ms for s in self.strategies if s.timer_interval_ms]
        timer_ns = min(timers) * 1_000_000 if timers else 0
        next_timer = ts_l[min(live, n - 1)] + timer_ns if timer_ns else _NEVER
        for s in self.strategies:
            self.runner.add(s)
            self.runner.start(s.strategy_id)
        heap = self._heap
        sym = self.instrument.symbol
        i = live  # next event for the venue
        j = live  # next event for the strategies
        self._vi = self._sj = live - 1
        next_call = 0
        calls = 0
        stopped = False
        closing = False
        while True:
            tv = ts_l[i] if i < n else _INF
            ta = self._arrivals[0].t_arrive if self._arrivals else _INF
            tr = heap[0][0] if heap else _INF
            tsee = see_l[j] if j < n else _INF
            t = min(ta, tv, tr, tsee)
            if i >= n and j >= n and not closing:
                # end of the data: stop the strategies (their cancels still reach the venue)
                closing = True
                for s in self.strategies:
                    self.runner.stop(s.strategy_id)
                continue
            if t == _INF:
                break
            if next_timer <= t and not closing:
                self.clock.set(max(next_timer, self.clock.now_ns()))
                self.runner.on_timer()
                next_timer += timer_ns
                continue
            self.clock.set(max(int(t), self.clock.now_ns()))
            if ta == t and ta <= tv:
                self._arrive(self._arrivals.pop(0))
            elif tv == t:
                # The venue replays every row due before anything else is (an arrival, the
                # timer: strictly before; an answer, the strategies' next row: ties go to the
                # venue) in one kernel call that stops after a row with fills.
                before = min(ta, _INF if closing else next_timer)
                upto = min(tr, tsee)
                k = min(
                    n if before == _INF else bisect_left(ts_l, before, i),
                    n if upto == _INF else _bisect_near(ts_l, int(upto), i),
                )
                if flips:  # a replay stops where the trading status changes
                    nb = bisect_right(flips, i)
                    if nb < len(flips):
                        k = min(k, flips[nb])
                if halted_l and halted_l[i] and is_l2:
                    # halted: the rows change the book only; no own order fills
                    self.own.book.apply(ev[i:k])
                    fills, done = _NO_FILLS, k - i
                elif halted_l and halted_l[i]:
                    # halted, L3: adds and cancels keep the own queue positions exact (they
                    # cannot fill); an execution (none should come) changes the book only
                    execs = np.flatnonzero(ev["action"][i:k] == L3_EXECUTE)
                    j = i + int(execs[0]) if execs.size else k
                    if j == i:
                        self.own.book.apply(ev[i : i + 1])
                        fills, done = _NO_FILLS, 1
                    else:
                        fills, done = self.own.replay(ev[i:j], stop_at_fill=True)
                else:
                    fills, done = self.own.replay(ev[i:k], stop_at_fill=True)
                first = i
                i += done
                self._vi = i - 1
                self.clock.set(max(ts_l[i - 1], self.clock.now_ns()))
                if fills.shape[0]:
                    self._report_fills(fills)
                if progress is not None and i // progress_every != first // progress_every:
                    progress(i, n)
                    if cancel is not None and cancel():
                        stopped = True
                        break
            elif tr == t:
                _t, _s, fn = heapq.heappop(heap)
                fn()
            else:
                # The rows the strategies see before anything else is due (an arrival, the
                # venue's next row, an answer: strictly before; the timer: at or before), up
                # to and including the next row that calls them (the end of a venue update,
                # a trade they hear): their book in one call, then the callback.
                limit = min(ta, tv, tr, _INF if closing else next_timer)
                while loud_l[k_loud] < j:
                    k_loud += 1
                m = loud_l[k_loud]
                if m < n and j == starts_l[k_loud] and run_seen[k_loud] < limit:
                    seen = run_seen[k_loud]  # the whole run, its loud row included
                else:
                    due = see[j:m] >= _int(limit)
                    cut = bool(due.any())
                    if cut:
                        m = j + int(due.argmax())
                    if cut or m >= n or see_l[m] >= limit:  # silent rows only
                        if not same_book:
                            self._see_rows(ev[j:m])
                        self._sj = m - 1
                        self.clock.set(max(max(see_l[j:m]), self.clock.now_ns()))
                        j = m
                        continue
                    seen = max(see_l[j : m + 1])
                now = see_l[m]
                if not same_book:
                    self._see_rows(ev[j : m + 1])
                self.clock.set(max(seen, self.clock.now_ns()))
                self._sj = m
                j = m + 1
                if hear and trade_l[j - 1]:
                    sd = side_l[j - 1]
                    self.bus.publish(
                        TradeReported(
                            ts_event=now,
                            symbol=sym,
                            px_ticks=px_l[j - 1],
                            qty_lots=qty_l[j - 1],
                            aggressor=Side(sd) if sd in (BUY, SELL) else None,
                        )
                    )
                if end_l[j - 1] and now >= next_call:
                    if self.book_interval_ns:
                        next_call = now + self.book_interval_ns
                    bid = self.view.best_bid()
                    ask = self.view.best_ask()
                    calls += 1
                    self.bus.publish(
                        BookUpdated(
                            ts_event=now,
                            symbol=sym,
                            bid_px_ticks=bid[0] if bid else 0,
                            bid_qty_lots=bid[1] if bid else 0,
                            ask_px_ticks=ask[0] if ask else 0,
                            ask_qty_lots=ask[1] if ask else 0,
                        )
                    )
        if progress is not None:
            progress(i, n)
        if stopped:
            for s in self.strategies:
                self.runner.stop(s.strategy_id, "stopped: backtest canceled")
        last = ts_l[i - 1] if i else ts_l[0]
        if journal is not None:
            journal.info(
                last,
                f"backtest {'canceled' if stopped else 'done'}: {i} of {n} events, "
                f"{self._sent_orders} orders, {self._fills} fills",
            )
        return GenericResult(
            events=i,
            strategy_calls=calls,
            orders=self._sent_orders,
            fills=self._fills,
            canceled=stopped,
            last_ts=last,
            cash_ticks=cash[0],
        )

    def _see_rows(self, rows: npt.NDArray[np.void]) -> None:
        """Apply rows (validated with the day in ``_setup``) to the strategies' book."""
        local = self.local
        if isinstance(local, L2Books):
            l2_apply(local._q, local._st, rows)
            self.view.refresh()  # type: ignore[union-attr]
        else:
            local.apply(rows)

    # ------------------------------------------------------------------ venue side
    def _sink(self) -> ReportSink:
        return self.manager

    def _request(self, kind: Request, order: Order, request: PendingRequest | None) -> None:
        # Latencies of the event the strategies saw last, as the fast path takes them.
        self._sent_orders += kind == "new"
        now = self.clock.now_ns()
        k = max(self._sj, 0)
        olat = int(self._olat[k] if self._olat.shape[0] > 1 else self._olat[0])
        t = max(now + olat, self._last_arrive)
        self._last_arrive = t
        self._arrivals.append(_Request(kind, order, request, t, next(self._seq)))

    def _resp(self) -> int:
        """Return the response latency of the venue's last event (as the fast path)."""
        if self._rlat.shape[0] == 1:
            return int(self._rlat[0])
        return int(self._rlat[max(self._vi, 0)])

    def _later(self, ts: int, fn: Callable[[], None]) -> None:
        # answers reach the order manager in the order the venue gave them
        t = max(ts + self._resp(), self._last_answer)
        self._last_answer = t
        heapq.heappush(self._heap, (t, next(self._seq), fn))

    def _report(self, ts: int, rep: dict[str, Any]) -> None:
        # the report is made when it arrives (it carries its receive time; frozen)
        sink = self.manager

        def run() -> None:
            sink.on_execution_report(ExecutionReport(**rep, ts_recv=self.clock.now_ns()))

        self._later(ts, run)

    def _arrive(self, r: _Request) -> None:
        """Carry out a request at the venue at its arrival time; schedule the answers."""
        o = r.order
        t = r.t_arrive
        self._settle(t)  # earlier arrivals and cancels are exact at t
        if r.kind in ("new", "replace"):
            trading, why = self.status.at(t)
            if not trading:  # the venue's recorded status: no new orders, no replaces
                self.halted_requests += 1
                text = f"the market is not open for trading (status {why}): {r.kind} refused"
                if r.kind == "new":
                    self._report(
                        t, self._exec(o, ExecType.REJECTED, OrdStatus.REJECTED, t, text=text)
                    )
                else:
                    self._cancel_reject(r, t, text)
                return
        if r.kind == "new":
            self._arrive_new(o, t)
        elif r.kind == "cancel":
            row = self._row_of.get(o.order_id, -1)
            if row < 0 or self.own.status(row) in (OWN_FILLED, OWN_CANCELED, OWN_PENDING):
                self._cancel_reject(r, t)
                return
            self.own.cancel(row, t)
            self._settle(t)
            cum = self._cum(row, o)
            self._report(
                t, self._exec(o, ExecType.CANCELED, OrdStatus.CANCELED, t, cum=cum, leaves=0)
            )
        elif r.kind == "replace":
            self._arrive_replace(r, o, t)
        else:
            self._report(t, self._exec(o, ExecType.ORDER_STATUS, o.status, t))

    def _arrive_new(self, o: Order, t: int) -> None:
        px = o.px_ticks
        if o.ord_type is OrdType.MARKET:
            px = self._market_px(o.side)
        elif not self._in_window(px):
            self._report(
                t,
                self._exec(
                    o,
                    ExecType.REJECTED,
                    OrdStatus.REJECTED,
                    t,
                    text=(f"price {px} ticks is outside the simulated book window"),
                ),
            )
            return
        row = self.own.add(int(o.side), px, o.qty_lots, t)
        self._rows[row] = o
        self._row_of[o.order_id] = row
        self._report(t, self._exec(o, ExecType.NEW, OrdStatus.NEW, t, cum=0))
        self._settle(t)  # joins its queue, or takes liquidity at once
        ioc = o.time_in_force in (TimeInForce.IOC, TimeInForce.FOK)
        if (ioc or o.ord_type is OrdType.MARKET) and self.own.status(row) == OWN_ACTIVE:
            self.own.cancel(row, t)
            self._settle(t)
            self._report(
                t,
                self._exec(
                    o,
                    ExecType.EXPIRED,
                    OrdStatus.EXPIRED,
                    t,
                    cum=self._cum(row, o),
                    leaves=0,
                    text="IOC remainder canceled",
                ),
            )

    def _arrive_replace(self, r: _Request, o: Order, t: int) -> None:
        row = self._row_of.get(o.order_id, -1)
        req = r.request
        if row < 0 or req is None or self.own.status(row) not in (OWN_ACTIVE,):
            self._cancel_reject(r, t)
            return
        cum = self._cum(row, o)
        leaves = req.qty_lots - cum
        if leaves <= 0 or not self._in_window(req.px_ticks):
            self._cancel_reject(r, t)
            return
        self.own.cancel(row, t)
        self._settle(t)
        self._prior[o.order_id] = cum  # the old row cannot fill any more
        new = self.own.add(int(o.side), req.px_ticks, leaves, t)
        self._rows[new] = o
        self._row_of[o.order_id] = new
        status = OrdStatus.PARTIALLY_FILLED if cum else OrdStatus.NEW
        self._report(
            t,
            self._exec(
                o,
                ExecType.REPLACED,
                status,
                t,
                cum=cum,
                leaves=leaves,
                qty=req.qty_lots,
                px=req.px_ticks,
                clordid=req.client_order_id,
            ),
        )
        self._settle(t)

    def _settle(self, t: int) -> None:
        fills = self.own.settle(t)
        if fills.shape[0]:
            self._report_fills(fills)

    def _cum(self, row: int, o: Order) -> int:
        r = self.own.own[row]
        prior = self._prior.get(o.order_id, 0) if self._row_of.get(o.order_id) == row else 0
        return int(r["qty"] - r["leaves"]) + prior

    def _report_fills(self, fills: npt.NDArray[np.void]) -> None:
        for f in fills:
            row = int(f["order_id"]) - 1
            o = self._rows[row]
            cum = self._cum(row, o)
            leaves = self.own.leaves(row)
            done = leaves == 0
            self._fills += 1
            ts = int(f["ts"])
            status = OrdStatus.FILLED if done else OrdStatus.PARTIALLY_FILLED
            self._report(
                ts,
                self._exec(
                    o,
                    ExecType.TRADE,
                    status,
                    ts,
                    cum=cum,
                    leaves=leaves,
                    last_qty=int(f["qty"]),
                    last_px=int(f["px"]),
                    exec_id=f"E{next(self._exec_ids)}",
                ),
            )

    def _cancel_reject(self, r: _Request, t: int, why: str = "") -> None:
        req = r.request
        o = r.order
        row = self._row_of.get(o.order_id, -1)
        st = self.own.status(row) if row >= 0 else -1
        what = "cancel" if r.kind == "cancel" else "replace"
        if why:
            text = why
        elif st == OWN_FILLED:
            text = f"too late to {what}: the order is filled"
        elif st == OWN_CANCELED:
            text = f"too late to {what}: the order is canceled"
        else:
            text = f"cannot {what}: quantity or price not acceptable"
        rej: dict[str, Any] = {
            "client_order_id": req.client_order_id if req is not None else o.client_order_id,
            "orig_client_order_id": o.client_order_id,
            "venue_order_id": o.venue_order_id,
            "ord_status": None,
            "response_to_replace": r.kind == "replace",
            "reason": 0,
            "text": text,
        }
        sink = self.manager

        def run() -> None:
            sink.on_cancel_reject(CancelReject(**rej, ts_recv=self.clock.now_ns()))

        self._later(t, run)

    def _exec(
        self,
        o: Order,
        exec_type: ExecType,
        status: OrdStatus,
        ts: int,
        *,
        cum: int | None = None,
        leaves: int | None = None,
        last_qty: int = 0,
        last_px: int = 0,
        qty: int = 0,
        px: int = 0,
        exec_id: str = "",
        clordid: str = "",
        text: str = "",
    ) -> dict[str, Any]:
        """Return an :class:`ExecutionReport`'s fields but its receive time."""
        c = o.cum_qty_lots if cum is None else cum
        return {
            "client_order_id": clordid or o.client_order_id,
            "orig_client_order_id": o.client_order_id if clordid else "",
            "venue_order_id": f"V{o.order_id}",
            "exec_id": exec_id,
            "exec_type": exec_type,
            "ord_status": status,
            "side": o.side,
            "leaves_qty_lots": (o.qty_lots - c) if leaves is None else leaves,
            "cum_qty_lots": c,
            "last_qty_lots": last_qty,
            "last_px_ticks": last_px,
            "order_qty_lots": qty,
            "px_ticks": px,
            "text": text,
            "ts_event": ts,
        }

    def _in_window(self, px: int) -> bool:
        b = self.own.book
        if isinstance(b, L2Books):
            return True
        return b.px_min <= px < b.px_min + b.n_levels

    def _market_px(self, side: Side) -> int:
        b = self.own.book
        if isinstance(b, L2Books):
            return 1 << 40 if side is Side.BUY else -(1 << 40)
        return b.px_min + b.n_levels - 1 if side is Side.BUY else b.px_min
