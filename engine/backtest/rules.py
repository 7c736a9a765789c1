# SPDX-License-Identifier: MIT
"""Market-state rules of the backtester: when a replayed market may trade own orders.

Both paths (:mod:`engine.backtest.generic` and :mod:`engine.backtest.fast`) take these from
:func:`market_rules`, computed once per run from the events, so they apply them alike:

1. **Warm-up.** A replay starts with the state the data rebuilds before the market trades:
   snapshot rows (a day's leading ``L2_CLEAR`` and the levels at its time), a pre-open
   auction and a crossed or one-sided book. The data carry no trading status, so a pre-open
   is inferred: a book that ends an update crossed before the session's first trade
   (``open_ts``) is an auction, and the market opens at that trade. Those events are applied
   to the books only; strategies are started, see the book and may send orders from
   :attr:`MarketRules.live_from` on: the first venue update after them that follows a
   two-sided, uncrossed book. No own order can therefore exist, let alone fill, before the
   first live event or while the opening book is crossed.
2. **Whole updates.** Rows sharing a venue time are one update (a depth diff's levels, an
   MBO event's records): strategies see the book only after the last row of an update
   (:attr:`MarketRules.group_end`), never a half-applied one, and a request they send then
   reaches the venue after that update.
3. **Time passes.** With recorded latency the order and answer latency is at least
   :data:`MIN_LATENCY_NS` (:class:`engine.backtest.models.RecordedLatency`), so an order
   never fills in the nanosecond it was sent.

4. **Trading status.** Where the venue recorded it (CME MDP 3.0 ``SecurityStatus``, per
   instrument or per security group: :func:`engine.feeds.sbe.status.trading_status`), a
   :class:`TradingStatus` says when the instrument matched orders. While it does not (a
   halt, a pre-open, a pause), no own order fills on the generic path and a new order or a
   replace that arrives is rejected with the status in its text (cancels go through). In L2
   the venue applies the market's rows to its book only (queue positions stand still); in
   L3 adds and cancels go through the own orders as usual (exact queue positions; they
   cannot fill) and an execution changes the book only. The fast path, whose orders are
   made inside its kernel, starts after a leading pre-open and refuses a later halt.

Without a recorded status, later halts (a mid-day snapshot after a gap, a book crossed after
the open) are not detected here; :attr:`MarketRules.crossed_after` counts the updates that
end crossed after the open, so a run can say so.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.backtest.models import Level
from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.types import (
    L2_CLEAR,
    L2_TRADE,
    L3_CLEAR,
    L3_EXECUTE,
    PRIO_DEFAULT,
)

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]

#: A :class:`TradingStatus` as rows (``TradingStatus.save``: a ``.npy`` file of them).
STATUS_DTYPE = np.dtype([("ts", "<i8"), ("code", "<i8"), ("trading", "u1")])


@dataclass(frozen=True, slots=True, eq=False)
class TradingStatus:
    """When one instrument's market matched orders, from the venue's recorded status.

    ``ts`` are the (sorted) times the status changed, ``trading`` whether the market matched
    orders from each on, ``code`` the venue's status value (MDP 3.0: SecurityTradingStatus)
    and ``names`` its words. Before the first change the market is ``initial``.
    """

    ts: I64
    trading: npt.NDArray[np.bool_]
    code: I64
    names: tuple[str, ...] = ()
    initial: bool = True

    def __post_init__(self) -> None:
        n = self.ts.shape[0]
        if self.trading.shape[0] != n or self.code.shape[0] != n:
            raise ValueError("TradingStatus: ts, trading and code must have the same length")
        if n > 1 and bool((np.diff(self.ts) < 0).any()):
            raise ValueError("TradingStatus: ts must be sorted")

    @classmethod
    def always_trading(cls) -> "TradingStatus":
        """Return a status that never halts (what a run without a recorded status assumes)."""
        z = np.zeros(0, np.int64)
        return cls(z, np.zeros(0, np.bool_), z)

    def to_array(self) -> npt.NDArray[np.void]:
        """Return the changes as ``STATUS_DTYPE`` rows (the names are not kept)."""
        out = np.zeros(self.ts.shape[0], STATUS_DTYPE)
        out["ts"], out["code"], out["trading"] = self.ts, self.code, self.trading
        return out

    @classmethod
    def from_array(cls, rows: npt.NDArray[np.void], source: str = "status") -> "TradingStatus":
        """Return the status of ``STATUS_DTYPE`` rows.

        Raises
        ------
        ValueError
            If the rows are of another dtype or out of time order (names ``source``).
        """
        if rows.dtype != STATUS_DTYPE:
            raise ValueError(
                f"{source}: expected trading status rows {STATUS_DTYPE.descr}, got {rows.dtype}"
            )
        ts = rows["ts"].astype(np.int64)
        if ts.shape[0] > 1 and bool((np.diff(ts) < 0).any()):
            bad = int(np.argmax(np.diff(ts) < 0)) + 1
            raise ValueError(f"{source}: row {bad} is earlier than row {bad - 1}")
        return cls(ts, rows["trading"].astype(np.bool_), rows["code"].astype(np.int64))

    def save(self, path: str | Path) -> None:
        """Write the changes to a ``.npy`` file of ``STATUS_DTYPE`` rows."""
        np.save(Path(path), self.to_array(), allow_pickle=False)

    @classmethod
    def load(cls, path: str | Path) -> "TradingStatus":
        """Read a status :meth:`save` wrote.

        Raises
        ------
        ValueError
            If the file is not one (names the file and why).
        OSError
            If it cannot be read.
        """
        try:
            rows = np.load(Path(path), allow_pickle=False)
        except ValueError as e:
            raise ValueError(f"{path}: not a trading status file: {e}") from None
        if not isinstance(rows, np.ndarray):
            raise ValueError(f"{path}: not a trading status file (an .npz archive)")
        return cls.from_array(rows, str(path))

    def halts(self) -> I64:
        """Return the intervals ``[start, end)`` (``int64[k, 2]``) the market did not trade.

        A halt still on at the end ends at the largest int64.
        """
        out: list[tuple[int, int]] = []
        start = None if self.initial else int(np.iinfo(np.int64).min)
        for t, on in zip(self.ts.tolist(), self.trading.tolist(), strict=True):
            if not on and start is None:
                start = t
            elif on and start is not None:
                if t > start:
                    out.append((start, t))
                start = None
        if start is not None:
            out.append((start, int(np.iinfo(np.int64).max)))
        return np.array(out, np.int64).reshape(-1, 2)

    def halted_rows(self, ts: I64) -> npt.NDArray[np.bool_]:
        """Return which rows (their times ``ts``) fall while the market did not trade."""
        h = self.halts()
        if h.shape[0] == 0:
            return np.zeros(ts.shape[0], np.bool_)
        # a row is halted when the last halt starting at or before it has not ended
        k = np.searchsorted(h[:, 0], ts, side="right") - 1
        return np.asarray((k >= 0) & (ts < h[np.maximum(k, 0), 1]), np.bool_)

    def at(self, t: int) -> tuple[bool, str]:
        """Return whether the market traded at ``t``, and its status in words."""
        i = int(np.searchsorted(self.ts, t, side="right")) - 1
        if i < 0:
            return self.initial, "before any recorded status"
        name = self.names[i] if i < len(self.names) and self.names[i] else f"{self.code[i]}"
        return bool(self.trading[i]), name


#: Widest L2 price window a replay sizes from its data, ticks per side (16 MiB a book).
MAX_L2_LEVELS = 1 << 20


def l2_window(ev: npt.NDArray[np.void], n_levels: int | None = None) -> tuple[int, int]:
    """Return ``(n_levels, centre)`` of the L2 book both paths replay ``ev`` on.

    By default the window is the range the market traded over (the trade rows; without
    trades the 1st-99th percentile of the level prices) widened 1.5 times that range on each
    side, at least 4,096 ticks and at most :data:`MAX_L2_LEVELS`. A window the touch can walk
    to the edge of drops the levels beyond it (they are "deep" while the edge level is
    there), and quotes outside it cannot be placed; levels far from any trade (a deep
    snapshot) are dropped and counted. Both paths and :func:`market_rules` use this one
    window, so their books are the same.
    """
    from engine.backtest._kernels import trade_range

    m, lo, hi = (int(v) for v in trade_range(np.ascontiguousarray(ev)))
    if not m:
        px = ev["px"][ev["kind"] != L2_CLEAR]
        if px.size == 0:
            return n_levels or 4096, 0
        lo, hi = (int(v) for v in np.percentile(px, [1, 99]))
    if n_levels is None:
        n_levels = min(max(4096, 4 * (hi - lo + 1)), MAX_L2_LEVELS)
    return n_levels, (lo + hi) // 2


@dataclass(frozen=True, slots=True, eq=False)
class MarketRules:
    """What :func:`market_rules` found in one run's events."""

    live_from: int  # first event strategies see; earlier ones only rebuild the books
    group_end: U8 = None  # type: ignore[assignment]  # 1 where a row ends a venue update
    open_ts: int = 0  # the session's first trade (0: the data has none)
    snapshot_rows: int = 0  # rows of the leading snapshot (a CLEAR and its levels)
    crossed_after: int = 0  # updates after live_from ending crossed or one-sided (-1: uncounted)

    def describe(self, ts: npt.NDArray[np.int64]) -> str:
        """Return one line saying where the live market starts and why."""
        n = int(ts.shape[0])
        if self.live_from >= n:
            return f"no live market in {n:,} events (no trade, or the book never uncrossed)"
        parts = [f"live from event {self.live_from:,} of {n:,}"]
        if self.snapshot_rows:
            parts.append(f"{self.snapshot_rows:,} snapshot rows")
        if self.open_ts:
            parts.append(f"first trade at ts {self.open_ts}")
        if self.crossed_after > 0:
            parts.append(f"{self.crossed_after:,} updates crossed after it")
        return ", ".join(parts)


