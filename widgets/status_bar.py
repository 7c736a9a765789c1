# SPDX-License-Identifier: MIT
"""Status-bar indicators: engine link, start-up and heartbeat, FIX sessions, the engine's clock.

Everything shown follows the engine's events (``EngineStartProgress``, ``EngineStateChanged``,
``EngineHeartbeat``, ``SessionStatusChanged``) and the link state, whenever they arrive: a start
that takes long shows what it is doing and for how long, never a failure; only a failure the
engine reports (with its reason) is shown as one.
"""

import time
from collections.abc import Sequence

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QProgressBar, QStatusBar

from engine.client import ClientState
from engine.enums import EngineState, SessionState
from engine.events import (
    EngineHeartbeat,
    EngineStartProgress,
    EngineStateChanged,
    EventRecord,
    SessionStatusChanged,
    VenueLinkChanged,
)
from widgets.fmt import fmt_duration_ns, fmt_ts_utc

#: A heartbeat older than this many intervals marks the engine as silent.
SILENT_AFTER_INTERVALS = 3
#: After this many seconds a start says "still starting" and how long it has taken.
STILL_STARTING_AFTER_S = 5.0
#: Steps of the start-up progress bar when a stage says how far it is.
PROGRESS_STEPS = 1000

_LOGGING_ON = (SessionState.CONNECTING, SessionState.LOGON_SENT)


def describe_progress(ev: EngineStartProgress) -> str:
    """Return a start-up stage as the status bar says it: ``replaying journal 12 MB / 64 MB``."""
    if ev.total <= 0:
        return ev.stage
    if ev.unit == "bytes":
        mb = 1e6
        digits = 0 if ev.total >= 10 * mb else 1
        return f"{ev.stage} {ev.done / mb:.{digits}f} MB / {ev.total / mb:.{digits}f} MB"
    unit = f" {ev.unit}" if ev.unit else ""
    return f"{ev.stage} {ev.done:,} / {ev.total:,}{unit}"


def _set_state(label: QLabel, state: str) -> None:
    if label.property("state") != state:
        label.setProperty("state", state)
        label.style().unpolish(label)
        label.style().polish(label)


