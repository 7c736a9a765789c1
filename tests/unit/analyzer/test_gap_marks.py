# SPDX-License-Identifier: MIT
"""The Analyzer shades a depth-stream gap the importer recorded (``--allow-gaps``), offscreen.

The real USD-M recording (``../shared/data``, skipped when absent) is cut to its first 20,000
lines and one depth diff is removed from it: a real gap, imported with ``allow_gaps``.
"""

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from analyzer.views.workspace import AnalyzerWorkspace
from engine.tickstore.binance import import_binance
from tests.unit.analyzer.conftest import SHARED_DATA

pytestmark = pytest.mark.gui


def test_a_recorded_depth_gap_is_shaded_on_the_chart(qtbot: Any, tmp_path: Path) -> None:
    src = SHARED_DATA / "binance_usdm_btcusdt_2024-08-08" / "btcusdt_20240808.gz"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    with gzip.open(src, "rb") as fh:
        lines = [fh.readline() for _ in range(20_000)]
    depth = [i for i, ln in enumerate(lines) if b"@depth" in ln[:200]]
    cut = depth[len(depth) // 2]  # a diff in the middle goes missing
    lost = json.loads(lines[cut].partition(b" ")[2])["data"]
    rec = tmp_path / "gap.gz"
    with gzip.open(rec, "wb") as fh:
        fh.writelines(lines[:cut] + lines[cut + 1 :])
    store = tmp_path / "b.h5"
    _result, stats = import_binance(
        [rec], store, "BTCUSDT", tick_size="0.1", lot_size="0.001", futures=True, allow_gaps=True
    )
    assert stats.gaps == 1
    gap = stats.gap_list[0]
    assert gap.prev == lost["u"]  # the next diff's pu names the missing one
    ws = AnalyzerWorkspace()
    qtbot.addWidget(ws)
    ws.resize(1400, 700)
    ws.show()
    qtbot.waitExposed(ws)
    assert ws.open_store(store)
    with qtbot.waitSignal(ws.day_opened, timeout=30_000):
        ws.open_day("BTCUSDT", "20240808", str(store))
    (chart,) = ws.stack.charts
    assert len(chart.gaps) == 1
    x0, x1 = chart.gaps[0].getRegion()
    assert x0 == pytest.approx(chart.to_x(gap.ts))
    assert x1 == pytest.approx(chart.to_x(chart.day.span[1]))  # never resynced in the cut
    assert "depth gap after update" in chart.gaps[0].toolTip()
    ws.stack.set_view(gap.ts - 20 * 10**9, gap.ts + 20 * 10**9)
    qtbot.wait(200)
    out = Path(os.environ.get("QWC_SCREENSHOTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    ws.grab().save(str(out / "analyzer-depth-gap.png"))
