# SPDX-License-Identifier: MIT
"""A day's fills as columns: what a restart needs of them without a Python object per fill.

A restart needs every fill of the day for positions and P&L, but the fill events themselves
only for the orders it restores (some thousands of a million). :class:`FillCollector` reads
order id, strategy, symbol, side, price, quantity, time and ExecID <17> of each ``OrderFilled``
record with a kernel (``engine.journal._kernels.event_fields``), finds fills journaled twice
from a hash of (symbol, ExecID) (the records of a repeated key are decoded and compared
exactly), and decodes whole events only for the fills asked for.
"""

import contextlib
import mmap
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from engine.enums import Side
from engine.events import OrderFilled
from engine.journal import _kernels as jk
from engine.journal.format import (
    CODE_ENUM,
    CODE_INT,
    CODE_STR,
    KIND_EVENT,
    JournalCorruptError,
    ReadSchema,
)
from engine.journal.reader import JournalReader, StreamChunk

#: The fields read of each fill: (name, kernel kind), the column order of ``_Part.ints``.
_FIELDS: Final = (
    ("ts_event", jk.FIELD_INT),
    ("order_id", jk.FIELD_INT),
    ("exec_id", jk.FIELD_STR),
    ("strategy_id", jk.FIELD_INT),
    ("symbol", jk.FIELD_STR),
    ("side", jk.FIELD_INT),
    ("last_px_ticks", jk.FIELD_INT),
    ("last_qty_lots", jk.FIELD_INT),
)
#: Columns of a part (int64[n, _NCOL]).
C_FILE, C_POS, C_LEN, C_TYPE, C_TS, C_ORDER, C_STRATEGY, C_SYMBOL, C_SIDE, C_PX, C_QTY = range(11)
C_EXEC_HASH, C_EXEC_LEN = 11, 12
_NCOL: Final = 13
_SIDES = np.array(sorted(int(s) for s in Side), np.int64)