def group_ends(ts: npt.NDArray[np.int64]) -> U8:
    """Return 1 for each row that is the last of its venue time (ties form one update)."""
    end = np.ones(ts.shape[0], np.uint8)
    if ts.shape[0] > 1:
        end[:-1] = ts[1:] != ts[:-1]
    return end


def book_touch(
    ev: npt.NDArray[np.void], level: Level, n_levels: int | None = None
) -> npt.NDArray[np.int64]:
    """Replay ``ev`` on the book the paths use; return the touch after every row.

    ``int64[n, 4]``: bid px, bid qty, ask px, ask qty (``0, 0`` for a missing side).
    """
    touch = np.zeros((ev.shape[0], 4), np.int64)
    _book_for(ev, level, n_levels).apply(ev, touch)
    return touch


def _book_for(ev: npt.NDArray[np.void], level: Level, n_levels: int | None) -> L2Books | L3Book:
    """Return an empty book of the window the paths replay ``ev`` on."""
    if level == "l2":
        n_levels, centre = l2_window(ev, n_levels)
        return L2Books(1, n_levels, centre=centre)
    px_min, n = l3_window(ev)
    return L3Book(px_min, n, 1 << 12, PRIO_DEFAULT)


def l3_window(ev: npt.NDArray[np.void]) -> tuple[int, int]:
    """Return ``(px_min, n_levels)`` of the L3 book both paths replay ``ev`` on.

    The range of the adds' and modifies' prices, padded by a quarter of it (at least 64
    ticks) on each side.
    """
    from engine.backtest._kernels import order_px_range

    m, lo, hi = (int(v) for v in order_px_range(np.ascontiguousarray(ev)))
    if not m:
        lo, hi = 0, 1
    pad = max(64, (hi - lo) // 4)
    return lo - pad, hi - lo + 1 + 2 * pad


#: Rows replayed per L3 book call by :func:`book_states` (its touch buffer: 32 MiB).
_STATE_CHUNK = 1 << 20
SIDE_MISSING, SOUND, CROSSED = 0, 1, 2


def book_states(
    ev: npt.NDArray[np.void], level: Level, n_levels: int | None = None
) -> Iterator[tuple[int, U8]]:
    """Replay ``ev`` as :func:`book_touch` does, yielding each row's book state as it goes.

    Yields ``(b, state)``: ``state`` is ``uint8[n]`` filled for rows ``[0, b)`` so far, each
    :data:`SIDE_MISSING` (a side is empty), :data:`SOUND` (two-sided, bid below ask) or
    :data:`CROSSED` (bid at or above ask). L2 in one kernel pass; L3 in chunks of
    ``_STATE_CHUNK`` rows (a touch buffer of 32 MiB, not ``int64[n, 4]``), so a caller that
    has what it needs can stop early.
    """
    from engine.backtest._kernels import l2_book_state, touch_state

    n = int(ev.shape[0])
    out = np.zeros(n, np.uint8)
    book = _book_for(ev, level, n_levels)
    if isinstance(book, L2Books):  # one kernel pass, no touch per row
        book.validate(ev)
        l2_book_state(book._q, book._st, np.ascontiguousarray(ev), out)
        yield n, out
        return
    buf = np.zeros((min(n, _STATE_CHUNK), 4), np.int64)
    for a in range(0, n, _STATE_CHUNK):
        b = min(n, a + _STATE_CHUNK)
        book.apply(ev[a:b], buf[: b - a])
        touch_state(buf[: b - a], out[a:b])
        yield b, out


def market_rules(
    ev: npt.NDArray[np.void],
    level: Level,
    open_ts: int | None = None,
    n_levels: int | None = None,
    *,
    count_crossed: bool = True,
) -> MarketRules:
    """Return the :class:`MarketRules` of one run's events (see the module docstring).

    ``open_ts`` is the session's first trade when the events do not carry trades (an MBO
    day whose trades are stored apart); by default it is the first trade row of ``ev``
    (``L2_TRADE`` or ``L3_EXECUTE``). Without ``count_crossed`` the book is replayed only
    as far as the live market's start and :attr:`MarketRules.crossed_after` is -1 (the
    backtests, which replay the whole day themselves).
    """
    n = int(ev.shape[0])
    ts = ev["ts"]
    ends = group_ends(ts)
    if n == 0:
        return MarketRules(0, ends)
    is_l2 = level == "l2"
    clear = (ev["kind"] == L2_CLEAR) if is_l2 else (ev["action"] == L3_CLEAR)
    snap = 0
    if bool(clear[0]):  # a leading snapshot: the CLEAR and the rows at its time
        snap = int(np.searchsorted(ts, ts[0], side="right"))
    if open_ts is None:
        trade = (ev["kind"] == L2_TRADE) if is_l2 else (ev["action"] == L3_EXECUTE)
        t = np.flatnonzero(trade[snap:])
        open_ts = int(ts[snap + t[0]]) if t.size else 0
    end = ends.view(np.bool_)
    o = int(np.searchsorted(ts, open_ts, side="left")) if open_ts else 0
    first = -1  # known once the rows up to the open are replayed
    lo = 0  # candidate starts are scanned from lo + 1 on
    live = n
    state = np.zeros(n, np.uint8)
    for b, state in book_states(ev, level, n_levels):
        if first < 0 and b >= o:
            # a crossed book before the first trade is a pre-open auction: live at the open
            pre = bool(((state[snap:o] == CROSSED) & end[snap:o]).any())
            first = max(snap, o) if pre else snap
            lo = max(first - 1, 0)  # the row before each candidate start
        if first >= 0 and live == n:
            # the start of the first update from ``first`` on after a sound update
            top = min(b, n - 1)
            if top > lo:
                cand = end[lo:top] & (state[lo:top] == SOUND)
                if bool(cand.any()):
                    live = lo + int(cand.argmax()) + 1
                lo = top
        if live < n and not count_crossed:
            break
    crossed_after = -1
    if count_crossed:
        crossed_after = int((end[live:] & (state[live:] != SOUND)).sum()) if live < n else 0
    return MarketRules(live, ends, open_ts, snap, crossed_after)
