# SPDX-License-Identifier: MIT
"""The Trade Analyzer workspace: tick history, synchronized charts, own orders overlaid."""

from PySide6.QtWidgets import QMainWindow, QWidget

from widgets.empty_state import EmptyState


class AnalyzerWorkspace(QMainWindow):
    """Tick-by-tick history from the HDF5 tick store on one synchronized time axis."""

    key = "analyzer"
    title = "Trade Analyzer"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("analyzerWorkspace")
        self.empty = EmptyState(
            "No tick store open",
            "Tick-by-tick history from the HDF5 tick store appears here: several instruments "
            "on one time axis, own orders and executions overlaid, and strategy replays over "
            "history.",
            "Recorded or imported days will be listed here once a tick store exists.",
        )
        self.setCentralWidget(self.empty)
