# SPDX-License-Identifier: MIT
"""Run the reconcile check (``engine.reconcile``) for the embedded engine, off the GUI thread.

:class:`ReconcileRunner` reads the engine's state directory on a worker thread, hands the report
to the GUI thread through the process's :class:`widgets.relay.ThreadRelay`, and shows it in the
status-bar badge and, when asked for, in the dialog. It runs once a few seconds after the engine
first reports that it runs (a restart is checked against the venue's reports), and again
whenever the user asks (Engine ▸ Reconcile…, the badge, the dialog's "Run again").
"""

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

from engine.enums import EngineState
from engine.events import EngineStateChanged, EventRecord
from widgets.reconcile import ReconcileBadge, ReconcileDialog
from widgets.relay import post_to

if TYPE_CHECKING:
    from engine.reconcile import ReconcileReport

log = logging.getLogger(__name__)

#: The start-up check runs this long after the engine first runs: its FIX session has logged
#: on and the venue's resends have arrived.
STARTUP_DELAY_MS = 3000


class ReconcileRunner(QObject):
    """Run the check on a worker thread and show its outcome.

    Parameters
    ----------
    state_dir : Callable[[], Path]
        Return the state directory of the engine to check (read when a check starts).
    badge : ReconcileBadge
        The status-bar badge to keep up to date; a click on it opens the dialog.
    parent : QWidget
        Parent of the dialog (the main window).

    Signals
    -------
    finished(object)
        A check ended: the :class:`engine.reconcile.ReconcileReport`, or the error text.
    """

    finished = Signal(object)

    def __init__(
        self, state_dir: Callable[[], Path], badge: ReconcileBadge, parent: QWidget
    ) -> None:
        super().__init__(parent)
        self._state_dir = state_dir
        self._window = parent
        self.badge = badge
        self.dialog: ReconcileDialog | None = None
        self.report: ReconcileReport | None = None
        self.error = ""
        self._running = False
        self._startup_scheduled = False
        badge.clicked.connect(self.open_dialog)

    @property
    def running(self) -> bool:
        """Return whether a check is running."""
        return self._running

    def run(self) -> bool:
        """Start a check on a worker thread; ``False`` if one is running already."""
        if self._running:
            return False
        self._running = True
        path = self._state_dir()
        self.badge.set_running()
        if self.dialog is not None:
            self.dialog.show_running(str(path))

        def work() -> None:
            # Imported here: the journal reader and FIX parsing load on the worker thread.
            from engine.reconcile import ReconcileError, reconcile

            try:
                report = reconcile(path)
            except ReconcileError as e:
                post_to(self, "_on_failed", str(e))
            except Exception as e:  # a bug: the traceback goes to the log, one line to the user
                log.exception("reconcile of %s failed", path)
                post_to(self, "_on_failed", f"{type(e).__name__}: {e} (details in the log)")
            else:
                post_to(self, "_on_done", report)

        threading.Thread(target=work, name="qw-reconcile", daemon=True).start()
        return True

    def open_dialog(self) -> ReconcileDialog:
        """Show the dialog with the last report (running a check if there is none)."""
        if self.dialog is None:
            self.dialog = ReconcileDialog(self._window)
            self.dialog.rerun_requested.connect(self.run)
        dialog = self.dialog
        if self._running:
            dialog.show_running(str(self._state_dir()))
        elif self.report is not None:
            dialog.show_report(self.report)
        elif self.error:
            dialog.show_error(self.error)
        else:
            self.run()
        dialog.show()
        dialog.raise_()
        return dialog

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Schedule the start-up check when the engine first reports that it runs."""
        if self._startup_scheduled:
            return
        for record in batch:
            ev = record.event
            if isinstance(ev, EngineStateChanged) and ev.state is EngineState.RUNNING:
                self._startup_scheduled = True
                QTimer.singleShot(STARTUP_DELAY_MS, self, self.run)
                return

    def _on_done(self, report: "ReconcileReport") -> None:
        self._running = False
        self.report, self.error = report, ""
        self.badge.set_report(report)
        if self.dialog is not None:
            self.dialog.show_report(report)
        log.log(logging.INFO if report.ok else logging.WARNING, "reconcile: %s", report.verdict())
        self.finished.emit(report)

    def _on_failed(self, text: str) -> None:
        self._running = False
        self.report, self.error = None, text
        self.badge.set_error(text)
        if self.dialog is not None:
            self.dialog.show_error(text)
        log.warning("reconcile could not run: %s", text)
        self.finished.emit(text)
