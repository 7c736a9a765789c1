# SPDX-License-Identifier: MIT
"""A pan frame of linked charts: each chart redraws once and paints once, cheap items.

Three charts of one generated day on one time axis (real widgets, offscreen, a real HDF5
day), as the benchmark's stack; and the trade markers drawn as pyqtgraph's scatter plot
draws them, pixel for pixel.
"""

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from analyzer.dataset import InstrumentDay, open_day
from analyzer.source import StoreDay
from analyzer.synthetic import NS, SyntheticSpec
from analyzer.views.chart import MARKER_MAX, ChartStack, TickChart
from analyzer.views.markers import Polyline, TradeMarkers
from engine.tickstore.days import day_of
from engine.tickstore.store import TickStore
from tests.unit.analyzer.conftest import write_synthetic

pytestmark = pytest.mark.gui

T0 = 1_764_000_000 * NS  # a weekday, 16:00 UTC


class CountingChart(TickChart):
    """A chart that counts its redraws."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.redraws = 0
        super().__init__(*args, **kwargs)

    def refresh(self) -> None:
        self.redraws += 1
        super().refresh()


class PaintCounter(QObject):
    """Counts paint events of the widgets it filters."""

    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


@pytest.fixture
def day(tmp_path: Path) -> InstrumentDay:
    path = tmp_path / "ticks.h5"
    write_synthetic(
        path, "ESZ6", SyntheticSpec(quotes=100_000, start_ns=T0, span_ns=1800 * NS, px0=24_000)
    )
    st = TickStore(path)
    return open_day(StoreDay(st, "ESZ6", day_of(T0)))


def _image(widget: Any) -> np.ndarray:
    img = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    return np.frombuffer(bytes(img.constBits()), np.uint8).reshape(img.height(), -1)


def test_a_frame_of_three_linked_charts_redraws_and_paints_each_once(
    qtbot: Any, day: InstrumentDay
) -> None:
    stack = ChartStack()
    qtbot.addWidget(stack)
    stack.resize(1200, 800)
    stack.show()
    qtbot.waitExposed(stack)
    charts: list[Any] = [stack.add(day, CountingChart) for _ in range(3)]
    app = QApplication.instance()
    assert app is not None
    qtbot.wait(200)  # laid out and painted: the charts are at rest
    import sys

    from analyzer.views.jobs import GUI_SWITCH_INTERVAL_S

    assert sys.getswitchinterval() <= GUI_SWITCH_INTERVAL_S  # their row reader is running
    assert all(isinstance(c, CountingChart) for c in charts)
    counter = PaintCounter()
    for c in charts:
        c.viewport().installEventFilter(counter)
    first = charts[0]
    vb = first.getPlotItem().getViewBox()
    t0, t1 = day.span
    mid = first.to_x((t0 + t1) // 2)
    for k, span in enumerate((1800.0, 120.0, 20.0, 20.0)):  # zoomed in to single trades
        before = [c.redraws for c in charts]
        paints = counter.paints
        vb.setXRange(mid + k, mid + k + span, padding=0)
        app.processEvents()
        assert [c.redraws - b for c, b in zip(charts, before, strict=True)] == [1, 1, 1]
        assert counter.paints - paints == 3
        assert {c.view_ns() for c in charts} == {first.view_ns()}
    # Zoomed in: markers, one per trade in view, and no envelope; nothing of a journal.
    for c in charts:
        assert c.markers_shown > 0
        assert len(c.buys) + len(c.sells) == c.markers_shown
        assert not c.envelope.isVisible()
        for item in (c.own, c.own_sell, c.fills, c.fills_sell):
            assert not item.isVisible()
        # Bounded by the view (the view box clips them), not by a scan of their data.
        assert c.bid.boundingRect() == c.getPlotItem().getViewBox().viewRect()
    # One sprite atlas per look, shared by the charts of the stack.
    atlases = {c.buys._sprites(1.0)[0].cacheKey() for c in charts}
    assert len(atlases) == 1
    # No crosshair until the mouse (or a caller) places it, then on every chart.
    assert not any(c.cursor.isVisible() for c in charts)
    stack.set_cursor((t0 + t1) // 2)
    assert all(c.cursor.isVisible() for c in charts)
    assert {c.cursor.value() for c in charts} == {first.to_x((t0 + t1) // 2)}
    # The axes' bounds (kept per layout) follow a resize as pyqtgraph's own.
    stack.resize(1000, 900)
    qtbot.wait(50)
    for c in charts:
        for axis in (c.axis, c.price_axis):
            assert axis.boundingRect() == pg.AxisItem.boundingRect(axis)
    # Zoomed out again: the envelope, no markers.
    vb.setXRange(first.to_x(t0), first.to_x(t1), padding=0)
    app.processEvents()
    for c in charts:
        assert c.envelope.isVisible()
        assert not c.buys.isVisible()
        assert c.markers_shown == 0


def test_trade_markers_draw_what_pyqtgraphs_scatter_plot_draws(qtbot: Any) -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 100, 300)
    y = rng.uniform(0, 50, 300)
    sizes = rng.integers(5, int(MARKER_MAX) + 1, 300).astype(np.float64)
    pen = pg.mkPen("#58a6ff", width=0.8)
    brush = pg.mkBrush(88, 166, 255, 150)
    images = []
    for kind in ("pyqtgraph", "ours"):
        plot = pg.PlotWidget()
        qtbot.addWidget(plot)
        plot.resize(500, 400)
        plot.show()
        qtbot.waitExposed(plot)
        plot.getPlotItem().getViewBox().setRange(xRange=(0, 100), yRange=(0, 50), padding=0)
        if kind == "pyqtgraph":
            item: Any = pg.ScatterPlotItem(symbol="t1", pxMode=True, pen=pen, brush=brush)
            item.setData(x, y, size=sizes)
        else:
            item = TradeMarkers("t1", int(MARKER_MAX))
            item.setPen(pen)
            item.setBrush(brush)
            item.setData(x, y, size=sizes)
            item.set_view_rect(plot.getPlotItem().getViewBox().viewRect())
        plot.addItem(item)
        images.append(_image(plot))
    assert (images[0] != images[0][0, 0]).any()  # markers were drawn
    assert np.array_equal(images[0], images[1])


@pytest.mark.parametrize("width", [1.0, 1.6])  # a path; pyqtgraph's segments (wide pen)
def test_polylines_draw_what_pyqtgraphs_curve_draws(qtbot: Any, width: float) -> None:
    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(0, 100, 2_000))
    y = np.cumsum(rng.normal(0, 1, 2_000))
    y[[300, 302, 1200, 1201]] = np.nan  # breaks, and a lone point (301)
    pen = pg.mkPen("#1a7f37", width=width)
    images = []
    for kind in ("pyqtgraph", "ours"):
        plot = pg.PlotWidget()
        qtbot.addWidget(plot)
        plot.resize(500, 400)
        plot.show()
        qtbot.waitExposed(plot)
        vb = plot.getPlotItem().getViewBox()
        vb.setRange(xRange=(0, 100), yRange=(float(np.nanmin(y)), float(np.nanmax(y))))
        if kind == "pyqtgraph":
            item: Any = pg.PlotCurveItem(x, y, pen=pen, connect="finite")
        else:
            item = Polyline("bid")
            item.setPen(pen)
            item.setData(x, y)
            item.set_view_rect(vb.viewRect())
        plot.addItem(item)
        images.append(_image(plot))
    assert (images[0] != images[0][0, 0]).any()  # a line was drawn
    assert np.array_equal(images[0], images[1])
    with pytest.raises(ValueError, match="x and y differ in length: 2 and 1"):
        Polyline().setData([1.0, 2.0], [1.0])


def test_trade_markers_refuse_points_without_a_partner(qtbot: Any) -> None:
    m = TradeMarkers("t", 20)
    with pytest.raises(ValueError, match="x and y differ in length: 3 and 2"):
        m.setData(np.zeros(3), np.zeros(2), size=5)
    with pytest.raises(ValueError, match="2 sizes for 3 markers"):
        m.setData(np.zeros(3), np.zeros(3), size=[5, 6])
    m.setData(np.zeros(3), np.zeros(3), size=[1, 50, 7.4])
    assert m.size.tolist() == [1, 20, 7]  # whole pixels within [1, max_size]
    m.clear()
    assert len(m) == 0


def test_axis_levels_draw_each_line_once_as_pyqtgraph_levels_do(qtbot: Any) -> None:
    from analyzer.views.timeaxis import NsTimeAxis, PriceAxis

    # The time axis: a minor level leaves out the major times (drawn in the major colour).
    axis = NsTimeAxis(T0, "America/Chicago")
    for lo, hi, px in ((0.0, 86_400.0, 1500), (3600.0, 3620.0, 1500), (10.0, 10.05, 900)):
        (major, big), (minor, small) = axis.tickValues(lo, hi, px)
        assert minor < major
        assert big
        assert small
        assert not set(big) & set(small)
        # every major time is a multiple of the minor step: the minor level has the rest
        steps = round((hi - lo) / minor)
        assert len(big) + len(small) in (steps, steps + 1)
    # The price axis: the same values as pyqtgraph's own levels.
    price = PriceAxis(0.25, 2)
    rng = np.random.default_rng(5)
    for _ in range(300):
        c = float(rng.uniform(100, 1e5))
        w = float(rng.uniform(1, 500))
        size = float(rng.uniform(50, 900))
        assert price.tickValues(c, c + w, size) == pg.AxisItem.tickValues(price, c, c + w, size)


def test_analyzer_workers_hand_the_gil_back_quickly() -> None:
    import sys

    from analyzer.views.jobs import GUI_SWITCH_INTERVAL_S, share_the_gil_finely

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)  # Python's default
        share_the_gil_finely()
        assert sys.getswitchinterval() == pytest.approx(GUI_SWITCH_INTERVAL_S)
        sys.setswitchinterval(0.0001)  # finer already: left as it is
        share_the_gil_finely()
        assert sys.getswitchinterval() == pytest.approx(0.0001)
    finally:
        sys.setswitchinterval(before)


def test_axes_paint_the_pixels_pyqtgraphs_axis_paints(qtbot: Any) -> None:
    # Ours: lines grouped per pen, the price grid filled as one-pixel rows; pyqtgraph's:
    # a QPicture of one drawLine per line. The same pixels, at whole and fractional shifts.
    from PySide6.QtGui import QPainter

    from analyzer.views.timeaxis import NsTimeAxis, PriceAxis

    price, time_axis = PriceAxis(0.25, 2), NsTimeAxis(T0, "UTC")
    plot = pg.PlotWidget(axisItems={"left": price, "bottom": time_axis})
    qtbot.addWidget(plot)
    plot.resize(700, 400)
    plot.show()
    qtbot.waitExposed(plot)
    plot.getPlotItem().showGrid(x=True, y=True, alpha=0.6)
    plot.getPlotItem().getViewBox().setRange(xRange=(100.0, 160.0), yRange=(5_528.0, 5_531.5))
    QApplication.processEvents()
    for axis in (price, time_axis):
        axis.set_background("#0d1117")
        for dx, dy in ((0.0, 0.0), (0.3, 0.6), (5.5, 2.25)):
            images = []
            for paint in (type(axis).paint, pg.AxisItem.paint):
                img = QImage(800, 500, QImage.Format.Format_ARGB32_Premultiplied)
                img.fill(0)
                painter = QPainter(img)
                painter.translate(dx, dy)
                axis.picture = None  # specs made anew by each
                paint(axis, painter, None, None)
                painter.end()
                images.append(np.frombuffer(bytes(img.constBits()), np.uint32).copy())
            assert np.count_nonzero(images[0]) > 1_000  # grid lines and labels were drawn
            assert np.array_equal(images[0], images[1]), (type(axis).__name__, dx, dy)
    assert price._rects is not None  # the price grid went the filled way
