# SPDX-License-Identifier: MIT
"""Restart recovery: replay journals and return the last known state of every order."""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.enums import StrategyState
from engine.events import (
    KillSwitchChanged,
    OrderChanged,
    OrderFilled,
    OrderView,
    RiskLimitsChanged,
    StrategyStatusChanged,
)
from engine.journal.format import KIND_EVENT, JournalEvent
from engine.journal.reader import JournalReader, TornTail, progress_step
from engine.oms.order import TERMINAL


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveredState:
    """What a restarted engine needs to rebuild its orders and positions.

    ``orders`` holds the last :class:`OrderView` of every order, by ``order_id``; ``fills``
    every fill in journal order. A fill journaled twice (the same ExecID <17> on the same
    instrument for the same order, quantity and price) is kept once; the same ExecID naming
    another fill is a new fill and is kept (counted in ``reused_exec_ids``). ``exec_ids``
    holds the ExecIDs of the kept fills.
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

    def open_orders(self) -> dict[int, OrderView]:
        """Return the orders that are not in a terminal state (they may still trade)."""
        return {k: v for k, v in self.orders.items() if v.status not in TERMINAL}

    def position_lots(self, strategy_id: int | None = None) -> dict[str, int]:
        """Return the signed position per symbol implied by the fills (of one strategy or all)."""
        pos: dict[str, int] = {}
        for f in self.fills:
            if strategy_id is None or f.strategy_id == strategy_id:
                pos[f.symbol] = pos.get(f.symbol, 0) + int(f.side) * f.last_qty_lots
        return pos


class _FillDedup:
    """Recognise a fill journaled twice: the same ExecID <17> for the same fill.

    An instrument trades on one venue, so (symbol, ExecID) is (venue, ExecID). The same ExecID
    naming another fill (order, quantity or price) is a new fill: kept, and counted in
    :attr:`reused`.
    """

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], tuple[int, int, int]] = {}
        self.exec_ids: set[str] = set()
        self.duplicates = 0
        self.reused = 0

    def is_new(self, ev: OrderFilled) -> bool:
        """Return whether ``ev`` is a fill not seen before (and remember it)."""
        if ev.exec_id:
            key = (ev.symbol, ev.exec_id)
            fill = (ev.order_id, ev.last_qty_lots, ev.last_px_ticks)
            known = self.seen.get(key)
            if known == fill:
                self.duplicates += 1
                return False
            if known is not None:
                self.reused += 1
            self.seen[key] = fill
        self.exec_ids.add(ev.exec_id)
        return True


#: ``progress(stage, done, total, unit)``, e.g. ``Engine.report_progress``.
Progress = Callable[[str, int, int, str], object]


def recover(
    paths: str | Path | Iterable[str | Path], progress: Progress | None = None
) -> RecoveredState:
    """Replay one journal, or several in order, and return the last state of every order.

    Parameters
    ----------
    paths : str | Path | Iterable[str | Path]
        Journal files, oldest first (a day may span files after a rotation).
    progress : Progress | None
        Told how far the work is, in bytes of all files: stage ``"reading journal"`` (framing
        and CRCs), then ``"replaying journal"``; about a hundred calls per stage at most.
        An exception it raises (a cancelled start) ends the recovery.

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
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    total = sum(Path(p).stat().st_size for p in paths) if progress is not None else 0
    base = 0  # bytes of the files before this one
    orders: dict[int, OrderView] = {}
    fills: list[OrderFilled] = []
    dedup = _FillDedup()
    kill: KillSwitchChanged | None = None
    halted: set[int] = set()
    limits: list[RiskLimitsChanged] = []
    last_seq = ts_last = 0
    torn: list[TornTail] = []
    for path in paths:
        reader = JournalReader(path)
        at, base = base, base + _scan(reader, progress, base, total)
        if reader.torn_tail is not None:
            torn.append(reader.torn_tail)
        for rec in _events(reader, progress, at, base, total):
            assert isinstance(rec, JournalEvent)
            ev = rec.event
            last_seq = max(last_seq, rec.seq)
            ts_last = ev.ts_event
            if isinstance(ev, OrderChanged):
                orders[ev.order.order_id] = ev.order
            elif isinstance(ev, OrderFilled):
                if dedup.is_new(ev):
                    fills.append(ev)
            elif isinstance(ev, KillSwitchChanged):
                kill = ev
            elif isinstance(ev, RiskLimitsChanged):
                limits.append(ev)
            elif isinstance(ev, StrategyStatusChanged):  # halted until started (resumed)
                if ev.state == StrategyState.HALTED:
                    halted.add(ev.strategy_id)
                elif ev.state == StrategyState.RUNNING:
                    halted.discard(ev.strategy_id)
    return RecoveredState(
        orders=orders,
        fills=tuple(fills),
        exec_ids=frozenset(dedup.exec_ids),
        kill_switch=kill,
        last_seq=last_seq,
        ts_last=ts_last,
        torn_tails=tuple(torn),
        halted_strategies=frozenset(halted),
        duplicate_fills=dedup.duplicates,
        reused_exec_ids=dedup.reused,
        risk_limits=tuple(limits),
    )


def _scan(reader: JournalReader, progress: Progress | None, base: int, total: int) -> int:
    """Scan ``reader``'s file (stage "reading journal"); return the file's size in bytes."""
    size = 0

    def tell(done: int, whole: int) -> None:
        nonlocal size
        size = whole
        if progress is not None:
            progress("reading journal", base + done, total, "bytes")

    reader.scan(tell)
    return size


def _events(
    reader: JournalReader, progress: Progress | None, base: int, end: int, total: int
) -> Iterator[JournalEvent]:
    """Decode the EVENT records of ``reader`` (its file spans ``base..end`` of ``total``)."""
    if progress is None:
        for rec in reader.records([KIND_EVENT]):
            assert isinstance(rec, JournalEvent)
            yield rec
        return
    step = progress_step(total)
    report = 0
    for raw in reader.raw([KIND_EVENT]):
        if raw.offset >= report:
            progress("replaying journal", base + raw.offset, total, "bytes")
            report = raw.offset + step
        rec = reader.decode(raw)
        assert isinstance(rec, JournalEvent)
        yield rec
    progress("replaying journal", end, total, "bytes")
