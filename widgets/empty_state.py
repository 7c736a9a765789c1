# SPDX-License-Identifier: MIT
"""A centred message saying what will appear in an empty view, and how to get it there."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

#: Widest the text column grows, in pixels, so lines stay readable on wide screens.
MAX_TEXT_WIDTH = 620


class EmptyState(QWidget):
    """Title, explanation and an optional hint, centred; used wherever a view has no data.

    Parameters
    ----------
    title : str
        What this view is ("Orders").
    body : str
        What will appear here and when.
    hint : str
        What the user can do now (optional).
    """

    def __init__(
        self, title: str, body: str, hint: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("emptyState")
        card = QWidget()
        card.setMaximumWidth(MAX_TEXT_WIDTH)
        card.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        text = QVBoxLayout(card)
        text.setSpacing(10)
        self.title_label = QLabel(title)
        self.title_label.setObjectName("emptyTitle")
        self.body_label = QLabel(body)
        self.body_label.setObjectName("emptyBody")
        self.hint_label = QLabel(hint)
        self.hint_label.setObjectName("emptyHint")
        self.hint_label.setVisible(bool(hint))
        for label in (self.title_label, self.body_label, self.hint_label):
            label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            text.addWidget(label)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(card, 4)
        row.addStretch(1)
        outer = QVBoxLayout(self)
        outer.addStretch(2)
        outer.addLayout(row)
        outer.addStretch(3)
