# SPDX-License-Identifier: MIT
"""Tick charts: one per instrument, stacked on one synchronized nanosecond time axis.

:class:`TickChart` draws an :class:`analyzer.dataset.InstrumentDay`: bid and ask as step lines
(or, zoomed out, their min/max envelopes from the pyramid: never more points than pixels),
trades as markers sized by quantity and coloured by aggressor side (a price envelope when too
many to see one by one), own orders as lines at their price from placement to fill or cancel
and executions as clickable stars. A crosshair shows the quote and last trade at the cursor.

:class:`ChartStack` links the x axes of its charts (instruments with different tick rates
share one time axis, gaps stay gaps), moves every crosshair together and owns the span
selection of the range statistics.
"""

import html
import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication, QGraphicsItem, QGraphicsView, QVBoxLayout, QWidget

from analyzer.dataset import InstrumentDay
from analyzer.overlay import OrderSegments, Overlay
from analyzer.views.jobs import Latest
from analyzer.views.markers import Polyline, TradeMarkers, ViewBounded
from analyzer.views.timeaxis import NS, NsTimeAxis, PriceAxis
from engine.types import BUY, SELL

#: Narrowest price axis (px), and the room around its labels (ticks, gaps) besides the text
#: and the rotated title; the axis widens, for every chart of a stack at once, when the
#: labels of the range shown need more (six-digit prices with decimals).
MIN_AXIS_WIDTH: Final[int] = 78
AXIS_ROOM: Final[int] = 14

#: Own fills are drawn one star each when the view holds at most this many.
MAX_FILLS: Final[int] = 2_000
#: Largest and smallest trade marker, pixels.
MARKER_MIN: Final[float] = 5.0
MARKER_MAX: Final[float] = 20.0
#: Width of the bid and ask lines while they have at most :data:`BOLD_MAX_POINTS` points
#: (a whole-day envelope on 1600 pixels has about 10,000: 13 ms a frame with this pen,
#: 2 ms with a 1-pixel one).
QUOTE_PEN_BOLD: Final[float] = 1.6
BOLD_MAX_POINTS: Final[int] = 2_000


@dataclass(frozen=True, slots=True)
class Palette:
    """Colours of one theme: bid, ask, trades by aggressor, own orders, crosshair."""

    bid: str
    ask: str
    buy: str
    sell: str
    envelope: str
    own_buy: str
    own_sell: str
    fill_edge: str
    cursor: str
    text: str
    background: str
    grid: int  # grid alpha 0..255


DARK: Final = Palette(
    bid="#3fb950",
    ask="#f85149",
    buy="#58a6ff",
    sell="#f0883e",
    envelope="#8b949e",
    own_buy="#a5d6ff",
    own_sell="#ffa7c4",
    fill_edge="#f2cc60",
    cursor="#c9d1d9",
    text="#e6edf3",
    background="#0d1117",
    grid=40,
)
LIGHT: Final = Palette(
    bid="#1a7f37",
    ask="#cf222e",
    buy="#0969da",
    sell="#bc4c00",
    envelope="#6e7781",
    own_buy="#0550ae",
    own_sell="#a0115e",
    fill_edge="#7d4e00",
    cursor="#24292f",
    text="#1f2328",
    background="#ffffff",
    grid=50,
)


_EMPTY: Final = np.empty(0)


class _Curve(ViewBounded, pg.PlotCurveItem):
    """A clickable curve (own orders), bounded by the view (see :class:`ViewBounded`)."""


class _Markers(ViewBounded, pg.ScatterPlotItem):
    """Clickable markers (own fills), bounded by the view (see :class:`ViewBounded`)."""


def _set_curve(item: _Curve | Polyline, x: npt.NDArray[Any], y: npt.NDArray[Any]) -> None:
    """Give ``item`` these points; hide it while it has none.

    A hidden item costs a frame nothing: the scene neither asks its bounds nor paints it.
    """
    if x.shape[0] == 0:
        if item.isVisible():
            item.setData(_EMPTY, _EMPTY)
            item.setVisible(False)
        return
    item.setData(x, y)
    if not item.isVisible():
        item.setVisible(True)


def _set_scatter(
    item: _Markers | TradeMarkers, x: npt.NDArray[Any], y: npt.NDArray[Any], **style: Any
) -> None:
    """Give ``item`` these markers; hide it while it has none (see :func:`_set_curve`)."""
    if x.shape[0] == 0:
        if item.isVisible():
            item.clear()
            item.setVisible(False)
        return
    item.setData(x, y, **style)
    if not item.isVisible():
        item.setVisible(True)


