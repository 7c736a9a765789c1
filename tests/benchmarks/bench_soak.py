# SPDX-License-Identifier: MIT
"""Soak benchmark (issue 16): a trading day of orders through the engine into the simulator.

Run ``python -m tests.benchmarks.bench_soak [--orders 1000000]`` (the soak) or
``python -m tests.benchmarks.bench_soak --rates 1000,10000,50000,100000`` (fixed offered rates),
or ``pytest -m bench -s tests/benchmarks/bench_soak.py`` (a short soak and a short fixed-rate run).

The engine is the demo's, built as ``qwconsole engine --config`` builds it (:class:`SimProcess`
writes the configuration): the market maker quotes three futures through the order manager,
risk checks, a FIX 4.4 initiator (ESZ6, NQZ6, and everyone's market data) and an OUCH 5.0
account (CLF7) over real loopback sockets to ``qwconsole sim`` in its own process, with the
journal and the sessions' file stores (behind the journal's write barrier) as a console runs
it. ``--venue inprocess`` runs the demo's simulator on the engine's loop instead
(:func:`engine.demo.build_demo`), as the console's demo does. A driver on the engine loop plays an
order-entry client of the engine: it sends through the order router (risk, order manager, FIX
venue, socket) and reads the answers from the bus, exactly as the venue's reports come back.

* **Soak** (``--orders N``): half the orders rest away from the touch and are canceled once
  acknowledged, half are IOC at the touch (filled by the market maker or the simulator's flow,
  or canceled); at most ``--window`` requests are unanswered at a time. Per decile of the run:
  orders/s, p50/p99/max acknowledgement latency (send to the first venue report) and RSS; then
  the restart (journal recovery and the engine's set-up, in a fresh process) on the journal the
  run produced: its time and peak RSS. A PNG plot of latency and RSS over the run.
* **Fixed rate** (``--rates``): create + cancel at an offered rate of messages per second
  (a NewOrderSingle and an OrderCancelRequest each count), paced every millisecond; p50, p95
  and p99 round trip (request to its answer), and the highest rate held with p95 <= 1 ms.

The engine runs in this process on one asyncio loop (the journal writes on its own thread);
the venue is another process, as an exchange is, so the figures are the engine's. With
``--venue inprocess`` they include the simulator's work on the same loop (about half of it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from engine.clock import LiveClock
from engine.commands import Command, CommandResult
from engine.core import Engine
from engine.desk import TradingDesk
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import Event, OrderChanged, OrderFilled
from engine.oms.order import Order
from engine.oms.risk import RiskLimits
from engine.venues.fix.adapter import FixVenue
from engine.venues.ouch.session import OuchSession
from tests.benchmarks import judge
from tests.integration.headless_files import INSTRUMENT, LISTINGS

ENGINE_ID = "soak"
#: Engine-wide limits of the soak: the demo's, without the ones a soak would hit on purpose.
SOAK_LIMITS = RiskLimits(max_order_qty_lots=50, price_band_pct=5.0)
#: Latency of an order refused before it left (no answer expected).
REFUSED = -2
#: Ticks away from the reference price that a resting order is placed.
REST_OFFSET = 20
ROOT = Path(__file__).resolve().parents[2]

#: The venue process's acceptor session (``qwconsole sim --cfg``; ``--port`` picks the port).
SIM_CFG = """\
[DEFAULT]
ConnectionType=acceptor
SocketAcceptPort=0
NonStopSession=Y
ResetOnLogon=Y

[SESSION]
BeginString=FIX.4.4
SenderCompID=SIM
TargetCompID=SOAK
"""

#: The engine's initiator session to it.
ENGINE_SESSIONS = """\
[DEFAULT]
ConnectionType=initiator
SocketConnectHost=127.0.0.1
SocketConnectPort={port}
NonStopSession=Y
HeartBtInt=30
ReconnectInterval=1

[SESSION]
BeginString=FIX.4.4
SenderCompID=SOAK
TargetCompID=SIM
"""

#: The engine: the demo's instruments (ESZ6, NQZ6 over FIX, CLF7 over OUCH), venues, market
#: maker, journal and stores.
ENGINE_TOML = (
    """\
[engine]
id = "soak"

