# SPDX-License-Identifier: MIT
"""What a tick-store file is made of: its names, days and constants (``docs/tickstore.md``).

The layout's constants, the instrument-day description :class:`DayInfo`, the error every store
operation raises, and the conversions between instruments, days and times that the store, its
writer and the importers share.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Final

import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log
from engine.tickstore.schema import KINDS, L2_SNAPSHOT_KIND, l2_snapshot_dtype

#: Value of the root attribute ``format``.
FORMAT_NAME: Final[str] = "qwconsole-tickstore"
#: Rows per HDF5 chunk (about 1.5 MiB of 48-byte rows): the unit of compression and I/O.
CHUNK_ROWS: Final[int] = 32768
#: Chunk cache of an open file, bytes (holds the chunks a bisection probes twice).
CHUNK_CACHE_BYTES: Final[int] = 64 << 20
#: Every kind a day group may hold.
ALL_KINDS: Final[tuple[str, ...]] = (*KINDS, L2_SNAPSHOT_KIND)
#: Nanoseconds per day.
DAY_NS: Final[int] = 86_400_000_000_000
#: Name suffix of the chunk index next to each dataset (``bbo`` -> ``bbo.chunk_ts``).
INDEX_SUFFIX: Final[str] = ".chunk_ts"

log = get_log(__name__)
Rows = npt.NDArray[np.void]


class TickStoreError(OSError):
    """A tick store cannot be opened, read or written as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class DayInfo:
    """What one instrument-day group holds.

    ``rows`` maps each stored kind to its row count; ``first_ts``/``last_ts`` span every kind
    (0 when the day is empty); ``n_levels`` is the depth of ``l2_snap`` (0 when absent).
    """

    symbol: str
    day: str
    tick_size: str
    lot_size: str
    venue: str
    rows: dict[str, int]
    first_ts: int
    last_ts: int
    n_levels: int


def symbol_key(symbol: str) -> str:
    """Return the HDF5 group name of ``symbol`` ("/" and "%" %-escaped, "." alone refused)."""
    if not symbol or symbol in {".", ".."} or not symbol.isprintable():
        raise ValueError(f"symbol: {symbol!r} is not a usable instrument name")
    return symbol.replace("%", "%25").replace("/", "%2F")


def day_of(ts_ns: int) -> str:
    """Return the UTC day ``YYYYMMDD`` of a time in ns since the epoch."""
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ts_ns // 1000)).strftime(
        "%Y%m%d"
    )


def day_start_ns(day: str) -> int:
    """Return the first ns of UTC day ``YYYYMMDD``; ``ValueError`` for anything else."""
    try:
        if len(day) != 8 or not day.isdigit():
            raise ValueError
        d = datetime.strptime(day, "%Y%m%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"day: {day!r} is not a date YYYYMMDD") from None
    return int(d.timestamp()) * 1_000_000_000


def check_decimal(name: str, text: str) -> str:
    """Return ``text`` if it is a positive decimal number; ``ValueError`` naming ``name``."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{name}: {text!r} is not a decimal number") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"{name}: {text!r} must be a positive number")
    return text


def kind_dtype(kind: str, n_levels: int) -> np.dtype[np.void]:
    """Return the row type of ``kind`` (``l2_snap`` with ``n_levels`` levels)."""
    if kind in KINDS:
        return KINDS[kind]
    if kind == L2_SNAPSHOT_KIND:
        if n_levels < 1:
            raise ValueError("l2_snap: give the writer n_levels (depth of the snapshots)")
        return l2_snapshot_dtype(n_levels)
    raise ValueError(f"kind: {kind!r} is not one of {', '.join(ALL_KINDS)}")
