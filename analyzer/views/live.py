# SPDX-License-Identifier: MIT
"""Charts of a live engine: quotes, trades and own orders arriving as the engine sends them.

:class:`LiveLink` subscribes to the console's bridge (its ``events_received`` batches; the
bridge is the client's one consumer, so the Monitor and the Analyzer see every event) and
feeds an :class:`analyzer.live.LiveFeed`. It redraws at most :data:`REDRAW_MS` apart, however
fast the events come. :class:`LiveChart` is a :class:`analyzer.views.chart.TickChart` of a
live instrument; the workspace moves the (linked) charts with the live edge
(:func:`follow_span`) until the user pans or zooms away from it, and again once the view
reaches the edge or *Follow live* is pressed.
"""

import time
from collections.abc import Callable
from typing import Final

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QWidget

from analyzer.live import LiveFeed, LiveInstrument, LiveUpdate
from analyzer.overlay import Overlay
from analyzer.views.chart import TickChart
from analyzer.views.timeaxis import NS
from engine.events import EventRecord

#: Least time between two redraws of the live charts, ms (at most 20 per second).
REDRAW_MS: Final[int] = 50
#: Least time between two rebuilds of the own-order overlay, ms (it sorts every order change
#: kept, :data:`analyzer.live.ORDER_ROWS` at most).
OVERLAY_MS: Final[int] = 200
#: Least time between two updates of the browser's live rows, ms.
BROWSER_MS: Final[int] = 1000
#: Width of a live chart's first view, ns.
LIVE_WINDOW_NS: Final[int] = 60 * NS
#: Room left right of the newest event while following, as a fraction of the view.
EDGE_ROOM: Final[float] = 0.03


class LiveChart(TickChart):
    """A tick chart of a live instrument: redrawn as rows arrive, own orders from the stream.

    Whether the view follows the live edge is decided for the whole (linked) stack by the
    workspace (:meth:`follow_edge`); a chart left behind redraws only when new rows fall in
    its view (:meth:`on_data`).
    """

    def __init__(
        self, day: LiveInstrument, origin_ns: int, tz_name: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(day, origin_ns, tz_name, parent)
        self.live = day
        self._drawn_until = day.now_ns
        #: Redraws done (tests and figures).
        self.redraws = 0

    def refresh(self) -> None:
        """Draw the visible span (see :meth:`TickChart.refresh`)."""
        trades = self.live.live.buffers["trades"].rows()
        if trades.shape[0]:
            recent = trades["qty"][-4096:] * self.live.live.lot_size
            self._typical_qty = max(float(np.mean(recent)), 1e-12)
        self.redraws += 1
        self._drawn_until = self.live.now_ns
        super().refresh()

    def on_data(self) -> None:
        """Redraw if rows arrived in view since the last drawing."""
        t0, t1 = self.view_ns()
        if self.live.now_ns >= t0 and self._drawn_until <= t1:
            self._redraw.start()

    def set_live_overlay(self, overlay: Overlay) -> None:
        """Show the stream's own orders and executions (redrawn with the next data)."""
        first = self.overlay is None
        self.overlay = overlay
        self._segments = overlay.segments(self.day.symbol)
        self._fill_rows = overlay.executions(self.day.symbol)
        if first:
            self.apply_colors()
        self._redraw.start()


def follow_span(now: int, first: int, window_ns: int) -> tuple[int, int]:
    """Return the view that follows the live edge: ``window_ns`` wide, ending just past ``now``.

    A young instrument (rows over less than the window) is shown from its first row
    (``first``) instead, so that it fills the view as it grows. The room right of ``now`` is
    :data:`EDGE_ROOM` of the width shown.
    """
    if now - first < window_ns * (1 - 2 * EDGE_ROOM):
        room = max(int((now - first) * EDGE_ROOM), 1_000_000)
        return first - room, now + room
    end = now + int(window_ns * EDGE_ROOM)
    return end - window_ns, end


class LiveLink(QObject):
    """Feed a :class:`LiveFeed` from the bridge's batches and redraw live charts, coalesced.

    Parameters
    ----------
    feed : LiveFeed
        Where the events go.
    charts : Callable[[], list[LiveChart]]
        The live charts shown now.

    Signals
    -------
    instruments_changed()
        The browser's live rows changed (new instruments, rows counted, at most once a second).
    drawn(bool)
        A redraw pass ran; ``True`` when rows, orders or fills arrived since the last one.
    """

    instruments_changed = Signal()
    drawn = Signal(bool)

    def __init__(
        self, feed: LiveFeed, charts: Callable[[], list[LiveChart]], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.feed = feed
        self._charts = charts
        self._symbols: set[str] = set()
        self._orders = False
        self._listed = False
        self._last_draw = 0.0
        self._last_overlay = 0.0
        self._last_browser = 0.0
        #: Coalesced redraw passes done.
        self.passes = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self.draw)

    def on_events(self, records: list[EventRecord]) -> None:
        """Take one batch of the bridge (GUI thread) and schedule a redraw."""
        update: LiveUpdate = self.feed.on_events(records)
        self._symbols |= update.symbols
        self._orders |= update.orders
        self._listed |= bool(update.added)
        if self._timer.isActive():
            return
        since_ms = (time.monotonic() - self._last_draw) * 1000.0
        self._timer.start(max(0, int(REDRAW_MS - since_ms) + 1))

    def draw(self) -> None:
        """Bring the live charts (and, once a second, the browser rows) up to date."""
        self._last_draw = time.monotonic()
        self.passes += 1
        overlay = None
        if self._orders:
            wait_ms = OVERLAY_MS - (self._last_draw - self._last_overlay) * 1000.0
            if wait_ms <= 0:
                overlay = self.feed.orders.overlay()
                self._last_overlay = self._last_draw
                self._orders = False
            else:  # orders changed meanwhile: a later pass shows them
                self._timer.start(int(wait_ms) + 1)
        charts = self._charts()
        for chart in charts:
            if overlay is not None:
                chart.set_live_overlay(overlay)
        changed = bool(self._symbols & {c.day.symbol for c in charts}) or overlay is not None
        self.drawn.emit(changed)
        self._symbols.clear()
        if self._listed or self._last_draw - self._last_browser >= BROWSER_MS / 1000.0:
            self._listed = False
            self._last_browser = self._last_draw
            self.instruments_changed.emit()