@dataclass(frozen=True, slots=True)
class FillColumns:
    """Fills in journal order, one array per field (``symbol`` indexes ``symbols``).

    A day's fills for positions and P&L: ``side`` is +1 (buy) or -1 (sell), ``px`` the price
    in ticks, ``qty`` the lots, ``ts`` the event time (ns).
    """

    symbols: tuple[str, ...]
    symbol: npt.NDArray[np.int64]
    order_id: npt.NDArray[np.int64]
    strategy_id: npt.NDArray[np.int64]
    side: npt.NDArray[np.int64]
    px: npt.NDArray[np.int64]
    qty: npt.NDArray[np.int64]
    ts: npt.NDArray[np.int64]

    @classmethod
    def empty(cls) -> "FillColumns":
        """Return columns with no fill."""
        z = np.zeros(0, np.int64)
        return cls((), z, z, z, z, z, z, z)

    @classmethod
    def of(cls, fills: Iterable[OrderFilled]) -> "FillColumns":
        """Return the columns of ``fills`` (in their order)."""
        rows = list(fills)
        symbols: dict[str, int] = {}
        sym = [symbols.setdefault(f.symbol, len(symbols)) for f in rows]

        def col(get: Callable[[OrderFilled], int]) -> npt.NDArray[np.int64]:
            return np.array([get(f) for f in rows], np.int64)

        return cls(
            tuple(symbols),
            np.array(sym, np.int64),
            col(lambda f: f.order_id),
            col(lambda f: f.strategy_id),
            col(lambda f: int(f.side)),
            col(lambda f: f.last_px_ticks),
            col(lambda f: f.last_qty_lots),
            col(lambda f: f.ts_event),
        )

    def __len__(self) -> int:
        return int(self.qty.shape[0])

    def position_lots(self, strategy_id: int | None = None) -> dict[str, int]:
        """Return the signed position per symbol (of one strategy or all) the fills imply."""
        mask = np.ones(len(self), bool) if strategy_id is None else self.strategy_id == strategy_id
        signed = np.zeros(len(self.symbols), np.int64)
        np.add.at(signed, self.symbol[mask], (self.side * self.qty)[mask])
        present = np.bincount(self.symbol[mask], minlength=len(self.symbols)) > 0
        return {s: int(signed[i]) for i, s in enumerate(self.symbols) if present[i]}

    def positions_by_strategy(self) -> dict[tuple[int, str], int]:
        """Return the signed position of each (strategy, symbol) that traded."""
        if not len(self):
            return {}
        key = self.strategy_id * len(self.symbols) + self.symbol
        keys, inverse = np.unique(key, return_inverse=True)
        signed = np.zeros(keys.shape[0], np.int64)
        np.add.at(signed, inverse, self.side * self.qty)
        n = len(self.symbols)
        return {
            (int(k) // n, self.symbols[int(k) % n]): int(v)
            for k, v in zip(keys.tolist(), signed.tolist(), strict=True)
        }


@dataclass(frozen=True, slots=True)
class _Layout:
    want: npt.NDArray[np.int64]  # field indexes after the sequence number, ascending
    kinds: npt.NDArray[np.int64]
    column: tuple[int, ...]  # for each field of _FIELDS: its position in ``want``


def _layout(schema: ReadSchema) -> _Layout | None:
    """Where the fields of ``_FIELDS`` are in this file's fill records; None if not all are."""
    found: list[tuple[int, int, int]] = []  # (index, kind, position in _FIELDS)
    for k, (name, kind) in enumerate(_FIELDS):
        i = schema.index.get(name)
        if i is None:
            return None
        code = schema.fields[i][1]
        ok = (
            code == CODE_STR
            if kind == jk.FIELD_STR
            else (code == CODE_INT or code.startswith(CODE_ENUM))
        )
        if not ok:
            return None
        found.append((i, kind, k))
    found.sort()
    column = [0] * len(_FIELDS)
    for j, (_i, _kind, k) in enumerate(found):
        column[k] = j
    return _Layout(
        np.array([i for i, _k, _f in found], np.int64),
        np.array([kind for _i, kind, _f in found], np.int64),
        tuple(column),
    )


class FillCollector:
    """Collect the fills of the journal files read by a recovery, chunk by chunk.

    Call :meth:`add` with each streamed chunk of each file, then :meth:`finish` once every
    file was read (it decodes, by file offset, the few records it must see whole).
    """

    def __init__(self) -> None:
        self._parts: list[npt.NDArray[np.int64]] = []
        self._symbols: dict[int, int] = {}  # hash of the symbol's bytes -> index
        self._names: list[str] = []
        self._layouts: dict[tuple[int, int], _Layout | None] = {}

    def add(
        self,
        file: int,
        reader: JournalReader,
        chunk: StreamChunk,
        rows: npt.NDArray[np.int64],
        type_id: int,
    ) -> None:
        """Take the fill records at frame-table ``rows`` of ``chunk`` (all of type ``type_id``).

        Raises
        ------
        JournalCorruptError
            If a record is not a fill event (named by its offset).
        """
        if not rows.size:
            return
        key = (file, type_id)
        if key not in self._layouts:
            self._layouts[key] = _layout(chunk.schemas[type_id])
        lay = self._layouts[key]
        frames = chunk.frames[rows]
        part = np.empty((rows.size, _NCOL), np.int64)
        part[:, C_FILE] = file
        part[:, C_POS] = frames[:, jk.F_POS] + chunk.base
        part[:, C_LEN] = frames[:, jk.F_LEN]
        part[:, C_TYPE] = type_id
        if lay is not None:
            buf = np.frombuffer(chunk.data, np.uint8)
            out = np.empty((rows.size, 3 * len(_FIELDS)), np.int64)
            bad = jk.event_fields(buf, frames, lay.want, lay.kinds, out)
            if bad < 0:
                c = [3 * j for j in lay.column]
                part[:, C_TS] = out[:, c[0]]
                part[:, C_ORDER] = out[:, c[1]]
                part[:, C_EXEC_HASH] = out[:, c[2] + 2]
                part[:, C_EXEC_LEN] = out[:, c[2] + 1]
                part[:, C_STRATEGY] = out[:, c[3]]
                part[:, C_SYMBOL] = self._symbol_codes(buf, out[:, c[4] : c[4] + 3])
                part[:, C_SIDE] = out[:, c[5]]
                part[:, C_PX] = out[:, c[6]]
                part[:, C_QTY] = out[:, c[7]]
                if np.isin(part[:, C_SIDE], _SIDES).all():
                    self._parts.append(part)
                    return
        # A layout the kernel cannot read, or a value it did not expect: decode the events
        # (which names a bad record by its offset) and keep the fills among them.
        events = reader.decode_events(chunk, rows.tolist())
        keep = [i for i, ev in enumerate(events) if isinstance(ev, OrderFilled)]
        fills = [ev for ev in events if isinstance(ev, OrderFilled)]
        part = part[keep]
        for r, f in enumerate(fills):
            exec_id = f.exec_id.encode()
            part[r, C_TS:C_EXEC_LEN + 1] = (
                f.ts_event, f.order_id, f.strategy_id, self._symbol_code(f.symbol),
                int(f.side), f.last_px_ticks, f.last_qty_lots, _fnv1a(exec_id), len(exec_id),
            )  # fmt: skip
        if len(fills):
            self._parts.append(part)

    def _symbol_codes(
        self, buf: npt.NDArray[np.uint8], at: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """Map (offset, length, hash) rows of symbol strings to symbol indexes."""
        hashes, first, inverse = np.unique(at[:, 2], return_index=True, return_inverse=True)
        codes = np.empty(hashes.shape[0], np.int64)
        for u, (h, i) in enumerate(zip(hashes.tolist(), first.tolist(), strict=True)):
            code = self._symbols.get(h)
            if code is None:
                off, n = int(at[i, 0]), int(at[i, 1])
                code = self._symbol_code(bytes(buf[off : off + n]).decode("utf-8", "replace"))
            codes[u] = code
        return codes[inverse.reshape(-1)]

    def _symbol_code(self, name: str) -> int:
        h = _fnv1a(name.encode())
        code = self._symbols.get(h)
        if code is None:
            code = self._symbols[h] = len(self._names)
            self._names.append(name)
        return code

    def finish(self, readers: list[JournalReader]) -> "CollectedFills":
        """Drop fills journaled twice; return what is left (see :class:`CollectedFills`).

        A fill journaled twice has the same ExecID <17> on the same instrument for the same
        order, quantity and price, and is kept once; the same ExecID naming another fill is a
        new fill, kept and counted in ``reused``.
        """
        if not self._parts:
            return CollectedFills(FillColumns.empty(), np.zeros((0, _NCOL), np.int64), 0, 0)
        table = np.concatenate(self._parts)
        self._parts = []
        keep, duplicates, reused = self._dedup(table, readers)
        table = table[keep]
        cols = FillColumns(
            tuple(self._names),
            table[:, C_SYMBOL].copy(),
            table[:, C_ORDER].copy(),
            table[:, C_STRATEGY].copy(),
            table[:, C_SIDE].copy(),
            table[:, C_PX].copy(),
            table[:, C_QTY].copy(),
            table[:, C_TS].copy(),
        )
        return CollectedFills(cols, table, duplicates, reused)

    def _dedup(
        self, table: npt.NDArray[np.int64], readers: list[JournalReader]
    ) -> tuple[npt.NDArray[np.bool_], int, int]:
        keep = np.ones(table.shape[0], bool)
        named = np.flatnonzero(table[:, C_EXEC_LEN] > 0)
        if not named.size:
            return keep, 0, 0
        # Group by (symbol, hash of the ExecID); a key seen once is a new fill for certain.
        sym, h = table[named, C_SYMBOL], table[named, C_EXEC_HASH]
        order = np.lexsort((named, h, sym))
        s_sym, s_h = sym[order], h[order]
        same = (s_sym[1:] == s_sym[:-1]) & (s_h[1:] == s_h[:-1])
        repeated = np.zeros(order.shape[0], bool)
        repeated[1:] |= same
        repeated[:-1] |= same
        rows = np.sort(named[order[repeated]])
        if not rows.size:
            return keep, 0, 0
        # Those few are decoded whole and compared exactly, in journal order.
        seen: dict[tuple[str, str], tuple[int, int, int]] = {}
        duplicates = reused = 0
        for r, ev in zip(rows.tolist(), decode_at(readers, table[rows]), strict=True):
            k = (ev.symbol, ev.exec_id)
            fill = (ev.order_id, ev.last_qty_lots, ev.last_px_ticks)
            known = seen.get(k)
            if known == fill:
                duplicates += 1
                keep[r] = False
            elif known is not None:
                reused += 1
            seen[k] = fill
        return keep, duplicates, reused


@dataclass(frozen=True, slots=True)
class CollectedFills:
    """The fills a recovery kept: columns, where each record is, and what was dropped."""

    columns: FillColumns
    table: npt.NDArray[np.int64]  # int64[n, _NCOL]: file, offset, length, type id, ...
    duplicates: int  # fills journaled twice, kept once
    reused: int  # ExecIDs that named two different fills (both kept)

    def events(
        self, readers: list[JournalReader], orders: Mapping[int, object] | None = None
    ) -> tuple[OrderFilled, ...]:
        """Decode the fills (of the orders in ``orders`` only, if given), in journal order."""
        rows = self.table
        if orders is not None:
            ids = np.fromiter(orders.keys(), np.int64, len(orders))
            rows = rows[np.isin(rows[:, C_ORDER], ids)]
        return tuple(decode_at(readers, rows))


def decode_at(readers: list[JournalReader], rows: npt.NDArray[np.int64]) -> list[OrderFilled]:
    """Decode the fill records at ``rows`` (columns ``C_FILE .. C_TYPE``), in row order."""
    out: list[OrderFilled | None] = [None] * rows.shape[0]
    for f in np.unique(rows[:, C_FILE]).tolist():
        sel = np.flatnonzero(rows[:, C_FILE] == f)
        reader = readers[f]
        frames = np.zeros((sel.size, jk.FRAME_COLUMNS), np.int64)
        frames[:, jk.F_POS] = rows[sel, C_POS]
        frames[:, jk.F_LEN] = rows[sel, C_LEN]
        frames[:, jk.F_KIND] = KIND_EVENT
        frames[:, jk.F_TYPE] = rows[sel, C_TYPE]
        with open(reader.path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ)
            try:
                chunk = StreamChunk(mm, 0, frames, -1, reader.schemas)  # type: ignore[arg-type]
                events = reader.decode_events(chunk, list(range(sel.size)))
                del chunk
            finally:
                with contextlib.suppress(BufferError):  # views held by an error's traceback
                    mm.close()
        for i, ev in zip(sel.tolist(), events, strict=True):
            if not isinstance(ev, OrderFilled):
                raise JournalCorruptError(
                    reader.path,
                    int(rows[i, C_POS]),
                    -1,
                    f"{type(ev).__name__} where a fill was read",
                )
            out[i] = ev
    return [ev for ev in out if ev is not None]


def _fnv1a(data: bytes) -> int:
    """Return the kernel's 63-bit FNV-1a hash of ``data`` (``engine.journal._kernels._fnv1a``)."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h >> 1
