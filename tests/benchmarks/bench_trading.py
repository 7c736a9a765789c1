# SPDX-License-Identifier: MIT
"""Trading-path benchmarks (issue 5): tick to order, order to wire, orders through the simulator.

Run: ``python -m tests.benchmarks.bench_trading [--orders N]`` or ``pytest -m bench -s``.
Figures are medians over repetitions on a noisy 2-core machine; each is printed beside its
target, with the machine's load average at the start and the end of the run.

* **create + risk + order manager + encode** one NewOrderSingle: ``OrderManager.send`` through
  the FIX venue adapter into a logged-on ``FixSession`` whose bytes are captured (no socket).
  Nothing subscribes to the bus here, so the order manager builds no ``OrderView`` (it skips
  events nobody gets); the tick-to-order figure has the strategy runner listening and pays
  for it. simplefix building and encoding the same NewOrderSingle is measured beside it.
* **book update → strategy → risk → order manager → encoded NewOrderSingle**: one L2 row
  into ``MarketData.apply``; the ``Taker`` example decides and sends; time until the bytes.
* **orders through the simulator over loopback FIX**: many orders sent back to back through
  real sockets to the simulator's acceptor, until every one is acknowledged.
"""

import argparse
import asyncio
import os
import statistics
import sys
import time
from decimal import Decimal

import numpy as np
import pytest
import simplefix

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import OrdStatus, Side
from engine.fix.codec import FixDecoder
from engine.fix.log import NullLog
from engine.fix.session import FixSession, SessionConfig
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.oms.fix_venue import FixVenue
from engine.oms.router import OrderRouter
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.fix_app import SimFixApplication
from engine.strategy.examples import Taker
from engine.strategy.runner import LiveContext, StrategyRunner
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, SELL
from engine.warmup import warm_up

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))


def logged_on_pair(
    venue: FixVenue, clock: LiveClock, validate: bool
) -> tuple[FixSession, list[bytes]]:
    """Return our session logged on to a counterparty session in memory, and its output list."""
    ours = FixSession(
        SessionConfig(begin_string="FIX.4.4", sender_comp_id="C", target_comp_id="S",
                      initiator=True, heart_bt_int=30, use_data_dictionary=validate),
        MemoryStore(), venue, NullLog(), clock,
    )  # fmt: skip
    theirs = FixSession(
        SessionConfig(begin_string="FIX.4.4", sender_comp_id="S", target_comp_id="C",
                      use_data_dictionary=validate),
        MemoryStore(), None, NullLog(), clock,
    )  # fmt: skip
    d_ours, d_theirs = FixDecoder(), FixDecoder()
    now = clock.now_ns()
    for raw in ours.on_connected(now):
        for msg in d_theirs.feed(raw):
            for back in theirs.on_message(msg, now):
                for m2 in d_ours.feed(back):
                    ours.on_message(m2, now)
    assert ours.is_logged_on
    out: list[bytes] = []
    ours.set_responder(out.append)
    return ours, out


def order_to_wire(n: int, validate: bool) -> float:
    """Return the median ns of send -> encoded NewOrderSingle bytes."""
    clock = LiveClock()
    venue = FixVenue(clock)
    session, out = logged_on_pair(venue, clock, validate)
    venue.bind(session)
    router = OrderRouter(MessageBus(), clock)
    manager = router.add_instrument(ES, venue)
    venue.route(ES, manager)
    samples = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        router.send("ESZ6", 1, Side.BUY if i % 2 else Side.SELL, 1, 24_000 + i % 7)
        samples.append(time.perf_counter_ns() - t0)
    assert len(out) == n
    assert all(b"\x0135=D\x01" in raw for raw in out)
    return statistics.median(samples)


