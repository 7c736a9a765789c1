# SPDX-License-Identifier: MIT
"""Where the time of the trading path goes, stage by stage (issue #25 point 1).

Run: ``python -m tests.benchmarks.bench_hotpath [--ticks N]`` or ``pytest -m bench -s``.

Two paths, each measured end to end and broken down into its stages:

* **tick → order on the wire**: one L2 row into ``MarketData.apply`` → the book kernel → the
  ``BookUpdated`` event → the strategy runner → the ``Taker`` example decides → the order
  router and order manager (order object, pre-trade risk, self-trade check) → the FIX venue
  adapter (field values) → the session (header, encoding, message store) → a real TCP socket
  on 127.0.0.1 (``send``).
* **execution report → position and events**: the bytes of a fill → the decoder → the session
  (sequence and header checks, dictionary validation) → the venue adapter (an
  ``ExecutionReport``) → the order manager (state, fills, risk) → the events it publishes →
  the strategy's ``on_order``/``on_fill`` and the position keeper.

Each stage is timed by a wrapper around the call that starts it; a stage's own time is its
wrapper's time minus the stages it called, minus the wrappers' own cost (calibrated in the same
run). The figures are medians per tick (or per report) over the run; "rest" of a path is its
end-to-end median minus the sum of the stage medians (the medians of parts do not add up
exactly). The end-to-end figures are measured again without the wrappers. The breakdown has no
targets of its own (``bench_trading`` judges the path); ``--doc`` writes it into
``docs/performance.md``.
"""

import argparse
import os
import socket
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import Side
from engine.events import OrderFilled
from engine.fix.codec import FixDecoder
from engine.fix.message import OutMessage
from engine.fix.session import FixSession
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.oms.router import OrderRouter
from engine.portfolio.positions import PositionBook
from engine.strategy.examples import Taker
from engine.strategy.runner import LiveContext, StrategyRunner
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, SELL
from engine.venues.fix.adapter import FixVenue
from engine.warmup import warm_up
from tests.benchmarks import judge
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))

perf_ns = time.perf_counter_ns


class Stages:
    """Nested timing wrappers: inclusive and own time of each stage, per path run."""

    def __init__(self) -> None:
        self._stack: list[int] = []  # per open stage: time spent in the stages it called
        self._own: dict[str, int] = defaultdict(int)  # this run: own ns per stage
        self.runs: dict[str, list[int]] = defaultdict(list)
        self.overhead = 0  # ns one wrapper adds to its caller's time
        self._undo: list[Callable[[], None]] = []
        #: Stages whose method cannot be replaced (a class compiled with mypyc): their time
        #: counts in the stage that calls them.
        self.inseparable: list[str] = []

    def wrap(self, obj: Any, attr: str, name: str) -> None:
        """Time every call of ``obj.attr`` as stage ``name``."""
        fn = getattr(obj, attr)
        stack, own = self._stack, self._own

        def timed(*args: Any, **kw: Any) -> Any:
            stack.append(0)
            t0 = perf_ns()
            try:
                return fn(*args, **kw)
            finally:
                incl = perf_ns() - t0
                inner = stack.pop()
                own[name] += incl - inner
                if stack:
                    stack[-1] += incl + self.overhead

        # A data descriptor on the class (a slot, or an attribute of a class compiled with
        # mypyc) holds the instance's own value, as its __dict__ would: put it back, never
        # delete it (a compiled class refuses that).
        held = hasattr(type(getattr(type(obj), attr, None)), "__set__")
        try:
            setattr(obj, attr, timed)
        except AttributeError:  # a compiled class's method: read-only
            self.inseparable.append(name)
            return
        if held or attr in getattr(obj, "__dict__", {}):  # an instance's own: put it back
            self._undo.append(lambda: setattr(obj, attr, fn))
        else:
            self._undo.append(lambda: delattr(obj, attr))

    def end_run(self) -> None:
        """Close one path run (one tick, one report): keep its own times per stage."""
        for name, ns in self._own.items():
            self.runs[name].append(max(0, ns))
        self._own.clear()

    def undo(self) -> None:
        """Remove every wrapper."""
        for f in reversed(self._undo):
            f()
        self._undo.clear()

    def calibrate(self) -> None:
        """Measure what a wrapper adds to the stage that calls it."""

        class Box:
            def inner(self) -> None:
                pass

            def outer(self) -> None:
                self.inner()

        probe = Stages()
        box = Box()
        probe.wrap(box, "outer", "outer")
        probe.wrap(box, "inner", "inner")
        for _ in range(20_000):
            box.outer()
            probe.end_run()
        plain = Box()
        base = []
        for _ in range(20_000):
            t0 = perf_ns()
            plain.outer()
            base.append(perf_ns() - t0)
        # outer's own time = the wrapper of inner + a bare call; what is above a bare call:
        self.overhead = max(
            0, int(statistics.median(probe.runs["outer"]) - statistics.median(base))
        )


