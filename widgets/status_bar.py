# SPDX-License-Identifier: MIT
"""Status-bar indicators: engine link and heartbeat, FIX sessions, and the engine's clock."""

import time
from collections.abc import Sequence

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QStatusBar

from engine.client import ClientState
from engine.enums import EngineState, SessionState
from engine.events import (
    EngineHeartbeat,
    EngineStateChanged,
    EventRecord,
    SessionStatusChanged,
)
from widgets.fmt import fmt_duration_ns, fmt_ts_utc

#: A heartbeat older than this many intervals marks the engine as silent.
SILENT_AFTER_INTERVALS = 3


def _set_state(label: QLabel, state: str) -> None:
    if label.property("state") != state:
        label.setProperty("state", state)
        label.style().unpolish(label)
        label.style().polish(label)


class StatusIndicators:
    """Own the three permanent status-bar labels and keep them in step with the engine.

    Feed it event batches with :meth:`on_events` and link changes with
    :meth:`on_client_state`; a half-second timer marks the engine silent when heartbeats stop.
    """

    def __init__(self, status_bar: QStatusBar, engine_name: str) -> None:
        self._name = engine_name
        self.engine_label = QLabel()
        self.engine_label.setObjectName("statusEngine")
        self.sessions_label = QLabel()
        self.sessions_label.setObjectName("statusSessions")
        self.clock_label = QLabel("--:--:-- UTC")
        self.clock_label.setObjectName("statusClock")
        self.clock_label.setToolTip("Engine clock (UTC), from the engine heartbeat")
        for w in (self.engine_label, self.sessions_label, self.clock_label):
            status_bar.addPermanentWidget(w)
        self._client_state = ClientState.IDLE
        self._engine_state: EngineState | None = None
        self._last_hb: EngineHeartbeat | None = None
        self._last_hb_mono = 0.0
        self._sessions: dict[str, SessionStatusChanged] = {}
        self._timer = QTimer(status_bar)
        self._timer.setInterval(500)
        self._timer.timeout.connect(self._refresh_engine)
        self._timer.start()
        self._refresh_engine()
        self._refresh_sessions()

    @property
    def last_heartbeat(self) -> EngineHeartbeat | None:
        """Return the newest heartbeat seen."""
        return self._last_hb

    def on_client_state(self, state: ClientState) -> None:
        """Show a change of the link to the engine."""
        self._client_state = state
        self._refresh_engine()

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply a batch of engine events."""
        sessions_changed = False
        for record in batch:
            ev = record.event
            if isinstance(ev, EngineHeartbeat):
                self._last_hb = ev
                self._last_hb_mono = time.monotonic()
            elif isinstance(ev, EngineStateChanged):
                self._engine_state = ev.state
            elif isinstance(ev, SessionStatusChanged):
                self._sessions[ev.session_id] = ev
                sessions_changed = True
        if self._last_hb is not None:
            text = fmt_ts_utc(self._last_hb.ts_event, date=True, precision=0)
            self.clock_label.setText(f"{text} UTC")
        self._refresh_engine()
        if sessions_changed:
            self._refresh_sessions()

    def _refresh_engine(self) -> None:
        label, hb = self.engine_label, self._last_hb
        if self._client_state is ClientState.CONNECTING:
            text, state = f"● Engine {self._name}: connecting…", "warn"
        elif self._client_state in (ClientState.DISCONNECTED, ClientState.IDLE):
            text, state = f"● Engine {self._name}: not running", "bad"
        elif self._engine_state is not EngineState.RUNNING:
            name = self._engine_state.name.lower() if self._engine_state else "starting"
            text, state = f"● Engine {self._name}: {name}", "warn"
        elif hb is None:
            text, state = f"● Engine {self._name}: running, waiting for heartbeat", "warn"
        else:
            age_ns = int((time.monotonic() - self._last_hb_mono) * 1e9)
            if age_ns > SILENT_AFTER_INTERVALS * hb.interval_ns:
                text, state = f"● Engine {self._name}: silent {fmt_duration_ns(age_ns)}", "bad"
            else:
                text, state = f"● Engine {self._name}: running", "ok"
            label.setToolTip(
                f"heartbeat #{hb.counter} every {fmt_duration_ns(hb.interval_ns)}, "
                f"uptime {fmt_duration_ns(hb.uptime_ns)}, "
                f"loop lag {fmt_duration_ns(hb.loop_lag_ns)}"
            )
        label.setText(text)
        _set_state(label, state)

    def _refresh_sessions(self) -> None:
        label = self.sessions_label
        if not self._sessions:
            label.setText("FIX: no sessions")
            label.setToolTip("No FIX session is configured in this engine")
            _set_state(label, "muted")
            return
        up = sum(s.state is SessionState.LOGGED_ON for s in self._sessions.values())
        n = len(self._sessions)
        label.setText(f"FIX: {up}/{n} logged on")
        label.setToolTip(
            "\n".join(
                f"{sid}: {s.state.name.lower().replace('_', ' ')}  "
                f"out {s.next_sender_seq_num} / in {s.next_target_seq_num}"
                for sid, s in sorted(self._sessions.items())
            )
        )
        _set_state(label, "ok" if up == n else "warn" if up else "bad")