class StatusIndicators:
    """Own the permanent status-bar widgets and keep them in step with the engine.

    Feed it event batches with :meth:`on_events`, link changes with :meth:`on_client_state`
    and a start that failed with :meth:`on_start_failed`; a half-second timer marks the engine
    silent when heartbeats stop and counts how long a start takes.

    Parameters
    ----------
    status_bar : QStatusBar
        Where the widgets go.
    engine_name : str
        The engine's name in the texts.
    still_starting_after_s : float
        After this many seconds a start says "still starting" with its duration.
    """

    def __init__(
        self,
        status_bar: QStatusBar,
        engine_name: str,
        *,
        still_starting_after_s: float = STILL_STARTING_AFTER_S,
    ) -> None:
        self._name = engine_name
        self.still_starting_after_s = still_starting_after_s
        self.engine_label = QLabel()
        self.engine_label.setObjectName("statusEngine")
        #: Start-up progress: how far the current stage is (busy when it cannot say).
        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("statusProgress")
        self.progress_bar.setTextVisible(False)
        self.progress_bar.setFixedWidth(110)
        self.progress_bar.setMaximumHeight(12)
        self.progress_bar.setVisible(False)
        self.sessions_label = QLabel()
        self.sessions_label.setObjectName("statusSessions")
        self.clock_label = QLabel("--:--:-- UTC")
        self.clock_label.setObjectName("statusClock")
        self.clock_label.setToolTip("Engine clock (UTC), from the engine heartbeat")
        for w in (self.progress_bar, self.engine_label, self.sessions_label, self.clock_label):
            status_bar.addPermanentWidget(w)
        self._client_state = ClientState.IDLE
        self._engine_state: EngineState | None = None
        self._engine_reason = ""  # of the last state change (why it failed)
        self._progress: EngineStartProgress | None = None
        self._starting_since: float | None = None  # monotonic time the start began
        self._start_failure = ""
        self._last_hb: EngineHeartbeat | None = None
        self._last_hb_mono = 0.0
        self._sessions: dict[str, SessionStatusChanged] = {}
        #: Links of other protocols (OUCH), by "protocol detail".
        self._links: dict[str, VenueLinkChanged] = {}
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

    @property
    def starting(self) -> bool:
        """Return whether the engine is on its way to running (set up, kernels, components)."""
        if self._start_failure:
            return False
        if self._client_state is ClientState.CONNECTING:
            return True
        return self._client_state is ClientState.CONNECTED and self._engine_state in (
            None,
            EngineState.STARTING,
        )

    @property
    def stage_text(self) -> str:
        """Return the current start-up stage as shown (``replaying journal 12 MB / 64 MB``)."""
        ev = self._progress
        return describe_progress(ev) if ev is not None else "setting up"

    @property
    def progress_fraction(self) -> float | None:
        """Return how far the current stage is (0..1), or ``None`` if it cannot say."""
        ev = self._progress
        return min(1.0, max(0, ev.done) / ev.total) if ev is not None and ev.total > 0 else None

    @property
    def starting_seconds(self) -> float:
        """Return how long the start has taken so far (0 when not starting)."""
        since = self._starting_since
        return 0.0 if since is None else time.monotonic() - since

    def on_client_state(self, state: ClientState) -> None:
        """Show a change of the link to the engine."""
        self._client_state = state
        self._refresh_engine()
        self._refresh_sessions()

    def on_start_failed(self, reason: str) -> None:
        """Show that the engine did not start, and why (in the tooltip)."""
        self._start_failure = reason or "no reason given"
        self._refresh_engine()
        self._refresh_sessions()

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply a batch of engine events."""
        sessions_changed = False
        for record in batch:
            ev = record.event
            if isinstance(ev, EngineHeartbeat):
                self._last_hb = ev
                self._last_hb_mono = time.monotonic()
            elif isinstance(ev, EngineStartProgress):
                self._progress = ev
            elif isinstance(ev, EngineStateChanged):
                self._engine_state, self._engine_reason = ev.state, ev.reason
                if ev.state is EngineState.RUNNING:
                    self._progress, self._start_failure = None, ""
                sessions_changed = True  # "no sessions" means something else once it runs
            elif isinstance(ev, SessionStatusChanged):
                self._sessions[ev.session_id] = ev
                sessions_changed = True
            elif isinstance(ev, VenueLinkChanged) and ev.protocol != "FIX":
                self._links[f"{ev.protocol} {ev.detail or ev.venue}"] = ev
                sessions_changed = True
        if self._last_hb is not None:
            text = fmt_ts_utc(self._last_hb.ts_event, date=True, precision=0)
            self.clock_label.setText(f"{text} UTC")
        self._refresh_engine()
        if sessions_changed:
            self._refresh_sessions()

    def _refresh_engine(self) -> None:
        label, hb = self.engine_label, self._last_hb
        starting = self.starting
        self._show_progress(starting)
        if starting:
            text, state = self._starting_text(), "warn"
        elif self._start_failure:
            text, state = f"● Engine {self._name}: failed to start", "bad"
            label.setToolTip(f"The engine did not start: {self._start_failure}")
        elif self._client_state in (ClientState.DISCONNECTED, ClientState.IDLE):
            if self._engine_state is EngineState.FAILED:
                text, state = f"● Engine {self._name}: failed", "bad"
                label.setToolTip(f"The engine failed: {self._engine_reason}")
            else:
                text, state = f"● Engine {self._name}: not running", "bad"
                label.setToolTip("")
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

    def _show_progress(self, starting: bool) -> None:
        bar, fraction = self.progress_bar, self.progress_fraction
        if starting and self._starting_since is None:
            self._starting_since = time.monotonic()
        elif not starting:
            self._starting_since = None
        bar.setVisible(starting)
        if not starting:
            return
        if fraction is not None:
            bar.setRange(0, PROGRESS_STEPS)
            bar.setValue(int(PROGRESS_STEPS * fraction))
        else:
            bar.setRange(0, 0)  # busy: the stage cannot say how far it is

    def _starting_text(self) -> str:
        elapsed, stage = self.starting_seconds, self.stage_text
        self.engine_label.setToolTip(
            f"The engine has been starting for {elapsed:.0f} s; now: {stage}.\n"
            "A slow start (a long journal to replay, kernels to compile) is not a failure;\n"
            "if the engine fails to start, this says so, with the reason."
        )
        if elapsed >= self.still_starting_after_s:
            return f"● Engine {self._name}: still starting — {stage}, {elapsed:.0f} s"
        return f"● Engine {self._name}: starting — {stage}"

    def _refresh_sessions(self) -> None:
        label = self.sessions_label
        if self._links:
            self._refresh_links()
            return
        if not self._sessions:
            if self._engine_state is EngineState.RUNNING:
                label.setText("FIX: no sessions")
                label.setToolTip("No FIX session is configured in this engine")
            else:
                label.setText("FIX: –")
                label.setToolTip("The engine announces its FIX sessions once it runs")
            _set_state(label, "muted")
            return
        up = sum(s.state is SessionState.LOGGED_ON for s in self._sessions.values())
        pending = sum(s.state in _LOGGING_ON for s in self._sessions.values())
        n = len(self._sessions)
        more = f", {pending} logging on" if pending and up < n else ""
        label.setText(f"FIX: {up}/{n} logged on{more}")
        label.setToolTip(
            "\n".join(
                f"{sid}: {s.state.name.lower().replace('_', ' ')}  "
                f"out {s.next_sender_seq_num} / in {s.next_target_seq_num}"
                for sid, s in sorted(self._sessions.items())
            )
        )
        _set_state(label, "ok" if up == n else "warn" if up else "bad")

    def _refresh_links(self) -> None:
        # FIX sessions and other protocols' links: "FIX: 1/1 logged on · OUCH: 1/1 up".
        parts, tips, up_all, n_all = [], [], 0, 0
        if self._sessions:
            up = sum(s.state is SessionState.LOGGED_ON for s in self._sessions.values())
            parts.append(f"FIX: {up}/{len(self._sessions)} logged on")
            tips += [
                f"{sid}: {s.state.name.lower().replace('_', ' ')}  "
                f"out {s.next_sender_seq_num} / in {s.next_target_seq_num}"
                for sid, s in sorted(self._sessions.items())
            ]
            up_all, n_all = up, len(self._sessions)
        for protocol in sorted({ev.protocol for ev in self._links.values()}):
            links = [ev for ev in self._links.values() if ev.protocol == protocol]
            up = sum(ev.up for ev in links)
            parts.append(f"{protocol}: {up}/{len(links)} up")
            tips += [
                f"{key}: {(ev.state or ('up' if ev.up else 'down')).lower()}  "
                f"out {ev.next_out} / in {ev.next_in}"
                for key, ev in sorted(self._links.items())
                if ev.protocol == protocol
            ]
            up_all, n_all = up_all + up, n_all + len(links)
        self.sessions_label.setText(" · ".join(parts))
        self.sessions_label.setToolTip("\n".join(tips))
        _set_state(self.sessions_label, "ok" if up_all == n_all else "warn" if up_all else "bad")
