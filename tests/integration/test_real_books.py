# SPDX-License-Identifier: MIT
"""Rebuild real exchange books with the engine kernels and check them against the venue.

* Binance spot and USD-M BTCUSDT (L2): snapshot + diffs, the rebuilt best bid/ask must equal
  every ``bookTicker`` quote that carries the same update id.
* CME Globex ESH4 market-by-order (L3): no event may refer to an unknown order, and the
  book is never crossed at the end of an event (``F_LAST``) after the open (the first trade,
  the 23:00 UTC uncross; pre-open books may cross).

Data by path from ``../shared/data``; each test skips cleanly where its files are absent.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
import pytest

from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.instruments import Instrument
from engine.types import (
    BUY,
    L2_EVENT_DTYPE,
    L2_SET,
    L3_ADD,
    L3_CANCEL,
    L3_EVENT_DTYPE,
    L3_MODIFY,
    SELL,
)

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

pytestmark = pytest.mark.integration


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", newline="")
    return path.open(newline="")


def _rows(path: Path) -> Iterator[dict[str, str]]:
    with _open(path) as fh:
        yield from csv.DictReader(fh)


def _need(*paths: Path) -> None:
    missing = [p for p in paths if not p.exists()]
    if missing:
        pytest.skip(f"real data not available: {', '.join(str(p) for p in missing)}")


# ======================================================================= Binance, L2
BINANCE = [
    pytest.param(
        "binance_spot_btcusdt_2024-08-08", "depth_l2.csv", "quotes_bbo.csv",
        Instrument(symbol="BTCUSDT", tick_size="0.01", lot_size="0.00000001"), True, 564,
        id="spot",
    ),
    pytest.param(
        "binance_usdm_btcusdt_2024-08-08", "depth_l2.csv.gz", "quotes_bbo.csv.gz",
        Instrument(symbol="BTCUSDT", tick_size="0.1", lot_size="0.001"), False, 629,
        id="usdm",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("folder", "depth", "quotes", "ins", "spot", "n_checks"), BINANCE)
def test_binance_rebuilt_touch_equals_book_ticker(
    folder: str, depth: str, quotes: str, ins: Instrument, spot: bool, n_checks: int
) -> None:
    d_path, q_path = DATA / folder / depth, DATA / folder / quotes
    _need(d_path, q_path)
    snap: list[tuple[int, float, float]] = []
    diff_side: list[int] = []
    diff_px: list[float] = []
    diff_qty: list[float] = []
    diff_u: list[int] = []
    last_id = -1
    for r in _rows(d_path):
        side = BUY if r["side"] == "bid" else SELL
        if r["action"] == "snapshot":
            snap.append((side, float(r["price"]), float(r["size"])))
            last_id = int(r["last_update_id"])
            continue
        diff_side.append(side)
        diff_px.append(float(r["price"]))
        diff_qty.append(float(r["size"]) if r["action"] == "set" else 0.0)
        diff_u.append(int(r["last_update_id"]))
    assert snap, "no snapshot rows"
    u = np.array(diff_u, np.int64)
    # diffs recorded before the snapshot are kept buffered; the stale ones are dropped
    keep = u > last_id if spot else u >= last_id
    # the window must hold every level that can become the touch: a level dropped outside it
    # (deeper than the touch when it last changed) cannot come back from diffs alone
    books = L2Books(1, 1 << 17)
    s_side, s_px, s_qty = zip(*snap, strict=True)
    kept = books.snapshot(0, s_side, ins.prices_to_ticks(s_px), ins.qtys_to_lots(s_qty))
    assert kept == len(snap)
    ev = np.zeros(int(keep.sum()), L2_EVENT_DTYPE)
    ev["px"] = ins.prices_to_ticks(np.array(diff_px)[keep])
    ev["qty"] = ins.qtys_to_lots(np.array(diff_qty)[keep])
    ev["side"] = np.array(diff_side, np.int8)[keep]
    ev["kind"] = L2_SET
    ev_u = u[keep]
    bbo = np.zeros((ev.shape[0], 4), np.int64)
    books.apply(ev, bbo=bbo)
    # the touch after the last row of each diff message, keyed by its final update id
    last_row = np.flatnonzero(np.r_[ev_u[1:] != ev_u[:-1], True])
    touch = {int(ev_u[i]): bbo[i] for i in last_row}
    checks = 0
    for r in _rows(q_path):
        uid = int(r["update_id"])
        if uid not in touch:
            continue
        want = [
            ins.price_to_ticks(r["bid_price"]),
            ins.qty_to_lots(r["bid_size"]),
            ins.price_to_ticks(r["ask_price"]),
            ins.qty_to_lots(r["ask_size"]),
        ]
        assert touch[uid].tolist() == want, f"update id {uid}"
        checks += 1
    assert checks == n_checks
    crossed = (bbo[:, 1] > 0) & (bbo[:, 3] > 0) & (bbo[:, 0] >= bbo[:, 2])
    assert not crossed[last_row].any()


# ========================================================================== CME, L3
CME = DATA / "cme_globex_esh4_mbo_2023-12-25" / "esh4-glbx-mdp3-20231225.mbo.csv"
F_LAST = 128
_ACTIONS = {"A": L3_ADD, "C": L3_CANCEL, "M": L3_MODIFY}


def _ns(iso: str) -> int:
    return int(np.datetime64(iso.rstrip("Z"), "ns").astype(np.int64))


def test_cme_mbo_book_rebuilds_without_unknown_orders_and_never_crosses_after_open() -> None:
    _need(CME)
    es = Instrument(symbol="ESH4", tick_size="0.25", multiplier=50)
    all_rows = list(_rows(CME))
    # the open is the opening auction's uncross: the first trade (23:00:00.1059 UTC)
    open_ns = _ns(next(r["ts_recv"] for r in all_rows if r["action"] == "T"))
    rows = [r for r in all_rows if r["action"] in _ACTIONS]
    ev = np.zeros(len(rows), L3_EVENT_DTYPE)
    ev["ts"] = [_ns(r["ts_recv"]) for r in rows]
    ev["order_id"] = [int(r["order_id"]) for r in rows]
    ev["px"] = es.prices_to_ticks([float(r["price"]) for r in rows])
    ev["qty"] = [int(r["size"]) for r in rows]
    ev["side"] = [BUY if r["side"] == "B" else SELL for r in rows]
    ev["action"] = [_ACTIONS[r["action"]] for r in rows]
    flags = np.array([int(r["flags"]) for r in rows], np.int64)
    lo, hi = int(ev["px"].min()), int(ev["px"].max())
    book = L3Book(lo, hi - lo + 1, capacity=1 << 14)
    bbo = np.zeros((ev.shape[0], 4), np.int64)
    book.apply(ev, bbo=bbo)
    assert book.unknown == 0
    assert book.duplicates == 0
    end_of_event = ((flags & F_LAST) != 0) & (ev["ts"] >= open_ns)
    assert end_of_event.sum() > 10_000
    both = (bbo[:, 1] > 0) & (bbo[:, 3] > 0)
    assert both[end_of_event].all()
    crossed = np.flatnonzero(end_of_event & (bbo[:, 0] >= bbo[:, 2]))
    assert crossed.size == 0, (
        f"crossed after rows {crossed[:5].tolist()}: {bbo[crossed[:5]].tolist()}"
    )
    # the README's end state: 11,217 resting orders, 4810.00 / 4810.25
    assert book.n_orders == 11_217
    assert book.best_bid() == (es.price_to_ticks("4810.00"), int(bbo[-1, 1]))
    assert book.best_ask() == (es.price_to_ticks("4810.25"), int(bbo[-1, 3]))
