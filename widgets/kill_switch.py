# SPDX-License-Identifier: MIT
"""The kill switch: always visible, every level armed first and confirmed with a second click.

Confirmation is non-modal (no dialog, no nested event loop): the first click arms a level and
the button asks "Flatten?" (red) for a few seconds; a second click sends it; anything else disarms.
"""

from collections.abc import Sequence
from typing import ClassVar

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QSizePolicy, QWidget

from engine.commands import Command, CommandError, CommandResult, SetKillSwitch
from engine.enums import KillLevel
from engine.events import Event, EventRecord, KillSwitchChanged

#: How long an armed level waits for its confirmation, ms.
ARM_TIMEOUT_MS = 4000

#: Button text of each level.
LEVEL_BUTTON_TEXT = {
    KillLevel.BLOCK_NEW: "Block new",
    KillLevel.CANCEL_ALL: "Cancel all",
    KillLevel.FLATTEN: "Flatten",
    KillLevel.OFF: "Release",
}
#: What each level does, for tooltips and the state label.
LEVEL_HELP = {
    KillLevel.OFF: "Off: orders flow normally (halted strategies stay halted until resumed)",
    KillLevel.BLOCK_NEW: "Halt every strategy and refuse every new order",
    KillLevel.CANCEL_ALL: "Halt every strategy, refuse new orders and cancel every working order",
    KillLevel.FLATTEN: (
        "Halt every strategy, refuse new orders, cancel working orders and close every position"
    ),
}


def _armed_text(level: KillLevel) -> str:
    return f"{LEVEL_BUTTON_TEXT[level]}?"


def _repolish(w: QWidget) -> None:
    w.style().unpolish(w)
    w.style().polish(w)


class KillSwitch(QWidget):
    """The kill-switch bar: current level, one arm-then-confirm button per level, a reason.

    Signals
    -------
    command_requested(object)
        A confirmed ``SetKillSwitch`` to send to the engine.
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (KillSwitchChanged,)

    command_requested = Signal(object)

    def __init__(self, actor: str = "console", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("killSwitch")
        self.actor = actor
        self.level = KillLevel.OFF
        self.armed: KillLevel | None = None
        self._pending: dict[int, Command] = {}  # by id: the very objects sent
        self.state_label = QLabel()
        self.state_label.setObjectName("killState")
        self.reason_edit = QLineEdit()
        self.reason_edit.setObjectName("killReason")
        self.reason_edit.setPlaceholderText("Reason (journaled)")
        self.reason_edit.setMaximumWidth(220)
        self.reason_edit.setMinimumWidth(60)
        self.buttons: dict[KillLevel, QPushButton] = {}
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        title = QLabel("Kill switch")
        title.setObjectName("killTitle")
        layout.addWidget(title)
        layout.addWidget(self.state_label)
        layout.addSpacing(4)
        for level in (KillLevel.BLOCK_NEW, KillLevel.CANCEL_ALL, KillLevel.FLATTEN, KillLevel.OFF):
            b = QPushButton(LEVEL_BUTTON_TEXT[level])
            b.setObjectName(f"kill_{level.name.lower()}")
            b.setProperty("kill", "release" if level is KillLevel.OFF else "engage")
            b.setToolTip(f"{LEVEL_HELP[level]} — click, then click again to confirm")
            b.clicked.connect(lambda _checked=False, lv=level: self.press(lv))
            # Wide enough for the armed text, so arming never moves or clips anything.
            bold = QFont(b.font())
            bold.setBold(True)
            b.setMinimumWidth(QFontMetrics(bold).horizontalAdvance(_armed_text(level)) + 20)
            self.buttons[level] = b
            layout.addWidget(b)
        layout.addWidget(self.reason_edit)
        self.message_label = QLabel()
        self.message_label.setObjectName("killMessage")
        self.message_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.message_label, 1)
        self._disarm_timer = QTimer(self)
        self._disarm_timer.setSingleShot(True)
        self._disarm_timer.setInterval(ARM_TIMEOUT_MS)
        self._disarm_timer.timeout.connect(self.disarm)
        self._show_level()

    def press(self, level: KillLevel) -> None:
        """Arm ``level`` on a first press; send it when it is pressed again while armed."""
        if self.armed is level:
            self.disarm()
            reason = self.reason_edit.text().strip() or "manual, from the console"
            command = SetKillSwitch(level=level, reason=reason, actor=self.actor)
            self._pending[id(command)] = command
            self.message_label.setText(f"Sending {LEVEL_BUTTON_TEXT[level].lower()}…")
            self.message_label.setProperty("state", "warn")
            _repolish(self.message_label)
            self.command_requested.emit(command)
            return
        self.disarm()
        self.armed = level
        b = self.buttons[level]
        b.setText(_armed_text(level))
        b.setProperty("armed", True)
        _repolish(b)
        self._disarm_timer.start()

    def disarm(self) -> None:
        """Forget an armed level."""
        self._disarm_timer.stop()
        if self.armed is not None:
            b = self.buttons[self.armed]
            b.setText(LEVEL_BUTTON_TEXT[self.armed])
            b.setProperty("armed", False)
            _repolish(b)
        self.armed = None

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Follow ``KillSwitchChanged`` events."""
        last = None
        for r in batch:
            if isinstance(r.event, KillSwitchChanged):
                last = r.event
        if last is not None:
            self.level = last.level
            self._show_level(f"{last.actor}: {last.reason}")

    def on_command_result(self, command: Command, result: CommandResult) -> None:
        """Show the engine's answer to a command this widget sent."""
        if self._pending.pop(id(command), None) is not command:
            return
        if isinstance(result, CommandError):
            self.message_label.setText(f"Refused: {result.reason}")
            self.message_label.setProperty("state", "bad")
        else:
            self.message_label.setText("")
            self.message_label.setProperty("state", "")
        _repolish(self.message_label)

    def _show_level(self, detail: str = "") -> None:
        on = self.level is not KillLevel.OFF
        text = LEVEL_BUTTON_TEXT[self.level].upper() if on else "OFF"
        self.state_label.setText(f"● {text}")
        self.state_label.setProperty("state", "bad" if on else "ok")
        self.state_label.setToolTip(f"{LEVEL_HELP[self.level]}\n{detail}".strip())
        _repolish(self.state_label)
        self.buttons[KillLevel.OFF].setEnabled(on)
