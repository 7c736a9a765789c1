# SPDX-License-Identifier: MIT
"""The Relays panel: the market-data relays the console watches, their sources and links.

One tree row per relay (its id, state, uptime, cache, rows/s in, worst lag), and under it a
row per source (kind, instruments, rows/s in, the last row's age) and per connected link
(user and role, instruments, rows/s out, lag in rows and ms, books conflated, stalled). The
numbers are right-aligned in a fixed-width font so columns of figures line up.

The panel draws plain data (:class:`RelayLine` and its parts): the app reads the relays'
status (``engine.relay.poller``, on a thread of its own) and hands it here in the GUI thread,
so the widget never touches a socket. With no relay configured it says where to add one; a
relay that cannot be reached or refuses the token is a red row that says why.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

#: The columns, figures next to the names (a narrow dock still shows them).
COLUMNS = (
    "Relay / source / link",
    "Rows/s",
    "Lag rows",
    "Lag ms",
    "Conflated",
    "Kind / user",
    "Instruments",
    "State",
)
#: Columns of figures (right-aligned).
NUMERIC = (1, 2, 3, 4)
#: Figures in the tables' fixed-width font; a little room either side of every cell.
_TREE_QSS = (
    'QTreeView { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }'
    " QTreeView::item { padding: 0px 5px; }"
)
_GAP = 18  # px added to each fitted column
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_NAME, _RATE, _LAG_ROWS, _LAG_MS, _CONFL, _KIND, _INSTR, _STATE = range(len(COLUMNS))
#: The cell builders below list a row's cells as name, kind / user, instruments, the four
#: figures, state; column ``c`` shows cell ``_CELL[c]``.
_CELL = (0, 3, 4, 5, 6, 1, 2, 7)

#: State colours (the dark theme's); on a light background the light theme's instead.
OK, WARN, BAD, MUTED = QColor("#3fb950"), QColor("#d29922"), QColor("#e5534b"), QColor("#8b949e")
_ON_LIGHT = {
    c.rgb(): QColor(x)
    for c, x in ((OK, "#1a7f37"), (WARN, "#9a6700"), (BAD, "#cf222e"), (MUTED, "#57606a"))
}

#: Relay states: the poller's words, and ``invalid`` for a setting that names no relay.
CONNECTING, UP, UNREACHABLE, REFUSED = "connecting", "up", "unreachable", "refused"
INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One source of a relay: rows in since the last reading, last row's age (ms, -1: none)."""

    name: str
    kind: str
    symbols: tuple[str, ...]
    rows_per_s: float
    last_row_age_ms: float
    state: str


@dataclass(frozen=True, slots=True)
class LinkLine:
    """One link connected to a relay (a subscriber, or a watcher with no instruments)."""

    peer: str
    user: str
    role: str
    client: str
    symbols: tuple[str, ...]
    rows_per_s: float
    lag_rows: int
    lag_ms: float
    conflations: int
    stalled: bool


@dataclass(frozen=True, slots=True)
class RelayLine:
    """One watched relay as the panel shows it.

    ``state`` is ``connecting``, ``up``, ``unreachable``, ``refused`` or ``invalid`` (a bad
    setting); ``error`` says why.
    The figures are meaningful while ``up``.
    """

    name: str
    endpoint: str
    state: str
    error: str = ""
    relay_id: str = ""
    uptime_s: float = 0.0
    instruments: int = 0
    rows_in_per_s: float = 0.0
    cached_rows: int = 0
    cached_bytes: int = 0
    conflations: int = 0
    sources: tuple[SourceLine, ...] = ()
    links: tuple[LinkLine, ...] = ()


def fmt_rate(v: float) -> str:
    """Return rows/s as a whole number with thousands separators."""
    return f"{round(v):,}"


def fmt_ms(v: float) -> str:
    """Return milliseconds: one decimal below 100, whole above, thousands separated."""
    if v < 0:
        return "—"
    return f"{v:,.1f}" if v < 100 else f"{round(v):,}"


def fmt_uptime(s: float) -> str:
    """Return an uptime as ``42 s``, ``12 m 05 s``, ``3 h 07 m`` or ``2 d 04 h``."""
    n = int(s)
    if n < 60:
        return f"{n} s"
    if n < 3600:
        return f"{n // 60} m {n % 60:02d} s"
    if n < 86400:
        return f"{n // 3600} h {n // 60 % 60:02d} m"
    return f"{n // 86400} d {n // 3600 % 24:02d} h"


