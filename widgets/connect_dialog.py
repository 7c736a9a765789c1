# SPDX-License-Identifier: MIT
"""Attach the console to a remote engine, and choose among the attached engines.

:class:`ConnectDialog` asks for host, port, token and TLS, checks them as they are typed, and
says whether the engine's certificate is already pinned; it emits an intent and does no I/O.
:class:`EngineSelector` lists the attached engines with their link state (connecting,
connected, reconnecting with the reason) and picks the engine that receives new orders and
engine-wide commands (or all of them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.client import ClientState

#: Port the engine's remote server listens on unless configured otherwise.
DEFAULT_PORT = 7341


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    """What the user asked to connect to."""

    name: str
    host: str
    port: int
    token: str
    tls: bool
    remember: bool


class ConnectDialog(QDialog):
    """Ask where a remote engine is and how to log in.

    Parameters
    ----------
    pinned : Callable[[str, int], str | None]
        Return the pinned certificate fingerprint of ``host``, ``port`` (``None`` if new).
    taken : Callable[[str], bool]
        Return whether an engine with this display name is already attached.
    profiles : Sequence[tuple[str, str, int, bool]]
        Remembered engines (name, host, port, tls) offered in a drop-down.

    Signals
    -------
    connect_requested(ConnectRequest)
        The user confirmed valid input.
    """

    connect_requested = Signal(object)

    def __init__(
        self,
        pinned: Callable[[str, int], str | None],
        taken: Callable[[str], bool] = lambda _n: False,
        profiles: Sequence[tuple[str, str, int, bool]] = (),
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect to engine")
        self.setObjectName("connectDialog")
        self._pinned = pinned
        self._taken = taken
        self._profiles = list(profiles)

        self.recent = QComboBox()
        self.recent.addItem("New engine…")
        for name, host, port, _tls in self._profiles:
            self.recent.addItem(f"{name}  ({host}:{port})")
        self.recent.currentIndexChanged.connect(self._use_profile)
        self.host = QLineEdit("127.0.0.1")
        self.host.setPlaceholderText("host name or address")
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(DEFAULT_PORT)
        self.port.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.name = QLineEdit()
        self.name.setPlaceholderText("shown in views (default host:port)")
        self.token = QLineEdit()
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setPlaceholderText("qw1.… (from 'qwconsole engine token add')")
        self.tls = QCheckBox("Encrypt with TLS and check the certificate")
        self.tls.setChecked(True)
        self.remember = QCheckBox("Remember this engine (the token is never stored)")
        self.remember.setChecked(True)
        self.trust = QLabel()
        self.trust.setObjectName("connectTrust")
        self.trust.setWordWrap(True)
        self.trust.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Three lines: a heading and a fingerprint split in two (the longest message).
        self.trust.setMinimumHeight(self.trust.fontMetrics().lineSpacing() * 3 + 6)
        self.problem = QLabel()
        self.problem.setObjectName("connectProblem")
        self.problem.setWordWrap(True)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        form.addRow("Recent", self.recent)
        where = QHBoxLayout()
        where.addWidget(self.host, 1)
        where.addWidget(QLabel("Port"))
        where.addWidget(self.port)
        form.addRow("Host", where)
        form.addRow("Name", self.name)
        form.addRow("Token", self.token)
        form.addRow("", self.tls)
        form.addRow("", self.remember)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Connect")
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        box.addLayout(form)
        box.addWidget(self.trust)
        box.addWidget(self.problem)
        box.addStretch(1)
        box.addWidget(self.buttons)
        for w in (self.host, self.name, self.token):
            w.textChanged.connect(self._validate)
        self.port.valueChanged.connect(self._validate)
        self.tls.toggled.connect(self._validate)
        self.setMinimumWidth(520)
        self._validate()

    def _use_profile(self, index: int) -> None:
        if index <= 0:
            return
        name, host, port, tls = self._profiles[index - 1]
        self.name.setText(name)
        self.host.setText(host)
        self.port.setValue(port)
        self.tls.setChecked(tls)
        self.token.setFocus()

    def problems(self) -> list[str]:
        """Return what keeps the input from being used (empty when it can be)."""
        out = []
        host = self.host.text().strip()
        if not host or any(c.isspace() for c in host):
            out.append("Host: enter a host name or address.")
        token = self.token.text().strip()
        if not token:
            out.append("Token: paste the token the engine's administrator gave you.")
        elif token.count(".") != 2 or not token.startswith("qw1."):
            out.append("Token: a token looks like qw1.<id>.<secret>.")
        if self._taken(self.display_name()):
            out.append(f"Name: an engine named {self.display_name()!r} is already attached.")
        if not self.tls.isChecked() and host not in ("127.0.0.1", "localhost", "::1"):
            out.append("TLS: engines on other hosts are reached with TLS only.")
        return out

    def display_name(self) -> str:
        """Return the name the engine will have in views."""
        return self.name.text().strip() or f"{self.host.text().strip()}:{self.port.value()}"

    def _validate(self) -> None:
        problems = self.problems()
        self.ok_button.setEnabled(not problems)
        self.problem.setText("\n".join(problems))
        self.problem.setProperty("state", "warn" if problems else "muted")
        self.problem.setVisible(bool(problems))
        host, port = self.host.text().strip(), self.port.value()
        if not self.tls.isChecked():
            self.trust.setText(
                "Without TLS the token and all traffic are readable on the "
                "network; use it on this computer only."
            )
            state = "warn"
        else:
            fp = self._pinned(host, port) if host else None
            if fp:
                half = len(fp) // 2 + 1  # "AB:CD:…" splits after a colon
                self.trust.setText(
                    f"Certificate pinned for {host}:{port} (SHA-256):\n{fp[:half]}\n{fp[half:]}"
                )
                state = "ok"
            else:
                self.trust.setText(
                    "First connection to this engine: its certificate "
                    "fingerprint will be pinned. Compare it with the one "
                    "'qwconsole engine cert' printed on the server."
                )
                state = "muted"
        self.trust.setProperty("state", state)
        self.trust.style().unpolish(self.trust)
        self.trust.style().polish(self.trust)

    def request(self) -> ConnectRequest:
        """Return the request for the current input."""
        return ConnectRequest(
            name=self.display_name(),
            host=self.host.text().strip(),
            port=self.port.value(),
            token=self.token.text().strip(),
            tls=self.tls.isChecked(),
            remember=self.remember.isChecked(),
        )

    def _accept(self) -> None:
        if self.problems():
            return
        self.connect_requested.emit(self.request())
        self.accept()


#: What each link state looks like: (text, style state).
_STATE_LOOK = {
    ClientState.IDLE: ("idle", "muted"),
    ClientState.CONNECTING: ("connecting", "warn"),
    ClientState.CONNECTED: ("connected", "ok"),
    ClientState.DISCONNECTED: ("disconnected", "bad"),
}


@dataclass(frozen=True, slots=True)
class EngineLink:
    """One attached engine as the selector shows it."""

    index: int  # stable id of the engine in the group (the first is 0)
    name: str
    state: ClientState
    detail: str = ""  # the last error, or who we are logged in as


class EngineSelector(QWidget):
    """A drop-down of the attached engines (plus "All engines") and their link states.

    Signals
    -------
    selection_changed(int)
        The index of the chosen engine, or -1 for all engines.
    connect_requested()
        The user asked to attach another engine.
    """

    selection_changed = Signal(int)
    connect_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("engineSelector")
        self.combo = QComboBox()
        self.combo.setObjectName("engineCombo")
        self.combo.setToolTip("Engine that receives new orders and engine-wide commands")
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.combo.currentIndexChanged.connect(self._on_index)
        self.links_box = QHBoxLayout()
        self.links_box.setSpacing(14)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 0)
        label = QLabel("Orders to")
        label.setProperty("state", "muted")
        layout.addWidget(label)
        layout.addWidget(self.combo)
        layout.addSpacing(12)
        layout.addLayout(self.links_box)
        layout.addStretch(1)
        self._labels: list[QLabel] = []
        self._names: list[str] = []

    def set_links(self, links: Sequence[EngineLink]) -> None:
        """Show ``links`` (in attach order), keeping the current choice where it still exists."""
        names = [ln.name for ln in links]
        if names != self._names:
            chosen = self.selected()
            self.combo.blockSignals(True)
            self.combo.clear()
            for link in links:
                self.combo.addItem(link.name, link.index)
            if len(names) > 1:
                self.combo.addItem("All engines", -1)
            index = self.combo.findData(chosen)
            self.combo.setCurrentIndex(max(0, index))
            self.combo.blockSignals(False)
            self._names = names
        while len(self._labels) > len(links):  # a detached engine
            gone = self._labels.pop()
            self.links_box.removeWidget(gone)
            gone.deleteLater()
        while len(self._labels) < len(links):
            lbl = QLabel()
            lbl.setObjectName("engineLink")
            self.links_box.addWidget(lbl)
            self._labels.append(lbl)
        for lbl, link in zip(self._labels, links, strict=False):
            text, state = _STATE_LOOK[link.state]
            lbl.setText(f"● {link.name}  {text}")
            # Wide enough for the longest state, so the bar does not jump or clip.
            widest = f"● {link.name}  {_STATE_LOOK[ClientState.DISCONNECTED][0]}"
            lbl.setMinimumWidth(lbl.fontMetrics().horizontalAdvance(widest) + 4)
            lbl.setToolTip(link.detail or text)
            if lbl.property("state") != state:
                lbl.setProperty("state", state)
                lbl.style().unpolish(lbl)
                lbl.style().polish(lbl)
            lbl.show()
        for lbl in self._labels[len(links) :]:
            lbl.hide()
        self.adjustSize()

    def selected(self) -> int:
        """Return the chosen engine's index, -1 for all, 0 when nothing is listed."""
        data = self.combo.currentData()
        return int(data) if data is not None else 0

    def _on_index(self, _index: int) -> None:
        self.selection_changed.emit(self.selected())
