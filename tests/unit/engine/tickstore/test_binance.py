# SPDX-License-Identifier: MIT
"""Binance recordings through the importer and the store, checked against the venue's quotes.

The real files are the shared recordings (``../shared/data``; skipped where absent). The book
rebuilt from the *stored* depth rows by the engine's L2 kernel must equal every
``bookTicker`` quote that carries the update id of a depth diff.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from engine.book.l2 import L2Books
from engine.tickstore.binance import import_binance
from engine.tickstore.importing import ImportRowError
from engine.tickstore.schema import to_l2_events
from engine.tickstore.store import TickStore
from engine.types import L2_CLEAR

DATA = Path(__file__).resolve().parents[5] / "shared" / "data"

REAL = [
    pytest.param("binance_spot_btcusdt_2024-08-08", "0.01", "0.00000001", False, id="spot"),
    pytest.param("binance_usdm_btcusdt_2024-08-08", "0.1", "0.001", True, id="usdm"),
]


def rebuilt_touch_checks(store: Path, symbol: str) -> tuple[int, int]:
    """Replay each stored day through L2Books; return (checks, mismatches) against the bbo.

    Quotes are matched by update id across days: spot quotes carry receive time, which may
    fall on the day before the diff's event time.
    """
    by_seq: dict[int, list[int]] = {}
    quotes = []
    with TickStore(store) as s:
        for day in s.days(symbol):
            l2 = s.read(symbol, day, "l2")
            quotes.append(s.read(symbol, day, "bbo"))
            assert l2["kind"][0] == L2_CLEAR  # every day starts with a whole book
            ev = to_l2_events(l2)
            set_px = l2["px"][l2["kind"] != L2_CLEAR]
            books = L2Books(1, 1 << 17, int(np.median(set_px)))
            touch = np.zeros((ev.shape[0], 4), np.int64)
            books.apply(ev, touch)
            seq = l2["seq"]
            last = np.flatnonzero(np.r_[seq[1:] != seq[:-1], True])
            by_seq.update({int(seq[i]): touch[i].tolist() for i in last})
            crossed = (touch[last, 1] > 0) & (touch[last, 3] > 0)
            assert not (touch[last, 0][crossed] >= touch[last, 2][crossed]).any()
    checks = mismatches = 0
    for q in np.concatenate(quotes):
        got = by_seq.get(int(q["seq"]))
        if got is not None:
            checks += 1
            mismatches += got != [int(q[f]) for f in ("bid_px", "bid_qty", "ask_px", "ask_qty")]
    return checks, mismatches


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "tick", "lot", "futures"), REAL)
def test_real_recording_books_match_every_book_ticker(
    tmp_path: Path, folder: str, tick: str, lot: str, futures: bool
) -> None:
    src = DATA / folder / "btcusdt_20240808.gz"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    store = tmp_path / "b.h5"
    result, stats = import_binance(
        [src], store, "BTCUSDT", tick_size=tick, lot_size=lot, futures=futures
    )
    assert stats.snapshots == 1
    assert stats.gaps == 0
    assert result.skipped == []
    checks, mismatches = rebuilt_touch_checks(store, "BTCUSDT")
    assert mismatches == 0
    assert checks == (564 if not futures else 629)  # every quote with a diff's update id
    with TickStore(store) as s:
        assert s.days("BTCUSDT") == ["20240808", "20240809"]  # E runs past midnight
        trades = np.concatenate([s.read("BTCUSDT", d, "trades") for d in s.days("BTCUSDT")])
        assert trades.shape[0] == (9757 if not futures else 21313)
        assert (np.diff(trades["trade_id"]) > 0).all()
        info = s.info("BTCUSDT", "20240808")
        assert (info.tick_size, info.lot_size, info.venue) == (tick, lot, "BINANCE")
        assert info.n_levels == 20
        snaps = np.concatenate([s.read("BTCUSDT", d, "l2_snap") for d in s.days("BTCUSDT")])
        span_s = (snaps["ts"][-1] - snaps["ts"][0]) / 1e9
        assert span_s - 2 <= snaps.shape[0] <= span_s + 2  # one a second of event time
        assert (snaps["bid_px"][:, 0] < snaps["ask_px"][:, 0]).all()
        assert (np.diff(snaps["bid_px"], axis=1) < 0).all()  # 20 distinct levels, best first
        assert (np.diff(snaps["ask_px"], axis=1) > 0).all()


def _line(recv: int, obj: object) -> str:
    return f"{recv} {json.dumps(obj)}\n"


def _diff(first: int, last: int, e_ms: int, bids: list[list[str]], asks: list[list[str]]) -> object:
    data = {"e": "depthUpdate", "E": e_ms, "s": "XYZ", "U": first, "u": last, "b": bids, "a": asks}
    return {"stream": "xyz@depth@100ms", "data": data}


def _write(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt") as fh:
        fh.writelines(lines)
    return path


E0 = 1_723_161_255_000  # ms


def test_sequencing_drops_covered_diffs_and_stops_at_a_gap(tmp_path: Path) -> None:
    lines = [
        _line(1, _diff(5, 9, E0, [["10.00", "1"]], [])),  # covered by the snapshot: dropped
        _line(2, _diff(10, 12, E0 + 1, [["10.01", "2"]], [])),  # bridges L + 1 = 11
        _line(3, {"lastUpdateId": 10, "bids": [["10.00", "5"]], "asks": [["10.05", "3"]]}),
        _line(4, _diff(13, 14, E0 + 2, [], [["10.04", "1"]])),
        _line(5, _diff(16, 17, E0 + 3, [], [["10.03", "1"]])),  # gap (15 missing)
        _line(6, _diff(18, 19, E0 + 4, [], [["10.02", "1"]])),  # waits for a snapshot: none
    ]
    src = _write(tmp_path / "x.gz", lines)
    store = tmp_path / "s.h5"
    _result, stats = import_binance(
        [src], store, "XYZ", tick_size="0.01", lot_size="1", skip_bad_rows=True
    )
    assert (stats.diffs_applied, stats.gaps, stats.diffs_dropped) == (2, 1, 3)
    with TickStore(store) as s:
        l2 = s.read("XYZ", "20240808", "l2")
    assert l2["kind"].tolist() == [L2_CLEAR, 0, 0, 0, 0]
    assert l2["px"].tolist() == [0, 1000, 1005, 1001, 1004]
    assert l2["seq"].tolist() == [10, 10, 10, 12, 14]
    assert l2["ts"][0] == (E0 + 1) * 1_000_000  # the snapshot is stamped at its first diff


def test_bad_line_stops_with_file_line_column_and_value_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    lines = [
        _line(3, {"lastUpdateId": 10, "bids": [["10.00", "5"]], "asks": [["10.05", "3"]]}),
        _line(4, _diff(11, 14, E0 + 2, [], [["10.04", "1"]])),
        _line(5, _diff(15, 15, E0 + 3, [], [["10.031", "1"]])),  # off the tick grid
    ]
    src = _write(tmp_path / "x.gz", lines)
    store = tmp_path / "s.h5"
    with pytest.raises(ImportRowError) as err:
        import_binance([src], store, "XYZ", tick_size="0.01", lot_size="1")
    bad = err.value.bad
    assert (bad.file, bad.line, bad.column, bad.value) == (str(src), 3, "a", "10.031")
    assert "not a multiple of the tick size 0.01" in str(err.value)
    assert not store.exists()
    assert list(tmp_path.iterdir()) == [src]  # no staging file left behind
    result, _ = import_binance(
        [src], store, "XYZ", tick_size="0.01", lot_size="1", skip_bad_rows=True
    )
    assert [b.line for b in result.skipped] == [3]
    with TickStore(store) as s:
        assert s.read("XYZ", "20240808", "l2").shape[0] == 4