def fmt_bytes(n: int) -> str:
    """Return a size in KiB / MiB / GiB."""
    if n < 1 << 20:
        return f"{n / 1024:,.0f} KiB"
    if n < 1 << 30:
        return f"{n / (1 << 20):,.1f} MiB"
    return f"{n / (1 << 30):,.2f} GiB"


def fmt_symbols(symbols: Sequence[str], most: int = 4) -> str:
    """Return the instruments, the first ``most`` by name and how many more."""
    if not symbols:
        return "—"
    if len(symbols) <= most:
        return ", ".join(symbols)
    return f"{', '.join(symbols[:most])} +{len(symbols) - most}"


def relay_cells(r: RelayLine) -> tuple[list[str], QColor]:
    """Return the cells of a relay's row (builders' order, see ``_CELL``) and its colour."""
    title = f"{r.name} ({r.endpoint})"
    if r.state == UP:
        worst = max(r.links, key=lambda x: x.lag_ms, default=None)
        stalled = sum(x.stalled for x in r.links)
        state = (
            f"up {fmt_uptime(r.uptime_s)} · cache {r.cached_rows:,} rows "
            f"({fmt_bytes(r.cached_bytes)})"
        )
        if stalled:
            state += f" · {stalled} stalled"
        cells = [title, f"relay {r.relay_id}", f"{r.instruments:,} instruments",
                 fmt_rate(r.rows_in_per_s), f"{worst.lag_rows:,}" if worst else "0",
                 fmt_ms(worst.lag_ms) if worst else "0.0", f"{r.conflations:,}",
                 state]  # fmt: skip
        return cells, (WARN if stalled else OK)
    if r.state == CONNECTING:
        return [title, "relay", "", "", "", "", "", "connecting…"], MUTED
    # A refusal's reason names what refused (login, role, certificate, version).
    word, retry = {
        UNREACHABLE: ("unreachable: ", "; retrying"),
        REFUSED: ("", "; asking again every 30 s"),
    }.get(r.state, ("not watched: ", ""))
    return [title, "relay", "", "", "", "", "", f"⚠ {word}{r.error}{retry}"], BAD


def source_cells(s: SourceLine) -> tuple[list[str], QColor]:
    """Return the cells of a source's row and the colour of its state."""
    age = "no row yet" if s.last_row_age_ms < 0 else f"last row {fmt_ms(s.last_row_age_ms)} ms ago"
    live = ("up", "replaying", "listening")
    colour = BAD if s.state.startswith("down") else OK if s.state in live else MUTED
    return [
        s.name,
        s.kind,
        fmt_symbols(s.symbols),
        fmt_rate(s.rows_per_s),
        "",
        "",
        "",
        f"{s.state} · {age}",
    ], colour


def link_cells(x: LinkLine) -> tuple[list[str], QColor]:
    """Return the cells of a link's row and the colour of its state."""
    who = f"{x.user} ({x.role})"
    name = f"{x.client} {x.peer}" if x.client else x.peer
    if not x.symbols:
        return [name, who, "—", "", "", "", "", "watching (no subscription)"], MUTED
    if x.stalled:
        state, colour = "stalled: not reading", BAD
    elif x.lag_rows:
        state, colour = "catching up", WARN
    else:
        state, colour = "keeping up", OK
    if x.conflations:
        state += f" · conflated {x.conflations:,}×"
    return [
        name,
        who,
        fmt_symbols(x.symbols),
        fmt_rate(x.rows_per_s),
        f"{x.lag_rows:,}",
        fmt_ms(x.lag_ms),
        f"{x.conflations:,}",
        state,
    ], colour


