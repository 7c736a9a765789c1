# SPDX-License-Identifier: MIT
"""Trade Analyzer benchmark: open a 100M-tick day, pan and zoom, memory.

Run ``python -m tests.benchmarks.bench_analyzer`` (``--ticks 10000000`` for a shorter run) or
``pytest -m bench tests/benchmarks/bench_analyzer.py`` (10M ticks). A synthetic day (quotes
and about one trade per eight quotes, ``analyzer.synthetic``) is written to a tick store in a
temporary folder; then, each in a fresh interpreter (so that memory is the day's alone):

* **first open**: the day is written as ``qwconsole import`` writes it, with the min/max
  pyramids built from the batches as they are written (``analyzer.summary``); the first open
  (``open_day``, as the workspace runs it on its worker thread) loads them; reference: the
  first open of the same day written without them (it reads every row and builds them);
* **warm open to the first drawn frame**: store opened, pyramids loaded (memory-mapped), a
  chart built and painted: the figure the target is about;
* **pan / zoom**: 80 frames from the whole day down to single ticks, each as the event loop
  makes it (new range, redraw from the pyramid or the rows, the loop's repaint; the paints
  are counted: one per chart and frame), median / p95 / max; then the same with three
  linked charts of the day (several instruments on one time axis); the GUI thread's CPU
  time per frame is printed and noted beside them (on a loaded machine the wall time also
  holds the waits for a core);
* **memory**: resident memory added by the opened day against the size of the columns the
  chart shows (ts, bid, ask, bid size, ask size per quote; ts, price, size, side per trade);
* **baseline, same run**: pyqtgraph alone with 10M points (``setData`` with peak
  downsampling and clipping, first frame, one pan frame), the reference of the issue.

Each run is judged against the targets (``TARGET_*``: first open ≤ 3 s and ≤ 500 MB added,
open again ≤ 1 s, pan/zoom p95 ≤ 12 ms for one chart and ≤ 16 ms for three linked, memory ≤ 2x
the shown columns); ``main`` exits 1 on a miss in any run, ``--doc`` writes the table into
``docs/performance.md``. 2 noisy cores: compare ratios, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.benchmarks import judge

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

NS = 1_000_000_000
DAY0 = 1_699_920_000 * NS  # 2023-11-14 00:00 UTC
SYMBOL = "ES"
DAY = "20231114"
TICKS_PER_QUOTE = 1.0 + 1.0 / 8  # quotes plus about one trade per eight quotes

#: Targets (issue 25, point 5; the open-again and memory ones from the Analyzer's issue).
TARGET_FIRST_OPEN_S = 3.0
TARGET_FIRST_OPEN_MB = 500.0
TARGET_OPEN_S = 1.0
TARGET_FRAME_MS = 12.0
TARGET_STACK_MS = 16.0
TARGET_MEMORY = 2.0


def rss_bytes() -> int:
    """Return the resident set size of this process."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def generate(path: Path, ticks: int) -> tuple[int, float]:
    """Write a synthetic day of about ``ticks`` rows; return (rows, seconds).

    Written as ``qwconsole import`` writes a day: with the Analyzer's pyramids built from the
    batches as they are written (``analyzer.summary``), so the seconds include them.
    """
    from analyzer.summary import install
    from analyzer.synthetic import SyntheticSpec, synthetic_day
    from engine.tickstore.store import TickStore

    install()
    quotes = int(ticks / TICKS_PER_QUOTE)
    spec = SyntheticSpec(quotes=quotes, start_ns=DAY0 + 3600 * NS, span_ns=22 * 3600 * NS)
    t = time.perf_counter()
    rows = 0
    with TickStore(path, "a") as st, st.writer(SYMBOL, DAY, tick_size="0.25", lot_size="1") as w:
        for bbo, trades in synthetic_day(spec, chunk=1 << 22):
            w.append("bbo", bbo)
            w.append("trades", trades)
            rows += bbo.shape[0] + trades.shape[0]
    return rows, time.perf_counter() - t