def palette_for(widget: QWidget) -> Palette:
    """Return the chart colours that suit the widget's (dark or light) palette."""
    window = widget.palette().color(QPalette.ColorRole.Window)
    return DARK if window.lightness() < 128 else LIGHT


def marker_sizes(qty: npt.NDArray[np.float64], typical: float) -> npt.NDArray[np.float64]:
    """Return marker diameters growing with the square root of the size (area ~ size).

    Whole pixels: pyqtgraph renders one sprite per distinct size, and rebuilds its sprite
    atlas when that outgrows the points (a stall in the frame that does it).
    """
    scale = max(typical, 1e-12)
    sizes: npt.NDArray[np.float64] = np.clip(
        MARKER_MIN * np.sqrt(qty / scale) + 2.0, MARKER_MIN, MARKER_MAX
    )
    return np.rint(sizes)


def tick_decimals(tick: float) -> int:
    """Return how many decimals show every multiple of ``tick`` exactly (0.25 -> 2)."""
    text = f"{tick:.10f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def _fmt(v: float, decimals: int) -> str:
    return "—" if math.isnan(v) else f"{v:,.{decimals}f}"


def _qty(v: float) -> str:
    return "" if math.isnan(v) else f"{v:,.8g}"


class TickChart(pg.PlotWidget):
    """One instrument's ticks over the stack's shared time axis.

    Signals
    -------
    cursor_moved(int)
        The mouse is over the chart at this time (ns since the epoch).
    execution_clicked(str, int)
        An execution marker was clicked: symbol and its row in the overlay's executions.
    order_clicked(str, int, int)
        An own-order line was clicked: symbol, order id and the time clicked (ns).
    """

    cursor_moved = Signal(object)
    execution_clicked = Signal(str, int)
    order_clicked = Signal(str, int, object)
    #: The price labels of the range shown need this many pixels of axis (more than it has).
    axis_too_narrow = Signal(int)

    def __init__(
        self, day: InstrumentDay, origin_ns: int, tz_name: str, parent: QWidget | None = None
    ) -> None:
        self.axis = NsTimeAxis(origin_ns, tz_name)
        self.decimals = tick_decimals(day.source.tick_size)
        self.price_axis = PriceAxis(day.source.tick_size, self.decimals)
        super().__init__(parent=parent, axisItems={"bottom": self.axis, "left": self.price_axis})
        self.setObjectName(f"tickChart_{day.symbol}")
        # The background is one colour: filling it costs less than copying pyqtgraph's
        # cached background pixmap of the whole viewport on every frame.
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        self.day = day
        self.origin_ns = origin_ns
        self.colors = palette_for(self)
        pi = self.getPlotItem()
        pi.setLabel("left", f"{day.label}  price")
        pi.showGrid(x=True, y=True, alpha=self.colors.grid / 255)
        pi.setMenuEnabled(False)
        pi.hideButtons()
        pi.getAxis("left").setWidth(MIN_AXIS_WIDTH)
        for name in ("top", "right"):
            # Hidden, but pyqtgraph still re-sets their labels (an HTML layout each) on every
            # range change while their SI prefix is automatic.
            pi.getAxis(name).enableAutoSIPrefix(False)
        for axis in (self.axis, self.price_axis):
            axis.enableAutoSIPrefix(False)  # (the labels were re-set every frame)
            # Below the view box (z -100): the opaque grid lines lie under the data, on the
            # plain background they are mixed with (pyqtgraph draws axes above it).
            axis.setZValue(-200)
        vb = pi.getViewBox()
        vb.setMouseEnabled(x=True, y=False)
        # The price range follows what is drawn, set by refresh() itself: pyqtgraph's
        # auto-range ran while painting and changed the range there, which painted every
        # frame twice.
        vb.disableAutoRange()
        # Lean lines for the quotes and the trade envelope (set and drawn every frame): a
        # PlotDataItem wrapped each in a second item and redid its bookkeeping on every
        # range change; a PlotCurveItem still does around every setData and paint.
        self.bid = Polyline(name="bid")
        self.ask = Polyline(name="ask")
        self.envelope = Polyline(name="trades (range)")
        self.buys = TradeMarkers("t1", int(MARKER_MAX), name="buy trades")
        self.sells = TradeMarkers("t", int(MARKER_MAX), name="sell trades")
        self.own = _Curve(connect="pairs")
        self.own_sell = _Curve(connect="pairs")
        self.fills = _Markers(symbol="star", size=16, pxMode=True)
        self.fills_sell = _Markers(symbol="star", size=16, pxMode=True)
        self._data_items: tuple[ViewBounded, ...] = (
            self.bid, self.ask, self.envelope, self.buys, self.sells, self.own,
            self.own_sell, self.fills, self.fills_sell,
        )  # fmt: skip
        for item in (self.bid, self.ask, self.envelope, self.buys, self.sells):
            pi.addItem(item)
        for item in (self.own, self.own_sell, self.fills, self.fills_sell):
            pi.addItem(item)
        # Quotes above trade markers, own orders and fills above everything.
        self.bid.setZValue(5)
        self.ask.setZValue(5)
        for z, top in enumerate((self.own, self.own_sell, self.fills, self.fills_sell), 10):
            top.setZValue(z)
        self.own.setClickable(True, width=8)
        self.own_sell.setClickable(True, width=8)
        self.own.sigClicked.connect(self._on_order_clicked)
        self.own_sell.sigClicked.connect(self._on_order_clicked)
        self.fills.sigClicked.connect(self._on_fill_clicked)
        self.fills_sell.sigClicked.connect(self._on_fill_clicked)
        self.cursor = pg.InfiniteLine(angle=90, movable=False)
        pi.addItem(self.cursor, ignoreBounds=True)
        # Hidden until placed (set_cursor): at x = 0 it drew nothing, yet its bounds were
        # worked out again after every range change.
        self.cursor.setVisible(False)
        #: Shaded spans where the stored depth stream has a gap (imported with --allow-gaps).
        self.gaps: list[pg.LinearRegionItem] = []
        self._mark_gaps()
        #: The crosshair read-out, drawn as the plot's title line (above the data, never
        #: over it or over the legend).
        self.readout = ""
        pi.setTitle(day.label, justify="left", size="9pt")
        # The title and the axis titles are HTML text items: kept as pixmaps in device
        # coordinates, laid out and drawn again only when their text changes, not on every
        # frame's repaint of the chart (~0.15 ms a chart).
        for text in (pi.titleLabel.item, self.axis.label, self.price_axis.label):
            text.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.note = pg.TextItem(anchor=(0, 1))
        self.note.setVisible(False)
        self._note_text = ""
        self.note.setParentItem(vb)
        #: Whether the title line ends with the colour key (the top chart of a stack).
        self.show_key = True
        self.region: pg.LinearRegionItem | None = None
        self.overlay: Overlay | None = None
        self._segments: OrderSegments | None = None
        self._fill_rows: npt.NDArray[np.void] | None = None
        self._typical_qty = 1.0
        self.markers_shown = 0
        self.fills_shown = 0
        self.exact = False
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(0)
        self._redraw.timeout.connect(self.refresh)
        self.fetching = False
        self._fetch = Latest(lambda span: day.prefetch(*span), self)
        self._fetch.result.connect(lambda _r: self._redraw.start())
        # Redrawn at once when the time span changes (a pan, a zoom, a linked chart's pan),
        # not on the next loop pass: a paint queued by the change could run first and draw
        # the old data over the new span, then paint again.
        vb.sigXRangeChanged.connect(lambda *_: self.refresh())
        vb.sigResized.connect(lambda *_: self._redraw.start())
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)
        #: Bid and ask pen width: bold while the lines have few points; 1 px beyond
        #: :data:`BOLD_MAX_POINTS`, where Qt strokes a wider pen about six times slower.
        self._quote_pen_width = QUOTE_PEN_BOLD
        self.apply_colors()
        if day.trades is not None and day.trades.n_rows:
            lv = day.trades.pyramid.levels[0]
            vol = float(np.nansum(lv.sums["qty"][: min(lv.n, 4096)]))
            rows = min(lv.n, 4096) * lv.rows
            self._typical_qty = max(vol / max(rows, 1), 1e-12)

    # ------------------------------------------------------------------ look
    def apply_colors(self) -> None:
        """Take the colours of the current (dark or light) palette."""
        c = self.colors = palette_for(self)
        self.setBackground(c.background)
        pi = self.getPlotItem()
        for name in ("left", "bottom"):
            ax = pi.getAxis(name)
            ax.setPen(pg.mkPen(c.envelope))
            ax.setTextPen(pg.mkPen(c.text))
        pi.showGrid(x=True, y=True, alpha=c.grid / 255)
        for axis in (self.axis, self.price_axis):
            axis.set_background(c.background)
        self._set_quote_pens(self._quote_pen_width)
        self.envelope.setPen(pg.mkPen(c.envelope, width=1))
        for item, color in ((self.buys, c.buy), (self.sells, c.sell)):
            fill = QColor(color)
            fill.setAlpha(150)
            item.setBrush(pg.mkBrush(fill))
            item.setPen(pg.mkPen(color, width=0.8))
        self.own.setPen(pg.mkPen(c.own_buy, width=2.5, style=Qt.PenStyle.DashLine))
        self.own_sell.setPen(pg.mkPen(c.own_sell, width=2.5, style=Qt.PenStyle.DashLine))
        # Own fills in the own orders' colours, never the market's (a sell fill was an orange
        # star among orange sell-aggressor triangles), with a thick edge of their own.
        for item, color in ((self.fills, c.own_buy), (self.fills_sell, c.own_sell)):
            item.setPen(pg.mkPen(c.fill_edge, width=2.0))
            item.setBrush(pg.mkBrush(color))
        self.note.setColor(QColor(c.text))
        self.cursor.setPen(pg.mkPen(c.cursor, width=1, style=Qt.PenStyle.DotLine))
        self._show_title()

    def _set_quote_pens(self, width: float) -> None:
        self._quote_pen_width = width
        self.bid.setPen(pg.mkPen(self.colors.bid, width=width))
        self.ask.setPen(pg.mkPen(self.colors.ask, width=width))

    def key_html(self) -> str:
        """Return the colour key: bid, ask, trades by aggressor, own orders and fills."""
        c = self.colors
        parts = [
            (c.bid, "━ bid"), (c.ask, "━ ask"), (c.buy, "▲ buy aggressor"),
            (c.sell, "▼ sell aggressor"),
        ]  # fmt: skip
        if self.overlay is not None:
            parts += [
                (c.own_buy, "╌ own buy"), (c.own_sell, "╌ own sell"), (c.own_buy, "★ own buy fill"),
                (c.own_sell, "★ own sell fill"),
            ]  # fmt: skip
        return "&nbsp;&nbsp;".join(f"<span style='color:{col}'>{t}</span>" for col, t in parts)

    def _show_title(self) -> None:
        text = html.escape(self.readout or self.day.label).replace("  ", "&nbsp;&nbsp;")
        if self.show_key or self.overlay is not None:
            text += "&nbsp;" * 8 + self.key_html()
        self.getPlotItem().titleLabel.setText(text, color=self.colors.text)

    def changeEvent(self, event: QEvent) -> None:
        """Follow theme changes."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "show_key"):
            self.apply_colors()

    # ------------------------------------------------------------------ data
    def to_x(self, ts: npt.NDArray[np.int64] | int) -> Any:
        """Return chart x (seconds since the origin) of ns timestamps."""
        if isinstance(ts, int):
            return (ts - self.origin_ns) / NS
        return (ts - self.origin_ns).astype(np.float64) / NS

    def view_ns(self) -> tuple[int, int]:
        """Return the visible time span, ns since the epoch."""
        (x0, x1), _ = self.getPlotItem().getViewBox().viewRange()
        return self.axis.to_ns(x0), self.axis.to_ns(x1)

    def refresh(self) -> None:
        """Draw what the visible span needs at the chart's pixel width.

        Never waits for the disk: when the span needs rows of a long day that are not read
        yet, the finest pyramid level is drawn now and the rows are read on a worker thread,
        which redraws when they are in (:attr:`fetching`).
        """
        t0, t1 = self.view_ns()
        width = max(int(self.getPlotItem().getViewBox().width()), 50)
        day = self.day
        read = True
        if day.needs_read(t0, t1, width):
            read = False
            self.fetching = True
            self._fetch.request((t0, t1))
        else:
            self.fetching = False
        x, bid, ask, exact = day.quote_lines(t0, t1, width, read=read)
        self.exact = exact
        xs = self.to_x(x)
        pen_width = QUOTE_PEN_BOLD if xs.shape[0] <= BOLD_MAX_POINTS else 1.0
        if pen_width != self._quote_pen_width:
            self._set_quote_pens(pen_width)
        _set_curve(self.bid, xs, bid)
        _set_curve(self.ask, xs, ask)
        prices = [bid, ask]
        marks = day.trade_marks(t0, t1, read=read)
        if marks is None:
            ex, ey = day.trade_envelope(t0, t1, width, read=read)
            _set_curve(self.envelope, self.to_x(ex), ey)
            _set_scatter(self.buys, _EMPTY, _EMPTY)
            _set_scatter(self.sells, _EMPTY, _EMPTY)
            self.markers_shown = 0
            prices.append(ey)
        else:
            _set_curve(self.envelope, _EMPTY, _EMPTY)
            side = marks.values["side"]
            px = marks.values["px"]
            qty = np.asarray(marks.values["qty"], dtype=np.float64)
            mx = self.to_x(marks.ts)
            for item, s in ((self.buys, BUY), (self.sells, SELL)):
                m = side == s
                _set_scatter(item, mx[m], px[m], size=marker_sizes(qty[m], self._typical_qty))
            self.markers_shown = marks.n
            prices.append(np.asarray(px, np.float64))
        prices.append(self._draw_orders(t0, t1))
        prices.append(self._draw_fills(t0, t1))
        self._fit_prices(prices)
        vb = self.getPlotItem().getViewBox()
        view = vb.viewRect()
        for shown in self._data_items:
            shown.set_view_rect(view)
        self._redraw.stop()  # (anything that asked for a redraw meanwhile is drawn)
        # pyqtgraph maps the new ranges to the scene when it paints; changing the scene
        # while painting painted every frame twice. Done here, before the paint.
        vb.updateMatrix()
        note_y = vb.height() - 4
        if note_y != self.note.pos().y():
            self.note.setPos(6, note_y)

    # ------------------------------------------------------------------ overlay
    def set_overlay(self, overlay: Overlay | None) -> None:
        """Show (or, with ``None``, hide) own orders and executions of the journal."""
        self.overlay = overlay
        if overlay is None:
            self._segments = None
            self._fill_rows = None
        else:
            self._segments = overlay.segments(self.day.symbol)
            self._fill_rows = overlay.executions(self.day.symbol)
        self.apply_colors()
        self.refresh()

    def _fit_prices(self, parts: list[npt.NDArray[np.float64]]) -> None:
        """Fit the price range to what is drawn: whole ticks, a margin, at least 4 ticks.

        The range holds while what is drawn stays inside it and fills at least half of it,
        so a pan does not make the price axis jump (nor redraw its labels) every frame.
        """
        lo, hi = math.inf, -math.inf
        for a in parts:
            if not a.shape[0]:
                continue
            # fmin/fmax skip NaN (breaks, missing sides) without copying the rest out
            a_lo, a_hi = float(np.fmin.reduce(a)), float(np.fmax.reduce(a))
            if not (math.isfinite(a_lo) and math.isfinite(a_hi)):  # all NaN, or infinite
                a = a[np.isfinite(a)]
                if not a.shape[0]:
                    continue
                a_lo, a_hi = float(a.min()), float(a.max())
            lo, hi = min(lo, a_lo), max(hi, a_hi)
        if lo > hi:  # nothing drawn: keep the range
            return
        vb = self.getPlotItem().getViewBox()
        (_, _), (c0, c1) = vb.viewRange()
        tick = self.day.source.tick_size
        inside = c0 < lo and hi < c1
        if inside and (hi - lo >= (c1 - c0) * 0.5 or c1 - c0 <= 4 * tick + tick * 1e-6):
            return
        pad = max((hi - lo) * 0.08, tick)
        y0 = math.floor((lo - pad) / tick) * tick
        y1 = math.ceil((hi + pad) / tick) * tick
        if y1 - y0 < 4 * tick:
            y0 -= tick
            y1 = y0 + 4 * tick
        vb.setYRange(y0, y1, padding=0)
        self._fit_price_axis(y0, y1)

    def price_axis_need(self, y0: float, y1: float) -> int:
        """Return the pixels the left axis needs for labels in ``[y0, y1]`` and its title."""
        fm = QFontMetrics(self.price_axis.style.get("tickFont") or QApplication.font())
        widest = max(fm.horizontalAdvance(f"{v:,.{self.decimals}f}") for v in (y0, y1))
        # the rotated title's line, the tick marks and the gaps pyqtgraph leaves around them
        return widest + fm.height() + AXIS_ROOM

    def _fit_price_axis(self, y0: float, y1: float) -> None:
        need = self.price_axis_need(y0, y1)
        if need > self.price_axis_width:
            self.axis_too_narrow.emit(need)

    @property
    def price_axis_width(self) -> int:
        """Return the price axis' width (px), its title included."""
        return int(self.price_axis.fixedWidth or MIN_AXIS_WIDTH)

    def _draw_orders(self, t0: int, t1: int) -> npt.NDArray[np.float64]:
        """Draw the own orders alive in ``[t0, t1]``; return their prices."""
        seg = self._segments
        if seg is None or seg.n == 0:
            _set_curve(self.own, _EMPTY, _EMPTY)
            _set_curve(self.own_sell, _EMPTY, _EMPTY)
            return np.empty(0)
        end = np.where(seg.t1 < 0, max(t1, int(seg.t0.max())), seg.t1)
        vis = (end >= t0) & (seg.t0 <= t1)
        tick = self.day.source.tick_size
        for item, s in ((self.own, BUY), (self.own_sell, SELL)):
            m = vis & (seg.side == s)
            x = np.empty(2 * int(m.sum()))
            y = np.empty_like(x)
            x[0::2] = self.to_x(seg.t0[m])
            x[1::2] = self.to_x(end[m])
            y[0::2] = seg.px[m] * tick
            y[1::2] = y[0::2]
            _set_curve(item, x, y)
        return np.asarray(seg.px[vis], np.float64) * tick

    def _draw_fills(self, t0: int, t1: int) -> npt.NDArray[np.float64]:
        """Draw the own fills in view, one star per pixel column, price and side; return prices.

        Fills that would land on the same star (a burst at one instant, thousands over a
        day) are drawn once, as the first of them; a click shows that one. Only when even
        that leaves more than :data:`MAX_FILLS` stars does a note ask to zoom in.
        """
        rows = self._fill_rows
        self._set_note("")
        self.fills_shown = 0
        if rows is None or rows.shape[0] == 0:
            _set_scatter(self.fills, _EMPTY, _EMPTY)
            _set_scatter(self.fills_sell, _EMPTY, _EMPTY)
            return np.empty(0)
        ts = rows["ts"].astype(np.int64)
        i0 = int(np.searchsorted(ts, t0, side="left"))
        i1 = int(np.searchsorted(ts, t1, side="right"))
        width = max(int(self.getPlotItem().getViewBox().width()), 1)
        column = ((ts[i0:i1] - t0) * (width / max(t1 - t0, 1))).astype(np.int64)
        px = rows["px"][i0:i1].astype(np.int64)
        span = int(px.max() - px.min()) + 1 if px.shape[0] else 1
        # One int64 per (column, price, side): column < width, so this cannot overflow
        # for any price span below about 1e14 ticks.
        key = (column * span + (px - (px.min() if px.shape[0] else 0))) * 2 + (
            rows["side"][i0:i1] == BUY
        )
        _, first = np.unique(key, return_index=True)
        idx = i0 + np.sort(first)
        if idx.shape[0] > MAX_FILLS:
            _set_scatter(self.fills, _EMPTY, _EMPTY)
            _set_scatter(self.fills_sell, _EMPTY, _EMPTY)
            self._set_note(f"{i1 - i0:,} own fills in view: zoom in to see them")
            return np.asarray(rows["px"][i0:i1], np.float64) * self.day.source.tick_size
        tick = self.day.source.tick_size
        for item, s in ((self.fills, BUY), (self.fills_sell, SELL)):
            m = idx[rows["side"][idx] == s]
            _set_scatter(item, self.to_x(ts[m]), rows["px"][m] * tick, data=m)
        self.fills_shown = i1 - i0
        return np.asarray(rows["px"][idx], np.float64) * tick

    def _set_note(self, text: str) -> None:
        # (setText lays the text out again even when it is the same)
        if text != self._note_text:
            self._note_text = text
            self.note.setText(text)
            self.note.setVisible(bool(text))  # (an empty one still mapped itself each paint)

    def _on_fill_clicked(self, _item: Any, points: Any, *_: Any) -> None:
        if len(points):
            self.execution_clicked.emit(self.day.symbol, int(points[0].data()))

    def _on_order_clicked(self, curve: Any, ev: Any) -> None:
        seg = self._segments
        if seg is None or seg.n == 0:
            return
        pos = self.getPlotItem().getViewBox().mapSceneToView(ev.scenePos())
        ts = self.axis.to_ns(pos.x())
        side = BUY if curve is self.own else SELL
        end = np.where(seg.t1 < 0, np.iinfo(np.int64).max, seg.t1)
        m = (seg.t0 <= ts) & (ts <= end) & (seg.side == side)
        if not m.any():
            return
        idx = np.flatnonzero(m)
        best = idx[np.argmin(np.abs(seg.px[idx] * self.day.source.tick_size - pos.y()))]
        self.order_clicked.emit(self.day.symbol, int(seg.order_id[best]), ts)

    def _mark_gaps(self) -> None:
        """Shade each recorded depth-stream gap of the day (``l2_gaps``), with its reason."""
        from engine.tickstore.importing import day_gaps

        source = self.day.source
        store = getattr(source, "store", None)
        if store is None:
            return
        t_end = self.day.span[1]
        for d in getattr(source, "days", [self.day.day]):
            try:
                gaps = day_gaps(store, self.day.symbol, d)
            except (KeyError, ValueError, OSError):
                continue
            for g in gaps:
                t0 = int(str(g["ts"]))
                t1 = int(str(g.get("until") or 0)) or t_end
                region = pg.LinearRegionItem(
                    values=(self.to_x(t0), self.to_x(max(t1, t0 + 1))),
                    movable=False,
                    brush=pg.mkBrush(220, 60, 60, 60),
                    pen=pg.mkPen(220, 60, 60, 160),
                )
                region.setZValue(1)
                region.setToolTip(f"depth gap after update {g['after']}: {g['reason']}")
                self.getPlotItem().addItem(region, ignoreBounds=True)
                self.gaps.append(region)

    def click_execution(self, row: int) -> None:
        """Act as if execution ``row`` was clicked (keyboard and tests)."""
        self.execution_clicked.emit(self.day.symbol, row)

    # ------------------------------------------------------------------ cursor
    def _on_mouse_moved(self, pos: QPointF) -> None:
        vb = self.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return
        self.cursor_moved.emit(self.axis.to_ns(vb.mapSceneToView(pos).x()))

    def set_cursor(self, ts: int) -> None:
        """Move the crosshair to ``ts`` and show the quote and last trade in force there."""
        self.cursor.setPos(self.to_x(ts))
        self.cursor.setVisible(True)
        self.readout = self.readout_text(ts)
        self._show_title()

    def readout_text(self, ts: int) -> str:
        """Return the crosshair text: symbol, bid, ask, spread and last trade at ``ts``."""
        q = self.day.quote_at(ts)
        d = self.decimals
        side = {BUY: "buy", SELL: "sell"}.get(q.last_side, "")
        spread = q.ask - q.bid
        parts = [
            self.day.label,
            f"bid {_fmt(q.bid, d)} × {_qty(q.bid_qty)}",
            f"ask {_fmt(q.ask, d)} × {_qty(q.ask_qty)}",
            f"spread {_fmt(spread, d)}",
            f"last {_fmt(q.last_px, d)} × {_qty(q.last_qty)} {side}".rstrip(),
        ]
        return "   ".join(parts)


