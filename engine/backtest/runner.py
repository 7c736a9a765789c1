# SPDX-License-Identifier: MIT
"""One backtest as a plain, picklable job, and parameter sweeps over days x parameters.

A :class:`BacktestJob` names its inputs (a file of kernel events or an instrument-day of the
tick store), the strategy and its parameters, the models and the journal to write; running it
gives a :class:`JobSummary`. :func:`run_sweep` runs many jobs on every core with a
``ProcessPoolExecutor``; each job is deterministic and independent, so the summaries and the
journals are the same as a serial run's (the tests compare them byte for byte).
"""

import dataclasses
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from multiprocessing import get_context
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from engine.backtest.fast import FastBacktest, write_journal
from engine.backtest.generic import GenericBacktest
from engine.backtest.journal import BacktestJournal
from engine.backtest.models import ConstantLatency, LatencyModel, Level, RecordedLatency
from engine.backtest.rules import TradingStatus
from engine.instruments import Instrument
from engine.matching.models import ConservativeQueue, LogProbQueue, PowerProbQueue, QueueModel
from engine.strategy.base import Strategy
from engine.strategy.examples import CompiledMarketMaker, MarketMaker, Taker
from engine.strategy.loader import build_strategy, load_strategy_class
from engine.strategy.quoting import QuotingStrategy
from engine.types import L2_EVENT_DTYPE, L3_EVENT_DTYPE

#: Strategies a job can name by a short name (the CLI's ``--strategy``); any other name is a
#: reference, ``file.py:Class`` or ``module:Class`` (:mod:`engine.strategy.loader`).
STRATEGIES: dict[str, type[Strategy]] = {
    "mm": CompiledMarketMaker,
    "market-maker": MarketMaker,
    "taker": Taker,
}

Path_ = Path | str


