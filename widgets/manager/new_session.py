# SPDX-License-Identifier: MIT
"""The *New session* dialog: the few settings that make a ``[SESSION]`` valid, checked as typed.

A FIX session needs an identity (BeginString, SenderCompID, TargetCompID), a role and where to
connect or listen; a FIXT.1.1 session also needs DefaultApplVerID and its two dictionaries
(TransportDataDictionary, AppDataDictionary; never DataDictionary). The dialog asks for exactly
these, prefilled from the selected session, and can copy every other key of that session
(*clone*). It refuses an identity the file already has, a port out of range, an initiator
without a host, and a FIXT session without its two dictionaries.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from engine.fix.edit.cfgeditor import CfgEditor
from engine.fix.edit.services import EditorServices

#: BeginString <8> values (QuickFIX's).
BEGIN_STRINGS = ("FIX.4.0", "FIX.4.1", "FIX.4.2", "FIX.4.3", "FIX.4.4", "FIXT.1.1")
#: DefaultApplVerID values of a FIXT.1.1 session, newest first.
APPL_VER_IDS = ("FIX.5.0SP2", "FIX.5.0SP1", "FIX.5.0", "FIX.4.4", "FIX.4.3", "FIX.4.2")
FIXT = "FIXT.1.1"
#: Keys only a FIXT.1.1 session has (not copied into a FIX.4.x clone).
FIXT_KEYS = frozenset({"DEFAULTAPPLVERID", "TRANSPORTDATADICTIONARY", "APPDATADICTIONARY"})


class NewSessionDialog(QDialog):
    """Ask for a new session's role, identity and address; :meth:`values` are its keys.

    Parameters
    ----------
    cfg : CfgEditor
        The open file (for identities already taken, ``[DEFAULT]`` and the clone source).
    services : EditorServices
        Where the shipped dictionaries are.
    source : int
        Section index of the selected ``[SESSION]`` to prefill from and clone, or -1.
    """

    def __init__(
        self,
        cfg: CfgEditor,
        services: EditorServices,
        source: int = -1,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("newSessionDialog")
        self.setWindowTitle("New FIX session")
        self.cfg = cfg
        self.services = services
        self.source = source if source in cfg.session_sections() else -1
        self.taken = {cfg.title(s) for s in cfg.session_sections()}
        self._build()
        self._prefill()
        self._check()

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        self.role = QComboBox()
        self.role.setObjectName("newRole")
        self.role.addItems(["initiator", "acceptor"])
        self.role.setToolTip("ConnectionType: an initiator connects out, an acceptor listens")
        self.begin = QComboBox()
        self.begin.setObjectName("newBeginString")
        self.begin.addItems(list(BEGIN_STRINGS))
        self.appl_ver = QComboBox()
        self.appl_ver.setObjectName("newApplVerID")
        self.appl_ver.addItems(list(APPL_VER_IDS))
        self.appl_ver.setToolTip("DefaultApplVerID: the FIX version of application messages")
        self.sender_id = QLineEdit()
        self.sender_id.setObjectName("newSender")
        self.sender_id.setPlaceholderText("your CompID, e.g. QWCONSOLE")
        self.target_id = QLineEdit()
        self.target_id.setObjectName("newTarget")
        self.target_id.setPlaceholderText("the counterparty's CompID, e.g. BROKER")
        self.host = QLineEdit()
        self.host.setObjectName("newHost")
        self.port = QLineEdit()
        self.port.setObjectName("newPort")
        self.port.setPlaceholderText("1 – 65535")
        self.transport_dd = QLineEdit()
        self.transport_dd.setObjectName("newTransportDD")
        self.app_dd = QLineEdit()
        self.app_dd.setObjectName("newAppDD")
        self.clone = QCheckBox()
        self.clone.setObjectName("newClone")
        self.problem = QLabel()
        self.problem.setObjectName("newProblem")
        self.problem.setWordWrap(True)
        self.problem.setProperty("state", "bad")
        self.preview = QLabel()
        self.preview.setObjectName("newPreview")
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.preview.setFont(mono)
        self.preview.setTextFormat(Qt.TextFormat.PlainText)
        self.preview.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Role (ConnectionType)", self.role)
        form.addRow("BeginString", self.begin)
        form.addRow("DefaultApplVerID", self.appl_ver)
        form.addRow("SenderCompID", self.sender_id)
        form.addRow("TargetCompID", self.target_id)
        self.host_label = QLabel("SocketConnectHost")
        self.port_label = QLabel("SocketConnectPort")
        form.addRow(self.host_label, self.host)
        form.addRow(self.port_label, self.port)
        form.addRow("TransportDataDictionary", self.transport_dd)
        form.addRow("AppDataDictionary", self.app_dd)
        self.form = form
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Add session")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "The keys a session needs; everything else is inherited from [DEFAULT] (or copied "
            "from the selected session) and can be edited in the form afterwards."
        )
        intro.setWordWrap(True)
        intro.setProperty("state", "muted")
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.clone)
        layout.addWidget(self.problem)
        layout.addWidget(self.preview)
        layout.addWidget(self.buttons)
        for combo in (self.role, self.begin, self.appl_ver):
            combo.currentIndexChanged.connect(lambda _i: self._check())
        self.appl_ver.currentTextChanged.connect(self._on_appl_ver)
        for edit in (
            self.sender_id,
            self.target_id,
            self.host,
            self.port,
            self.transport_dd,
            self.app_dd,
        ):
            edit.textChanged.connect(lambda _t: self._check())
        self.clone.toggled.connect(lambda _c: self._check())
        self.setMinimumWidth(620)

    def _eff(self, key: str) -> str:
        if self.source < 0:
            return ""
        return self.cfg.effective(self.source, key)[0] or ""

    def _prefill(self) -> None:
        cfg = self.cfg
        d = cfg.default_section()
        role = (
            self._eff("ConnectionType")
            or (cfg.get(d, "ConnectionType") if d is not None else None)
            or "initiator"
        )
        self.role.setCurrentText(role)
        self.begin.setCurrentText(self._eff("BeginString") or "FIX.4.4")
        self.appl_ver.setCurrentText(self._eff("DefaultApplVerID") or "FIX.5.0SP2")
        self.sender_id.setText(self._eff("SenderCompID"))
        self.target_id.setText("")
        key = "SocketConnect" if role == "initiator" else "SocketAccept"
        self.host.setText(self._eff(f"{key}Host") or ("127.0.0.1" if role == "initiator" else ""))
        self.port.setText(self._eff(f"{key}Port"))
        # FIXT dictionaries: as another FIXT session of the file has them, else the shipped ones.
        transport = app = ""
        for s in cfg.session_sections():
            transport = transport or (cfg.effective(s, "TransportDataDictionary")[0] or "")
            app = app or (cfg.effective(s, "AppDataDictionary")[0] or "")
        self.transport_dd.setText(transport or self.services.default_dictionary(FIXT))
        self.app_dd.setText(app or self.services.default_dictionary(self.appl_ver.currentText()))
        if self.source >= 0:
            self.clone.setText(f"Copy the other keys of {cfg.title(self.source)} (clone)")
            self.clone.setChecked(True)
        else:
            self.clone.setVisible(False)

    def _on_appl_ver(self, version: str) -> None:
        # Follow the version with the shipped dictionary unless the user chose another file.
        shipped = {self.services.default_dictionary(v) for v in APPL_VER_IDS}
        if self.app_dd.text().strip() in shipped:
            self.app_dd.setText(self.services.default_dictionary(version))

    # ------------------------------------------------------------------ checking
    def _check(self) -> None:
        initiator = self.role.currentText() == "initiator"
        fixt = self.begin.currentText() == FIXT
        key = "SocketConnect" if initiator else "SocketAccept"
        self.host_label.setText(f"{key}Host")
        self.port_label.setText(f"{key}Port")
        self.host.setPlaceholderText(
            "host name or address" if initiator else "optional: one interface, e.g. 127.0.0.1"
        )
        for w in (self.appl_ver, self.transport_dd, self.app_dd):
            self.form.setRowVisible(w, fixt)
        problem = self.problem_text()
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        self.ok_button.setEnabled(not problem)
        if not problem:
            values = self.values()
            lines = ["[SESSION]", *(f"{k}={v}" for k, v in self._own().items())]
            copied = len(values) - len(self._own())
            if copied:
                lines.append(f"… and {copied} more keys of {self.cfg.title(self.source)}")
            self.preview.setText("Adds to the file:\n" + "\n".join(lines))
        self.preview.setVisible(not problem)
        self.adjustSize()

    def session_title(self) -> str:
        """Return the new session's id as the file list shows it (``FIX.4.4:ME->THEM``)."""
        title = f"{self.begin.currentText()}:{self.sender_id.text().strip()}->"
        title += self.target_id.text().strip()
        qualifier = self._eff("SessionQualifier") if self.clone.isChecked() else ""
        return f"{title}:{qualifier}" if qualifier else title

    def problem_text(self) -> str:
        """Return why the session cannot be added yet (``""`` when it can)."""
        sender, target = self.sender_id.text().strip(), self.target_id.text().strip()
        port = self.port.text().strip()
        initiator = self.role.currentText() == "initiator"
        if not sender or not target:
            return "SenderCompID and TargetCompID are required."
        if any(c in sender + target for c in " =[]#"):
            return "CompIDs may not contain spaces, '=', '[', ']' or '#'."
        if self.session_title() in self.taken:
            return f"{self.session_title()} is already in this file."
        if initiator and not self.host.text().strip():
            return "SocketConnectHost: an initiator needs the host to connect to."
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            key = "SocketConnectPort" if initiator else "SocketAcceptPort"
            return f"{key}: a port from 1 to 65535 is required."
        if self.begin.currentText() == FIXT and (
            not self.transport_dd.text().strip() or not self.app_dd.text().strip()
        ):
            return "FIXT.1.1 needs TransportDataDictionary and AppDataDictionary."
        return ""

    # ------------------------------------------------------------------ result
    def _own(self) -> dict[str, str]:
        initiator = self.role.currentText() == "initiator"
        key = "SocketConnect" if initiator else "SocketAccept"
        out = {
            "ConnectionType": self.role.currentText(),
            "BeginString": self.begin.currentText(),
            "SenderCompID": self.sender_id.text().strip(),
            "TargetCompID": self.target_id.text().strip(),
        }
        if self.host.text().strip():
            out[f"{key}Host"] = self.host.text().strip()
        out[f"{key}Port"] = self.port.text().strip()
        if self.begin.currentText() == FIXT:
            out["DefaultApplVerID"] = self.appl_ver.currentText()
            out["TransportDataDictionary"] = self.transport_dd.text().strip()
            out["AppDataDictionary"] = self.app_dd.text().strip()
        return out

    def values(self) -> dict[str, str]:
        """Return the new section's keys: the clone's own keys, then the dialog's."""
        own = self._own()
        upper = {k.upper() for k in own}
        # The other side's address keys do not apply once the role is chosen.
        upper |= {"SOCKETCONNECTHOST", "SOCKETCONNECTPORT", "SOCKETACCEPTHOST", "SOCKETACCEPTPORT"}
        if self.begin.currentText() != FIXT:
            upper |= FIXT_KEYS
        if not (self.clone.isChecked() and self.source >= 0):
            return own
        copied = {n: v for n, v, _line in self.cfg.keys(self.source) if n.upper() not in upper}
        return {**own, **copied}
