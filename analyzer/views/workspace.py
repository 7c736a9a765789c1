# SPDX-License-Identifier: MIT
"""The Trade Analyzer workspace: tick history, synchronized charts, own orders overlaid.

Left, the instrument and day browser over a tick store (row counts and time spans); in the
middle, the chart stack with its tool bar (time zone, span statistics, replay controls) and a
progress line with a Cancel button while a day opens; right, the depth ladder following the
cursor and the statistics of the selected span; below, the FIX message chain of the clicked
order or execution. Opening days and journals runs on worker threads (:mod:`.jobs`).

The workspace composes and connects; each pane is a module of its own: the browser
(:mod:`.browser`), the replay bar (:mod:`.replay`), the depth ladder (:mod:`.depth`), the span
statistics (:mod:`.span_stats`), the order history and FIX chain (:mod:`.order_history`) and
the progress line (:mod:`.progress`); the charts are :mod:`.chart`.

Given the console bridge's ``events_received`` signal (``engine_events``), the browser also
lists the engine's instruments as live rows; charting one shows its quotes, trades and own
orders as they arrive (:mod:`.live`). Given the relays the console watches
(:class:`~analyzer.views.relay_source.RelaySettings`), the *Relays* tab charts an instrument
of a market-data relay live the same way (:mod:`.relay_source`).
"""

import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from analyzer.dataset import Depth, InstrumentDay, open_day
from analyzer.live import LIVE_PREFIX, LiveFeed, LiveInstrument
from analyzer.overlay import Overlay, load_overlay
from analyzer.source import StoreDay, browse
from analyzer.stats import RangeStats
from analyzer.views.browser import DayBrowser
from analyzer.views.chart import ChartStack, TickChart
from analyzer.views.depth import DepthPane
from analyzer.views.jobs import Job, Latest
from analyzer.views.live import LIVE_WINDOW_NS, LiveChart, LiveLink, follow_span
from analyzer.views.order_history import OrderHistory, show_fix_chain
from analyzer.views.progress import JobProgress
from analyzer.views.relay_source import RelayLive, RelaySettings, RelaySourcePanel
from analyzer.views.replay import REPLAY_TICK_MS, ReplayBar
from analyzer.views.span_stats import StatsTable
from analyzer.views.timeaxis import ZONES
from engine.events import EngineSnapshot, EventRecord
from engine.journal.format import FixMessageRecord
from engine.tickstore.store import TickStore
from widgets.empty_state import EmptyState
from widgets.fix_inspector import FixInspector

log = logging.getLogger(__name__)

_warm_lock = threading.Lock()
_warmed = False


def _warm_kernels() -> None:
    """Load (or compile) the pyramid kernels on a worker thread, once per process."""
    global _warmed
    with _warm_lock:
        if _warmed:
            return
        _warmed = True
    from analyzer._kernels import warm_up

    threading.Thread(target=warm_up, name="analyzer-warm-up", daemon=True).start()