class RelaysPanel(QWidget):
    """The relays the console watches, as a tree (module docstring).

    Parameters
    ----------
    hint : str
        Where relays to watch are added (shown while none is configured).
    parent : QWidget | None
        Qt parent.
    """

    def __init__(self, hint: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("relaysPanel")
        self.empty = QLabel()
        self.empty.setObjectName("relaysEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.empty.setProperty("state", "muted")
        self.tree = QTreeWidget()
        self.tree.setObjectName("relaysTree")
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setRootIsDecorated(True)
        self.tree.setStyleSheet(_TREE_QSS)
        header = self.tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for c in NUMERIC:
            self.tree.headerItem().setTextAlignment(c, _RIGHT)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self.tree)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)
        self._items: dict[tuple[str, ...], QTreeWidgetItem] = {}
        self._shape: tuple[tuple[str, ...], ...] = ()
        self.set_hint(hint)
        #: The relays shown, by name.
        self.relays: dict[str, RelayLine] = {}

    def set_hint(self, hint: str) -> None:
        """Set where relays to watch are added (the empty state's text)."""
        where = hint or "the console's settings ([relays] watch)"
        self.empty.setText(f"No relay attached — add one in {where}.")

    @property
    def is_empty(self) -> bool:
        """Return whether the empty state is shown."""
        return self.stack.currentWidget() is self.empty

    def set_relays(self, relays: Sequence[RelayLine]) -> None:
        """Show ``relays`` (the whole set: relays not in it are removed)."""
        self.relays = {r.name: r for r in relays}
        self.stack.setCurrentWidget(self.tree if relays else self.empty)
        seen: set[tuple[str, ...]] = set()
        spanned: list[tuple[QTreeWidgetItem, str]] = []
        for r in relays:
            item = self._item((r.name,), None, seen)
            cells, colour = relay_cells(r)
            self._fill(item, cells, colour, bold=True)
            item.setToolTip(_STATE, r.error or cells[-1])
            # A relay that is not up is one line across the whole width, in its state's colour:
            # what is wrong shows even in a narrow dock.
            item.setFirstColumnSpanned(r.state != UP)
            item.setForeground(_NAME, self._brush(colour) if r.state != UP else QBrush())
            if r.state != UP:
                spanned.append((item, f"{cells[0]} — {cells[-1]}"))
                item.setToolTip(_NAME, r.error or cells[-1])
                continue
            item.setToolTip(_NAME, "")
            if r.sources:
                group = self._item((r.name, "sources"), item, seen)
                self._fill(group, [f"Sources ({len(r.sources)})", *[""] * 7], None)
                for s in r.sources:
                    cells, colour = source_cells(s)
                    child = self._item((r.name, "sources", s.name), group, seen)
                    self._fill(child, cells, colour)
                    child.setToolTip(_INSTR, ", ".join(s.symbols))
            group = self._item((r.name, "links"), item, seen)
            self._fill(group, [f"Links ({len(r.links)})", *[""] * 7], None)
            for x in r.links:
                cells, colour = link_cells(x)
                child = self._item((r.name, "links", x.peer), group, seen)
                self._fill(child, cells, colour)
                child.setToolTip(_INSTR, ", ".join(x.symbols))
        for key in sorted(set(self._items) - seen, key=len, reverse=True):
            item = self._items.pop(key)
            parent = item.parent()
            if parent is not None:
                parent.removeChild(item)
            else:
                self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(item))
        if self._shape != (shape := tuple(sorted(seen))):  # rows came or went: fit the columns
            self._shape = shape
            for c in range(len(COLUMNS) - 1):  # a gap between figures of adjacent columns
                self.tree.resizeColumnToContents(c)  # (a spanned row has its name alone here)
                self.tree.setColumnWidth(c, self.tree.columnWidth(c) + _GAP)
        for item, text in spanned:
            item.setText(_NAME, text)

    def _item(
        self, key: tuple[str, ...], parent: QTreeWidgetItem | None, seen: set[tuple[str, ...]]
    ) -> QTreeWidgetItem:
        seen.add(key)
        item = self._items.get(key)
        if item is None:
            item = QTreeWidgetItem(parent) if parent is not None else QTreeWidgetItem(self.tree)
            item.setExpanded(True)
            for c in NUMERIC:
                item.setTextAlignment(
                    c, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                )
            self._items[key] = item
        return item

    def tone(self, colour: QColor) -> QColor:
        """Return a state colour as drawn: the light theme's on a light background."""
        if self.tree.palette().base().color().lightness() > 128:
            return _ON_LIGHT.get(colour.rgb(), colour)
        return colour

    def _brush(self, colour: QColor) -> QBrush:
        return QBrush(self.tone(colour))

    def _fill(
        self, item: QTreeWidgetItem, cells: list[str], colour: QColor | None, *, bold: bool = False
    ) -> None:
        for c, i in enumerate(_CELL):
            text = cells[i]
            if item.text(c) != text:
                item.setText(c, text)
        if colour is not None:
            item.setForeground(_STATE, self._brush(colour))
        if bold:
            font = item.font(_NAME)
            font.setBold(True)
            item.setFont(_NAME, font)

    def row_texts(self, *key: str) -> list[str]:
        """Return the cells of the row at ``key`` (``name``, ``name, "links", peer``, …)."""
        item = self._items[tuple(key)]
        return [item.text(c) for c in range(len(COLUMNS))]
