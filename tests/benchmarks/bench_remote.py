# SPDX-License-Identifier: MIT
"""Remote protocol benchmark: events per second across the wire and their delivery latency.

Run ``python -m tests.benchmarks.bench_remote [--rate 10000] [--seconds 5]`` or
``pytest -m bench tests/benchmarks/bench_remote.py``.

An engine in a child process (``--serve``) publishes order changes at ``--rate`` per second,
paced every millisecond, through its :class:`engine.remote.server.RemoteServer` over TLS on
127.0.0.1. This process attaches a :class:`engine.remote.client.RemoteEngineClient`; a consumer
thread drains it on every wake-up (as the GUI bridge does) and measures, for every event, the
delivery latency: the time it was drained minus its ``ts_event`` (the same host's wall clock).
The baseline, measured in the same run, is the embedded engine (same events, same pacing, same
consumer, no wire). Targets (issue #7): 10,000 events/s with p99 latency <= 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.client import EngineClient
from engine.clock import LiveClock
from engine.commands import Command, CommandAck, CommandResult
from engine.core import Engine
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import Event, OrderChanged, OrderView
from tests.benchmarks import judge

TARGET_RATE = 10_000
TARGET_P99_MS = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Burst(Command):
    """Publish ``rate`` order changes per second for ``seconds`` (benchmark only)."""

    rate: int
    seconds: float


class BurstSource:
    """Engine component answering :class:`Burst` with a paced stream of ``OrderChanged``."""

    name = "burst"

    def __init__(self) -> None:
        self.engine: Engine | None = None

    def start(self, engine: Engine) -> None:
        self.engine = engine

    async def stop(self) -> None:
        return None

    def state_events(self) -> list[Event]:
        return []

    def handle(self, command: Command) -> CommandResult | None:
        if not isinstance(command, Burst) or self.engine is None:
            return None
        asyncio.get_running_loop().create_task(self._run(command.rate, command.seconds))
        return CommandAck(command=command, ts_handled=self.engine.clock.now_ns())

    async def _run(self, rate: int, seconds: float) -> None:
        assert self.engine is not None
        clock, bus = self.engine.clock, self.engine.bus
        total = int(rate * seconds)
        t0 = clock.monotonic_ns()
        sent = 0
        while sent < total:
            due = min(total, int((clock.monotonic_ns() - t0) * rate / 1e9))
            while sent < due:
                sent += 1
                bus.publish(_order_event(sent, clock.now_ns()))
            await asyncio.sleep(0.001)


def _order_event(i: int, now: int) -> OrderChanged:
    view = OrderView(
        order_id=i,
        client_order_id=f"C{i}",
        orig_client_order_ids=(),
        venue_order_id=f"V{i}",
        strategy_id=20170101,
        symbol="ESZ6",
        side=Side.BUY if i % 2 else Side.SELL,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=1,
        px_ticks=24_000 + i % 7,
        status=OrdStatus.NEW,
        cum_qty_lots=0,
        leaves_qty_lots=1,
        avg_px_ticks=0.0,
        pending="",
        text="",
        ts_created=now,
        ts_sent=now,
        ts_acked=now,
        ts_last=now,
    )
    return OrderChanged(ts_event=now, order=view, change="ack")


def measure(client: EngineClient, rate: int, seconds: float) -> dict[str, float]:
    """Drain ``client`` on wake-ups during one burst; return rate and latency figures."""
    clock = LiveClock()
    woken = threading.Event()
    client.set_wakeup(woken.set)
    client.drain()
    lat_ns: list[int] = []
    total = int(rate * seconds)
    ack = client.send(Burst(rate=rate, seconds=seconds)).result(10)
    assert isinstance(ack, CommandAck), ack
    first = last = 0
    deadline = clock.monotonic_ns() + int((seconds + 20) * 1e9)
    while len(lat_ns) < total and clock.monotonic_ns() < deadline:
        woken.wait(0.5)
        woken.clear()
        batch = client.drain()
        now = clock.now_ns()
        for r in batch:
            if isinstance(r.event, OrderChanged):
                lat_ns.append(now - r.event.ts_event)
                if not first:
                    first = clock.monotonic_ns()
        last = clock.monotonic_ns()
    client.set_wakeup(None)
    lat_ns.sort()
    n = len(lat_ns)
    return {
        "events": n,
        "rate": n / max(1e-9, (last - first) / 1e9),
        "p50_ms": lat_ns[n // 2] / 1e6,
        "p99_ms": lat_ns[int(n * 0.99)] / 1e6,
        "max_ms": lat_ns[-1] / 1e6,
        "mean_ms": statistics.fmean(lat_ns) / 1e6,
    }


# ----------------------------------------------------------------------------- child: the engine


async def _serve(folder: Path) -> None:
    from engine.remote.server import RemoteServer
    from engine.remote.tls import server_context
    from engine.remote.tokens import TokenStore

    engine = Engine(LiveClock(), engine_id="bench")
    engine.add_component(BurstSource())
    ctx = server_context(folder / "e.crt", folder / "e.key")
    server = RemoteServer(engine, TokenStore(folder / "tokens.toml"), ssl_context=ctx)
    await server.open()
    sys.stdout.write(f"{server.port}\n")
    sys.stdout.flush()
    runner = asyncio.get_running_loop().create_task(engine.run())
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent goes
    engine.request_stop()
    await runner
    await server.close()


def run_remote(rate: int, seconds: float) -> dict[str, float]:
    """Measure over the wire against an engine in a child process."""
    from engine.remote.client import RemoteEngineClient
    from engine.remote.tls import PinStore, make_self_signed
    from engine.remote.tokens import TokenStore

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_self_signed(folder / "e.crt", folder / "e.key")
        token = TokenStore(folder / "tokens.toml").add("bench", "admin", LiveClock().now_ns())
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.benchmarks.bench_remote", "--serve", str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdin is not None
        port = int(child.stdout.readline())
        client = RemoteEngineClient(
            "127.0.0.1", port, token, tls=True, pins=PinStore(folder / "pins.json")
        )
        try:
            client.start()
            return measure(client, rate, seconds)
        finally:
            client.close()
            child.stdin.close()
            child.wait(20)


def run_embedded(rate: int, seconds: float) -> dict[str, float]:
    """Measure the embedded engine: the same stream without a wire (the baseline)."""
    from engine.embedded import EmbeddedEngineClient

    client = EmbeddedEngineClient(configure=lambda e: e.add_component(BurstSource()))
    client.start()
    try:
        return measure(client, rate, seconds)
    finally:
        client.close()


def _show(label: str, r: dict[str, float]) -> None:
    sys.stdout.write(
        f"{label:<9} {r['events']:>7.0f} events  {r['rate']:>8,.0f}/s  p50 {r['p50_ms']:6.2f} ms"
        f"  p99 {r['p99_ms']:6.2f} ms  max {r['max_ms']:6.2f} ms\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print figures, targets and the ratio to the embedded baseline."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=int, default=TARGET_RATE)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--doc", action="store_true", help="write docs/performance.md")
    opts = parser.parse_args(argv)
    if opts.serve is not None:
        from engine.fix.transport import install_uvloop

        install_uvloop()  # as ``qwconsole engine`` runs
        asyncio.run(_serve(opts.serve))
        return 0
    load0 = os.getloadavg()[0]
    base = run_embedded(opts.rate, opts.seconds)
    remote = run_remote(opts.rate, opts.seconds)
    _show("embedded", base)
    _show("remote", remote)
    if opts.json:
        sys.stdout.write(json.dumps({"embedded": base, "remote": remote}) + "\n")
    figures = figures_of(remote, base, opts.rate)
    load = (load0, os.getloadavg()[0])
    if opts.doc:
        judge.write_section(
            "remote",
            "Remote console: events over the WebSocket protocol",
            f"python -m tests.benchmarks.bench_remote --rate {opts.rate} --seconds "
            f"{opts.seconds:g} --doc",
            figures,
            load=load,
            runs=f"one run of {opts.seconds:g} s",
        )
    return judge.conclude(figures, load)


def figures_of(remote: dict[str, float], base: dict[str, float], rate: int) -> list[judge.Figure]:
    """Return the judged figures of a remote run against the embedded one of the same run."""
    ratio = remote["p99_ms"] / max(1e-9, base["p99_ms"])
    return [
        judge.Figure("remote console: events delivered", "ev/s", [remote["rate"]],
                     target=0.97 * min(rate, TARGET_RATE), lower_is_better=False,
                     note=f"{rate:,}/s offered"),
        judge.Figure("  event latency, p99", "ms", [remote["p99_ms"]], target=TARGET_P99_MS,
                     note=f"embedded in the same run: {base['p99_ms']:.2f} ms ({ratio:.1f}x)"),
        judge.Figure("  event latency, p50", "ms", [remote["p50_ms"]],
                     note=f"embedded: {base['p50_ms']:.2f} ms"),
    ]  # fmt: skip


@pytest.mark.bench
def test_bench_remote_meets_target() -> None:
    load0 = os.getloadavg()[0]
    remote = run_remote(TARGET_RATE, 3.0)
    _show("remote", remote)
    assert remote["events"] == TARGET_RATE * 3
    base = run_embedded(TARGET_RATE, 3.0)
    figures = figures_of(remote, base, TARGET_RATE)
    assert judge.conclude(figures, (load0, os.getloadavg()[0])) == 0, judge.misses(figures)


if __name__ == "__main__":
    raise SystemExit(main())
