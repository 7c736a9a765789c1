# SPDX-License-Identifier: MIT
"""Post-trade analysis: a day's orders and executions from the journal as numpy arrays.

:func:`load_day` reads one or more journals into structured arrays (dtypes declared once in
:mod:`engine.types`): the last state of every order, every order change, every execution.
:func:`by_strategy` splits rows by strategy; :func:`asof_join` and :func:`join_market` attach
the market state in force at each row's timestamp (an as-of join with ``np.searchsorted``).

Example (also in ``docs/journal.md``)::

    day = load_day("journal/2026-12-02.qwj")
    fills = join_market(day.executions, {"ESZ6": es_snapshots}, day.symbols)
    for strategy, f in by_strategy(fills).items():
        ...
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from engine.events import OrderChanged, OrderFilled
from engine.journal.format import CODE_STRUCT, KIND_EVENT, JournalCorruptError, qualified_name
from engine.journal.reader import JournalReader, RawRecord
from engine.types import (
    EXECUTION_DTYPE,
    JOURNAL_ORDER_DTYPE,
    MARKET_SNAPSHOT_DTYPE,
    ORDER_EVENT_DTYPE,
    MarketSnapshotArray,
    PostTradeArray,
)

_ORDER_CHANGED: Final[str] = qualified_name(OrderChanged)
_ORDER_FILLED: Final[str] = qualified_name(OrderFilled)

#: Prefix of the market columns :func:`asof_join` adds (``mkt_ts``, ``mkt_bid_px`` ...).
MARKET_PREFIX: Final[str] = "mkt_"

#: OrderView fields read into ``ORDER_EVENT_DTYPE`` rows, in the dtype's order after ``seq``.
_VIEW_FIELDS: Final[tuple[str, ...]] = (
    "order_id",
    "px_ticks",
    "qty_lots",
    "cum_qty_lots",
    "leaves_qty_lots",
    "avg_px_ticks",
    "strategy_id",
    "symbol",
    "side",
    "ord_type",
    "time_in_force",
    "status",
    "ts_created",
    "ts_sent",
    "ts_acked",
)
_FILL_FIELDS: Final[tuple[str, ...]] = (
    "ts_event",
    "ts_recv",
    "order_id",
    "last_px_ticks",
    "last_qty_lots",
    "leaves_qty_lots",
    "strategy_id",
    "symbol",
    "side",
    "exec_id",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TradeDay:
    """Orders and executions of one or more journals, as structured arrays.

    ``instrument`` columns index :attr:`symbols`. Strings stay out of the arrays:
    :attr:`client_order_ids` maps an order id to its ClOrdID <11> in force at the end, and
    :attr:`exec_ids` holds the ExecID <17> of each execution row.
    """

    orders: PostTradeArray  # JOURNAL_ORDER_DTYPE, one row per order, by ts_created
    order_events: PostTradeArray  # ORDER_EVENT_DTYPE, one row per change, journal order
    executions: PostTradeArray  # EXECUTION_DTYPE, one row per fill, journal order
    symbols: tuple[str, ...]
    client_order_ids: dict[int, str]
    exec_ids: tuple[str, ...]

    def instrument(self, symbol: str) -> int:
        """Return the ``instrument`` index of ``symbol``; raise ``KeyError`` if absent."""
        try:
            return self.symbols.index(symbol)
        except ValueError:
            raise KeyError(f"symbol {symbol!r} does not occur in this journal") from None


class _Loader:
    """Accumulate rows from raw journal records without building event objects."""

    def __init__(self) -> None:
        self.symbols: dict[str, int] = {}
        self.events: list[tuple[Any, ...]] = []
        self.fills: list[tuple[Any, ...]] = []
        self.exec_ids: list[str] = []
        self.last: dict[int, tuple[Any, ...]] = {}  # order_id -> JOURNAL_ORDER row
        self.n_changes: dict[int, int] = {}
        self.clordids: dict[int, str] = {}

    def load(self, path: str | Path) -> None:
        reader = JournalReader(path)
        reader.scan()
        changed, filled = _type_ids(reader)
        # Field positions per type id (payload arrays start with seq, hence the + 1).
        for rec in reader.raw([KIND_EVENT]):
            if rec.type_id in changed:
                self._order_changed(reader, rec, changed[rec.type_id])
            elif rec.type_id in filled:
                self._order_filled(reader, rec, filled[rec.type_id])

    def _instrument(self, symbol: str) -> int:
        idx = self.symbols.get(symbol)
        if idx is None:
            idx = self.symbols[symbol] = len(self.symbols)
        return idx

    def _order_changed(
        self, reader: JournalReader, rec: RawRecord, pos: tuple[int, int, tuple[int, ...]]
    ) -> None:
        i_ts, i_order, view_pos = pos
        values = reader.decode_values(rec)
        try:
            ts, seq, view = values[i_ts], values[0], values[i_order]
            fields = [view[i] for i in view_pos]
            oid, px, qty, cum, leaves, avg, strat, sym, side, otype, tif, status = fields[:12]
            t_c, t_s, t_a, clordid = fields[12:]
            self.clordids[oid] = str(clordid)
            inst = self._instrument(sym)
            self.events.append(
                (ts, seq, oid, px, qty, cum, leaves, avg, strat, inst, side, otype, tif, status)
            )
        except (IndexError, TypeError, ValueError) as e:
            raise JournalCorruptError(reader.path, rec.offset, rec.index, f"bad order: {e}") from e
        n = self.n_changes[oid] = self.n_changes.get(oid, 0) + 1
        self.last[oid] = (
            ts, oid, t_c, t_s, t_a, px, qty, cum, leaves, avg, strat, inst, n, side, otype, tif,
            status,
        )  # fmt: skip

    def _order_filled(self, reader: JournalReader, rec: RawRecord, pos: tuple[int, ...]) -> None:
        values = reader.decode_values(rec)
        try:
            ts, ts_recv, oid, px, qty, leaves, strat, sym, side, exec_id = (values[i] for i in pos)
            self.fills.append(
                (ts, ts_recv, values[0], oid, px, qty, leaves, strat, self._instrument(sym), side)
            )
            self.exec_ids.append(str(exec_id))
        except (IndexError, TypeError, ValueError) as e:
            raise JournalCorruptError(reader.path, rec.offset, rec.index, f"bad fill: {e}") from e

    def result(self) -> TradeDay:
        try:
            orders = np.array(list(self.last.values()), dtype=JOURNAL_ORDER_DTYPE)
            order_events = np.array(self.events, dtype=ORDER_EVENT_DTYPE)
            executions = np.array(self.fills, dtype=EXECUTION_DTYPE)
        except (TypeError, ValueError, OverflowError) as e:
            raise ValueError(f"journal values do not fit the post-trade dtypes: {e}") from e
        orders = orders[np.lexsort((orders["order_id"], orders["ts_created"]))]
        return TradeDay(
            orders=orders,
            order_events=order_events,
            executions=executions,
            symbols=tuple(self.symbols),
            client_order_ids=self.clordids,
            exec_ids=tuple(self.exec_ids),
        )


def _type_ids(
    reader: JournalReader,
) -> tuple[dict[int, tuple[int, int, tuple[int, ...]]], dict[int, tuple[int, ...]]]:
    changed: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    filled: dict[int, tuple[int, ...]] = {}
    for tid, schema in reader.schemas.items():
        try:
            if schema.name == _ORDER_CHANGED:
                code = schema.fields[schema.index["order"]][1]
                view = reader.schemas[int(code.removeprefix(CODE_STRUCT))]
                view_pos = tuple(view.index[f] for f in (*_VIEW_FIELDS, "client_order_id"))
                changed[tid] = (schema.index["ts_event"] + 1, schema.index["order"] + 1, view_pos)
            elif schema.name == _ORDER_FILLED:
                filled[tid] = tuple(schema.index[f] + 1 for f in _FILL_FIELDS)
        except (KeyError, ValueError) as e:
            # A schema without the fields post-trade needs: an older or foreign event class.
            raise JournalCorruptError(
                reader.path,
                schema.offset,
                schema.record_index,
                f"schema {tid} ({schema.name}) lacks field {e}, which post-trade needs",
            ) from e
    return changed, filled


def load_day(paths: str | Path | Iterable[str | Path]) -> TradeDay:
    """Load the orders and executions of one or more journals (oldest first).

    Parameters
    ----------
    paths : str | Path | Iterable[str | Path]
        Journal files; a torn tail is dropped, as :class:`engine.journal.JournalReader` does.

    Returns
    -------
    TradeDay
        ``orders`` (one row per order, its last state), ``order_events`` and ``executions``.

    Raises
    ------
    engine.journal.JournalError
        If a file is not a journal or is damaged before its tail.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    loader = _Loader()
    for path in paths:
        loader.load(path)
    return loader.result()


