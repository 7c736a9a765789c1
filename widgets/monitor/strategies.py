# SPDX-License-Identifier: MIT
"""Strategies: state, P&L, counts, parameters and controls of each strategy.

Parameters are editable while a strategy runs; start, pause, stop, cancel-all and flatten act
on the selected strategy. "Load strategy…" adds a strategy class from a Python file to the
engine (``AddStrategy``); its declared parameters then show here like any other's.

Parameter edits are sent as ``SetStrategyParameters``; the engine checks them against their
declared bounds and answers ``CommandError(reason)``, shown under the parameters. The table
shows the engine's values (from ``StrategyStatusChanged``) — an edit only sticks once the engine
took it.

Strategies the kill switch halted show "Halted" and a banner over the table says why and what
lifts it: release the switch, then resume each strategy (Start is disabled while the switch is
engaged; the engine refuses it too).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.commands import (
    CancelAll,
    Command,
    CommandError,
    CommandResult,
    ControlStrategy,
    Flatten,
    SetStrategyParameters,
)
from engine.enums import KillLevel, StrategyState
from engine.events import (
    Event,
    EventRecord,
    KillSwitchChanged,
    OrderChanged,
    OrderFilled,
    PositionChanged,
    StrategyStatusChanged,
)
from widgets.empty_state import EmptyState
from widgets.fmt import fmt_ts_utc
from widgets.monitor.context import MonitorContext
from widgets.monitor.formats import STRATEGY_STATE_TEXT, STRATEGY_STATE_TONE, fmt_money, money_tone
from widgets.monitor.load_strategy import LoadStrategyDialog
from widgets.monitor.orders import OrderCounts
from widgets.tables import Column, DataTableView, KeyedTableModel
from widgets.tables.model import KeyRole
from widgets.tables.panel import TablePanel

_Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True, slots=True)
class StrategyRow:
    """A strategy as last reported, plus its fills counted here."""

    strategy_id: int
    name: str
    state: StrategyState
    parameters: tuple[tuple[str, object], ...]
    change: str
    ts_event: int


def parse_parameter(text: str, current: object) -> object:
    """Return ``text`` converted to the type of the parameter's ``current`` value.

    Raise ``ValueError`` naming the expected type. The engine checks bounds.
    """
    t = text.strip()
    if isinstance(current, bool):
        low = t.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise ValueError(f"{t!r} is not true or false")
    if isinstance(current, int):
        try:
            return int(t.replace(",", "").replace("_", ""))
        except ValueError:
            raise ValueError(f"{t!r} is not a whole number") from None
    if isinstance(current, float):
        try:
            return float(t.replace(",", "").replace("_", ""))
        except ValueError:
            raise ValueError(f"{t!r} is not a number") from None
    return t


def _fmt_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _state_tip(s: StrategyRow) -> str:
    if s.state is StrategyState.HALTED:
        return (
            f"Halted by the kill switch ({s.change}). It stays halted, across restarts too, "
            "until resumed: release the switch, then Resume."
        )
    return STRATEGY_STATE_TEXT[s.state]


class ParametersModel(QAbstractTableModel):
    """Name and value of each parameter of one strategy; values are editable.

    Signals
    -------
    edit_requested(str, object)
        The user typed a new value for a parameter (already converted to its type).
    edit_refused(str, str)
        The typed text could not be read: parameter name and why.
    """

    edit_requested = Signal(str, object)
    edit_refused = Signal(str, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._params: list[tuple[str, object]] = []

    def set_parameters(self, params: Sequence[tuple[str, object]]) -> None:
        """Show ``params`` (name, value)."""
        if [n for n, _ in params] == [n for n, _ in self._params]:
            self._params = list(params)
            if params:
                self.dataChanged.emit(self.index(0, 1), self.index(len(params) - 1, 1))
            return
        self.beginResetModel()
        self._params = list(params)
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of parameters."""
        return 0 if parent.isValid() else len(self._params)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return 2: name and value."""
        return 0 if parent.isValid() else 2

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Return a parameter's name or value."""
        name, value = self._params[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return name if index.column() == 0 else _fmt_value(value)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() == 1 and numeric:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 1:
            return f"{type(value).__name__}; double-click or F2 to edit"
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Return the column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return ("Parameter", "Value")[section]
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        """Make values editable."""
        f = super().flags(index)
        return f | Qt.ItemFlag.ItemIsEditable if index.column() == 1 else f

    def setData(self, index: _Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        """Ask for the new value; the table changes only when the engine reports it."""
        if role != Qt.ItemDataRole.EditRole or index.column() != 1:
            return False
        name, current = self._params[index.row()]
        try:
            parsed = parse_parameter(str(value), current)
        except ValueError as e:
            self.edit_refused.emit(name, str(e))
            return False
        if parsed != current:
            self.edit_requested.emit(name, parsed)
        return False


class StrategiesView(QWidget):
    """Strategies table, controls for the selected one, and its parameters.

    Parameters
    ----------
    ctx : MonitorContext
        Formats and names.
    order_counts : Callable[[int], OrderCounts]
        Orders of a strategy (from the blotter).
    strategy_pnl : Callable[[int], tuple[float, float]]
        Realized and unrealized P&L of a strategy (from the positions view).

    Signals
    -------
    command_requested(object)
        A ``ControlStrategy``, ``CancelAll``, ``Flatten`` or ``SetStrategyParameters`` to send.
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (
        StrategyStatusChanged,
        OrderFilled,
        OrderChanged,
        PositionChanged,
        KillSwitchChanged,
    )

    command_requested = Signal(object)

    def __init__(
        self,
        ctx: MonitorContext,
        order_counts: Callable[[int], OrderCounts],
        strategy_pnl: Callable[[int], tuple[float, float]],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._order_counts = order_counts
        self._pnl = strategy_pnl
        self.fills: dict[int, int] = {}
        self.kill_level = KillLevel.OFF
        self._pending: dict[int, Command] = {}
        self.model: KeyedTableModel[int, StrategyRow] = KeyedTableModel(
            self._columns(), lambda s: s.strategy_id, parent=self
        )
        self.table = DataTableView("strategiesTable")
        self.table.setModel(self.model)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)

        self.buttons: dict[str, QPushButton] = {}
        controls = QHBoxLayout()
        for key, label, tip in (
            ("start", "Start", "Start or resume the selected strategy"),
            ("pause", "Pause", "Pause: keep its state, cancel its quotes"),
            ("stop", "Stop", "Stop: cancel its orders and call on_stop"),
            ("cancel_all", "Cancel all", "Cancel every working order of the selected strategy"),
            ("flatten", "Flatten", "Cancel its orders and close its positions"),
        ):
            b = QPushButton(label)
            b.setObjectName(f"strategy_{key}")
            b.setToolTip(tip)
            b.clicked.connect(lambda _c=False, k=key: self.request(k))
            controls.addWidget(b)
            self.buttons[key] = b
        controls.addStretch(1)
        load = QPushButton("Load strategy…")
        load.setObjectName("strategy_load")
        load.setToolTip("Load a strategy class from a Python file into the engine")
        load.clicked.connect(self.open_load_dialog)
        load_row = QHBoxLayout()
        load_row.addWidget(load)
        load_row.addStretch(1)
        self.buttons["load"] = load
        self.load_dialog: LoadStrategyDialog | None = None

        self.params_model = ParametersModel(self)
        self.params_model.edit_requested.connect(self._on_edit_requested)
        self.params_model.edit_refused.connect(
            lambda name, why: self._say(f"{name} not sent: {why}", "bad")
        )
        self.params_table = DataTableView("parametersTable")
        self.params_table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.params_table.setModel(self.params_model)
        self.params_table.verticalHeader().hide()
        self.params_table.verticalHeader().setDefaultSectionSize(21)
        self.params_table.horizontalHeader().setSectionResizeMode(
            0, QHeaderView.ResizeMode.ResizeToContents
        )
        self.params_table.horizontalHeader().setStretchLastSection(True)
        self.params_table.setEditTriggers(
            QTableView.EditTrigger.DoubleClicked
            | QTableView.EditTrigger.EditKeyPressed
            | QTableView.EditTrigger.AnyKeyPressed
        )
        self.params_title = QLabel("Parameters")
        self.params_title.setObjectName("paramsTitle")
        self.message_label = QLabel()
        self.message_label.setObjectName("strategyMessage")
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.setSpacing(2)
        self.halt_banner = QLabel()
        self.halt_banner.setObjectName("haltBanner")
        self.halt_banner.setProperty("state", "bad")
        self.halt_banner.setWordWrap(True)
        self.halt_banner.hide()
        top_layout.addWidget(self.halt_banner)
        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No strategies",
                "Strategies loaded in the engine appear here with their state, P&L and parameters.",
            ),
        )
        top_layout.addWidget(self.panel, 1)
        top_layout.addLayout(controls)
        top_layout.addLayout(load_row)
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.setSpacing(2)
        bottom_layout.addWidget(self.params_title)
        bottom_layout.addWidget(self.params_table, 1)
        bottom_layout.addWidget(self.message_label)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("strategiesSplitter")
        splitter.addWidget(top)
        splitter.addWidget(bottom)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 4)
        layout.addWidget(splitter)
        ctx.formats_changed.connect(self.model.refresh)
        self._update_controls()

    def _columns(self) -> tuple[Column[StrategyRow], ...]:
        def pnl(s: StrategyRow, part: int) -> float:
            r, u = self._pnl(s.strategy_id)
            return (r, u, r + u)[part]

        return (
            Column("id", "ID", lambda s: str(s.strategy_id), numeric=True, width=72),
            Column("name", "Strategy", lambda s: s.name, width=95),
            Column("state", "State", lambda s: STRATEGY_STATE_TEXT[s.state],
                   tone=lambda s: STRATEGY_STATE_TONE[s.state], tooltip=_state_tip, width=65),
            Column("total", "Total P&L", lambda s: fmt_money(pnl(s, 2)), numeric=True,
                   tone=lambda s: money_tone(pnl(s, 2)), width=90),
            Column("orders", "Orders", lambda s: f"{self._order_counts(s.strategy_id).orders:,}",
                   numeric=True, width=66),
            Column("working", "Working",
                   lambda s: f"{self._order_counts(s.strategy_id).working:,}", numeric=True,
                   width=70),
            Column("fills", "Fills", lambda s: f"{self.fills.get(s.strategy_id, 0):,}",
                   numeric=True, width=66),
            Column("realized", "Realized", lambda s: fmt_money(pnl(s, 0)), numeric=True,
                   tone=lambda s: money_tone(pnl(s, 0)), width=90),
            Column("unrealized", "Unrealized", lambda s: fmt_money(pnl(s, 1)), numeric=True,
                   tone=lambda s: money_tone(pnl(s, 1)), width=90),
            Column("change", "Last change", lambda s: f"{s.change} {fmt_ts_utc(s.ts_event)}",
                   tooltip=lambda s: f"{s.change} {fmt_ts_utc(s.ts_event)}", width=150),
        )  # fmt: skip

    # ------------------------------------------------------------------ selection
    @property
    def selected_id(self) -> int | None:
        """Return the selected strategy's id."""
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        key = self.model.data(index, KeyRole)
        return int(key)

    def select(self, strategy_id: int) -> None:
        """Select a strategy (shows its parameters)."""
        row = self.model.row_of(strategy_id)
        if row >= 0:
            self.table.selectRow(row)

    def _on_current_changed(self) -> None:
        self._show_parameters()
        self._update_controls()

    def _show_parameters(self) -> None:
        sid = self.selected_id
        row = self.model.get(sid) if sid is not None else None
        self.params_model.set_parameters(row.parameters if row else ())
        self.params_title.setText(
            f"Parameters of {row.name} (double-click a value to change it)"
            if row
            else "Parameters (select a strategy)"
        )

    def _update_controls(self) -> None:
        sid = self.selected_id
        row = self.model.get(sid) if sid is not None else None
        state = row.state if row else None
        engaged = self.kill_level is not KillLevel.OFF
        start = self.buttons["start"]
        resumable = state in (StrategyState.PAUSED, StrategyState.HALTED)
        start.setText("Resume" if resumable else "Start")
        start.setEnabled(not engaged and state is not None and state is not StrategyState.RUNNING)
        start.setToolTip(
            f"The kill switch is at {self.kill_level.name}: release it first, then resume"
            if engaged
            else "Start or resume the selected strategy"
        )
        self.buttons["pause"].setEnabled(state is StrategyState.RUNNING)
        self.buttons["stop"].setEnabled(
            state in (StrategyState.RUNNING, StrategyState.PAUSED, StrategyState.HALTED)
        )
        self.buttons["cancel_all"].setEnabled(row is not None)
        self.buttons["flatten"].setEnabled(row is not None)

    # ------------------------------------------------------------------ commands
    def request(self, action: str) -> Command | None:
        """Send ``action`` (start, pause, stop, cancel_all, flatten) for the selected strategy."""
        sid = self.selected_id
        if sid is None:
            self._say("Select a strategy first", "bad")
            return None
        command: Command
        if action == "cancel_all":
            command = CancelAll(strategy_id=sid)
        elif action == "flatten":
            command = Flatten(strategy_id=sid)
        else:
            command = ControlStrategy(strategy_id=sid, action=action)
        self._send(
            command, f"{action.replace('_', ' ').capitalize()} {self.ctx.strategy_name(sid)}…"
        )
        return command

    def open_load_dialog(self) -> LoadStrategyDialog:
        """Show the "Load strategy…" dialog; accepting it sends ``AddStrategy``."""
        ids = [s.strategy_id for s in self.model.records()]
        dialog = LoadStrategyDialog(
            self.ctx.formats.symbols(), max(ids, default=0) + 1, parent=self
        )
        dialog.accepted.connect(lambda: self._load_accepted(dialog))
        self.load_dialog = dialog
        dialog.open()
        return dialog

    def _load_accepted(self, dialog: LoadStrategyDialog) -> None:
        if dialog.command is not None:
            self._send(dialog.command, f"Loading {dialog.command.class_path}…")

    def set_parameter(self, name: str, value: object) -> SetStrategyParameters | None:
        """Send a new value of one parameter of the selected strategy."""
        sid = self.selected_id
        if sid is None:
            return None
        command = SetStrategyParameters(strategy_id=sid, values=((name, value),))
        self._send(command, f"Setting {name} = {_fmt_value(value)}…")
        return command

    def _on_edit_requested(self, name: str, value: object) -> None:
        self.set_parameter(name, value)

    def _send(self, command: Command, text: str) -> None:
        self._pending[id(command)] = command
        self._say(text, "warn")
        self.command_requested.emit(command)

    def on_command_result(self, command: Command, result: CommandResult) -> None:
        """Show the engine's answer to a command this view sent."""
        if self._pending.pop(id(command), None) is not command:
            return
        if isinstance(result, CommandError):
            self._say(f"Refused: {result.reason}", "bad")
        else:
            self._say(f"Done: {result.detail}" if result.detail else "Done", "ok")

    @property
    def message(self) -> str:
        """Return the last outcome shown."""
        return self.message_label.text()

    def _say(self, text: str, state: str) -> None:
        self.message_label.setText(text)
        self.message_label.setProperty("state", state)
        self.message_label.style().unpolish(self.message_label)
        self.message_label.style().polish(self.message_label)

    # ------------------------------------------------------------------ events
    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Follow strategy changes, fills, order and position changes."""
        rows: list[StrategyRow] = []
        touched = False
        kill = None
        for r in batch:
            ev = r.event
            if isinstance(ev, KillSwitchChanged):
                kill = ev.level
            elif isinstance(ev, StrategyStatusChanged):
                rows.append(
                    StrategyRow(
                        ev.strategy_id, ev.name, ev.state, ev.parameters, ev.change, ev.ts_event
                    )
                )
            elif isinstance(ev, OrderFilled):
                self.fills[ev.strategy_id] = self.fills.get(ev.strategy_id, 0) + 1
                touched = True
            elif isinstance(ev, OrderChanged | PositionChanged):
                touched = True
        had_rows = len(self.model)
        if kill is not None:
            self.kill_level = kill
        if rows:
            self.model.apply(rows)
            if not had_rows:
                self.table.selectRow(0)
            self._show_parameters()
        elif touched:
            self.model.refresh()
        if rows or kill is not None:
            self._update_controls()
            self._show_halted()

    @property
    def halted(self) -> list[int]:
        """Return the ids of the strategies the kill switch halted (not resumed yet)."""
        return [s.strategy_id for s in self.model.records() if s.state is StrategyState.HALTED]

    def _show_halted(self) -> None:
        n = len(self.halted)
        if not n:
            self.halt_banner.hide()
            return
        what = "1 strategy" if n == 1 else f"{n} strategies"
        if self.kill_level is not KillLevel.OFF:
            level = self.kill_level.name.replace("_", " ")
            text = (
                f"Kill switch {level} engaged: {what} halted. Release the switch, then resume "
                "each strategy."
            )
        else:
            text = (
                f"{what.capitalize()} halted by the kill switch, now released: select one and "
                "press Resume to trade again."
            )
        self.halt_banner.setText(text)
        self.halt_banner.show()
