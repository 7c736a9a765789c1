# SPDX-License-Identifier: MIT
"""The Trade Monitor workspace: what a trader watches all day.

Its docks can be rearranged; the layout is saved by the main window.
"""

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

from engine.events import EventRecord
from widgets.empty_state import EmptyState
from widgets.monitor.engine_events import EngineEventsView


class MonitorWorkspace(QMainWindow):
    """Orders, executions, positions and P&L of running strategies, and the engine's events."""

    key = "monitor"
    title = "Trade Monitor"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("monitorWorkspace")
        self.setDockOptions(
            QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks
        )
        self.empty = EmptyState(
            "No orders yet",
            "Orders, executions, positions and P&L of running strategies appear here, live, "
            "as soon as the engine runs a strategy or an order is sent.",
            "The engine below is running; its events are listed in the Engine events panel.",
        )
        self.setCentralWidget(self.empty)
        self.events_view = EngineEventsView()
        self.events_dock = QDockWidget("Engine events", self)
        self.events_dock.setObjectName("monitorEngineEventsDock")
        self.events_dock.setWidget(self.events_view)
        self.events_dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.events_dock)

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Forward a batch of engine events to the views of this workspace."""
        self.events_view.on_events(batch)