class AnalyzerWorkspace(QMainWindow):
    """Tick-by-tick history from the HDF5 tick store on one synchronized time axis.

    Signals
    -------
    store_opened(str)
        A tick store was opened and listed (its path).
    journal_opened(str)
        A journal is being read to overlay (its path).
    day_opened(str, str)
        An instrument-day was charted (symbol, day).
    overlay_loaded(int)
        A journal was overlaid (the number of executions).
    error(str)
        Something could not be done (one line for the status bar).
    """

    key = "analyzer"
    title = "Trade Analyzer"

    store_opened = Signal(str)
    journal_opened = Signal(str)
    day_opened = Signal(str, str)
    overlay_loaded = Signal(int)
    error = Signal(str)

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        tz_name: str = "UTC",
        journal_dir: Path | None = None,
        engine_events: Any = None,
        engine_name: str = "engine",
        engine_snapshot: Callable[[], EngineSnapshot] | None = None,
        relays: RelaySettings | None = None,
    ) -> None:
        super().__init__(parent)
        self.relay_settings = relays or RelaySettings()
        self._relay_links: list[LiveLink] = []
        #: Where the console's engine journals (``Overlay engine journal`` reads the newest).
        self.journal_dir = journal_dir
        self.setObjectName("analyzerWorkspace")
        self.setDockNestingEnabled(True)
        self.stores: dict[str, TickStore] = {}
        self.days: list[InstrumentDay] = []
        self.overlay: Overlay | None = None
        self.fix_chain: list[FixMessageRecord] = []
        self.clicked_execution: Any = None
        self.last_depth: Depth | None = None

        self.empty = EmptyState(
            "No tick store open",
            "Tick-by-tick history from the HDF5 tick store appears here: several instruments "
            "on one time axis, own orders and executions overlaid, and replays of the day.",
            "Open a tick store (File ▸ Open tick store…) or import market data with "
            "`qwconsole import`; then double-click a day in the browser.",
        )
        self.stack = ChartStack(tz_name)
        self.central = QStackedWidget()
        self.central.addWidget(self.empty)
        self.central.addWidget(self.stack)

        self.progress_row = JobProgress()
        self.progress_row.failed.connect(self._fail)

        body = QWidget()
        bl = QVBoxLayout(body)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setSpacing(0)
        bl.addWidget(self.central, 1)
        bl.addWidget(self.progress_row)
        self.setCentralWidget(body)

        self._build_toolbar(tz_name)
        self._build_docks()

        self.stack.cursor_moved.connect(self._on_cursor)
        self.stack.span_changed.connect(self._on_span)
        self.replay.moved.connect(self._on_replay)
        self.depth_lookup = Latest(DepthPane.depth_at, self)
        self.depth_lookup.result.connect(self._show_depth)
        #: The cursor the live edge last set (it keeps following the edge until moved).
        self._edge_cursor: int | None = None
        #: Whether the charts follow the live edge, and the view's width meanwhile (ns).
        #: Panning or zooming so that the newest row leaves the view stops it; bringing the
        #: view back to it (or *Follow live*) starts it again.
        self.following = True
        self.window_ns = LIVE_WINDOW_NS
        #: The console's engine, followed live from the bridge's batches (``engine_events``:
        #: its ``events_received`` signal; the Analyzer never drains the client itself).
        self.live: LiveLink | None = None
        if engine_events is not None:
            self.live = LiveLink(LiveFeed(engine_name), self._live_charts, self)
            self.live.instruments_changed.connect(self._list_live)
            self.live.drawn.connect(self._on_live_drawn)
            engine_events.connect(self.live.on_events)
            if engine_snapshot is not None:
                self._read_engine_state(engine_snapshot)
        self.follow_action.setEnabled(self.live is not None or bool(self.relay_settings.choices))
        _warm_kernels()

    # ------------------------------------------------------------------ building
    def _build_toolbar(self, tz_name: str) -> None:
        bar = QToolBar("Analyzer", self)
        bar.setObjectName("analyzerToolbar")
        bar.setMovable(False)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.open_action = QAction("Open tick store…", self)
        self.open_action.triggered.connect(self._choose_store)
        self.journal_action = QAction("Overlay journal…", self)
        self.journal_action.triggered.connect(self._choose_journal)
        self.engine_journal_action = QAction("Overlay engine journal", self)
        self.engine_journal_action.setToolTip(
            "Overlay (or re-read) today's journal of the console's engine: its orders and fills "
            "so far"
        )
        self.engine_journal_action.setEnabled(self.journal_dir is not None)
        self.engine_journal_action.triggered.connect(self.overlay_engine_journal)
        self.span_action = QAction("Span statistics", self)
        self.span_action.setCheckable(True)
        self.span_action.setToolTip("Select a span on the charts and show its statistics")
        self.span_action.toggled.connect(self._toggle_span)
        self.chart_action = QAction("Chart selected", self)
        self.chart_action.setToolTip(
            "Chart the selected days (consecutive days of one symbol as one series)"
        )
        self.chart_action.triggered.connect(self.chart_selected)
        self.clear_action = QAction("Close charts", self)
        self.clear_action.setToolTip("Close every chart (the stores stay open)")
        self.clear_action.triggered.connect(self.close_charts)
        self.fit_action = QAction("Whole day", self)
        self.fit_action.triggered.connect(self.fit)
        self.follow_action = QAction("Follow live", self)
        self.follow_action.setToolTip("Live charts: follow the newest events again (End)")
        self.follow_action.setShortcut(QKeySequence("End"))
        self.follow_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.follow_action.triggered.connect(self.follow_live)
        self.relay_action = QAction("Live from relay…", self)
        self.relay_action.setToolTip(
            "Chart an instrument of a market-data relay the console watches ([relays] watch)"
        )
        self.relay_action.triggered.connect(self.show_relays)
        bar.addAction(self.open_action)
        bar.addAction(self.chart_action)
        bar.addAction(self.journal_action)
        bar.addAction(self.engine_journal_action)
        bar.addAction(self.clear_action)
        bar.addAction(self.relay_action)
        bar.addSeparator()
        bar.addAction(self.fit_action)
        bar.addAction(self.follow_action)
        bar.addAction(self.span_action)
        bar.addSeparator()
        bar.addWidget(QLabel(" Time zone "))
        self.zone_box = QComboBox()
        self.zone_box.setObjectName("analyzerZone")
        for z in ZONES:
            self.zone_box.addItem(z)
        self.zone_box.setCurrentText(tz_name)
        self.zone_box.currentTextChanged.connect(self.stack.set_zone)
        bar.addWidget(self.zone_box)
        bar.addSeparator()
        self.replay = ReplayBar()
        for key, slot in (("Space", self.replay.play.toggle), ("Right", self.replay.step_event)):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
        self.replay.set_zone(tz_name)
        self.zone_box.currentTextChanged.connect(self.replay.set_zone)
        bar.addWidget(self.replay)

    def _build_docks(self) -> None:
        self.browser = DayBrowser()
        self.browser.open_requested.connect(self.open_day)
        # Four rows at least, whatever the window's size (it showed 1.5 rows at 1400x860).
        self.browser.setMinimumHeight(
            4 * self.browser.verticalHeader().defaultSectionSize()
            + self.browser.horizontalHeader().sizeHint().height()
            + 2 * self.browser.frameWidth()
        )
        self.browser_dock = self._dock("Tick store", "analyzerBrowserDock", self.browser)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.browser_dock)

        self.depth_pane = DepthPane()
        self.depth_pane.symbols.currentTextChanged.connect(self._on_ladder_symbol)
        self.ladder_dock = self._dock("Depth at cursor", "analyzerLadderDock", self.depth_pane)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.ladder_dock)

        self.stats = StatsTable()
        self.stats_dock = self._dock("Span statistics", "analyzerStatsDock", self.stats)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.stats_dock)

        self.fix = FixInspector()
        # Docked below the charts: it may be squeezed (the window sets the workspace's
        # minimum size, and the Monitor's is the smaller one).
        self.fix.setMinimumSize(160, 60)
        self.fix_dock = self._dock("FIX messages of the clicked order", "analyzerFixDock", self.fix)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.fix_dock)
        self.history = OrderHistory()
        self.history_dock = self._dock("Order history", "analyzerHistoryDock", self.history)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.history_dock)
        self.relay_panel = RelaySourcePanel(self.relay_settings, self._live_charts)
        self.relay_panel.ready.connect(self.chart_relay)
        self.relay_panel.error.connect(self._fail)
        self.relay_dock = self._dock("Relays", "analyzerRelayDock", self.relay_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.relay_dock)
        self.tabifyDockWidget(self.browser_dock, self.fix_dock)
        self.tabifyDockWidget(self.fix_dock, self.history_dock)
        self.tabifyDockWidget(self.history_dock, self.relay_dock)
        self.browser_dock.raise_()
        self.resizeDocks([self.ladder_dock], [380], Qt.Orientation.Horizontal)
        self.resizeDocks([self.ladder_dock, self.stats_dock], [340, 300], Qt.Orientation.Vertical)
        self.resizeDocks([self.browser_dock], [230], Qt.Orientation.Vertical)

    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        return dock

    # ------------------------------------------------------------------ store and days
    def _choose_store(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open tick store", "", "Tick stores (*.h5 *.hdf5);;All files (*)"
        )
        if path:
            self.open_store(path)

    def open_store(self, path: str | Path) -> bool:
        """Open a tick store (besides those open) and list its days; report failures."""
        store = None
        try:
            store = TickStore(path)
            entries = browse(store)
        except Exception as e:  # a damaged store included: the reason names it (issue 16)
            if store is not None:
                store.close()
            reason = str(e).removeprefix(f"{Path(path)}: ")
            self._fail(f"{path}: cannot open the tick store: {reason}")
            return False
        old = self.stores.pop(str(store.path), None)
        if old is not None:
            old.close()
        self.stores[str(store.path)] = store
        self.browser.add_entries(entries)
        self.browser_dock.raise_()
        if not self.days:
            self.empty.title_label.setText("No day charted")
            self.empty.body_label.setText(
                f"{len(self.browser.entries)} instrument-days in {len(self.stores)} tick "
                "store(s), listed under Tick store below with their row counts and time spans."
            )
            self.empty.hint_label.setText(
                "Double-click a day to chart it, or select several (one symbol's consecutive "
                "days chart as one series) and press Chart selected."
            )
        self.store_opened.emit(str(path))
        return True

    def chart_first(self) -> Job | None:
        """Chart the first listed instrument-day of the open stores (nothing if none)."""
        entries = [e for e in self.browser.entries if not e.store.startswith(LIVE_PREFIX)]
        if not entries:
            return None
        e = entries[0]
        return self.open_day(e.symbol, e.day, e.store)

    def chart_selected(self) -> list[Job]:
        """Chart the browser's selected rows: consecutive days of one symbol as one chart."""
        groups: dict[tuple[str, str], list[str]] = {}
        for e in self.browser.selected():
            groups.setdefault((e.store, e.symbol), []).append(e.day)
        jobs = [self.open_day(sym, days, store) for (store, sym), days in groups.items()]
        return [j for j in jobs if j is not None]

    def open_day(self, symbol: str, day: str | Sequence[str], store: str = "") -> Job | None:
        """Chart ``symbol`` on ``day`` (or several days as one series) on a worker thread.

        ``store`` is the path of an open store (default: the first that holds the day).
        """
        if store.startswith(LIVE_PREFIX):
            relayed = self._relay_live(store)
            if relayed is not None:
                self.chart_relay(relayed)
            else:
                self.chart_live(symbol)
            return None
        days = [day] if isinstance(day, str) else list(day)
        st = self.stores.get(store) if store else None
        if st is None:
            st = next((s for s in self.stores.values() if set(days) <= set(s.days(symbol))), None)
        if st is None:
            self._fail(f"{symbol} {', '.join(days)}: not in any open tick store")
            return None
        try:
            source = StoreDay(st, symbol, days)
        except (KeyError, ValueError) as e:
            self._fail(str(e).strip("'\""))
            return None
        if any(
            d.symbol == symbol and d.day == source.day and getattr(d.source, "store", None) is st
            for d in self.days
        ):
            return None

        def work(progress: Any, token: Any) -> InstrumentDay:
            return open_day(source, progress=progress, cancel=token)

        job = Job(f"open {symbol} {source.day}", work, self)
        job.finished.connect(self._day_ready)
        return self._start(job)

    def add_day(self, day: InstrumentDay) -> TickChart:
        """Chart an instrument-day opened elsewhere (e.g. an in-memory one)."""
        return self._day_ready(day)

    def _day_ready(self, day: InstrumentDay, kind: type[TickChart] | None = None) -> TickChart:
        if any(d.symbol == day.symbol for d in self.days):
            store = getattr(day.source, "store", None)
            where = Path(store.path).stem if store is not None else day.day
            day.label = f"{day.symbol} ({'live' if isinstance(day, LiveInstrument) else where})"
        self.days.append(day)
        chart = self.stack.add(day, kind)
        chart.getPlotItem().getViewBox().sigRangeChangedManually.connect(
            lambda *_: self._on_user_view()
        )
        # A click explains the overlay of the chart clicked (a live chart has its own).
        chart.execution_clicked.connect(
            lambda symbol, row, c=chart: self.show_execution(symbol, row, c.overlay)
        )
        chart.order_clicked.connect(
            lambda symbol, oid, ts, c=chart: self.show_order(symbol, oid, ts, c.overlay)
        )
        if self.overlay is not None:
            self.set_overlay(self.overlay)
        self.central.setCurrentWidget(self.stack)
        self.depth_pane.add(day)
        self.replay.set_days(self.days)
        if self.stack.cursor_ns is None:
            t0, t1 = day.span
            self.stack.set_cursor((t0 + t1) // 2)
        self.day_opened.emit(day.symbol, day.day)
        return chart

    # ------------------------------------------------------------------ live engine
    def _read_engine_state(self, snapshot: Callable[[], EngineSnapshot]) -> Job:
        """Start from the engine's state: its instruments and orders (read off the GUI thread).

        The Analyzer is built when first shown, after the engine listed its instruments; the
        snapshot lists them again. Events the bridge delivers meanwhile are taken as they come.
        """

        def work(progress: Any, _token: Any) -> EngineSnapshot:
            progress(0.0, "reading the engine's state")
            return snapshot()

        def ready(snap: EngineSnapshot) -> None:
            assert self.live is not None
            self.live.on_events([EventRecord(snap.seq, e) for e in snap.state_events])

        job = Job("engine state", work, self)
        job.finished.connect(ready)
        return self._start(job)

    def _live_charts(self) -> list[LiveChart]:
        return [c for c in self.stack.charts if isinstance(c, LiveChart)]

    def _links(self) -> list[LiveLink]:
        """Return every live link: the engine's and each relay stream's."""
        links = [live.link for live in self.relay_panel.lives.values()]
        return links if self.live is None else [self.live, *links]

    def _live_now(self) -> int:
        return max((link.feed.now_ns for link in self._links()), default=0)

    def _relay_live(self, store: str) -> RelayLive | None:
        return next(
            (r for r in self.relay_panel.lives.values() if r.link.feed.store == store), None
        )

    def show_relays(self) -> None:
        """Bring the Relays tab forward (pick a relay and an instrument to chart live)."""
        self.relay_dock.show()
        self.relay_dock.raise_()
        self.relay_panel.relay_box.setFocus()

    def chart_relay(self, relayed: RelayLive) -> LiveChart | None:
        """Chart a relay stream's instrument (:class:`RelaySourcePanel` made it ready)."""
        link = relayed.link
        if link not in self._relay_links:  # the first time: connect and list it
            self._relay_links.append(link)
            link.drawn.connect(self._on_live_drawn)
            link.instruments_changed.connect(lambda: self.browser.add_entries(link.feed.entries()))
            self.browser.add_entries(link.feed.entries())
        mine = link.feed.instruments.get(relayed.symbol)
        for c in self._live_charts():
            if c.day is mine:
                return c
        try:
            day = link.feed.chart(relayed.symbol)
        except KeyError as e:
            self._fail(str(e).strip("'\""))
            return None
        chart = self._day_ready(day, LiveChart)
        assert isinstance(chart, LiveChart)
        if len(self.stack.charts) == 1:
            self.window_ns = LIVE_WINDOW_NS
        self.follow_action.setEnabled(True)
        self.follow_live()
        return chart

    def _list_live(self) -> None:
        assert self.live is not None
        entries = self.live.feed.entries()
        self.browser.add_entries(entries)
        if not self.days and not self.stores:
            self.empty.title_label.setText("No instrument charted")
            self.empty.body_label.setText(
                f"The engine {self.live.feed.engine} lists {len(entries)} instruments: they are "
                "under Tick store below as live rows, with the quotes and trades received so far."
            )
            self.empty.hint_label.setText(
                "Double-click a live row to chart it as it trades, with the engine's own orders "
                "and fills; open a tick store (File ▸ Open tick store…) for history."
            )

    def chart_live(self, symbol: str) -> LiveChart | None:
        """Chart the live engine's ``symbol``: quotes, trades and own orders as they arrive."""
        if self.live is None:
            self._fail(f"{symbol}: no live engine to follow")
            return None
        mine = self.live.feed.instruments.get(symbol)
        for c in self._live_charts():
            if c.day is mine:
                return c
        try:
            day = self.live.feed.chart(symbol)
        except KeyError as e:
            self._fail(str(e).strip("'\""))
            return None
        chart = self._day_ready(day, LiveChart)
        assert isinstance(chart, LiveChart)
        if len(self.stack.charts) == 1:
            self.window_ns = LIVE_WINDOW_NS
        chart.set_live_overlay(self.live.feed.orders.overlay())
        self.follow_live()
        return chart

    def follow_live(self) -> None:
        """Make the charts, and the cursor, follow the newest events again."""
        if not self._links() or not self._live_charts():
            return
        self.following = True
        self._edge_cursor = self.stack.cursor_ns
        self._on_live_drawn(True)

    def _live_edge(self) -> tuple[int, int]:
        """Return the first and the newest row over the live charts (ns)."""
        spans = [c.live.span for c in self._live_charts()]
        return min(s[0] for s in spans), max(s[1] for s in spans)

    def _on_user_view(self) -> None:
        # The user moved the view (mouse, Whole day): follow while it shows the newest row.
        if not self._links() or not self._live_charts():
            return
        t0, t1 = self.stack.view_ns()
        first, newest = self._live_edge()
        self.following = t1 >= newest - 1
        # A view that starts before the first row is a young instrument's: its width says
        # nothing of the window wanted, unless the user widened it.
        if self.following and (t0 > first or t1 - t0 > self.window_ns):
            self.window_ns = max(t1 - t0, 1000)

    def _on_live_drawn(self, changed: bool) -> None:
        charts = self._live_charts()
        if not charts or not self._links():
            return
        now = self._live_now()
        if self.following and not self.replay.timer.isActive():
            start, end = follow_span(now, self._live_edge()[0], self.window_ns)
            self.stack.set_view(start, end)  # every chart redraws (their x axes are linked)
        elif changed:
            for c in charts:
                c.on_data()
        self._on_live_edge(now)

    def _on_live_edge(self, now: int) -> None:
        # The crosshair (and the ladder) show the newest quote while nobody moved them:
        # not while the mouse is over a chart, a replay runs, or after a click placed them.
        if not self.following or self.replay.timer.isActive():
            return
        if self.stack.cursor_ns != self._edge_cursor:
            return
        if any(c.underMouse() for c in self.stack.charts):
            return
        self._edge_cursor = int(now)
        self.stack.set_cursor(int(now))

    def close_charts(self) -> None:
        """Close every chart and forget the overlay (the stores stay open)."""
        self.replay.play.setChecked(False)
        for chart in list(self.stack.charts):
            self.stack.remove(chart)
        self.stack.cursor_ns = None
        self.stack.set_span(None)
        self.span_action.setChecked(False)
        self.days.clear()
        self.overlay = None
        self.depth_pane.clear()
        self.replay.ts = None
        self.replay.set_days([])
        self.central.setCurrentWidget(self.empty)

    def fit(self) -> None:
        """Show the whole of every charted day."""
        spans = [d.span for d in self.days]
        if spans:
            self.stack.set_view(min(s[0] for s in spans), max(s[1] for s in spans))
            self._on_user_view()

    # ------------------------------------------------------------------ journal
    def overlay_engine_journal(self) -> Job | None:
        """Overlay the newest journal in :attr:`journal_dir` (the running engine's, live).

        The engine keeps appending to it; the reader stops at the last whole record, so this
        can be repeated to follow the day.
        """
        folder = self.journal_dir
        files = sorted(folder.glob("*.qwj"), key=lambda p: p.stat().st_mtime) if folder else []
        if not files:
            self._fail(f"{folder}: no engine journal yet")
            return None
        return self.load_journal(files[-1])

    def _choose_journal(self) -> None:
        start = str(self.journal_dir) if self.journal_dir is not None else ""
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Overlay journal", start, "Journals (*.qwj);;All files (*)"
        )
        if paths:
            self.load_journal(paths)

    def load_journal(self, paths: str | Path | Iterable[str | Path]) -> Job:
        """Overlay the orders and executions of one or more journals (read off the GUI thread)."""
        files = [paths] if isinstance(paths, str | Path) else list(paths)
        for f in files:
            self.journal_opened.emit(str(f))

        def work(progress: Any, _token: Any) -> Overlay:
            progress(0.0, "reading the journal")
            return load_overlay(files)

        job = Job("overlay journal", work, self)
        job.finished.connect(self.set_overlay)
        return self._start(job)

    def set_overlay(self, overlay: Overlay) -> None:
        """Overlay a journal on the charts of its symbols.

        When several charts show one symbol (spot and perpetual of one pair from two stores),
        the journal goes on the one whose prices its orders match (journal prices are ticks:
        on the wrong tick size they land far off the quotes).
        """
        self.overlay = overlay
        targets = {id(c) for c in self._overlay_targets(overlay)}
        for c in self.stack.charts:
            if not isinstance(c, LiveChart):  # a live chart shows the engine's own orders
                c.set_overlay(overlay if id(c) in targets else None)
        self.overlay_loaded.emit(int(overlay.day.executions.shape[0]))

    def _overlay_targets(self, overlay: Overlay) -> list[TickChart]:
        out: list[TickChart] = []
        for symbol in overlay.symbols:
            charts = [
                c
                for c in self.stack.charts
                if c.day.symbol == symbol and not isinstance(c, LiveChart)
            ]
            if len(charts) > 1:
                seg = overlay.segments(symbol)
                px = float(np.median(seg.px)) if seg.n else 0.0

                def miss(c: TickChart, px: float = px) -> float:
                    q = c.day.quote_at(c.day.span[1])
                    ref = q.bid if not math.isnan(q.bid) else q.last_px
                    return abs(px * c.day.source.tick_size - ref) if not math.isnan(ref) else 1e300

                charts = [min(charts, key=miss)]
            out += charts
        return out

    def chart(self, label: str) -> TickChart:
        """Return the chart of ``label`` (a symbol, or "symbol (store)" for a second store)."""
        for c in self.stack.charts:
            if c.day.label == label:
                return c
        raise KeyError(f"{label} is not charted")

    def show_execution(self, symbol: str, row: int, overlay: Overlay | None = None) -> None:
        """Show an execution's FIX chain and put the cursor (and the ladder) on it.

        ``overlay``: the one the execution belongs to (default: the journal's).
        """
        overlay = overlay if overlay is not None else self.overlay
        if overlay is None:
            return
        ex = overlay.executions(symbol)[row]
        chain, pos = overlay.execution_chain(int(ex["order_id"]), overlay.exec_id(ex))
        self._show_history(overlay, symbol, int(ex["order_id"]), int(ex["ts"]))
        self._show_chain(chain, pos)
        self._follow_symbol(symbol)
        self.clicked_execution = ex
        self.stack.set_cursor(int(ex["ts"]))
        self.replay.seek(int(ex["ts"]))

    def show_order(
        self, symbol: str, order_id: int, ts: int, overlay: Overlay | None = None
    ) -> None:
        """Show an order's FIX chain and the book at the clicked time."""
        overlay = overlay if overlay is not None else self.overlay
        if overlay is None:
            return
        self._show_history(overlay, symbol, order_id, ts)
        self._show_chain(overlay.order_chain(order_id), -1)
        self._follow_symbol(symbol)
        self.stack.set_cursor(int(ts))

    def _show_history(self, overlay: Overlay, symbol: str, order_id: int, at_ts: int) -> None:
        """List the order's changes and fills (every journal has them, backtests too)."""
        chart = next(
            (c for c in self.stack.charts if c.day.symbol == symbol and c.overlay is overlay),
            None,
        )
        tick = chart.day.source.tick_size if chart is not None else 1.0
        decimals = chart.decimals if chart is not None else 2
        self.history.show_order(overlay, order_id, at_ts, tick, decimals)
        self.history_dock.setWindowTitle(
            f"Order history · {symbol} order {order_id} · {overlay.client_order_id(order_id)}"
        )

    def _show_chain(self, chain: list[FixMessageRecord], pos: int) -> None:
        self.fix_chain = chain
        # A backtest journal has no FIX messages: the order's history tells its story.
        (self.fix_dock if chain else self.history_dock).raise_()
        show_fix_chain(self.fix, chain, pos)

    # ------------------------------------------------------------------ cursor, ladder, span
    def _follow_symbol(self, symbol: str) -> None:
        shown = [c.day.label for c in self.stack.charts if c.overlay is not None]
        label = next((d.label for d in self.days if d.symbol == symbol and d.label in shown), "")
        label = label or next((d.label for d in self.days if d.symbol == symbol), symbol)
        if self.depth_pane.symbols.currentText() != label:
            self.depth_pane.symbols.setCurrentText(label)

    def _on_ladder_symbol(self, label: str) -> None:
        # The pane shows the symbol's book; read it at the cursor.
        if self.stack.cursor_ns is not None:
            self._on_cursor(self.stack.cursor_ns)

    def _on_cursor(self, ts: int) -> None:
        label = self.depth_pane.symbols.currentText()
        day = next((d for d in self.days if d.label == label), None)
        if day is not None:
            self.depth_lookup.request((day, int(ts)))
        if not self.replay.timer.isActive():
            self.replay.seek(int(ts))

    def _show_depth(self, result: tuple[str, Depth, int]) -> None:
        symbol, depth, last = result
        self.last_depth = depth
        self.depth_pane.show_depth(symbol, depth, last, self.replay.tz_name)

    def _on_replay(self, ts: int) -> None:
        self.stack.set_cursor(ts)
        t0, t1 = self.stack.view_ns()
        if not t0 <= ts <= t1:
            half = (t1 - t0) // 2
            self.stack.set_view(ts - half, ts + half)

    def _toggle_span(self, on: bool) -> None:
        if not on:
            self.stack.set_span(None)
            return
        t0, t1 = self.stack.view_ns()
        third = (t1 - t0) // 3
        self.stack.set_span((t0 + third, t1 - third))

    def _on_span(self, t0: int, t1: int) -> None:
        self.show_stats(int(t0), int(t1))

    def show_stats(self, t0: int, t1: int) -> list[RangeStats]:
        """Compute and show the statistics of ``[t0, t1]`` for every charted instrument."""
        stats = [d.range_stats(t0, t1) for d in self.days]
        charts = {id(c.day): c for c in self.stack.charts}
        self.stats.show_stats(
            stats,
            [charts[id(d)].decimals if id(d) in charts else 2 for d in self.days],
            [d.label for d in self.days],
        )
        return stats

    # ------------------------------------------------------------------ jobs
    @property
    def jobs(self) -> list[Job]:
        """The jobs running (opening days, reading journals and the engine's state)."""
        return self.progress_row.jobs

    def _start(self, job: Job) -> Job:
        return self.progress_row.start(job)

    def cancel_jobs(self) -> None:
        """Cancel every running job."""
        self.progress_row.cancel()

    def _fail(self, message: str) -> None:
        log.warning("%s", message)
        self.progress_row.say(message)
        self.error.emit(message)

    def replay_step_ns(self) -> int:
        """Return how far the replay moves per timer tick at the current speed (ns)."""
        return int(REPLAY_TICK_MS * 1_000_000 * float(self.replay.speed.currentData()))

    def closeEvent(self, event: Any) -> None:
        """Stop running jobs and relay streams; close the stores."""
        self.cancel_jobs()
        self.relay_panel.close_streams()
        self.progress_row.wait(2.0)
        for store in self.stores.values():
            store.close()
        self.stores.clear()
        super().closeEvent(event)


__all__ = ["AnalyzerWorkspace"]
