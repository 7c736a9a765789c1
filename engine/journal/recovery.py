# SPDX-License-Identifier: MIT
"""Restart recovery: replay journals and return the last known state of every order.

A day's journal (a million orders: some ten million records, 1-2 GB) is read a chunk at a
time (``JournalReader.stream``: every frame checked, memory bounded by the chunk) and only the
records recovery needs are decoded: the kill switch, risk limits, strategy states, and one
``OrderChanged`` per order, its last (the order id and status of every ``OrderChanged`` are
read by a kernel without decoding it). Fills are read by a kernel into columns
(:class:`engine.journal.fills.FillColumns`: positions and P&L need every one) and decoded
whole only for the orders kept. With ``done_orders`` set, as an engine start does, the last
views of done orders are kept only for the newest ``done_orders`` of each instrument (the
order managers' archive): memory is bounded by what is open, not by the day.
"""

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.enums import StrategyState
from engine.events import (
    KillSwitchChanged,
    OrderChanged,
    OrderFilled,
    OrderView,
    RiskLimitsChanged,
    StrategyAdded,
    StrategyStatusChanged,
)
from engine.journal import _kernels as jk
from engine.journal.fills import FillCollector, FillColumns
from engine.journal.format import (
    KIND_EVENT,
    RECORD_HEADER,
    RECORD_HEADER_SIZE,
    JournalEvent,
    ReadSchema,
    qualified_name,
)
from engine.journal.reader import (
    JournalReader,
    RawRecord,
    StreamChunk,
    TornTail,
    VerifiedEnd,
    progress_step,
)
from engine.oms.order import TERMINAL

