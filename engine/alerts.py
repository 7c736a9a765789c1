# SPDX-License-Identifier: MIT
"""Alerts folded per cause, and refusals counted instead of alerted one by one.

A storm of alerts (a strategy sending thousands of orders into a kill switch, a venue
rejecting every request) must not bury the trader's screen or the journal. Two pieces:

* :class:`AlertAggregator` sits where the engine numbers its events (``Engine._sequence``):
  the first :class:`~engine.events.Alert` of a cause passes at once; repeats within the quiet
  period are counted and published at most once per window as an update of the same aggregate
  (``count``, ``ts_first``, the latest text, the ``aggregate`` id of the first). Clients show
  one line per aggregate ("×N"); the journal gets one record per update, not per repeat.
  In-process bus subscribers still see every raw alert.
* :class:`RefusalCounter` turns "order refused" into one alert per cause whose text carries the
  running total ("kill switch BLOCK_NEW: 14,564 orders refused since 10:31:02 UTC").

The cause of an alert is its ``source`` plus its ``cause`` field, or, when that is empty, its
text with every word that contains a digit masked (order ids, prices, quantities).
"""

import asyncio
import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from engine.bus import MessageBus
from engine.clock import Clock
from engine.enums import AlertLevel
from engine.events import Alert

#: Repeats of one cause are published at most this often, ns.
WINDOW_NS = 1_000_000_000
#: A cause quiet this long ends its aggregate; the next occurrence starts a new one, ns.
QUIET_NS = 60_000_000_000
#: Causes followed at once; past it the quiet ones (else the longest quiet) are forgotten.
MAX_CAUSES = 1024

_NUMBERED_WORD = re.compile(r"\S*\d\S*")


def cause_of(alert: Alert) -> str:
    """Return what makes repeats of ``alert`` one alert (besides its source)."""
    return alert.cause or _NUMBERED_WORD.sub("#", alert.text)


@dataclass(slots=True)
class _Aggregate:
    aggregate: int  # sequence number of its first alert
    ts_first: int
    count: int
    latest: Alert
    last_mono: int  # last occurrence
    published_mono: int  # last time it went into the stream
    pending: bool  # repeats since then not yet published


