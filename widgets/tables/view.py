# SPDX-License-Identifier: MIT
"""A table view for keyed models: theme tones, copy, CSV export from the context menu."""

import csv
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import (
    Property,
    QAbstractItemModel,
    QEvent,
    QItemSelectionModel,
    QPoint,
    Qt,
    Signal,
)
from PySide6.QtGui import QAction, QColor, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHeaderView,
    QMenu,
    QTableView,
    QWidget,
)

from widgets.tables.model import KeyedTableModel

#: Tone names a column may use; each maps to a colour key of the theme's [colors] table.
TONES = ("bid", "ask", "ok", "warn", "bad", "muted")

#: Colours used until the style sheet sets the theme's (the dark theme's values).
_DEFAULT_TONES = {
    "bid": "#3fb950",
    "ask": "#f85149",
    "ok": "#3fb950",
    "warn": "#d29922",
    "bad": "#f85149",
    "muted": "#8b949e",
}


def write_csv(model: QAbstractItemModel, path: str | Path) -> int:
    """Write every row of ``model`` (display text, header first) to ``path``; return the rows.

    Numbers are written without thousands separators so spreadsheets read them as numbers.
    """
    cols = model.columnCount()
    numeric = [False] * cols
    if isinstance(model, KeyedTableModel):
        numeric = [c.numeric for c in model.columns]
    rows = model.rowCount()
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow([model.headerData(c, Qt.Orientation.Horizontal) for c in range(cols)])
        for r in range(rows):
            texts = []
            for c in range(cols):
                text = model.data(model.index(r, c)) or ""
                texts.append(str(text).replace(",", "") if numeric[c] else str(text))
            out.writerow(texts)
    return rows


class DataTableView(QTableView):
    """A compact, row-selecting table with theme-coloured tones and CSV export.

    The theme's style sheet sets the tone colours through ``qproperty-bidColor`` etc.; they
    are handed to the model's ``tone_colors`` so a cell's tone name becomes a colour.

    Parameters
    ----------
    name : str
        Object name (stable, for tests and saved layouts) and the default CSV file stem.
    parent : QWidget | None
        Qt parent.

    Signals
    -------
    exported(str, int)
        A CSV file was written: path and number of rows.
    """

    exported = Signal(str, int)

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self._tones: dict[str, QColor] = {k: QColor(v) for k, v in _DEFAULT_TONES.items()}
        self.setAlternatingRowColors(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setWordWrap(False)
        self.setSortingEnabled(False)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        vh = self.verticalHeader()
        vh.hide()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(21)
        hh = self.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(True)
        hh.setHighlightSections(False)
        hh.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        hh.customContextMenuRequested.connect(self._on_header_menu)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._on_context_menu)
        self.copy_action = QAction("Copy rows", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.copy_action.triggered.connect(self.copy_selection)
        self.addAction(self.copy_action)
        self.export_action = QAction("Export to CSV…", self)
        self.export_action.triggered.connect(self.choose_csv_path)
        #: Extra actions shown on top of the context menu (cancel, replace...).
        self.menu_actions: list[QAction] = []
        #: The last menu shown (tests inspect it).
        self.last_menu: QMenu | None = None

    # ------------------------------------------------------------------ model
    def setModel(self, model: QAbstractItemModel | None) -> None:
        """Set the model and apply column widths and tone colours from its column specs."""
        old: QItemSelectionModel | None = self.selectionModel()
        super().setModel(model)
        if old is not None and old is not self.selectionModel():
            old.deleteLater()  # the view does not own it (Qt docs)
        if isinstance(model, KeyedTableModel):
            model.tone_colors.update(self._tones)
            model.set_font(self.font())
            for n, col in enumerate(model.columns):
                if col.width:
                    self.setColumnWidth(n, col.width)

    def changeEvent(self, event: QEvent) -> None:
        """Keep the model's bold font in step with the view's (set by the style sheet)."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            model = self.model()
            if isinstance(model, KeyedTableModel):
                model.set_font(self.font())

    # ------------------------------------------------------------------ tones (QSS)
    def _tone_property(name: str) -> Property:  # type: ignore[misc]
        def getter(self: "DataTableView") -> QColor:
            return self._tones[name]

        def setter(self: "DataTableView", color: QColor) -> None:
            self._tones[name] = QColor(color)
            model = self.model()
            if isinstance(model, KeyedTableModel):
                model.tone_colors[name] = QColor(color)
            self.viewport().update()

        return Property(QColor, getter, setter)

    bidColor = _tone_property("bid")
    askColor = _tone_property("ask")
    okColor = _tone_property("ok")
    warnColor = _tone_property("warn")
    badColor = _tone_property("bad")
    mutedColor = _tone_property("muted")

    def tone_color(self, name: str) -> QColor:
        """Return the colour a tone is drawn in."""
        return QColor(self._tones[name])

    # ------------------------------------------------------------------ actions
    def selected_rows(self) -> list[int]:
        """Return the selected display rows, top to bottom."""
        sel = self.selectionModel()
        return sorted({i.row() for i in sel.selectedRows()})

    def copy_selection(self) -> str:
        """Copy the selected rows as tab-separated text; return it."""
        model = self.model()
        lines = [
            "\t".join(str(model.data(model.index(r, c)) or "") for c in range(model.columnCount()))
            for r in self.selected_rows()
        ]
        text = "\n".join(lines)
        QGuiApplication.clipboard().setText(text)
        return text

    def export_csv(self, path: str | Path) -> int:
        """Write the whole table to ``path`` as CSV; return the number of rows."""
        model = self.model()
        rows = write_csv(model, path)
        self.exported.emit(str(path), rows)
        return rows

    def choose_csv_path(self) -> QFileDialog:
        """Ask for a file name (non-modal) and export there; return the dialog."""
        dialog = QFileDialog(self, "Export table to CSV", f"{self.objectName()}.csv")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilter("CSV files (*.csv)")
        dialog.setDefaultSuffix("csv")
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.fileSelected.connect(self.export_csv)
        dialog.open()
        return dialog

    def build_menu(self) -> QMenu:
        """Return the context menu: the view's own actions, copy and CSV export."""
        menu = QMenu(self)
        for action in self.menu_actions:
            menu.addAction(action)
        if self.menu_actions:
            menu.addSeparator()
        menu.addAction(self.copy_action)
        menu.addAction(self.export_action)
        menu.addSeparator()
        menu.addMenu(self.build_columns_menu())
        return menu

    def build_columns_menu(self) -> QMenu:
        """Return a menu that shows or hides each column."""
        menu = QMenu("Columns", self)
        model = self.model()
        for c in range(model.columnCount()):
            title = str(model.headerData(c, Qt.Orientation.Horizontal))
            action = menu.addAction(title)
            action.setCheckable(True)
            action.setChecked(not self.isColumnHidden(c))
            action.toggled.connect(lambda on, col=c: self.setColumnHidden(col, not on))
        return menu

    def _on_header_menu(self, pos: QPoint) -> None:
        menu = self.build_columns_menu()
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.last_menu = menu
        menu.popup(self.horizontalHeader().mapToGlobal(pos))

    def _on_context_menu(self, pos: QPoint) -> None:
        menu = self.build_menu()
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.last_menu = menu
        menu.popup(self.viewport().mapToGlobal(pos))


def connect_double_click(view: DataTableView, handler: Callable[[int], None]) -> None:
    """Call ``handler(display_row)`` when a row is double-clicked."""
    view.doubleClicked.connect(lambda index: handler(index.row()))
