# SPDX-License-Identifier: MIT
"""The replay bar: play, pause, speed and step through the charted days."""

from collections.abc import Sequence
from typing import Final

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from analyzer.dataset import InstrumentDay
from analyzer.views.timeaxis import NS, format_ns, zone
from widgets.fmt import fmt_ts_utc

#: Replay speeds offered (multiples of real time).
SPEEDS: Final[tuple[float, ...]] = (0.1, 0.5, 1.0, 2.0, 10.0, 100.0, 1000.0)
#: Replay timer period, ms.
REPLAY_TICK_MS: Final[int] = 40


class ReplayBar(QWidget):
    """Play, pause, speed and step through the charts; the crosshair marks the replay time.

    Signals
    -------
    moved(int)
        The replay time moved (ns).
    """

    moved = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("replayBar")
        self.days: list[InstrumentDay] = []
        self.ts: int | None = None
        self.end: int | None = None
        self.tz_name = "UTC"
        self.play = QPushButton("▶ Play")
        self.play.setCheckable(True)
        self.play.setToolTip("Play the day from the crosshair (Space)")
        self.play.toggled.connect(self._on_play)
        self.step = QPushButton("Step ▸|")
        self.step.setToolTip("Jump to the next quote or trade of any charted instrument")
        self.step.clicked.connect(self.step_event)
        self.speed = QComboBox()
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.speed.setToolTip("Replay speed (multiple of real time)")
        self.clock = QLabel("—")
        self.clock.setObjectName("replayClock")
        self.clock.setMinimumWidth(180)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        for w in (self.play, self.step, self.speed, self.clock):
            lay.addWidget(w)
        self.timer = QTimer(self)
        self.timer.setInterval(REPLAY_TICK_MS)
        self.timer.timeout.connect(self._tick)

    def set_zone(self, tz_name: str) -> None:
        """Show the replay time in ``tz_name``."""
        self.tz_name = tz_name
        self._show_clock()

    def _show_clock(self) -> None:
        if self.ts is None:
            self.clock.setText("—")
            return
        text = f"{format_ns(self.ts, zone(self.tz_name), 1.0)}.{self.ts % NS:09d}"
        self.clock.setText(f"{text} {self.tz_name}")
        self.clock.setToolTip(fmt_ts_utc(self.ts, date=True, precision=9) + " UTC")

    def set_days(self, days: Sequence[InstrumentDay]) -> None:
        """Replay these instrument-days."""
        self.days = list(days)
        spans = [d.span for d in self.days if d.span != (0, 0)]
        self.end = max(s[1] for s in spans) if spans else None
        if self.ts is None and spans:
            self.ts = min(s[0] for s in spans)

    def seek(self, ts: int) -> None:
        """Put the replay time at ``ts`` (the crosshair)."""
        self.ts = int(ts)
        self._show_clock()

    def _emit(self) -> None:
        assert self.ts is not None
        self._show_clock()
        self.moved.emit(self.ts)

    def _on_play(self, on: bool) -> None:
        self.play.setText("❚❚ Pause" if on else "▶ Play")
        if on and self.ts is not None:
            self.timer.start()
        else:
            self.timer.stop()

    def _tick(self) -> None:
        if self.ts is None:
            return
        speed = float(self.speed.currentData())
        self.ts += int(REPLAY_TICK_MS * 1_000_000 * speed)
        if self.end is not None and self.ts >= self.end:
            self.ts = self.end
            self.play.setChecked(False)
        self._emit()

    def step_event(self) -> None:
        """Move to the next quote or trade after the replay time."""
        if self.ts is None:
            return
        nxt = [t for d in self.days if (t := d.next_event(self.ts)) is not None]
        if nxt:
            self.ts = min(nxt)
            self._emit()
