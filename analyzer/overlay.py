# SPDX-License-Identifier: MIT
"""Own orders and executions from a journal (backtest or live engine), ready to overlay.

:func:`load_overlay` reads journals with :func:`engine.posttrade.load_day` and turns each
order's life into horizontal segments at its price (from placement to the next change: a
replace moves it, a fill or cancel ends it) and every fill into an execution marker. The FIX
messages of the journal are indexed by ClOrdID <11> / OrigClOrdID <41> chains and ExecID <17>,
so that clicking an order or an execution finds its message chain.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from engine.enums import OrdStatus
from engine.journal.format import FixMessageRecord
from engine.journal.reader import JournalReader
from engine.posttrade import TradeDay, load_day

I64 = npt.NDArray[np.int64]

#: Order states after which an order no longer rests.
TERMINAL: Final[frozenset[int]] = frozenset(
    {
        OrdStatus.FILLED,
        OrdStatus.CANCELED,
        OrdStatus.REJECTED,
        OrdStatus.EXPIRED,
        OrdStatus.DONE_FOR_DAY,
        OrdStatus.REPLACED,
    }
)


def _fix_tag(raw: bytes, tag: int) -> str:
    """Return the value of ``tag`` in a SOH-separated FIX message ("" if absent)."""
    key = f"{tag}=".encode()
    start = 0
    while True:
        i = raw.find(key, start)
        if i < 0:
            return ""
        if i == 0 or raw[i - 1] == 1:
            j = raw.find(b"\x01", i)
            return raw[i + len(key) : j if j >= 0 else len(raw)].decode("ascii", "replace")
        start = i + 1


@dataclass(frozen=True, slots=True)
class OrderSegments:
    """Horizontal segments of own orders of one instrument (ticks and ns).

    Row ``i``: order ``order_id[i]`` rested at ``px[i]`` from ``t0[i]`` to ``t1[i]`` on
    ``side[i]``; ``t1 = -1`` means it was still working at the end of the journal.
    """

    order_id: I64
    t0: I64
    t1: I64
    px: I64
    side: npt.NDArray[np.int8]

    @property
    def n(self) -> int:
        """Return the number of segments."""
        return int(self.order_id.shape[0])


@dataclass(slots=True)
class Overlay:
    """What a journal adds to the charts: orders, executions and their FIX messages."""

    day: TradeDay
    fix: list[FixMessageRecord] = field(default_factory=list)
    _by_clordid: dict[str, list[int]] = field(default_factory=dict)
    _by_exec: dict[str, list[int]] = field(default_factory=dict)
    _links: dict[str, str] = field(default_factory=dict)  # ClOrdID -> root of its chain
    _groups: dict[str, list[str]] = field(default_factory=dict)  # root -> its ClOrdIDs
    _indexed: bool = False  # FIX chains are indexed on the first look-up

    @property
    def symbols(self) -> tuple[str, ...]:
        """Return the symbols the journal traded."""
        return self.day.symbols

    def segments(self, symbol: str) -> OrderSegments:
        """Return the resting segments of ``symbol``'s orders."""
        ev = self._events(symbol)
        if ev.shape[0] == 0:
            e = np.empty(0, np.int64)
            return OrderSegments(e, e, e, e, np.empty(0, np.int8))
        order = np.lexsort((ev["ts"], ev["order_id"]))
        ev = ev[order]
        same = np.zeros(ev.shape[0], bool)
        same[:-1] = ev["order_id"][1:] == ev["order_id"][:-1]
        t_next = np.full(ev.shape[0], -1, np.int64)
        t_next[:-1] = np.where(same[:-1], ev["ts"][1:], -1)
        status = ev["status"]
        # From placement (pending new) on, every change opens a segment at the order's price
        # that the next change closes; a terminal change opens none.
        keep = ~np.isin(status, list(TERMINAL)) & (ev["px"] != 0)
        return OrderSegments(
            ev["order_id"][keep].astype(np.int64),
            ev["ts"][keep].astype(np.int64),
            t_next[keep],
            ev["px"][keep].astype(np.int64),
            ev["side"][keep].astype(np.int8),
        )

    def executions(self, symbol: str) -> npt.NDArray[np.void]:
        """Return ``symbol``'s executions (``EXECUTION_DTYPE`` rows, by time)."""
        try:
            inst = self.day.instrument(symbol)
        except KeyError:
            return self.day.executions[:0]
        ex = self.day.executions
        ex = ex[ex["instrument"] == inst]
        out: npt.NDArray[np.void] = ex[np.argsort(ex["ts"], kind="stable")]
        return out

    def order_history(self, order_id: int) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void]]:
        """Return the order's changes (``ORDER_EVENT_DTYPE``) and fills, each by time."""
        ev = self.day.order_events
        ev = ev[ev["order_id"] == order_id]
        ex = self.day.executions
        ex = ex[ex["order_id"] == order_id]
        return (
            ev[np.argsort(ev["ts"], kind="stable")],
            ex[np.argsort(ex["ts"], kind="stable")],
        )

    def client_order_id(self, order_id: int) -> str:
        """Return the order's ClOrdID <11> in force at the end of the journal ("" if none)."""
        return self.day.client_order_ids.get(int(order_id), "")

    def exec_id(self, row: npt.NDArray[np.void]) -> str:
        """Return the ExecID <17> of an execution row (matched by sequence and order)."""
        ex = self.day.executions
        hit = np.flatnonzero(
            (ex["seq"] == row["seq"])
            & (ex["order_id"] == row["order_id"])
            & (ex["ts"] == row["ts"])
        )
        return self.day.exec_ids[int(hit[0])] if hit.size else ""

    def _events(self, symbol: str) -> npt.NDArray[np.void]:
        try:
            inst = self.day.instrument(symbol)
        except KeyError:
            return self.day.order_events[:0]
        ev = self.day.order_events
        out: npt.NDArray[np.void] = ev[ev["instrument"] == inst]
        return out

    # ------------------------------------------------------------------ FIX chains
    def _index(self) -> None:
        parent: dict[str, str] = {}

        def root(x: str) -> str:
            while parent.get(x, x) != x:
                parent[x] = parent.get(parent[x], parent[x])
                x = parent[x]
            return x

        for i, m in enumerate(self.fix):
            cl, orig = _fix_tag(m.raw, 11), _fix_tag(m.raw, 41)
            if cl:
                self._by_clordid.setdefault(cl, []).append(i)
                parent.setdefault(cl, cl)
            if cl and orig:
                parent.setdefault(orig, orig)
                parent[root(cl)] = root(orig)
            ex = _fix_tag(m.raw, 17)
            if ex:
                self._by_exec.setdefault(ex, []).append(i)
        self._links = {k: root(k) for k in parent}
        for k, r in self._links.items():
            self._groups.setdefault(r, []).append(k)
        self._indexed = True

    def _chain_indices(self, order_id: int) -> list[int]:
        if not self._indexed:
            self._index()
        clordid = self.day.client_order_ids.get(int(order_id), "")
        if not clordid:
            return []
        ids = self._groups.get(self._links.get(clordid, clordid), [clordid])
        return sorted({i for k in ids for i in self._by_clordid.get(k, [])})

    def order_chain(self, order_id: int) -> list[FixMessageRecord]:
        """Return every FIX message of an order's ClOrdID chain, in time order."""
        return [self.fix[i] for i in self._chain_indices(order_id)]

    def execution_chain(self, order_id: int, exec_id: str) -> tuple[list[FixMessageRecord], int]:
        """Return the order's FIX chain and the index in it of the report ``exec_id`` (-1)."""
        idx = self._chain_indices(order_id)
        hit = set(self._by_exec.get(exec_id, []))
        pos = next((k for k, i in enumerate(idx) if i in hit), -1)
        if pos < 0 and hit:
            idx = [*idx, min(hit)]
            pos = len(idx) - 1
        return [self.fix[i] for i in idx], pos


def load_overlay(paths: str | Path | Iterable[str | Path]) -> Overlay:
    """Read one or more journals into an :class:`Overlay` (call off the GUI thread).

    Raises
    ------
    engine.journal.JournalError
        A file is not a journal or is damaged before its tail (the message names it).
    """
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    day = load_day(files)
    fix: list[FixMessageRecord] = []
    for f in files:
        reader = JournalReader(f)
        fix.extend(reader.fix_messages())
    fix.sort(key=lambda m: m.ts_handled)
    ov = Overlay(day, fix)
    ov._index()
    return ov
