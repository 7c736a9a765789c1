# SPDX-License-Identifier: MIT
"""Market-data relay: updates in, many subscribers out on loopback, added latency (issue 22).

Run ``python -m tests.benchmarks.bench_relay`` (``--quick`` for a short run; ``--rate`` and
``--subs`` change the load) or ``pytest -m bench tests/benchmarks/bench_relay.py``.

The relay runs in a child process (``--serve``: :class:`engine.relay.server.Relay` over TLS,
uvloop) with a synthetic source publishing ``rate`` L2 rows/s over 10 instruments, one batch
per millisecond, each row stamped with the wall time it is published. The subscribers run in
``--procs`` (4) other processes (``--subscribe``), each a set of
:class:`engine.relay.client.RelayClient` on one loop, and take every row's latency as the
wall time it is handed out minus its stamp: the relay's fan-out, TLS, loopback, and the
subscriber's own decoding and scheduling (all of it on the same 2 cores). Two phases in the
same run, each with a fresh relay and fresh subscriber processes: ``subs`` subscribers, then
the same plus one stalled subscriber (it subscribes and never reads again). The stalled
subscriber is a bare WebSocket link in this (parent) process, on its own loop: no subscriber
that keeps up shares a process or a loop with it, so whatever it costs them is the relay's.

* ``p99_added_latency_ms``: p99 over every row of every subscriber that kept up (no
  conflation), with the stalled subscriber present; target <= 2 ms (issue 22). The phase
  without it is the reference (``note``).
* ``rate_in_per_s``: rows per second the relay took in (target: the requested rate).
* ``delivered_fraction``: rows delivered to the subscribers that kept up over rows expected.

CPU is reported besides (the machine's cores are shared, so latency depends on what else
runs): the relay process's CPU per row taken in (µs, all 20 subscribers served) and the
subscriber processes' CPU per row delivered to one subscriber (µs). So is the machine's own
scheduling noise during each phase: how late a thread of this (otherwise idle) process wakes
from a 1 ms sleep, p99 (``wake_p99_ms``). A row is stamped when it is published, after the
relay's loop woke, so its path crosses one such wake-up (a subscriber's) and the relay's
flush, which a woken process can preempt: on a machine whose wake-up p99 is above the target
the target cannot be met whatever the relay does. Two more figures split the latency: how
long after a batch is published the relay has written it to every link that keeps up
(``written``: its flush runs right after the publish; the last of 20 TLS links waits for the
19 before it), and how long each phase's relay and subscriber processes waited for a CPU
(Linux schedstat, ms per second of the phase, summed over the subscriber processes). The
phases run a few seconds apart on a shared machine: compare their CPU waits and wake-up p99
before reading a difference between them as the stalled subscriber's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.embedded import new_event_loop
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.relay.protocol import RELAY_VERSION, Auth, Hello, Subscribe, encode
from engine.relay.server import Relay
from engine.remote.tls import PinStore, make_self_signed, server_context
from engine.remote.tokens import TokenStore
from tests.benchmarks import judge
from tests.unit.engine.relay.synth import l2_rows

ROOT = Path(__file__).resolve().parents[2]
SYMBOLS = [f"S{i:02d}" for i in range(10)]
TARGET_P99_MS = 2.0
BIN_NS = 10_000
BINS = 200_000


def _quantile(hist: np.ndarray, q: float) -> float:
    """Return the ``q`` quantile of a 10 µs-bin histogram, ms (upper edge of its bin)."""
    cum = np.cumsum(hist)
    return (int(np.searchsorted(cum, q * cum[-1])) + 1) * BIN_NS / 1e6


class _WakeProbe:
    """Sample how late a 1 ms sleep wakes on this machine, on a thread, until stopped."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            time.sleep(0.001)
            self.late.append(time.perf_counter() - t - 0.001)

    def stop(self) -> float:
        """Stop; return the p99 lateness, ms."""
        self._stop.set()
        self._thread.join()
        return float(np.quantile(self.late, 0.99)) * 1e3 if self.late else 0.0


def _cpu_wait_s() -> float:
    """Return the seconds this process's threads have waited for a CPU (Linux schedstat).

    0.0 where the kernel does not report it.
    """
    total = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def _warm_up() -> None:
    """Load the book kernels (numba cache) before anything is timed."""
    m = MarketData(SYMBOLS, MessageBus(), LiveClock(), n_levels=200)
    rows = l2_rows(500, len(SYMBOLS))
    for n in (1, 5, 50, 500):
        m.apply(rows[:n])


# ----------------------------------------------------------------------------- relay side


