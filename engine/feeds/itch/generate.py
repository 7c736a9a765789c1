# SPDX-License-Identifier: MIT
"""A synthetic NASDAQ TotalView-ITCH 5.0 day, written as a raw length-prefixed ITCH file.

The day has ``n_stocks`` stocks (locates 1..n), each with a Stock Directory and a trading
action at the open, then NASDAQ-like order flow (adds, deletes, replaces, partial cancels,
executions, hidden trades; a few busy stocks and many quiet ones; at most 64 orders resting
per stock, mostly young orders cancelled; see :func:`engine.feeds.itch._kernels.gen_chunk`)
until the file reaches the requested size, then the close (a closing cross per stock and
the end-of-day System Events). The flow only ever deletes, cancels, executes or replaces
orders resting in that stock, never more shares than they hold, and no add crosses the
book, so a replay finds every ref and every book stays consistent. The same seed gives the
same bytes.

One kernel writes the day in chunks of ``chunk`` bytes (~140 MB/s of one core: a few GB in
under half a minute); Python only writes the chunks out.

    summary = generate_day("day.itch", parse_size("2GB"), n_stocks=8000, seed=7)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from engine.feeds.itch import _kernels as k

I64 = npt.NDArray[np.int64]

_UNITS = {
    "": 1,
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
}
_DAY_BODY_NS = 23_400_000_000_000  # 09:30 to 16:00
#: Bytes of the close: 'M', a 42-byte cross per stock, 'E' and 'C'.
_CLOSE_PER_STOCK = 42
_CLOSE_FIXED = 3 * 14
#: Mean bytes of a body message (length prefix included), to spread the timestamps.
_MEAN_MESSAGE = 30


def parse_size(text: str) -> int:
    """Return the bytes of a size such as ``10GB``, ``512MB``, ``3GiB`` or ``1000000``.

    Raises
    ------
    ValueError
        If the text is not a positive number with an optional unit (B, KB, MB, GB, TB, KiB,
        MiB, GiB).
    """
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in _UNITS or float(m.group(1)) <= 0:
        raise ValueError(f"size: {text!r} is not a size such as 10GB, 512MB or 1000000")
    return int(float(m.group(1)) * _UNITS[unit])


@dataclass(frozen=True, slots=True)
class DaySummary:
    """What :func:`generate_day` wrote."""

    bytes: int
    messages: int
    n_stocks: int
    seed: int
    orders_resting: int  # orders left in the books at the close


class _Day:
    """The generator's arrays for one day."""

    def __init__(self, size: int, n_stocks: int, seed: int) -> None:
        if not 1 <= n_stocks <= 65_535:
            raise ValueError(f"n_stocks: must be in [1, 65535], got {n_stocks}")
        floor = n_stocks * (39 + 2 + 25 + 2 + _CLOSE_PER_STOCK) + 6 * 14
        if size < floor:
            raise ValueError(
                f"size: {size} bytes cannot hold the open and close of {n_stocks} stocks "
                f"(at least {floor})"
            )
        rng = np.random.default_rng(seed)
        self.g = np.zeros(k.G_WIDTH, np.int64)
        self.g[k.G_RNG] = int(rng.integers(1, 1 << 62))
        self.g[k.G_NEXT_REF] = 1
        self.g[k.G_MATCH] = 1
        self.g[k.G_BODY_END] = size - n_stocks * _CLOSE_PER_STOCK - _CLOSE_FIXED
        self.g[k.G_TS_STEP] = max(1, _DAY_BODY_NS * _MEAN_MESSAGE // max(1, size))
        self.gs = np.zeros((n_stocks, k.GS_WIDTH), np.int64)
        penny = rng.random(n_stocks) < 0.05  # sub-dollar stocks quote in 0.0001
        tick = np.where(penny, 1, 100)
        mid_px = np.where(
            penny, rng.integers(1_000, 9_000, n_stocks), rng.integers(10, 500, n_stocks) * 10_000
        )
        self.gs[:, k.GS_TICK] = tick
        self.gs[:, k.GS_BASE] = mid_px - (k.GEN_WINDOW // 2) * tick
        self.gs[:, k.GS_MID] = k.GEN_WINDOW // 2
        self.gs[:, k.GS_BID] = -1
        self.gs[:, k.GS_ASK] = k.GEN_WINDOW
        self.pool = np.zeros((n_stocks, k.GEN_POOL, k.GP_WIDTH), np.int64)
        self.lvl = np.zeros((n_stocks, 2, k.GEN_WINDOW), np.int64)

    def chunk(self, out: npt.NDArray[np.uint8]) -> int:
        return int(k.gen_chunk(out, self.g, self.gs, self.pool, self.lvl))

    def summary(self, n_stocks: int, seed: int) -> DaySummary:
        return DaySummary(
            bytes=int(self.g[k.G_BYTES]),
            messages=int(self.g[k.G_MESSAGES]),
            n_stocks=n_stocks,
            seed=seed,
            orders_resting=int(self.gs[:, k.GS_N].sum()),
        )


def write_day(
    f: BinaryIO, size: int, *, n_stocks: int = 8_000, seed: int = 1, chunk: int = 1 << 24
) -> DaySummary:
    """Write a synthetic day of about ``size`` bytes to the binary file ``f``.

    The file ends within one message of ``size`` (the close is always written whole).

    Raises
    ------
    ValueError
        If ``size`` cannot hold the open and close of ``n_stocks`` stocks, or ``n_stocks``
        is not a possible locate count.
    """
    day = _Day(size, n_stocks, seed)
    out = np.zeros(max(chunk, 4096), np.uint8)
    while True:
        n = day.chunk(out)
        if n == 0:
            break
        f.write(out.data[:n])
    return day.summary(n_stocks, seed)


def generate_day(
    path: str | Path, size: int, *, n_stocks: int = 8_000, seed: int = 1
) -> DaySummary:
    """Write a synthetic day of about ``size`` bytes to ``path`` (see :func:`write_day`)."""
    with Path(path).open("wb") as f:
        return write_day(f, size, n_stocks=n_stocks, seed=seed)


def generate_bytes(size: int, *, n_stocks: int = 100, seed: int = 1) -> bytes:
    """Return a synthetic day of about ``size`` bytes in memory (for tests and benchmarks)."""
    day = _Day(size, n_stocks, seed)
    out = np.zeros(size + 4096, np.uint8)
    p = 0
    while True:
        n = day.chunk(out[p : p + max(4096, min(1 << 24, size + 4096 - p))])
        if n == 0:
            break
        p += n
    return out[:p].tobytes()


__all__ = ["DaySummary", "generate_bytes", "generate_day", "parse_size", "write_day"]
