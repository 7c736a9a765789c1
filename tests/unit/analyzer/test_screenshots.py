# SPDX-License-Identifier: MIT
"""Render the Analyzer with real CME and Binance data and a backtest overlaid, both themes.

The data in ``../shared/data`` is imported into temporary stores with the project's importers
(skipped when absent); a backtest of the project's market maker writes the journal overlaid.
The PNGs go to ``$QWC_SCREENSHOTS`` when set (``docs/screenshots`` for the docs), else to
the test's temporary folder; look at them after changing a view.
"""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QItemSelectionModel
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from analyzer.views.workspace import AnalyzerWorkspace
from app.theme import apply_theme, load_theme
from tests.unit.analyzer.conftest import SHARED_DATA

pytestmark = pytest.mark.gui

NS = 1_000_000_000
CME_MBO = SHARED_DATA / "cme_globex_esh4_mbo_2023-12-25" / "esh4-glbx-mdp3-20231225.mbo.dbn.zst"
CME_MBP1 = (
    SHARED_DATA / "cme_globex_esu4_mbp1_2024-07-01" / "esu4-glbx-mdp3-20240701T2358.mbp-1.dbn.zst"
)
SPOT = SHARED_DATA / "binance_spot_btcusdt_2024-08-08" / "btcusdt_20240808.gz"
USDM = SHARED_DATA / "binance_usdm_btcusdt_2024-08-08" / "btcusdt_20240808.gz"


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def themed_app(qapp: QApplication) -> Iterator[QApplication]:
    palette, sheet, style = QPalette(qapp.palette()), qapp.styleSheet(), qapp.style().name()
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Import the real recordings and backtest the market maker over two of them."""
    for f in (CME_MBO, CME_MBP1, SPOT, USDM):
        if not f.exists():
            pytest.skip(f"real data not available: {f}")
    from engine.backtest.runner import BacktestJob, run_job
    from engine.tickstore.binance import import_binance
    from engine.tickstore.dbn import import_dbn

    d = tmp_path_factory.mktemp("real")
    cme, spot, usdm = d / "cme.h5", d / "spot.h5", d / "usdm.h5"
    import_dbn([CME_MBO], cme, tick_size="0.25", venue="XCME")
    import_dbn([CME_MBP1], cme, tick_size="0.25", venue="XCME")
    import_binance([SPOT], spot, "BTCUSDT", tick_size="0.01", lot_size="0.00000001")
    import_binance([USDM], usdm, "BTCUSDT", tick_size="0.1", lot_size="0.001", futures=True)
    run_job(
        BacktestJob(
            events=str(cme),
            journal=str(d / "esh4.qwj"),
            level="l3",
            symbol="ESH4",
            day="20231225",
            tick_size="0.25",
            recorded_latency=True,
            params=(("half_spread_ticks", 1),),  # fills after the 23:00 open (issue 17)
        )
    )
    run_job(
        BacktestJob(
            events=str(usdm),
            journal=str(d / "usdm.qwj"),
            symbol="BTCUSDT",
            day="20240808",
            tick_size="0.1",
            params=(("half_spread_ticks", 4),),
        )
    )
    return {"cme": cme, "spot": spot, "usdm": usdm, "esh4": d / "esh4.qwj", "btc": d / "usdm.qwj"}


def _workspace(qtbot: Any, theme: str, app: QApplication) -> AnalyzerWorkspace:
    apply_theme(app, load_theme(theme))
    ws = AnalyzerWorkspace()
    qtbot.addWidget(ws)
    ws.resize(1600, 950)
    ws.show()
    qtbot.waitExposed(ws)
    return ws


def _open(qtbot: Any, ws: AnalyzerWorkspace, symbol: str, days: list[str], store: Path) -> None:
    with qtbot.waitSignal(ws.day_opened, timeout=60_000):
        assert ws.open_day(symbol, days, str(store)) is not None


def _settle(qtbot: Any, ws: AnalyzerWorkspace) -> None:
    qtbot.waitUntil(lambda: not any(c.fetching for c in ws.stack.charts), timeout=5_000)
    qtbot.wait(200)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_cme_mbo_with_a_backtest(
    qtbot: Any, themed_app: QApplication, real: dict[str, Path], out_dir: Path, theme: str
) -> None:
    ws = _workspace(qtbot, theme, themed_app)
    assert ws.open_store(real["cme"])
    _open(qtbot, ws, "ESH4", ["20231225"], real["cme"])
    with qtbot.waitSignal(ws.overlay_loaded, timeout=30_000):
        ws.load_journal(real["esh4"])
    chart = ws.chart("ESH4")
    fills = chart._fill_rows
    assert fills is not None
    assert fills.shape[0] > 0
    # The open (17:00 Chicago time) and the minute after; the opening fill clicked.
    last = int(fills["ts"][-1])
    ws.zone_box.setCurrentText("America/Chicago")
    ws.stack.set_view(last - 2 * NS, last + 60 * NS)
    _settle(qtbot, ws)
    ws.show_execution("ESH4", fills.shape[0] - 1)
    ws.span_action.setChecked(True)
    ws.stack.set_span((last + 5 * NS, last + 50 * NS))
    qtbot.waitUntil(lambda: ws.last_depth is not None and ws.last_depth.ts == last, timeout=5_000)
    assert ws.last_depth is not None
    assert ws.last_depth.source == "mbo"
    assert ws.history.rowCount() > 0
    _settle(qtbot, ws)
    ws.grab().save(str(out_dir / f"analyzer-cme-{theme}.png"))


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_cme_mbp1_across_midnight(
    qtbot: Any, themed_app: QApplication, real: dict[str, Path], out_dir: Path, theme: str
) -> None:
    ws = _workspace(qtbot, theme, themed_app)
    assert ws.open_store(real["cme"])
    # Both ESU4 days selected in the browser and charted as one series.
    sel = ws.browser.selectionModel()
    for r, e in enumerate(ws.browser.entries):
        if e.symbol == "ESU4":
            sel.select(
                ws.browser.model().index(r, 0),
                QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows,
            )
    with qtbot.waitSignal(ws.day_opened, timeout=60_000) as opened:
        assert len(ws.chart_selected()) == 1
    assert opened.args == ["ESU4", "20240701-20240702"]
    chart = ws.chart("ESU4")
    t0, t1 = chart.day.span
    assert t0 < 1_719_878_400 * NS < t1  # one series across midnight UTC
    ws.fit()
    ws.stack.set_cursor(1_719_878_400 * NS + 17 * NS)
    ws.span_action.setChecked(True)
    _settle(qtbot, ws)
    assert chart.markers_shown > 0
    ws.grab().save(str(out_dir / f"analyzer-esu4-{theme}.png"))


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_binance_spot_and_perpetual_with_a_backtest(
    qtbot: Any, themed_app: QApplication, real: dict[str, Path], out_dir: Path, theme: str
) -> None:
    ws = _workspace(qtbot, theme, themed_app)
    assert ws.open_store(real["spot"])
    assert ws.open_store(real["usdm"])
    _open(qtbot, ws, "BTCUSDT", ["20240808"], real["spot"])
    _open(qtbot, ws, "BTCUSDT", ["20240808"], real["usdm"])
    with qtbot.waitSignal(ws.overlay_loaded, timeout=30_000):
        ws.load_journal(real["btc"])
    perp = ws.chart("BTCUSDT (usdm)")
    fills = perp._fill_rows
    assert fills is not None
    assert fills.shape[0] > 0
    t0, _ = perp.day.span
    mid = t0 + 150 * NS
    ws.stack.set_view(mid - 4 * NS, mid + 4 * NS)
    _settle(qtbot, ws)
    row = int(np.searchsorted(fills["ts"], mid))
    ws.show_execution("BTCUSDT", row)
    ws.span_action.setChecked(True)
    ws.stack.set_span((mid - 3 * NS, mid + 1 * NS))
    ts = int(fills["ts"][row])
    qtbot.waitUntil(lambda: ws.last_depth is not None and ws.last_depth.ts == ts, timeout=5_000)
    _settle(qtbot, ws)
    ws.grab().save(str(out_dir / f"analyzer-binance-{theme}.png"))
