# SPDX-License-Identifier: MIT
"""Level of detail for long tick series: a min/max pyramid, computed once, kept with the data.

A chart must never draw more points than it has pixels. :class:`Pyramid` summarizes a time
series of ``n`` rows (sorted ``ts`` plus one or more value columns) in levels of buckets:
level 0 buckets hold ``base`` consecutive rows, each further level ``factor`` buckets of the
level below. A bucket keeps the time of its first and last row, and per column the minimum and
the maximum (NaN values, i.e. a missing side of the book, are ignored; a bucket with no value
is NaN) and optionally the sum (trade volume, notional).

:meth:`Pyramid.envelope` answers "what do I draw between ``t0`` and ``t1`` on ``width``
pixels": the coarsest level whose buckets in that range still outnumber the pixels, as a
min/max polyline (two points per bucket). A span that has fewer rows than pixels should be
drawn from the rows themselves (:meth:`Pyramid.rows_in`).

Building is incremental (:class:`PyramidBuilder` is fed chunks as they are read from the tick
store), so a day never has to be in memory twice; :meth:`Pyramid.save` / :meth:`Pyramid.load`
keep it in a folder of ``.npy`` files beside the store and load it memory-mapped: opening a
100M-row day reads only the few pages of the coarse levels the first frame draws.
"""

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: Rows per level-0 bucket.
BASE: Final[int] = 64
#: Level-k+1 buckets per level-k bucket.
FACTOR: Final[int] = 4
#: Format version of a saved pyramid (``meta.json``).
FORMAT_VERSION: Final[int] = 1


def bin_columns(
    t_first: I64, t_last: I64, lo: F64, hi: F64, t0: int, t1: int, width: int, gap_ns: int
) -> tuple[I64, F64]:
    """Return the min/max polyline of spans (rows, or buckets of rows) over pixel columns.

    The spans (``t_first``/``t_last``, ``lo``/``hi``, in time order) are grouped by the
    pixel column of ``[t0, t1]`` on ``width`` pixels their first time falls in (spans off the
    view make columns of their own); each column gives two points, (first time, min) and
    (last time, max): a vertical stroke at pixel scale, so never more than about
    ``2 * width`` points whatever the rows. A pause longer than ``gap_ns`` between two
    columns breaks the line (NaN); ``0``: none.
    """
    x, ys = bin_many(t_first, t_last, (lo,), (hi,), t0, t1, width, gap_ns)
    return x, ys[0]


def bin_many(
    t_first: I64,
    t_last: I64,
    los: Sequence[F64],
    his: Sequence[F64],
    t0: int,
    t1: int,
    width: int,
    gap_ns: int,
) -> tuple[I64, list[F64]]:
    """Return :func:`bin_columns` of several columns of the same spans: one x, a y each.

    The columns and their gaps are those of the spans, so they are found once (the bid
    and the ask of a chart's quotes).
    """
    n = t_first.shape[0]
    if n == 0:
        return np.empty(0, np.int64), [np.empty(0) for _ in los]
    col = np.floor((t_first - t0).astype(np.float64) * (width / max(t1 - t0, 1))).astype(np.int64)
    starts = np.flatnonzero(np.concatenate([[True], col[1:] != col[:-1]]))
    ends = np.concatenate([starts[1:] - 1, [n - 1]])
    x = np.empty(2 * starts.shape[0], np.int64)
    x[0::2], x[1::2] = t_first[starts], t_last[ends]
    ys: list[F64] = []
    for lo, hi in zip(los, his, strict=True):
        y = np.empty(2 * starts.shape[0])
        y[0::2], y[1::2] = np.fmin.reduceat(lo, starts), np.fmax.reduceat(hi, starts)
        ys.append(y)
    if gap_ns > 0 and starts.shape[0] > 1:
        gaps = np.flatnonzero(t_first[starts[1:]] - t_last[ends[:-1]] > gap_ns)
        if gaps.shape[0]:
            at = 2 * (gaps + 1)
            x = np.insert(x, at, t_last[ends[gaps]])
            ys = [np.insert(y, at, np.nan) for y in ys]
    return x, ys


