# SPDX-License-Identifier: MIT
"""``qwconsole backtest``: replay recorded data through a strategy; sweep days x parameters.

Examples::

    qwconsole backtest events.npy --out day.qwj --param half_spread_ticks=2
    qwconsole backtest ticks.h5 --symbol BTCUSDT --day 20240808 --level l2 --out bt.qwj
    qwconsole backtest a.npy b.npy --sweep half_spread_ticks=1,2,3 --out-dir sweep/
    qwconsole backtest events.npy --strategy my_strats.py:TinyBuy --param qty_lots=2
    qwconsole backtest a.npy b.npy --sweep half_spread_ticks=1,2,3 --cluster local:4
    qwconsole backtest ticks.h5 --day 20240808 --day 20240809 --cluster tcp://sched:8786

``--strategy`` takes ``mm`` (the compiled market maker: fast path unless ``--generic``),
``market-maker``, ``taker``, or any Strategy class by reference, ``FILE.py:Class`` or
``module:Class``. A compiled quoting strategy (:mod:`engine.strategy.quoting`) runs on the
fast path unless ``--generic``; any other strategy on the generic path (the same OMS API as
live).

A single run prints a progress line (events, rate, percentage) and stops cleanly on Ctrl+C:
the journal then holds everything replayed so far and says it was canceled. Errors are one
line and exit status 2.

A sweep runs on every core here (``ProcessPoolExecutor``), or with ``--cluster`` on a Dask
cluster (:mod:`engine.backtest.cluster`, docs/cluster.md): ``tcp://HOST:PORT`` of a running
scheduler, or ``local:N`` to start one here with N worker processes.
"""

import argparse
import dataclasses
import itertools
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from engine.backtest.cluster import (
    CONNECT_TIMEOUT_S,
    ClusterError,
    ClusterSpec,
    parse_cluster,
    run_sweep_on_cluster,
)
from engine.backtest.runner import (
    STRATEGIES,
    BacktestInputError,
    BacktestJob,
    JobSummary,
    queue_model,
    run_job,
    run_sweep,
    strategy_class,
    sweep_jobs,
)
from engine.cli_parser import OneLineErrorParser
from engine.strategy.loader import StrategyLoadError, resolve_reference
from engine.strategy.params import ParameterError
from engine.strategy.quoting import QuotingStrategy

PROG = "qwconsole backtest"
#: Largest strategy id (the engine configuration's range: int64 end to end).
MAX_STRATEGY_ID = 2**63 - 1


def _value(text: str) -> object:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _param(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), _value(value.strip())


def _sweep(text: str) -> tuple[str, list[object]]:
    name, sep, values = text.partition("=")
    if not sep or not name or not values:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=V1,V2,...")
    return name.strip(), [_value(v.strip()) for v in values.split(",")]


