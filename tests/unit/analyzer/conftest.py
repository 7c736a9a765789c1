# SPDX-License-Identifier: MIT
"""Analyzer fixtures: generated tick days in a real HDF5 store, a real engine journal.

``demo_journal`` runs the embedded demo engine (real FIX on loopback) for a few seconds with a
journal folder; ``synthetic_store`` writes two generated instruments over the journal's time
span (ESZ6 and NQZ6, the demo's symbols and prices), NQZ6 at a third of ESZ6's rate and with a
two-second hole, so charts can be linked, gaps seen and own orders overlaid.
"""

import contextlib
import functools
import time
from pathlib import Path

import numpy as np
import pytest

from analyzer.synthetic import NS, SyntheticSpec, synthetic_day
from engine.journal import JournalError
from engine.posttrade import load_day
from engine.tickstore.days import day_of
from engine.tickstore.store import TickStore

SHARED_DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def write_synthetic(
    path: Path, symbol: str, spec: SyntheticSpec, *, tick: str = "0.25", lot: str = "1"
) -> None:
    """Append a generated day of ``symbol`` to the store at ``path``."""
    with (
        TickStore(path, "a") as store,
        store.writer(symbol, day_of(spec.start_ns), tick_size=tick, lot_size=lot) as w,
    ):
        for bbo, trades in synthetic_day(spec):
            w.append("bbo", bbo)
            w.append("trades", trades)


@pytest.fixture(scope="session")
def demo_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a journal of the demo engine trading for about three seconds."""
    from engine.demo import build_demo
    from engine.embedded import EmbeddedEngineClient
    from engine.warmup import warm_up

    folder = tmp_path_factory.mktemp("journal")
    warm_up()
    client = EmbeddedEngineClient(configure=functools.partial(build_demo, journal_dir=folder))
    client.start()
    started = time.monotonic()
    try:
        # At least three seconds of trading, longer on a loaded machine until there are fills.
        while time.monotonic() - started < 30.0:
            client.drain()
            time.sleep(0.1)
            files = list(folder.glob("*.qwj"))
            if time.monotonic() - started > 3.0 and files:
                with contextlib.suppress(JournalError):
                    if load_day(files[0]).executions.shape[0] >= 5:
                        break
    finally:
        client.close()
    (path,) = folder.glob("*.qwj")
    assert load_day(path).executions.shape[0] > 0, "the demo made no fills"
    return path


@pytest.fixture(scope="session")
def synthetic_store(tmp_path_factory: pytest.TempPathFactory, demo_journal: Path) -> Path:
    """Return a store with ESZ6 and NQZ6 generated over the demo journal's time span."""
    ts = load_day(demo_journal).order_events["ts"]
    t0 = int(ts.min()) - 2 * NS
    t1 = int(ts.max()) + 2 * NS
    path = tmp_path_factory.mktemp("store") / "ticks.h5"
    write_synthetic(
        path, "ESZ6", SyntheticSpec(quotes=30_000, start_ns=t0, span_ns=t1 - t0, px0=24_000)
    )
    hole = (0.45, 0.45 + 2 * NS / (t1 - t0))
    write_synthetic(
        path,
        "NQZ6",
        SyntheticSpec(quotes=10_000, start_ns=t0, span_ns=t1 - t0, px0=86_000, gap=hole, seed=2),
    )
    return path


def quotes_of(path: Path, symbol: str) -> np.ndarray:
    """Return every BBO row of ``symbol`` in the store (all days)."""
    with TickStore(path) as s:
        return np.concatenate([s.read(symbol, d, "bbo") for d in s.days(symbol)])