def pixel_envelope(ts: I64, v: F64, t0: int, t1: int, width: int, gap_ns: int) -> tuple[I64, F64]:
    """Return the min/max polyline of ``v`` over pixel columns of ``[t0, t1]``.

    Each column with rows gives two points, (first time, min) and (last time, max), as the
    pyramid's envelopes do; a pause longer than ``gap_ns`` between columns breaks the line
    (NaN). ``ts`` and ``v`` are the rows to summarize, in time order.
    """
    return bin_columns(ts, ts, v, v, t0, t1, width, gap_ns)


class PyramidFormatError(ValueError):
    """A saved pyramid is missing, damaged or was built from other data."""


@dataclass(frozen=True, slots=True)
class Level:
    """One level of a pyramid: ``n`` buckets of ``rows`` source rows each (the last may be short).

    ``t_first`` / ``t_last`` are the times of each bucket's first and last row; ``lo`` / ``hi``
    map a column to its per-bucket minimum and maximum, ``sums`` to its per-bucket sum.
    """

    rows: int
    t_first: I64
    t_last: I64
    lo: Mapping[str, F64]
    hi: Mapping[str, F64]
    sums: Mapping[str, F64]

    @property
    def n(self) -> int:
        """Return the number of buckets."""
        return int(self.t_first.shape[0])

    @property
    def nbytes(self) -> int:
        """Return the size of the level's arrays in bytes."""
        arrays = [self.t_first, self.t_last, *self.lo.values(), *self.hi.values()]
        return sum(int(a.nbytes) for a in [*arrays, *self.sums.values()])


def _reduce(a: F64, width: int, op: np.ufunc) -> F64:
    """Reduce consecutive groups of ``width`` values with ``op`` (the last group may be short)."""
    n = a.shape[0]
    full = n // width
    out = np.empty(full + (1 if n % width else 0), dtype=np.float64)
    if full:
        out[:full] = op.reduce(a[: full * width].reshape(full, width), axis=1)
    if n % width:
        out[full] = op.reduce(a[full * width :])
    return out


def _firsts(a: I64, width: int) -> I64:
    return np.ascontiguousarray(a[::width])


def _lasts(a: I64, width: int) -> I64:
    n = a.shape[0]
    idx = np.minimum(np.arange(width - 1, n + width - 1, width), n - 1)
    return np.ascontiguousarray(a[idx])


def _level_from_rows(ts: I64, columns: Mapping[str, F64], sums: Sequence[str], width: int) -> Level:
    return Level(
        rows=width,
        t_first=_firsts(ts, width),
        t_last=_lasts(ts, width),
        lo={k: _reduce(v, width, np.fmin) for k, v in columns.items()},
        hi={k: _reduce(v, width, np.fmax) for k, v in columns.items()},
        sums={k: _reduce(np.nan_to_num(columns[k]), width, np.add) for k in sums},
    )


def _level_up(level: Level, factor: int) -> Level:
    return Level(
        rows=level.rows * factor,
        t_first=_firsts(level.t_first, factor),
        t_last=_lasts(level.t_last, factor),
        lo={k: _reduce(v, factor, np.fmin) for k, v in level.lo.items()},
        hi={k: _reduce(v, factor, np.fmax) for k, v in level.hi.items()},
        sums={k: _reduce(v, factor, np.add) for k, v in level.sums.items()},
    )


