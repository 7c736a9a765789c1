# SPDX-License-Identifier: MIT
"""Backtest sweeps on a Dask distributed cluster (``qwconsole backtest ... --cluster``).

``--cluster tcp://HOST:PORT`` runs the sweep's jobs on an existing Dask scheduler and its
workers; ``--cluster local:N`` starts a local cluster of ``N`` worker processes (one thread
each), runs the sweep and shuts it down. Without ``--cluster`` the sweep runs on the
``ProcessPoolExecutor`` of :func:`engine.backtest.runner.run_sweep`, as before.

Each job is the same :class:`~engine.backtest.runner.BacktestJob` the local path runs, so the
summaries and journals are byte for byte those of a serial run. A worker writes the journal
to ``<journal>.<token>.part`` (a file of its own per attempt) and renames it when the job is
done: a job canceled, or a worker killed mid-job, leaves no half-written journal under the
final name, and a retry starts afresh.

Inputs are read where the workers run (the job carries the path: it must be visible to every
worker, e.g. a shared mount) or, with ``ship_data``, read here day by day and sent with the
jobs (:func:`engine.backtest.runner.read_job_data`).

``distributed`` is an optional dependency (the ``cluster`` extra): this module imports it
only when a sweep runs, and says which extra to install when it is missing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import logging
import os
import re
import signal
import threading
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.backtest.runner import (
    BacktestInputError,
    BacktestJob,
    JobData,
    JobSummary,
    read_job_data,
    run_job,
)
from engine.strategy.params import ParameterError

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster

#: Seconds to wait for a scheduler before giving up (``--cluster-timeout``).
CONNECT_TIMEOUT_S = 10.0
#: Times a failed task is run again (an exception in the job); a task whose worker died is
#: rescheduled by the scheduler itself (``distributed.scheduler.allowed-failures``, 3).
RETRIES = 2
#: Largest day ``ship_data`` sends with a task (bytes of events and receive times): beyond
#: that, put the store where the workers can read it.
MAX_SHIP_BYTES = 2 << 30
#: Suffix of a journal being written on a worker (renamed when the job is done).
PART = ".part"

_LOCAL = re.compile(r"local:(\d+)")
_REMOTE = re.compile(r"(tcp|tls|ucx|ws|wss|inproc)://\S+")


class ClusterError(RuntimeError):
    """The cluster could not be used; the message is one line and says why."""


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """Where a sweep runs: a scheduler's address, or a local cluster of ``workers``."""

    address: str = ""
    workers: int = 0

    @property
    def local(self) -> bool:
        """Return whether this starts a local cluster (``local:N``)."""
        return not self.address


def parse_cluster(text: str) -> ClusterSpec:
    """Return the cluster ``--cluster`` names: ``local:N`` or ``tcp://HOST:PORT``.

    Raises
    ------
    ValueError
        If ``text`` is neither (the message says what is accepted).
    """
    text = text.strip()
    m = _LOCAL.fullmatch(text)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= 1024:
            raise ValueError(f"--cluster {text}: local:N needs 1 <= N <= 1024 worker processes")
        return ClusterSpec(workers=n)
    if _REMOTE.fullmatch(text):
        return ClusterSpec(address=text)
    raise ValueError(f"--cluster {text!r}: give a scheduler address (tcp://HOST:PORT) or local:N")


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise ClusterError(
            f"--cluster needs Dask distributed, which is not installed ({e}); install the "
            "'cluster' extra: pip install 'qwconsole[cluster]'"
        ) from None
    return distributed