class ChartStack(QWidget):
    """Charts of several instruments stacked on one linked time axis.

    Signals
    -------
    cursor_moved(int)
        The shared crosshair moved to this time (ns).
    span_changed(int, int)
        The selected span of the range statistics changed (ns).
    """

    cursor_moved = Signal(object)
    span_changed = Signal(object, object)

    def __init__(self, tz_name: str = "UTC", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chartStack")
        self.tz_name = tz_name
        self.origin_ns: int | None = None
        self.charts: list[TickChart] = []
        self.cursor_ns: int | None = None
        self.span: tuple[int, int] | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)

    def add(self, day: InstrumentDay, kind: type[TickChart] | None = None) -> TickChart:
        """Add a chart for ``day`` below the others, linked to their time axis.

        ``kind``: the chart class (a subclass of :class:`TickChart`, e.g. a live chart).
        """
        t0, t1 = day.span
        if self.origin_ns is None:
            self.origin_ns = t0 - t0 % (86_400 * NS)  # midnight UTC of the first day
        chart = (kind or TickChart)(day, self.origin_ns, self.tz_name, self)
        first = self.charts[0] if self.charts else None
        chart.show_key = first is None
        chart.apply_colors()
        self.charts.append(chart)
        self._layout.addWidget(chart, 1)
        chart.cursor_moved.connect(self.set_cursor)
        chart.axis_too_narrow.connect(self.widen_price_axes)
        width = max(c.price_axis_width for c in self.charts)
        self.widen_price_axes(width)  # one left edge for every chart of the stack
        if first is not None:
            chart.setXLink(first)
            chart.refresh()
        else:
            chart.getPlotItem().getViewBox().setXRange(chart.to_x(t0), chart.to_x(t1), padding=0.01)
        for c in self.charts[:-1]:
            c.getPlotItem().getAxis("bottom").setStyle(showValues=False)
            c.getPlotItem().getAxis("bottom").setLabel("")
        if self.span is not None:
            self._add_region(chart)
        if self.cursor_ns is not None:
            chart.set_cursor(self.cursor_ns)
        return chart

    def widen_price_axes(self, width: int) -> None:
        """Give every chart's price axis ``width`` pixels (at least), so their plots align."""
        for c in self.charts:
            if c.price_axis_width < width:
                c.price_axis.setWidth(width)

    def remove(self, chart: TickChart) -> None:
        """Take a chart out of the stack."""
        self.charts.remove(chart)
        chart.setParent(None)
        chart.deleteLater()
        for i, c in enumerate(self.charts):
            c.show_key = i == 0
            c.apply_colors()
        if self.charts:
            last = self.charts[-1].getPlotItem().getAxis("bottom")
            last.setStyle(showValues=True)
            last.setLabel(f"Time ({self.tz_name})")
            if self.charts[0].getPlotItem().getViewBox().linkedView(0) is not None:
                self.charts[0].setXLink(None)
            for c in self.charts[1:]:
                c.setXLink(self.charts[0])
        else:
            self.origin_ns = None

    def set_zone(self, tz_name: str) -> None:
        """Label every time axis in ``tz_name``."""
        self.tz_name = tz_name
        for c in self.charts:
            c.axis.set_zone(tz_name)
        if self.charts:
            for c in self.charts[:-1]:
                c.getPlotItem().getAxis("bottom").setLabel("")

    def set_overlay(self, overlay: Overlay | None) -> None:
        """Overlay one journal's orders and executions on every chart."""
        for c in self.charts:
            c.set_overlay(overlay)

    def set_cursor(self, ts: int) -> None:
        """Move every crosshair to ``ts``."""
        self.cursor_ns = int(ts)
        for c in self.charts:
            c.set_cursor(int(ts))
        self.cursor_moved.emit(int(ts))

    def view_ns(self) -> tuple[int, int]:
        """Return the visible span (ns); ``(0, 0)`` without charts."""
        return self.charts[0].view_ns() if self.charts else (0, 0)

    def set_view(self, t0: int, t1: int) -> None:
        """Show ``[t0, t1]`` on every chart."""
        if self.charts:
            c = self.charts[0]
            c.getPlotItem().getViewBox().setXRange(c.to_x(t0), c.to_x(t1), padding=0)

    # ------------------------------------------------------------------ span
    def set_span(self, span: tuple[int, int] | None) -> None:
        """Show the span selector over ``span`` on every chart, or hide it (``None``)."""
        for c in self.charts:
            if c.region is not None:
                c.removeItem(c.region)
                c.region = None
        self.span = span
        if span is not None:
            for c in self.charts:
                self._add_region(c)
            self.span_changed.emit(span[0], span[1])

    def _add_region(self, chart: TickChart) -> None:
        assert self.span is not None
        region = pg.LinearRegionItem(
            values=(chart.to_x(self.span[0]), chart.to_x(self.span[1])),
            brush=pg.mkBrush(QColor(128, 128, 160, 40)),
        )
        region.setZValue(-10)
        chart.addItem(region)
        chart.region = region
        region.sigRegionChangeFinished.connect(lambda r: self._on_region(chart, r))

    def _on_region(self, chart: TickChart, region: pg.LinearRegionItem) -> None:
        x0, x1 = region.getRegion()
        span = (chart.axis.to_ns(x0), chart.axis.to_ns(x1))
        if span == self.span:
            return
        self.span = span
        for c in self.charts:
            if c.region is not None and c is not chart:
                c.region.blockSignals(True)
                c.region.setRegion((c.to_x(span[0]), c.to_x(span[1])))
                c.region.blockSignals(False)
        self.span_changed.emit(span[0], span[1])
