# SPDX-License-Identifier: MIT
"""The compiled fast path: a strategy whose decision step runs inside the replay kernel.

Calling a Python method on every market event caps a replay at a few hundred thousand events
per second. The fast path therefore runs compiled strategies: a
:class:`engine.strategy.quoting.QuotingStrategy` (the live engine and the generic backtest run
the same class through the order manager) has its quoting rule compiled as a C callback,
which :func:`engine.backtest._kernels.quote_decide` calls inside the replay loop. The built-in
:class:`engine.strategy.examples.CompiledMarketMaker` is one. The Python side of the strategy
still runs, at a coarser cadence: between chunks of the replay its ``on_fill`` receives every
fill, ``on_timer`` the simulated time, and parameters it changed (or that a sweep set) take
effect from the next chunk.

The results (every order's life and every fill) are written afterwards to a journal in the
engine's format by :func:`write_journal`, with the same events the order manager publishes
live (``OrderChanged`` with a full ``OrderView``, ``OrderFilled``).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.backtest import _kernels as bk
from engine.backtest.journal import BacktestJournal
from engine.backtest.models import ConstantLatency, LatencyModel, Level, at_times
from engine.backtest.rules import (
    MarketRules,
    TradingStatus,
    l2_window,
    l3_window,
    market_rules,
)
from engine.book.l2 import L2Books
from engine.book.l3 import L3Arrays, L3Book
from engine.enums import OrdStatus, OrdType, Side, StrategyState, TimeInForce
from engine.events import OrderChanged, OrderFilled, OrderView, StrategyStatusChanged
from engine.instruments import Instrument
from engine.matching import _kernels as mk
from engine.matching.models import ConservativeQueue, QueueModel
from engine.strategy.base import BookView
from engine.strategy.quoting import QUOTES_N, QuotingStrategy
from engine.types import (
    FILL_DTYPE,
    L2_EVENT_DTYPE,
    L3_EVENT_DTYPE,
    L3S_FREE,
    OWN_CANCELED,
    OWN_FILLED,
    OWN_ORDER_DTYPE,
    OWN_PENDING,
    PRIO_DEFAULT,
)

_NEVER = int(np.iinfo(np.int64).max)


@dataclass(frozen=True, slots=True, kw_only=True)
class FastResult:
    """What a fast-path run produced (arrays owned by the result)."""

    orders: npt.NDArray[np.void]  # OWN_ORDER_DTYPE, one row per order, order_id = row + 1
    sent_ns: npt.NDArray[np.int64]  # local time each order was sent
    cancel_sent_ns: npt.NDArray[np.int64]  # local time a cancel was sent, 0: never
    fills: npt.NDArray[np.void]  # FILL_DTYPE in venue time order
    response_ns: npt.NDArray[np.int64]  # response latency of each fill (when it was seen)
    order_response_ns: npt.NDArray[np.int64]  # response latency at each order's arrival
    cancel_response_ns: npt.NDArray[np.int64]  # response latency at each cancel's arrival
    events: int  # market events replayed
    calls: int  # strategy calls (events with a two-sided book)
    decisions: int  # decision steps that ran out of line
    position: int  # final position, lots
    last_ts: int  # venue time of the last replayed event
    mark_px: int  # mid at the end (ticks; 0 if the book was one-sided)
    canceled: bool  # the run was stopped before the end of the data

    @property
    def pnl_ticks(self) -> float:
        """Cash flow of the fills plus the position marked at :attr:`mark_px`, tick-lots."""
        f = self.fills
        cash = -float((f["side"].astype(np.int64) * f["qty"] * f["px"]).sum())
        return cash + self.position * self.mark_px


class FastContext:
    """The strategy context during a fast-path run: time, static data and position only.

    Orders are the compiled step's business in the fast path; a Python handler that tries to
    send or cancel gets a clear error instead of an order that the kernel would not see.
    """

    def __init__(self, instrument: Instrument) -> None:
        self._instrument = instrument
        self.now = 0
        self.pos = 0

    def now_ns(self) -> int:
        """Return the simulated time."""
        return self.now

    def instrument(self, symbol: str) -> Instrument:
        """Return the backtested instrument."""
        if symbol != self._instrument.symbol:
            raise KeyError(f"the backtest trades {self._instrument.symbol!r}, not {symbol!r}")
        return self._instrument

    def book(self, symbol: str) -> BookView | None:
        """Return ``None``: the book lives inside the kernel during a fast-path run."""
        return None

    def _refuse(self, what: str) -> Any:
        raise RuntimeError(
            f"{what} from Python is not available in the compiled fast path; "
            "run the strategy with the generic backtest (--generic) instead"
        )

    def send(self, **request: Any) -> OrderView:
        """Refuse: orders come from the compiled step."""
        return self._refuse("sending orders")  # type: ignore[no-any-return]

    def cancel(self, order_id: int) -> bool:
        """Refuse: orders come from the compiled step."""
        return self._refuse("canceling orders")  # type: ignore[no-any-return]

    def replace(self, order_id: int, qty_lots: int | None, px_ticks: int | None) -> bool:
        """Refuse: orders come from the compiled step."""
        return self._refuse("replacing orders")  # type: ignore[no-any-return]

    def cancel_all(self, strategy_id: int, symbol: str | None) -> int:
        """Refuse: orders come from the compiled step."""
        return self._refuse("canceling orders")  # type: ignore[no-any-return]

    def flatten(self, strategy_id: int, symbol: str | None) -> None:
        """Refuse: orders come from the compiled step."""
        self._refuse("flattening")

    def position(self, strategy_id: int, symbol: str) -> int:
        """Return the position at the last chunk boundary, lots."""
        return self.pos

    def working_orders(self, strategy_id: int, symbol: str | None) -> list[OrderView]:
        """Return no orders (they live in the kernel)."""
        return []


Progress = Callable[[int, int], None]
Cancel = Callable[[], bool]


class FastBacktest:
    """Replay one instrument's events with a compiled :class:`QuotingStrategy`.

    Parameters
    ----------
    strategy : QuotingStrategy
        The strategy (its parameters are read at every chunk boundary).
    instrument : Instrument
        The instrument traded (its symbol goes into the journal).
    level : {"l2", "l3"}
        ``L2_EVENT_DTYPE`` rows with a queue model, or ``L3_EVENT_DTYPE`` rows (exact queue).
    queue : QueueModel
        L2 queue model (ignored in L3).
    latency : LatencyModel
        Feed, order and response latencies.
    n_levels : int, optional
        L2 price window, ticks (default: sized from the data, see
        :func:`engine.backtest.rules.l2_window`; it re-centres when too narrow).
    chunk_events : int
        Events per kernel call; between chunks the Python hooks run and progress/cancel are
        checked.
    """

    def __init__(
        self,
        strategy: QuotingStrategy,
        instrument: Instrument,
        *,
        level: Level = "l2",
        queue: QueueModel | None = None,
        latency: LatencyModel | None = None,
        n_levels: int | None = None,
        chunk_events: int = 1 << 21,
    ) -> None:
        if level not in ("l2", "l3"):
            raise ValueError(f"level: must be 'l2' or 'l3', got {level!r}")
        if chunk_events < 1:
            raise ValueError(f"chunk_events: must be >= 1, got {chunk_events}")
        if not isinstance(strategy, QuotingStrategy):
            raise TypeError(
                f"the fast path runs compiled quoting strategies; {type(strategy).__name__} is "
                "a Python strategy (run it on the generic path)"
            )
        self.strategy = strategy
        self.instrument = instrument
        self.level = level
        self.queue = queue if queue is not None else ConservativeQueue()
        self.latency = latency if latency is not None else ConstantLatency()
        self.n_levels = n_levels
        self.chunk_events = chunk_events
        self.rules = MarketRules(0)  # of the last run

    def run(
        self,
        events: npt.NDArray[np.void],
        *,
        progress: Progress | None = None,
        cancel: Cancel | None = None,
        open_ts: int | None = None,
        status: TradingStatus | None = None,
    ) -> FastResult:
        """Replay ``events``; return the orders and fills.

        The market-state rules of :mod:`engine.backtest.rules` apply: events before the live
        market (snapshot, pre-open, crossed book; ``open_ts`` is the session's first trade
        when the events carry none) only rebuild the book, and the strategy sees whole venue
        updates. ``progress(done, total)`` is called after every chunk; ``cancel()`` returning true
        stops the run at the next chunk boundary (the result then covers the events replayed).
        ``status`` is the instrument's recorded trading status: the live market starts no
        earlier than it says the market trades (a recording that begins in a pre-open).

        Raises
        ------
        ValueError
            For events of the wrong dtype, out of time order, or (L3) malformed; for a
            ``status`` that halts the market after it started trading (the compiled strategy
            cannot be held back: run those days on the generic path).
        """
        want = L2_EVENT_DTYPE if self.level == "l2" else L3_EVENT_DTYPE
        if events.dtype != want:
            raise ValueError(
                f"events: a {self.level.upper()} backtest needs {self.level.upper()}_EVENT_DTYPE "
                f"rows, got dtype {events.dtype}"
            )
        ev = np.ascontiguousarray(events)
        n = int(ev.shape[0])
        bad = int(bk.first_unsorted(ev["ts"])) if n else -1
        if bad > 0:
            raise ValueError(
                f"events: row {bad} has ts {int(ev['ts'][bad])} before row {bad - 1} "
                f"({int(ev['ts'][bad - 1])}); events must be in time order"
            )
        feed, olat, rlat = self.latency.arrays(n)
        self.rules = market_rules(ev, self.level, open_ts, self.n_levels, count_crossed=False)
        if status is not None:
            self.rules = _after_preopen(self.rules, status, ev["ts"])
        return self._run(ev, feed, olat, rlat, progress, cancel)

    # ------------------------------------------------------------------ internals
    def _books(self, ev: npt.NDArray[np.void]) -> L2Books | L3Arrays:
        if self.level == "l2":
            n_levels, centre = l2_window(ev, self.n_levels)
            return L2Books(1, n_levels, centre=centre)
        px_min, n = l3_window(ev)
        return L3Arrays(px_min, n, 1 << 16, PRIO_DEFAULT)

    def _run(  # noqa: C901 (the chunk loop with its growth cases)
        self,
        ev: npt.NDArray[np.void],
        feed: npt.NDArray[np.int64],
        olat: npt.NDArray[np.int64],
        rlat: npt.NDArray[np.int64],
        progress: Progress | None,
        cancel: Cancel | None,
    ) -> FastResult:
        n = int(ev.shape[0])
        books = self._books(ev)
        if not isinstance(books, L2Books):  # (L2: market_rules checked every row already)
            L3Book.over(books).validate(ev)
        # own-order rows: sized for a busy quoting day, doubled when full
        cap = max(4096, min(n // 32, 1 << 18))
        own = np.zeros(cap, OWN_ORDER_DTYPE)
        t0 = np.zeros(cap, np.int64)
        tc = np.zeros(cap, np.int64)
        act = np.zeros(cap, np.int64)
        scratch = np.zeros(cap, FILL_DTYPE)
        log = np.zeros(1 << 16, FILL_DTYPE)
        rs = np.zeros(mk.RS_N, np.int64)
        rs[mk.RS_CANCEL_TS] = _NEVER
        ox = np.empty((1, 2), np.int64)
        ox[0, 0] = np.iinfo(np.int64).min
        ox[0, 1] = _NEVER
        ss = np.zeros(bk.SS_N, np.int64)
        ss[bk.SS_BID_J] = ss[bk.SS_ASK_J] = -1
        ss[bk.SS_WAIT_BID] = ss[bk.SS_WAIT_ASK] = -1
        ss[bk.SS_ARR_BID] = ss[bk.SS_ARR_ASK] = _NEVER
        rep = np.full(cap, -1, np.int64)
        pend = np.zeros((1 << 12, 5), np.int64)  # strategy calls waiting for their local time
        ss[bk.SS_LAST_BB] = ss[bk.SS_LAST_BA] = -1
        ring = np.zeros((bk.RING, 4), np.int64)
        fills: list[npt.NDArray[np.void]] = []
        strat = self.strategy
        rule = strat.rule.cfunc
        ust = strat.rule_state
        ust[:] = 0.0  # every run starts from a fresh rule state
        qo = np.zeros(QUOTES_N, np.int64)
        ctx = FastContext(self.instrument)
        strat.attach(ctx)
        strat.state = StrategyState.RUNNING
        code, param = self.queue.code
        gend = self.rules.group_end
        k = min(self.rules.live_from, n)
        if k:  # warm-up: the book only (engine.backtest.rules)
            if isinstance(books, L2Books):
                books.apply(ev[:k])
            else:
                L3Book.over(books).apply(ev[:k])
        stopped = False
        seen_fills = 0
        while k < n or _waiting(ss):
            stop = min(n, k + self.chunk_events)
            final = stop == n
            pp = strat.rule_params()
            ev_c = ev[:stop]
            f_c = feed if feed.shape[0] == 1 else feed[:stop]
            o_c = olat if olat.shape[0] == 1 else olat[:stop]
            r_c = rlat if rlat.shape[0] == 1 else rlat[:stop]
            while k < stop or (final and _waiting(ss)):
                if isinstance(books, L2Books):
                    k = int(
                        bk.bt_l2_quote(
                            rule,
                            books._q,
                            books._st,
                            ev_c,
                            k,
                            own,
                            t0,
                            tc,
                            act,
                            rs,
                            ox,
                            scratch,
                            log,
                            ss,
                            pp,
                            ust,
                            qo,
                            ring,
                            f_c,
                            o_c,
                            r_c,
                            code,
                            param,
                            gend,
                            rep,
                            pend,
                            final,
                        )
                    )
                else:
                    k = int(
                        bk.bt_l3_quote(
                            rule,
                            books.o,
                            books.lv,
                            books.st,
                            books.keys,
                            books.vals,
                            books.free,
                            ev_c,
                            k,
                            own,
                            t0,
                            tc,
                            act,
                            rs,
                            ox,
                            scratch,
                            log,
                            ss,
                            pp,
                            ust,
                            qo,
                            ring,
                            f_c,
                            o_c,
                            r_c,
                            gend,
                            rep,
                            pend,
                            final,
                        )
                    )
                if k >= stop and not (final and _waiting(ss)):
                    break
                # out of room somewhere: drain the log, grow what is full, resume
                nlog = int(ss[bk.SS_NLOG])
                if nlog:
                    fills.append(log[:nlog].copy())
                    ss[bk.SS_NLOG] = 0
                if int(ss[bk.SS_NOWN]) + 4 > own.shape[0]:
                    own, t0, tc, act, scratch = _grow(own, t0, tc, act, scratch)
                    rep = np.concatenate([rep, np.full(own.shape[0] - rep.shape[0], -1)])
                if isinstance(books, L3Arrays) and books.st[L3S_FREE] == 0:
                    books.grow()
                if int(ss[bk.SS_PTAIL] - ss[bk.SS_PHEAD]) + 2 >= pend.shape[0]:
                    pend = _grow_pend(pend, ss)
            # the Python side of the strategy, at chunk boundaries
            nlog = int(ss[bk.SS_NLOG])
            if nlog:
                fills.append(log[:nlog].copy())
                ss[bk.SS_NLOG] = 0
            last_ts = int(ev["ts"][k - 1]) if k else 0
            ctx.now = last_ts
            ctx.pos = int(ss[bk.SS_POS])
            seen_fills = self._deliver_fills(fills, seen_fills, own)
            if strat.timer_interval_ms:
                strat.on_timer(last_ts)
            if progress is not None:
                progress(k, n)
            if cancel is not None and k < n and cancel():
                stopped = True
                break
        nown = int(ss[bk.SS_NOWN])
        all_fills = np.concatenate(fills) if fills else np.zeros(0, FILL_DTYPE)
        all_fills["strategy"] = strat.strategy_id
        ev_ts = ev["ts"]
        orders = own[:nown].copy()
        mark = 0
        if isinstance(books, L2Books):
            bid, ask = books.best_bid(0), books.best_ask(0)
        else:
            b3 = L3Book.over(books)
            bid, ask = b3.best_bid(), b3.best_ask()
        if bid is not None and ask is not None:
            mark = (bid[0] + ask[0]) // 2
        strat.state = StrategyState.STOPPED
        return FastResult(
            orders=orders,
            sent_ns=t0[:nown].copy(),
            cancel_sent_ns=tc[:nown].copy(),
            fills=all_fills,
            response_ns=at_times(rlat, ev_ts, all_fills["ts"]),
            order_response_ns=at_times(rlat, ev_ts, orders["ts"]),
            cancel_response_ns=at_times(rlat, ev_ts, np.minimum(orders["cancel_ts"], ev_ts[-1])),
            events=k,
            calls=int(ss[bk.SS_CALLS]),
            decisions=int(ss[bk.SS_DECISIONS]),
            position=int(ss[bk.SS_POS]),
            last_ts=int(ev_ts[k - 1]) if k else 0,
            mark_px=mark,
            canceled=stopped,
        )

    def _deliver_fills(
        self, fills: Sequence[npt.NDArray[np.void]], seen: int, own: npt.NDArray[np.void]
    ) -> int:
        strat = self.strategy
        if type(strat).on_fill is QuotingStrategy.on_fill:
            return sum(f.shape[0] for f in fills)  # nothing to call
        i = 0
        for chunk in fills:
            for f in chunk:
                if i >= seen:
                    j = int(f["order_id"]) - 1
                    strat.on_fill(_fill_event(f, own[j], strat.strategy_id, self.instrument, i))
                i += 1
        return i


def _after_preopen(
    rules: MarketRules, status: TradingStatus, ts: npt.NDArray[np.int64]
) -> MarketRules:
    """Return ``rules`` live from where ``status`` first says the market trades.

    Raises ``ValueError`` if the market halts again after that.
    """
    halted = status.halted_rows(ts)
    live = min(rules.live_from, ts.shape[0])
    tail = halted[live:]
    start = live + (int(np.argmin(tail)) if bool(tail.any()) and not bool(tail.all()) else 0)
    if bool(tail.all()):
        start = ts.shape[0]
    if bool(halted[start:].any()):
        at = start + int(np.argmax(halted[start:]))
        _on, why = status.at(int(ts[at]))
        raise ValueError(
            f"status: the market halts at event {at:,} (ts {int(ts[at])}, status {why}) after "
            "it traded; the fast path cannot hold its compiled strategy back: run the generic "
            "path (GenericBacktest) for this day"
        )
    return replace(rules, live_from=max(live, start))


def _waiting(ss: npt.NDArray[np.int64]) -> bool:
    """Whether strategy calls still wait for their local time (feed latency)."""
    return bool(ss[bk.SS_PHEAD] < ss[bk.SS_PTAIL])


def _grow_pend(pend: npt.NDArray[np.int64], ss: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Double the queue of waiting strategy calls, keeping their order."""
    h, t = int(ss[bk.SS_PHEAD]), int(ss[bk.SS_PTAIL])
    m = pend.shape[0]
    out = np.zeros((2 * m, pend.shape[1]), np.int64)
    idx = np.arange(h, t)
    out[idx & (2 * m - 1)] = pend[idx & (m - 1)]
    return out


