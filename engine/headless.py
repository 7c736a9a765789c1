# SPDX-License-Identifier: MIT
"""``qwconsole engine``: run the engine without a window.

``qwconsole engine --demo`` runs the same demo the console embeds (simulated exchange,
market maker on three instruments) on a plain asyncio loop and prints a live one-line summary;
it stops cleanly on SIGINT and SIGTERM.
"""

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from engine.cli_parser import OneLineErrorParser
from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import build_demo
from engine.events import Alert, Event, OrderChanged, OrderFilled, PositionChanged
from engine.fix.transport import install_uvloop
from engine.warmup import warm_up


class Summary:
    """Count what happens on the bus and render it as one line."""

    def __init__(self) -> None:
        self.orders: set[int] = set()
        self.order_events = 0
        self.fills = 0
        self.alerts = 0
        self.positions: dict[tuple[int, str], PositionChanged] = {}

    def on_event(self, event: Event) -> None:
        """Account for one event."""
        if isinstance(event, OrderChanged):
            self.orders.add(event.order.order_id)
            self.order_events += 1
        elif isinstance(event, OrderFilled):
            self.fills += 1
        elif isinstance(event, PositionChanged):
            self.positions[(event.strategy_id, event.symbol)] = event
        elif isinstance(event, Alert):
            self.alerts += 1

    def line(self, uptime_s: float) -> str:
        """Return the summary line."""
        pos = " ".join(f"{sym}:{p.qty_lots:+d}" for (_s, sym), p in sorted(self.positions.items()))
        pnl = sum(p.realized_pnl + p.unrealized_pnl - p.fees for p in self.positions.values())
        return (
            f"{uptime_s:7.1f}s  orders {len(self.orders):6d}  fills {self.fills:6d}  "
            f"alerts {self.alerts:4d}  pos {pos or '-'}  P&L {pnl:+,.2f}"
        )


def default_state_dir() -> Path:
    """Return ``$XDG_STATE_HOME/qwconsole`` (``~/.local/state/qwconsole``)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local/state"
    return root / "qwconsole"


async def run_demo(
    seconds: float | None, interval_s: float, out: TextIO, state_dir: Path | None = None
) -> int:
    """Run the demo engine until a signal (or ``seconds``); print a summary every interval.

    With ``state_dir`` the engine journals to ``state_dir/journal`` and keeps its FIX stores in
    ``state_dir/fix``: a restart the same day rebuilds orders and positions and resumes the
    sequence numbers.
    """
    clock = LiveClock()
    engine = Engine(clock, engine_id="headless")
    if state_dir is None:
        build_demo(engine)
    else:
        build_demo(engine, journal_dir=state_dir / "journal", store_dir=state_dir / "fix")
    summary = Summary()
    engine.bus.subscribe(Event, summary.on_event)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = loop.create_task(engine.run(warm_up))
    start = clock.monotonic_ns()
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval_s)
            uptime = (clock.monotonic_ns() - start) / 1e9
            out.write(summary.line(uptime) + ("\r" if out.isatty() else "\n"))
            out.flush()
            if seconds is not None and uptime >= seconds:
                break
    finally:
        engine.request_stop()
        await runner
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    out.write("\nengine stopped cleanly\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole engine`` with ``argv``; return the exit code."""
    parser = OneLineErrorParser(
        prog="qwconsole engine", description="Run the engine without a window."
    )
    parser.add_argument("--demo", action="store_true", help="run the built-in demo")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    parser.add_argument("--interval", type=float, default=1.0, help="summary period, seconds")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="journal and FIX stores go here (default $XDG_STATE_HOME/qwconsole)",
    )
    parser.add_argument(
        "--no-journal", action="store_true", help="keep nothing on disk (fresh start every time)"
    )
    opts = parser.parse_args(argv)
    if not opts.demo:
        parser.error("nothing to run: use --demo (engine configuration files come later)")
    if opts.interval <= 0 or (opts.seconds is not None and opts.seconds <= 0):
        parser.error("--seconds and --interval must be > 0")
    state = None if opts.no_journal else (opts.state_dir or default_state_dir())
    install_uvloop()
    return asyncio.run(run_demo(opts.seconds, opts.interval, sys.stdout, state))