[files]
journal_dir = "journal"
store_dir = "fix"

[sessions]
file = "sessions.cfg"
"""
    + "".join(
        INSTRUMENT.format(
            symbol=s, tick=LISTINGS[s][0], multiplier=LISTINGS[s][1], session="FIX.4.4:SOAK->SIM"
        )
        for s in ("ESZ6", "NQZ6")
    )
    + INSTRUMENT.format(
        symbol="CLF7", tick=LISTINGS["CLF7"][0], multiplier=LISTINGS["CLF7"][1], session=""
    ).replace('session = ""', 'venue = "SIMOUCH"')
    + """
[[ouch]]
name = "SIMOUCH"
host = "127.0.0.1"
port = {ouch_port}
username = "QWC1"
password = "qwdemo"
firm = "QWCN"

[[strategies]]
id = 20170101
class = "MarketMaker"
symbols = ["ESZ6", "NQZ6", "CLF7"]
[strategies.parameters]
qty_lots = 1
half_spread_ticks = 1
skew_ticks_per_lot = 0.5
max_position_lots = 10
"""
)
#: Targets of issue 16 (this 2-core machine).
TARGET_RUN_S = 600.0
TARGET_P99_RATIO = 1.5
TARGET_RSS_GROWTH_MB = 100.0
TARGET_RESTART_S = 10.0
TARGET_RESTART_PEAK_MB = 1024.0
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    """Return this process's resident set size, MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 1e6