def _grow(
    own: npt.NDArray[np.void],
    t0: npt.NDArray[np.int64],
    tc: npt.NDArray[np.int64],
    act: npt.NDArray[np.int64],
    scratch: npt.NDArray[np.void],
) -> tuple[
    npt.NDArray[np.void],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.void],
]:
    cap = 2 * own.shape[0]
    out = []
    for a in (own, t0, tc, act, scratch):
        g = np.zeros(cap, a.dtype)
        g[: a.shape[0]] = a
        out.append(g)
    return out[0], out[1], out[2], out[3], out[4]


def _fill_event(
    f: np.void, order: np.void, strategy_id: int, instrument: Instrument, i: int
) -> OrderFilled:
    j = int(f["order_id"])
    return OrderFilled(
        ts_event=int(f["ts"]),
        order_id=j,
        client_order_id=f"BT{j}",
        venue_order_id=f"V{j}",
        exec_id=f"E{i + 1}",
        strategy_id=strategy_id,
        symbol=instrument.symbol,
        side=Side(int(f["side"])),
        last_px_ticks=int(f["px"]),
        last_qty_lots=int(f["qty"]),
        leaves_qty_lots=int(order["leaves"]),
        ts_recv=int(f["ts"]),
    )


# ---------------------------------------------------------------------------- journal
_NEW, _ACK, _FILL, _CXL_SENT, _CXL_DONE, _CXL_REJ, _REFUSED = range(7)