async def _serve(tmp: Path, rate: int, seconds: float, subs: int) -> None:
    _warm_up()
    clock = LiveClock()
    market = MarketData(SYMBOLS, MessageBus(), clock, n_levels=200)
    ctx = server_context(tmp / "r.crt", tmp / "r.key")
    relay = Relay(
        "bench",
        market,
        clock,
        TokenStore(tmp / "tokens.toml"),
        ssl_context=ctx,
        cache_rows=200_000,
        max_lag_rows=100_000,
    )
    await relay.open()
    print(relay.port, flush=True)
    deadline = time.monotonic() + 60
    while relay.subscribers < subs:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_relay: only {relay.subscribers} of {subs} subscribers came")
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # every subscriber has its snapshots
    template = l2_rows(200_000, len(SYMBOLS), seed=7)
    sent = 0
    # Publish to "written to every link that keeps up": the relay's flush is the first callback the
    # publish schedules (call_soon); one scheduled right after it runs once it is done.
    written_ns: list[int] = []
    loop = asyncio.get_running_loop()

    def _written(t0_ns: int) -> None:
        written_ns.append(time.time_ns() - t0_ns)

    wait0 = _cpu_wait_s()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    busy = 0.0
    while (elapsed := time.perf_counter() - t0) < seconds:
        due = int(elapsed * rate) - sent
        if due > 0:
            i = sent % (template.shape[0] - due) if due < template.shape[0] else 0
            rows = template[i : i + due].copy()
            rows["ts"] = stamp = time.time_ns()
            b0 = time.perf_counter()
            relay.publish(rows)
            busy += time.perf_counter() - b0
            loop.call_soon(_written, stamp)
            sent += due
        await asyncio.sleep(0.001)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    wait = _cpu_wait_s() - wait0
    await asyncio.sleep(1.0)  # let the last rows go out
    written = np.quantile(np.array(written_ns, np.float64) / 1e6, [0.5, 0.99]).tolist()
    print(
        json.dumps(
            {
                "sent": sent,
                "wall": wall,
                "rate_in": sent / wall,
                "publish_cpu_s": busy,
                "relay_cpu_s": cpu,
                "conflations": relay.conflations,
                "relay_cpu_wait_s": wait,
                "written_p50_ms": written[0],
                "written_p99_ms": written[1],
            }
        ),
        flush=True,
    )
    await asyncio.sleep(0.5)
    await relay.close()


# ----------------------------------------------------------------------------- subscribers


