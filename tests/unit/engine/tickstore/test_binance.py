# SPDX-License-Identifier: MIT
"""Binance recordings through the importer and the store, checked against the venue's quotes.

The real files are the shared recordings (``../shared/data``; skipped where absent). The book
rebuilt from the *stored* depth rows by the engine's L2 kernel must equal every
``bookTicker`` quote that carries the update id of a depth diff.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from engine.book.l2 import L2Books
from engine.tickstore.binance import BinanceStats, SequenceGapError, import_binance
from engine.tickstore.cli import main as cli_main
from engine.tickstore.importing import ImportRowError, day_gaps
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
    assert (stats.gaps, stats.diffs_dropped, stats.duplicates) == (0, 0, 0)
    assert stats.diffs_covered == (2 if not futures else 4)  # recorded before the snapshot
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


def _fdiff(
    first: int, last: int, prev: int, e_ms: int, bids: list[list[str]], asks: list[list[str]]
) -> object:
    data = {
        "e": "depthUpdate",
        "E": e_ms,
        "T": e_ms,
        "s": "XYZ",
        "U": first,
        "u": last,
        "pu": prev,
        "b": bids,
        "a": asks,
    }
    return {"stream": "xyz@depth@0ms", "data": data}


def _snap(last_id: int, e_ms: int | None = None) -> object:
    snap: dict[str, object] = {
        "lastUpdateId": last_id,
        "bids": [["10.00", "5"]],
        "asks": [["10.05", "3"]],
    }
    if e_ms is not None:
        snap["E"] = snap["T"] = e_ms
    return snap


def _run(
    tmp_path: Path, lines: list[str], *, futures: bool, allow_gaps: bool = False
) -> tuple[Path, BinanceStats]:
    src = _write(tmp_path / "x.gz", lines)
    store = tmp_path / "s.h5"
    _result, stats = import_binance(
        [src],
        store,
        "XYZ",
        tick_size="0.01",
        lot_size="1",
        futures=futures,
        allow_gaps=allow_gaps,
    )
    return store, stats


def _seqs(store: Path) -> list[int]:
    with TickStore(store) as s:
        l2 = s.read("XYZ", "20240808", "l2")
    return [int(q) for q in l2["seq"][l2["kind"] != L2_CLEAR]]


# Futures (USD-M): drop u < L; the first diff has U <= L <= u; then pu == previous u.
FUTURES_BRIDGES = [
    pytest.param(90, 100, id="u == L"),  # the case: every later diff was dropped
    pytest.param(100, 105, id="U == L"),
    pytest.param(95, 105, id="U < L < u"),
]


@pytest.mark.parametrize(("first", "last"), FUTURES_BRIDGES)
def test_futures_first_diff_bridges_the_snapshot_and_the_rest_follow(
    tmp_path: Path, first: int, last: int
) -> None:
    lines = [
        _line(1, _fdiff(80, 89, 79, E0, [["10.00", "1"]], [])),  # u < L: covered
        _line(2, _fdiff(first, last, first - 1, E0 + 1, [["10.01", "2"]], [])),
        _line(3, _snap(100, E0 + 1)),
        _line(4, _fdiff(last + 7, last + 9, last, E0 + 2, [], [["10.04", "1"]])),
        _line(5, _fdiff(last + 12, last + 20, last + 9, E0 + 3, [], [["10.03", "1"]])),
    ]
    store, stats = _run(tmp_path, lines, futures=True)
    assert (stats.diffs_applied, stats.diffs_covered, stats.diffs_dropped, stats.gaps) == (
        3, 1, 0, 0,
    )  # fmt: skip
    assert _seqs(store) == [100, 100, last, last + 9, last + 20]


def test_futures_diff_with_pu_equal_to_the_snapshot_follows_it(tmp_path: Path) -> None:
    # The diff ending at L was not recorded, but pu == L says nothing is missing.
    lines = [_line(1, _snap(100, E0)), _line(2, _fdiff(104, 110, 100, E0 + 1, [], []))]
    _store, stats = _run(tmp_path, lines, futures=True)
    assert (stats.diffs_applied, stats.gaps) == (1, 0)


# Spot: drop u <= L; the first diff has U <= L+1 <= u; then U == previous u + 1.
SPOT_BRIDGES = [
    pytest.param(101, 103, id="U == L+1"),
    pytest.param(99, 101, id="u == L+1"),
    pytest.param(95, 110, id="U < L+1 < u"),
]


@pytest.mark.parametrize(("first", "last"), SPOT_BRIDGES)
def test_spot_first_diff_bridges_the_snapshot_and_the_rest_follow(
    tmp_path: Path, first: int, last: int
) -> None:
    lines = [
        _line(1, _diff(90, 100, E0, [["10.00", "1"]], [])),  # u == L: covered on spot
        _line(2, _diff(first, last, E0 + 1, [["10.01", "2"]], [])),
        _line(3, _snap(100)),
        _line(4, _diff(last + 1, last + 4, E0 + 2, [], [["10.04", "1"]])),
    ]
    store, stats = _run(tmp_path, lines, futures=False)
    assert (stats.diffs_applied, stats.diffs_covered, stats.gaps) == (2, 1, 0)
    assert _seqs(store) == [100, 100, last, last + 4]


GAPS = [
    # (futures, lines after the snapshot L=100, error text)
    pytest.param(
        True, [_fdiff(101, 105, 100, E0 + 1, [], []), _fdiff(108, 110, 106, E0 + 2, [], [])],
        "depth diff U=108 u=110 pu=106: pu 106 is not the previous diff's u 105 (skips "
        "updates)", id="futures gap",
    ),
    pytest.param(
        True, [_fdiff(103, 105, 102, E0 + 1, [], [])],
        "depth diff U=103 u=105 pu=102: starts after the snapshot lastUpdateId L=100 (the "
        "first diff must have U <= L <= u): updates 100..102 are missing", id="futures late start",
    ),
    pytest.param(
        False, [_diff(101, 105, E0 + 1, [], []), _diff(107, 110, E0 + 2, [], [])],
        "depth diff U=107 u=110: U is not the previous diff's u + 1 = 106 (updates 106..106 "
        "are missing)", id="spot gap",
    ),
    pytest.param(
        False, [_diff(102, 105, E0 + 1, [], [])],
        "depth diff U=102 u=105: starts after the snapshot lastUpdateId L=100 (the first diff "
        "must have U <= L+1 <= u): updates 101..101 are missing", id="spot late start",
    ),
    pytest.param(
        False, [_diff(101, 105, E0 + 1, [], []), _diff(104, 106, E0 + 2, [["10.01", "1"]], [])],
        "depth diff U=104 u=106: U is not the previous diff's u + 1 = 106 (goes back)",
        id="spot overlap",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("futures", "diffs", "why"), GAPS)
def test_a_gap_fails_the_import_naming_file_line_ids_and_why(
    tmp_path: Path, futures: bool, diffs: list[object], why: str
) -> None:
    lines = [_line(1, _snap(100, E0))] + [_line(i + 2, d) for i, d in enumerate(diffs)]
    with pytest.raises(SequenceGapError) as err:
        _run(tmp_path, lines, futures=futures)
    line = len(diffs) + 1
    assert str(err.value) == (
        f"{tmp_path / 'x.gz'}:{line}: {why}; the book would miss updates (--allow-gaps "
        "imports it anyway)"
    )
    assert not (tmp_path / "s.h5").exists()


def test_allowed_gap_is_reported_stored_and_resynced_at_the_next_snapshot(
    tmp_path: Path,
) -> None:
    lines = [
        _line(1, _diff(5, 9, E0, [["10.00", "1"]], [])),  # covered by the snapshot
        _line(2, _diff(10, 12, E0 + 1, [["10.01", "2"]], [])),  # bridges L + 1 = 11
        _line(3, {"lastUpdateId": 10, "bids": [["10.00", "5"]], "asks": [["10.05", "3"]]}),
        _line(4, _diff(13, 14, E0 + 2, [], [["10.04", "1"]])),
        _line(5, _diff(16, 17, E0 + 3, [], [["10.03", "1"]])),  # gap (15 missing)
        _line(6, _diff(18, 19, E0 + 4, [], [["10.02", "1"]])),  # dropped: waits for a snapshot
        _line(7, _diff(20, 21, E0 + 5, [], [["10.02", "2"]])),  # bridges the next snapshot
        _line(8, {"lastUpdateId": 20, "bids": [["10.00", "5"]], "asks": [["10.03", "3"]]}),
    ]
    store, stats = _run(tmp_path, lines, futures=False, allow_gaps=True)
    assert (stats.diffs_applied, stats.diffs_covered, stats.gaps, stats.diffs_dropped) == (
        3, 1, 1, 2,
    )  # fmt: skip
    assert [str(g) for g in stats.gap_list] == [
        f"{tmp_path / 'x.gz'}:5: depth diff U=16 u=17: U is not the previous diff's u + 1 = 15 "
        "(updates 15..15 are missing)"
    ]
    with TickStore(store) as s:
        l2 = s.read("XYZ", "20240808", "l2")
        gaps = day_gaps(s, "XYZ", "20240808")
    assert l2["seq"].tolist() == [10, 10, 10, 12, 14, 20, 20, 20, 21]
    assert l2["kind"].tolist() == [L2_CLEAR, 0, 0, 0, 0, L2_CLEAR, 0, 0, 0]
    assert l2["ts"][0] == (E0 + 1) * 1_000_000  # the snapshot is stamped at its first diff
    assert gaps == [{"ts": (E0 + 3) * 1_000_000, "until": (E0 + 5) * 1_000_000, "after": 14,
                     "U": 16, "u": 17, "pu": -1,
                     "reason": "U is not the previous diff's u + 1 = 15 (updates 15..15 are "
                     "missing)", "file": str(tmp_path / "x.gz"), "line": 5}]  # fmt: skip


def test_repeated_diff_is_skipped_and_counted_not_a_gap(tmp_path: Path) -> None:
    d = _fdiff(101, 105, 100, E0 + 1, [["10.01", "1"]], [])
    lines = [
        _line(1, _snap(100, E0)),
        _line(2, d),
        _line(3, d),
        _line(4, _fdiff(106, 107, 105, E0 + 2, [], [["10.06", "1"]])),
    ]
    store, stats = _run(tmp_path, lines, futures=True)
    assert (stats.diffs_applied, stats.duplicates, stats.gaps) == (2, 1, 0)
    assert _seqs(store) == [100, 100, 105, 107]


def test_diffs_wholly_before_the_snapshot_are_covered_not_dropped(tmp_path: Path) -> None:
    lines = [_line(i + 1, _fdiff(10 * i, 10 * i + 9, 10 * i - 1, E0, [], [])) for i in range(5)]
    lines += [_line(6, _snap(50, E0)), _line(7, _fdiff(50, 52, 49, E0 + 1, [], []))]
    _store, stats = _run(tmp_path, lines, futures=True)
    assert (stats.diffs_covered, stats.diffs_applied, stats.diffs_dropped) == (5, 1, 0)


def test_diffs_without_any_snapshot_fail_unless_gaps_are_allowed(tmp_path: Path) -> None:
    lines = [_line(1, _diff(10, 12, E0, [], [])), _line(2, _diff(13, 14, E0 + 1, [], []))]
    with pytest.raises(SequenceGapError, match="no depth snapshot in the input: 2 diffs"):
        _run(tmp_path, lines, futures=False)
    _store, stats = _run(tmp_path, lines, futures=False, allow_gaps=True)
    assert (stats.gaps, stats.diffs_dropped) == (1, 2)


@pytest.mark.parametrize(
    ("futures", "msg"),
    [
        (False, "column pu: '9' is a USD-M futures field: use --futures"),
        (True, "column pu: '' is missing: a spot recording? (import it without --futures)"),
    ],
)
def test_spot_and_futures_recordings_are_told_apart(
    tmp_path: Path, futures: bool, msg: str
) -> None:
    diff = _diff(10, 12, E0, [], []) if futures else _fdiff(10, 12, 9, E0, [], [])
    lines = [_line(1, _snap(10, E0)), _line(2, diff)]
    with pytest.raises(ImportRowError, match=re.escape(msg)):
        _run(tmp_path, lines, futures=futures)


def _real_lines(path: Path, n: int) -> list[bytes]:
    with gzip.open(path, "rb") as fh:
        return [fh.readline() for _ in range(n)]


def test_real_usdm_snapshot_ending_exactly_at_a_diff_keeps_every_later_diff(
    tmp_path: Path,
) -> None:
    """The issue's case on real data: a snapshot whose lastUpdateId is a diff's u.

    The first 30,000 lines of the shared USD-M recording are replayed (by the Binance rules,
    here in plain Python) up to the 200th diff; the book then is a snapshot with
    ``lastUpdateId`` = that diff's ``u``. A recording of that diff, this snapshot and the
    following lines must apply every later diff, and the stored book must equal every
    ``bookTicker`` quote with a diff's update id.
    """
    src = DATA / "binance_usdm_btcusdt_2024-08-08" / "btcusdt_20240808.gz"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    lines = _real_lines(src, 30000)
    msgs = [json.loads(ln.partition(b" ")[2]) for ln in lines]
    snap_at = next(i for i, m in enumerate(msgs) if "lastUpdateId" in m)
    book: dict[str, dict[str, str]] = {"bids": {}, "asks": {}}
    for side in ("bids", "asks"):
        book[side] = dict(msgs[snap_at][side])
    last = int(msgs[snap_at]["lastUpdateId"])
    applied, cut = 0, -1
    for i, m in enumerate(msgs):
        d = m.get("data", {})
        if "@depth" not in m.get("stream", "") or int(d["u"]) < last:
            continue
        for side, key in (("bids", "b"), ("asks", "a")):
            for p, q in d[key]:
                if float(q) == 0:
                    book[side].pop(p, None)
                else:
                    book[side][p] = q
        applied += 1
        if applied == 200:
            cut = i
            break
    bridge = msgs[cut]["data"]
    snap = {"lastUpdateId": bridge["u"], "E": bridge["E"], "T": bridge["T"],
            "bids": sorted(book["bids"].items(), key=lambda x: -float(x[0]))[:1000],
            "asks": sorted(book["asks"].items(), key=lambda x: float(x[0]))[:1000]}  # fmt: skip
    head = lines[cut].split(b" ", 1)[0].decode()
    out = [lines[cut], f"{head} {json.dumps(snap)}\n".encode(), *lines[cut + 1 :]]
    path = tmp_path / "cut.gz"
    with gzip.open(path, "wb") as fh:
        fh.writelines(out)
    later = sum(1 for m in msgs[cut + 1 :] if "@depth" in m.get("stream", ""))
    store = tmp_path / "b.h5"
    _result, stats = import_binance(
        [path], store, "BTCUSDT", tick_size="0.1", lot_size="0.001", futures=True
    )
    assert (stats.diffs_applied, stats.diffs_dropped, stats.gaps) == (1 + later, 0, 0)
    assert later > 1500
    checks, mismatches = rebuilt_touch_checks(store, "BTCUSDT")
    assert mismatches == 0
    assert checks > 100


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


def test_cli_gap_is_one_line_exit_2_and_allow_gaps_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        _line(1, _snap(100, E0)),
        _line(2, _fdiff(101, 105, 100, E0 + 1, [], [])),
        _line(3, _fdiff(108, 110, 106, E0 + 2, [], [["10.06", "1"]])),
    ]
    src = _write(tmp_path / "x.gz", lines)
    store = tmp_path / "s.h5"
    argv = [
        "binance",
        str(src),
        "--store",
        str(store),
        "--symbol",
        "XYZ",
        "--futures",
        "--tick-size",
        "0.01",
        "--lot-size",
        "1",
        "--quiet",
    ]
    assert cli_main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"qwconsole import: error: {src}:3: depth diff U=108 u=110 pu=106: pu 106 is not the "
        "previous diff's u 105 (skips updates); the book would miss updates (--allow-gaps "
        "imports it anyway); nothing imported\n"
    )
    assert not store.exists()
    assert cli_main([*argv, "--allow-gaps"]) == 0
    out, err = capsys.readouterr()
    assert "1 diffs applied, 0 covered by a snapshot, 0 repeated, 1 dropped, 1 gaps" in err
    assert f"  gap: {src}:3: depth diff U=108 u=110 pu=106: pu 106 is not" in err
    with TickStore(store) as s:
        assert [g["u"] for g in day_gaps(s, "XYZ", "20240808")] == [110]