def journal_steps(result: FastResult) -> list[tuple[int, int, int, int]]:
    """Return every journaled step ``(ts, order row, kind, fill row)`` in time order.

    Ties are broken by order row, then kind (an ack before the fills it precedes), then fill
    row, so the order is fully determined by the result.
    """
    o = result.orders
    steps: list[tuple[int, int, int, int]] = []
    arrive = o["ts"].tolist()
    cts = o["cancel_ts"].tolist()
    status = o["status"].tolist()
    sent = result.sent_ns.tolist()
    csent = result.cancel_sent_ns.tolist()
    oresp = result.order_response_ns.tolist()
    cresp = result.cancel_response_ns.tolist()
    last_fill: dict[int, int] = {}
    f_ts = result.fills["ts"].tolist()
    f_row = (result.fills["order_id"] - 1).tolist()
    f_resp = result.response_ns.tolist()
    for i, (t, j) in enumerate(zip(f_ts, f_row, strict=True)):
        steps.append((t + f_resp[i], j, _FILL, i))
        last_fill[j] = t
    for j in range(o.shape[0]):
        steps.append((sent[j], j, _NEW, -1))
        st = status[j]
        before_arrival = cts[j] <= arrive[j]
        if not before_arrival and st != OWN_PENDING:
            steps.append((arrive[j] + oresp[j], j, _ACK, -1))
        elif before_arrival and not csent[j] and st == OWN_CANCELED:
            # a replacement refused on arrival: the order it replaces was done (_replacement)
            steps.append((arrive[j] + oresp[j], j, _REFUSED, -1))
        if csent[j]:
            steps.append((csent[j], j, _CXL_SENT, -1))
            if st == OWN_CANCELED:
                steps.append((max(cts[j], arrive[j]) + cresp[j], j, _CXL_DONE, -1))
            elif st == OWN_FILLED and cts[j] != _NEVER and cts[j] > last_fill.get(j, 0):
                steps.append((cts[j] + cresp[j], j, _CXL_REJ, -1))
    steps.sort()
    return steps