def simplefix_nos(n: int) -> float:
    """Return the median ns to build and encode the same NewOrderSingle with simplefix.

    A same-run reference for :func:`order_to_wire`: a plain Python FIX library doing only the
    encoding part of that path (no order, no risk, no session).
    """
    samples = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        m = simplefix.FixMessage()
        m.append_pair(8, "FIX.4.4")
        m.append_pair(35, "D")
        m.append_pair(34, i + 2)
        m.append_pair(49, "C")
        m.append_utc_timestamp(52, precision=3)
        m.append_pair(56, "S")
        m.append_pair(11, f"F00001-{i}")
        m.append_pair(21, "1")
        m.append_pair(38, "1")
        m.append_pair(40, "2")
        m.append_pair(44, "6000.25")
        m.append_pair(54, "1")
        m.append_pair(55, "ESZ6")
        m.append_pair(59, "0")
        m.append_utc_timestamp(60, precision=3)
        m.encode()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples)


def tick_to_order(n: int) -> tuple[float, float]:
    """Return (p50, p99) ns of one book row -> strategy -> encoded NewOrderSingle bytes."""
    clock = LiveClock()
    bus = MessageBus()
    venue = FixVenue(clock)
    session, out = logged_on_pair(venue, clock, validate=True)
    venue.bind(session)
    router = OrderRouter(bus, clock)
    venue.route(ES, router.add_instrument(ES, venue))
    market = MarketData(["ESZ6"], bus, clock, n_levels=256, centres=[24_000])
    runner = StrategyRunner(bus, clock, LiveContext(router, clock, market.book))
    runner.add(Taker(1, ["ESZ6"], imbalance=0.6, cooldown_ms=0, max_position_lots=1_000_000))
    runner.start(1)
    seed = np.zeros(2, L2_EVENT_DTYPE)
    seed["px"], seed["qty"], seed["side"], seed["kind"] = (
        (23_999, 24_001),
        (5, 5),
        (BUY, SELL),
        L2_SET,
    )
    market.apply(seed)
    row = np.zeros(1, L2_EVENT_DTYPE)
    row["kind"] = L2_SET
    samples = []
    for i in range(n):
        # The bid swells (the taker buys at the ask), then shrinks (it sells at the bid).
        row["px"], row["side"] = 23_999, BUY
        row["qty"] = 100 if i % 2 == 0 else 1
        before = len(out)
        t0 = time.perf_counter_ns()
        market.apply(row)
        samples.append(time.perf_counter_ns() - t0)
        assert len(out) == before + 1, "the strategy did not send an order"
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 99))


async def _through_simulator(n: int, validate: bool) -> tuple[float, float]:
    clock = LiveClock()
    loop = asyncio.get_running_loop()
    exchange = SimExchange(
        [SimInstrument(instrument=ES, start_px_ticks=24_000, flow=FlowConfig(events_per_second=0))]
    )
    app = SimFixApplication(exchange, clock)
    sim = FixSession(
        SessionConfig(begin_string="FIX.4.4", sender_comp_id="S", target_comp_id="C",
                      reset_on_logon=True, use_data_dictionary=validate),
        MemoryStore(), app, NullLog(), clock,
    )  # fmt: skip
    acceptor = SocketAcceptor([sim], port=0, clock=clock)
    await acceptor.start()
    venue = FixVenue(clock, defer=loop.call_soon)
    ours = FixSession(
        SessionConfig(begin_string="FIX.4.4", sender_comp_id="C", target_comp_id="S",
                      initiator=True, reset_on_logon=True, use_data_dictionary=validate),
        MemoryStore(), venue, NullLog(), clock,
    )  # fmt: skip
    venue.bind(ours)
    router = OrderRouter(MessageBus(), clock)
    manager = router.add_instrument(ES, venue)
    venue.route(ES, manager)
    initiator = SocketInitiator(ours, [("127.0.0.1", acceptor.port)], clock=clock)
    await initiator.start()
    await initiator.wait_logged_on(10)
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        orders = []
        for i in range(n):
            orders.append(router.send("ESZ6", 1, Side.BUY, 1, 23_000 + i % 500))
            if i % 200 == 199:
                await asyncio.sleep(0)  # let the sockets breathe, as a live loop would
        async with asyncio.timeout(120):
            while any(o.status is OrdStatus.PENDING_NEW for o in orders):  # noqa: ASYNC110
                await asyncio.sleep(0.001)
        elapsed = time.perf_counter() - t0
        cpu_s = time.process_time() - cpu0
        assert all(o.status is OrdStatus.NEW for o in orders)
        return n / elapsed, cpu_s / n * 1e6
    finally:
        await initiator.stop()
        await acceptor.stop()
        ours.close()
        sim.close()