class Pyramid:
    """Min/max (and sum) summaries of a sorted time series at every power of ``factor``.

    Parameters
    ----------
    n_rows : int
        Rows of the source series.
    columns : Sequence[str]
        Value columns summarized (the keys of every level's ``lo`` / ``hi``).
    levels : Sequence[Level]
        Finest first; level ``k`` has buckets of ``base * factor**k`` rows.
    """

    def __init__(
        self,
        n_rows: int,
        columns: Sequence[str],
        levels: Sequence[Level],
        gaps: I64 | None = None,
    ) -> None:
        self.n_rows = n_rows
        self.columns = tuple(columns)
        self.levels = tuple(levels)
        #: ``int64[k, 2]``: times of the rows before and after each gap longer than the
        #: builder's ``gap_ns`` (a feed outage, a closed session), in time order.
        self.gaps: I64 = gaps if gaps is not None else np.empty((0, 2), np.int64)
        self._last_level: tuple[tuple[int, int, int], int | None] | None = None

    @classmethod
    def build(
        cls,
        ts: I64,
        columns: Mapping[str, F64],
        *,
        sums: Sequence[str] = (),
        base: int = BASE,
        factor: int = FACTOR,
        gap_ns: int = 0,
    ) -> "Pyramid":
        """Build the pyramid of a series held in memory (see :class:`PyramidBuilder`)."""
        builder = PyramidBuilder(tuple(columns), sums=sums, base=base, factor=factor, gap_ns=gap_ns)
        builder.feed(ts, columns)
        return builder.finish()

    @property
    def nbytes(self) -> int:
        """Return the size of all levels in bytes."""
        return sum(lv.nbytes for lv in self.levels)

    @property
    def span(self) -> tuple[int, int]:
        """Return the times of the first and the last row (``(0, 0)`` when empty)."""
        if not self.levels or self.levels[0].n == 0:
            return (0, 0)
        return int(self.levels[0].t_first[0]), int(self.levels[-1].t_last[-1])

    def count_in(self, t0: int, t1: int) -> int:
        """Return about how many source rows lie in ``[t0, t1]`` (exact to one bucket)."""
        if not self.levels:
            return 0
        lv = self.levels[0]
        i0 = int(np.searchsorted(lv.t_last, t0, side="left"))
        i1 = int(np.searchsorted(lv.t_first, t1, side="right"))
        return max(0, i1 - i0) * lv.rows

    def level_for(self, t0: int, t1: int, width: int) -> int | None:
        """Return the coarsest level with at least ``width`` buckets in ``[t0, t1]``.

        ``None`` means that the span holds fewer than ``width`` level-0 buckets' worth of rows:
        draw the rows themselves.
        """
        last = self._last_level  # (a frame asks twice: may the rows be drawn, and which)
        if last is not None and last[0] == (t0, t1, width):
            return last[1]
        best: int | None = None
        for k, lv in enumerate(self.levels):
            i0 = int(np.searchsorted(lv.t_last, t0, side="left"))
            i1 = int(np.searchsorted(lv.t_first, t1, side="right"))
            if i1 - i0 >= width:
                best = k
            else:
                break
        self._last_level = ((t0, t1, width), best)
        return best

    def envelope(
        self,
        column: str,
        t0: int,
        t1: int,
        width: int,
        *,
        gap_ns: int = 0,
        level: int | None = None,
    ) -> tuple[I64, F64] | None:
        """Return the min/max polyline of ``column`` over ``[t0, t1]`` for ``width`` pixels.

        The buckets of the coarsest level with at least ``width`` of them in the span (or of
        ``level``), plus one either side so that the line runs off the view's edges, are
        merged per pixel column (:func:`bin_columns`): two points per column, its minimum and
        maximum, so a frame strokes about ``2 * width`` points and no more (Qt's cost grows
        with the points and with the length of their strokes). At every gap of the series
        longer than ``gap_ns`` (``0``: none; see :attr:`gaps`) a NaN breaks the line.
        ``None`` means the span is fine enough to draw the rows themselves.
        """
        env = self.envelopes((column,), t0, t1, width, gap_ns=gap_ns, level=level)
        return None if env is None else (env[0], env[1][0])

    def envelopes(
        self,
        columns: Sequence[str],
        t0: int,
        t1: int,
        width: int,
        *,
        gap_ns: int = 0,
        level: int | None = None,
    ) -> tuple[I64, list[F64]] | None:
        """Return :meth:`envelope` of several columns at once: one x, a y per column."""
        k = self.level_for(t0, t1, width) if level is None else level
        if k is None or not self.levels:
            return None
        lv = self.levels[k]
        i0 = max(0, int(np.searchsorted(lv.t_last, t0, side="left")) - 1)
        i1 = min(lv.n, int(np.searchsorted(lv.t_first, t1, side="right")) + 1)
        x, ys = bin_many(
            lv.t_first[i0:i1],
            lv.t_last[i0:i1],
            [lv.lo[c][i0:i1] for c in columns],
            [lv.hi[c][i0:i1] for c in columns],
            t0,
            t1,
            width,
            0,
        )
        if gap_ns > 0 and self.gaps.shape[0] and x.shape[0]:
            g = self.gaps[(self.gaps[:, 1] - self.gaps[:, 0] > gap_ns)]
            g = g[(g[:, 1] >= x[0]) & (g[:, 0] <= x[-1])]
            if g.shape[0]:
                # A NaN point at the gap's start breaks the line there (inside a bucket that
                # spans the gap, its minimum is drawn before and its maximum after).
                at = np.searchsorted(x, g[:, 0], side="right")
                x = np.insert(x, at, g[:, 0])
                ys = [np.insert(y, at, np.nan) for y in ys]
        return x, ys

    def sum_in(self, column: str, i0: int, i1: int) -> tuple[float, int, int]:
        """Sum ``column`` over the whole level-0 buckets inside source rows ``[i0, i1)``.

        Return ``(sum, j0, j1)``: rows ``[j0, j1)`` are covered by the sum; the caller adds
        rows ``[i0, j0)`` and ``[j1, i1)`` from the data (see :func:`analyzer.stats`).
        """
        lv0 = self.levels[0]
        b0 = -(-i0 // lv0.rows)
        b1 = min(i1 // lv0.rows, lv0.n)
        if b1 <= b0:
            return 0.0, i0, i0
        return float(lv0.sums[column][b0:b1].sum()), b0 * lv0.rows, b1 * lv0.rows

    # ------------------------------------------------------------------ persistence
    def save(self, folder: str | Path, *, stamp: Mapping[str, int | str]) -> None:
        """Write the pyramid to ``folder`` (created) as ``.npy`` files plus ``meta.json``.

        ``stamp`` identifies the source (row count, last time, file size...): :meth:`load`
        refuses a pyramid whose stamp differs, so a changed day is summarized again.
        """
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        for k, lv in enumerate(self.levels):
            if k == 0:
                np.save(out / "gaps.npy", self.gaps)
            np.save(out / f"L{k}_t_first.npy", lv.t_first)
            np.save(out / f"L{k}_t_last.npy", lv.t_last)
            for c in self.columns:
                np.save(out / f"L{k}_lo_{c}.npy", lv.lo[c])
                np.save(out / f"L{k}_hi_{c}.npy", lv.hi[c])
            for c, s in lv.sums.items():
                np.save(out / f"L{k}_sum_{c}.npy", s)
        meta = {
            "format": FORMAT_VERSION,
            "n_rows": self.n_rows,
            "columns": list(self.columns),
            "sums": list(self.levels[0].sums) if self.levels else [],
            "rows": [lv.rows for lv in self.levels],
            "stamp": dict(stamp),
        }
        tmp = out / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, out / "meta.json")  # written last: a pyramid without it is absent

    @classmethod
    def load(cls, folder: str | Path, *, stamp: Mapping[str, int | str]) -> "Pyramid":
        """Load a pyramid written by :meth:`save`, memory-mapped (each array's ``base``).

        Raises
        ------
        PyramidFormatError
            No pyramid there, a damaged one, or one built from other data (``stamp``).
        """
        src = Path(folder)
        meta_path = src / "meta.json"
        try:
            meta = json.loads(meta_path.read_text())
        except FileNotFoundError:
            raise PyramidFormatError(f"{meta_path}: no pyramid saved here") from None
        except (OSError, ValueError) as e:
            raise PyramidFormatError(f"{meta_path}: unreadable ({e})") from e
        if meta.get("format") != FORMAT_VERSION:
            raise PyramidFormatError(
                f"{meta_path}: format {meta.get('format')!r}, this version reads {FORMAT_VERSION}"
            )
        if meta.get("stamp") != dict(stamp):
            raise PyramidFormatError(f"{meta_path}: built from other data ({meta.get('stamp')})")
        levels: list[Level] = []
        try:
            for k, rows in enumerate(meta["rows"]):

                def arr(name: str, k: int = k) -> npt.NDArray[np.generic]:
                    # A plain array over the mapping (its ``base``): a np.memmap costs a
                    # subclass object per slice, and a frame slices the levels ~150 times.
                    mapped = np.load(src / f"L{k}_{name}.npy", mmap_mode="r")
                    out: npt.NDArray[np.generic] = np.asarray(mapped)
                    return out

                levels.append(
                    Level(
                        rows=int(rows),
                        t_first=arr("t_first"),  # type: ignore[arg-type]
                        t_last=arr("t_last"),  # type: ignore[arg-type]
                        lo={c: arr(f"lo_{c}") for c in meta["columns"]},  # type: ignore[misc]
                        hi={c: arr(f"hi_{c}") for c in meta["columns"]},  # type: ignore[misc]
                        sums={c: arr(f"sum_{c}") for c in meta["sums"]},  # type: ignore[misc]
                    )
                )
            gaps = np.load(src / "gaps.npy")
        except (OSError, ValueError, KeyError) as e:
            raise PyramidFormatError(f"{src}: damaged pyramid ({e})") from e
        return cls(int(meta["n_rows"]), meta["columns"], levels, gaps)


class PyramidBuilder:
    """Build a :class:`Pyramid` from a series fed in consecutive chunks.

    Parameters
    ----------
    columns : Sequence[str]
        Value columns to summarize (min/max).
    sums : Sequence[str]
        Columns (among ``columns``) whose per-bucket sums are kept too.
    base, factor : int
        Rows per level-0 bucket; buckets per bucket of the level above.
    min_buckets : int
        Levels stop once a level has fewer buckets than this.
    gap_ns : int
        Pauses between consecutive rows longer than this are listed in
        :attr:`Pyramid.gaps` (``0``: none are).
    """

    def __init__(
        self,
        columns: Sequence[str],
        *,
        sums: Sequence[str] = (),
        base: int = BASE,
        factor: int = FACTOR,
        min_buckets: int = 256,
        gap_ns: int = 0,
    ) -> None:
        if base < 1 or factor < 2:
            raise ValueError(f"base must be >= 1 and factor >= 2, got {base} and {factor}")
        missing = [s for s in sums if s not in columns]
        if missing:
            raise ValueError(f"sums {missing} are not among the columns {list(columns)}")
        self.columns = tuple(columns)
        self.sums = tuple(sums)
        self.base = base
        self.factor = factor
        self.min_buckets = min_buckets
        self.n_rows = 0
        self._parts: list[Level] = []
        self._carry_ts: I64 = np.empty(0, dtype=np.int64)
        self._carry: dict[str, F64] = {c: np.empty(0, dtype=np.float64) for c in self.columns}
        self._last_ts = np.iinfo(np.int64).min
        self.gap_ns = gap_ns
        self._gaps: list[I64] = []

    def _check_and_note_gaps(self, ts: I64) -> None:
        if int(ts[0]) < self._last_ts:
            raise ValueError(
                f"rows out of time order: chunk starts at {int(ts[0])}, "
                f"the previous one ended at {self._last_ts}"
            )
        if self.gap_ns > 0:
            prev = ts[:1] if self.n_rows == 0 else np.array([self._last_ts], np.int64)
            edges = np.concatenate([prev, ts])
            at = np.flatnonzero(np.diff(edges) > self.gap_ns)
            if at.size:
                self._gaps.append(np.stack([edges[at], edges[at + 1]], axis=1))

    def feed(self, ts: I64, columns: Mapping[str, npt.ArrayLike]) -> None:
        """Add the next rows (``ts`` sorted and not before the previous chunk's)."""
        if ts.shape[0] == 0:
            return
        self._check_and_note_gaps(ts)
        self._last_ts = int(ts[-1])
        self.n_rows += int(ts.shape[0])
        cols = {c: np.asarray(columns[c], dtype=np.float64) for c in self.columns}
        if self._carry_ts.shape[0]:
            ts = np.concatenate([self._carry_ts, ts])
            cols = {c: np.concatenate([self._carry[c], cols[c]]) for c in self.columns}
        whole = (ts.shape[0] // self.base) * self.base
        if whole:
            self._parts.append(
                _level_from_rows(
                    ts[:whole], {c: v[:whole] for c, v in cols.items()}, self.sums, self.base
                )
            )
        self._carry_ts = np.array(ts[whole:], dtype=np.int64)
        self._carry = {c: np.array(v[whole:]) for c, v in cols.items()}

    def feed_buckets(
        self,
        ts: I64,
        t_first: I64,
        t_last: I64,
        lo: Mapping[str, F64],
        hi: Mapping[str, F64],
        sums: Mapping[str, F64],
    ) -> None:
        """Add the next rows already summarized in level-0 buckets (``analyzer._kernels``).

        ``ts`` are the rows' times (for the order check and the gaps); every bucket but the
        last of the whole series must hold exactly ``base`` rows, so a chunk that is not a
        multiple of ``base`` rows must be the last one.
        """
        if ts.shape[0] == 0:
            return
        if self._carry_ts.shape[0] or (self._parts and self.n_rows % self.base):
            raise ValueError("feed_buckets: a short bucket was fed before; it must be the last")
        self._check_and_note_gaps(ts)
        self._last_ts = int(ts[-1])
        self.n_rows += int(ts.shape[0])
        self._parts.append(
            Level(
                rows=self.base,
                t_first=t_first,
                t_last=t_last,
                lo={c: lo[c] for c in self.columns},
                hi={c: hi[c] for c in self.columns},
                sums={c: sums[c] for c in self.sums},
            )
        )

    def finish(self) -> Pyramid:
        """Return the pyramid of everything fed (call once: the builder hands its parts over)."""
        if self._carry_ts.shape[0]:
            self._parts.append(_level_from_rows(self._carry_ts, self._carry, self.sums, self.base))
        parts = self._parts
        if not parts:
            return Pyramid(0, self.columns, [])
        # One column at a time, each part's array dropped once copied: the peak is the parts
        # plus one column, not twice the level (a 100M-row day's level 0 is hundreds of MB).
        t_first = np.concatenate([p.t_first for p in parts])
        t_last = np.concatenate([p.t_last for p in parts])
        lo: dict[str, F64] = {}
        hi: dict[str, F64] = {}
        sums: dict[str, F64] = {}
        for out, name, keys in (
            (lo, "lo", self.columns),
            (hi, "hi", self.columns),
            (sums, "sums", self.sums),
        ):
            for c in keys:
                out[c] = np.concatenate([getattr(p, name)[c] for p in parts])
                for p in parts:
                    del getattr(p, name)[c]
        self._parts = []
        lv0 = Level(rows=self.base, t_first=t_first, t_last=t_last, lo=lo, hi=hi, sums=sums)
        levels = [lv0]
        while levels[-1].n >= self.min_buckets * self.factor:
            levels.append(_level_up(levels[-1], self.factor))
        gaps = np.concatenate(self._gaps) if self._gaps else None
        return Pyramid(self.n_rows, self.columns, levels, gaps)