def write_journal(
    journal: BacktestJournal,
    result: FastResult,
    strategy: QuotingStrategy,
    instrument: Instrument,
) -> None:
    """Append the run's order flow to ``journal`` as the order manager would publish it."""
    sid = strategy.strategy_id
    sym = instrument.symbol
    o = result.orders
    t_start = int(result.sent_ns[0]) if o.shape[0] else result.last_ts
    params = strategy.parameter_values()
    journal.on_event(
        StrategyStatusChanged(
            ts_event=t_start,
            strategy_id=sid,
            name=strategy.name,
            state=StrategyState.RUNNING,
            parameters=params,
            change="started",
        )
    )
    n = o.shape[0]
    cum = [0] * n
    notional = [0] * n
    stat = [int(OrdStatus.PENDING_NEW)] * n
    pending = [""] * n
    acked = [0] * n
    px = o["px"].tolist()
    qty = o["qty"].tolist()
    side = o["side"].tolist()
    sent = result.sent_ns.tolist()
    f = result.fills
    f_px, f_qty, f_ts = f["px"].tolist(), f["qty"].tolist(), f["ts"].tolist()
    lmt, day = int(OrdType.LIMIT), int(TimeInForce.DAY)
    done_states = (int(OrdStatus.FILLED), int(OrdStatus.CANCELED))
    put = journal.on_fields

    def changed(j: int, ts: int, change: str) -> None:
        # OrderChanged(ts_event, OrderView(...), change), flattened in field order
        c = cum[j]
        view = (
            j + 1, f"BT{j + 1}", (), f"V{j + 1}" if acked[j] else "", sid, sym, side[j], lmt,
            day, qty[j], px[j], stat[j], c, 0 if stat[j] in done_states else qty[j] - c,
            notional[j] / c if c else 0.0, pending[j], "", sent[j], sent[j], acked[j], ts,
        )  # fmt: skip
        put(OrderChanged, (ts, view, change))

    for ts, j, kind, i in journal_steps(result):
        if kind == _NEW:
            change = "new"
        elif kind == _ACK:
            acked[j] = ts
            stat[j] = int(OrdStatus.PENDING_CANCEL if pending[j] else OrdStatus.NEW)
            change = "ack"
        elif kind == _FILL:
            q = f_qty[i]
            cum[j] += q
            notional[j] += q * f_px[i]
            if not acked[j]:
                acked[j] = ts
            done = cum[j] >= qty[j]
            if done:
                stat[j], pending[j] = int(OrdStatus.FILLED), ""
            else:
                stat[j] = int(
                    OrdStatus.PENDING_CANCEL if pending[j] else OrdStatus.PARTIALLY_FILLED
                )
            put(OrderFilled, (  # ts_event: the venue's time of the fill, as the OMS journals it
                f_ts[i], j + 1, f"BT{j + 1}", f"V{j + 1}", f"E{i + 1}", sid, sym, side[j],
                f_px[i], q, qty[j] - cum[j], ts,
            ))  # fmt: skip
            change = "fill" if done else "partial fill"
        elif kind == _CXL_SENT:
            if stat[j] in done_states:
                continue  # already done as far as the strategy knew: no request
            pending[j] = "cancel"
            stat[j] = int(OrdStatus.PENDING_CANCEL)
            change = "cancel sent"
        elif kind == _CXL_DONE:
            stat[j], pending[j] = int(OrdStatus.CANCELED), ""
            change = "canceled"
        elif kind == _REFUSED:
            stat[j] = int(OrdStatus.REJECTED)
            change = "rejected: the order it replaces is done"
        else:
            pending[j] = ""
            change = "cancel rejected"
        changed(j, ts, change)
    journal.on_event(
        StrategyStatusChanged(
            ts_event=result.last_ts,
            strategy_id=sid,
            name=strategy.name,
            state=StrategyState.STOPPED,
            parameters=params,
            change="stopped" if not result.canceled else "stopped: backtest canceled",
        )
    )