def peak_rss_mb() -> float:
    """Return this process's peak resident set size (VmHWM), MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e3
    return 0.0


@dataclass
class Run:
    """What a driver measured; latencies in ns, ``-1`` where no answer came."""

    n: int
    t_send: npt.NDArray[np.int64]
    ack_ns: npt.NDArray[np.int64]
    cancel_ns: npt.NDArray[np.int64]
    rss: list[tuple[int, float, float]] = field(default_factory=list)  # (orders, s, MB)
    refused: int = 0
    rejected: int = 0  # first answer a reject (the venue's, or the session's: not logged on)
    filled: int = 0
    t_start: int = 0
    t_end: int = 0
    venue: str = "process"  # the simulator in its own process, or "inprocess"


class SoakDriver:
    """Engine component sending the soak's orders from the engine loop (see the module doc).

    ``rate_msgs`` > 0 paces create + cancel at that many messages per second (every order is
    a resting order then); else the soak mix, at most ``window`` requests unanswered.
    """

    name = "soak"

    def __init__(
        self, desk: TradingDesk, n: int, *, window: int = 64, rate_msgs: float = 0.0
    ) -> None:
        self.desk = desk
        self.n = n
        self.window = window
        self.rate_msgs = rate_msgs
        self.run = Run(
            n=n,
            t_send=np.full(n, 0, np.int64),  # written now: its pages are not growth of the run
            ack_ns=np.full(n, -1, np.int64),
            cancel_ns=np.full(n, -1, np.int64),
        )
        self.done = asyncio.Event()
        self.failed = ""
        self._engine: Engine | None = None
        self._task: asyncio.Task[None] | None = None
        self._new: dict[int, tuple[int, Order | None]] = {}  # order id -> (index, resting order)
        self._cancel: dict[int, int] = {}  # order id -> index, cancel unanswered
        self._room = asyncio.Event()
        self._symbols = [i.symbol for i, _ in desk.instruments]
        self._mono = time.monotonic_ns

    # ------------------------------------------------------------------ Component
    def start(self, engine: Engine) -> None:
        self._engine = engine
        engine.bus.subscribe(OrderChanged, self._on_order)
        engine.bus.subscribe(OrderFilled, self._on_fill)
        self._task = asyncio.get_running_loop().create_task(self._main(), name="soak")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def handle(self, command: Command) -> CommandResult | None:
        return None

    def state_events(self) -> list[Event]:
        return []

    # ------------------------------------------------------------------ driving
    async def _main(self) -> None:
        try:
            await self._wait_ready()
            if self.rate_msgs > 0:
                await self._paced()
            else:
                await self._soak()
            async with asyncio.timeout(600):  # an offered rate above capacity leaves a backlog
                while self._new or self._cancel:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
        except Exception as e:  # the run's report says so; the engine stops
            self.failed = f"{type(e).__name__}: {e}"
        finally:
            self.run.t_end = self._mono()
            self.done.set()

    async def _wait_ready(self) -> None:
        market = self.desk.market
        assert market is not None
        venue = next(iter(self.desk.router.managers.values())).venue
        assert isinstance(venue, FixVenue)
        assert self._engine is not None
        async with asyncio.timeout(60):
            while not (  # noqa: ASYNC110  (polled: no event says the market is seeded)
                venue.session is not None
                and venue.session.is_logged_on
                and all(market.reference_px(s) for s in self._symbols)
            ):
                await asyncio.sleep(0.05)
            for c in self._engine.components:  # the OUCH instrument's account
                if isinstance(c, OuchSession):
                    await c.wait_ready(60)
        await asyncio.sleep(0.5)  # the market maker's first quotes

    async def _soak(self) -> None:
        n, run = self.n, self.run
        step = max(1, n // 100)
        run.t_start = t0 = self._mono()
        run.rss.append((0, 0.0, rss_mb()))
        i = 0
        while i < n:
            while i < n and len(self._new) + len(self._cancel) < self.window:
                self._send(i, resting=i % 2 == 0)
                i += 1
                if i % step == 0:
                    run.rss.append((i, (self._mono() - t0) / 1e9, rss_mb()))
            self._room.clear()
            await self._room.wait()

    async def _paced(self) -> None:
        n, run = self.n, self.run
        per_ns = self.rate_msgs / 2 / 1e9  # orders per ns: each is a create and a cancel
        run.t_start = t0 = self._mono()
        i = 0
        while i < n:
            due = min(n, int((self._mono() - t0) * per_ns) + 1)
            while i < due:
                self._send(i, resting=True)
                i += 1
            await asyncio.sleep(0.001)

    def _send(self, i: int, *, resting: bool) -> None:
        market = self.desk.market
        assert market is not None
        symbol = self._symbols[i % len(self._symbols)]
        buy = (i // 2) % 2 == 0
        book = market.book(symbol)
        assert book is not None
        bid, ask = book.best_bid(), book.best_ask()
        ref = market.reference_px(symbol) or 1
        if resting:
            px = (
                (bid[0] if bid else ref) - REST_OFFSET
                if buy
                else (ask[0] if ask else ref) + REST_OFFSET
            )
            tif = TimeInForce.DAY
        else:  # at the touch: it trades with what rests there, the rest is canceled
            px, tif = (ask[0] if ask else ref) if buy else (bid[0] if bid else ref), TimeInForce.IOC
        self.run.t_send[i] = self._mono()
        order = self.desk.router.send(
            symbol=symbol,
            strategy_id=0,
            side=Side.BUY if buy else Side.SELL,
            qty_lots=1,
            px_ticks=max(1, px),
            ord_type=OrdType.LIMIT,
            time_in_force=tif,
        )
        if order.is_terminal:  # refused before it left (risk)
            self.run.refused += 1
            self.run.ack_ns[i] = REFUSED
            return
        self._new[order.order_id] = (i, order if resting else None)

    def _on_order(self, event: OrderChanged) -> None:
        view = event.order
        oid = view.order_id
        if oid in self._new and view.status is not OrdStatus.PENDING_NEW:
            i, order = self._new.pop(oid)
            self.run.ack_ns[i] = self._mono() - self.run.t_send[i]
            if order is not None and view.status is OrdStatus.NEW:
                self._cancel[oid] = i
                asyncio.get_running_loop().call_soon(self._send_cancel, order, i)
            else:
                self._room.set()
            if view.status is OrdStatus.REJECTED:
                self.run.rejected += 1
        elif oid in self._cancel and not view.pending:  # canceled, or the cancel answered no
            i = self._cancel.pop(oid)
            self.run.cancel_ns[i] = self._mono() - self.run.t_send[i]
            self._room.set()

    def _on_fill(self, fill: OrderFilled) -> None:
        if fill.strategy_id == 0:
            self.run.filled += 1

    def _send_cancel(self, order: Order, i: int) -> None:
        self.run.t_send[i] = self._mono()  # from here on: the cancel's send time
        if not self.desk.router.manager(order.symbol).cancel(order):
            self._cancel.pop(order.order_id, None)
            self._room.set()


# ----------------------------------------------------------------------------- one engine run


def _desk(engine: Engine, state: Path) -> TradingDesk:
    """Build the soak's engine in ``state``: the demo's, or from ``state/engine.toml``.

    With an ``engine.toml`` there (written by :class:`SimProcess`) the engine is what
    ``qwconsole engine --config`` builds against a venue in another process; else the demo
    with its simulator in this process (``--venue inprocess``).
    """
    toml = state / "engine.toml"
    if toml.is_file():
        from engine.config.reader import load_config
        from engine.headless import build_from_config

        desk = build_from_config(engine, load_config(toml))
    else:
        from engine.demo import build_demo

        desk = build_demo(
            engine, transport="fix", journal_dir=state / "journal", store_dir=state / "fix"
        )
    desk.router.risk.set_limits(SOAK_LIMITS)
    # The driver is an order-entry client of another account: its IOC orders may trade with
    # the market maker's quotes (self-trade prevention keeps groups apart, not accounts').
    desk.router.stp.set_strategy(0, None, group="soak client")
    return desk


class SimProcess:
    """``qwconsole sim`` in its own process (FIX and OUCH), and the engine's files for it.

    The venue of the default soak: as in production, the exchange is not in the engine's
    process, so the figures are the engine's (its loop no longer runs the simulator's
    matching, participants and market data). The engine's configuration (``engine.toml``,
    ``sessions.cfg`` in ``state``) lists the demo's three instruments, ESZ6 and NQZ6 over FIX
    and CLF7 over the OUCH account, with the demo's market maker on all three, the journal in
    ``journal`` and the stores in ``fix``: what the in-process demo has.
    """

    def __init__(self, state: Path) -> None:
        self.state = state
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> SimProcess:
        state = self.state
        (state / "sim").mkdir(parents=True, exist_ok=True)
        (state / "sim" / "sim.cfg").write_text(SIM_CFG)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "sim", "--cfg", str(state / "sim" / "sim.cfg"),
             "--port", "0", "--ouch-port", "0", "--ouch-account", "QWC1:qwdemo",
             "--ouch-store", str(state / "sim" / "ouch")],
            cwd=state / "sim", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        assert self.proc.stdout is not None
        lines = [self.proc.stdout.readline() for _ in range(2)]
        ports = [re.search(r"listening on [\d.]+:(\d+)", line) for line in lines]
        if None in ports:
            self.__exit__()
            raise RuntimeError(f"qwconsole sim did not start: {lines}")
        fix_port, ouch_port = (int(m.group(1)) for m in ports if m is not None)
        (state / "sessions.cfg").write_text(ENGINE_SESSIONS.format(port=fix_port))
        (state / "engine.toml").write_text(ENGINE_TOML.format(ouch_port=ouch_port))
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


async def _drive(state: Path, n: int, window: int, rate_msgs: float) -> Run:
    engine = Engine(LiveClock(), engine_id=ENGINE_ID)
    desk = _desk(engine, state)
    driver = SoakDriver(desk, n, window=window, rate_msgs=rate_msgs)
    engine.add_component(driver)
    runner = asyncio.get_running_loop().create_task(engine.run())
    try:
        await asyncio.wait_for(driver.done.wait(), timeout=3600)
    finally:
        engine.request_stop()
        await runner
    if driver.failed:
        raise RuntimeError(f"soak driver failed: {driver.failed}")
    return driver.run


def drive(
    state: Path, n: int, *, window: int = 64, rate_msgs: float = 0.0, venue: str = "process"
) -> Run:
    """Run the engine with a driver of ``n`` orders; return what it measured.

    ``venue`` ``"process"``: the simulator in its own process (:class:`SimProcess`);
    ``"inprocess"``: the demo's, on the engine's loop.
    """
    from engine.warmup import warm_up

    warm_up()
    state.mkdir(parents=True, exist_ok=True)
    if venue == "inprocess":
        run = asyncio.run(_drive(state, n, window, rate_msgs))
    else:
        with SimProcess(state):
            run = asyncio.run(_drive(state, n, window, rate_msgs))
    run.venue = venue
    return run


# ----------------------------------------------------------------------------- restart


async def _restart(state: Path) -> dict[str, float]:
    engine = Engine(LiveClock(), engine_id=ENGINE_ID)
    t0 = time.perf_counter()
    desk = _desk(engine, state)
    elapsed = time.perf_counter() - t0
    restored = sum(len(m.orders) + len(m.archive) for m in desk.router.managers.values())
    engine.abandon("restart measured", failed=False)
    return {"restart_s": elapsed, "restart_peak_mb": peak_rss_mb(), "restored": restored}


def restart_child(state: Path) -> dict[str, float]:
    """Measure, in a fresh process, the engine's set-up on the journal in ``state``."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.bench_soak", "--restart-only", str(state)],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# ----------------------------------------------------------------------------- figures


