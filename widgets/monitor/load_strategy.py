# SPDX-License-Identifier: MIT
"""The "Load strategy…" dialog: a strategy file (or module), its class, id, symbols, parameters.

The dialog never runs the file: it reads it as text (``ast``) to offer the classes it defines
and the parameters each declares (``Param(name=..., default=...)``), and builds an
``AddStrategy`` command. The engine loads the class (on its own host), checks the parameters
and answers; a file that fails to import comes back as one line naming the file, the line and
the exception.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.commands import AddStrategy

#: Largest strategy id (int64).
MAX_STRATEGY_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DeclaredClass:
    """A class a strategy file defines, with the parameters it declares (name, default text)."""

    name: str
    bases: tuple[str, ...]
    params: tuple[tuple[str, str], ...]


def _text(node: ast.expr) -> str:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _declared_params(cls: ast.ClassDef) -> tuple[tuple[str, str], ...]:
    for stmt in cls.body:
        target = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if not (isinstance(target, ast.Name) and target.id == "params"):
            continue
        out = []
        for call in ast.walk(value):
            if not isinstance(call, ast.Call):
                continue
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            name = kw.get("name")
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and "default" in kw:
                out.append((name.value, _text(kw["default"])))
        return tuple(out)
    return ()


def read_strategy_file(path: Path) -> list[DeclaredClass]:
    """Return the classes ``path`` defines at top level; ``ValueError`` (one line) if unreadable."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise ValueError(f"{path}, line {e.lineno}: SyntaxError: {e.msg}") from None
    return [
        DeclaredClass(node.name, tuple(ast.unparse(b) for b in node.bases), _declared_params(node))
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    ]


