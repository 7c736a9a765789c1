# SPDX-License-Identifier: MIT
"""Restart recovery: replay journals and return the last known state of every order."""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.events import KillSwitchChanged, OrderChanged, OrderFilled, OrderView
from engine.journal.format import KIND_EVENT, JournalEvent
from engine.journal.reader import JournalReader, TornTail
from engine.oms.order import TERMINAL


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveredState:
    """What a restarted engine needs to rebuild its orders and positions.

    ``orders`` holds the last :class:`OrderView` of every order, by ``order_id``; ``fills``
    every fill in journal order (a fill journaled twice, same ExecID <17>, is kept once).
    """

    orders: dict[int, OrderView]
    fills: tuple[OrderFilled, ...]
    exec_ids: frozenset[str]
    kill_switch: KillSwitchChanged | None  # the last use of the kill switch, if any
    last_seq: int  # highest engine sequence number seen (0 if events came off the bus)
    ts_last: int  # ts_event of the last event replayed, 0 if none
    torn_tails: tuple[TornTail, ...]  # torn tails dropped while reading, one per file at most

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


def recover(paths: str | Path | Iterable[str | Path]) -> RecoveredState:
    """Replay one journal, or several in order, and return the last state of every order.

    Parameters
    ----------
    paths : str | Path | Iterable[str | Path]
        Journal files, oldest first (a day may span files after a rotation).

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
    if isinstance(paths, str | Path):
        paths = [paths]
    orders: dict[int, OrderView] = {}
    fills: list[OrderFilled] = []
    exec_ids: set[str] = set()
    kill: KillSwitchChanged | None = None
    last_seq = ts_last = 0
    torn: list[TornTail] = []
    for path in paths:
        reader = JournalReader(path)
        reader.scan()
        if reader.torn_tail is not None:
            torn.append(reader.torn_tail)
        for rec in reader.records([KIND_EVENT]):
            assert isinstance(rec, JournalEvent)
            ev = rec.event
            last_seq = max(last_seq, rec.seq)
            ts_last = ev.ts_event
            if isinstance(ev, OrderChanged):
                orders[ev.order.order_id] = ev.order
            elif isinstance(ev, OrderFilled):
                if ev.exec_id and ev.exec_id in exec_ids:
                    continue
                exec_ids.add(ev.exec_id)
                fills.append(ev)
            elif isinstance(ev, KillSwitchChanged):
                kill = ev
    return RecoveredState(
        orders=orders,
        fills=tuple(fills),
        exec_ids=frozenset(exec_ids),
        kill_switch=kill,
        last_seq=last_seq,
        ts_last=ts_last,
        torn_tails=tuple(torn),
    )