#: Strategy parameters as events carry them: (name, value) pairs in declaration order.
_Params = tuple[tuple[str, object], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveredState:
    """What a restarted engine needs to rebuild its orders and positions.

    ``orders`` holds the last :class:`OrderView` of every order, by ``order_id`` (of every open
    order and the newest done ones only, if recovered with ``done_orders``); ``fill_columns``
    every fill in journal order, as columns (for positions and P&L); ``fills`` the fill events
    of the orders in ``orders`` (of every order if recovered without ``done_orders``), in
    journal order; ``last_order_id`` the highest order id journaled. A fill journaled twice (the
    same ExecID <17> on the same instrument for the same order, quantity and price) is kept
    once; the same ExecID naming another fill is a new fill and is kept (counted in
    ``reused_exec_ids``). ``exec_ids`` holds the ExecIDs of ``fills``.
    """

    orders: dict[int, OrderView]
    fills: tuple[OrderFilled, ...]
    exec_ids: frozenset[str]
    kill_switch: KillSwitchChanged | None  # the last use of the kill switch, if any
    last_seq: int  # highest engine sequence number seen (0 if events came off the bus)
    ts_last: int  # ts_event of the last event replayed, 0 if none
    torn_tails: tuple[TornTail, ...]  # torn tails dropped while reading, one per file at most
    #: Strategies the kill switch halted and nobody resumed since (they stay halted).
    halted_strategies: frozenset[int] = frozenset()
    duplicate_fills: int = 0  # fills journaled twice, kept once
    reused_exec_ids: int = 0  # ExecIDs that named two different fills (both kept)
    #: Every risk-limits change in journal order (few: at start and when someone sets them).
    risk_limits: tuple[RiskLimitsChanged, ...] = ()
    #: Highest order id in the journal (orders left out of ``orders`` included).
    last_order_id: int = 0
    #: Each file as read to its end: the writer resuming it need not read it again.
    verified: tuple[VerifiedEnd, ...] = ()
    #: Every fill kept, in journal order (``fills`` may hold only some of them).
    fill_columns: FillColumns = field(default_factory=FillColumns.empty)
    #: Strategies loaded into the running engine (not from its config), the last of each id.
    added_strategies: tuple[StrategyAdded, ...] = ()
    #: By strategy id: the parameters it was added with (its last "added" status) and the
    #: last parameters set since (``SetStrategyParameters``), if any.
    strategy_parameters: dict[int, tuple[_Params, _Params | None]] = field(default_factory=dict)

    def verified_end(self, path: Path) -> VerifiedEnd | None:
        """Return what the recovery found at the end of ``path``, if it read that file."""
        if path.exists():
            st = path.stat()
            for v in self.verified:
                if v.matches(path, st):
                    return v
        return None

    def open_orders(self) -> dict[int, OrderView]:
        """Return the orders that are not in a terminal state (they may still trade)."""
        return {k: v for k, v in self.orders.items() if v.status not in TERMINAL}

    def position_lots(self, strategy_id: int | None = None) -> dict[str, int]:
        """Return the signed position per symbol implied by the fills (of one strategy or all)."""
        return self.fill_columns.position_lots(strategy_id)


#: ``progress(stage, done, total, unit)``, e.g. ``Engine.report_progress``.
Progress = Callable[[str, int, int, str], object]

#: Event types recovery decodes (the rest is skipped undecoded; orders and fills are read
#: by kernels).
_DECODED = tuple(
    qualified_name(c)
    for c in (KillSwitchChanged, RiskLimitsChanged, StrategyStatusChanged, StrategyAdded)
)
_ORDER_CHANGED = qualified_name(OrderChanged)
_ORDER_FILLED = qualified_name(OrderFilled)
_TERMINAL = np.array(sorted(int(s) for s in TERMINAL), np.int64)


@dataclass(slots=True)
class _OrderRows:
    """Where the ``OrderChanged`` records of one file are: order id, status, offset, length."""

    file: int
    rows: list[np.ndarray]


def recover(
    paths: str | Path | Iterable[str | Path],
    progress: Progress | None = None,
    *,
    done_orders: int | None = None,
) -> RecoveredState:
    """Replay one journal, or several in order, and return the last state of every order.

    Parameters
    ----------
    paths : str | Path | Iterable[str | Path]
        Journal files, oldest first (a day may span files after a rotation).
    progress : Progress | None
        Told how far the work is, in bytes of all files: stage ``"reading journal"`` (framing,
        CRCs and the records decoded on the way), then ``"replaying journal"`` (the orders'
        last views); about a hundred calls per stage at most. An exception it raises (a
        cancelled start) ends the recovery.
    done_orders : int | None
        Keep the last view of every open order but of only the newest ``done_orders`` done
        (terminal) orders per instrument; ``None`` keeps every order.

    Returns
    -------
    RecoveredState
        Orders by id, fills, the kill switch and the stream position.

    Raises
    ------
    engine.journal.JournalError
        If a file is not a journal or is damaged before its tail (a torn tail is dropped and
        listed in ``torn_tails``).
    """
    files = [Path(p) for p in ([paths] if isinstance(paths, str | Path) else paths)]
    total = sum(p.stat().st_size for p in files)
    base = 0  # bytes of the files before this one
    seen = _Seen()
    fills = FillCollector()
    last_seq = ts_last = 0
    torn: list[TornTail] = []
    readers: list[JournalReader] = []
    order_rows: list[_OrderRows] = []
    verified: list[VerifiedEnd] = []
    for path in files:
        st = path.stat()
        reader = JournalReader(path)
        readers.append(reader)
        rows = _OrderRows(len(readers) - 1, [])
        order_rows.append(rows)
        tell = _teller(progress, "reading journal", base, total)
        for chunk in _read_ahead(reader.stream()):
            if tell is not None:
                tell(chunk.base + len(chunk.data), total)
            frames = chunk.frames
            events = frames[:, jk.F_KIND] == KIND_EVENT
            if events.any():
                last_seq = max(last_seq, int(frames[events, jk.F_SEQ].max()))
                ts_last = int(frames[np.flatnonzero(events)[-1], jk.F_TS])
            wanted = {t for t, sch in chunk.schemas.items() if sch.name in _DECODED}
            if wanted:
                hit = np.flatnonzero(events & np.isin(frames[:, jk.F_TYPE], list(wanted)))
                for event in reader.decode_events(chunk, hit.tolist()):
                    seen.apply(event)
            for t, sch in chunk.schemas.items():
                if sch.name == _ORDER_FILLED:
                    hit = np.flatnonzero(events & (frames[:, jk.F_TYPE] == t))
                    fills.add(len(readers) - 1, reader, chunk, hit, t)
            _order_rows(reader, chunk, events, rows)
        if reader.torn_tail is not None:
            torn.append(reader.torn_tail)
        verified.append(reader.verified(st))
        base += st.st_size
    orders, last_order_id = _last_views(readers, order_rows, done_orders, progress, total)
    kept = fills.finish(readers)
    events_kept = kept.events(readers, orders if done_orders is not None else None)
    return RecoveredState(
        orders=orders,
        fills=events_kept,
        fill_columns=kept.columns,
        exec_ids=frozenset(f.exec_id for f in events_kept),
        kill_switch=seen.kill,
        last_seq=last_seq,
        ts_last=ts_last,
        torn_tails=tuple(torn),
        halted_strategies=frozenset(seen.halted),
        added_strategies=tuple(seen.added.values()),
        strategy_parameters=dict(seen.parameters),
        duplicate_fills=kept.duplicates,
        reused_exec_ids=kept.reused,
        risk_limits=tuple(seen.limits),
        last_order_id=last_order_id,
        verified=tuple(verified),
    )


class _Seen:
    """What recovery keeps of the events it decodes besides orders, in journal order."""

    def __init__(self) -> None:
        self.kill: KillSwitchChanged | None = None
        self.halted: set[int] = set()
        self.limits: list[RiskLimitsChanged] = []
        self.added: dict[int, StrategyAdded] = {}
        self.parameters: dict[int, tuple[_Params, _Params | None]] = {}

    def apply(self, ev: object) -> None:
        if isinstance(ev, KillSwitchChanged):
            self.kill = ev
        elif isinstance(ev, RiskLimitsChanged):
            self.limits.append(ev)
        elif isinstance(ev, StrategyAdded):
            self.added.pop(ev.strategy_id, None)  # the latest last
            self.added[ev.strategy_id] = ev
        elif isinstance(ev, StrategyStatusChanged):  # halted until started (resumed)
            if ev.state == StrategyState.HALTED:
                self.halted.add(ev.strategy_id)
            elif ev.state == StrategyState.RUNNING:
                self.halted.discard(ev.strategy_id)
            params: _Params = tuple((str(n), v) for n, v in ev.parameters)
            if ev.change == "added":  # a (re)start of the engine: the baseline
                self.parameters[ev.strategy_id] = (params, None)
            elif ev.change == "parameters" and ev.strategy_id in self.parameters:
                self.parameters[ev.strategy_id] = (self.parameters[ev.strategy_id][0], params)


def _read_ahead(chunks: Iterator[StreamChunk], depth: int = 2) -> Iterator[StreamChunk]:
    """Yield ``chunks`` while a worker thread reads and checks the next ones.

    Reading a chunk (``pread`` and the framing + CRC kernel) releases the GIL, so on a
    restart it overlaps the decoding of the chunk before it (~2 of a 1.7 GB day's 8 s). An
    error of the reader is raised here, where that chunk would have been; stopping early
    (a cancelled start) stops the worker.
    """
    q: queue.Queue[StreamChunk | BaseException | None] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for chunk in chunks:
                while not stop.is_set():
                    try:
                        q.put(chunk, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(None)
        except BaseException as e:  # handed to the reading thread
            q.put(e)
        finally:  # the generator lives on this thread: close it (and its file) here
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=work, name="journal-read-ahead", daemon=True)
    worker.start()
    try:
        while (item := q.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a worker waiting to put
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.05)
        worker.join()


def _teller(
    progress: Progress | None, stage: str, base: int, total: int
) -> Callable[[int, int], object] | None:
    if progress is None:
        return None

    def tell(done: int, _whole: int) -> None:
        progress(stage, base + done, total, "bytes")

    return tell


def _order_rows(
    reader: JournalReader, chunk: StreamChunk, events: np.ndarray, rows: _OrderRows
) -> None:
    """Note order id, status, file offset and length of the chunk's ``OrderChanged`` records."""
    frames = chunk.frames
    for type_id, sch in chunk.schemas.items():
        if sch.name != _ORDER_CHANGED:
            continue
        hit = np.flatnonzero(events & (frames[:, jk.F_TYPE] == type_id))
        if not hit.size:
            continue
        at = _order_layout(chunk.schemas, type_id)
        out = np.empty((hit.size, 2), np.int64)
        jk.order_fields(np.frombuffer(chunk.data, np.uint8), frames[hit], *at, out)
        table = np.empty((hit.size, 4), np.int64)
        table[:, 0:2] = out
        table[:, 2] = frames[hit, jk.F_POS] + chunk.base
        table[:, 3] = frames[hit, jk.F_LEN]
        # Only the last record of each order matters: keep one row per order per chunk.
        rows.rows.append(table[_last_of_each(table[:, 0])])


def _last_of_each(ids: np.ndarray) -> np.ndarray:
    """Return a mask of the last row of each id (ids < 0 never), rows in their order."""
    keep = np.zeros(ids.shape[0], bool)
    if not jk.last_of_each(np.ascontiguousarray(ids), keep):  # ids too sparse for a table
        valid = np.flatnonzero(ids >= 0)
        rev = valid[::-1]
        _u, first = np.unique(ids[rev], return_index=True)
        keep[rev[first]] = True
    return keep


def _order_layout(schemas: Mapping[int, ReadSchema], type_id: int) -> tuple[int, int, int]:
    """Return where order, order id and status are in this file's ``OrderChanged`` values."""
    sch = schemas[type_id]
    names = [n for n, _c in sch.fields]
    order_at = names.index("order")
    code = sch.fields[order_at][1]
    nested = schemas[int(code.split(":", 1)[1])]
    inner = [n for n, _c in nested.fields]
    return order_at, inner.index("order_id"), inner.index("status")


def _last_views(
    readers: list[JournalReader],
    order_rows: list[_OrderRows],
    done_orders: int | None,
    progress: Progress | None,
    total: int,
) -> tuple[dict[int, OrderView], int]:
    """Decode the last ``OrderChanged`` of each order kept; return them and the highest id."""
    tables = [
        np.column_stack([np.full(len(t), r.file, np.int64), t]) for r in order_rows for t in r.rows
    ]
    if not tables:
        if progress is not None:
            progress("replaying journal", total, total, "bytes")
        return {}, 0
    table = np.concatenate(tables)  # file, order id, status, offset, length; journal order
    last = table[_last_of_each(table[:, 1])]  # each order's last record, in journal order
    last_order_id = int(last[:, 1].max()) if len(last) else 0
    if done_orders is not None:
        done = np.isin(last[:, 2], _TERMINAL)
        # Candidates: every open order, and the newest done ones (4x: instruments share them).
        keep_done = np.flatnonzero(done)[-4 * done_orders :]
        keep = np.sort(np.concatenate([np.flatnonzero(~done), keep_done]))
        last = last[keep]
    orders: dict[int, OrderView] = {}
    done_of: dict[str, list[int]] = {}
    sizes = [r.path.stat().st_size for r in readers]
    starts = np.cumsum([0, *sizes])
    step = progress_step(total)
    report = 0
    fds = [os.open(r.path, os.O_RDONLY) for r in readers]
    try:
        for f, _oid, _status, pos, length in last.tolist():
            at = int(starts[f]) + pos
            if progress is not None and at >= report:
                progress("replaying journal", at, total, "bytes")
                report = at + step
            reader = readers[f]
            raw = os.pread(fds[f], 12 + length, pos)
            rec = reader.decode(_raw(raw, pos))
            assert isinstance(rec, JournalEvent)
            assert isinstance(rec.event, OrderChanged)
            view = rec.event.order
            orders[view.order_id] = view
            if done_orders is not None and view.status in TERMINAL:
                done_of.setdefault(view.symbol, []).append(view.order_id)
    finally:
        for fd in fds:
            os.close(fd)
    if progress is not None:
        progress("replaying journal", total, total, "bytes")
    if done_orders is not None:
        for ids in done_of.values():
            for oid in ids[: max(0, len(ids) - done_orders)]:
                del orders[oid]
    return orders, last_order_id


def _raw(record: bytes, pos: int) -> RawRecord:
    """Return the record framed in ``record`` (read at file offset ``pos``) for decoding."""
    _length, _crc, kind, _flags, type_id = RECORD_HEADER.unpack_from(record, 0)
    return RawRecord(-1, pos, kind, type_id, memoryview(record)[RECORD_HEADER_SIZE:])


def warm_up() -> None:
    """Compile (or load) recovery's kernels on a small journal written for the purpose.

    A restart on a day's journal uses kernels no other part of the engine does (framing and
    CRC, the order and fill readers); ``engine.warmup`` calls this so a restart never compiles.
    """
    import tempfile

    from engine.clock import TestClock
    from engine.enums import OrdStatus, OrdType, Side, TimeInForce
    from engine.journal.writer import Journal

    ts = 1
    view = OrderView(
        order_id=1,
        client_order_id="W1",
        orig_client_order_ids=(),
        venue_order_id="V1",
        strategy_id=1,
        symbol="WARM",
        side=Side.BUY,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=1,
        px_ticks=1,
        status=OrdStatus.FILLED,
        cum_qty_lots=1,
        leaves_qty_lots=0,
        avg_px_ticks=1.0,
        pending="",
        text="",
        ts_created=ts,
        ts_sent=ts,
        ts_acked=ts,
        ts_last=ts,
    )
    fill = OrderFilled(
        ts_event=ts,
        order_id=1,
        client_order_id="W1",
        venue_order_id="V1",
        exec_id="E1",
        strategy_id=1,
        symbol="WARM",
        side=Side.BUY,
        last_px_ticks=1,
        last_qty_lots=1,
        leaves_qty_lots=0,
        ts_recv=ts,
    )
    with tempfile.TemporaryDirectory(prefix="qw-warm-") as d:
        path = Path(d) / "warm.qwj"
        with Journal(path, TestClock(ts), sync="none") as j:
            j.on_event(OrderChanged(ts_event=ts, order=view, change="fill"))
            j.on_event(fill)
            j.on_event(fill)  # journaled twice: the duplicate check
        state = recover(path, done_orders=1)
    if state.position_lots() != {"WARM": 1} or len(state.fills) != 1:
        raise RuntimeError(f"journal warm-up: recovered {state.position_lots()}, {state.fills}")