class AlertAggregator:
    """Fold repeated alerts of one cause into one aggregate alert with a count.

    Parameters
    ----------
    clock : Clock
        Monotonic time for windows.
    emit : Callable[[Alert], None]
        Numbers and delivers an aggregate update published later (by :meth:`flush`).
    next_seq : Callable[[], int]
        The sequence number the next numbered event gets (the id of a new aggregate).
    window_ns : int
        Least time between two publications of one aggregate.
    quiet_ns : int
        A cause without occurrences this long starts a new aggregate.
    max_causes : int
        Aggregates followed at once.
    """

    def __init__(
        self,
        clock: Clock,
        emit: Callable[[Alert], None],
        next_seq: Callable[[], int],
        *,
        window_ns: int = WINDOW_NS,
        quiet_ns: int = QUIET_NS,
        max_causes: int = MAX_CAUSES,
    ) -> None:
        if window_ns <= 0 or quiet_ns < window_ns or max_causes < 1:
            raise ValueError(
                f"alert aggregation needs 0 < window ({window_ns} ns) <= quiet ({quiet_ns} ns) "
                f"and at least one cause (got {max_causes})"
            )
        self.clock = clock
        self.emit = emit
        self.next_seq = next_seq
        self.window_ns = window_ns
        self.quiet_ns = quiet_ns
        self.max_causes = max_causes
        self._live: dict[tuple[str, str], _Aggregate] = {}
        self._timer: asyncio.TimerHandle | None = None
        #: Alerts folded into an aggregate instead of being published (all causes).
        self.folded = 0

    def admit(self, alert: Alert) -> Alert | None:
        """Return the alert to number now, or ``None`` if it was folded into its aggregate."""
        if alert.aggregate:  # already aggregated (relayed): pass as is
            return alert
        key = (alert.source, cause_of(alert))
        now = self.clock.monotonic_ns()
        agg = self._live.get(key)
        if agg is None or now - agg.last_mono > self.quiet_ns:
            if agg is not None and agg.pending:
                self._publish(agg, now)
            if agg is None and len(self._live) >= self.max_causes:
                self._forget(now)
            seq = self.next_seq()  # after the publications above
            self._live.pop(key, None)  # (re)inserted last: the most recent
            self._live[key] = _Aggregate(seq, alert.ts_event, 1, alert, now, now, False)
            return dataclasses.replace(alert, ts_first=alert.ts_event, aggregate=seq)
        agg.count += 1
        agg.latest = alert
        agg.last_mono = now
        del self._live[key]  # the most recent last: the first entry is the longest quiet
        self._live[key] = agg
        if now - agg.published_mono >= self.window_ns:
            agg.pending = False
            agg.published_mono = now
            return self._update(agg)
        agg.pending = True
        self.folded += 1
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a test driving the bus): flushed by the next one
                return None
            delay = (agg.published_mono + self.window_ns - now) / 1e9
            self._timer = loop.call_later(delay, self._on_timer)
        return None

    def flush(self) -> int:
        """Publish every aggregate with unpublished repeats; return how many were published."""
        now = self.clock.monotonic_ns()
        n = 0
        for agg in list(self._live.values()):
            if agg.pending:
                self._publish(agg, now)
                n += 1
        return n

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def _publish(self, agg: _Aggregate, now: int) -> None:
        agg.pending = False
        agg.published_mono = now
        self.emit(self._update(agg))

    @staticmethod
    def _update(agg: _Aggregate) -> Alert:
        return dataclasses.replace(
            agg.latest, count=agg.count, ts_first=agg.ts_first, aggregate=agg.aggregate
        )

    def _forget(self, now: int) -> None:
        """Forget the longest quiet cause (O(1): ``_live`` is kept in order of last occurrence)."""
        agg = self._live.pop(next(iter(self._live)))
        if agg.pending:
            self._publish(agg, now)

    def close(self) -> None:
        """Publish what is pending and stop the timer (the engine stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.flush()


def _hms(ts_ns: int) -> str:
    return datetime.fromtimestamp(ts_ns / 1e9, tz=UTC).strftime("%H:%M:%S")


class RefusalCounter:
    """Count refused orders per cause and say so in one alert that grows with them.

    Every refusal publishes an :class:`~engine.events.Alert` of its cause carrying the running
    total; the engine's :class:`AlertAggregator` folds them into one line on screen and one
    journal record per second at most.

    Parameters
    ----------
    bus : MessageBus
        Where the alerts go.
    clock : Clock
        Time of the refusals.
    source : str
        ``Alert.source`` of the alerts, e.g. ``"kill switch"``.
    """

    def __init__(self, bus: MessageBus, clock: Clock, source: str) -> None:
        self.bus = bus
        self.clock = clock
        self.source = source
        self._counts: dict[str, list[int]] = {}  # cause -> [count, since_ns]

    def refuse(
        self,
        cause: str,
        *,
        detail: str = "",
        since_ns: int = 0,
        level: AlertLevel = AlertLevel.WARNING,
    ) -> int:
        """Count one refusal of ``cause`` (since ``since_ns``, else now); return the total."""
        now = self.clock.now_ns()
        entry = self._counts.get(cause)
        if entry is None:
            entry = self._counts[cause] = [0, since_ns or now]
        entry[0] += 1
        n = entry[0]
        text = f"{cause}: {n:,} order{'' if n == 1 else 's'} refused since {_hms(entry[1])} UTC"
        self.bus.publish(
            Alert(
                ts_event=now,
                level=level,
                source=self.source,
                text=f"{text} ({detail})" if detail else text,
                cause=cause,
            )
        )
        return n

    def count(self, cause: str | None = None) -> int:
        """Return the refusals of ``cause`` (of every cause with ``None``) since the reset."""
        if cause is not None:
            entry = self._counts.get(cause)
            return entry[0] if entry else 0
        return sum(c for c, _s in self._counts.values())

    def reset(self) -> None:
        """Start counting afresh (the kill switch changed level)."""
        self._counts.clear()