def _app() -> Any:
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() or QApplication(sys.argv[:1])


def child_cold(path: Path) -> dict[str, Any]:
    """Open the day for the first time: read it and build the pyramids."""
    from analyzer.dataset import open_day
    from analyzer.source import StoreDay
    from engine.tickstore.store import TickStore

    base = rss_bytes()
    peak = 0

    def progress(_fraction: float, _text: str) -> None:  # sampled after every chunk
        nonlocal peak
        peak = max(peak, rss_bytes() - base)

    t = time.perf_counter()
    with TickStore(path) as st:
        day = open_day(StoreDay(st, SYMBOL, DAY), progress=progress)
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "peak_rss": max(peak, rss_bytes() - base),
        "pyramid_bytes": sum(s.pyramid.nbytes for s in (day.quotes, day.trades) if s is not None),
    }


class _PaintCounter:
    """Counts the paint events of the charts' viewports (a frame should paint each once)."""

    def __init__(self, charts: list[Any]) -> None:
        from PySide6.QtCore import QEvent, QObject

        class _Filter(QObject):
            def eventFilter(self, obj: Any, event: Any) -> bool:
                if event.type() == QEvent.Type.Paint:
                    counter.paints += 1
                return False

        counter = self
        self.paints = 0
        self._filter = _Filter()
        for c in charts:
            c.viewport().installEventFilter(self._filter)


