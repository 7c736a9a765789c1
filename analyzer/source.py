# SPDX-License-Identifier: MIT
"""Where the Analyzer reads ticks from: one instrument-day of the HDF5 tick store.

:class:`DaySource` is the small read interface the Analyzer's data modules need (row counts,
reads by time range, reads in chunks); :class:`StoreDay` implements it over
:class:`engine.tickstore.store.TickStore`, :class:`ArrayDay` over rows already in memory (a
day captured live, or built by a test). :func:`browse` lists a store's instruments and days
with their row counts and time spans for the browser.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from engine.tickstore.store import TickStore
from engine.tickstore.summaries import summary_dir

Rows = npt.NDArray[np.void]

#: Dataset kinds the Analyzer charts, in the order it prefers them.
CHART_KINDS: Final[tuple[str, ...]] = ("bbo", "trades", "l2", "mbo")
#: Rows per read when a day is scanned in chunks.
CHUNK_ROWS: Final[int] = 1 << 20


class DaySource(Protocol):
    """One instrument and trading day, readable by kind and time range."""

    @property
    def symbol(self) -> str:
        """Instrument symbol."""
        ...

    @property
    def day(self) -> str:
        """Trading day, ``YYYYMMDD``."""
        ...

    @property
    def tick_size(self) -> float:
        """Price of one tick (``price = px * tick_size``)."""
        ...

    @property
    def lot_size(self) -> float:
        """Size of one lot (``size = qty * lot_size``)."""
        ...

    def counts(self) -> dict[str, int]:
        """Return the row count of every dataset kind the day has."""
        ...

    def read(self, kind: str, t0: int | None = None, t1: int | None = None) -> Rows:
        """Return the rows of ``kind`` with ``t0 <= ts <= t1`` (open ends: no bound)."""
        ...

    def read_rows(self, kind: str, i0: int, i1: int) -> Rows:
        """Return rows ``[i0, i1)`` of ``kind`` (numbered from 0 in time order)."""
        ...

    def chunks(self, kind: str, rows: int = CHUNK_ROWS) -> Iterator[Rows]:
        """Yield all rows of ``kind`` in time order, ``rows`` at a time."""
        ...

    def stamp(self, kind: str) -> dict[str, int | str]:
        """Return what identifies the current content of ``kind`` (for cached summaries)."""
        ...

    def cache_dir(self) -> Path | None:
        """Return the folder where summaries of this day may be kept, or ``None``."""
        ...


@dataclass(frozen=True, slots=True)
class DayEntry:
    """One row of the instrument and day browser."""

    symbol: str
    day: str
    counts: Mapping[str, int]
    t_first: int  # ns, first ts over all kinds (0: empty)
    t_last: int  # ns, last ts over all kinds
    store: str = ""  # path of the tick store holding it

    @property
    def rows(self) -> int:
        """Return the total row count over all kinds."""
        return sum(self.counts.values())


class ArrayDay:
    """A :class:`DaySource` over structured arrays held in memory (each sorted by ``ts``)."""

    def __init__(
        self,
        symbol: str,
        day: str,
        data: Mapping[str, Rows],
        *,
        tick_size: float = 1.0,
        lot_size: float = 1.0,
    ) -> None:
        self._symbol = symbol
        self._day = day
        self._data = dict(data)
        self._tick = tick_size
        self._lot = lot_size

    @property
    def symbol(self) -> str:
        """Instrument symbol."""
        return self._symbol

    @property
    def day(self) -> str:
        """Trading day, ``YYYYMMDD``."""
        return self._day

    @property
    def tick_size(self) -> float:
        """Price of one tick."""
        return self._tick

    @property
    def lot_size(self) -> float:
        """Size of one lot."""
        return self._lot

    def counts(self) -> dict[str, int]:
        """Return the row count of every kind."""
        return {k: int(v.shape[0]) for k, v in self._data.items()}

    def read(self, kind: str, t0: int | None = None, t1: int | None = None) -> Rows:
        """Return the rows of ``kind`` with ``t0 <= ts <= t1``."""
        rows = self._data[kind]
        i0 = 0 if t0 is None else int(np.searchsorted(rows["ts"], t0, side="left"))
        i1 = rows.shape[0] if t1 is None else int(np.searchsorted(rows["ts"], t1, side="right"))
        return rows[i0:i1]

    def read_rows(self, kind: str, i0: int, i1: int) -> Rows:
        """Return rows ``[i0, i1)`` of ``kind``."""
        return self._data[kind][i0:i1]

    def chunks(self, kind: str, rows: int = CHUNK_ROWS) -> Iterator[Rows]:
        """Yield the rows of ``kind`` ``rows`` at a time."""
        data = self._data[kind]
        for i in range(0, data.shape[0], rows):
            yield data[i : i + rows]

    def stamp(self, kind: str) -> dict[str, int | str]:
        """Return the row count and last time of ``kind``."""
        rows = self._data[kind]
        return {"rows": int(rows.shape[0]), "last": int(rows["ts"][-1]) if rows.shape[0] else 0}

    def cache_dir(self) -> Path | None:
        """Return ``None``: summaries of an in-memory day are not kept."""
        return None


class StoreDay:
    """A :class:`DaySource` over one instrument's consecutive days in a ``TickStore``.

    Several days (a session that runs past midnight UTC, like CME's) read as one series.

    Parameters
    ----------
    store : engine.tickstore.store.TickStore
        The open store.
    symbol : str
        Instrument.
    day : str | Sequence[str]
        Trading day (``YYYYMMDD``), or several in time order.

    Raises
    ------
    ValueError
        The days' tick or lot sizes differ.
    """

    def __init__(self, store: TickStore, symbol: str, day: str | Sequence[str]) -> None:
        self.store = store
        self._symbol = symbol
        self.days = [day] if isinstance(day, str) else sorted(day)
        if not self.days:
            raise ValueError(f"{symbol}: no day given")
        self._infos = [store.info(symbol, d) for d in self.days]
        first = self._infos[0]
        for info in self._infos[1:]:
            if (info.tick_size, info.lot_size) != (first.tick_size, first.lot_size):
                raise ValueError(
                    f"{symbol}: {info.day} has tick/lot size {info.tick_size}/{info.lot_size}, "
                    f"{first.day} {first.tick_size}/{first.lot_size}: chart them separately"
                )

    @property
    def symbol(self) -> str:
        """Instrument symbol."""
        return self._symbol

    @property
    def day(self) -> str:
        """Trading day ``YYYYMMDD`` (``YYYYMMDD-YYYYMMDD`` for several)."""
        return self.days[0] if len(self.days) == 1 else f"{self.days[0]}-{self.days[-1]}"

    @property
    def tick_size(self) -> float:
        """Price of one tick, from the day's attributes."""
        return float(self._infos[0].tick_size)

    @property
    def lot_size(self) -> float:
        """Size of one lot, from the day's attributes."""
        return float(self._infos[0].lot_size)

    def counts(self) -> dict[str, int]:
        """Return the row count of every kind over the days."""
        out: dict[str, int] = {}
        for info in self._infos:
            for k, n in info.rows.items():
                out[k] = out.get(k, 0) + n
        return out

    def read(self, kind: str, t0: int | None = None, t1: int | None = None) -> Rows:
        """Return the rows of ``kind`` with ``t0 <= ts <= t1``."""
        # The store's ranges are half-open: ts < t1.
        end = None if t1 is None else t1 + 1
        parts = [
            self.store.read(self._symbol, info.day, kind, t0, end)
            for info in self._infos
            if (t1 is None or info.first_ts <= t1) and (t0 is None or info.last_ts >= t0)
        ]
        if not parts:
            return self.store.read(self._symbol, self.days[0], kind, 0, 0)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def read_rows(self, kind: str, i0: int, i1: int) -> Rows:
        """Return rows ``[i0, i1)`` of ``kind``, numbered across the days in order.

        Read by position (``TickStore.read_rows``), which skips the bisection of the on-disk
        times a read by time does, and reads the stored chunks outside the GIL.
        """
        parts: list[Rows] = []
        start = 0
        for info in self._infos:
            n = info.rows.get(kind, 0)
            a, b = max(i0 - start, 0), min(i1 - start, n)
            if b > a:
                parts.append(self.store.read_rows(self._symbol, info.day, kind, a, b))
            start += n
        if not parts:
            return self.store.read(self._symbol, self.days[0], kind, 0, 0)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def chunks(self, kind: str, rows: int = CHUNK_ROWS) -> Iterator[Rows]:
        """Yield the rows of ``kind`` in chunks as the store reads them, day after day."""
        for d in self.days:
            yield from self.store.iter_chunks(self._symbol, d, kind, rows=rows)

    def stamp(self, kind: str) -> dict[str, int | str]:
        """Return what identifies the rows of ``kind``: their count, first and last time.

        A day's rows are only ever appended (or the day deleted and written again), so these
        change whenever the rows do; writing other days to the store leaves them alone.
        """
        n = self.counts().get(kind, 0)
        if n == 0:
            return day_stamp(0, 0, 0)
        first = int(self.read_rows(kind, 0, 1)["ts"][0])
        last = int(self.read_rows(kind, n - 1, n)["ts"][0])
        return day_stamp(n, first, last)

    def cache_dir(self) -> Path | None:
        """Return ``<store>.lod/<symbol>/<day>`` beside the store file."""
        return lod_dir(self.store.path, self._symbol, self.day)


def day_stamp(rows: int, first_ts: int, last_ts: int) -> dict[str, int | str]:
    """Return the stamp a summary of rows of one kind is saved with (see ``StoreDay.stamp``)."""
    return {"rows": rows, "first_ts": first_ts, "last_ts": last_ts}


def lod_dir(store_path: str | Path, symbol: str, day: str) -> Path:
    """Return the folder of a day's pyramids: ``<store>.lod/<symbol>/<day>`` beside the store."""
    return summary_dir(store_path, symbol, day)


def browse(store: TickStore) -> list[DayEntry]:
    """Return one :class:`DayEntry` per instrument and day of ``store``, sorted."""
    out: list[DayEntry] = []
    for symbol in store.instruments():
        for day in store.days(symbol):
            info = store.info(symbol, day)
            out.append(
                DayEntry(symbol, day, dict(info.rows), info.first_ts, info.last_ts, str(store.path))
            )
    return out