def _ms(a: npt.NDArray[np.int64], q: float) -> float:
    return float(np.percentile(a, q)) / 1e6 if a.size else float("nan")


def deciles(run: Run) -> list[dict[str, float]]:
    """Return per decile of the orders: orders/s, ack latency p50/p99/max (ms), RSS at its end."""
    out = []
    n = run.n
    rss = np.array(run.rss) if run.rss else np.zeros((1, 3))
    for d in range(10):
        a, b = d * n // 10, (d + 1) * n // 10
        if b <= a:
            continue
        lat = run.ack_ns[a:b]
        lat = lat[lat >= 0]
        span = (run.t_send[b - 1] - run.t_send[a]) / 1e9 if b - 1 > a else 0.0
        at = np.searchsorted(rss[:, 0], b, side="left")
        out.append({
            "decile": d + 1, "orders_s": (b - a) / span if span > 0 else float("nan"),
            "p50_ms": _ms(lat, 50), "p99_ms": _ms(lat, 99),
            "max_ms": float(lat.max()) / 1e6 if lat.size else float("nan"),
            "rss_mb": float(rss[min(at, len(rss) - 1), 2]),
        })  # fmt: skip
    return out


def soak_report(run: Run, restart: dict[str, float] | None, load: tuple[str, str]) -> str:
    """Format the soak's figures against the targets."""
    rows = deciles(run)
    total_s = (run.t_end - run.t_start) / 1e9
    where = (
        "the simulator on the engine's loop"
        if run.venue == "inprocess"
        else "qwconsole sim in its own process"
    )
    lines = [f"soak: {run.n:,} orders (half resting then canceled, half IOC), the demo's "
             f"instruments over loopback FIX and OUCH to {where}, market maker running; "
             f"{total_s:.1f} s, {run.filled:,} fills of its "
             f"IOC orders, {run.refused:,} refused, {int((run.ack_ns == -1).sum()):,} unanswered",
             f"{'decile':>6} {'orders/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
             f"{'RSS MB':>8}"]  # fmt: skip
    lines += [
        f"{r['decile']:>6} {r['orders_s']:>9,.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
        f"{r['max_ms']:>8.1f} {r['rss_mb']:>8.1f}"
        for r in rows
    ]
    rss0 = run.rss[0][2] if run.rss else 0.0
    rss_end = run.rss[-1][2] if run.rss else 0.0
    growth = rss_end - rss0
    ratio = rows[-1]["p99_ms"] / rows[1]["p99_ms"] if len(rows) > 2 else float("nan")
    lines.append(
        f"run {total_s:.0f} s (target <= {TARGET_RUN_S:.0f} s for 1M); last/second "
        f"decile p99 {ratio:.2f}x (target <= {TARGET_P99_RATIO}x); RSS {rss0:.0f} -> "
        f"{rss_end:.0f} MB, growth {growth:+.0f} MB (target <= "
        f"{TARGET_RSS_GROWTH_MB:.0f} MB)"
    )
    if restart is not None:
        lines.append(
            f"restart on its journal ({restart['journal_mb']:.0f} MB): "
            f"{restart['restart_s']:.1f} s (target <= {TARGET_RESTART_S:.0f} s), peak "
            f"RSS {restart['restart_peak_mb']:.0f} MB (target <= "
            f"{TARGET_RESTART_PEAK_MB:.0f} MB), {int(restart['restored'])} orders "
            "restored to the order managers"
        )
    lines.append(f"load average at the start: {load[0]}; at the end: {load[1]}")
    return "\n".join(lines)