def _frame(app: Any, chart: Any, x0: float, x1: float) -> tuple[float, float]:
    """One frame as the event loop makes it: the span changes, the loop repaints.

    Return its wall time and the GUI thread's CPU time (ms): on a loaded machine the
    wall time also holds the waits for a core, the CPU time only the frame's own work.
    """
    vb = chart.getPlotItem().getViewBox()
    t = time.perf_counter()
    c = time.thread_time()
    vb.setXRange(x0, x1, padding=0)  # the charts redraw their data at once
    app.processEvents()  # the paint (and any rows a reader thread delivered meanwhile)
    return (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000


def child_warm(path: Path, frames: int, n_charts: int = 1) -> dict[str, Any]:
    """Open the day again (pyramids kept with the data) to the first frame, then pan/zoom.

    With ``n_charts`` > 1 the day is opened that many times into one linked stack, as
    several instruments on one time axis are (every chart redraws and repaints each frame).
    """
    app = _app()
    from analyzer.dataset import open_day
    from analyzer.source import StoreDay
    from analyzer.views.chart import ChartStack
    from engine.tickstore.store import TickStore

    stack = ChartStack()
    stack.resize(1600, 700 if n_charts == 1 else 900)
    stack.show()
    app.processEvents()
    base = rss_bytes()
    t = time.perf_counter()
    st = TickStore(path)
    day = open_day(StoreDay(st, SYMBOL, DAY))
    chart = stack.add(day)
    app.processEvents()  # laid out, shown and painted: the first frame
    first_frame = time.perf_counter() - t
    if not chart.viewport().isVisible():
        raise RuntimeError("the chart is not shown: its frames would paint nothing")
    after_open = rss_bytes() - base
    charts = [chart] + [stack.add(open_day(StoreDay(st, SYMBOL, DAY))) for _ in range(1, n_charts)]
    app.processEvents()
    counter = _PaintCounter(charts)
    # Pan and zoom: spans from the whole day to a few ms, at random places, then pans.
    rng = np.random.default_rng(7)
    t0, t1 = day.span
    x0, x1 = chart.to_x(t0), chart.to_x(t1)
    times: list[float] = []
    cpu: list[float] = []
    by_span: dict[str, list[float]] = {}
    spans = np.geomspace(x1 - x0, 0.005, 8)
    for i in range(frames):
        span = float(spans[i % len(spans)])
        centre = x0 + span / 2 + rng.random() * max(x1 - x0 - span, 0.0)
        ms, cpu_ms = _frame(app, chart, centre - span / 2, centre + span / 2)
        times.append(ms)
        cpu.append(cpu_ms)
        by_span.setdefault(f"{span:.3g} s", []).append(ms)
        for k in range(3):  # a small drag: three pans by a tenth of the span
            shift = span / 10 * (k + 1)
            ms, cpu_ms = _frame(app, chart, centre - span / 2 + shift, centre + span / 2 + shift)
            times.append(ms)
            cpu.append(cpu_ms)
            by_span[f"{span:.3g} s"].append(ms)
    after_pan = rss_bytes() - base
    fetches = []
    for _ in range(10):
        c = int(t0 + rng.random() * (t1 - t0))
        t = time.perf_counter()
        day.prefetch(c, c + NS // 10)
        fetches.append((time.perf_counter() - t) * 1000)
    while any(c._fetch.busy for c in charts):  # reads the last frames asked for
        time.sleep(0.005)
    st.close()
    return {
        "first_frame_s": first_frame,
        "rss_open": after_open,
        "rss_after_pan": after_pan,
        "shown_bytes": day.shown_nbytes,
        "day_bytes": day.nbytes,
        "rows": {k: int(v) for k, v in day.counts.items()},
        "frames_ms": times,
        "frames_cpu_ms": cpu,
        "paints_per_frame": counter.paints / len(times) / n_charts,
        "by_span": {k: statistics.median(v) for k, v in by_span.items()},
        "markers_last": chart.markers_shown,
        "fetch_ms": statistics.median(fetches),
    }


def child_baseline(points: int) -> dict[str, Any]:
    """pyqtgraph alone: the bid of ``points`` quotes, peak downsampling and clipping."""
    app = _app()
    import pyqtgraph as pg

    w = pg.PlotWidget()
    w.resize(1600, 700)
    w.show()
    app.processEvents()
    from analyzer.synthetic import SyntheticSpec, synthetic_day

    # The same quotes as the benchmark's day: the bid of its first ``points`` quotes.
    spec = SyntheticSpec(quotes=points, start_ns=DAY0 + 3600 * NS, span_ns=22 * 3600 * NS)
    bids = [b["bid_px"] * 0.25 for b, _ in synthetic_day(spec, chunk=1 << 22)]
    y = np.concatenate(bids).astype(np.float64)
    x = np.arange(points, dtype=np.float64)
    item = pg.PlotDataItem(skipFiniteCheck=True)
    w.addItem(item)
    item.setDownsampling(auto=True, method="peak")  # (ignored when given to the constructor)
    item.setClipToView(True)
    vb = w.getPlotItem().getViewBox()
    vb.disableAutoRange()
    vb.setRange(xRange=(0, points), yRange=(float(y.min()), float(y.max())), padding=0)
    app.processEvents()
    t = time.perf_counter()
    item.setData(x, y)
    set_s = time.perf_counter() - t
    t = time.perf_counter()
    app.processEvents()
    w.viewport().repaint()
    first_s = time.perf_counter() - t
    pans = []
    for k in range(5):
        t = time.perf_counter()
        vb.setXRange(k * points / 20, points * (0.5 + k / 20), padding=0)
        app.processEvents()
        w.viewport().repaint()
        pans.append((time.perf_counter() - t) * 1000)
    return {"set_s": set_s, "first_s": first_s, "pan_ms": statistics.median(pans)}


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.bench_analyzer", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(
    ticks: int, frames: int, folder: Path, *, reuse: bool = False, runs: int = 1
) -> tuple[list[judge.Figure], tuple[float, float], int]:
    """Run everything ``runs`` times; print details; return the judged figures, load and rows."""
    load0 = os.getloadavg()[0]
    path = folder / "bench.h5"
    if reuse and path.exists():
        from engine.tickstore.store import TickStore

        with TickStore(path) as st:
            rows = sum(st.info(SYMBOL, DAY).rows.values())
        print(f"reusing {path}: {rows:,} rows")
    else:
        path.unlink(missing_ok=True)
        print(f"generating a synthetic day of {ticks:,} ticks into {path} ...", flush=True)
        rss0 = rss_bytes()
        rows, gen_s = generate(path, ticks)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0
        size = path.stat().st_size
        lod_bytes = sum(p.stat().st_size for p in path.with_name(path.name + ".lod").rglob("*.npy"))
        print(
            f"  {rows:,} rows written in {gen_s:.1f} s with their pyramids, peak memory "
            f"+{peak / 1e6:.0f} MB ({size / 1e9:.2f} GB on disk, pyramids "
            f"{lod_bytes / 1e6:.0f} MB)"
        )
    m = f"{rows / 1e6:.0f}M ticks"
    cold_s = judge.Figure(f"first open of {m} after its import", "s", target=TARGET_FIRST_OPEN_S)
    cold_mb = judge.Figure("  memory added at its peak", "MB", target=TARGET_FIRST_OPEN_MB)
    warm_s = judge.Figure("open again to the first drawn frame", "ms", target=TARGET_OPEN_S * 1e3)
    one = judge.Figure("pan/zoom one chart, p95 of the frames", "ms", target=TARGET_FRAME_MS)
    three = judge.Figure("pan/zoom three linked charts, p95", "ms", target=TARGET_STACK_MS)
    mem = judge.Figure("memory after open and pan/zoom / shown columns", "x", target=TARGET_MEMORY)
    ref = judge.Figure("  pyqtgraph alone, 10M points: one pan frame", "ms")
    lod = path.with_name(path.name + ".lod")
    rebuild_s = judge.Figure("  reference: first open of a day written without pyramids", "s")
    rebuild_mb = judge.Figure("    its memory added at the peak", "MB")
    one_cpu: list[float] = []  # p95 of the GUI thread's CPU per frame, each run (a note)
    three_cpu: list[float] = []
    for i in range(runs):
        if not lod.exists():
            print("  (the store has no pyramids: this first open builds them)")
        cold = _child(["--child", "cold", "--store", str(path)])  # the day's first open
        shutil.rmtree(lod, ignore_errors=True)  # as a store written by another program
        rebuild = _child(["--child", "cold", "--store", str(path)])
        rebuild_s.runs.append(rebuild["seconds"])
        rebuild_mb.runs.append(rebuild["peak_rss"] / 1e6)
        base = _child(["--child", "baseline", "--points", str(10_000_000)])
        warm = _child(["--child", "warm", "--store", str(path), "--frames", str(frames)])
        stack = _child(
            ["--child", "warm", "--store", str(path), "--frames", str(frames), "--charts", "3"]
        )
        frames_ms, sf = warm["frames_ms"], stack["frames_ms"]
        cold_s.runs.append(cold["seconds"])
        cold_mb.runs.append(cold["peak_rss"] / 1e6)
        warm_s.runs.append(warm["first_frame_s"] * 1e3)
        one.runs.append(float(np.percentile(frames_ms, 95)))
        three.runs.append(float(np.percentile(sf, 95)))
        mem.runs.append(warm["rss_after_pan"] / warm["shown_bytes"])
        ref.runs.append(base["pan_ms"])
        print(f"\nrun {i + 1} of {runs}: day {warm['rows']}")
        print(
            f"  first open: {cold['seconds']:.2f} s, peak memory +{cold['peak_rss'] / 1e6:.0f} "
            f"MB, pyramids {cold['pyramid_bytes'] / 1e6:.0f} MB; a day written without them: "
            f"{rebuild['seconds']:.2f} s, +{rebuild['peak_rss'] / 1e6:.0f} MB "
            f"({rows / max(rebuild['seconds'], 1e-9) / 1e6:.1f}M rows/s)"
        )
        print(
            f"  pan/zoom, {len(frames_ms)} frames ({warm['paints_per_frame']:.2f} paints/frame): "
            f"median {statistics.median(frames_ms):.1f} ms, max {max(frames_ms):.1f} ms; three "
            f"linked charts 1600 x 900 ({stack['paints_per_frame']:.2f} paints/chart/frame): "
            f"median {statistics.median(sf):.1f} ms, max {max(sf):.1f} ms"
        )
        spans = ", ".join(f"{k} {v:.1f} ms" for k, v in warm["by_span"].items())
        print(f"  median by visible span: {spans}")
        wc, sc = warm["frames_cpu_ms"], stack["frames_cpu_ms"]
        one_cpu.append(float(np.percentile(wc, 95)))
        three_cpu.append(float(np.percentile(sc, 95)))
        print(
            f"  GUI thread CPU per frame (the frame's own work, without the waits for a core "
            f"at load {os.getloadavg()[0]:.1f}): one chart median {statistics.median(wc):.1f} "
            f"ms, p95 {one_cpu[-1]:.1f} ms; three linked median {statistics.median(sc):.1f} "
            f"ms, p95 {three_cpu[-1]:.1f} ms"
        )
        print(
            f"  rows read off the GUI thread for a zoomed-in span: median "
            f"{warm['fetch_ms']:.1f} ms; memory +{warm['rss_after_pan'] / 1e6:.0f} MB after "
            f"pan/zoom for {warm['shown_bytes'] / 1e6:.0f} MB of shown columns"
        )
        print(
            f"  pyqtgraph alone at 10M points: setData {base['set_s'] * 1e3:.0f} ms, first frame "
            f"{base['first_s'] * 1e3:.0f} ms, pan {base['pan_ms']:.1f} ms/frame"
        )
    one.note = (
        f"pyqtgraph alone at 10M points: {one.median / ref.median:.2f}x its pan frame; "
        f"GUI thread CPU p95 {statistics.median(one_cpu):.1f} ms"
    )
    three.note = f"GUI thread CPU p95 {statistics.median(three_cpu):.1f} ms"
    figures = [cold_s, cold_mb, rebuild_s, rebuild_mb, warm_s, one, three, mem, ref]
    return figures, (load0, os.getloadavg()[0]), rows


def _publish(
    figures: list[judge.Figure], load: tuple[float, float], ticks: int, frames: int, runs: int
) -> None:
    judge.write_section(
        "analyzer",
        "Trade Analyzer: open, pan and zoom",
        f"python -m tests.benchmarks.bench_analyzer --ticks {ticks} --frames {frames} "
        f"--runs {runs} --doc",
        figures,
        load=load,
        runs=f"{runs} run(s), {frames} zoom steps with 3 pans each",
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit 1 if a target was missed in any run."""
    ap = argparse.ArgumentParser(prog="bench_analyzer")
    ap.add_argument("--ticks", type=int, default=100_000_000, help="ticks of the day")
    ap.add_argument("--frames", type=int, default=20, help="zoom steps (each plus 3 pans)")
    ap.add_argument("--runs", type=int, default=1, help="runs, each judged")
    ap.add_argument("--dir", type=Path, help="folder for the store (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true", help="reuse the store in --dir if there")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md")
    ap.add_argument("--child", choices=("cold", "warm", "baseline"), help=argparse.SUPPRESS)
    ap.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--charts", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--points", type=int, default=10_000_000, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child == "cold":
        print(json.dumps(child_cold(args.store)))
        return 0
    if args.child == "warm":
        print(json.dumps(child_warm(args.store, args.frames, args.charts)))
        return 0
    if args.child == "baseline":
        print(json.dumps(child_baseline(args.points)))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-analyzer-") as tmp:
        folder = Path(tmp) if args.dir is None else args.dir
        folder.mkdir(parents=True, exist_ok=True)
        figures, load, _rows = run(
            args.ticks, args.frames, folder, reuse=args.reuse, runs=args.runs
        )
    if args.doc:
        _publish(figures, load, args.ticks, args.frames, args.runs)
    return judge.conclude(figures, load)


@pytest.mark.bench
def test_bench_analyzer(tmp_path: Path) -> None:
    """10M ticks, the same targets (a tenth of the day: the first open has it easier)."""
    figures, load, _rows = run(10_000_000, 10, tmp_path)
    assert judge.conclude(figures, load) == 0, judge.misses(figures)


if __name__ == "__main__":
    sys.exit(main())
