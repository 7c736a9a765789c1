# SPDX-License-Identifier: MIT
"""A table with an optional tool row above it and an empty state until it has rows."""

from PySide6.QtCore import QAbstractItemModel
from PySide6.QtWidgets import QHBoxLayout, QStackedLayout, QVBoxLayout, QWidget

from widgets.empty_state import EmptyState
from widgets.tables.view import DataTableView


class TablePanel(QWidget):
    """Show ``empty`` while ``model`` has no rows, ``view`` once it has some.

    Parameters
    ----------
    view : DataTableView
        The table (its model must be set).
    empty : EmptyState
        What to show while there are no rows.
    tools : QHBoxLayout | None
        Controls shown above the table (filters, counts), always visible.
    model : QAbstractItemModel | None
        The model whose row count decides (default: the view's model; give the source model
        when the view shows a filtered proxy, so a filter that hides everything shows an empty
        table rather than the "nothing yet" text).
    """

    def __init__(
        self,
        view: DataTableView,
        empty: EmptyState,
        tools: QHBoxLayout | None = None,
        model: QAbstractItemModel | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.view = view
        self.empty = empty
        self._model = model if model is not None else view.model()
        self._stack = QStackedLayout()
        self._stack.addWidget(empty)
        self._stack.addWidget(view)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        if tools is not None:
            tools.setContentsMargins(6, 3, 6, 3)
            layout.addLayout(tools)
        layout.addLayout(self._stack)
        self._model.rowsInserted.connect(self.update_empty)
        self._model.rowsRemoved.connect(self.update_empty)
        self._model.modelReset.connect(self.update_empty)
        self._model.layoutChanged.connect(self.update_empty)

    def set_source_model(self, model: QAbstractItemModel) -> None:
        """Follow ``model``'s row count instead (when the view switches models)."""
        for sig in (model.rowsInserted, model.rowsRemoved, model.modelReset, model.layoutChanged):
            sig.connect(self.update_empty)
        self._model = model
        self.update_empty()

    @property
    def showing_empty(self) -> bool:
        """Return whether the empty state is shown."""
        return self._stack.currentWidget() is self.empty

    def update_empty(self) -> None:
        """Show the table when the model has rows, the empty state otherwise."""
        target = self.view if self._model.rowCount() else self.empty
        if self._stack.currentWidget() is not target:
            self._stack.setCurrentWidget(target)