def through_simulator(n: int, validate: bool) -> tuple[float, float]:
    """Return orders/s acknowledged by the simulator over loopback FIX, and CPU µs per order.

    Both ends run in this process, so the CPU time per order (process time over the same
    window) says what a free core would do; the orders/s depend on the share of the machine
    this process gets.
    """
    return asyncio.run(_through_simulator(n, validate))


def run(orders: int = 5_000, reps: int = 3) -> dict[str, float]:
    """Measure everything; return the medians."""
    warm_up()
    res = {
        "load_1m_start": os.getloadavg()[0],
        "simplefix_nos_ns": statistics.median(simplefix_nos(20_000) for _ in range(reps)),
        "order_to_wire_ns": statistics.median(order_to_wire(20_000, True) for _ in range(reps)),
        "order_to_wire_novalid_ns": statistics.median(
            order_to_wire(20_000, False) for _ in range(reps)
        ),
    }
    ticks = [tick_to_order(20_000) for _ in range(reps)]
    res["tick_to_order_p50_ns"] = statistics.median(t[0] for t in ticks)
    res["tick_to_order_p99_ns"] = statistics.median(t[1] for t in ticks)
    for key, validate in (("", True), ("_novalid", False)):
        runs = [through_simulator(orders, validate) for _ in range(reps)]
        res["sim_orders_per_s" + key] = statistics.median(r[0] for r in runs)
        res["sim_cpu_us" + key] = statistics.median(r[1] for r in runs)
    res["load_1m_end"] = os.getloadavg()[0]
    return res


def report(res: dict[str, float]) -> str:
    """Format the figures against their targets."""
    rows = [
        ("create + risk + OMS + encode NOS", f"{res['order_to_wire_ns'] / 1e3:.1f} µs", "<= 5 µs",
         "C++ OMS: 0.87 µs"),
        ("  same, dictionary validation off", f"{res['order_to_wire_novalid_ns'] / 1e3:.1f} µs",
         "", "outbound is not validated: same path"),
        ("  simplefix: build + encode that NOS only", f"{res['simplefix_nos_ns'] / 1e3:.1f} µs",
         "", f"ours / simplefix: {res['order_to_wire_ns'] / res['simplefix_nos_ns']:.2f}x"),
        ("book update -> strategy -> NOS bytes, p50", f"{res['tick_to_order_p50_ns'] / 1e3:.1f} µs",
         "<= 20 µs", "C++: < 5 µs"),
        ("  p99", f"{res['tick_to_order_p99_ns'] / 1e3:.1f} µs", "", ""),
        ("orders through the simulator, loopback FIX", f"{res['sim_orders_per_s']:,.0f}/s",
         ">= 10,000/s", "QuickFIX via Python: 2,090/s"),
        ("  CPU per order, both ends (process time)", f"{res['sim_cpu_us']:.1f} µs", "",
         f"= {1e6 / res['sim_cpu_us']:,.0f} orders/s on a free core"),
        ("  same, dictionary validation off", f"{res['sim_orders_per_s_novalid']:,.0f}/s", "",
         f"CPU {res['sim_cpu_us_novalid']:.1f} µs per order"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    lines = [f"{'figure':<{width}}  {'measured':>12}  {'target':>12}  reference"]
    lines += [f"{a:<{width}}  {b:>12}  {c:>12}  {d}" for a, b, c, d in rows]
    lines.append(
        f"machine load (1-min average, {os.cpu_count()} CPUs): {res['load_1m_start']:.1f} at the "
        f"start, {res['load_1m_end']:.1f} at the end; each figure is the median over --reps runs"
    )
    return "\n".join(lines)


@pytest.mark.bench
def test_trading_benchmarks() -> None:
    res = run(orders=3_000, reps=3)
    print()
    print(report(res))
    assert res["sim_orders_per_s"] > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_trading", description=__doc__.split("\n")[0])
    parser.add_argument("--orders", type=int, default=5_000)
    parser.add_argument("--reps", type=int, default=3)
    opts = parser.parse_args(argv)
    print(report(run(opts.orders, opts.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
