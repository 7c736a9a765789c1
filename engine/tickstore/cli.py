# SPDX-License-Identifier: MIT
"""``qwconsole import``: bring vendor files into the tick store, with a progress bar.

Every import is all or nothing (``engine.tickstore.importing.Staging``): a bad row (unless
``--skip-bad-rows``), an error or Ctrl+C leaves the store as it was. Errors are one line on
stderr and exit status 2; Ctrl+C exits with 130.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from engine.cli_parser import OneLineErrorParser
from engine.tickstore.days import TickStoreError
from engine.tickstore.importing import ImportResult, ImportRowError, write_report
from engine.tickstore.store import TickStore

if TYPE_CHECKING:
    from engine.tickstore.fast_import import FastStats

PROG = "qwconsole import"


class ProgressBar:
    """A one-line progress bar on a terminal stream, redrawn at most every ``interval`` s."""

    def __init__(
        self, label: str, stream: TextIO | None = None, interval: float = 0.1, enabled: bool = True
    ) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interval = interval
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int, rows: int) -> None:
        """Redraw with ``done`` of ``total`` bytes and ``rows`` rows imported."""
        now = time.perf_counter()
        if not self.enabled or (now - self._last < self.interval and done < total):
            return
        self._last = now
        frac = 0.0 if total <= 0 else min(1.0, done / total)
        bar = "#" * int(frac * 30)
        mb = done / 1e6
        text = f"\r{self.label} {frac * 100:5.1f}% |{bar:<30}| {mb:8.1f} MB "
        text += f"{rows:>12,} rows {now - self.t0:6.1f} s"
        self.stream.write(text)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()


@contextlib.contextmanager
def notice_if_slow(
    text: str, after: float = 0.5, stream: TextIO | None = None, enabled: bool = True
) -> Iterator[None]:
    """Print ``text`` on ``stream`` if the block is still running after ``after`` seconds.

    For work that is usually instant and sometimes long (a first run's compilation), so
    that a long wait is explained and a short one says nothing. Ends the line with the time.
    """
    out = stream or sys.stderr
    t0 = time.perf_counter()
    shown = threading.Event()

    def show() -> None:
        out.write(f"{text}… ")
        out.flush()
        shown.set()

    timer = threading.Timer(after, show)
    if enabled:
        timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if shown.is_set():
            out.write(f"{time.perf_counter() - t0:.1f} s\n")
            out.flush()


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", type=Path, help="input files, in time order")
    p.add_argument("--store", required=True, type=Path, help="tick store (HDF5), created if new")
    p.add_argument("--replace", action="store_true", help="overwrite instrument-days stored")
    p.add_argument("--skip-bad-rows", action="store_true", help="skip bad rows, list them")
    p.add_argument("--report", type=Path, help="CSV file listing the skipped rows")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _steps(p: argparse.ArgumentParser, lot: str | None = None) -> None:
    p.add_argument("--tick-size", required=True, help="price step, decimal (e.g. 0.01)")
    if lot is None:
        p.add_argument("--lot-size", required=True, help="quantity step, decimal")
    else:
        p.add_argument("--lot-size", default=lot, help=f"quantity step, decimal ({lot})")
    p.add_argument("--venue", default="", help="venue attribute of the instrument-days")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``qwconsole import``."""
    parser = OneLineErrorParser(
        prog=PROG,
        description="Bring vendor files into the tick store: all or nothing, with a progress "
        "bar. See docs/tickstore.md.",
    )
    sub = parser.add_subparsers(dest="format", required=True, metavar="FORMAT")
    p = sub.add_parser("csv", help="any delimited text with a column mapping")
    _common(p)
    p.add_argument("--symbol", required=True)
    p.add_argument("--kind", required=True, choices=["trades", "bbo", "l2"])
    p.add_argument(
        "--mapping",
        required=True,
        help="field=column:conv,... (see docs/tickstore.md) or a JSON mapping file",
    )
    p.add_argument("--delimiter", default=",")
    p.add_argument(
        "--round-to-tick",
        action="store_true",
        help="round prices and sizes to the nearest tick/lot (float artifacts, 2e-06)",
    )
    p.add_argument("--no-header", action="store_true", help="first line is data (use #N)")
    _steps(p)
    p = sub.add_parser("parquet", help="Parquet files (pyarrow) with the CSV column mapping")
    _common(p)
    p.add_argument("--symbol", required=True)
    p.add_argument("--kind", required=True, choices=["trades", "bbo", "l2"])
    p.add_argument("--mapping", required=True, help="as for csv: field=column:conv,... or JSON")
    p.add_argument(
        "--round-to-tick",
        action="store_true",
        help="round prices and sizes to the nearest tick/lot (float columns)",
    )
    _steps(p)
    p = sub.add_parser("binance", help="Binance recordings: depth snapshot+diffs, bookTicker")
    _common(p)
    p.add_argument("--symbol", required=True)
    p.add_argument("--futures", action="store_true", help="USD-M futures sequencing (pu)")
    p.add_argument(
        "--allow-gaps",
        action="store_true",
        help="import a depth stream with gaps (listed, and kept in the day's l2_gaps attribute)",
    )
    _steps(p)
    p = sub.add_parser("dbn", help="Databento DBN (.dbn or .dbn.zst): mbo, mbp-1, trades")
    _common(p)
    p.add_argument("--symbol", help="store under this name (default: the file's symbol)")
    _steps(p, lot="1")
    p = sub.add_parser("lobster", help="LOBSTER message + orderbook file pairs")
    _common(p)
    p.add_argument("--symbol", required=True)
    p.add_argument("--day", help="trading day YYYYMMDD (default: from the file name)")
    p.add_argument("--price-scale", default="10000", help="LOBSTER price units per 1 (10000)")
    p.add_argument(
        "--tz",
        default="America/New_York",
        help="time zone of the files' times (America/New_York; stored as UTC)",
    )
    _steps(p, lot="1")
    p = sub.add_parser("pcap", help="exchange feed captures (pcap/pcapng): itch, mdp3, fast")
    _common(p)
    p.add_argument(
        "--protocol",
        required=True,
        choices=("itch", "mdp3", "fast"),
        help="the feed in the capture's UDP payloads (itch: Nasdaq ITCH 5.0 over MoldUDP64; "
        "mdp3: CME MDP 3.0, SBE; fast: FIX market data in FAST 1.1, e.g. CME's legacy feed)",
    )
    p.add_argument("--schema", type=Path, help="mdp3: the SBE schema (templates_FixBinary.xml)")
    p.add_argument("--templates", type=Path, help="fast: the FAST 1.1 template XML")
    p.add_argument(
        "--framing",
        default="none",
        choices=("none", "cme"),
        help="fast: none (datagrams are FAST messages) or cme (a 5-byte preamble: packet "
        "sequence number, u32 big-endian, and a sub-channel byte)",
    )
    p.add_argument(
        "--reset",
        default="none",
        choices=("none", "packet", "message"),
        help="fast: also clear the FAST dictionaries before every packet or message (none: "
        "only where a template or the Reset message says)",
    )
    p.add_argument(
        "--depth", type=int, default=10, help="fast: book levels a side, for MDPriceLevel (10)"
    )
    p.add_argument(
        "--channel",
        action="append",
        default=[],
        metavar="ADDR:PORT",
        help="fast: read only datagrams to this destination (repeatable: its A and B feeds)",
    )
    p.add_argument(
        "--symbol",
        action="append",
        default=[],
        metavar="ID=NAME",
        help="mdp3, fast: store SecurityID ID as NAME (repeatable; default SECID<id>)",
    )
    p.add_argument("--day", help="itch: trading day YYYYMMDD (default: the capture's, New York)")
    p.add_argument(
        "--allow-gaps",
        action="store_true",
        help="import a capture that misses messages (gaps kept in each day's l2_gaps)",
    )
    p.add_argument(
        "--tick-size", help="price step, decimal (itch: 0.0001; mdp3 and fast: required)"
    )
    p.add_argument("--lot-size", default="1", help="quantity step (1)")
    p.add_argument("--venue", default="", help="venue attribute (XNAS for itch, XCME for mdp3)")
    p = sub.add_parser("recover", help="make a store left by a killed writer writable again")
    p.add_argument("store", type=Path)
    p = sub.add_parser("ls", help="list what a store holds")
    p.add_argument("store", type=Path)
    return parser


def _run_csv(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.csv_import import CsvMapping, import_csv

    mapping_path = Path(a.mapping)
    if a.mapping.endswith(".json") or mapping_path.is_file():
        mapping = CsvMapping.load(mapping_path)
    else:
        mapping = CsvMapping.parse(a.kind, a.mapping, delimiter=a.delimiter, header=not a.no_header)
    return import_csv(
        a.files,
        a.store,
        a.symbol,
        mapping,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        venue=a.venue,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
        round_to_tick=a.round_to_tick,
    )


def _run_parquet(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.csv_import import CsvMapping
    from engine.tickstore.parquet import import_parquet

    mapping_path = Path(a.mapping)
    if a.mapping.endswith(".json") or mapping_path.is_file():
        mapping = CsvMapping.load(mapping_path)
    else:
        mapping = CsvMapping.parse(a.kind, a.mapping)
    return import_parquet(
        a.files,
        a.store,
        a.symbol,
        mapping,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        venue=a.venue,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
        round_to_tick=a.round_to_tick,
    )


def _run_binance(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.binance import import_binance

    result, stats = import_binance(
        a.files,
        a.store,
        a.symbol,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        futures=a.futures,
        venue=a.venue or "BINANCE",
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        allow_gaps=a.allow_gaps,
        progress=progress,
    )
    progress.close()
    print(
        f"book sequencing: {stats.snapshots} snapshots, {stats.diffs_applied} diffs applied, "
        f"{stats.diffs_covered} covered by a snapshot, {stats.duplicates} repeated, "
        f"{stats.diffs_dropped} dropped, {stats.gaps} gaps, {stats.times_raised} times raised",
        file=sys.stderr,
    )
    for gap in stats.gap_list:
        print(f"  gap: {gap}", file=sys.stderr)
    return result


def _run_dbn(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.dbn import import_dbn

    return import_dbn(
        a.files,
        a.store,
        symbol=a.symbol,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        venue=a.venue,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
    )


def _run_lobster(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.lobster import import_lobster

    if len(a.files) % 2:
        raise ValueError("lobster: give message and orderbook files in pairs")
    pairs = [(a.files[i], a.files[i + 1]) for i in range(0, len(a.files), 2)]
    return import_lobster(
        pairs,
        a.store,
        a.symbol,
        day=a.day,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        price_scale=a.price_scale,
        venue=a.venue,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
        tz=a.tz,
    )


def _run_pcap(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    if a.protocol == "mdp3":
        return _run_mdp3(a, progress)
    if a.protocol == "fast":
        return _run_fast(a, progress)
    if a.templates is not None:
        raise ValueError("--templates is for --protocol fast")
    if a.schema is not None or a.symbol:
        raise ValueError("--schema and --symbol are for --protocol mdp3")
    from engine.tickstore.itch_import import import_itch, parse_day

    result, stats = import_itch(
        a.files,
        a.store,
        tick_size=a.tick_size or "0.0001",
        lot_size=a.lot_size,
        venue=a.venue or "XNAS",
        day=parse_day(a.day) if a.day else None,
        allow_gaps=a.allow_gaps,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
    )
    msgs = ", ".join(f"{t} {n:,}" for t, n in sorted(stats.messages.items()))
    print(
        f"{stats.packets:,} packets, messages by type: {msgs or 'none'}; trading day "
        f"{stats.day} (New York)",
        file=sys.stderr,
    )
    rep = stats.report
    if rep is None:
        print(
            "the capture's sequence numbers are all 0: decoded as is, no gap check", file=sys.stderr
        )
    else:
        print(
            f"sequence: {rep.gap_packets} gaps ({rep.missing:,} messages missing), "
            f"{rep.duplicate_packets} duplicate and {rep.late_packets} late packets",
            file=sys.stderr,
        )
        for first, last in rep.gaps[:20]:
            print(f"  gap: messages {first} to {last}", file=sys.stderr)
    if stats.unknown_orders:
        print(
            f"{stats.unknown_orders:,} order events name orders the capture never added "
            "(it starts inside the session): not stored",
            file=sys.stderr,
        )
    return result


def _run_mdp3(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.mdp3_import import import_mdp3, parse_symbols

    if a.schema is None:
        raise ValueError("--protocol mdp3 needs --schema (CME's templates_FixBinary.xml)")
    if a.templates is not None:
        raise ValueError("--templates is for --protocol fast (mdp3 takes --schema)")
    if a.tick_size is None:
        raise ValueError("--protocol mdp3 needs --tick-size (e.g. 0.25 for ES)")
    if a.day is not None:
        raise ValueError("--day is for --protocol itch (MDP 3.0 times are UTC already)")
    result, stats = import_mdp3(
        a.files,
        a.store,
        schema=a.schema,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        venue=a.venue or "XCME",
        symbols=parse_symbols(a.symbol),
        allow_gaps=a.allow_gaps,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
    )
    msgs = ", ".join(f"{t} {n:,}" for t, n in sorted(stats.messages.items()))
    print(f"{stats.packets:,} packets; messages: {msgs or 'none'}", file=sys.stderr)
    missing = sum(b - x + 1 for x, b in stats.gaps)
    print(
        f"sequence: {len(stats.gaps)} gaps ({missing:,} packets missing from every channel)",
        file=sys.stderr,
    )
    for first, last in stats.gaps[:20]:
        print(f"  gap: packets {first} to {last}", file=sys.stderr)
    if stats.implied_entries:
        print(f"{stats.implied_entries:,} implied book entries left out", file=sys.stderr)
    for issue in stats.issues[:5]:
        print(f"  skipped: {issue}", file=sys.stderr)
    return result


def _run_fast(a: argparse.Namespace, progress: ProgressBar) -> ImportResult:
    from engine.tickstore.fast_import import import_fast
    from engine.tickstore.mdp3_import import parse_symbols

    if a.templates is None:
        raise ValueError("--protocol fast needs --templates (the feed's FAST template XML)")
    if a.schema is not None:
        raise ValueError("--schema is for --protocol mdp3 (fast takes --templates)")
    if a.tick_size is None:
        raise ValueError("--protocol fast needs --tick-size (e.g. 0.25 for ES)")
    if a.day is not None:
        raise ValueError("--day is for --protocol itch (FAST times are UTC already)")
    result, stats = import_fast(
        a.files,
        a.store,
        templates=a.templates,
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        venue=a.venue,
        symbols=parse_symbols(a.symbol),
        framing=a.framing,
        reset=a.reset,
        depth=a.depth,
        channels=_channels(a.channel),
        allow_gaps=a.allow_gaps,
        replace=a.replace,
        skip_bad_rows=a.skip_bad_rows,
        progress=progress,
    )
    progress.close()
    _fast_summary(stats, a.depth)
    return result


def _channels(given: list[str]) -> frozenset[str] | None:
    """Return ``--channel`` destinations as ``ADDR:PORT`` texts (None: every destination)."""
    if not given:
        return None
    for c in given:
        addr, sep, port = c.rpartition(":")
        if not sep or not addr or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"--channel {c!r}: give ADDR:PORT (e.g. 224.0.31.1:14310)")
    return frozenset(given)


def _fast_summary(stats: FastStats, depth: int) -> None:
    """Print what a FAST import read besides its rows: messages, sequences, what it left out."""
    msgs = ", ".join(f"{t} {n:,}" for t, n in sorted(stats.messages.items()))
    print(f"{stats.datagrams:,} datagrams; messages: {msgs or 'none'}", file=sys.stderr)
    for name, reports in (("message", stats.message_seq), ("packet", stats.packet_seq)):
        for r in reports:
            print(
                f"{name} sequence {r.first} to {r.last}: {len(r.gaps)} gaps ({r.missing:,} "
                f"{name}s missing), {r.copies:,} copies skipped, {r.late:,} late",
                file=sys.stderr,
            )
    for what, first, last in stats.gaps[:20]:
        print(f"  gap: {what}s {first} to {last}", file=sys.stderr)
    if stats.skipped_types:
        left = ", ".join(f"{t} {n:,}" for t, n in sorted(stats.skipped_types.items()))
        print(f"entries left out by MDEntryType: {left}", file=sys.stderr)
    if stats.no_security:
        print(f"{stats.no_security:,} entries name no instrument: left out", file=sys.stderr)
    if stats.undecodable:
        print(
            f"{stats.undecodable:,} messages of a stream that had lost one since its last "
            "reset (their FAST dictionaries unknown): left out (copies used where there are)",
            file=sys.stderr,
        )
    if stats.stale_snapshots:
        print(
            f"{stats.stale_snapshots:,} snapshots the books were already at or past: left out",
            file=sys.stderr,
        )
    if stats.bad_levels:
        print(f"{stats.bad_levels:,} entries outside --depth {depth}: left out", file=sys.stderr)
    if stats.other_destinations:
        n = sum(stats.other_destinations.values())
        dests = ", ".join(sorted(stats.other_destinations))
        print(f"{n:,} datagrams to other destinations left out ({dests})", file=sys.stderr)


_RUNNERS: dict[str, Callable[[argparse.Namespace, ProgressBar], ImportResult]] = {
    "pcap": _run_pcap,
    "csv": _run_csv,
    "parquet": _run_parquet,
    "binance": _run_binance,
    "dbn": _run_dbn,
    "lobster": _run_lobster,
}


def _ls(path: Path) -> int:
    with TickStore(path) as s:
        for sym in s.instruments():
            for day in s.days(sym):
                info = s.info(sym, day)
                rows = " ".join(f"{k}={n:,}" for k, n in info.rows.items())
                print(f"{sym} {day} tick={info.tick_size} lot={info.lot_size} {rows}")
    return 0


def _summary(a: argparse.Namespace, result: ImportResult, seconds: float) -> None:
    n = result.total_rows
    rate = n / seconds if seconds > 0 else 0.0
    days = ", ".join(f"{s}/{d}" for s, d in result.days) or "nothing"
    print(f"imported {n:,} rows into {a.store} ({days}) in {seconds:.1f} s, {rate:,.0f} rows/s")
    if result.skipped:
        print(f"skipped {len(result.skipped)} bad rows", file=sys.stderr)
        if a.report is not None:
            write_report(a.report, result.skipped)
            print(f"listed in {a.report}", file=sys.stderr)
        else:
            for b in result.skipped[:5]:
                print(f"  {b}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run ``qwconsole import``; return the exit status."""
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        if a.format == "recover":
            n = TickStore.recover(a.store)
            print(f"{a.store}: recovered ({n} instrument-days)")
            return 0
        if a.format == "ls":
            return _ls(a.store)
        if a.report is not None and not a.skip_bad_rows:
            parser.error("--report only makes sense with --skip-bad-rows")
        for f in a.files:
            if not f.is_file():
                raise ValueError(f"{f}: no such file")
        if a.format in ("csv", "lobster", "parquet"):
            from engine.tickstore.csv_import import warm_parser

            with notice_if_slow(
                f"{PROG} {a.format}: compiling the parser (first run only)", enabled=not a.quiet
            ):
                warm_parser()
        progress = ProgressBar(f"import {a.format}", enabled=not a.quiet)
        t0 = time.perf_counter()
        try:
            result = _RUNNERS[a.format](a, progress)
        finally:
            progress.close()
        _summary(a, result, time.perf_counter() - t0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the store is unchanged", file=sys.stderr)
        return 130
    except ImportRowError as e:
        print(f"{PROG}: error: {e}; nothing imported", file=sys.stderr)
        return 2
    except (TickStoreError, ValueError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        tail = "" if a.format in ("ls", "recover") else "; nothing imported"
        print(f"{PROG}: error: {msg}{tail}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