def logged_on_pair(venue: Any, clock: LiveClock) -> tuple[FixSession, FixSession]:
    """Our session (application ``venue``) logged on to a counterparty session, in memory."""
    ours, theirs, _out = fix_pair(venue, clock)
    return ours, theirs


@contextmanager
def tcp_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected TCP pair on 127.0.0.1 (Nagle off, as the engine's transport sets it)."""
    server = socket.create_server(("127.0.0.1", 0))
    a = socket.create_connection(server.getsockname())
    b, _ = server.accept()
    server.close()
    a.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    a.setblocking(False)
    b.setblocking(False)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _drain(sock: socket.socket) -> None:
    try:
        while sock.recv(1 << 20):
            pass
    except BlockingIOError:
        pass


class TickPath:
    """Market data, the Taker, the order manager and a FIX session writing to a socket."""

    def __init__(self, wire: socket.socket) -> None:
        clock = LiveClock()
        bus = MessageBus()
        self.venue = venue = FixVenue(clock)
        self.session, _ = logged_on_pair(venue, clock)
        self.sent = 0

        def write(data: bytes) -> None:
            wire.send(data)
            self.sent += 1

        self.write = write
        self.session.set_responder(lambda data: self.write(data))
        venue.bind(self.session)
        self.router = OrderRouter(bus, clock)
        self.manager = self.router.add_instrument(ES, venue)
        venue.route(ES, self.manager)
        self.market = MarketData(["ESZ6"], bus, clock, n_levels=256, centres=[24_000])
        self.runner = StrategyRunner(bus, clock, LiveContext(self.router, clock, self.market.book))
        self.taker = Taker(1, ["ESZ6"], imbalance=0.6, cooldown_ms=0, max_position_lots=1_000_000)
        self.runner.add(self.taker)
        self.runner.start(1)
        seed = np.zeros(2, L2_EVENT_DTYPE)
        seed["px"], seed["qty"], seed["side"], seed["kind"] = (
            (23_999, 24_001), (5, 5), (BUY, SELL), L2_SET,
        )  # fmt: skip
        self.market.apply(seed)
        self.row = np.zeros(1, L2_EVENT_DTYPE)
        self.row["kind"] = L2_SET
        self.row["px"], self.row["side"] = 23_999, BUY
        self.i = 0

    def tick(self) -> None:
        """One book update that makes the Taker send one order."""
        # The bid swells (the taker buys at the ask), then shrinks (it sells at the bid).
        self.row["qty"] = 100 if self.i % 2 == 0 else 1
        self.i += 1
        self.market.apply(self.row)

    def stages(self, st: Stages) -> list[tuple[str, str]]:
        """Wrap the stages; return (stage, what it is) in path order."""
        st.wrap(self.market, "apply", "market data")
        # A lone row goes to the kernel through MarketData's row applier (L2Books.row_applier).
        st.wrap(self.market, "_apply_row", "book kernel")
        st.wrap(self.taker, "on_book", "strategy")
        # The strategy's context sends through the order manager's positional entry, which
        # builds the Order in place; with no risk rule set it books the order into risk
        # itself (its time is the order manager's), else it asks risk once (new_order).
        st.wrap(self.manager, "_send_new", "order manager")
        st.wrap(self.manager.risk, "new_order", "risk")
        st.wrap(self.venue, "submit", "venue adapter")
        # The adapter sends through its templates' ``send`` (the session's send_template,
        # bound): made during the warm-up, each is wrapped.
        for by_side in self.venue._new_limit.values():
            for by_tif in by_side.values():
                for template in by_tif.values():
                    st.wrap(template, "send", "session")
        st.wrap(self, "write", "socket send")
        return [
            ("market data", "MarketData.apply: checks, the event, the bus, the runner"),
            ("book kernel", "the row applier: the numba kernel (it checks the row)"),
            ("strategy", "Taker.on_book: decide, strategy API, context"),
            (
                "order manager",
                "OrderManager._send_new: ids, the Order, bookkeeping, risk booked, event",
            ),
            ("risk", "RiskChecker.new_order (only with a risk rule set): limits, booking"),
            ("venue adapter", "FixVenue.submit: field values, seq map"),
            ("session", "FixSession.send_template: header, encode, store"),
            ("socket send", "socket.send of the bytes (TCP 127.0.0.1)"),
        ]


class ReportPath:
    """Fills arriving for our orders: decoder → session → venue → order manager → events."""

    def __init__(self, n: int) -> None:
        self.clock = clock = LiveClock()
        self.bus = bus = MessageBus()
        self.venue = venue = FixVenue(clock)
        self.session, theirs = logged_on_pair(venue, clock)
        self.session.set_responder(lambda _data: None)
        venue.bind(self.session)
        router = OrderRouter(bus, clock)
        self.manager = router.add_instrument(ES, venue)
        venue.route(ES, self.manager)
        self.runner = StrategyRunner(bus, clock, LiveContext(router, clock, lambda _s: None))
        self.taker = Taker(1, ["ESZ6"], imbalance=0.6, cooldown_ms=0, max_position_lots=1_000_000)
        self.runner.add(self.taker)
        self.runner.start(1)
        self.positions = PositionBook(2, [ES])
        bus.subscribe(OrderFilled, lambda fill: self._position(fill))  # looked up per call
        self.decoder = FixDecoder()
        orders = [
            router.send(
                symbol="ESZ6",
                strategy_id=1,
                side=Side.BUY if i % 2 else Side.SELL,
                qty_lots=1,
                px_ticks=24_000 + i % 7,
            )
            for i in range(n)
        ]
        raws: list[bytes] = []
        theirs.set_responder(raws.append)
        for i, o in enumerate(orders):
            theirs.send(
                OutMessage(b"8", [
                    (6, b"6000"), (11, o.client_order_id.encode()), (14, b"1"),
                    (17, b"E%d" % i), (31, b"6000"), (32, b"1"), (37, b"V%d" % i),
                    (38, b"1"), (39, b"2"), (44, b"6000"), (54, b"1" if i % 2 else b"2"),
                    (55, b"ESZ6"), (60, b"20261203-12:00:00.000"), (150, b"F"), (151, b"0"),
                ])
            )  # fmt: skip
        self.raws = raws
        self.i = 0

    def _position(self, fill: OrderFilled) -> None:
        self.positions.on_fill(
            fill.strategy_id,
            0,
            1 if fill.side is Side.BUY else -1,
            fill.last_px_ticks,
            fill.last_qty_lots,
        )

    def report(self) -> None:
        """One fill: bytes in, position and events out."""
        raw = self.raws[self.i]
        self.i += 1
        (msg,) = self.decode(raw)
        self.deliver(msg)

    def decode(self, raw: bytes) -> list[Any]:
        """The decoder's part (wrapped as a stage)."""
        return self.decoder.feed(raw)

    def deliver(self, msg: Any) -> None:
        """The session's part (wrapped as a stage: a compiled session's methods cannot be)."""
        self.session.on_message(msg, self.clock.now_ns())

    def stages(self, st: Stages) -> list[tuple[str, str]]:
        """Wrap the stages; return (stage, what it is) in path order."""
        st.wrap(self, "decode", "decoder")
        st.wrap(self, "deliver", "session")
        st.wrap(self.venue, "from_app", "venue adapter")
        st.wrap(self.manager, "on_execution_report", "order manager")
        st.wrap(self.runner, "_call", "strategy callbacks")
        st.wrap(self, "_position", "positions")
        return [
            ("decoder", "FixDecoder.feed: framing, checksum, fields"),
            ("session", "FixSession.on_message: seq, header, validation, dispatch"),
            ("venue adapter", "FixVenue.from_app: an ExecutionReport"),
            ("order manager", "on_execution_report: state, fill, risk, events, bus"),
            ("strategy callbacks", "Taker.on_fill through the runner (on_order: none)"),
            ("positions", "PositionBook.on_fill"),
        ]


def _result(plain: list[int], st: Stages, order: list[tuple[str, str]]) -> dict[str, Any]:
    """One path's measurements: unwrapped times, stage runs, their order, wrapper cost."""
    return {
        "plain": plain,
        "stages": st.runs,
        "order": order,
        "overhead": st.overhead,
        "inseparable": st.inseparable,
    }


def measure_ticks(n: int) -> dict[str, Any]:
    """Run ``n`` ticks unwrapped (end to end) and ``n`` wrapped (stages)."""
    with tcp_pair() as (a, b):
        path = TickPath(a)
        for _ in range(2_000):  # warm: first calls, the session's templates
            path.tick()
        _drain(b)
        plain = []
        for k in range(n):
            t0 = perf_ns()
            path.tick()
            plain.append(perf_ns() - t0)
            if k % 500 == 499:
                _drain(b)
        st = Stages()
        st.calibrate()
        order = path.stages(st)
        sent = path.sent
        try:
            for k in range(n):
                path.tick()
                st.end_run()
                if k % 500 == 499:
                    _drain(b)
        finally:
            st.undo()
        assert path.sent - sent == n, "a tick did not send an order"
    return _result(plain, st, order)


def measure_reports(n: int) -> dict[str, Any]:
    """Run ``n`` fills unwrapped and ``n`` wrapped, each on its own set of orders."""
    path = ReportPath(n)
    plain = []
    for _ in range(n):
        t0 = perf_ns()
        path.report()
        plain.append(perf_ns() - t0)
    assert path.manager.orders == {}, "a fill was not applied"
    path = ReportPath(n)
    st = Stages()
    st.calibrate()
    order = path.stages(st)
    try:
        for _ in range(n):
            path.report()
            st.end_run()
    finally:
        st.undo()
    assert path.manager.orders == {}, "a fill was not applied"
    return _result(plain, st, order)


def _pct(xs: list[int], q: float) -> float:
    return float(np.percentile(xs, q))


def report(title: str, res: dict[str, Any]) -> str:
    """Format one path's breakdown."""
    p50 = _pct(res["plain"], 50)
    lines = [
        f"{title}: end to end p50 {p50 / 1e3:.2f} µs, p99 {_pct(res['plain'], 99) / 1e3:.2f} µs"
        f" (unwrapped); wrapper cost {res['overhead']} ns, subtracted",
        f"  {'stage':<20} {'p50 µs':>8} {'p99 µs':>8} {'share':>6}  what",
    ]
    total = 0.0
    for name, what in res["order"]:
        xs = res["stages"].get(name, [])
        if not xs:
            continue
        med = _pct(xs, 50)
        total += med
        lines.append(
            f"  {name:<20} {med / 1e3:8.2f} {_pct(xs, 99) / 1e3:8.2f} {med / p50:6.0%}  {what}"
        )
    lines.append(f"  {'sum of stages':<20} {total / 1e3:8.2f} {'':>8} {total / p50:6.0%}")
    if res["inseparable"]:
        lines.append(f"  {_inseparable(res)}")
    return "\n".join(lines)


def _inseparable(res: dict[str, Any]) -> str:
    names = ", ".join(res["inseparable"])
    return f"not timed apart (compiled with mypyc, counted in their caller): {names}"


def figures(title: str, res: dict[str, Any]) -> list[judge.Figure]:
    """Return one path's end-to-end figures and its stages as table rows (p50, no targets)."""
    p50 = _pct(res["plain"], 50)
    rows = [
        judge.Figure(
            f"{title}, end to end p50",
            "µs",
            [p50 / 1e3],
            note=_inseparable(res) if res["inseparable"] else "",
        ),
        judge.Figure("  p99", "µs", [_pct(res["plain"], 99) / 1e3]),
    ]
    for name, what in res["order"]:
        xs = res["stages"].get(name, [])
        if xs:
            med = _pct(xs, 50)
            rows.append(
                judge.Figure(f"  {name}", "µs", [med / 1e3], note=f"{med / p50:.0%}: {what}")
            )
    return rows


def run(ticks: int = 20_000, reports: int = 20_000, doc: bool = False) -> str:
    """Measure both paths; return the printed report (and write the docs section if ``doc``)."""
    warm_up()
    load0 = os.getloadavg()[0]
    t = measure_ticks(ticks)
    r = measure_reports(reports)
    load = (load0, os.getloadavg()[0])
    if doc:
        judge.write_section(
            "hotpath",
            "Where the trading path's time goes (stage p50s, own time)",
            f"python -m tests.benchmarks.bench_hotpath --ticks {ticks} --reports {reports} --doc",
            [
                *figures("tick -> order on the wire", t),
                *figures("execution report -> OMS, positions, strategy", r),
            ],
            load=load,
            runs=f"{ticks:,} ticks and {reports:,} fills, wrapped and unwrapped",
        )
    return "\n\n".join([
        report("tick -> order on the wire", t),
        report("execution report -> order manager, positions, strategy", r),
        f"{judge.load_text(*load)}; {ticks:,} ticks, {reports:,} reports",
    ])  # fmt: skip


@pytest.mark.bench
def test_hotpath_breakdown() -> None:
    print()
    print(run(5_000, 5_000, doc=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_hotpath", description=__doc__.split("\n")[0])
    parser.add_argument("--ticks", type=int, default=20_000)
    parser.add_argument("--reports", type=int, default=20_000)
    parser.add_argument("--doc", action="store_true", help="write docs/performance.md")
    opts = parser.parse_args(argv)
    print(run(opts.ticks, opts.reports, opts.doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