class LoadStrategyDialog(QDialog):
    """Ask for a strategy to add to the engine; :attr:`command` is the result once accepted.

    Parameters
    ----------
    symbols : list[str]
        Instruments the engine trades (offered as checkboxes; the first is checked).
    next_id : int
        Strategy id proposed.
    start_dir : str
        Folder the file browser opens in.
    """

    def __init__(
        self,
        symbols: list[str],
        next_id: int = 1,
        start_dir: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("loadStrategyDialog")
        self.setWindowTitle("Load strategy")
        self.command: AddStrategy | None = None
        self._start_dir = start_dir
        self._classes: dict[str, DeclaredClass] = {}

        self.file_edit = QLineEdit()
        self.file_edit.setObjectName("strategyFile")
        self.file_edit.setPlaceholderText("path/to/my_strats.py  or  package.module")
        self.file_edit.editingFinished.connect(self._read_file)
        browse = QPushButton("Browse…")
        browse.setObjectName("strategyBrowse")
        browse.clicked.connect(self.browse)
        file_row = QHBoxLayout()
        file_row.addWidget(self.file_edit, 1)
        file_row.addWidget(browse)

        self.class_combo = QComboBox()
        self.class_combo.setObjectName("strategyClass")
        self.class_combo.setEditable(True)
        self.class_combo.setMinimumContentsLength(18)
        self.class_combo.currentTextChanged.connect(self._show_params)

        self.id_edit = QLineEdit(str(next_id))
        self.id_edit.setObjectName("strategyId")

        self.symbols_list = QListWidget()
        self.symbols_list.setObjectName("strategySymbols")
        for i, sym in enumerate(symbols):
            item = QListWidgetItem(sym)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if i == 0 else Qt.CheckState.Unchecked)
            self.symbols_list.addItem(item)
        self.symbols_list.setMaximumHeight(22 * max(2, min(len(symbols), 5)) + 4)

        self.params_table = QTableWidget(0, 2)
        self.params_table.setObjectName("strategyParams")
        self.params_table.setHorizontalHeaderLabels(["Parameter", "Value"])
        self.params_table.verticalHeader().hide()
        self.params_table.verticalHeader().setDefaultSectionSize(21)
        header = self.params_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.params_table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.AnyKeyPressed
        )

        self.autostart = QCheckBox("Start it now")
        self.autostart.setObjectName("strategyAutostart")
        self.autostart.setChecked(True)

        self.error_label = QLabel()
        self.error_label.setObjectName("loadStrategyError")
        self.error_label.setProperty("state", "bad")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        form = QFormLayout()
        form.addRow("File or module", file_row)
        form.addRow("Class", self.class_combo)
        form.addRow("Strategy id", self.id_edit)
        form.addRow("Symbols", self.symbols_list)
        form.addRow("Parameters", self.params_table)
        form.addRow("", self.autostart)
        hint = QLabel(
            "The engine imports the file with its folder on the path; parameters left at "
            "their defaults can be changed later in the Strategies panel."
        )
        hint.setObjectName("loadStrategyHint")
        hint.setWordWrap(True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Load")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.resize(520, 460)

    # ------------------------------------------------------------------ file and class
    def browse(self) -> None:
        """Pick a strategy file with the file dialog."""
        path, _filter = QFileDialog.getOpenFileName(
            self, "Strategy file", self._start_dir, "Python files (*.py)"
        )
        if path:
            self.set_file(path)

    def set_file(self, path: str) -> None:
        """Use ``path`` (a ``.py`` file or a module name) and offer the classes it defines."""
        self.file_edit.setText(path)
        self._read_file()

    def _read_file(self) -> None:
        text = self.file_edit.text().strip()
        self._classes = {}
        self.error_label.clear()
        if not text.endswith(".py"):
            return  # a module name: the engine resolves it
        try:
            found = read_strategy_file(Path(text).expanduser())
        except ValueError as e:
            self.error_label.setText(str(e))
            return
        self._classes = {c.name: c for c in found}
        # Classes that look like strategies first (they subclass something named *Strategy).
        names = sorted(
            self._classes, key=lambda n: not any("Strategy" in b for b in self._classes[n].bases)
        )
        self.class_combo.clear()
        self.class_combo.addItems(names)
        if not names:
            self.error_label.setText(f"{text}: defines no class")

    def _show_params(self, cls_name: str) -> None:
        declared = self._classes.get(cls_name)
        params = declared.params if declared is not None else ()
        self.params_table.setRowCount(len(params))
        for row, (name, default) in enumerate(params):
            key = QTableWidgetItem(name)
            key.setFlags(key.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.params_table.setItem(row, 0, key)
            self.params_table.setItem(row, 1, QTableWidgetItem(default))

    def set_parameter(self, name: str, value: str) -> None:
        """Type ``value`` for parameter ``name`` (as the user would in the table)."""
        for row in range(self.params_table.rowCount()):
            key = self.params_table.item(row, 0)
            if key is not None and key.text() == name:
                self.params_table.setItem(row, 1, QTableWidgetItem(value))
                return
        raise KeyError(f"no parameter {name!r} offered")

    def set_symbols(self, symbols: list[str]) -> None:
        """Check exactly ``symbols``."""
        for i in range(self.symbols_list.count()):
            item = self.symbols_list.item(i)
            checked = item.text() in symbols
            item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)

    # ------------------------------------------------------------------ result
    def build_command(self) -> AddStrategy:
        """Return the command the fields describe; ``ValueError`` (one line) if incomplete."""
        holder = self.file_edit.text().strip()
        cls_name = self.class_combo.currentText().strip()
        if not holder:
            raise ValueError("choose a strategy file (Browse…) or type a module name")
        if not cls_name.isidentifier():
            raise ValueError(f"class {cls_name!r}: give the name of the strategy class")
        if holder.endswith(".py"):
            holder = str(Path(holder).expanduser().resolve())
        try:
            sid = int(self.id_edit.text().strip().replace(",", "").replace("_", ""))
        except ValueError:
            raise ValueError(f"strategy id {self.id_edit.text()!r} is not a whole number") from None
        if not 1 <= sid <= MAX_STRATEGY_ID:
            raise ValueError(f"strategy id {sid}: must be 1..{MAX_STRATEGY_ID}")
        symbols = tuple(
            self.symbols_list.item(i).text()
            for i in range(self.symbols_list.count())
            if self.symbols_list.item(i).checkState() == Qt.CheckState.Checked
        )
        if not symbols:
            raise ValueError("check at least one symbol")
        params: list[tuple[str, object]] = []
        for row in range(self.params_table.rowCount()):
            key, value = self.params_table.item(row, 0), self.params_table.item(row, 1)
            if key is not None and value is not None and value.text().strip():
                params.append((key.text(), value.text().strip()))
        return AddStrategy(
            class_path=f"{holder}:{cls_name}",
            strategy_id=sid,
            symbols=symbols,
            parameters=tuple(params),
            autostart=self.autostart.isChecked(),
        )

    def accept(self) -> None:
        """Keep the command and close, or say what is missing and stay open."""
        try:
            self.command = self.build_command()
        except ValueError as e:
            self.error_label.setText(str(e))
            return
        super().accept()
