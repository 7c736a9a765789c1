# SPDX-License-Identifier: MIT
"""Pyramids built while a day is written (``analyzer.summary``): real HDF5 stores, real opens.

A day written with the summary installed opens without reading its rows, and the pyramid it
loads is the one a first open would have built from the rows; a day appended to, or written
by a process without the summary, is summarized on its first open as before; nothing stale is
ever loaded; a summary that fails costs no row.
"""

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from analyzer.dataset import open_day
from analyzer.pyramid import Pyramid
from analyzer.source import Rows, StoreDay, lod_dir
from analyzer.summary import install
from analyzer.synthetic import NS, SyntheticSpec, synthetic_day
from engine.tickstore import summaries
from engine.tickstore.days import day_of
from engine.tickstore.store import TickStore

ROOT = Path(__file__).resolve().parents[3]
SPEC = SyntheticSpec(quotes=120_000, start_ns=1_700_000_000 * NS, span_ns=600 * NS, seed=5)
DAY = "20231114"


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary installed for this test only (the registry is process-wide)."""
    monkeypatch.setattr(summaries, "_SUMMARIES", [])
    install()


@pytest.fixture
def not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summaries, "_SUMMARIES", [])


def write(path: Path, spec: SyntheticSpec = SPEC, *, batch_rows: int = 1_000) -> None:
    """Write a synthetic day in batches of rows that are not whole buckets (1,000 = 15.6 x 64)."""
    with (
        TickStore(path, "a") as st,
        st.writer(
            "ESZ6", day_of(spec.start_ns), tick_size="0.25", lot_size="1", batch_rows=batch_rows
        ) as w,
    ):
        for bbo, trades in synthetic_day(spec, chunk=7_777):
            w.append("bbo", bbo)
            w.append("trades", trades)


class CountingDay(StoreDay):
    """A store day that counts the chunked reads an open makes."""

    def __init__(self, store: TickStore, day: str = DAY) -> None:
        super().__init__(store, "ESZ6", day)
        self.scanned: list[str] = []

    def chunks(self, kind: str, rows: int = 1 << 20) -> Iterator[Rows]:
        self.scanned.append(kind)
        return super().chunks(kind, rows)


def assert_same(a: Pyramid, b: Pyramid) -> None:
    assert a.n_rows == b.n_rows
    assert a.columns == b.columns
    assert len(a.levels) == len(b.levels) >= 1
    for la, lb in zip(a.levels, b.levels, strict=True):
        np.testing.assert_array_equal(la.t_first, lb.t_first)
        np.testing.assert_array_equal(la.t_last, lb.t_last)
        for c in a.columns:
            np.testing.assert_array_equal(la.lo[c], lb.lo[c])
            np.testing.assert_array_equal(la.hi[c], lb.hi[c])
        assert la.sums.keys() == lb.sums.keys()
        for c in la.sums:
            np.testing.assert_allclose(la.sums[c], lb.sums[c], rtol=1e-12)
    np.testing.assert_array_equal(a.gaps, b.gaps)


def test_a_day_written_with_the_summary_opens_without_reading_its_rows(
    tmp_path: Path, installed: None
) -> None:
    path = tmp_path / "s.h5"
    write(path)
    folder = lod_dir(path, "ESZ6", DAY)
    assert (folder / "bbo" / "meta.json").exists()
    assert (folder / "trades" / "meta.json").exists()
    with TickStore(path) as st:
        day = CountingDay(st)
        opened = open_day(day, in_memory_rows=0)
        assert day.scanned == []  # both pyramids loaded, no row read
        written = {
            k: s.pyramid
            for k, s in (("bbo", opened.quotes), ("trades", opened.trades))
            if s is not None
        }
    # The same pyramids a first open builds from the rows of a store without them.
    for kind in ("bbo", "trades"):
        (folder / kind / "meta.json").unlink()
    with TickStore(path) as st:
        day = CountingDay(st)
        rebuilt = open_day(day, in_memory_rows=0)
        assert sorted(day.scanned) == ["bbo", "trades"]
    assert rebuilt.quotes is not None
    assert rebuilt.trades is not None
    assert_same(written["bbo"], rebuilt.quotes.pyramid)
    assert_same(written["trades"], rebuilt.trades.pyramid)
    assert written["bbo"].n_rows == 120_000
    assert len(written["bbo"].levels) > 1


def test_writing_another_day_or_instrument_keeps_the_first_days_pyramids(
    tmp_path: Path, installed: None
) -> None:
    path = tmp_path / "s.h5"
    write(path)
    later = SyntheticSpec(quotes=5_000, start_ns=SPEC.start_ns + 86_400 * NS, span_ns=60 * NS)
    write(path, later)  # the next day: the file grows, the first day's rows do not change
    with TickStore(path) as st:
        day = CountingDay(st)
        open_day(day, in_memory_rows=0)
        assert day.scanned == []


def test_a_day_appended_to_is_summarized_again_on_its_first_open(
    tmp_path: Path, installed: None
) -> None:
    path = tmp_path / "s.h5"
    first = SyntheticSpec(quotes=20_000, start_ns=SPEC.start_ns, span_ns=300 * NS, seed=1)
    write(path, first)
    more = SyntheticSpec(quotes=20_000, start_ns=SPEC.start_ns + 400 * NS, span_ns=100 * NS, seed=2)
    write(path, more)  # the day had rows: this writer keeps no summary of it
    with TickStore(path) as st:
        day = CountingDay(st)
        opened = open_day(day, in_memory_rows=0)
        # The first writer's pyramids describe 20,000 quotes, the day has 40,000: not loaded.
        assert sorted(day.scanned) == ["bbo", "trades"]
        assert opened.quotes is not None
        assert opened.quotes.pyramid.n_rows == 40_000
        again = CountingDay(st)
        open_day(again, in_memory_rows=0)  # the first open kept the full day's pyramids
        assert again.scanned == []


def test_a_process_without_the_summary_writes_none(tmp_path: Path, not_installed: None) -> None:
    path = tmp_path / "s.h5"
    write(path)
    assert not lod_dir(path, "ESZ6", DAY).exists()


def test_a_failing_summary_costs_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def append(self, kind: str, rows: Rows) -> None:
            raise RuntimeError("disk full")

        def close(self) -> None:
            raise AssertionError("a dropped summary is not closed")

    monkeypatch.setattr(summaries, "_SUMMARIES", [lambda *_args: Broken()])
    path = tmp_path / "s.h5"
    with caplog.at_level(logging.WARNING, logger="engine.tickstore.writer"):
        write(path)
    assert "ESZ6/20231114: summary dropped" in caplog.text
    with TickStore(path) as st:
        assert st.info("ESZ6", DAY).rows["bbo"] == 120_000


def _import_csv(tmp_path: Path, store: Path, day_offset: int, n: int) -> None:
    rng = np.random.default_rng(3 + day_offset)
    start = 1_700_000_000_000_000_000 + day_offset * 86_400 * NS
    ts = start + np.cumsum(rng.integers(1, 50_000_000, n))
    px = 4000 + np.cumsum(rng.integers(-2, 3, n))
    src = tmp_path / f"trades{day_offset}.csv"
    lines = ["time,price,size"] + [
        f"{t},{p * 0.25:.2f},{q}" for t, p, q in zip(ts, px, rng.integers(1, 9, n), strict=True)
    ]
    src.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "app", "import", "csv", str(src), "--store", str(store),
         "--symbol", "ESZ6", "--kind", "trades", "--mapping", "ts=time:ns,px=price,qty=size",
         "--tick-size", "0.25", "--lot-size", "1", "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_qwconsole_import_leaves_the_pyramids_the_first_open_loads(tmp_path: Path) -> None:
    """The real command line, in its own process: ``qwconsole import csv``, into a new store
    (the staging file renamed) and then into the existing one (the day copied in)."""
    store = tmp_path / "s.h5"
    _import_csv(tmp_path, store, 0, 5_000)
    _import_csv(tmp_path, store, 1, 3_000)
    assert not list(tmp_path.glob(".*.lod"))  # the staging store's summaries moved
    for day, n in ((DAY, 5_000), ("20231115", 3_000)):
        assert (lod_dir(store, "ESZ6", day) / "trades" / "meta.json").exists()
        with TickStore(store) as st:
            source = CountingDay(st, day)
            opened = open_day(source, in_memory_rows=0)
            assert source.scanned == []
            assert opened.trades is not None
            assert opened.trades.pyramid.n_rows == n
