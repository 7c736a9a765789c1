# SPDX-License-Identifier: MIT
"""Import LOBSTER files: a message file and its order-book file, row for row.

LOBSTER (lobsterdata.com) ships one pair per instrument and day, e.g.
``AAPL_2012-06-21_34200000_57600000_message_10.csv`` and ``..._orderbook_10.csv``, no header:

* message: ``time, type, order id, size, price, direction``; time in seconds after midnight
  (decimals up to ns), price in dollars x 10000, direction 1 buy / -1 sell limit order. Types:
  1 new limit order, 2 partial cancel, 3 deletion, 4 execution of a visible order, 5 execution
  of a hidden order, 6 cross trade (auction), 7 trading halt.
* order book: the book *after* each message, ``ask px 1, ask size 1, bid px 1, bid size 1,
  ask px 2, ...`` for N levels; an empty level has price 9999999999 (ask) / -9999999999 (bid)
  and size 0.

What is stored: types 1-4 as ``mbo`` (``L3_ADD``, ``L3_CANCEL`` by the size, ``L3_CANCEL`` of
the whole order, ``L3_EXECUTE``); types 4-6 also as ``trades``, the aggressor being the side
opposite to the resting order (0 for a cross); every order-book row as an ``l2_snap`` row of
depth N, and the best level as ``bbo`` when it changed. Type 7 rows are counted, not stored.
``ts`` = the day's midnight + the message time. LOBSTER files carry no zone; their times are
the exchange's local time (NASDAQ: New York), so midnight is taken in ``tz``
(``America/New_York`` by default, daylight saving time included) and stored as UTC.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Final

import numpy as np
import numpy.typing as npt

from engine.tickstore import _kernels as k
from engine.tickstore.importing import (
    Grid,
    ImportResult,
    Progress,
    Rejects,
    Sink,
    Staging,
    units,
)
from engine.tickstore.schema import BBO_DTYPE, MBO_DTYPE, TRADE_DTYPE, l2_snapshot_dtype
from engine.types import L3_ADD, L3_CANCEL, L3_EXECUTE

#: Lines read from each file per step.
BLOCK_LINES: Final[int] = 200_000
_EMPTY_ASK: Final[int] = 9_999_999_999
_NAME = re.compile(r"_(\d{4})-(\d{2})-(\d{2})_")
_MSG_COLUMNS: Final[tuple[str, ...]] = ("time", "type", "order id", "size", "price", "direction")


def day_from_name(path: Path) -> str | None:
    """Return ``YYYYMMDD`` from a LOBSTER file name, or ``None``."""
    m = _NAME.search(path.name)
    return "".join(m.groups()) if m else None


def levels_from_name(path: Path) -> int | None:
    """Return N of ``..._orderbook_N.csv``, or ``None``."""
    m = re.search(r"_(\d+)\.csv$", path.name)
    return int(m.group(1)) if m else None


def _lines(fh: IO[bytes]) -> Iterator[bytes]:
    while True:
        block = b"".join(itertools.islice(fh, BLOCK_LINES))
        if not block:
            return
        yield block if block.endswith(b"\n") else block + b"\n"


#: Zone of LOBSTER's times (NASDAQ's local time).
DEFAULT_TZ: Final = "America/New_York"


def local_midnight_ns(day: str, tz: str) -> int:
    """Return midnight of ``day`` (YYYYMMDD) in time zone ``tz`` as ns since the epoch (UTC)."""
    import datetime as dt
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"tz: {tz!r} is not a time zone name (e.g. America/New_York or UTC)"
        ) from None
    d = dt.datetime.strptime(day, "%Y%m%d").replace(tzinfo=zone)
    return int(d.timestamp()) * 1_000_000_000


class LobsterImporter:
    """Import LOBSTER file pairs of one instrument into a :class:`Staging` store."""

    def __init__(
        self,
        staging: Staging,
        symbol: str,
        *,
        tick_size: str,
        lot_size: str = "1",
        price_scale: str = "10000",
        venue: str = "",
        skip_bad_rows: bool = False,
        tz: str = DEFAULT_TZ,
    ) -> None:
        self.result = ImportResult()
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.tz = tz
        local_midnight_ns("20000101", tz)  # a bad zone fails before any file is read
        self.staging = staging
        self.symbol = symbol
        self.tick_size, self.lot_size, self.venue = tick_size, lot_size, venue
        tick = Grid("tick size", tick_size)
        scale = units("price scale", price_scale) // 1_000_000_000
        if scale < 1 or 1_000_000_000 % scale or tick.units % (1_000_000_000 // scale):
            raise ValueError(
                f"tick size {tick_size} is not a whole number of LOBSTER price units "
                f"(1/{price_scale})"
            )
        self.px_per_tick = tick.units // (1_000_000_000 // scale)
        lot = Grid("lot size", lot_size)
        if lot.units % 1_000_000_000:
            raise ValueError(f"lot size {lot_size}: LOBSTER sizes are whole shares")
        self.shares_per_lot = lot.units // 1_000_000_000
        self.halts = 0

    def _parse(
        self, path: Path, data: bytes, first_line: int, n_cols: int, columns: tuple[str, ...]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        buf = np.frombuffer(data, np.uint8)
        conv = np.full(n_cols, k.CONV_INT, np.int64)
        param = np.zeros(n_cols, np.int64)
        if columns is _MSG_COLUMNS:
            conv[0], param[0] = k.CONV_TIME_NUM, 1_000_000_000
        need = np.arange(n_cols, dtype=np.int64)
        cap = data.count(b"\n") + 1
        out = np.empty((n_cols, cap), np.int64)
        lines = np.empty(cap, np.int64)
        errs = np.zeros((cap if self.rejects.skip else 1, 5), np.int64)
        n, _n_lines, n_err, _used = k.csv_parse(
            buf, ord(","), need, conv, param, out, lines, first_line, errs
        )
        for line, f, s, e, code in errs[: min(n_err, errs.shape[0])].tolist():
            name = columns[f] if f < len(columns) else f"column {f + 1}"
            value = bytes(buf[s:e]).decode(errors="replace")
            reason = "is missing or not an integer" if code != k.ERR_TIME else "is not a time"
            self.rejects.bad(str(path), line, name, value, reason)
        return out[:, :n], lines[:n]

    def import_pair(
        self,
        message: Path,
        orderbook: Path,
        day: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        """Import one message file and its order-book file."""
        day = day or day_from_name(message)
        if day is None:
            raise ValueError(f"{message}: give the day (the file name has no YYYY-MM-DD)")
        midnight = local_midnight_ns(day, self.tz)
        n_levels = levels_from_name(orderbook)
        book_cols = [
            f"{s} {f} {i}"
            for i in range(1, 1000)
            for s in ("ask", "bid")
            for f in ("price", "size")
        ]
        total = message.stat().st_size
        sink: Sink | None = None
        line = 1
        with message.open("rb") as fm, orderbook.open("rb") as fb:
            for m_data, b_data in itertools.zip_longest(_lines(fm), _lines(fb)):
                if m_data is None or b_data is None:
                    short = orderbook if b_data is None else message
                    raise ValueError(f"{short}: has fewer lines than its partner file")
                if n_levels is None:
                    n_levels = b_data[: b_data.index(b"\n")].count(b",") // 4 + 1
                if sink is None:
                    sink = Sink(
                        self.staging,
                        self.result,
                        self.symbol,
                        tick_size=self.tick_size,
                        lot_size=self.lot_size,
                        venue=self.venue,
                        n_levels=n_levels,
                    )
                msg, m_lines = self._parse(message, m_data, line, 6, _MSG_COLUMNS)
                book, b_lines = self._parse(
                    orderbook, b_data, line, 4 * n_levels, tuple(book_cols[: 4 * n_levels])
                )
                # a row bad in either file goes in both
                both = np.intersect1d(m_lines, b_lines, assume_unique=True)
                msg = msg[:, np.isin(m_lines, both)]
                book = book[:, np.isin(b_lines, both)]
                self._store(sink, message, msg, book, both, midnight, n_levels)
                line += m_data.count(b"\n")
                if progress is not None:
                    progress(fm.tell(), total, self.result.total_rows)

    def _ticks(self, px: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return px // self.px_per_tick

    def _store(
        self,
        sink: Sink,
        path: Path,
        msg: npt.NDArray[np.int64],
        book: npt.NDArray[np.int64],
        lines: npt.NDArray[np.int64],
        midnight: int,
        n_levels: int,
    ) -> None:
        t, typ, oid, size, px, direction = msg
        bad_px = np.flatnonzero((px % self.px_per_tick != 0) & (typ != 7))  # a halt has -1
        for i in bad_px:
            self.rejects.bad(
                str(path),
                int(lines[i]),
                "price",
                str(px[i]),
                f"is not a multiple of the tick size {self.tick_size}",
            )
        bad_type = np.flatnonzero((typ < 1) | (typ > 7))
        for i in bad_type:
            self.rejects.bad(str(path), int(lines[i]), "type", str(typ[i]), "is not 1..7")
        ok = np.ones(t.shape[0], bool)
        ok[bad_px] = ok[bad_type] = False
        t, typ, oid, size, px, direction = (c[ok] for c in msg)
        book = book[:, ok]
        ts = midnight + t
        self.halts += int((typ == 7).sum())
        lots = size // self.shares_per_lot
        # market by order: 1 add, 2 partial cancel, 3 delete, 4 visible execution
        m = typ <= 4
        mbo = np.zeros(int(m.sum()), MBO_DTYPE)
        mbo["ts"] = mbo["ts_recv"] = ts[m]
        mbo["order_id"], mbo["px"], mbo["qty"] = oid[m], self._ticks(px[m]), lots[m]
        mbo["side"] = direction[m]
        mbo["action"] = np.select(
            [typ[m] == 1, typ[m] == 4], [L3_ADD, L3_EXECUTE], L3_CANCEL
        ).astype(np.uint8)
        sink.append("mbo", mbo)
        tr = (typ >= 4) & (typ <= 6)
        trades = np.zeros(int(tr.sum()), TRADE_DTYPE)
        trades["ts"] = trades["ts_recv"] = ts[tr]
        trades["px"], trades["qty"], trades["trade_id"] = self._ticks(px[tr]), lots[tr], -1
        trades["side"] = np.where(typ[tr] == 6, 0, -direction[tr])
        sink.append("trades", trades)
        snap = np.zeros(ts.shape[0], l2_snapshot_dtype(n_levels))
        snap["ts"] = snap["ts_recv"] = ts
        ask_px, ask_sz, bid_px, bid_sz = (book[j::4].T for j in range(4))
        empty_ask, empty_bid = ask_px >= _EMPTY_ASK, bid_px <= -_EMPTY_ASK
        snap["ask_px"] = np.where(empty_ask, 0, ask_px // self.px_per_tick)
        snap["ask_qty"] = np.where(empty_ask, 0, ask_sz // self.shares_per_lot)
        snap["bid_px"] = np.where(empty_bid, 0, bid_px // self.px_per_tick)
        snap["bid_qty"] = np.where(empty_bid, 0, bid_sz // self.shares_per_lot)
        sink.append("l2_snap", snap)
        top = np.stack(
            [
                snap["bid_px"][:, 0],
                snap["bid_qty"][:, 0],
                snap["ask_px"][:, 0],
                snap["ask_qty"][:, 0],
            ],
            axis=1,
        )
        changed = np.r_[True, (top[1:] != top[:-1]).any(axis=1)]
        bbo = np.zeros(int(changed.sum()), BBO_DTYPE)
        bbo["ts"] = bbo["ts_recv"] = ts[changed]
        for j, name in enumerate(("bid_px", "bid_qty", "ask_px", "ask_qty")):
            bbo[name] = top[changed, j]
        bbo["seq"] = -1
        sink.append("bbo", bbo)

    def finish(self) -> ImportResult:
        """Return the result."""
        return self.result


def import_lobster(
    pairs: list[tuple[Path, Path]],
    store: Path,
    symbol: str,
    *,
    day: str | None = None,
    tick_size: str,
    lot_size: str = "1",
    price_scale: str = "10000",
    venue: str = "",
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
    tz: str = DEFAULT_TZ,
) -> ImportResult:
    """Import LOBSTER (message, orderbook) pairs into ``store``, all or nothing."""
    with Staging(store, replace=replace) as staging:
        imp = LobsterImporter(
            staging,
            symbol,
            tick_size=tick_size,
            lot_size=lot_size,
            price_scale=price_scale,
            venue=venue,
            skip_bad_rows=skip_bad_rows,
            tz=tz,
        )
        for message, orderbook in pairs:
            imp.import_pair(message, orderbook, day, progress)
        return imp.finish()