class BacktestInputError(ValueError):
    """A backtest input could not be read; the message names the file and the reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BacktestJob:
    """Everything one backtest needs; picklable, so that a worker process can run it.

    ``events`` is a ``.npy`` file of ``L2_EVENT_DTYPE`` / ``L3_EVENT_DTYPE`` rows, or a tick
    store file (``.h5``/``.hdf5``) read for ``symbol`` and ``day`` (``kind`` ``l2``: deltas
    and trades merged; ``mbo`` for L3).
    """

    events: str
    journal: str
    level: Level = "l2"
    symbol: str = "SIM"
    day: str = ""
    #: Price and quantity increments: "" takes them from the tick-store day (else 0.01 and 1).
    tick_size: str = ""
    lot_size: str = ""
    multiplier: str = "1"  # contract multiplier: P&L in currency = tick-lots * tick value
    currency: str = ""  # the quote currency P&L is in ("" when not said)
    strategy: str = "mm"
    strategy_id: int = 1
    params: tuple[tuple[str, object], ...] = ()
    queue: str = "power3"
    feed_ns: int = 0
    order_ns: int = 0
    response_ns: int = 0
    recorded_latency: bool = False
    generic: bool = False
    book_interval_ns: int = 0
    #: A recorded trading status (``TradingStatus.save``'s ``.npy``): no fills while halted.
    status: str = ""
    label: str = field(default="")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSummary:
    """The outcome of one job (equal for equal jobs, wherever they ran)."""

    label: str
    journal: str
    events: int
    orders: int
    fills: int
    position: int
    pnl_ticks: float
    journal_sha256: str
    canceled: bool
    day: str = ""  # the tick-store day or the events file the job ran on
    params: tuple[tuple[str, object], ...] = ()  # the strategy parameters given to the job
    pnl: float = 0.0  # P&L in the quote currency (pnl_ticks * the instrument's tick value)
    currency: str = ""


def queue_model(name: str) -> QueueModel:
    """Return the queue model called ``name``: ``conservative``, ``power<n>`` or ``log``."""
    if name == "conservative":
        return ConservativeQueue()
    if name == "log":
        return LogProbQueue()
    if name.startswith("power"):
        try:
            return PowerProbQueue(float(name[5:] or 3.0))
        except ValueError:
            pass
    raise ValueError(f"queue model {name!r}: use conservative, log or power<n> (e.g. power3)")


def load_events(job: BacktestJob) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int64] | None]:
    """Return the job's kernel events and, from a tick store, their receive times.

    Raises
    ------
    BacktestInputError
        If the file is missing, unreadable or of the wrong row type.
    """
    path = Path(job.events)
    if not path.exists():
        raise BacktestInputError(f"{path}: no such file")
    want = L2_EVENT_DTYPE if job.level == "l2" else L3_EVENT_DTYPE
    if path.suffix in (".h5", ".hdf5"):
        return _from_store(path, job)
    try:
        with path.open("rb") as f:
            magic = f.read(6)
        ev = np.load(path, allow_pickle=False) if magic == b"\x93NUMPY" else None
    except (OSError, ValueError) as e:
        raise BacktestInputError(f"{path}: not a readable .npy file ({e})") from None
    if ev is None:  # np.load would take it for a pickle and say that
        raise BacktestInputError(f"{path}: not a .npy file (no NumPy header)")
    if ev.dtype != want:
        fields = ", ".join(ev.dtype.names or ()) or str(ev.dtype)
        raise BacktestInputError(
            f"{path}: rows have fields ({fields}); a {job.level} backtest needs "
            f"{'L2' if job.level == 'l2' else 'L3'}_EVENT_DTYPE rows"
        )
    return ev, None


def _from_store(path: Path, job: BacktestJob) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int64]]:
    from engine.tickstore.days import TickStoreError
    from engine.tickstore.schema import to_l2_events, to_l3_events
    from engine.tickstore.store import TickStore

    try:
        with TickStore(path, "r") as store:
            days = store.days(job.symbol)
            if not days:
                raise BacktestInputError(f"{path}: no days stored for {job.symbol!r}")
            day = job.day or days[0]
            if day not in days:
                raise BacktestInputError(
                    f"{path}: {job.symbol} has no day {day} (stored: {', '.join(days)})"
                )
            if job.level == "l3":
                mbo = store.read(job.symbol, day, "mbo")
                ev = to_l3_events(mbo)
                recv = mbo["ts_recv"]
            else:
                kinds = store.kinds(job.symbol, day)
                if "l2" not in kinds and "mbo" in kinds:
                    raise BacktestInputError(
                        f"{path}: {job.symbol}/{day} holds market-by-order rows and no L2 "
                        "depth: use --level l3"
                    )
                deltas = store.read(job.symbol, day, "l2")
                trades = store.read(job.symbol, day, "trades")
                ev = to_l2_events(deltas, trades)
                # receive times in the order to_l2_events merges the rows (stable by ts)
                recv = np.concatenate([deltas["ts_recv"], trades["ts_recv"]])
                if trades.shape[0]:
                    ts_all = np.concatenate([deltas["ts"], trades["ts"]])
                    recv = recv[np.argsort(ts_all, kind="stable")]
    except TickStoreError as e:  # names the file and why (damaged, truncated, not a store)
        raise BacktestInputError(str(e)) from None
    except (OSError, KeyError) as e:
        what = f"{job.symbol}/{job.day}" if job.day else job.symbol
        raise BacktestInputError(f"{path}: cannot read {what} ({e})") from None
    if ev.shape[0] == 0:
        raise BacktestInputError(f"{path}: {job.symbol}/{day} holds no {job.level} rows")
    return ev, np.asarray(recv, np.int64)


def session_open(job: BacktestJob) -> int | None:
    """Return the first trade's time of an L3 tick-store day (its ``mbo`` rows carry none).

    ``None`` otherwise: L2 events carry their trades, and an ``.npy`` input is all there is
    (see :func:`engine.backtest.rules.market_rules`).
    """
    path = Path(job.events)
    if job.level != "l3" or path.suffix not in (".h5", ".hdf5"):
        return None
    from engine.tickstore.store import TickStore

    with TickStore(path, "r") as store:
        day = job.day or store.days(job.symbol)[0]
        first = store.read_rows(job.symbol, day, "trades", 0, 1)
    return int(first["ts"][0]) if first.shape[0] else None


def _latency(
    job: BacktestJob, ev: npt.NDArray[np.void], recv: npt.NDArray[np.int64] | None
) -> LatencyModel:
    if job.recorded_latency:
        if recv is None:
            raise BacktestInputError(
                f"{job.events}: recorded latency needs receive times (a tick store input)"
            )
        return RecordedLatency.from_times(ev["ts"], recv)
    return ConstantLatency(job.feed_ns, job.order_ns, job.response_ns)


@dataclass(frozen=True, slots=True)
class JobData:
    """A job's inputs read ahead (:func:`read_job_data`), to run it where its file is not.

    What :func:`run_job` would read from ``job.events`` itself: the kernel events, their
    receive times (a tick store input), the instrument and the session's first trade time.
    """

    events: npt.NDArray[np.void]
    recv: npt.NDArray[np.int64] | None
    instrument: Instrument
    open_ts: int | None
    status: TradingStatus | None = None  # the job's recorded trading status, if it has one

    @property
    def nbytes(self) -> int:
        """Return the size of the arrays (what shipping the data sends, give or take)."""
        return int(self.events.nbytes) + (0 if self.recv is None else int(self.recv.nbytes))


def read_job_data(job: BacktestJob) -> JobData:
    """Return everything :func:`run_job` reads from the job's input file.

    Raises
    ------
    BacktestInputError
        As :func:`load_events` and :func:`job_instrument`.
    """
    ev, recv = load_events(job)
    return JobData(ev, recv, job_instrument(job), session_open(job), job_status(job))


def job_status(job: BacktestJob) -> TradingStatus | None:
    """Return the job's recorded trading status (None: it has none).

    Raises
    ------
    BacktestInputError
        If the status file cannot be read or is not one.
    """
    if not job.status:
        return None
    try:
        return TradingStatus.load(job.status)
    except OSError as e:
        raise BacktestInputError(f"{job.status}: {e.strerror or e}") from None
    except ValueError as e:
        raise BacktestInputError(str(e)) from None


def run_job(
    job: BacktestJob,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    data: JobData | None = None,
) -> JobSummary:
    """Run one backtest and write its journal; return the summary.

    ``data``, when given, is the job's input read ahead (:func:`read_job_data`, e.g. on the
    machine that has the file): the job then reads nothing but writes its journal.
    """
    if data is None:
        data = read_job_data(job)
    ev, recv, instrument, open_ts = data.events, data.recv, data.instrument, data.open_ts
    latency = _latency(job, ev, recv)
    queue = queue_model(job.queue)
    strategy = make_strategy(job)
    t0 = int(ev["ts"][0]) if ev.shape[0] else 0
    status = data.status
    if not job.generic and isinstance(strategy, QuotingStrategy):
        fast = FastBacktest(strategy, instrument, level=job.level, queue=queue, latency=latency)
        res = fast.run(ev, progress=progress, cancel=cancel, open_ts=open_ts, status=status)
        with BacktestJournal(job.journal, t0) as jr:
            write_journal(jr, res, strategy, instrument)
            jr.info(res.last_ts, _done_text(res.events, ev.shape[0], res.canceled))
        orders, fills, pos, pnl = (
            res.orders.shape[0],
            res.fills.shape[0],
            res.position,
            res.pnl_ticks,
        )
        events, canceled = res.events, res.canceled
    else:
        gen = GenericBacktest(
            [strategy],
            instrument,
            level=job.level,
            queue=queue,
            latency=latency,
            book_interval_ns=job.book_interval_ns,
        )
        with BacktestJournal(job.journal, t0) as jr:
            g = gen.run(ev, jr, progress=progress, cancel=cancel, open_ts=open_ts, status=status)
        orders, fills = g.orders, g.fills
        pos = gen.router.risk.position(job.symbol, job.strategy_id)
        b, a = gen.view.best_bid(), gen.view.best_ask()
        mark = (b[0] + a[0]) // 2 if b is not None and a is not None else 0
        pnl = float(g.cash_ticks + pos * mark)
        events, canceled = g.events, g.canceled
    return JobSummary(
        label=job.label,
        journal=job.journal,
        events=events,
        orders=orders,
        fills=fills,
        position=pos,
        pnl_ticks=pnl,
        journal_sha256=hashlib.sha256(Path(job.journal).read_bytes()).hexdigest(),
        canceled=canceled,
        day=job.day or job.events,
        params=job.params,
        pnl=pnl * float(instrument.tick_value),
        currency=instrument.currency,
    )


def job_instrument(job: BacktestJob) -> Instrument:
    """Return the instrument a job trades: increments from the job, else from its tick-store day.

    Raises
    ------
    BacktestInputError
        If an increment or the multiplier is not a positive decimal, or the job's increment
        contradicts the one the store recorded for that day.
    """
    tick, lot = job.tick_size, job.lot_size
    path = Path(job.events)
    if path.suffix in (".h5", ".hdf5"):
        from engine.tickstore.days import TickStoreError
        from engine.tickstore.store import TickStore

        try:
            with TickStore(path, "r") as store:
                day = job.day or store.days(job.symbol)[0]
                stored_tick, stored_lot = store.increments(job.symbol, day)
        except (TickStoreError, OSError, KeyError, IndexError) as e:
            raise BacktestInputError(
                f"{path}: cannot read {job.symbol}'s increments ({e})"
            ) from None
        for name, given, stored in (("tick", tick, stored_tick), ("lot", lot, stored_lot)):
            if given and _decimal(f"--{name}-size", given) != Decimal(stored):
                raise BacktestInputError(
                    f"--{name}-size {given}: {path} recorded {job.symbol}/{day} with "
                    f"{name} size {stored}"
                )
        tick, lot = tick or stored_tick, lot or stored_lot
    try:
        return Instrument(
            symbol=job.symbol,
            tick_size=_decimal("--tick-size", tick or "0.01"),
            lot_size=_decimal("--lot-size", lot or "1"),
            multiplier=_decimal("--multiplier", job.multiplier),
            currency=job.currency,
        )
    except (ValueError, ArithmeticError) as e:
        raise BacktestInputError(f"{job.symbol}: {e}") from None


def _decimal(name: str, text: str) -> Decimal:
    try:
        return Decimal(text)
    except ArithmeticError:
        raise BacktestInputError(f"{name} {text!r}: not a decimal number") from None


def strategy_class(name: str) -> type[Strategy]:
    """Return the class ``--strategy`` names: a short name or a ``file.py:Class`` reference."""
    cls = STRATEGIES.get(name)
    return cls if cls is not None else load_strategy_class(name)


def make_strategy(job: BacktestJob) -> Strategy:
    """Return the job's strategy (its class loaded by reference if need be)."""
    if job.strategy in STRATEGIES:
        return STRATEGIES[job.strategy](job.strategy_id, [job.symbol], **dict(job.params))
    return build_strategy(job.strategy, job.strategy_id, [job.symbol], job.params)


