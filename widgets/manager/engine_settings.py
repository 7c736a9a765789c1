# SPDX-License-Identifier: MIT
"""The engine settings editor: the engine's TOML file as forms, and changes applied live.

The file is ``engine.config``'s (``qwconsole engine --config FILE``): engine id, file
locations, the session file, engine-wide risk limits, the strategies to run with their
parameters and own limits, and the remote server (bind address, port, TLS certificate and key,
token store). The form edits a typed :class:`engine.config.model.EngineConfig`; the raw TOML
view shows what will be saved and may be edited directly (its errors name the file, line and
key path). A form edit changes only the lines of what changed
(:func:`engine.config.inplace.update_config_text`): the file's comments, blank lines and order
stay.

With an engine attached (embedded or remote, through ``EngineClient``), changes can also be
applied to it while it runs: engine-wide or per-strategy risk limits (``SetRiskLimits``),
strategy parameters (``SetStrategyParameters``) and session operations (``ControlSession``:
log on, log out, reset; ``ReloadSession``: re-read from the ``.cfg``). The engine's answer is
shown as it comes back.

Applying limits sends a patch: each limit of the form with a value is set, each emptied one is
switched off by name (``SetRiskLimits.clear``), and limits the form does not show stay as the
engine has them. What the engine enforces now — engine-wide, per strategy, per instrument —
is shown under the form (:class:`widgets.monitor.risk.RiskLimitsView`, fed the engine's
``RiskLimitsChanged`` events through :meth:`EngineSettingsEditor.on_events`).

Why one long module: it is one editor, :class:`EngineSettingsEditor`, whose forms, raw TOML
view, undo stack and live apply all work on the same :class:`engine.config.model.EngineConfig`
and file text; :class:`RiskForm` is the form it shows twice (engine-wide and per strategy).
"""

from __future__ import annotations

import dataclasses
import weakref
from concurrent.futures import Future
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.client import EngineClient
from engine.commands import (
    Command,
    CommandError,
    CommandResult,
    ControlSession,
    ReloadSession,
    SetRiskLimits,
    SetStrategyParameters,
)
from engine.config.inplace import update_config_text
from engine.config.model import ConfigError, EngineConfig, RiskLimits, StrategyConfig
from engine.config.reader import parse_config
from engine.events import EventRecord
from widgets.empty_state import EmptyState
from widgets.manager.undo import RAW_TEXT_ID, SnapshotCommand
from widgets.monitor.risk import RiskLimitsView
from widgets.relay import thread_relay

#: Risk limit fields with their labels and whether they are integers.
RISK_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("max_order_qty_lots", "Max order quantity (lots)", True),
    ("max_order_notional", "Max order notional", False),
    ("max_position_lots", "Max position (lots)", True),
    ("price_band_ticks", "Price band (ticks)", True),
    ("price_band_pct", "Price band (%)", False),
    ("max_open_orders", "Max open orders", True),
    ("max_orders_per_second", "Max orders per second", True),
)

_OK = QColor("#3fb950")
_ERROR = QColor("#e5534b")
_MUTED = QColor("#8b949e")

NEW_CONFIG = """\
[engine]
id = "engine"
heartbeat_interval_ms = 1000

[files]
journal_dir = "journal"
store_dir = "fix-store"
logs_dir = "logs"

[risk]
max_order_qty_lots = 100
max_position_lots = 500

[remote]
enabled = false
bind = "127.0.0.1"
port = 7341
"""


def _parse_param(text: str) -> bool | int | float | str:
    t = text.strip()
    if t in ("true", "false"):
        return t == "true"
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


def _limit_text(v: int | float | None) -> str:
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


