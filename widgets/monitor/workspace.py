# SPDX-License-Identifier: MIT
"""The Trade Monitor workspace: what a trader watches all day.

The blotter is the centre; executions, positions, logs and alerts, strategies, the order ticket,
the FIX messages and the engine's events are docks that can be moved, tabbed and floated (each
has a stable object name, so the layout the main window saves restores). The kill switch sits
in a fixed bar at the top and cannot be hidden.

Engine events arrive in batches from the bridge (up to 60 a second); the workspace gathers them
and updates the blotter, ticket and kill switch at most :data:`MAX_UPDATES_PER_S` times a second,
each table with one model update per flush. The other views take turns on a second timer (one
"lane" per 25 ms tick): positions and strategies every other tick (20 a second), and each list
(executions, logs, FIX messages, engine events) :data:`LIST_UPDATES_PER_S` times a second, so no
single pass of the event loop carries the work and the repaint of every view.
"""

from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QByteArray, QDataStream, QIODevice, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QShowEvent
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar, QToolBar, QToolButton, QWidget

from engine.commands import (
    CancelAll,
    CancelOrder,
    Command,
    CommandError,
    CommandResult,
    ControlSession,
    ReplaceOrder,
    SubmitOrder,
)
from engine.enums import AlertLevel, Side
from engine.events import Event, EventRecord, OrderFilled, OrderView
from widgets.fix_inspector import DescribeField, FixInspector
from widgets.kill_switch import KillSwitch
from widgets.ladder import PriceLadder
from widgets.log_view import LogView
from widgets.monitor.context import CommandChannel, CommandSink, MonitorContext
from widgets.monitor.engine_events import EngineEventsView
from widgets.monitor.executions import ExecutionsView
from widgets.monitor.formats import is_working
from widgets.monitor.orders import OrderCounts, OrdersView
from widgets.monitor.positions import PositionsView
from widgets.monitor.relays import RelaysPanel
from widgets.monitor.risk import RiskLimitsView
from widgets.monitor.strategies import StrategiesView
from widgets.order_ticket import OrderTicket
from widgets.sessions_panel import SessionsPanel
from widgets.tables import DataTableView

#: Most model updates per second; batches arriving faster are merged.
MAX_UPDATES_PER_S = 20
_FLUSH_MS = 1000 // MAX_UPDATES_PER_S
#: The lists (executions, logs, FIX messages, engine events) update at most this often: at
#: thousands of rows a second nobody reads them row by row, and each update repaints them.
LIST_UPDATES_PER_S = 5
#: One lane of views is flushed per tick of the lanes' timer.
_LANE_TICK_MS = 25
#: Lane order: positions and strategies (lane 0) every other tick, the four lists in between.
_LANE_SCHEDULE = (0, 1, 0, 2, 0, 3, 0, 4)


#: Marks a workspace state written by :meth:`MonitorWorkspace.saveState`.
_STATE_MAGIC = "qwconsole.monitor"
_STATE_VERSION = 1


class _View(Protocol):
    def on_events(self, batch: Sequence[EventRecord]) -> None: ...


class _Feed:
    """One view and the engine event types it reads (its ``EVENT_TYPES``; ``None``: all).

    At 20,000 events a second most views read a small share of the stream; handing each only
    its share costs one set look-up per event instead of a chain of ``isinstance`` tests in
    every view.
    """

    __slots__ = ("_wants", "types", "view")

    def __init__(self, view: _View) -> None:
        self.view = view
        self.types: tuple[type[Event], ...] | None = getattr(view, "EVENT_TYPES", None)
        self._wants: dict[type[Event], bool] = {}

    def deliver(self, batch: list[EventRecord], kinds: set[type[Event]]) -> None:
        """Hand the view the records of ``batch`` it reads (nothing when it reads none).

        ``kinds`` holds the event types present in ``batch``.
        """
        if self.types is None:
            self.view.on_events(batch)
            return
        wants = self._wants
        match = set()
        for kind in kinds:
            w = wants.get(kind)
            if w is None:
                w = wants[kind] = issubclass(kind, self.types)
            if w:
                match.add(kind)
        if not match:
            return
        if len(match) == len(kinds):
            self.view.on_events(batch)
        else:
            self.view.on_events([r for r in batch if type(r.event) in match])