def by_strategy(rows: PostTradeArray) -> dict[int, PostTradeArray]:
    """Split rows that have a ``strategy`` column into one array per strategy, order kept."""
    if rows.dtype.names is None or "strategy" not in rows.dtype.names:
        raise ValueError(f"rows of dtype {rows.dtype} have no 'strategy' column")
    if rows.size == 0:
        return {}
    order = np.argsort(rows["strategy"], kind="stable")
    ordered = rows[order]
    keys, starts = np.unique(ordered["strategy"], return_index=True)
    parts = np.split(ordered, starts[1:])
    return {int(k): p for k, p in zip(keys.tolist(), parts, strict=True)}


def joined_dtype(row_dtype: np.dtype[Any]) -> np.dtype[Any]:
    """Return ``row_dtype`` extended with the ``mkt_*`` columns of ``MARKET_SNAPSHOT_DTYPE``."""
    names = row_dtype.names or ()
    fields = [(n, row_dtype[n]) for n in names]
    extra = [
        (MARKET_PREFIX + n, MARKET_SNAPSHOT_DTYPE[n]) for n in MARKET_SNAPSHOT_DTYPE.names or ()
    ]
    return np.dtype(fields + extra, align=True)


def asof_join(
    rows: PostTradeArray, market: MarketSnapshotArray, *, ts_field: str = "ts"
) -> PostTradeArray:
    """Attach to each row the market snapshot in force at its timestamp.

    The snapshot in force at ``t`` is the last one with ``ts <= t``. Rows before the first
    snapshot get ``mkt_ts = -1`` and zeros.

    Parameters
    ----------
    rows : PostTradeArray
        Any structured array with an int64 ``ts_field`` column.
    market : MarketSnapshotArray
        Rows of ``MARKET_SNAPSHOT_DTYPE`` sorted by ``ts`` (ties: the last row wins).
    ts_field : str
        Which timestamp of ``rows`` to join on (e.g. ``"ts_created"`` for orders).

    Returns
    -------
    PostTradeArray
        A new array of :func:`joined_dtype` (``rows``' columns + ``mkt_*``).

    Raises
    ------
    ValueError
        If ``market`` has the wrong dtype or is not sorted, or ``ts_field`` is missing.
    """
    if market.dtype != MARKET_SNAPSHOT_DTYPE:
        raise ValueError(f"market snapshots must be MARKET_SNAPSHOT_DTYPE, got {market.dtype}")
    if rows.dtype.names is None or ts_field not in rows.dtype.names:
        raise ValueError(f"rows of dtype {rows.dtype} have no {ts_field!r} column")
    mts = market["ts"]
    if mts.size > 1 and bool(np.any(mts[1:] < mts[:-1])):
        bad = int(np.flatnonzero(mts[1:] < mts[:-1])[0]) + 1
        raise ValueError(f"market snapshots are not sorted by ts (row {bad} goes back in time)")
    out = np.zeros(rows.shape, dtype=joined_dtype(rows.dtype))
    for n in rows.dtype.names:
        out[n] = rows[n]
    idx = np.searchsorted(mts, rows[ts_field], side="right") - 1
    found = idx >= 0
    picked = market[idx[found]]
    for n in MARKET_SNAPSHOT_DTYPE.names or ():
        out[MARKET_PREFIX + n][found] = picked[n]
    out[MARKET_PREFIX + "ts"][~found] = -1
    return out