def _ns(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer number of ns") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} ns is negative")
    return v


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``qwconsole backtest``."""
    p = OneLineErrorParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("inputs", nargs="+", help=".npy kernel events or a tick store (.h5)")
    p.add_argument("--level", choices=("l2", "l3"), default="l2")
    p.add_argument("--symbol", default="SIM", help="instrument (tick store: which to read)")
    p.add_argument("--day", action="append", default=[], help="tick store day YYYYMMDD")
    p.add_argument(
        "--tick-size", default="", help="price increment (default: the store's, else 0.01)"
    )
    p.add_argument(
        "--lot-size", default="", help="quantity increment (default: the store's, else 1)"
    )
    p.add_argument("--multiplier", default="1", help="contract multiplier (P&L in currency)")
    p.add_argument("--currency", default="", help="quote currency P&L is in, e.g. USD")
    p.add_argument(
        "--strategy",
        default="mm",
        metavar="NAME|FILE.py:CLASS|MODULE:CLASS",
        help=f"{', '.join(STRATEGIES)}, or your own Strategy class by reference",
    )
    p.add_argument("--strategy-id", type=int, default=1)
    p.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--queue", default="power3", help="conservative, log or power<n>")
    p.add_argument("--feed-ns", type=_ns, default=0)
    p.add_argument("--order-ns", type=_ns, default=0)
    p.add_argument("--response-ns", type=_ns, default=0)
    p.add_argument(
        "--recorded-latency", action="store_true", help="latencies from ts_recv - ts (store)"
    )
    p.add_argument("--generic", action="store_true", help="run the Python strategy through the OMS")
    p.add_argument("--fast", action="store_true", help="insist on the compiled fast path (mm only)")
    p.add_argument("--book-interval-ns", type=_ns, default=0)
    p.add_argument(
        "--status",
        default="",
        metavar="FILE.npy",
        help="the instrument's recorded trading status (TradingStatus.save, e.g. from MDP 3.0 "
        "SecurityStatus): no fills while halted; a mid-run halt needs --generic",
    )
    p.add_argument("--out", default="backtest.qwj", help="journal of a single run")
    p.add_argument("--sweep", type=_sweep, action="append", default=[], metavar="NAME=V1,V2,...")
    p.add_argument("--out-dir", default="backtest-sweep", help="journals of a sweep")
    p.add_argument("--workers", type=int, default=0, help="sweep processes (0: every core)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument(
        "--cluster",
        default="",
        metavar="tcp://HOST:PORT|local:N",
        help="run the sweep on a Dask scheduler, or on a local Dask cluster of N processes",
    )
    p.add_argument(
        "--ship-data",
        action="store_true",
        help="with --cluster: read each day here and send it with its jobs (else the workers "
        "read the input path, which they must all see)",
    )
    p.add_argument(
        "--cluster-timeout",
        type=float,
        default=CONNECT_TIMEOUT_S,
        metavar="S",
        help="seconds to wait for the Dask scheduler",
    )
    return p


class _Progress:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.t0 = time.perf_counter()  # wall time for the rate shown, never in results
        self.canceled = False

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        dt = max(time.perf_counter() - self.t0, 1e-9)
        pct = 100.0 * done / total if total else 100.0
        sys.stderr.write(
            f"\rbacktest: {done:,}/{total:,} events ({pct:5.1f} %), "
            f"{done / dt / 1e6:.2f}M events/s   "
        )
        sys.stderr.flush()

    def cancel(self) -> bool:
        return self.canceled

    def on_sigint(self, _sig: int, _frame: FrameType | None) -> None:
        if self.canceled:
            raise KeyboardInterrupt
        self.canceled = True


def _summary(s: JobSummary) -> str:
    state = "CANCELED " if s.canceled else ""
    what = ""
    if s.label:  # a run of a sweep: say which day and parameters it ran
        what = " (" + ", ".join([f"day {s.day}", *(f"{k}={v}" for k, v in s.params)]) + ")"
    return (
        f"{state}{s.label or s.journal}{what}: {s.events:,} events, {s.orders:,} orders, "
        f"{s.fills:,} fills, position {s.position}, P&L {s.pnl_ticks:+,.1f} tick-lots "
        f"= {money(s.pnl, s.currency)}, journal {s.journal}"
    )


def money(value: float, currency: str) -> str:
    """Return a P&L in currency: cents above 1, three significant digits below (crypto lots)."""
    text = f"{value:+,.2f}" if abs(value) >= 1 or value == 0 else f"{value:+.3g}"
    return f"{text} {currency}" if currency else f"{text} (quote currency)"


def sweep_table(results: Sequence[JobSummary], swept: Sequence[str]) -> str:
    """Return the runs of a sweep as a table: day, swept values, fills, position, P&L.

    Rows are in job order (days, then parameter sets as ``--sweep`` listed them); the best
    P&L of each day is marked ``*``.
    """
    best: dict[str, float] = {}
    for s in results:
        if not s.canceled:
            best[s.day] = max(best.get(s.day, float("-inf")), s.pnl_ticks)
    head = ["run", "day", *swept, "fills", "position", "P&L tick-lots", "P&L", ""]
    rows = []
    for s in results:
        params = dict(s.params)
        mark = "*" if not s.canceled and s.pnl_ticks == best.get(s.day) else ""
        rows.append([
            s.label, Path(s.day).name if Path(s.day).suffix else s.day,
            *(str(params.get(n, "")) for n in swept), f"{s.fills:,}", str(s.position),
            "canceled" if s.canceled else f"{s.pnl_ticks:+,.1f}",
            "" if s.canceled else money(s.pnl, s.currency).replace(" (quote currency)", ""),
            mark,
        ])  # fmt: skip
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    text = [
        "  ".join(
            c.ljust(w) if i < 2 + len(swept) else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in [head, *rows]
    ]
    return "\n".join(text)


def _cluster_spec(
    parser: argparse.ArgumentParser, a: argparse.Namespace, sweep: bool
) -> ClusterSpec | None:
    """Return the cluster ``--cluster`` names (``None``: none), or exit with a usage error."""
    if a.ship_data and not a.cluster:
        parser.error("--ship-data sends days to a Dask cluster: give --cluster too")
    if a.cluster_timeout <= 0:
        parser.error(f"--cluster-timeout {a.cluster_timeout}: must be > 0 seconds")
    if not a.cluster:
        return None
    if a.workers:
        parser.error("--workers sizes the local pool; with --cluster the cluster's workers run")
    if not sweep:
        parser.error(
            "--cluster runs sweeps (several days or inputs, or --sweep); a single run runs "
            "here: drop --cluster"
        )
    try:
        return parse_cluster(a.cluster)
    except ValueError as e:
        parser.error(str(e))


def _run_sweep(
    a: argparse.Namespace, base: BacktestJob, days: Sequence[str], cluster: ClusterSpec | None
) -> int:
    """Run the sweep here (``ProcessPoolExecutor``) or on ``cluster``; print and return 0."""
    names = [n for n, _v in a.sweep]
    grid = [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(v for _n, v in a.sweep))
    ]
    out_dir = a.out_dir
    if cluster is not None and not cluster.local:
        # Workers elsewhere resolve a relative path in their own working directory: name the
        # inputs and the journals by absolute paths (which must be on a shared mount).
        base = dataclasses.replace(base, events=str(Path(base.events).absolute()))
        if Path(base.events).suffix not in (".h5", ".hdf5"):
            days = [str(Path(d).absolute()) for d in days]
        out_dir = str(Path(out_dir).absolute())
    jobs = sweep_jobs(base, days, grid or [{}], out_dir)
    t0 = time.perf_counter()
    if cluster is not None:
        results = run_sweep_on_cluster(
            jobs,
            cluster,
            on_done=lambda s: print(_summary(s), flush=True),
            ship_data=a.ship_data,
            timeout=a.cluster_timeout,
            quiet=True,
        )
    else:
        results = run_sweep(
            jobs, a.workers or None, on_done=lambda s: print(_summary(s), flush=True)
        )
    print(sweep_table(results, names))
    print(f"{len(results)} runs in {time.perf_counter() - t0:.1f} s; journals in {out_dir}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole backtest``; return the exit status."""
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        queue_model(a.queue)
    except ValueError as e:
        parser.error(str(e))
    if not 1 <= a.strategy_id <= MAX_STRATEGY_ID:
        parser.error(f"--strategy-id {a.strategy_id}: must be 1..{MAX_STRATEGY_ID} (int64)")
    if a.fast and a.generic:
        parser.error("--fast and --generic exclude each other")
    strategy = a.strategy
    try:
        cls = strategy_class(strategy)
        if strategy not in STRATEGIES:
            strategy = resolve_reference(strategy)  # sweep workers may run elsewhere
    except StrategyLoadError as e:
        parser.error(str(e))
    if a.fast and not issubclass(cls, QuotingStrategy):
        parser.error(
            f"--fast: {cls.__name__} is a Python strategy; the fast path runs compiled quoting "
            "strategies only (a QuotingStrategy subclass with a @quote_rule, such as mm; see "
            "docs/strategies.md); drop --fast to run it on the generic path"
        )
    store = Path(a.inputs[0]).suffix in (".h5", ".hdf5")
    stores = [i for i in a.inputs if Path(i).suffix in (".h5", ".hdf5")]
    if stores and len(a.inputs) > 1:  # never read one and ignore the others
        parser.error(
            f"{len(a.inputs)} inputs with a tick store ({', '.join(stores)}): a run reads one "
            "store; give its days with --day D1 --day D2"
        )
    base = BacktestJob(
        events=a.inputs[0],
        journal=a.out,
        level=a.level,
        symbol=a.symbol,
        day=a.day[0] if a.day else "",
        tick_size=a.tick_size,
        lot_size=a.lot_size,
        multiplier=a.multiplier,
        currency=a.currency,
        strategy=strategy,
        strategy_id=a.strategy_id,
        params=tuple(a.param),
        queue=a.queue,
        feed_ns=a.feed_ns,
        order_ns=a.order_ns,
        response_ns=a.response_ns,
        recorded_latency=a.recorded_latency,
        generic=a.generic,
        book_interval_ns=a.book_interval_ns,
        status=a.status,
    )
    days = (a.day or [""]) if store else a.inputs
    sweep = bool(a.sweep) or len(days) > 1
    cluster = _cluster_spec(parser, a, sweep)
    try:
        if sweep:
            return _run_sweep(a, base, days, cluster)
        prog = _Progress(a.quiet)
        old = signal.signal(signal.SIGINT, prog.on_sigint)
        try:
            s = run_job(base, progress=prog, cancel=prog.cancel)
        finally:
            signal.signal(signal.SIGINT, old)
        if not a.quiet:
            sys.stderr.write("\n")
        print(_summary(s))
        return 130 if s.canceled else 0
    except (BacktestInputError, ParameterError, ValueError, OSError, ClusterError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