def connect(
    spec: ClusterSpec, timeout: float = CONNECT_TIMEOUT_S
) -> tuple[Client, LocalCluster | None]:
    """Return a client of the cluster ``spec`` names, and the local cluster it started.

    Raises
    ------
    ClusterError
        If ``distributed`` is missing, the scheduler cannot be reached within ``timeout``
        seconds or the local cluster does not start.
    """
    distributed = _import_distributed()
    if spec.local:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "port 8787 in use" for the dashboard
                cluster = distributed.LocalCluster(
                    n_workers=spec.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,  # job errors come back to the caller
                    # Ctrl+C in a terminal reaches the workers too: this process stops them
                    preload=[__name__],
                )
        except Exception as e:  # any failure to start is one line
            reason = " ".join(str(e).split()) or type(e).__name__
            raise ClusterError(
                f"cannot start a local Dask cluster of {spec.workers}: {reason}"
            ) from None
        try:
            client = distributed.Client(cluster, timeout=timeout)
        except Exception as e:
            cluster.close()
            raise ClusterError(f"cannot connect to the local Dask cluster: {e}") from None
        return client, cluster
    try:
        client = distributed.Client(spec.address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as e:
        reason = " ".join(str(e).split()) or type(e).__name__
        raise ClusterError(f"cannot reach the Dask scheduler at {spec.address}: {reason}") from None
    return client, None


def dask_setup(worker: object) -> None:
    """Make a worker of a local cluster ignore SIGINT (Dask's preload hook, in its process).

    Ctrl+C in a terminal signals the whole process group: the sweep's own process cancels
    the jobs and shuts the cluster down, and the workers would only print tracebacks.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _quiet_logs() -> None:
    """Silence the loggers of Dask (configured when ``distributed`` is imported) and asyncio."""
    for name in ["distributed", "asyncio", *logging.root.manager.loggerDict]:
        if name.split(".")[0] in ("distributed", "asyncio", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _run_on_worker(job: BacktestJob, data: JobData | None) -> JobSummary:
    """Run ``job`` on a worker: the journal written to a ``.part`` file, renamed when complete.

    The ``.part`` name is this attempt's own: a retry, or a second run of a job whose worker
    the scheduler took for dead, never writes into the same file.
    """
    part = f"{job.journal}.{uuid.uuid4().hex[:12]}{PART}"
    Path(part).parent.mkdir(parents=True, exist_ok=True)
    s = run_job(dataclasses.replace(job, journal=part), data=data)
    os.replace(part, job.journal)
    return dataclasses.replace(s, journal=job.journal)


def _hold(data: JobData) -> JobData:
    """Return ``data``: a task whose result is a shipped day (recomputed if its worker dies)."""
    return data


def _day_key(job: BacktestJob) -> tuple[str, str, str, str]:
    return (job.events, job.symbol, job.day, job.level)


def _ship(client: Client, job: BacktestJob, key: str, limit: int) -> Future[JobData]:
    """Read ``job``'s day here and send it to the cluster as a task of its own."""
    day = read_job_data(job)
    if day.nbytes > limit:
        raise ClusterError(
            f"--ship-data: {job.events} {job.symbol}/{job.day or '(first day)'} is "
            f"{day.nbytes / 2**20:,.1f} MiB, more than {limit / 2**20:,.1f} MiB to "
            "send with a task; put the store on a path every worker can read and drop "
            "--ship-data"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "large object in the task graph": it is the point
        # A task holding the day (not scatter): the scheduler keeps its spec, so the day is
        # sent again if the worker holding it dies.
        fut: Future[JobData] = client.submit(_hold, day, key=key, pure=False)
    return fut


def submit_jobs(
    client: Client,
    jobs: Sequence[BacktestJob],
    *,
    ship_data: bool = False,
    retries: int = RETRIES,
    max_ship_bytes: int = MAX_SHIP_BYTES,
) -> list[Future[JobSummary]]:
    """Submit ``jobs`` to ``client``'s cluster; return their futures in job order.

    With ``ship_data`` each day (input file, symbol, day, level) is read here once and its
    jobs depend on the task holding it; otherwise the workers read ``job.events`` by path.

    Raises
    ------
    ClusterError
        If a shipped day is larger than ``max_ship_bytes`` (events and receive times).
    """
    run = uuid.uuid4().hex[:12]  # keys unique on a scheduler shared by several sweeps
    days: dict[tuple[str, str, str, str], Future[JobData]] = {}
    futures: list[Future[JobSummary]] = []
    for i, job in enumerate(jobs):
        data: Future[JobData] | None = None
        if ship_data:
            data = days.get(_day_key(job))
            if data is None:
                data = days[_day_key(job)] = _ship(
                    client, job, f"day-{len(days)}-{run}", max_ship_bytes
                )
        futures.append(
            client.submit(
                _run_on_worker,
                job,
                data,
                key=f"job-{i}-{job.label}-{run}",
                retries=retries,
                pure=False,
            )
        )
    return futures


def _result(f: Future[JobSummary], job: BacktestJob) -> JobSummary:
    """Return a job's summary; a failure of the cluster (not of the job) as one line."""
    try:
        return f.result()
    except (BacktestInputError, ParameterError, ValueError, OSError):
        raise  # the job's own error (bad input), raised as a local run raises it
    except Exception as e:  # KilledWorker (3 workers died under it), lost scheduler, ...
        text = " ".join(str(e).split())
        raise ClusterError(
            f"job {job.label} ({' '.join(filter(None, (job.events, job.day)))}) failed on "
            "the cluster: "
            f"{type(e).__name__}{': ' + text if text else ''}"
        ) from None


def run_sweep_on_cluster(
    jobs: Sequence[BacktestJob],
    spec: ClusterSpec,
    on_done: Callable[[JobSummary], None] | None = None,
    *,
    ship_data: bool = False,
    retries: int = RETRIES,
    timeout: float = CONNECT_TIMEOUT_S,
    quiet: bool = False,
) -> list[JobSummary]:
    """Run ``jobs`` on the Dask cluster ``spec``; return the summaries in job order.

    ``on_done`` is called with each summary as its job ends (in the order they end). With
    ``ship_data`` each day is read here once and sent to the cluster (:func:`submit_jobs`).
    ``quiet`` silences Dask's own log lines in this process (the command line's errors are
    one line; the log would repeat them with tracebacks). A task that raises is run again up
    to ``retries`` times; a task whose worker dies is rescheduled on another worker by the
    scheduler.

    On ``KeyboardInterrupt`` (Ctrl+C) or any error the pending jobs are canceled, the client
    closed and a local cluster shut down before the exception propagates; a job that did not
    finish leaves no journal under its final name (its ``.part`` file is removed when this
    machine can see it).

    Raises
    ------
    ClusterError
        If the cluster cannot be used (see :func:`connect`), or a shipped day is too large.
    BacktestInputError
        If a job's input cannot be read (here with ``ship_data``, else on the worker).
    """
    distributed = _import_distributed()
    if quiet:
        _quiet_logs()
    client, cluster = connect(spec, timeout)
    futures: list[Future[JobSummary]] = []
    try:
        futures = submit_jobs(client, jobs, ship_data=ship_data, retries=retries)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[JobSummary | None] = [None] * len(jobs)
        for f in distributed.as_completed(futures):
            s = _result(f, jobs[index[f.key]])
            results[index[f.key]] = s
            if on_done is not None:
                on_done(s)
        return [r for r in results if r is not None]
    finally:
        if futures:
            with contextlib.suppress(Exception):  # closing anyway
                client.cancel(futures, force=True)  # type: ignore[no-untyped-call]
        client.close()  # type: ignore[no-untyped-call]
        if cluster is not None:
            cluster.close()
        _remove_parts(jobs)


def _remove_parts(jobs: Sequence[BacktestJob]) -> None:
    for job in jobs:
        path = Path(job.journal)
        for part in path.parent.glob(f"{glob.escape(path.name)}.*{PART}"):
            part.unlink(missing_ok=True)
