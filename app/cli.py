# SPDX-License-Identifier: MIT
"""Command line of ``qwconsole``: the console by default, tools as subcommands.

``qwconsole`` opens the console with the embedded engine. Subcommands hang off the same entry
point (``qwconsole fix …``); each is a module with ``main(argv) -> int``. A bad argument gets a
one-line error and exit code 2; no traceback reaches the user.
"""

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import app.process  # noqa: F401  (imported first: its import time stands in for the process start)
from engine import fastlog
from engine.cli_parser import OneLineErrorParser
from engine.tickstore.summaries import DaySummary, add_day_summary

PROG = "qwconsole"

#: Subcommand -> (module with ``main(argv) -> int``, or ``module:function``, one-line description).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "engine": ("engine.headless", "run the engine without a window (--demo, --config FILE)"),
    "fix": ("engine.fix.cli", "FIX tools: the conformance-suite acceptor"),
    "bench": ("app.bench", "benchmark tables: bench fix (batches, sessions in parallel)"),
    "backtest": ("engine.backtest.cli", "replay recorded data through a strategy (--sweep)"),
    "import": ("engine.tickstore.cli", "import vendor files and feed captures into the tick store"),
    "gen": ("engine.feeds.cli:gen_main", "generate a synthetic feed day (gen itch --size 10GB)"),
    "replay": ("engine.feeds.cli:replay_main", "decode a feed day, maintain every book"),
    "relay": ("engine.relay.cli", "serve market data to remote consoles (--config relay.toml)"),
    "reconcile": ("engine.reconcile.cli", "compare journal, recovery and venue fills (STATE_DIR)"),
    "sim": ("engine.sim.server", "the exchange simulator as a FIX acceptor (--cfg FILE.cfg)"),
    "warmup": ("engine.warmup", "compile the numba kernels into the cache (set-up does it)"),
}

WORKSPACE_CHOICES = ("monitor", "manager", "analyzer")
THEME_CHOICES = ("dark", "light")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"{text} s is outside 0 < seconds <= 86400")
    return value


def _non_negative_seconds(text: str) -> float:
    if text.strip() in {"0", "0.0"}:
        return 0.0
    return _positive_seconds(text)


def _png_path(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() != ".png":
        raise argparse.ArgumentTypeError(f"{text!r} must end in .png")
    return path


#: Suffixes ``--open`` takes (app.main_window.OPENERS says where each goes).
OPEN_SUFFIXES = (".h5", ".hdf5", ".qwj", ".cfg", ".xml")


def _openable(text: str) -> str:
    path = Path(text)
    if path.suffix.lower() not in OPEN_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"{text!r}: not a tick store (.h5), journal (.qwj), session file (.cfg) or "
            "dictionary (.xml)"
        )
    return str(path.absolute())


def _endpoint(text: str) -> tuple[str, str, int]:
    name, _, where = text.rpartition("=")
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not [NAME=]HOST:PORT")
    return (name or f"{host}:{port}", host, int(port))


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the console's own options."""
    epilog = "subcommands:\n" + "\n".join(
        f"  {PROG} {name + ' …':<13}{desc}" for name, (_m, desc) in SUBCOMMANDS.items()
    )
    parser = OneLineErrorParser(
        prog=PROG,
        description="Desktop trading console: Trade Monitor, Enterprise Manager and Trade "
        "Analyzer over one engine. With no options it opens the console with an embedded "
        "engine.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    parser.add_argument(
        "--smoke",
        nargs="?",
        const=3.0,
        type=_positive_seconds,
        metavar="SECONDS",
        help="start everything, run SECONDS (default 3) once the engine runs, check the "
        "engine heartbeat and the demo's orders reached the window, exit 0 (non-zero on any "
        "error)",
    )
    parser.add_argument(
        "--screenshot",
        type=_png_path,
        metavar="PATH",
        help="render the main window offscreen into a PNG and exit",
    )
    parser.add_argument("--workspace", choices=WORKSPACE_CHOICES, help="workspace to show at start")
    parser.add_argument(
        "--open",
        action="append",
        default=[],
        type=_openable,
        metavar="FILE",
        help="open a tick store (.h5) or journal (.qwj) in the Trade Analyzer, a session "
        "file (.cfg) or dictionary (.xml) in the Enterprise Manager (repeatable); its "
        "workspace is shown unless --workspace says otherwise",
    )
    parser.add_argument(
        "--after",
        type=_non_negative_seconds,
        metavar="SECONDS",
        help="with --screenshot: wait this long after the engine started before rendering "
        "(default 1.5)",
    )
    parser.add_argument("--theme", choices=THEME_CHOICES, help="theme for this run")
    parser.add_argument(
        "--connect",
        action="append",
        default=[],
        type=_endpoint,
        metavar="[NAME=]HOST:PORT",
        help="also attach this remote engine (repeatable); the token is read from "
        "$QWCONSOLE_TOKEN, TLS is used unless --no-tls",
    )
    parser.add_argument(
        "--no-tls", action="store_true", help="with --connect: plain WebSocket (loopback only)"
    )
    parser.add_argument(
        "--strategy",
        metavar="FILE.py:CLASS",
        help="also run this strategy in the embedded engine (or MODULE:CLASS); see "
        "docs/strategies.md",
    )
    parser.add_argument(
        "--strategy-id", type=int, default=1, metavar="ID", help="with --strategy: its id"
    )
    parser.add_argument(
        "--symbols",
        metavar="SYM[,SYM]",
        help="with --strategy: instruments it trades (default: every demo instrument)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --strategy: a parameter value (repeatable)",
    )
    parser.add_argument(
        "--size",
        metavar="WxH",
        default=None,
        help="with --screenshot: window size in pixels (default 1400x860)",
    )
    return parser


