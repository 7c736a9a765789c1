# SPDX-License-Identifier: MIT
"""The reconcile check in the console: a status-bar badge and a dialog with the report.

Both take the report as plain data: any object with the attributes of
``engine.reconcile.ReconcileReport`` (described here by :class:`ReportLike`), so this module
needs nothing of the engine but its enums. Running the check (on a worker thread) is the
application's job; these widgets show "running", a report or an error, and ask for a new run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.enums import Side


class CountLike(Protocol):
    """One source's fills in one row."""

    @property
    def fills(self) -> int: ...  # noqa: D102
    @property
    def position_lots(self) -> int: ...  # noqa: D102


class RowLike(Protocol):
    """One (session, instrument, strategy) row."""

    @property
    def session(self) -> str: ...  # noqa: D102
    @property
    def symbol(self) -> str: ...  # noqa: D102
    @property
    def strategy_id(self) -> int | None: ...  # noqa: D102
    @property
    def journal(self) -> CountLike: ...  # noqa: D102
    @property
    def recovery(self) -> CountLike: ...  # noqa: D102
    @property
    def venue(self) -> CountLike | None: ...  # noqa: D102
    @property
    def differences(self) -> int: ...  # noqa: D102
    @property
    def difference(self) -> str: ...  # noqa: D102
    @property
    def agrees(self) -> bool: ...  # noqa: D102


class DifferenceLike(Protocol):
    """One fill that differs between the sources."""

    @property
    def session(self) -> str: ...  # noqa: D102
    @property
    def exec_id(self) -> str: ...  # noqa: D102
    @property
    def client_order_id(self) -> str: ...  # noqa: D102
    @property
    def symbol(self) -> str: ...  # noqa: D102
    @property
    def strategy(self) -> str: ...  # noqa: D102
    @property
    def side(self) -> Side: ...  # noqa: D102
    @property
    def qty(self) -> str: ...  # noqa: D102
    @property
    def px(self) -> str: ...  # noqa: D102
    @property
    def detail(self) -> str: ...  # noqa: D102


class ReportLike(Protocol):
    """What the widgets read of ``engine.reconcile.ReconcileReport``."""

    @property
    def state_dir(self) -> str: ...  # noqa: D102
    @property
    def day(self) -> str: ...  # noqa: D102
    @property
    def journals(self) -> Sequence[str]: ...  # noqa: D102
    @property
    def fix_files(self) -> Sequence[str]: ...  # noqa: D102
    @property
    def rows(self) -> Sequence[RowLike]: ...  # noqa: D102
    @property
    def differences(self) -> Sequence[DifferenceLike]: ...  # noqa: D102
    @property
    def notes(self) -> Sequence[str]: ...  # noqa: D102
    @property
    def ok(self) -> bool: ...  # noqa: D102
    @property
    def difference_count(self) -> int: ...  # noqa: D102
    def verdict(self) -> str: ...  # noqa: D102


#: Columns of the rows table.
ROW_COLUMNS = (
    "Session",
    "Symbol",
    "Strategy",
    "Journal\nfills / pos",
    "Recovery\nfills / pos",
    "Venue\nfills / pos",
    "Difference",
)
#: Columns of the differing fills table.
FILL_COLUMNS = (
    "Session",
    "ExecID",
    "ClOrdID",
    "Symbol",
    "Side",
    "Qty",
    "Px",
    "Strategy",
    "Difference",
)

_OK, _BAD = QColor("#3fb950"), QColor("#e5534b")
#: Rows a table shows before it scrolls.
MAX_VISIBLE_ROWS = 12


def _count(c: CountLike | None) -> str:
    return "—" if c is None else f"{c.fills} / {c.position_lots:+d}"


def badge_text(report: ReportLike) -> str:
    """Return the badge's text for a report: ``Reconciled ✓`` or ``Reconcile: 3 differences``."""
    if report.ok:
        return "Reconciled ✓"
    n = report.difference_count
    return f"Reconcile: {n} difference{'s' if n != 1 else ''}"


def _set_state(label: QLabel, state: str) -> None:
    if label.property("state") != state:
        label.setProperty("state", state)
        label.style().unpolish(label)
        label.style().polish(label)


class ReconcileBadge(QLabel):
    """Status-bar badge with the last reconcile verdict; a click asks for the dialog.

    Signals
    -------
    clicked()
        The user clicked the badge.
    """

    clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("statusReconcile")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.set_idle()

    def set_idle(self) -> None:
        """Show that no check ran yet."""
        self.setText("Reconcile: not run")
        self.setToolTip("Compare journal, recovery and the venue's reports (Engine ▸ Reconcile…)")
        _set_state(self, "muted")

    def set_running(self) -> None:
        """Show that a check is running."""
        self.setText("Reconciling…")
        _set_state(self, "muted")

    def set_report(self, report: ReportLike) -> None:
        """Show a finished check."""
        self.setText(badge_text(report))
        self.setToolTip(f"{report.verdict()}\nClick for the details.")
        _set_state(self, "ok" if report.ok else "bad")

    def set_error(self, text: str) -> None:
        """Show that the check could not run, and why (in the tooltip)."""
        self.setText("Reconcile: failed")
        self.setToolTip(text)
        _set_state(self, "warn")

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """Emit :attr:`clicked` on a left click."""
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mousePressEvent(event)


