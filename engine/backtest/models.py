# SPDX-License-Identifier: MIT
"""Latency models of the backtester and the market data it replays.

Three latencies matter to a simulated strategy: the **feed** latency (a market event that
happens at the venue at ``ts`` is seen by the strategy at ``ts + feed``), the **order**
latency (a request sent at local time ``t`` reaches the venue at ``t + order``) and the
**response** latency (an ack, fill or cancel that happens at the venue at ``t`` reaches the
strategy at ``t + response``). :class:`ConstantLatency` fixes them; :class:`RecordedLatency`
takes the feed latency of every event from the recorded receive times (``ts_recv - ts``) and
uses the same one-way latency, scaled, for orders and answers (at least
:data:`MIN_LATENCY_NS`).
"""

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

#: Least order and answer latency of :class:`RecordedLatency`, ns: a recorded latency of 0 (a
#: snapshot stamped at its receive time, a recorder whose clock runs behind the venue's) must
#: not let an order reach the venue, or fill, in the nanosecond it was sent.
MIN_LATENCY_NS = 1_000

#: Level of detail of a replay: market by price with a queue model, or market by order.
Level = Literal["l2", "l3"]


@dataclass(frozen=True, slots=True)
class ConstantLatency:
    """The same latencies for every event and request, ns (each >= 0)."""

    feed_ns: int = 0
    order_ns: int = 0
    response_ns: int = 0

    def __post_init__(self) -> None:
        for name in ("feed_ns", "order_ns", "response_ns"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"ConstantLatency.{name}: must be an int >= 0, got {v!r}")

    def arrays(self, n_events: int) -> tuple[I64, I64, I64]:
        """Return ``(feed, order, response)`` int64 arrays (length 1: constant)."""
        return (
            np.array([self.feed_ns], np.int64),
            np.array([self.order_ns], np.int64),
            np.array([self.response_ns], np.int64),
        )


@dataclass(frozen=True, slots=True, eq=False)
class RecordedLatency:
    """Latencies from recorded timestamps: ``ts_recv - ts`` of every replayed event.

    Parameters
    ----------
    one_way_ns : numpy.ndarray
        ``int64[n_events]``: receive time minus exchange time of each event (>= 0).
    order_factor : float
        Order and response latency as a multiple of the event's one-way latency.
    """

    one_way_ns: I64 = field(repr=False)
    order_factor: float = 1.0

    def __post_init__(self) -> None:
        a = np.asarray(self.one_way_ns)
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise ValueError("RecordedLatency.one_way_ns: must be a 1-d integer array")
        if a.size and int(a.min()) < 0:
            i = int(np.argmin(a))
            raise ValueError(
                f"RecordedLatency.one_way_ns: row {i} is {int(a[i])} ns; receive times must "
                "not precede exchange times"
            )
        if not self.order_factor >= 0:
            raise ValueError(f"RecordedLatency.order_factor: must be >= 0, got {self.order_factor}")

    @classmethod
    def from_times(
        cls, ts: npt.ArrayLike, ts_recv: npt.ArrayLike, order_factor: float = 1.0
    ) -> "RecordedLatency":
        """Build from exchange and receive times (negative differences are clipped to 0)."""
        d = np.asarray(ts_recv, np.int64) - np.asarray(ts, np.int64)
        return cls(np.maximum(d, 0), order_factor)

    def arrays(self, n_events: int) -> tuple[I64, I64, I64]:
        """Return ``(feed, order, response)`` int64 arrays of length ``n_events``."""
        a = np.ascontiguousarray(self.one_way_ns, np.int64)
        if a.shape[0] != n_events:
            raise ValueError(
                f"RecordedLatency: {a.shape[0]} latencies for {n_events} events; give one per event"
            )
        o = np.maximum(np.round(a * self.order_factor).astype(np.int64), MIN_LATENCY_NS)
        return a, o, o


LatencyModel = ConstantLatency | RecordedLatency


def at_times(lat: I64, ev_ts: I64, ts: I64) -> I64:
    """Return the latency in force at each time of ``ts`` (that of the last event at or before)."""
    if lat.shape[0] == 1:
        return np.full(ts.shape[0], lat[0], np.int64)
    i = np.searchsorted(ev_ts, ts, side="right") - 1
    return lat[np.clip(i, 0, lat.shape[0] - 1)]