def soak_figures(run: Run, restart: dict[str, float] | None) -> list[judge.Figure]:
    """Return the soak's judged figures (the run length's target scales with the orders)."""
    rows = deciles(run)
    total_s = (run.t_end - run.t_start) / 1e9
    rss0 = run.rss[0][2] if run.rss else 0.0
    rss_end = run.rss[-1][2] if run.rss else 0.0
    ratio = rows[-1]["p99_ms"] / rows[1]["p99_ms"] if len(rows) > 2 else float("nan")
    n = f"{run.n / 1e6:g}M" if run.n >= 1_000_000 else f"{run.n:,}"
    figures = [
        judge.Figure(f"soak: {n} orders through engine and simulator", "s", [total_s],
                     target=TARGET_RUN_S * run.n / 1_000_000,
                     note=f"{run.n / total_s:,.0f} orders/s"),
        judge.Figure("  last-decile p99 / second-decile p99", "x", [ratio],
                     target=TARGET_P99_RATIO,
                     note=f"{rows[1]['p99_ms']:.2f} -> {rows[-1]['p99_ms']:.2f} ms"),
        judge.Figure("  RSS growth over the run", "MB", [rss_end - rss0],
                     target=TARGET_RSS_GROWTH_MB, note=f"{rss0:.0f} -> {rss_end:.0f} MB"),
        judge.Figure("  requests never answered", "", [float((run.ack_ns == -1).sum())],
                     target=0.0),
    ]  # fmt: skip
    if restart is not None:
        figures += [
            judge.Figure("restart on its journal", "s", [restart["restart_s"]],
                         target=TARGET_RESTART_S,
                         note=f"journal {restart['journal_mb']:.0f} MB, "
                         f"{int(restart['restored'])} orders restored"),
            judge.Figure("  restart peak RSS", "MB", [restart["restart_peak_mb"]],
                         target=TARGET_RESTART_PEAK_MB),
        ]  # fmt: skip
    return figures