class RiskForm(QWidget):
    """Six risk limits; an empty field disables that rule."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        for key, label, _is_int in RISK_FIELDS:
            e = QLineEdit()
            e.setObjectName(f"{name}_{key}")
            e.setPlaceholderText("off")
            e.setAlignment(Qt.AlignmentFlag.AlignRight)
            e.setMaximumWidth(160)
            self.edits[key] = e
            form.addRow(label, e)

    def show_limits(self, limits: RiskLimits | None) -> None:
        """Display ``limits`` (None: all off)."""
        for key, e in self.edits.items():
            e.blockSignals(True)
            e.setText(_limit_text(getattr(limits, key)) if limits is not None else "")
            e.blockSignals(False)

    def command(self, strategy_id: int | None = None) -> SetRiskLimits:
        """Return the patch that makes the engine's limits what the form says.

        A field with a value sets that limit, an empty field switches it off by name; limits
        not on the form are left as the engine has them. Raises ValueError naming a bad field.
        """
        limits = self.limits()
        values = {key: getattr(limits, key) for key, _label, _int in RISK_FIELDS}
        clear = tuple(key for key, v in values.items() if v is None)
        return SetRiskLimits(strategy_id=strategy_id, clear=clear, **values)

    def limits(self) -> RiskLimits:
        """Return the limits entered; raises ValueError naming the bad field."""
        values: dict[str, int | float | None] = {}
        for key, label, is_int in RISK_FIELDS:
            text = self.edits[key].text().strip().replace(",", "")
            if not text:
                values[key] = None
                continue
            try:
                values[key] = int(text) if is_int else float(text)
            except ValueError:
                kind = "a whole number" if is_int else "a number"
                raise ValueError(f"{label}: {text!r} is not {kind}") from None
        return RiskLimits(**values)  # type: ignore[arg-type]


class EngineSettingsEditor(QWidget):
    """Edit the engine's TOML configuration and apply changes to a running engine.

    Parameters
    ----------
    client : EngineClient, optional
        The engine to apply changes to.

    Signals
    -------
    state_changed()
        Opened, edited, saved or undone.
    """

    state_changed = Signal()

    def __init__(self, client: EngineClient | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("engineSettingsEditor")
        self.client = client
        self.path: Path | None = None
        self.text = ""
        self.saved_text = ""
        self.config: EngineConfig | None = None
        self.problems: list[str] = []
        self.strategy_index = -1
        self.answers: list[str] = []
        self.undo_stack = QUndoStack(self)
        self._raw_timer = QTimer(self)
        self._raw_timer.setSingleShot(True)
        self._raw_timer.setInterval(500)
        self._raw_timer.timeout.connect(self._commit_raw)
        self._build()
        self._show_empty(True)

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        self.empty = EmptyState(
            "No engine settings open",
            "Open the engine's TOML file (qwconsole engine --config FILE) to edit risk limits, "
            "strategies and their parameters, the remote server and file locations; with an "
            "engine attached, apply risk and parameter changes while it runs.",
            "File ▸ Open… on this tab, or New for a starting point",
        )
        self.edits: dict[str, QLineEdit] = {}

        def line(key: str, placeholder: str = "") -> QLineEdit:
            e = QLineEdit()
            e.setObjectName(f"cfg_{key}")
            e.setPlaceholderText(placeholder)
            e.editingFinished.connect(self._on_form_edit)
            self.edits[key] = e
            return e

        general = QGroupBox("Engine and files")
        gf = QFormLayout(general)
        gf.addRow("Engine id", line("engine_id"))
        gf.addRow("Heartbeat interval (ms)", line("heartbeat_interval_ms"))
        gf.addRow("Session file (.cfg)", line("sessions_file", "none"))
        gf.addRow("Journal folder", line("journal_dir", "none: not journaled"))
        gf.addRow("FIX store folder", line("store_dir", "none: in memory"))
        gf.addRow("Logs folder", line("logs_dir", "none"))
        self.simulator = QCheckBox("Built-in exchange simulator is the venue")
        self.simulator.toggled.connect(lambda _c: self._on_form_edit())
        gf.addRow("", self.simulator)

        risk_box = QGroupBox("Engine-wide risk limits")
        rv = QVBoxLayout(risk_box)
        self.risk = RiskForm("risk")
        for e in self.risk.edits.values():
            e.editingFinished.connect(self._on_form_edit)
        rv.addWidget(self.risk)
        self.apply_risk = QPushButton("Apply to the running engine")
        self.apply_risk.setObjectName("applyRisk")
        self.apply_risk.clicked.connect(self.apply_engine_risk)
        rv.addWidget(self.apply_risk, 0, Qt.AlignmentFlag.AlignLeft)

        remote = QGroupBox("Remote server")
        rf = QFormLayout(remote)
        self.remote_enabled = QCheckBox("Serve remote consoles")
        self.remote_enabled.toggled.connect(lambda _c: self._on_form_edit())
        rf.addRow("", self.remote_enabled)
        rf.addRow("Bind address", line("bind", "127.0.0.1"))
        rf.addRow("Port", line("port", "7341"))
        rf.addRow("TLS certificate", line("tls_cert", "none: plain WebSocket, loopback only"))
        rf.addRow("TLS key", line("tls_key", "none"))
        rf.addRow("Token store", line("token_store", "required when enabled"))
        rf.addRow("Audit log", line("audit_log", "default: <logs>/audit.log"))

        strat = QGroupBox("Strategies")
        sv = QVBoxLayout(strat)
        self.strategies = QTableWidget(0, 4)
        self.strategies.setObjectName("strategiesTable")
        self.strategies.setHorizontalHeaderLabels(["Id", "Class", "Symbols", "Start"])
        self.strategies.verticalHeader().setVisible(False)
        self.strategies.horizontalHeader().setStretchLastSection(False)
        self.strategies.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.strategies.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.strategies.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.strategies.itemChanged.connect(self._on_strategy_cell)
        self.strategies.setMaximumHeight(150)
        self.strategies.currentCellChanged.connect(lambda r, _c, _pr, _pc: self._on_strategy(r))
        self.params = QTableWidget(0, 2)
        self.params.setObjectName("paramsTable")
        self.params.setHorizontalHeaderLabels(["Parameter", "Value"])
        self.params.verticalHeader().setVisible(False)
        self.params.horizontalHeader().setStretchLastSection(True)
        self.params.itemChanged.connect(self._on_param_changed)
        self.strategy_risk = RiskForm("strategy_risk")
        for e in self.strategy_risk.edits.values():
            e.editingFinished.connect(self._on_form_edit)
        self.apply_params = QPushButton("Apply parameters and limits to the running strategy")
        self.apply_params.setObjectName("applyStrategy")
        self.apply_params.clicked.connect(self.apply_strategy)
        sv.addWidget(self.strategies)
        srow = QHBoxLayout()
        self.strategy_class = QLineEdit("engine.strategy.examples:MarketMaker")
        self.strategy_class.setObjectName("newStrategyClass")
        self.strategy_class.setToolTip("package.module:ClassName of the strategy to add")
        self.add_strategy_button = QPushButton("Add strategy")
        self.add_strategy_button.clicked.connect(
            lambda: self.add_strategy(self.strategy_class.text().strip())
        )
        self.remove_strategy_button = QPushButton("Remove strategy")
        self.remove_strategy_button.clicked.connect(self.remove_strategy)
        self.param_name = QLineEdit()
        self.param_name.setObjectName("newParamName")
        self.param_name.setPlaceholderText("parameter")
        self.param_value = QLineEdit()
        self.param_value.setObjectName("newParamValue")
        self.param_value.setPlaceholderText("value")
        self.add_param_button = QPushButton("Set parameter")
        self.add_param_button.clicked.connect(self._on_add_param)
        srow.addWidget(self.strategy_class, 2)
        srow.addWidget(self.add_strategy_button)
        srow.addWidget(self.remove_strategy_button)
        srow.addSpacing(16)
        srow.addWidget(self.param_name, 1)
        srow.addWidget(self.param_value, 1)
        srow.addWidget(self.add_param_button)
        sv.addLayout(srow)
        below = QHBoxLayout()
        pv = QVBoxLayout()
        pv.addWidget(QLabel("Parameters (true/false, numbers or text)"))
        pv.addWidget(self.params)
        below.addLayout(pv, 1)
        srv = QVBoxLayout()
        srv.addWidget(QLabel("Limits of this strategy"))
        srv.addWidget(self.strategy_risk)
        srv.addStretch(1)
        below.addLayout(srv, 1)
        sv.addLayout(below)
        sv.addWidget(self.apply_params, 0, Qt.AlignmentFlag.AlignLeft)

        sessions = QGroupBox("FIX sessions of the running engine")
        sf = QHBoxLayout(sessions)
        self.session_id = QComboBox()
        self.session_id.setEditable(True)
        self.session_id.setObjectName("sessionId")
        self.session_id.setMinimumWidth(260)
        sf.addWidget(self.session_id, 1)
        self.session_buttons: dict[str, QPushButton] = {}
        for action, label in (
            ("logon", "Log on"),
            ("logout", "Log out"),
            ("reset", "Reset"),
            ("reload", "Reload from file"),
        ):
            b = QPushButton(label)
            b.setObjectName(f"session_{action}")
            b.clicked.connect(lambda _c=False, a=action: self.control_session(a))
            sf.addWidget(b)
            self.session_buttons[action] = b

        form_host = QWidget()
        fv = QVBoxLayout(form_host)
        top = QHBoxLayout()
        left_col = QVBoxLayout()
        left_col.addWidget(general)
        left_col.addWidget(remote)
        left_col.addStretch(1)
        top.addLayout(left_col, 1)
        right_col = QVBoxLayout()
        right_col.addWidget(risk_box)
        right_col.addWidget(sessions)
        right_col.addStretch(1)
        top.addLayout(right_col, 1)
        fv.addLayout(top)
        fv.addWidget(strat)
        fv.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_host)
        self.form_scroll = scroll
        self.raw = QPlainTextEdit()
        self.raw.setObjectName("tomlRaw")
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.raw.setFont(mono)
        self.raw.textChanged.connect(self._raw_timer.start)
        self.center = QTabWidget()
        self.center.addTab(scroll, "Form")
        self.center.addTab(self.raw, "Raw TOML")

        self.problems_list = QListWidget()
        self.problems_list.setObjectName("engineProblems")
        self.problems_list.setWordWrap(True)
        self.answers_list = QListWidget()
        self.answers_list.setObjectName("engineAnswers")
        self.answers_list.setWordWrap(True)
        self.engine_label = QLabel()
        self.engine_label.setWordWrap(True)
        side = QWidget()
        sdv = QVBoxLayout(side)
        sdv.setContentsMargins(0, 0, 0, 0)
        pb = QGroupBox("Problems")
        QVBoxLayout(pb).addWidget(self.problems_list)
        ab = QGroupBox("Engine answers")
        abv = QVBoxLayout(ab)
        abv.addWidget(self.engine_label)
        abv.addWidget(self.answers_list)
        self.problems_list.setMaximumHeight(220)
        sdv.addWidget(pb)
        sdv.addWidget(ab, 1)
        self.splitter = QSplitter()
        self.splitter.addWidget(self.center)
        self.splitter.addWidget(side)
        self.splitter.setSizes([1100, 420])
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        outer.addWidget(self.empty)
        outer.addWidget(self.splitter, 1)
        self.enforced = RiskLimitsView()
        self.enforced_box = QGroupBox("Risk limits the attached engine enforces now")
        self.enforced_box.setObjectName("enforcedLimits")
        QVBoxLayout(self.enforced_box).addWidget(self.enforced)
        self.enforced_box.setMaximumHeight(170)
        outer.addWidget(self.enforced_box)
        self._update_engine_label()

    def on_events(self, batch: list[EventRecord]) -> None:
        """Follow the attached engine's limits (its ``RiskLimitsChanged`` and usage events)."""
        types = RiskLimitsView.EVENT_TYPES
        mine = [r for r in batch if isinstance(r.event, types)]
        if mine:
            self.enforced.on_events(mine)

    def _show_empty(self, empty: bool) -> None:
        self.empty.setVisible(empty)
        self.splitter.setVisible(not empty)

    # ------------------------------------------------------------------ files
    @property
    def modified(self) -> bool:
        """Whether the text differs from the file as opened or last saved."""
        return self.path is not None and self.text != self.saved_text

    @property
    def file_name(self) -> str:
        """Return the open file's name (``""`` when none)."""
        return self.path.name if self.path is not None else ""

    def open_file(self, path: str | Path) -> None:
        """Open a TOML file (its problems are listed; it opens even when invalid)."""
        p = Path(path)
        text = p.read_text(encoding="utf-8")
        self.path = p
        self.saved_text = text
        self.undo_stack.clear()
        self._show_empty(False)
        self._set_text(text)

    def new_file(self, path: str | Path) -> None:
        """Start from a small valid configuration that will be saved to ``path``."""
        self.path = Path(path)
        self.saved_text = ""
        self.undo_stack.clear()
        self._show_empty(False)
        self._set_text(NEW_CONFIG)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the TOML text; raises ValueError while the text has errors."""
        if self.path is None and path is None:
            raise ValueError("no file to save to")
        self._commit_raw()
        if self.config is None:
            raise ValueError("fix the problems first:\n" + "\n".join(self.problems))
        target = Path(path) if path is not None else self.path
        assert target is not None
        target.write_text(self.text, encoding="utf-8")
        self.path = target
        self.saved_text = self.text
        self.undo_stack.setClean()
        self.state_changed.emit()
        return target

    # ------------------------------------------------------------------ model
    def _set_text(self, text: str) -> None:
        self.text = text
        source = self.path
        try:
            self.config = parse_config(text, source)
            self.problems = []
        except ConfigError as e:
            self.config = None
            self.problems = [str(p) for p in e.problems]
        self.refresh()
        self.state_changed.emit()

    def _push_config(self, label: str, cfg: EngineConfig) -> None:
        before = self.text
        after = update_config_text(self.text, cfg)
        if after != before:
            self.undo_stack.push(SnapshotCommand(label, before, after, self._set_text))

    def set_config(self, label: str, cfg: EngineConfig) -> None:
        """Make ``cfg`` the configuration (one undo step)."""
        self._push_config(label, cfg)

    def _commit_raw(self) -> None:
        self._raw_timer.stop()
        text = self.raw.toPlainText()
        if self.path is None or text == self.text:
            return
        before = self.text
        self.undo_stack.push(
            SnapshotCommand("Edit raw TOML", before, text, self._set_text, RAW_TEXT_ID)
        )

    def _on_form_edit(self) -> None:
        cfg = self.config
        if cfg is None:
            return
        try:
            new = self._form_config(cfg)
        except ValueError as e:
            self._say_problem(str(e))
            return
        self._push_config("Edit engine settings", new)

    def _form_config(self, cfg: EngineConfig) -> EngineConfig:
        def opt_path(key: str) -> Path | None:
            t = self.edits[key].text().strip()
            return Path(t) if t else None

        def int_of(key: str, label: str) -> int:
            t = self.edits[key].text().strip()
            try:
                return int(t)
            except ValueError:
                raise ValueError(f"{label}: {t!r} is not a whole number") from None

        remote = dataclasses.replace(
            cfg.remote,
            enabled=self.remote_enabled.isChecked(),
            bind=self.edits["bind"].text().strip() or "127.0.0.1",
            port=int_of("port", "Port"),
            tls_cert=opt_path("tls_cert"),
            tls_key=opt_path("tls_key"),
            token_store=opt_path("token_store"),
            audit_log=opt_path("audit_log"),
        )
        strategies = list(cfg.strategies)
        if 0 <= self.strategy_index < len(strategies):
            s = strategies[self.strategy_index]
            limits = self.strategy_risk.limits()
            strategies[self.strategy_index] = dataclasses.replace(
                s, risk=None if limits == RiskLimits() else limits
            )
        return dataclasses.replace(
            cfg,
            engine_id=self.edits["engine_id"].text().strip() or "engine",
            heartbeat_interval_ms=int_of("heartbeat_interval_ms", "Heartbeat interval"),
            sessions_file=opt_path("sessions_file"),
            files=dataclasses.replace(
                cfg.files,
                journal_dir=opt_path("journal_dir"),
                store_dir=opt_path("store_dir"),
                logs_dir=opt_path("logs_dir"),
            ),
            simulator=dataclasses.replace(cfg.simulator, enabled=self.simulator.isChecked()),
            risk=self.risk.limits(),
            remote=remote,
            strategies=tuple(strategies),
        )

    def set_strategy_parameter(
        self, index: int, name: str, value: bool | int | float | str
    ) -> None:
        """Set one parameter of strategy ``index`` (one undo step)."""
        cfg = self.config
        if cfg is None:
            return
        s = cfg.strategies[index]
        params = dict(s.parameters)
        params[name] = value
        new_s = dataclasses.replace(s, parameters=tuple(params.items()))
        strategies = list(cfg.strategies)
        strategies[index] = new_s
        self._push_config(
            f"Set {name} = {value}", dataclasses.replace(cfg, strategies=tuple(strategies))
        )

    def _on_strategy_cell(self, item: QTableWidgetItem) -> None:
        cfg = self.config
        if cfg is None or not 0 <= item.row() < len(cfg.strategies):
            return
        s = cfg.strategies[item.row()]
        if item.column() == 2:
            symbols = tuple(
                x.strip() for x in item.text().replace(";", ",").split(",") if x.strip()
            )
            new = dataclasses.replace(s, symbols=symbols)
        elif item.column() == 3:
            new = dataclasses.replace(s, autostart=item.checkState() == Qt.CheckState.Checked)
        else:
            return
        if new == s:
            return
        strategies = list(cfg.strategies)
        strategies[item.row()] = new
        self._push_config(
            f"Edit strategy {s.strategy_id}",
            dataclasses.replace(cfg, strategies=tuple(strategies)),
        )

    def add_strategy(self, class_path: str) -> None:
        """Append a strategy running ``class_path`` (next free id, no symbols yet)."""
        cfg = self.config
        if cfg is None:
            return
        next_id = max((s.strategy_id for s in cfg.strategies), default=0) + 1
        new = StrategyConfig(strategy_id=next_id, class_path=class_path, autostart=False)
        self.strategy_index = len(cfg.strategies)
        self._push_config(
            f"Add strategy {next_id}",
            dataclasses.replace(cfg, strategies=(*cfg.strategies, new)),
        )

    def remove_strategy(self) -> None:
        """Remove the selected strategy."""
        cfg = self.config
        if cfg is None or not 0 <= self.strategy_index < len(cfg.strategies):
            return
        gone = cfg.strategies[self.strategy_index]
        rest = tuple(s for i, s in enumerate(cfg.strategies) if i != self.strategy_index)
        self.strategy_index = min(self.strategy_index, len(rest) - 1)
        self._push_config(
            f"Remove strategy {gone.strategy_id}", dataclasses.replace(cfg, strategies=rest)
        )

    def _on_add_param(self) -> None:
        name = self.param_name.text().strip()
        if not name or self.strategy_index < 0:
            return
        self.set_strategy_parameter(
            self.strategy_index, name, _parse_param(self.param_value.text())
        )
        self.param_name.clear()
        self.param_value.clear()

    def _on_param_changed(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() != 1 or self.strategy_index < 0:
            return
        name_item = self.params.item(item.row(), 0)
        if name_item is None:
            return
        self.set_strategy_parameter(
            self.strategy_index, name_item.text(), _parse_param(item.text())
        )

    # ------------------------------------------------------------------ views
    _filling = False

    def refresh(self) -> None:
        """Show the current text and configuration."""
        if self.raw.toPlainText() != self.text:
            self.raw.blockSignals(True)
            self.raw.setPlainText(self.text)
            self.raw.blockSignals(False)
        self.problems_list.clear()
        for p in self.problems:
            item = QListWidgetItem(p)
            item.setForeground(_ERROR)
            self.problems_list.addItem(item)
        if not self.problems:
            self.problems_list.addItem("No problems: the engine accepts this file.")
        cfg = self.config
        self.form_scroll.setEnabled(cfg is not None)
        if cfg is None:
            self.center.setCurrentIndex(1)
            return
        values = {
            "engine_id": cfg.engine_id,
            "heartbeat_interval_ms": str(cfg.heartbeat_interval_ms),
            "sessions_file": str(cfg.sessions_file or ""),
            "journal_dir": str(cfg.files.journal_dir or ""),
            "store_dir": str(cfg.files.store_dir or ""),
            "logs_dir": str(cfg.files.logs_dir or ""),
            "bind": cfg.remote.bind,
            "port": str(cfg.remote.port),
            "tls_cert": str(cfg.remote.tls_cert or ""),
            "tls_key": str(cfg.remote.tls_key or ""),
            "token_store": str(cfg.remote.token_store or ""),
            "audit_log": str(cfg.remote.audit_log or ""),
        }
        for key, value in values.items():
            e = self.edits[key]
            e.blockSignals(True)
            e.setText(value)
            e.blockSignals(False)
        for box, checked in (
            (self.simulator, cfg.simulator.enabled),
            (self.remote_enabled, cfg.remote.enabled),
        ):
            box.blockSignals(True)
            box.setChecked(checked)
            box.blockSignals(False)
        self.risk.show_limits(cfg.risk)
        self._fill_strategies(cfg)
        self._fill_sessions(cfg)

    def _fill_strategies(self, cfg: EngineConfig) -> None:
        self.strategies.blockSignals(True)
        self.strategies.setRowCount(len(cfg.strategies))
        for r, s in enumerate(cfg.strategies):
            for c, text in enumerate(
                (
                    str(s.strategy_id),
                    s.class_path,
                    ", ".join(s.symbols),
                    "yes" if s.autostart else "no",
                )
            ):
                self.strategies.setItem(r, c, QTableWidgetItem(text))
        for c in (0, 2, 3):
            self.strategies.resizeColumnToContents(c)
        if cfg.strategies and not 0 <= self.strategy_index < len(cfg.strategies):
            self.strategy_index = 0
        if self.strategy_index >= 0:
            self.strategies.setCurrentCell(self.strategy_index, 0)
        self.strategies.blockSignals(False)
        self._show_strategy(cfg)

    def _on_strategy(self, row: int) -> None:
        self.strategy_index = row
        if self.config is not None:
            self._show_strategy(self.config)

    def _show_strategy(self, cfg: EngineConfig) -> None:
        s: StrategyConfig | None = (
            cfg.strategies[self.strategy_index]
            if 0 <= self.strategy_index < len(cfg.strategies)
            else None
        )
        self._filling = True
        self.params.setRowCount(len(s.parameters) if s else 0)
        for r, (name, value) in enumerate(s.parameters if s else ()):
            n = QTableWidgetItem(name)
            n.setFlags(n.flags() & ~Qt.ItemFlag.ItemIsEditable)
            shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
            self.params.setItem(r, 0, n)
            self.params.setItem(r, 1, QTableWidgetItem(shown))
        self._filling = False
        self.params.resizeColumnToContents(0)
        self.strategy_risk.show_limits(s.risk if s else None)
        self.strategy_risk.setEnabled(s is not None)
        self._update_engine_label()

    def _fill_sessions(self, cfg: EngineConfig) -> None:
        ids = sorted({i.session for i in cfg.instruments if i.session})
        current = self.session_id.currentText()
        self.session_id.clear()
        self.session_id.addItems(ids)
        if current:
            self.session_id.setEditText(current)

    def _update_engine_label(self) -> None:
        attached = self.client is not None
        name = self.client.name if self.client is not None else ""
        self.engine_label.setText(
            f"Attached to engine “{name}”: Apply buttons send the change to it."
            if attached
            else "No engine attached: changes are only saved to the file."
        )
        for b in (self.apply_risk, self.apply_params, *self.session_buttons.values()):
            b.setEnabled(attached)

    def _say_problem(self, text: str) -> None:
        item = QListWidgetItem(text)
        item.setForeground(_ERROR)
        self.problems_list.insertItem(0, item)

    # ------------------------------------------------------------------ live engine
    def _send(self, what: str, command: Command) -> Future[CommandResult] | None:
        if self.client is None:
            self._on_answer(what, RuntimeError("no engine attached"))
            return None
        self._on_answer(what, None)
        future = self.client.send(command)
        relay, me = thread_relay(), weakref.ref(self)

        def done(f: Future[CommandResult]) -> None:
            try:
                answer: object = f.result()
            except Exception as e:  # the answer shown is whatever went wrong
                answer = e
            relay.post(me, "_on_answer", what, answer)

        future.add_done_callback(done)
        return future

    def apply_engine_risk(self) -> Future[CommandResult] | None:
        """Send the engine-wide limits of the form to the running engine (as a patch)."""
        try:
            command = self.risk.command()
        except ValueError as e:
            self._say_problem(str(e))
            return None
        return self._send("Engine-wide risk limits", command)

    def apply_strategy(self) -> list[Future[CommandResult]]:
        """Send the selected strategy's parameters and limits to the running engine."""
        cfg = self.config
        out: list[Future[CommandResult]] = []
        if cfg is None or not 0 <= self.strategy_index < len(cfg.strategies):
            return out
        s = cfg.strategies[self.strategy_index]
        try:
            limits = self.strategy_risk.command(s.strategy_id)
        except ValueError as e:
            self._say_problem(str(e))
            return out
        for what, cmd in (
            (
                f"Parameters of strategy {s.strategy_id}",
                SetStrategyParameters(strategy_id=s.strategy_id, values=s.parameters),
            ),
            (
                f"Limits of strategy {s.strategy_id}",
                limits,
            ),
        ):
            f = self._send(what, cmd)
            if f is not None:
                out.append(f)
        return out

    def control_session(self, action: str) -> Future[CommandResult] | None:
        """Log on, log out, reset or reload (from its ``.cfg``) a session of the running engine."""
        sid = self.session_id.currentText().strip()
        if not sid:
            self._say_problem("Session: enter a session id such as FIX.4.4:ME->THEM")
            return None
        command: Command = (
            ReloadSession(session_id=sid)
            if action == "reload"
            else ControlSession(session_id=sid, action=action)
        )
        return self._send(f"Session {sid}: {action}", command)

    def _on_answer(self, what: str, answer: object) -> None:
        if answer is None:
            text, color = f"{what}: sent, waiting for the engine…", _MUTED
        elif isinstance(answer, CommandError):
            text, color = f"{what}: refused — {answer.reason}", _ERROR
        elif isinstance(answer, Exception):
            text, color = f"{what}: failed — {answer}", _ERROR
        else:
            detail = getattr(answer, "detail", "") or "accepted"
            text, color = f"{what}: {detail}", _OK
        self.answers.append(text)
        item = QListWidgetItem(text)
        item.setForeground(color)
        self.answers_list.insertItem(0, item)
