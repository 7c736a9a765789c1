# SPDX-License-Identifier: MIT
"""A card over a view while the engine starts: what it is doing, how far, for how long."""

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFrame, QLabel, QProgressBar, QVBoxLayout, QWidget

#: Width of the card, pixels.
CARD_WIDTH = 460
#: Steps of the card's progress bar.
STEPS = 1000


class StartOverlay(QFrame):
    """Show a start's stage over ``parent`` (its upper part), until :meth:`finish`.

    The card follows its parent's size and stays above the parent's other children; it is
    hidden until the first :meth:`show_stage`.
    """

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("startOverlay")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setAutoFillBackground(True)
        self.title_label = QLabel("Engine starting")
        self.title_label.setObjectName("startTitle")
        self.stage_label = QLabel()
        self.stage_label.setObjectName("startStage")
        self.bar = QProgressBar()
        self.bar.setObjectName("startProgress")
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.note_label = QLabel(
            "Orders, positions and FIX sessions appear once it runs. A slow start is not a "
            "failure: a start that fails says so, with the reason."
        )
        self.note_label.setObjectName("startNote")
        self.note_label.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 14, 18, 14)
        layout.setSpacing(8)
        for w in (self.title_label, self.stage_label, self.bar, self.note_label):
            layout.addWidget(w)
        parent.installEventFilter(self)
        self.setVisible(False)

    def show_stage(self, title: str, stage: str, fraction: float | None) -> None:
        """Show ``title`` ("Engine starting"), the ``stage`` and how far it is (None: busy)."""
        self.title_label.setText(title)
        self.stage_label.setText(stage)
        if fraction is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, STEPS)
            self.bar.setValue(round(STEPS * min(1.0, max(0.0, fraction))))
        if not self.isVisible():
            self._place()
            self.setVisible(True)
            self.raise_()

    def finish(self) -> None:
        """Hide the card: the start is over (running, or failed and said so elsewhere)."""
        self.setVisible(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Follow the parent's size."""
        if watched is self.parent() and event.type() == QEvent.Type.Resize:
            self._place()
        return False

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is None:
            return
        width = min(CARD_WIDTH, max(200, parent.width() - 40))
        self.setFixedWidth(width)
        self.adjustSize()
        self.move((parent.width() - width) // 2, max(12, parent.height() // 10))
