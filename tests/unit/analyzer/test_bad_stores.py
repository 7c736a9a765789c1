# SPDX-License-Identifier: MIT
"""Damaged tick stores opened in the Trade Analyzer: one line, at once (issue 16).

A store cut to half its size hung the reader (HDF5's SWMR retries); now the Analyzer reports
the file and the reason. The rows of ``docs/bad-input.md`` for the Analyzer are these cases,
made from a store :class:`TickStore` wrote.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import pytest

from analyzer.views.workspace import AnalyzerWorkspace
from tests.integration.test_bad_input import _write_store, normalized, truncate

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "bad-input.md"


@dataclass(frozen=True)
class Store:
    """One damaged store: how to make it from a good one, what the Analyzer says."""

    id: str
    bad: str  # what is wrong, as the table shows it
    make: Callable[[Path, Path], Path]  # (folder, good store) -> bad store
    message: str  # "{tmp}" the folder, "{half}"/"{size}" the sizes


def _copy(tmp: Path, good: Path) -> Path:
    p = tmp / "store.h5"
    shutil.copy(good, p)
    return p


def _cut(fraction: float | None = None, size: int = 0) -> Callable[[Path, Path], Path]:
    def make(tmp: Path, good: Path) -> Path:
        p = _copy(tmp, good)
        truncate(p, int(p.stat().st_size * fraction) if fraction else size)
        return p

    return make


def _schema(tmp: Path, good: Path) -> Path:
    p = _copy(tmp, good)
    with h5py.File(p, "r+") as f:
        f.attrs["schema_version"] = 99
    return p


STORES: list[Store] = [
    Store("truncated-half", "tick store cut to half its size (hung)", _cut(0.5),
          "{tmp}/store.h5: cannot open the tick store: damaged file (truncated to {half} of "
          "{size} bytes)"),
    Store("truncated-100", "tick store cut to its first 100 bytes", _cut(size=100),
          "{tmp}/store.h5: cannot open the tick store: damaged file (truncated to 100 of "
          "{size} bytes)"),
    Store("schema", "a store of a future schema version", _schema,
          "{tmp}/store.h5: cannot open the tick store: schema version 99, this build reads 1"),
]  # fmt: skip


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("good") / "store.h5"
    _write_store(p)
    return p


def _expected(case: Store, tmp: Path, good: Path) -> str:
    size = good.stat().st_size
    return case.message.format(tmp=tmp, half=f"{size // 2:,}", size=f"{size:,}")


@pytest.mark.parametrize("case", STORES, ids=[s.id for s in STORES])
def test_a_damaged_store_is_one_line_at_once(
    qtbot: Any, tmp_path: Path, good: Path, case: Store
) -> None:
    path = case.make(tmp_path, good)
    ws = AnalyzerWorkspace()
    qtbot.addWidget(ws)
    t0 = time.monotonic()
    with qtbot.waitSignal(ws.error, timeout=10_000) as sig:
        assert not ws.open_store(path)
    assert time.monotonic() - t0 < 5.0
    assert sig.args == [_expected(case, tmp_path, good)]


def test_the_docs_table_shows_every_store(tmp_path: Path, good: Path) -> None:
    doc = normalized(DOC.read_text(encoding="utf-8"))
    for case in STORES:
        line = _expected(case, tmp_path, good).replace(str(tmp_path), "<tmp>")
        assert normalized(f"`{line}`") in doc, case.id
