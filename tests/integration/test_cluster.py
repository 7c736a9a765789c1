# SPDX-License-Identifier: MIT
"""Backtest sweeps on a Dask cluster, with real processes (``qwconsole backtest --cluster``).

A sweep on ``--cluster local:2`` gives the serial run's summaries and journals byte for byte;
a worker killed with SIGKILL mid-sweep loses no job; days shipped from the driver need no
file on the workers; Ctrl+C cancels and leaves no half-written journal; a scheduler that is
not there and a missing ``distributed`` are one-line errors.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.cluster import (
    PART,
    ClusterError,
    ClusterSpec,
    connect,
    parse_cluster,
    run_sweep_on_cluster,
    submit_jobs,
)
from engine.backtest.runner import (
    BacktestInputError,
    BacktestJob,
    JobSummary,
    read_job_data,
    run_sweep,
    sweep_jobs,
)
from engine.backtest.synthetic import random_walk_l2

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GRID: list[dict[str, object]] = [{"half_spread_ticks": h} for h in (1, 2, 3)]


def _qw(*args: str) -> list[str]:
    return [sys.executable, "-m", "app", "backtest", *args]


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two small days of a random walk (different seeds)."""
    d = tmp_path_factory.mktemp("cluster")
    out = []
    for seed in (11, 12):
        p = d / f"day{seed}.npy"
        np.save(p, random_walk_l2(30_000, seed=seed))
        out.append(p)
    return out


def _jobs(
    days: list[Path], out: Path, grid: list[dict[str, object]] | None = None
) -> list[BacktestJob]:
    base = BacktestJob(events=str(days[0]), journal="", order_ns=200_000, response_ns=200_000)
    return sweep_jobs(base, [str(d) for d in days], GRID if grid is None else grid, out)


def _serial(jobs: list[BacktestJob]) -> tuple[list[JobSummary], dict[str, bytes]]:
    """Run ``jobs`` serially; return the summaries and the journals' bytes (then removed)."""
    results = run_sweep(jobs, mode="serial")
    journals = {j.journal: Path(j.journal).read_bytes() for j in jobs}
    for j in jobs:
        Path(j.journal).unlink()
    return results, journals


def test_parse_cluster() -> None:
    assert parse_cluster("local:2") == ClusterSpec(workers=2)
    assert parse_cluster("tcp://10.0.0.5:8786") == ClusterSpec(address="tcp://10.0.0.5:8786")
    for bad in ("local:0", "local:x", "10.0.0.5:8786", "http://x:1", ""):
        with pytest.raises(ValueError, match="--cluster"):
            parse_cluster(bad)


def test_sweep_on_local_2_equals_the_serial_run(days: list[Path], tmp_path: Path) -> None:
    jobs = _jobs(days, tmp_path)
    serial, journals = _serial(jobs)
    seen: list[str] = []
    on_cluster = run_sweep_on_cluster(
        jobs, ClusterSpec(workers=2), on_done=lambda s: seen.append(s.label)
    )
    assert on_cluster == serial  # every field: counts, P&L, journal path and hash
    assert sorted(seen) == sorted(j.label for j in jobs)  # each once, as it ended
    for path, data in journals.items():
        assert Path(path).read_bytes() == data
    assert not list(tmp_path.glob(f"*{PART}"))


def test_cli_sweep_on_local_2_prints_what_the_pool_prints(days: list[Path], tmp_path: Path) -> None:
    """The command's summaries and table equal the ProcessPoolExecutor run's (same out dir)."""
    out = tmp_path / "sweep"
    common = [
        *map(str, days),
        "--sweep",
        "half_spread_ticks=1,2",
        "--out-dir",
        str(out),
        "--quiet",
        "--order-ns",
        "200000",
    ]
    outputs = {}
    journals = {}
    for mode in (["--workers", "2"], ["--cluster", "local:2"]):
        proc = subprocess.run(
            _qw(*common, *mode), capture_output=True, text=True, check=False, cwd=ROOT, timeout=180
        )
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        # summaries as the jobs end (any order), the table in sweep order; not the timing
        outputs[mode[0]] = (sorted(lines[:4]), lines[4:-1])
        journals[mode[0]] = {p.name: p.read_bytes() for p in sorted(out.glob("*.qwj"))}
        for p in out.glob("*.qwj"):
            p.unlink()
    assert outputs["--cluster"] == outputs["--workers"]
    assert len(journals["--cluster"]) == 4
    assert journals["--cluster"] == journals["--workers"]


