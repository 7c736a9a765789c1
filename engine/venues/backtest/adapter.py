# SPDX-License-Identifier: MIT
"""The venue adapter of a generic backtest: the order manager's requests go to the simulator.

``engine.backtest.generic.GenericBacktest`` carries each request out at its simulated venue
after the order latency and hands the venue's answers (the order manager's own report types)
to the order manager itself; this adapter is the order manager's side of that.
"""

import itertools
from collections.abc import Callable, Mapping

from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest
from engine.oms.venue import REQUEST_NAMES, ReportSink, Request

#: ``send(request, order, pending)``: hand a request to the simulated venue.
Send = Callable[[Request, Order, PendingRequest | None], None]


class BacktestVenue:
    """The :class:`engine.oms.venue.Venue` of a backtest.

    Parameters
    ----------
    send : Send
        Hands a request to the simulated venue (``GenericBacktest``'s request queue).
    name : str
        Venue name for displays and the journal.
    """

    def __init__(self, send: Send, name: str = "BACKTEST") -> None:
        self._send = send
        self._name = name
        self._ids = itertools.count(1)

    @property
    def name(self) -> str:
        """Return the venue's name."""
        return self._name

    @property
    def request_names(self) -> Mapping[Request, str]:
        """Return the requests' names for alerts (venue-neutral)."""
        return REQUEST_NAMES

    def route(self, instrument: Instrument, sink: ReportSink) -> None:
        """Nothing to wire: the backtest hands its reports to its order manager itself."""

    def new_client_order_id(self) -> str:
        """Return a fresh, deterministic ClOrdID."""
        return f"BT{next(self._ids)}"

    def submit(self, order: Order) -> None:
        """Send a new order; it reaches the venue after the order latency."""
        self._send(Request.NEW, order, None)

    def cancel(self, order: Order, request: PendingRequest) -> None:
        """Send a cancel."""
        self._send(Request.CANCEL, order, request)

    def replace(self, order: Order, request: PendingRequest) -> None:
        """Send a cancel/replace (a new queue position at the venue)."""
        self._send(Request.REPLACE, order, request)

    def request_status(self, order: Order) -> None:
        """Ask for the order's status."""
        self._send(Request.STATUS, order, None)
