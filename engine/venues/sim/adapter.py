# SPDX-License-Identifier: MIT
"""An in-process venue adapter: the order manager trades directly on a :class:`SimExchange`.

The same ``OrderManager`` that sends FIX to a real venue sends here through plain calls — the
fast path for the demo, for tests, and for stepping a strategy without sockets. Answers are
delivered through ``defer`` (``loop.call_soon`` on the engine loop), never re-entrantly inside
the call that caused them, exactly as answers from a socket would arrive.
"""

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping

from engine.clock import Clock
from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest
from engine.oms.venue import (
    REQUEST_NAMES,
    CancelReject,
    ExecutionReport,
    ReportSink,
    Request,
    clordid_prefix,
)
from engine.sim.exchange import SimExchange

Deliver = Callable[[Callable[[], None]], object]


class SimVenue:
    """Venue adapter over a :class:`SimExchange` for one client (``owner``).

    Parameters
    ----------
    exchange : SimExchange
        The exchange to trade on.
    clock : Clock
        Time stamped on requests.
    defer : Callable
        Schedules a callable to run later (``loop.call_soon``).
    owner : int
        This client's owner id at the exchange (self-trade prevention group).
    name : str
        Venue name for displays.
    """

    def __init__(
        self,
        exchange: SimExchange,
        clock: Clock,
        defer: Deliver,
        *,
        owner: int = 1,
        name: str = "SIM",
    ) -> None:
        self.exchange = exchange
        self.clock = clock
        self.defer = defer
        self.owner = owner
        self._name = name
        self._ids = itertools.count(1)
        self._prefix = clordid_prefix("Q", clock.now_ns())
        self._sinks: dict[str, ReportSink] = {}

    @property
    def name(self) -> str:
        """Return the venue's name."""
        return self._name

    @property
    def request_names(self) -> Mapping[Request, str]:
        """Return the requests' names for alerts (the simulator's own: venue-neutral)."""
        return REQUEST_NAMES

    def route(self, instrument: Instrument, sink: ReportSink) -> None:
        """Deliver reports about ``instrument`` to ``sink`` (its order manager)."""
        self._sinks[instrument.symbol] = sink

    def new_client_order_id(self) -> str:
        """Return a fresh ClOrdID."""
        return f"{self._prefix}{next(self._ids)}"

    def submit(self, order: Order) -> None:
        """Enter a new order at the exchange."""
        self.deliver(
            self.exchange.submit(
                self.owner,
                order.client_order_id,
                order.symbol,
                order.side,
                order.qty_lots,
                order.px_ticks,
                order.ord_type,
                order.time_in_force,
                ts=self.clock.now_ns(),
            )
        )

    def cancel(self, order: Order, request: PendingRequest) -> None:
        """Cancel an order at the exchange."""
        result = self.exchange.cancel(
            self.owner, request.client_order_id, order.client_order_id, ts=self.clock.now_ns()
        )
        self._answer(order.symbol, result)

    def replace(self, order: Order, request: PendingRequest) -> None:
        """Replace an order at the exchange."""
        result = self.exchange.replace(
            self.owner,
            request.client_order_id,
            order.client_order_id,
            request.qty_lots,
            request.px_ticks,
            ts=self.clock.now_ns(),
        )
        self._answer(order.symbol, result)

    def request_status(self, order: Order) -> None:
        """Ask for an order's status."""
        report = self.exchange.status(self.owner, order.client_order_id, self.clock.now_ns())
        if report is not None:
            self.deliver([report])

    def _answer(self, symbol: str, result: list[ExecutionReport] | CancelReject) -> None:
        if isinstance(result, CancelReject):
            sink = self._sinks[symbol]
            rej = dataclasses.replace(result, ts_recv=self.clock.now_ns())

            def run() -> None:
                sink.on_cancel_reject(rej)

            self.defer(run)
        else:
            self.deliver(result)

    def deliver(self, reports: Iterable[ExecutionReport]) -> None:
        """Hand this client's reports to their order managers (later, via ``defer``).

        The exchange answers in the order manager's own types, stamped at its own time (the
        clock is shared: that is when this adapter receives them).
        """
        owner = self.owner
        mine = [(self._sinks[r.symbol], r) for r in reports if r.client == owner]
        if not mine:
            return

        def run() -> None:
            for sink, rep in mine:
                sink.on_execution_report(rep)

        self.defer(run)
