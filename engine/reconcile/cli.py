# SPDX-License-Identifier: MIT
"""``qwconsole reconcile STATE_DIR``: check that the journal, the recovery and the venue agree.

Prints a table per (session, instrument, strategy), the fills that differ and a one-line
verdict. Exit status 0 when every source agrees, 1 on any difference, 2 on bad input (a missing
directory, no journal, a damaged journal: one line naming the file and why).
"""

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.cli_parser import OneLineErrorParser
from engine.reconcile.report import (
    SOURCES,
    ReconcileError,
    ReconcileReport,
    SourceCount,
    reconcile,
    report_dict,
)

PROG = "qwconsole reconcile"


def _day(text: str) -> str:
    if not re.fullmatch(r"\d{8}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a day as YYYYMMDD")
    return text


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``qwconsole reconcile``."""
    parser = OneLineErrorParser(
        prog=PROG,
        description="Compare, per FIX session (or OUCH account), instrument and strategy, the "
        "fills and positions "
        "of the journal, of the engine's recovery (what a restarted engine rebuilds) and of the "
        "execution reports the venue sent (journaled inbound FIX, FIX stores and logs). Exit "
        "status 0 when all agree, 1 on any difference, 2 on bad input.",
    )
    parser.add_argument(
        "state_dir",
        type=Path,
        metavar="STATE_DIR",
        help="the engine's state directory (journal/ and FIX stores below it)",
    )
    parser.add_argument(
        "--day",
        type=_day,
        metavar="YYYYMMDD",
        help="the trading day (UTC); the newest journaled day by default",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _cell(count: SourceCount | None) -> str:
    return "-" if count is None else f"{count.fills} / {count.position_lots:+d}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in (headers, *rows)
    ]


def format_report(report: ReconcileReport) -> str:
    """Return the report as the aligned text the command prints."""
    lines = [f"state {report.state_dir}, day {report.day}"]
    lines += [f"  journal  {p}" for p in report.journals]
    lines += [f"  {'OUCH' if p.endswith('.soupseq') else 'FIX':<8} {p}" for p in report.fix_files]
    lines.append("")
    headers = [
        "SESSION",
        "SYMBOL",
        "STRATEGY",
        *(f"{s.upper()} fills/pos" for s in SOURCES),
        "DIFFERENCE",
    ]
    rows = [
        [
            r.session,
            r.symbol,
            "?" if r.strategy_id is None else str(r.strategy_id),
            _cell(r.journal),
            _cell(r.recovery),
            _cell(r.venue),
            r.difference or (f"{r.differences} fills differ" if r.differences else "ok"),
        ]
        for r in report.rows
    ]
    lines += _table(headers, rows) if rows else ["no fills on this day"]
    if report.differences:
        lines += ["", "fills that differ:"]
        lines += _table(
            [
                "SESSION",
                "EXEC ID",
                "CLORDID",
                "SYMBOL",
                "SIDE",
                "QTY",
                "PX",
                "STRATEGY",
                "DIFFERENCE",
            ],
            [
                [
                    d.session,
                    d.exec_id,
                    d.client_order_id,
                    d.symbol,
                    d.side.name,
                    d.qty,
                    d.px,
                    d.strategy,
                    d.detail,
                ]
                for d in report.differences
            ],
        )
    if report.notes:
        lines += ["", "notes:"]
        lines += [f"  {n}" for n in report.notes]
    lines += ["", report.verdict()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole reconcile``; return the exit status."""
    opts = build_parser().parse_args(argv)
    try:
        report = reconcile(opts.state_dir, opts.day)
    except ReconcileError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    text = json.dumps(report_dict(report), indent=2) if opts.json else format_report(report)
    try:
        print(text, flush=True)
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
