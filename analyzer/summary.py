# SPDX-License-Identifier: MIT
"""A day's pyramids built while it is written, so that its first chart opens at once.

Opening a day the Analyzer has never seen reads every row to build the min/max pyramids of
its quotes and trades (``analyzer.dataset.open_day``): tens of seconds for a 100M-tick day.
The rows pass through the tick store's writer once anyway, when the day is imported or
recorded: :func:`install` has every day writer of the process (``engine.tickstore.store
.add_day_summary``) feed a :class:`PyramidSummary`, which builds the same pyramids from the
batches as they are written and saves them beside the store when the writer closes, stamped
like ``analyzer.source.StoreDay.stamp``. The day's first open then loads them.

A kind that already had rows when the writer opened (a recording resumed, an import appended
to a day) is left to the first open, which builds its pyramid from all of its rows; so is
a day whose writer never closed (a killed process): nothing stale is ever kept.
"""

from pathlib import Path

from analyzer.dataset import BucketCutter, feed_rows, new_builder
from analyzer.pyramid import PyramidBuilder
from analyzer.source import Rows, day_stamp, lod_dir
from engine.fastlog import get_log
from engine.tickstore.summaries import DaySummary, add_day_summary

log = get_log(__name__)

#: The kinds the Analyzer charts from pyramids.
KINDS = ("bbo", "trades")


class PyramidSummary:
    """The pyramids of one instrument-day's ``kinds``, fed by its writer (see module doc)."""

    def __init__(self, folder: Path, tick: float, lot: float, kinds: tuple[str, ...]) -> None:
        self.folder = folder
        self._tick, self._lot = tick, lot
        self._builders: dict[str, PyramidBuilder] = {k: new_builder(k) for k in kinds}
        self._cutters = {k: BucketCutter(b.base) for k, b in self._builders.items()}
        self._first: dict[str, int] = {}
        self._last: dict[str, int] = {}

    def append(self, kind: str, rows: Rows) -> None:
        """Summarize the next rows of ``kind`` (whole buckets now, the rest with the next)."""
        builder = self._builders.get(kind)
        if builder is None or rows.shape[0] == 0:
            return
        self._first.setdefault(kind, int(rows["ts"][0]))
        self._last[kind] = int(rows["ts"][-1])
        whole = self._cutters[kind].push(rows)
        if whole is not None:
            feed_rows(builder, kind, whole, self._tick, self._lot)

    def close(self) -> None:
        """Finish every kind that got rows and save its pyramid beside the store."""
        for kind, builder in self._builders.items():
            rest = self._cutters[kind].rest()
            if rest is not None:
                feed_rows(builder, kind, rest, self._tick, self._lot)
            if builder.n_rows == 0:
                continue
            stamp = day_stamp(builder.n_rows, self._first[kind], self._last[kind])
            builder.finish().save(self.folder / kind, stamp=stamp)
        self._builders.clear()


def summary_for(
    store: Path, symbol: str, day: str, tick_size: str, lot_size: str, stored: dict[str, int]
) -> DaySummary | None:
    """Return the summary of a day writer (a ``DaySummaryFactory``).

    It builds the kinds the Analyzer charts that the day held no rows of when the writer opened.
    """
    kinds = tuple(k for k in KINDS if stored.get(k, 0) == 0)
    if not kinds:
        return None
    return PyramidSummary(lod_dir(store, symbol, day), float(tick_size), float(lot_size), kinds)


def install() -> None:
    """Build the Analyzer's pyramids whenever this process writes a day to a tick store."""
    add_day_summary(summary_for)