def _done_text(done: int, total: int, canceled: bool) -> str:
    return f"backtest {'canceled' if canceled else 'done'}: {done} of {total} events"


# ------------------------------------------------------------------------------ sweeps
def sweep_jobs(
    base: BacktestJob,
    days: Sequence[str],
    grid: Sequence[Mapping[str, object]],
    out_dir: Path_,
) -> list[BacktestJob]:
    """Return one job per (day, parameter set), each with its own journal in ``out_dir``.

    ``days`` are event files (or, for a tick-store ``base.events``, day names).
    """
    out = Path(out_dir)
    jobs = []
    store = Path(base.events).suffix in (".h5", ".hdf5")
    for d_i, day in enumerate(days):
        for p_i, params in enumerate(grid):
            label = f"d{d_i:03d}-p{p_i:03d}"
            merged = dict(base.params)
            merged.update(params)
            jobs.append(
                dataclasses.replace(
                    base,
                    events=base.events if store else str(day),
                    day=str(day) if store else base.day,
                    journal=str(out / f"{label}.qwj"),
                    params=tuple(sorted(merged.items())),
                    label=label,
                )
            )
    return jobs


def run_sweep(
    jobs: Sequence[BacktestJob],
    workers: int | None = None,
    on_done: Callable[[JobSummary], None] | None = None,
    mode: Literal["process", "serial"] = "process",
) -> list[JobSummary]:
    """Run ``jobs`` on ``workers`` processes (every core by default); results in job order."""
    if mode == "serial" or workers == 1 or len(jobs) <= 1:
        results = []
        for j in jobs:
            r = run_job(j)
            results.append(r)
            if on_done is not None:
                on_done(r)
        return results
    n = workers or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(run_job, j) for j in jobs]
        results = []
        for f in futures:
            r = f.result()
            results.append(r)
            if on_done is not None:
                on_done(r)
    return results