class MonitorWorkspace(QMainWindow):
    """Orders, executions, positions and P&L, logs, strategies, ticket and kill switch.

    Parameters
    ----------
    send : CommandSink | None
        Sends a command to the engine (``EngineClient.send``); see :meth:`set_command_sink`.
    describe : DescribeField | None
        Names a FIX field and its value for the FIX inspector (``tag, value -> (name,
        meaning)``), injected by the app.
    parent : QWidget | None
        Qt parent.
    """

    key = "monitor"
    title = "Trade Monitor"

    def __init__(
        self,
        send: CommandSink | None = None,
        describe: DescribeField | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("monitorWorkspace")
        self.setDockOptions(
            QMainWindow.DockOption.AnimatedDocks
            | QMainWindow.DockOption.AllowTabbedDocks
            | QMainWindow.DockOption.AllowNestedDocks
        )
        self.ctx = MonitorContext(self)
        self.commands = CommandChannel(send, self)
        self._pending: list[EventRecord] = []
        self._last_ts = 0
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(_FLUSH_MS)
        self._flush_timer.timeout.connect(self._on_flush_timer)
        # The lanes take turns, one per tick (see _LANE_SCHEDULE).
        self._lanes_timer = QTimer(self)
        self._lanes_timer.setInterval(_LANE_TICK_MS)
        self._lanes_timer.timeout.connect(self._flush_next_lane)
        self._lane_turn = 0
        #: Model flushes so far (the benchmark checks their rate).
        self.flushes = 0

        # Views.
        self.orders_view = OrdersView(self.ctx)
        self.executions_view = ExecutionsView(self.ctx)
        self.positions_view = PositionsView(self.ctx)
        self.strategies_view = StrategiesView(
            self.ctx,
            lambda sid: self.orders_view.counts.get(sid) or OrderCounts(),
            self.positions_view.strategy_pnl,
        )
        self.log_view = LogView()
        self.ticket = OrderTicket(self.ctx.formats)
        self.kill_switch = KillSwitch()
        self.fix_view = FixInspector(describe)
        self.events_view = EngineEventsView()
        self.ladder = PriceLadder()
        self.sessions_view = SessionsPanel()
        self.risk_view = RiskLimitsView(self.ctx.strategy_name)
        self.relays_view = RelaysPanel()  # fed by the app (app.relays), not by engine events
        self.orders_view.setMinimumSize(200, 120)
        self.setCentralWidget(self.orders_view)
        # What a trader acts on at once, then the lanes (see _on_flush_timer).
        self._ctx_feed = _Feed(self.ctx)
        first: tuple[_View, ...] = (self.orders_view, self.kill_switch, self.ticket)
        lanes: tuple[tuple[_View, ...], ...] = (
            (self.positions_view, self.strategies_view, self.ladder),
            (self.executions_view,),
            (self.log_view,),
            (self.fix_view,),
            (self.events_view, self.sessions_view, self.risk_view),
        )
        self._first_views = tuple(_Feed(v) for v in first)
        self._lanes = tuple(tuple(_Feed(v) for v in lane) for lane in lanes)
        self._lane_pending: list[list[EventRecord]] = [[] for _ in self._lanes]

        # Docks, each with a stable object name for the saved layout. The right column (ticket,
        # strategies) runs the full height; the bottom row sits under the blotter.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setCorner(Qt.Corner.TopRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        bottom = Qt.DockWidgetArea.BottomDockWidgetArea
        right = Qt.DockWidgetArea.RightDockWidgetArea
        self.executions_dock = self._dock(
            "Executions", "monitorExecutionsDock", self.executions_view, bottom
        )
        self.positions_dock = self._dock(
            "Positions && P&&L", "monitorPositionsDock", self.positions_view, bottom
        )
        self.logs_dock = self._dock("Logs && alerts", "monitorLogsDock", self.log_view, bottom)
        self.fix_dock = self._dock("FIX messages", "monitorFixDock", self.fix_view, bottom)
        self.events_dock = self._dock(
            "Engine events", "monitorEngineEventsDock", self.events_view, bottom
        )
        self.ticket_dock = self._dock("Order ticket", "monitorTicketDock", self.ticket, right)
        self.strategies_dock = self._dock(
            "Strategies", "monitorStrategiesDock", self.strategies_view, right
        )
        self.splitDockWidget(self.executions_dock, self.positions_dock, Qt.Orientation.Horizontal)
        for dock in (self.logs_dock, self.fix_dock, self.events_dock):
            self.tabifyDockWidget(self.executions_dock, dock)
        self.executions_dock.raise_()
        self.ladder_dock = self._dock("Depth ladder", "monitorLadderDock", self.ladder, right)
        self.sessions_dock = self._dock(
            "FIX sessions", "monitorSessionsDock", self.sessions_view, bottom
        )
        self.splitDockWidget(self.ticket_dock, self.strategies_dock, Qt.Orientation.Vertical)
        self.tabifyDockWidget(self.strategies_dock, self.ladder_dock)
        self.tabifyDockWidget(self.executions_dock, self.sessions_dock)
        self.risk_dock = self._dock("Risk limits", "monitorRiskDock", self.risk_view, bottom)
        self.tabifyDockWidget(self.executions_dock, self.risk_dock)
        self.relays_dock = self._dock("Relays", "monitorRelaysDock", self.relays_view, bottom)
        self.tabifyDockWidget(self.executions_dock, self.relays_dock)
        self.ladder_dock.raise_()
        self.executions_dock.raise_()
        self._sized = False

        # The kill switch bar: fixed, always visible.
        bar = QToolBar("Kill switch", self)
        bar.setObjectName("monitorKillSwitchBar")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.toggleViewAction().setEnabled(False)
        bar.toggleViewAction().setVisible(False)
        bar.addWidget(self.kill_switch)
        self.alerts_badge = QToolButton()
        self.alerts_badge.setObjectName("alertsBadge")
        self.alerts_badge.setToolTip("Unread warnings and errors: show the log (Ctrl+Shift+A)")
        self.alerts_badge.clicked.connect(self.show_alerts)
        self.alerts_badge.setMinimumWidth(
            self.alerts_badge.fontMetrics().horizontalAdvance("⚠ 99,999 unread alerts") + 24
        )
        bar.addWidget(self.alerts_badge)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.kill_bar = bar
        self.log_view.unread_changed.connect(self._show_unread)
        self._show_unread(0)

        # Intents → commands → answers.
        for view in (self.kill_switch, self.ticket, self.strategies_view):
            view.command_requested.connect(self.commands.send)
            self.commands.result_received.connect(view.on_command_result)
        self.commands.result_received.connect(self._on_command_result)
        self.orders_view.order_selected.connect(self.ticket.set_order)
        self.orders_view.order_selected.connect(self._show_order_chain)
        self.executions_view.execution_selected.connect(self._show_execution_message)
        self.ladder.order_requested.connect(self._on_ladder_order)
        self.ladder.cancel_requested.connect(
            lambda order_id: self.commands.send(CancelOrder(order_id=order_id))
        )
        self.ladder.move_requested.connect(
            lambda order_id, px: self.commands.send(ReplaceOrder(order_id=order_id, px_ticks=px))
        )
        self.sessions_view.command_requested.connect(self.commands.send)
        self.ctx.formats_changed.connect(self.ticket.refresh_instruments)
        self._build_actions()

    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        # An explicit minimum lets the window shrink below the tool rows' natural widths; never
        # below the height its layout needs, though (the ticket's rows were squashed to 8 px).
        lay = widget.layout()
        widget.setMinimumSize(160, max(80, lay.minimumSize().height() if lay is not None else 0))
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(area, dock)
        return dock

    def saveState(self, version: int | None = 0) -> QByteArray:
        """Return the dock layout plus every table's columns (widths, order, hidden ones).

        The main window stores this as the workspace's state; :meth:`restoreState` reads it
        back, and still reads a plain ``QMainWindow`` state.
        """
        out = QByteArray()
        stream = QDataStream(out, QIODevice.OpenModeFlag.WriteOnly)
        stream.writeQString(_STATE_MAGIC)
        stream.writeInt32(_STATE_VERSION)
        stream << super().saveState(version or 0)
        tables = [t for t in self.findChildren(DataTableView) if t.objectName()]
        stream.writeInt32(len(tables))
        for table in tables:
            stream.writeQString(table.objectName())
            stream << table.horizontalHeader().saveState()
        return out

    def restoreState(
        self, state: QByteArray | bytes | bytearray | memoryview, version: int | None = 0
    ) -> bool:
        """Restore what :meth:`saveState` wrote (the default sizes are then left alone)."""
        self._sized = True
        data = state if isinstance(state, QByteArray) else QByteArray(bytes(state))
        stream = QDataStream(data, QIODevice.OpenModeFlag.ReadOnly)
        if stream.readQString() != _STATE_MAGIC or stream.readInt32() != _STATE_VERSION:
            return super().restoreState(data, version or 0)
        layout = QByteArray()
        stream >> layout
        ok = super().restoreState(layout, version or 0)
        tables = {t.objectName(): t for t in self.findChildren(DataTableView)}
        for _ in range(max(0, stream.readInt32())):
            name = stream.readQString()
            header = QByteArray()
            stream >> header
            if stream.status() != QDataStream.Status.Ok:
                return False
            if name in tables:
                tables[name].horizontalHeader().restoreState(header)
        return ok

    def showEvent(self, event: QShowEvent) -> None:
        """Give the docks their default sizes when shown for the first time."""
        super().showEvent(event)
        for bar in self.findChildren(QTabBar):  # tabbed docks: whole titles, scroll if needed
            bar.setElideMode(Qt.TextElideMode.ElideNone)
            bar.setUsesScrollButtons(True)
        if not self._sized:
            self._sized = True
            w = self.width()
            side = min(560, max(440, w // 4))  # the ladder: own orders ~80 px, volume
            self.resizeDocks([self.ticket_dock], [side], Qt.Orientation.Horizontal)
            self.resizeDocks(
                [self.ticket_dock, self.strategies_dock], [280, 600], Qt.Orientation.Vertical
            )
            self.resizeDocks([self.executions_dock], [self.height() // 3], Qt.Orientation.Vertical)
            self.resizeDocks(
                [self.executions_dock, self.positions_dock],
                [(w - side) * 11 // 20, (w - side) * 9 // 20],
                Qt.Orientation.Horizontal,
            )

    @property
    def docks(self) -> list[QDockWidget]:
        """Return every dock of the workspace."""
        return self.findChildren(QDockWidget)

    # ------------------------------------------------------------------ shortcuts
    def _build_actions(self) -> None:
        blotter = self.orders_view.table

        def action(
            name: str, text: str, keys: str, slot: Callable[[], object], owner: QWidget = self
        ) -> QAction:
            # Blotter actions fire only with the blotter focused (Del in a text field edits
            # text); the others anywhere in the workspace.
            a = QAction(text, owner)
            a.setObjectName(name)
            a.setShortcut(QKeySequence(keys))
            a.setShortcutContext(
                Qt.ShortcutContext.WidgetShortcut
                if owner is blotter
                else Qt.ShortcutContext.WidgetWithChildrenShortcut
            )
            a.triggered.connect(lambda _checked=False: slot())
            owner.addAction(a)
            return a

        self.new_order_action = action("action_new_order", "New order", "Ctrl+N", self.new_order)
        self.cancel_action = action(
            "action_cancel_selected", "Cancel selected orders", "Del", self.cancel_selected, blotter
        )
        self.replace_action = action(
            "action_replace_selected",
            "Replace selected order…",
            "Ctrl+R",
            self.replace_selected,
            blotter,
        )
        self.working_action = action(
            "action_toggle_working",
            "Working orders only / all orders",
            "Ctrl+Shift+W",
            self.orders_view.toggle_working_only,
        )
        self.search_action = action("action_search_log", "Search log", "Ctrl+F", self.search_log)
        self.ack_action = action(
            "action_ack_alerts", "Show and acknowledge alerts", "Ctrl+Shift+A", self.show_alerts
        )
        blotter.menu_actions = [self.cancel_action, self.replace_action]

    def new_order(self) -> None:
        """Show the order ticket and put the cursor in its quantity."""
        self.ticket_dock.show()
        self.ticket_dock.raise_()
        self.ticket.qty_edit.setFocus()
        self.ticket.qty_edit.selectAll()

    def cancel_selected(self) -> list[CancelOrder]:
        """Cancel every working order selected in the blotter; return the commands sent."""
        sent = []
        for o in self.orders_view.selected_orders():
            if is_working(o.status, o.leaves_qty_lots):
                command = CancelOrder(order_id=o.order_id)
                self.commands.send(command)
                sent.append(command)
        return sent

    def cancel_all(self, strategy_id: int | None = None) -> CancelAll:
        """Cancel every working order (of one strategy)."""
        command = CancelAll(strategy_id=strategy_id)
        self.commands.send(command)
        return command

    def replace_selected(self) -> None:
        """Load the selected order into the ticket to change its quantity or price."""
        orders = self.orders_view.selected_orders()
        if orders:
            self.ticket_dock.show()
            self.ticket_dock.raise_()
            self.ticket.load_order(orders[0])

    def search_log(self) -> None:
        """Show the log and put the cursor in its search box."""
        self.logs_dock.show()
        self.logs_dock.raise_()
        self.log_view.search_edit.setFocus()
        self.log_view.search_edit.selectAll()

    def show_alerts(self) -> None:
        """Show the log (warnings and worse first) and mark the alerts read."""
        self.logs_dock.show()
        self.logs_dock.raise_()
        self.log_view.mark_read()

    def _show_unread(self, n: int) -> None:
        b = self.alerts_badge
        b.setText(f"⚠ {n:,} unread alert{'s' if n != 1 else ''}" if n else "No unread alerts")
        b.setProperty("state", "bad" if n else "muted")
        b.style().unpolish(b)
        b.style().polish(b)
        self.logs_dock.setWindowTitle(f"Logs && alerts ({n:,})" if n else "Logs && alerts")

    # ------------------------------------------------------------------ FIX chains
    def _chain_of(self, order_id: int, client_order_id: str) -> tuple[str, ...]:
        order = self.orders_view.all_model.get(order_id)
        if order is None:
            return (client_order_id,)
        return (*order.orig_client_order_ids, order.client_order_id)

    def _show_order_chain(self, order: OrderView | None) -> None:
        """List the whole FIX chain of the order selected in the blotter."""
        if order is not None:
            self.fix_view.show_chain(
                (*order.orig_client_order_ids, order.client_order_id), order.client_order_id
            )

    def _show_execution_message(self, fill: OrderFilled | None) -> None:
        """Show the ExecutionReport (LastPx, LastQty…) of the execution selected."""
        if fill is not None:
            self.fix_view.show_execution(
                self._chain_of(fill.order_id, fill.client_order_id), fill.exec_id
            )

    # ------------------------------------------------------------------ commands
    def set_command_sink(self, send: CommandSink | None) -> None:
        """Send the widgets' commands through ``send`` (``EngineClient.send``)."""
        self.commands.set_sink(send)

    def _on_ladder_order(self, symbol: str, side: Side, px_ticks: int, qty_lots: int) -> None:
        self.commands.send(
            SubmitOrder(symbol=symbol, side=side, qty_lots=qty_lots, px_ticks=px_ticks)
        )

    def _on_command_result(self, command: Command, result: CommandResult) -> None:
        if isinstance(command, ControlSession):
            self.sessions_view.show_result(
                result.reason if isinstance(result, CommandError) else result.detail
            )
        if isinstance(result, CommandError):
            self.log_view.add_local(
                int(AlertLevel.WARNING),
                "console",
                f"{type(command).__name__} refused: {result.reason}",
                result.ts_handled or self._last_ts,
            )

    # ------------------------------------------------------------------ events
    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Take a batch of engine events; the views see it at the next flush (≤ 50 ms)."""
        if not batch:
            return
        self._pending.extend(batch)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def flush(self) -> None:
        """Apply every pending event to every view now."""
        self._flush_timer.stop()
        self._flush_first()
        for n in range(len(self._lanes)):
            self._flush_lane(n)

    def _on_flush_timer(self) -> None:
        self._flush_first()
        if not self._lanes_timer.isActive():
            self._lanes_timer.start()

    def _flush_first(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        self.flushes += 1
        self._last_ts = batch[-1].event.ts_event
        kinds = {type(r.event) for r in batch}
        self._ctx_feed.deliver(batch, kinds)
        for feed in self._first_views:
            feed.deliver(batch, kinds)
        for pending in self._lane_pending:
            pending.extend(batch)

    def _flush_next_lane(self) -> None:
        n = _LANE_SCHEDULE[self._lane_turn]
        self._lane_turn = (self._lane_turn + 1) % len(_LANE_SCHEDULE)
        self._flush_lane(n)
        if not any(self._lane_pending):
            self._lanes_timer.stop()

    def _flush_lane(self, n: int) -> None:
        batch, self._lane_pending[n] = self._lane_pending[n], []
        if batch:
            kinds = {type(r.event) for r in batch}
            for feed in self._lanes[n]:
                feed.deliver(batch, kinds)