def join_market(
    rows: PostTradeArray,
    markets: Mapping[str, MarketSnapshotArray],
    symbols: tuple[str, ...],
    *,
    ts_field: str = "ts",
) -> PostTradeArray:
    """As-of join rows of several instruments, each with its own market snapshots.

    Parameters
    ----------
    rows : PostTradeArray
        Rows with an ``instrument`` column indexing ``symbols`` (as :func:`load_day` gives).
    markets : Mapping[str, MarketSnapshotArray]
        Snapshots per symbol; rows of symbols missing here get ``mkt_ts = -1``.
    symbols : tuple[str, ...]
        The symbol table of the load (``TradeDay.symbols``).
    ts_field : str
        Which timestamp of ``rows`` to join on.

    Returns
    -------
    PostTradeArray
        Rows in their original order with the ``mkt_*`` columns of :func:`asof_join`.
    """
    out = np.zeros(rows.shape, dtype=joined_dtype(rows.dtype))
    for n in rows.dtype.names or ():
        out[n] = rows[n]
    out[MARKET_PREFIX + "ts"] = -1
    for inst, symbol in enumerate(symbols):
        market = markets.get(symbol)
        mask = rows["instrument"] == inst
        if market is None or not bool(mask.any()):
            continue
        out[mask] = asof_join(rows[mask], market, ts_field=ts_field)
    return out
