# SPDX-License-Identifier: MIT
"""Show the embedded engine's start honestly: progress while it starts, a failure only if it fails.

The engine reports each stage of its start (journal replay in bytes, kernels, each component)
as ``EngineStartProgress`` events; the status bar shows them with a progress bar and, after a
few seconds, how long the start has taken ("still starting — replaying journal 12 MB / 64 MB,
14 s"), and a card over the Monitor's blotter says the same until the engine runs. No deadline
turns a slow start into a failure. Only a start that really failed (its set-up or a component's
start raised, or its thread ended) opens one dialog with the reason.
"""

import logging
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QMessageBox

from app.controller import Controller
from app.main_window import MainWindow
from widgets.start_overlay import StartOverlay

log = logging.getLogger(__name__)

#: Title of the dialog of a start that failed.
FAILED_TITLE = "Engine did not start"


class StartupView(QObject):
    """Follow one engine start in ``window`` (status bar, and a dialog if it fails).

    Parameters
    ----------
    window : MainWindow
        The window whose status bar shows the start.
    controller : Controller
        Its controller; connect this before :meth:`Controller.start_in_background`.
    log_path : Path | None
        The log file the dialog points to.
    dialogs : bool
        Open a dialog when the start fails (off for ``--smoke`` and ``--screenshot`` runs,
        which exit with an error instead).
    """

    def __init__(
        self,
        window: MainWindow,
        controller: Controller,
        *,
        log_path: Path | None = None,
        dialogs: bool = True,
    ) -> None:
        super().__init__(window)
        self.window = window
        self.log_path = log_path
        self.dialogs = dialogs
        #: The dialog of a failed start, once it was shown.
        self.failure_box: QMessageBox | None = None
        #: The card over the Monitor's blotter while the engine starts.
        self.overlay = StartOverlay(window.monitor.centralWidget() or window.monitor)
        self._seen_start = False
        self._timer = QTimer(self)
        self._timer.setInterval(500)
        self._timer.timeout.connect(self.sync)
        self._timer.start()
        controller.start_failed.connect(self._on_failed)
        # After the status bar's own slots (connected by the window): it has the new state.
        controller.bridge.events_received.connect(self.sync)
        controller.bridge.client_state_changed.connect(self.sync)
        self.sync()

    def sync(self, *_args: object) -> None:
        """Show the status bar's view of the start on the card (hide it once it is over)."""
        status = self.window.status
        if not status.starting:
            self.overlay.finish()
            if self._seen_start:  # over: running, or failed and said so
                self._timer.stop()
            return
        self._seen_start = True
        seconds = status.starting_seconds
        title = "Engine starting"
        if seconds >= status.still_starting_after_s:
            title = f"Engine still starting — {seconds:.0f} s"
        self.overlay.show_stage(title, status.stage_text, status.progress_fraction)

    def _on_failed(self, reason: str) -> None:
        self.window.status.on_start_failed(reason)
        self.sync()
        if not self.dialogs or self.failure_box is not None:
            return  # one dialog per start, whatever else reports the same failure
        where = f" ({self.log_path})" if self.log_path is not None else ""
        box = QMessageBox(
            QMessageBox.Icon.Critical,
            FAILED_TITLE,
            f"The embedded engine did not start:\n{reason}\n\nDetails are in the log{where}. "
            "Remote engines can still be attached (Engine ▸ Connect to engine…).",
            parent=self.window,
        )
        box.setObjectName("engineStartFailed")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        self.failure_box = box
