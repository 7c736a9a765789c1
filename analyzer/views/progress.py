# SPDX-License-Identifier: MIT
"""The progress line under the charts: the running jobs, how far the latest is, and Cancel.

:class:`JobProgress` starts :class:`analyzer.views.jobs.Job` objects, shows the progress of
the one started last and hides itself when none runs; Cancel cancels them all. A job that
fails leaves its message on the line and goes out through :attr:`JobProgress.failed`.
"""

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from analyzer.views.jobs import Job


class JobProgress(QWidget):
    """A label, a progress bar and a Cancel button over the running jobs.

    Signals
    -------
    failed(str)
        A job failed (its one-line message).
    """

    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.jobs: list[Job] = []
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(True)
        self.label = QLabel()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.addWidget(self.label)
        layout.addWidget(self.bar, 1)
        layout.addWidget(self.cancel_button)
        self.hide()

    def start(self, job: Job) -> Job:
        """Start ``job`` and show its progress until it ends (with the others running)."""
        self.jobs.append(job)
        job.progress.connect(self._on_progress)
        job.failed.connect(self.failed)
        for sig in (job.finished, job.failed, job.cancelled):
            sig.connect(lambda *_a, j=job: self._done(j))
        self.label.setText(job.title)
        self.bar.setValue(0)
        self.show()
        return job.start()

    def say(self, message: str) -> None:
        """Leave ``message`` on the line (a failure; the line shows it while jobs run)."""
        self.label.setText(message)

    def cancel(self) -> None:
        """Cancel every running job."""
        for job in self.jobs:
            job.cancel()

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for each running job to end (at closing)."""
        for job in list(self.jobs):
            job.wait(timeout)

    def _on_progress(self, fraction: float, text: str) -> None:
        self.bar.setValue(int(fraction * 1000))
        self.bar.setFormat(text)

    def _done(self, job: Job) -> None:
        if job in self.jobs:
            self.jobs.remove(job)
        if not self.jobs:
            self.hide()