def _table(columns: Sequence[str]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.verticalHeader().setVisible(False)
    table.setWordWrap(False)
    table.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # the dialog opens with focus on its buttons
    table.horizontalHeader().setStretchLastSection(True)
    table.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft)
    return table


def _fill_table(table: QTableWidget, rows: Sequence[tuple[Sequence[str], bool]]) -> None:
    """Put ``(cells, ok)`` rows in ``table``; numbers right-aligned, the last cell coloured."""
    table.setRowCount(len(rows))
    right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
    for r, (cells, ok) in enumerate(rows):
        for c, text in enumerate(cells):
            item = QTableWidgetItem(text)
            if text[:1].isdigit() or text[:1] in "+-—":
                item.setTextAlignment(right)
            if c == len(cells) - 1:
                item.setForeground(_OK if ok else _BAD)
            table.setItem(r, c, item)
    table.resizeColumnsToContents()
    header = table.horizontalHeader()
    for c in range(table.columnCount() - 1):
        header.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
    table.selectionModel().clearCurrentIndex()
    # As tall as its rows (up to MAX_VISIBLE_ROWS; it scrolls beyond), so no empty band.
    shown = max(1, min(len(rows), MAX_VISIBLE_ROWS))
    height = header.height() + 2 * table.frameWidth()
    height += sum(table.rowHeight(r) for r in range(shown)) if rows else 24
    if table.horizontalScrollBar().isVisible():
        height += table.horizontalScrollBar().height()
    table.setFixedHeight(height)


class ReconcileDialog(QDialog):
    """The reconcile report: verdict, a row per (session, instrument, strategy), differing fills.

    Signals
    -------
    rerun_requested()
        The user asked to run the check again.
    """

    rerun_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reconcileDialog")
        self.setWindowTitle("Reconcile: journal, recovery and venue")
        self.verdict = QLabel()
        self.verdict.setObjectName("reconcileVerdict")
        self.verdict.setWordWrap(True)
        font = self.verdict.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.verdict.setFont(font)
        self.sources = QLabel()
        self.sources.setObjectName("reconcileSources")
        self.sources.setWordWrap(True)
        self.sources.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rows = _table(ROW_COLUMNS)
        self.rows.setObjectName("reconcileRows")
        self.fills_label = QLabel("Fills that differ")
        self.fills_label.setObjectName("reconcileFillsTitle")
        self.fills = _table(FILL_COLUMNS)
        self.fills.setObjectName("reconcileFills")
        self.notes = QLabel()
        self.notes.setObjectName("reconcileNotes")
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.rerun = QPushButton("Run again")
        self.rerun.setObjectName("reconcileRerun")
        buttons.addButton(self.rerun, QDialogButtonBox.ButtonRole.ActionRole)
        self.rerun.clicked.connect(self.rerun_requested)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.sources)
        layout.addWidget(self.rows)
        layout.addSpacing(6)
        layout.addWidget(self.fills_label)
        layout.addWidget(self.fills)
        layout.addWidget(self.notes)
        layout.addStretch(1)
        layout.addWidget(buttons)
        self.resize(1060, 420)
        self._show_fills(False)

    def _show_fills(self, visible: bool) -> None:
        self.fills_label.setVisible(visible)
        self.fills.setVisible(visible)

    def show_running(self, state_dir: str) -> None:
        """Say that the check runs over ``state_dir``."""
        self.verdict.setText(f"Reconciling {state_dir}…")
        _set_state(self.verdict, "muted")
        self.rerun.setEnabled(False)

    def show_error(self, text: str) -> None:
        """Say why the check could not run."""
        self.verdict.setText(f"The check could not run: {text}")
        _set_state(self.verdict, "warn")
        self.sources.clear()
        self.rows.setRowCount(0)
        self._show_fills(False)
        self.notes.clear()
        self.rerun.setEnabled(True)

    def show_report(self, report: ReportLike) -> None:
        """Show a finished check."""
        self.verdict.setText(report.verdict())
        _set_state(self.verdict, "ok" if report.ok else "bad")
        files = [*report.journals, *report.fix_files]
        self.sources.setText(
            f"{report.state_dir} — read {len(report.journals)} journal(s) and "
            f"{len(report.fix_files)} venue file(s)"
        )
        self.sources.setToolTip("\n".join(files))
        _fill_table(
            self.rows,
            [
                (
                    (
                        r.session,
                        r.symbol,
                        "?" if r.strategy_id is None else str(r.strategy_id),
                        _count(r.journal),
                        _count(r.recovery),
                        _count(r.venue),
                        r.difference
                        or (f"{r.differences} fills differ" if r.differences else "agree"),
                    ),
                    r.agrees,
                )
                for r in report.rows
            ],
        )
        _fill_table(
            self.fills,
            [
                (
                    (
                        d.session,
                        d.exec_id,
                        d.client_order_id,
                        d.symbol,
                        d.side.name.lower(),
                        d.qty,
                        d.px,
                        d.strategy,
                        d.detail,
                    ),
                    False,
                )
                for d in report.differences
            ],
        )
        self._show_fills(bool(report.differences))
        self.notes.setText("\n".join(f"• {n}" for n in report.notes))
        self.notes.setVisible(bool(report.notes))
        self.rerun.setEnabled(True)