def test_worker_killed_mid_sweep_loses_no_job(days: list[Path], tmp_path: Path) -> None:
    """SIGKILL a worker while it runs a job of ``qwconsole backtest --cluster tcp://...``."""
    grid: list[dict[str, object]] = [{"half_spread_ticks": h} for h in range(1, 7)]
    jobs = _jobs(days, tmp_path, grid)  # 12 jobs
    serial, journals = _serial(jobs)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
    )
    client = distributed.Client(cluster)
    try:
        proc = subprocess.Popen(
            _qw(
                *map(str, days),
                "--sweep",
                "half_spread_ticks=1,2,3,4,5,6",
                "--out-dir",
                str(tmp_path),
                "--quiet",
                "--order-ns",
                "200000",
                "--response-ns",
                "200000",
                "--cluster",
                cluster.scheduler_address,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()  # one job done: the workers are warm and busy
        assert first.startswith("d0"), proc.stderr.read() if proc.stderr else ""
        busy = {w: ks for w, ks in client.processing().items() if ks}
        assert busy, "no job left running to kill a worker under"
        pids = client.run(os.getpid)
        victim = next(iter(busy))
        os.kill(pids[victim], signal.SIGKILL)
        rest, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        lines = [first.rstrip("\n"), *rest.splitlines()]
        assert sorted(ln.split(":")[0].split()[0] for ln in lines[:12]) == [j.label for j in jobs]
        assert client.run(os.getpid).get(victim) != pids[victim]  # the victim really died
    finally:
        client.close()
        cluster.close()
    for path, data in journals.items():
        assert Path(path).read_bytes() == data, path
    assert not list(tmp_path.glob(f"*{PART}"))
    # the table equals the serial run's figures
    table = {ln.split()[0]: ln.split()[3:6] for ln in lines[13:25]}
    for s in serial:
        assert table[s.label] == [f"{s.fills:,}", str(s.position), f"{s.pnl_ticks:+,.1f}"]


def test_shipped_days_need_no_file_on_the_workers(days: list[Path], tmp_path: Path) -> None:
    """With ship_data the days are read here: the workers run them after the files are gone."""
    src = [tmp_path / d.name for d in days]
    for d, s in zip(days, src, strict=True):
        s.write_bytes(d.read_bytes())
    jobs = _jobs(src, tmp_path / "out")
    serial, journals = _serial(jobs)
    client, cluster = connect(ClusterSpec(workers=2))
    try:
        # what is shipped is the day's arrays (32 bytes an event: no receive times in .npy)
        for j in jobs:
            assert read_job_data(j).nbytes == 32 * np.load(j.events).shape[0]
        with pytest.raises(ClusterError, match=r"MiB, more than 0\.0 MiB to send with a task"):
            submit_jobs(client, jobs, ship_data=True, max_ship_bytes=1000)
        futures = submit_jobs(client, jobs, ship_data=True, retries=0)
        for s in src:
            s.rename(s.with_suffix(".moved"))
        shipped = client.gather(futures)  # type: ignore[no-untyped-call]
        assert shipped == serial
        # without shipping, the workers read the path, and say it is not there
        bad = submit_jobs(client, jobs[:1], ship_data=False, retries=0)
        with pytest.raises(BacktestInputError, match="no such file"):
            client.gather(bad)  # type: ignore[no-untyped-call]
    finally:
        client.close()  # type: ignore[no-untyped-call]
        assert cluster is not None
        cluster.close()
    for path, data in journals.items():
        assert Path(path).read_bytes() == data


def test_ctrl_c_cancels_the_sweep_and_leaves_no_half_journal(tmp_path: Path) -> None:
    src = tmp_path / "long.npy"
    np.save(src, random_walk_l2(150_000, seed=5))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _qw(
            str(src),
            "--generic",
            "--strategy",
            "market-maker",
            "--sweep",
            "half_spread_ticks=1,2,3,4,5,6,7,8",
            "--out-dir",
            str(out),
            "--quiet",
            "--cluster",
            "local:2",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 120
    while not list(out.glob(f"*{PART}")) and time.monotonic() < deadline:
        time.sleep(0.05)  # a job is being written on a worker
    assert list(out.glob(f"*{PART}")), "no job started"
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl+C: the command and its cluster's workers
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines() == ["qwconsole backtest: interrupted"]  # no tracebacks
    done = [ln.split(" ")[0] for ln in stdout.splitlines() if ln.startswith("d0")]
    assert len(done) < 8  # canceled before the end
    assert not list(out.glob(f"*{PART}"))
    # every journal left is whole: what the serial run writes for that job
    finished = sorted(p.stem for p in out.glob("*.qwj"))
    assert set(done) <= set(finished)  # (a job may end between its rename and the cancel)
    base = BacktestJob(events=str(src), journal="", strategy="market-maker", generic=True)
    jobs = {
        j.label: j
        for j in sweep_jobs(
            base, [str(src)], [{"half_spread_ticks": h} for h in range(1, 9)], tmp_path / "ref"
        )
    }
    for label in finished:
        run_sweep([jobs[label]], mode="serial")
        assert (out / f"{label}.qwj").read_bytes() == Path(jobs[label].journal).read_bytes()


def test_unreachable_scheduler_is_one_line_and_non_zero(days: list[Path], tmp_path: Path) -> None:
    t0 = time.monotonic()
    proc = subprocess.run(
        _qw(
            str(days[0]),
            "--sweep",
            "half_spread_ticks=1,2",
            "--out-dir",
            str(tmp_path),
            "--cluster",
            "tcp://127.0.0.1:9",
            "--cluster-timeout",
            "2",
            "--quiet",
        ),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1, proc.stderr
    assert err[0].startswith(
        "qwconsole backtest: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9: "
    )
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - t0 < 30  # the timeout was kept
    assert not list(tmp_path.glob("*.qwj"))


def test_missing_distributed_names_the_extra(days: list[Path], tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['distributed'] = None  # as if not installed\n"
        "from engine.backtest.cli import main\n"
        f"sys.exit(main([{str(days[0])!r}, '--sweep', 'half_spread_ticks=1,2', '--out-dir', "
        f"{str(tmp_path)!r}, '--cluster', 'local:2']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "install the 'cluster' extra" in proc.stderr


def test_tick_store_days_by_path_and_shipped_equal_serial(tmp_path: Path) -> None:
    """The shared Binance spot day (two store days): read by the workers, and shipped."""
    from engine.tickstore.binance import import_binance
    from tests.conftest import SHARED

    src = SHARED / "data" / "binance_spot_btcusdt_2024-08-08" / "btcusdt_20240808.gz"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    store = tmp_path / "spot.h5"
    import_binance([src], store, "BTCUSDT", tick_size="0.01", lot_size="0.00000001")
    base = BacktestJob(events=str(store), journal="", symbol="BTCUSDT", recorded_latency=True)
    grid: list[dict[str, object]] = [{"half_spread_ticks": h} for h in (1, 5)]
    jobs = sweep_jobs(base, ["20240808", "20240809"], grid, tmp_path / "out")
    serial, journals = _serial(jobs)
    assert {s.day for s in serial} == {"20240808", "20240809"}
    for ship in (False, True):
        assert run_sweep_on_cluster(jobs, ClusterSpec(workers=2), ship_data=ship) == serial
        for path, data in journals.items():
            assert Path(path).read_bytes() == data
            Path(path).unlink()


def test_bad_input_on_the_cluster_is_one_line_and_exit_2(days: list[Path], tmp_path: Path) -> None:
    """A job's own error comes back from the worker (after its retries) as on the local path."""
    proc = subprocess.run(
        _qw(
            str(tmp_path / "missing.npy"),
            str(days[0]),
            "--out-dir",
            str(tmp_path / "out"),
            "--quiet",
            "--cluster",
            "local:2",
        ),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"qwconsole backtest: error: {tmp_path / 'missing.npy'}: no such file"
    ]
    assert not list((tmp_path / "out").glob(f"*{PART}"))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--cluster", "local:2"], "--cluster runs sweeps"),
        (["{day}", "--cluster", "local:2", "--workers", "2"], "--workers sizes the local pool"),
        (["{day}", "--ship-data"], "--ship-data sends days to a Dask cluster"),
        (["{day}", "--cluster", "sched:8786"], "give a scheduler address (tcp://HOST:PORT)"),
    ],
)
def test_cluster_usage_errors(days: list[Path], args: list[str], expected: str) -> None:
    argv = [str(days[0]), *(a.replace("{day}", str(days[1])) for a in args)]
    proc = subprocess.run(
        _qw(*argv, "--quiet"), capture_output=True, text=True, check=False, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert expected in proc.stderr
