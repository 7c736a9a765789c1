# SPDX-License-Identifier: MIT
"""Summaries kept up to date while a day is written to the tick store (a hook, no h5py here).

A day writer (``engine.tickstore.writer.DayWriter``) feeds every summary the factories
registered here give it: the console's entry point registers the Analyzer's pyramids
(``analyzer.summary``), so that an import or a recording leaves them beside the store. This
module is light on purpose: registering costs no import of the store or of HDF5.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.void]


class DaySummary(Protocol):
    """Something kept up to date with the rows written to one instrument-day.

    :meth:`append` gets every batch as it reaches the file (sorted, checked); :meth:`close`
    is called once when the writer closes. A summary is a cache (the Analyzer's pyramids, see
    :func:`add_day_summary`): when it fails it is dropped with a warning, the rows are written
    all the same.
    """

    def append(self, kind: str, rows: Rows) -> None:
        """Take the next rows of ``kind``."""
        ...

    def close(self) -> None:
        """Finish (the writer closed: nothing more comes)."""
        ...


#: ``factory(store_path, symbol, day, tick_size, lot_size, stored_rows)``: a summary for a
#: day writer (``stored_rows``: the rows of each kind already in the day), or ``None``.
DaySummaryFactory = Callable[[Path, str, str, str, str, dict[str, int]], DaySummary | None]
_SUMMARIES: list[DaySummaryFactory] = []


def day_summaries() -> tuple[DaySummaryFactory, ...]:
    """Return the factories every day writer asks for a summary."""
    return tuple(_SUMMARIES)


def add_day_summary(factory: DaySummaryFactory) -> None:
    """Have every day writer of this process feed a summary from ``factory`` (once each).

    The tick store knows nothing of what a summary is for; the console's entry point installs
    the Analyzer's pyramids here (``analyzer.summary.install``), so that an import or a
    recording leaves them beside the store and the day's first chart opens from them.
    """
    if factory not in _SUMMARIES:
        _SUMMARIES.append(factory)


def summaries_root(store: str | Path) -> Path:
    """Return the folder a store's summaries live in: ``<store>.lod`` beside the file."""
    path = Path(store)
    return path.with_name(path.name + ".lod")


def summary_dir(store: str | Path, symbol: str, day: str) -> Path:
    """Return the folder of one instrument-day's summaries: ``<store>.lod/<symbol>/<day>``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in symbol)
    return summaries_root(store) / safe / day


def move_summaries(src: Path, dst: Path, days: Iterable[tuple[str, str]]) -> None:
    """Move the summaries of ``days`` written beside store ``src`` to store ``dst``'s.

    For an import that wrote a staging store and moved its days into the target: each kind's
    folder replaces the target's (a summary whose rows differ from the day's is refused by
    its reader's stamp anyway). The staging store's summaries folder is removed.
    """
    for symbol, day in days:
        there = summary_dir(src, symbol, day)
        if not there.is_dir():
            continue
        here = summary_dir(dst, symbol, day)
        here.mkdir(parents=True, exist_ok=True)
        for kind in there.iterdir():
            target = here / kind.name
            if target.exists():
                shutil.rmtree(target)
            os.replace(kind, target)
    shutil.rmtree(summaries_root(src), ignore_errors=True)


__all__ = [
    "DaySummary",
    "DaySummaryFactory",
    "add_day_summary",
    "day_summaries",
    "move_summaries",
    "summaries_root",
    "summary_dir",
]
