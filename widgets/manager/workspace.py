# SPDX-License-Identifier: MIT
"""The Enterprise Manager workspace: FIX sessions, FIX dictionaries and engine settings."""

from PySide6.QtWidgets import QMainWindow, QWidget

from widgets.empty_state import EmptyState


class ManagerWorkspace(QMainWindow):
    """Visual editing of QuickFIX-style session files, XML dictionaries and engine settings."""

    key = "manager"
    title = "Enterprise Manager"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("managerWorkspace")
        self.empty = EmptyState(
            "No configuration open",
            "FIX sessions (QuickFIX-style .cfg), FIX data dictionaries (QuickFIX XML) and "
            "engine settings will be edited here, validated as you type, and saved in the "
            "formats the FIX world already uses.",
            "The editors are not part of this build yet; the files themselves can be edited "
            "by hand in the meantime.",
        )
        self.setCentralWidget(self.empty)