def _parse_size(parser: argparse.ArgumentParser, text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        w_text, h_text = text.lower().split("x")
        w, h = int(w_text), int(h_text)
    except ValueError:
        parser.error(f"argument --size: {text!r} is not WIDTHxHEIGHT")
    if not (320 <= w <= 7680 and 240 <= h <= 4320):
        parser.error(f"argument --size: {w}x{h} is outside 320x240..7680x4320")
    return w, h


def _check_strategy(parser: argparse.ArgumentParser, opts: argparse.Namespace) -> None:
    """Load ``--strategy`` now: a bad file is one line and exit 2, before any window."""
    if opts.strategy is None:
        if opts.symbols is not None or opts.param:
            parser.error("--symbols and --param only make sense with --strategy")
        return
    from engine.demo import DEMO_LISTINGS
    from engine.strategy.loader import StrategyLoadError, build_strategy, resolve_reference

    demo = [x.instrument.symbol for x in DEMO_LISTINGS]
    symbols = [s.strip() for s in opts.symbols.split(",") if s.strip()] if opts.symbols else demo
    unknown = [s for s in symbols if s not in demo]
    if unknown:
        parser.error(f"--symbols: {', '.join(unknown)} not traded by the demo ({', '.join(demo)})")
    params = []
    for text in opts.param:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            parser.error(f"--param {text!r}: write NAME=VALUE")
        params.append((name.strip(), value.strip()))
    if not 1 <= opts.strategy_id <= 2**63 - 1:
        parser.error(f"--strategy-id {opts.strategy_id}: must be 1..{2**63 - 1}")
    try:
        build_strategy(opts.strategy, opts.strategy_id, symbols, params)
        opts.strategy = resolve_reference(opts.strategy)
    except StrategyLoadError as e:
        parser.error(str(e))
    opts.symbols, opts.param = symbols, params


def print_versions() -> None:
    """Print one ``component version`` line per component."""
    from app.process import versions

    for name, version in versions():
        print(f"{name:<20} {version}")


def _exit_now(code: int) -> None:
    """End the process with ``code`` at once, logs and output flushed."""
    fastlog.stop()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_if_compiling(code: int) -> int:
    """Return ``code``, or end the process with it at once if a kernel warm-up still compiles.

    A console quit during its first start (kernels compiling, which cannot be interrupted) has
    shut down cleanly by now; letting the interpreter finalise would wait for the compiler.
    """
    core = sys.modules.get("engine.core")
    if core is not None and core.warm_up_running():
        logging.getLogger(PROG).info("exiting while kernels still compile (first start)")
        _exit_now(code)
    return code


def _analyzer_pyramids(
    store: Path, symbol: str, day: str, tick_size: str, lot_size: str, stored: dict[str, int]
) -> DaySummary | None:
    """Build the Analyzer's pyramids of a day while it is written (``analyzer.summary``).

    Imported only when a day is written: a run that writes no ticks never loads the Analyzer.
    """
    from analyzer.summary import summary_for

    return summary_for(store, symbol, day, tick_size, lot_size, stored)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole`` with ``argv`` (``sys.argv[1:]`` by default); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Imports and recordings leave the pyramids of their days for the Analyzer's first open.
    add_day_summary(_analyzer_pyramids)
    if args and args[0] in SUBCOMMANDS:
        target, _desc = SUBCOMMANDS[args[0]]
        module_name, _, function = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            print(f"{PROG} {args[0]}: not available in this build ({e})", file=sys.stderr)
            return 2
        return _exit_if_compiling(int(getattr(module, function or "main")(args[1:])))
    parser = build_parser()
    opts = parser.parse_args(args)
    if opts.after is not None and opts.screenshot is None:
        parser.error("argument --after: only makes sense with --screenshot")
    if opts.size is not None and opts.screenshot is None:
        parser.error("argument --size: only makes sense with --screenshot")
    if opts.smoke is not None and opts.screenshot is not None:
        parser.error("--smoke and --screenshot cannot be combined")
    opts.size = _parse_size(parser, opts.size)
    for path in opts.open:  # a file that is not there: said here, not by the window
        if not Path(path).is_file():
            parser.error(f"--open {path}: no such file")
    _check_strategy(parser, opts)
    if opts.version:
        print_versions()
        return 0
    from app.gui import run

    try:
        code = _exit_if_compiling(run(opts))
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the last line of defence: log the traceback, show one line
        logging.getLogger(PROG).exception("fatal error")
        print(f"{PROG}: error: {type(e).__name__}: {e} (details in the log)", file=sys.stderr)
        return 1
    if argv is None:
        # The console's process (not a caller passing arguments): everything is saved and the
        # engine stopped with its journal closed. The interpreter's own teardown (Qt, numba,
        # h5py objects) took 2.1-2.4 s more here; a quit should not.
        _exit_now(code)
    return code