async def _subscribe(port: int, tmp: Path, n: int, first: int) -> None:
    """Run ``n`` subscribers (a child process) until stdin says stop; print their figures."""
    tok = (tmp / "token").read_text()
    _warm_up()
    pins = PinStore(tmp / f"pins-{os.getpid()}.json")
    # Latencies as a histogram of 10 µs bins (to 2 s): constant memory, no garbage.
    hists = [np.zeros(BINS, np.int64) for _ in range(n)]
    counts = [0] * n

    def collector(k: int) -> Any:
        hist = hists[k]

        def on_rows(rows: np.ndarray) -> None:
            now = time.time_ns()
            counts[k] += rows.shape[0]
            bins = np.minimum((now - rows["ts"]) // BIN_NS, BINS - 1)
            # Counted from the message's earliest bin: the cost is the same however late the
            # rows are (counting from bin 0 cost O(lateness): a subscriber that fell behind
            # was slowed further by its own measurement, turning a hiccup into a long tail).
            lo = int(bins.min())
            counts_of = np.bincount(bins - lo)
            hist[lo : lo + counts_of.shape[0]] += counts_of

        return on_rows

    index = {s: i for i, s in enumerate(SYMBOLS)}
    clients = [
        RelayClient(
            "127.0.0.1",
            port,
            tok,
            SYMBOLS,
            on_rows=collector(k),
            index=index,
            tls=True,
            pins=pins,
            name=f"sub{first + k}",
        )
        for k in range(n)
    ]
    for c in clients:
        await c.start(30)
    print("ready", flush=True)
    wait0 = _cpu_wait_s()
    cpu0 = time.process_time()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    cpu = time.process_time() - cpu0
    wait = _cpu_wait_s() - wait0
    for c in clients:
        await c.close()
    keep = [k for k, c in enumerate(clients) if c.conflated == 0]
    hist = np.sum([hists[k] for k in keep], axis=0) if keep else np.zeros(BINS, np.int64)
    nz = np.flatnonzero(hist)
    print(
        json.dumps(
            {
                "bins": nz.tolist(),
                "counts": hist[nz].tolist(),
                "keep_up": len(keep),
                "rows": sum(counts[k] for k in keep),
                "cpu_s": cpu,
                "cpu_wait_s": wait,
            }
        ),
        flush=True,
    )


def _start(
    me: list[str], tmp: Path, rate: int, seconds: float, subs: int, procs: int, stalled: bool
) -> tuple[subprocess.Popen[str], int, list[subprocess.Popen[str]]]:
    """Start the relay process, then the subscriber processes."""
    relay = subprocess.Popen(
        [
            *me,
            "--serve",
            str(tmp),
            "--rate",
            str(rate),
            "--seconds",
            str(seconds),
            "--subs",
            str(subs + stalled),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert relay.stdout is not None
    port = int(relay.stdout.readline())
    children = []
    per = [subs // procs + (1 if i < subs % procs else 0) for i in range(procs)]
    for i, n in enumerate(p for p in per if p):
        children.append(
            subprocess.Popen(
                [
                    *me,
                    "--subscribe",
                    str(port),
                    "--tmp",
                    str(tmp),
                    "--subs",
                    str(n),
                    "--first",
                    str(i * 100),
                ],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    return relay, port, children


async def _phase(
    tmp: Path, rate: int, seconds: float, subs: int, procs: int, stalled: bool
) -> dict[str, Any]:
    tok = (tmp / "token").read_text()
    me = [sys.executable, "-m", "tests.benchmarks.bench_relay"]
    relay, port, children = _start(me, tmp, rate, seconds, subs, procs, stalled)
    relay_out = relay.stdout
    assert relay_out is not None
    loop = asyncio.get_running_loop()
    for ch in children:
        assert ch.stdout is not None
        ready = await loop.run_in_executor(None, ch.stdout.readline)
        assert ready.strip() == "ready", ready
    stall = None
    if stalled:
        import ssl

        from websockets.asyncio.client import connect

        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
        sock.connect(("127.0.0.1", port))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        stall = await connect(
            f"wss://127.0.0.1:{port}/", sock=sock, ssl=ctx, server_hostname="localhost", max_queue=1
        )
        await stall.send(encode(Hello(version=RELAY_VERSION, client="stalled")))
        await stall.recv()
        await stall.send(encode(Auth(token=tok)))
        await stall.recv()
        await stall.send(encode(Subscribe(rid=1, symbols=SYMBOLS)))
    probe = _WakeProbe()
    summary = json.loads(await loop.run_in_executor(None, relay_out.readline))
    wake_p99 = probe.stop()
    results = []
    for ch in children:
        assert ch.stdin is not None
        assert ch.stdout is not None
        ch.stdin.write("stop\n")
        ch.stdin.flush()
    for ch in children:
        assert ch.stdout is not None
        results.append(json.loads(await loop.run_in_executor(None, ch.stdout.readline)))
        ch.wait(30)
        for f in (ch.stdin, ch.stdout):
            if f is not None:
                f.close()
    if stall is not None:
        stall.transport.abort()
        await stall.wait_closed()
        await asyncio.sleep(0)  # its keepalive task ends before the loop does
    relay.wait(30)
    relay_out.close()
    hist = np.zeros(BINS, np.int64)
    for r in results:
        np.add.at(hist, np.array(r["bins"], np.int64), np.array(r["counts"], np.int64))
    keep_up = sum(r["keep_up"] for r in results)
    rows_out = sum(r["rows"] for r in results)
    delivered = rows_out / max(1, summary["sent"] * keep_up)
    subs_cpu = sum(r["cpu_s"] for r in results)
    subs_wait = sum(r["cpu_wait_s"] for r in results)
    return {
        "wake_p99_ms": wake_p99,
        "relay_us_per_row": summary["relay_cpu_s"] / max(1, summary["sent"]) * 1e6,
        "subs_us_per_row": subs_cpu / max(1, rows_out) * 1e6,
        **summary,
        "subs_cpu_s": subs_cpu,
        "subs_cpu_wait_s": subs_wait,
        "p50_ms": _quantile(hist, 0.50),
        "p99_ms": _quantile(hist, 0.99),
        "max_ms": (int(np.flatnonzero(hist)[-1]) + 1) * BIN_NS / 1e6 if hist.any() else 0.0,
        "keep_up": keep_up,
        "delivered": delivered,
    }


def run(quick: bool, rate: int, subs: int, procs: int = 4) -> list[judge.Figure]:
    """Measure both phases (without, then with a stalled subscriber); return the figures."""
    seconds = 3.0 if quick else 8.0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        make_self_signed(tmp / "r.crt", tmp / "r.key")
        (tmp / "token").write_text(
            TokenStore(tmp / "tokens.toml").add("bench", "viewer", LiveClock().now_ns())
        )
        loop = new_event_loop()
        try:
            ref = loop.run_until_complete(_phase(tmp, rate, seconds, subs, procs, stalled=False))
            res = loop.run_until_complete(_phase(tmp, rate, seconds, subs, procs, stalled=True))
        finally:
            loop.close()
    for name, r in (("no stalled subscriber", ref), ("one stalled subscriber", res)):
        print(
            f"{name}: in {r['rate_in']:,.0f} rows/s, {r['keep_up']}/{subs} kept up, "
            f"delivered {r['delivered']:.3f}, p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} "
            f"ms, max {r['max_ms']:.1f} ms, relay conflations {r['conflations']}, publish "
            f"CPU {r['publish_cpu_s'] / r['wall'] * 100:.0f} % of a core, relay process "
            f"{r['relay_cpu_s'] / r['wall'] * 100:.0f} %, subscribers' process "
            f"{r['subs_cpu_s'] / r['wall'] * 100:.0f} %; machine wake-up p99 "
            f"{r['wake_p99_ms']:.2f} ms; CPU per row: relay "
            f"{r['relay_us_per_row']:.2f} µs in, subscribers {r['subs_us_per_row']:.2f} µs out; "
            f"relay wrote each batch to every link that keeps up {r['written_p50_ms']:.2f} ms "
            f"(p50) / {r['written_p99_ms']:.2f} ms (p99) after it was published; waited for a CPU: "
            f"relay {r['relay_cpu_wait_s'] / r['wall'] * 1e3:.0f} ms/s, subscribers "
            f"{r['subs_cpu_wait_s'] / r['wall'] * 1e3:.0f} ms/s"
        )
    return [
        judge.Figure(
            "p99_added_latency_ms",
            "ms",
            [res["p99_ms"]],
            target=TARGET_P99_MS,
            note=(
                f"{rate:,} rows/s in, {subs} TLS subscribers + 1 stalled; without the "
                f"stalled one: p99 {ref['p99_ms']:.2f} ms (ratio "
                f"{res['p99_ms'] / max(ref['p99_ms'], 1e-9):.2f}); p50 {res['p50_ms']:.2f} ms; "
                f"machine wake-up p99 {res['wake_p99_ms']:.2f} ms; relay wrote a batch to "
                f"every link that keeps up within {res['written_p99_ms']:.2f} ms (p99); "
                f"subscribers waited {res['subs_cpu_wait_s'] / res['wall'] * 1e3:.0f} ms/s for "
                f"a CPU; relay CPU {res['relay_us_per_row']:.2f} µs per row in, subscribers "
                f"{res['subs_us_per_row']:.2f} µs per row out"
            ),
        ),
        judge.Figure(
            "rate_in_per_s",
            "rows/s",
            [res["rate_in"]],
            target=rate * 0.95,
            lower_is_better=False,
            note=f"requested {rate:,}/s",
        ),
        judge.Figure(
            "delivered_fraction",
            "",
            [res["delivered"]],
            target=0.999,
            lower_is_better=False,
            note=(
                f"{res['keep_up']}/{subs} subscribers kept up (with the stalled one); "
                f"{ref['keep_up']}/{subs} without"
            ),
        ),
    ]


@pytest.mark.bench
def test_bench_relay() -> None:
    """The quick run at the issue's load."""
    load0 = os.getloadavg()[0]
    figures = run(quick=True, rate=100_000, subs=20)
    assert judge.conclude(figures, (load0, os.getloadavg()[0])) == 0, judge.misses(figures)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print and judge it."""
    ap = argparse.ArgumentParser(prog="bench_relay")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md")
    ap.add_argument("--rate", type=int, default=100_000, help="rows/s into the relay")
    ap.add_argument("--subs", type=int, default=20, help="subscribers that keep up")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the relay side
    ap.add_argument("--procs", type=int, default=4, help="processes the subscribers run in")
    ap.add_argument("--seconds", type=float, default=3.0, help=argparse.SUPPRESS)
    ap.add_argument("--subscribe", type=int, help=argparse.SUPPRESS)  # a subscriber process
    ap.add_argument("--tmp", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.subscribe is not None:
        loop = new_event_loop()
        try:
            loop.run_until_complete(_subscribe(args.subscribe, args.tmp, args.subs, args.first))
        finally:
            loop.close()
        return 0
    if args.serve is not None:
        loop = new_event_loop()
        try:
            loop.run_until_complete(_serve(args.serve, args.rate, args.seconds, args.subs))
        finally:
            loop.close()
        return 0
    load0 = os.getloadavg()[0]
    figures = run(args.quick, args.rate, args.subs, args.procs)
    load = (load0, os.getloadavg()[0])
    if args.doc:
        judge.write_section(
            "relay",
            "Market-data relay: 20 subscribers over TLS on loopback",
            f"python -m tests.benchmarks.bench_relay{' --quick' if args.quick else ''} --doc",
            figures,
            load=load,
            runs="two phases in one run: all keeping up, then one stalled",
        )
    return judge.conclude(figures, load)


if __name__ == "__main__":
    raise SystemExit(main())