def rate_figures(run: Run, rate_msgs: float) -> dict[str, float]:
    """Return the round-trip percentiles (create and cancel) of a fixed-rate run."""
    rt = np.concatenate([run.ack_ns[run.ack_ns >= 0], run.cancel_ns[run.cancel_ns >= 0]])
    span = (run.t_send[-1] - run.t_send[0]) / 1e9 if run.n > 1 else 0.0
    held = 2 * run.n / span if span > 0 else float("nan")
    return {
        "offered": rate_msgs, "achieved": held, "p50_ms": _ms(rt, 50), "p95_ms": _ms(rt, 95),
        "p99_ms": _ms(rt, 99), "max_ms": float(rt.max()) / 1e6 if rt.size else float("nan"),
        "unanswered": int((run.ack_ns == -1).sum()),
        "rejected": run.rejected,
    }  # fmt: skip


def rates_report(rows: list[dict[str, float]], load: tuple[str, str]) -> str:
    """Format the fixed-rate figures; name the highest rate held with p95 <= 1 ms."""
    lines = [
        f"{'offered msg/s':>13} {'achieved':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'max ms':>8} {'rejected':>8}"
    ]
    lines += [
        f"{r['offered']:>13,.0f} {r['achieved']:>9,.0f} {r['p50_ms']:>8.3f} {r['p95_ms']:>8.3f} "
        f"{r['p99_ms']:>8.3f} {r['max_ms']:>8.1f} {r['rejected']:>8,.0f}"
        for r in rows
    ]
    held = [
        r["offered"] for r in rows if r["p95_ms"] <= 1.0 and r["achieved"] >= 0.95 * r["offered"]
    ]
    lines.append(
        "highest offered rate held (achieved >= 95% of it) with p95 <= 1 ms: "
        + (f"{max(held):,.0f} msg/s" if held else "none of those tried")
    )
    lines.append(f"load average at the start: {load[0]}; at the end: {load[1]}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- plot


def plot(run: Run, path: Path) -> None:  # noqa: C901  (one drawing, step by step)
    """Draw ack latency (p50/p99/max per 1/200 of the run, log scale) and RSS to a PNG."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen, QPolygonF

    _app = QGuiApplication.instance() or QGuiApplication([])
    w, h, left, right = 1200, 760, 80, 30
    img = QImage(w, h, QImage.Format.Format_RGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setFont(QFont("DejaVu Sans", 10))
    bins = 200
    n = run.n
    edges = np.linspace(0, n, bins + 1).astype(int)
    stats = []
    for a, b in itertools.pairwise(edges):
        lat = run.ack_ns[a:b]
        lat = lat[lat >= 0] / 1e6
        stats.append(
            (np.percentile(lat, 50), np.percentile(lat, 99), lat.max()) if lat.size else None
        )
    panels = [QRectF(left, 50, w - left - right, 380), QRectF(left, 490, w - left - right, 220)]
    p.setPen(QColor("black"))
    p.drawText(
        QRectF(0, 8, w, 30),
        Qt.AlignmentFlag.AlignCenter,
        f"soak: {n:,} orders — acknowledgement latency per 0.5% of the run (ms, log) and RSS (MB)",
    )
    valid = [s for s in stats if s is not None]
    lo = max(0.01, min(s[0] for s in valid)) if valid else 0.01
    hi = max(s[2] for s in valid) if valid else 1.0
    llo, lhi = np.log10(lo) - 0.1, np.log10(hi) + 0.1
    r = panels[0]

    def y_lat(v: float) -> float:
        return r.bottom() - (np.log10(max(v, lo)) - llo) / (lhi - llo) * r.height()

    def x_of(i: float) -> float:
        return r.left() + i / max(1, n) * r.width()

    for rect in panels:
        p.setPen(QColor("#888"))
        p.drawRect(rect)
    p.setPen(QPen(QColor("#ddd"), 1))
    for e in range(int(np.floor(llo)), int(np.ceil(lhi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if lo / 1.3 <= v <= hi * 1.3:
                y = y_lat(v)
                p.setPen(QPen(QColor("#ddd"), 1))
                p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y))
                p.setPen(QColor("#444"))
                p.drawText(QRectF(0, y - 8, left - 6, 16), Qt.AlignmentFlag.AlignRight, f"{v:g}")
    for k, name, color in ((2, "max", "#999999"), (1, "p99", "#d62728"), (0, "p50", "#1f77b4")):
        poly = QPolygonF()
        for j, s in enumerate(stats):
            if s is not None:
                poly.append(QPointF(x_of((edges[j] + edges[j + 1]) / 2), y_lat(float(s[k]))))
        p.setPen(QPen(QColor(color), 1.6))
        p.drawPolyline(poly)
        p.drawText(QPointF(r.right() - 70 - 60 * k, r.top() + 18), name)
    rss = np.array(run.rss) if run.rss else np.zeros((1, 3))
    r2 = panels[1]
    rlo, rhi = float(rss[:, 2].min()), float(rss[:, 2].max())
    rlo, rhi = rlo - 10, max(rhi + 10, rlo + 120)

    def y_rss(v: float) -> float:
        return r2.bottom() - (v - rlo) / (rhi - rlo) * r2.height()

    for v in np.linspace(rlo, rhi, 5):
        p.setPen(QPen(QColor("#ddd"), 1))
        p.drawLine(QPointF(r2.left(), y_rss(v)), QPointF(r2.right(), y_rss(v)))
        p.setPen(QColor("#444"))
        p.drawText(QRectF(0, y_rss(v) - 8, left - 6, 16), Qt.AlignmentFlag.AlignRight, f"{v:.0f}")
    poly = QPolygonF()
    for orders, _s, mb in run.rss:
        poly.append(QPointF(r2.left() + orders / max(1, n) * r2.width(), y_rss(mb)))
    p.setPen(QPen(QColor("#2ca02c"), 2))
    p.drawPolyline(poly)
    p.drawText(QPointF(r2.left() + 10, r2.top() + 18), "RSS MB")
    p.setPen(QColor("#444"))
    for d in range(11):
        x = r2.left() + d / 10 * r2.width()
        p.drawText(
            QRectF(x - 40, r2.bottom() + 4, 80, 16),
            Qt.AlignmentFlag.AlignCenter,
            f"{d * n // 10:,}",
        )
    p.drawText(QRectF(0, h - 24, w, 20), Qt.AlignmentFlag.AlignCenter, "orders sent")
    p.end()
    img.save(str(path))


# ----------------------------------------------------------------------------- entry points


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def soak(
    n: int, state: Path, *, window: int, png: Path | None, venue: str = "process"
) -> tuple[Run, dict[str, float]]:
    """Run the soak in ``state``, then the restart on its journal; return both."""
    run = drive(state, n, window=window, venue=venue)
    journal = sum(f.stat().st_size for f in (state / "journal").glob("*.qwj"))
    restart = restart_child(state)
    restart["journal_mb"] = journal / 1e6
    if png is not None:
        plot(run, png)
    return run, restart


def rates(
    rates_msgs: Sequence[float], seconds: float, base: Path, venue: str = "process"
) -> list[dict[str, float]]:
    """Run create + cancel at each offered rate for ``seconds``; return their figures."""
    rows = []
    for k, rate in enumerate(rates_msgs):
        n = max(10, int(rate / 2 * seconds))
        run = drive(base / f"rate{k}", n, rate_msgs=rate, venue=venue)
        rows.append(rate_figures(run, rate))
    return rows


@pytest.mark.bench
def test_soak_benchmark(tmp_path: Path) -> None:
    """20,000 orders: the same targets (the run length's scaled to the orders)."""
    load0 = os.getloadavg()[0]
    run, restart = soak(20_000, tmp_path / "soak", window=64, png=tmp_path / "soak.png")
    print()
    print(soak_report(run, restart, (f"{load0:.2f}", _load())))
    assert run.refused == 0
    figures = soak_figures(run, restart)
    assert judge.conclude(figures, (load0, os.getloadavg()[0])) == 0, judge.misses(figures)
    load = _load()
    rows = rates([1_000, 2_000], 2.0, tmp_path)
    print(rates_report(rows, (load, _load())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_soak", description=__doc__.split("\n")[0])
    parser.add_argument("--orders", type=int, default=1_000_000, help="orders of the soak")
    parser.add_argument("--window", type=int, default=64, help="requests unanswered at most")
    parser.add_argument(
        "--rates",
        default="",
        help="fixed offered rates, msg/s, comma-separated "
        "(instead of the soak), e.g. 1000,10000,50000,100000",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per fixed rate")
    parser.add_argument("--dir", type=Path, default=None, help="state folder (default: temp)")
    parser.add_argument("--plot", type=Path, default=Path("soak.png"), help="PNG written")
    parser.add_argument(
        "--venue",
        choices=("process", "inprocess"),
        default="process",
        help="the simulator in its own process (qwconsole sim, the default) or "
        "on the engine's loop (the demo's)",
    )
    parser.add_argument("--doc", action="store_true", help="write docs/performance.md")
    parser.add_argument("--restart-only", type=Path, default=None, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.restart_only is not None:
        print(json.dumps(asyncio.run(_restart(opts.restart_only))))
        return 0
    with tempfile.TemporaryDirectory(prefix="qwc-soak-") as tmp:
        base = opts.dir or Path(tmp)
        load0 = _load()
        if opts.rates:
            rows = rates([float(r) for r in opts.rates.split(",")], opts.seconds, base, opts.venue)
            print(rates_report(rows, (load0, _load())))
            return 0
        start = os.getloadavg()[0]
        run, restart = soak(
            opts.orders, base / "soak", window=opts.window, png=opts.plot, venue=opts.venue
        )
        print(soak_report(run, restart, (load0, _load())))
        print(f"plot: {opts.plot}")
    figures = soak_figures(run, restart)
    load = (start, os.getloadavg()[0])
    if opts.doc:
        judge.write_section(
            "soak",
            "A trading day: the soak",
            f"python -m tests.benchmarks.bench_soak --orders {opts.orders} --plot {opts.plot} "
            "--doc",
            figures,
            load=load,
            runs="one run (deciles and plot in docs/soak.md)",
        )
    return judge.conclude(figures, load)


if __name__ == "__main__":
    sys.exit(main())
