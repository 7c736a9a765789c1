# SPDX-License-Identifier: MIT
"""``qwconsole gen itch`` and ``qwconsole replay``: a synthetic ITCH day, and every book of one.

    qwconsole gen itch --size 10GB --stocks 8000 [--seed 1] --out day.itch
    qwconsole replay day.itch --protocol itch [--check]

``gen itch`` writes a raw length-prefixed ITCH 5.0 file (NASDAQ's own day-file format) of about
``--size`` bytes (:mod:`engine.feeds.itch.generate`). ``replay`` decodes a day file and maintains
every stock's order book (:class:`engine.feeds.itch.book.ItchBooks`), in pieces of
``--chunk`` bytes with a progress line, and prints the rate and what the day held; ``--check``
then verifies that no book is crossed and every level adds up. Ctrl+C stops either cleanly.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.cli_parser import OneLineErrorParser
from engine.feeds._kernels import whole_messages_end
from engine.feeds.itch.book import ItchBooks
from engine.feeds.itch.decode import ItchDecodeError
from engine.feeds.itch.generate import parse_size, write_day

PROG = "qwconsole"


def _progress(label: str, done: int, total: int, t0: float, enabled: bool) -> None:
    if not enabled:
        return
    dt = max(time.perf_counter() - t0, 1e-9)
    pct = 100.0 * done / total if total else 100.0
    print(
        f"\r{label} {pct:5.1f}%  {done / 1e9:7.2f} GB  {done / dt / 1e6:8.1f} MB/s  {dt:6.1f} s",
        end="",
        file=sys.stderr,
        flush=True,
    )


def gen_main(argv: list[str] | None = None) -> int:
    """Run ``qwconsole gen``; return the exit status."""
    parser = OneLineErrorParser(prog=f"{PROG} gen", description="Generate synthetic feed days.")
    sub = parser.add_subparsers(dest="protocol", required=True, metavar="PROTOCOL")
    p = sub.add_parser("itch", help="a synthetic Nasdaq TotalView-ITCH 5.0 day file")
    p.add_argument("--size", required=True, help="about this many bytes: 10GB, 512MB, ...")
    p.add_argument("--stocks", type=int, default=8_000, help="stocks in the day (8000)")
    p.add_argument("--seed", type=int, default=1, help="the same seed gives the same bytes")
    p.add_argument("--out", type=Path, required=True, help="the day file to write")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    a = parser.parse_args(argv)
    try:
        size = parse_size(a.size)
        t0 = time.perf_counter()
        with a.out.open("wb") as f:

            class _Counting:
                written = 0

                def write(self, data: memoryview) -> int:
                    n: int = f.write(data)
                    _Counting.written += n
                    _progress("gen itch", _Counting.written, size, t0, not a.quiet)
                    return n

            summary = write_day(_Counting(), size, n_stocks=a.stocks, seed=a.seed)  # type: ignore[arg-type]
        dt = time.perf_counter() - t0
        if not a.quiet:
            print(file=sys.stderr)
        print(
            f"wrote {a.out}: {summary.bytes:,} bytes, {summary.messages:,} messages, "
            f"{summary.n_stocks:,} stocks (seed {summary.seed}), {summary.orders_resting:,} "
            f"orders resting at the close, in {dt:.1f} s ({summary.bytes / dt / 1e6:,.0f} MB/s)"
        )
    except KeyboardInterrupt:
        print(f"\n{PROG} gen: interrupted; {a.out} is incomplete", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:
        print(f"{PROG} gen: error: {e}", file=sys.stderr)
        return 2
    return 0


def replay_main(argv: list[str] | None = None) -> int:
    """Run ``qwconsole replay``; return the exit status."""
    parser = OneLineErrorParser(
        prog=f"{PROG} replay", description="Decode a feed day and maintain every book."
    )
    parser.add_argument("file", type=Path, help="a raw ITCH 5.0 day file (u16 length + message)")
    parser.add_argument("--protocol", required=True, choices=("itch",))
    parser.add_argument("--chunk", default="256MB", help="bytes per piece (256MB)")
    parser.add_argument("--check", action="store_true", help="verify every book at the end")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    a = parser.parse_args(argv)
    try:
        if not a.file.is_file():
            raise ValueError(f"{a.file}: no such file")
        chunk = parse_size(a.chunk)
        total = a.file.stat().st_size
        data = np.memmap(a.file, np.uint8, mode="r") if total else np.zeros(0, np.uint8)
        books = ItchBooks()
        t0 = time.perf_counter()
        pos = messages = 0
        while pos < total:
            end = _cut(data, pos, min(total, pos + chunk))
            messages += books.apply_raw(data[pos:end], source=str(a.file))
            pos = end
            _progress("replay itch", pos, total, t0, not a.quiet)
        dt = time.perf_counter() - t0
        if not a.quiet:
            print(file=sys.stderr)
        c = books.counters()
        print(
            f"replayed {a.file}: {total:,} bytes, {messages:,} messages in {dt:.1f} s "
            f"({total / max(dt, 1e-9) / 1e6:,.0f} MB/s, {messages / max(dt, 1e-9) / 1e6:.1f}M "
            f"msg/s); {books.n_orders:,} orders resting on {books.n_levels:,} levels; "
            f"{books.trades.shape[0]:,} trades; counters: {c}"
        )
        if a.check:
            problems = books.check()
            if problems:
                for p in problems[:20]:
                    print(f"  book problem: {p}", file=sys.stderr)
                print(f"{PROG} replay: {len(problems)} book problems", file=sys.stderr)
                return 1
            print("every book checked: none crossed, every level adds up")
    except KeyboardInterrupt:
        print(f"\n{PROG} replay: interrupted", file=sys.stderr)
        return 130
    except ItchDecodeError as e:
        print(f"{PROG} replay: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:
        print(f"{PROG} replay: error: {e}", file=sys.stderr)
        return 2
    return 0


def _cut(data: npt.NDArray[np.uint8], start: int, end: int) -> int:
    """Return where the pieces split: after the last whole message before ``end``."""
    if end >= data.shape[0]:
        return int(data.shape[0])
    p = int(whole_messages_end(data, start, end))
    if p == start:  # one message longer than the piece: take it whole
        n = (int(data[start]) << 8) | int(data[start + 1])
        p = min(int(data.shape[0]), start + 2 + n)
    return p
