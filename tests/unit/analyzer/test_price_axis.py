# SPDX-License-Identifier: MIT
"""The charts' price axis fits its labels, and linked charts keep one left edge.

Two instruments on one time axis: ESZ6 near 6,000.00 (labels fit the narrowest axis) and a
Bitcoin-like one near 58,123.40 with a 0.01 tick (nine-character labels that did not: they
were clipped at the axis' left edge). Real widgets, offscreen, real HDF5 days.
"""

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from analyzer.dataset import open_day
from analyzer.source import StoreDay
from analyzer.synthetic import NS, SyntheticSpec
from analyzer.views.chart import ChartStack
from engine.tickstore.days import day_of
from engine.tickstore.store import TickStore
from tests.unit.analyzer.conftest import write_synthetic

pytestmark = pytest.mark.gui

T0 = 1_764_000_000 * NS  # a weekday, 16:00 UTC


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "ticks.h5"
    write_synthetic(
        path, "ESZ6", SyntheticSpec(quotes=4_000, start_ns=T0, span_ns=600 * NS, px0=24_000)
    )
    write_synthetic(
        path,
        "BTCUSDT",
        SyntheticSpec(quotes=4_000, start_ns=T0, span_ns=600 * NS, px0=5_812_340, seed=3),
        tick="0.01",
    )
    return path


@pytest.fixture
def stack(qtbot: Any) -> ChartStack:
    """An empty chart stack, shown."""
    stack = ChartStack()
    qtbot.addWidget(stack)
    stack.resize(1100, 700)
    stack.show()
    qtbot.waitExposed(stack)
    return stack


def _label_width(chart: Any, text: str) -> int:
    fm = QFontMetrics(chart.price_axis.style.get("tickFont") or QApplication.font())
    return fm.horizontalAdvance(text)


def test_linked_charts_share_an_axis_wide_enough_for_the_widest_prices(
    qtbot: Any, stack: ChartStack, store: Path, tmp_path: Path
) -> None:
    with TickStore(store) as st:
        day = day_of(T0)
        es = stack.add(open_day(StoreDay(st, "ESZ6", day)))
        QApplication.processEvents()
        narrow = es.price_axis_width
        btc = stack.add(open_day(StoreDay(st, "BTCUSDT", day)))
        qtbot.waitUntil(lambda: btc.price_axis_width > narrow, timeout=5_000)
    QApplication.processEvents()
    (_, _), (y0, y1) = btc.getPlotItem().getViewBox().viewRange()
    assert y1 > 50_000  # the labels shown are five digits and two decimals
    widest = max(_label_width(btc, f"{v:,.2f}") for v in (y0, y1))
    assert btc.price_axis_width >= widest + 12  # the text, the ticks and the title's line
    # one left edge: the plots of both charts start at the same x
    assert es.price_axis_width == btc.price_axis_width
    left = [c.getPlotItem().getViewBox().sceneBoundingRect().left() for c in (es, btc)]
    assert left[0] == pytest.approx(left[1], abs=1.0)
    stack.grab().save(str(tmp_path / "price-axis.png"))


def test_panning_lays_out_no_axis_label_again(stack: ChartStack, store: Path) -> None:
    # Every range change re-set the label (an HTML layout) of each axis whose SI prefix was
    # automatic, the two hidden ones included: 0.4 ms a frame for three linked charts.
    with TickStore(store) as st:
        day = day_of(T0)
        charts = [stack.add(open_day(StoreDay(st, s, day))) for s in ("ESZ6", "BTCUSDT")]
        QApplication.processEvents()
        axes = [
            c.getPlotItem().getAxis(n) for c in charts for n in ("top", "right", "left", "bottom")
        ]
        labels = [ax.label.toHtml() for ax in axes]
        calls = []
        for ax in axes:
            ax._updateLabel = lambda ax=ax: calls.append(ax)  # (pyqtgraph's re-set)
        vb = charts[0].getPlotItem().getViewBox()
        (x0, x1), _ = vb.viewRange()
        for k in range(5):
            vb.setXRange(x0 + k * (x1 - x0) / 20, x1 + k * (x1 - x0) / 20, padding=0)
            QApplication.processEvents()
    assert calls == []
    assert [ax.label.toHtml() for ax in axes] == labels
