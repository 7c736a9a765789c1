# SPDX-License-Identifier: MIT
"""Generic CSV, Databento DBN and LOBSTER importers: real files, exact values, bad rows.

Real files come from ``../shared/data`` (skipped where absent). No LOBSTER file is shared, so
:func:`make_lobster` writes a pair in the documented LOBSTER format from a simulated book.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.book.l3 import L3Book
from engine.tickstore.csv_import import CsvMapping, import_csv
from engine.tickstore.days import day_start_ns
from engine.tickstore.dbn import import_dbn
from engine.tickstore.importing import ImportConflictError, ImportRowError, scaled
from engine.tickstore.lobster import import_lobster
from engine.tickstore.schema import to_l3_events
from engine.tickstore.store import TickStore
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_EXECUTE, SELL

DATA = Path(__file__).resolve().parents[5] / "shared" / "data"
TRUEFX = DATA / "truefx_usdjpy_2013-01-01" / "usdjpy-ticks.csv"
SPOT_TRADES = DATA / "binance_spot_btcusdt_2024-08-08" / "trades.csv"
USDM_QUOTES = DATA / "binance_usdm_btcusdt_2024-08-08" / "quotes_bbo.csv.gz"
ES_MBO = DATA / "cme_globex_esh4_mbo_2023-12-25" / "esh4-glbx-mdp3-20231225.mbo.dbn.zst"
ES_MBP1 = DATA / "cme_globex_esu4_mbp1_2024-07-01" / "esu4-glbx-mdp3-20240701T2358.mbp-1.dbn.zst"
ES_MBP1_CSV = ES_MBP1.with_name("esu4-glbx-mdp3-20240701T2358.mbp-1.csv")


def need(*paths: Path) -> None:
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        pytest.skip(f"real data not available: {', '.join(missing)}")


def test_scaled_is_exact() -> None:
    assert scaled("61583.22") == 61_583_220_000_000
    assert scaled("-0.000000001") == -1
    assert scaled("1.2500000000") == 1_250_000_000
    assert scaled(".5") == 500_000_000
    for bad in ("1e5", "", "1.2.3", "abc", "1.0000000001", "."):
        assert scaled(bad) is None


# ------------------------------------------------------------------------------ CSV
def test_truefx_quotes_through_a_mapping(tmp_path: Path) -> None:
    need(TRUEFX)
    store = tmp_path / "fx.h5"
    mapping = CsvMapping.parse("bbo", "ts=timestamp:iso,bid_px=bid,ask_px=ask")
    result = import_csv(
        [TRUEFX], store, "USD/JPY", mapping, tick_size="0.001", lot_size="1", venue="TRUEFX"
    )
    assert result.rows == {("USD/JPY", "20130101", "bbo"): 1000}
    text = TRUEFX.read_text().splitlines()[1:]
    with TickStore(store) as s:
        q = s.read("USD/JPY", "20130101", "bbo")
    first = text[0].split(",")  # 2013-01-01 22:00:00.295000+00:00,86.655,86.728
    assert q["ts"][0] == int(np.datetime64("2013-01-01T22:00:00.295", "ns").astype(np.int64))
    assert (q["bid_px"][0], q["ask_px"][0]) == (86655, 86728)
    assert first[1:] == ["86.655", "86.728"]
    odd = next(i for i, line in enumerate(text) if line.startswith("2013-01-01 22:09:27+00:00"))
    assert q["ts"][odd] == int(np.datetime64("2013-01-01T22:09:27", "ns").astype(np.int64))
    assert (q["ts_recv"] == q["ts"]).all()
    assert (q["seq"] == -1).all()
    assert (q["bid_px"] <= q["ask_px"]).all()  # one locked quote, never crossed
    assert q["bid_px"].min() == 86655
    assert q["ask_px"].max() == 86859


def test_binance_trades_csv_and_gzip_quotes(tmp_path: Path) -> None:
    need(SPOT_TRADES, USDM_QUOTES)
    store = tmp_path / "b.h5"
    m = CsvMapping.parse(
        "trades",
        "ts=trade_ts_ms:ms,ts_recv=timestamp,px=price,qty=size,trade_id,side=buyer_is_maker:maker",
    )
    r = import_csv([SPOT_TRADES], store, "BTCUSDT", m, tick_size="0.01", lot_size="0.00000001")
    assert r.total_rows == 9757
    with TickStore(store) as s:
        t = np.concatenate([s.read("BTCUSDT", d, "trades") for d in s.days("BTCUSDT")])
    rows = [line.split(",") for line in SPOT_TRADES.read_text().splitlines()[1:]]
    assert t["trade_id"].tolist() == [int(x[3]) for x in rows]
    assert t["px"].tolist() == [round(float(x[4]) * 100) for x in rows]
    assert t["side"].tolist() == [SELL if x[7] == "1" else BUY for x in rows]
    assert t["qty"][0] == 2_000_000  # 0.02 BTC in 1e-8 lots
    m = CsvMapping.parse(
        "bbo",
        "ts=exch_ts_ms:ms,ts_recv=timestamp,bid_px=bid_price,"
        "bid_qty=bid_size,ask_px=ask_price,ask_qty=ask_size,seq=update_id",
    )
    r = import_csv([USDM_QUOTES], store, "BTCUSDT-PERP", m, tick_size="0.1", lot_size="0.001")
    with gzip.open(USDM_QUOTES, "rt") as fh:
        n_lines = sum(1 for _ in fh) - 1
    assert r.total_rows + len(r.skipped) == n_lines


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


GOOD = "time,price,size\n1000,1.25,3\n2000,1.50,4\n"


@pytest.mark.parametrize(
    ("body", "line", "column", "value", "reason"),
    [
        ("3000,1.255,1\n", 4, "price", "1.255", "not a multiple of the tick size 0.05"),
        ("3000,abc,1\n", 4, "price", "abc", "not a number"),
        ("3000,1.25\n", 4, "size", "3000,1.25", "missing"),
        ("30x0,1.25,1\n", 4, "time", "30x0", "not a number"),
        ("1500,1.25,1\n", 4, "time", "1500", "before the previous row's time"),
        ("3000,1.25,1.5\n", 4, "size", "1.5", "not a multiple of the lot size 1"),
    ],
)
def test_bad_row_stops_with_file_line_column_value(
    tmp_path: Path, body: str, line: int, column: str, value: str, reason: str
) -> None:
    src = write(tmp_path / "in.csv", GOOD + body + "4000,1.30,1\n")
    store = tmp_path / "s.h5"
    m = CsvMapping.parse("trades", "ts=time:s,px=price,qty=size")
    with pytest.raises(ImportRowError) as err:
        import_csv([src], store, "X", m, tick_size="0.05", lot_size="1")
    bad = err.value.bad
    assert (bad.file, bad.line, bad.column) == (str(src), line, column)
    assert bad.value.startswith(value)
    assert reason in bad.reason
    assert not store.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]  # no staging file left
    r = import_csv([src], store, "X", m, tick_size="0.05", lot_size="1", skip_bad_rows=True)
    assert [b.line for b in r.skipped] == [line]
    with TickStore(store) as s:
        assert s.read("X", "19700101", "trades")["ts"].tolist() == [
            1000 * 10**9,
            2000 * 10**9,
            4000 * 10**9,
        ]


def test_a_kind_is_added_to_a_stored_day_and_replacing_one_keeps_the_others(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.h5"
    trades = CsvMapping.parse("trades", "ts=time:s,px=price,qty=size")
    bbo = CsvMapping.parse("bbo", "ts=time:s,bid_px=bid,ask_px=ask")
    import_csv(
        [write(tmp_path / "t.csv", GOOD)], store, "X", trades, tick_size="0.05", lot_size="1"
    )
    quotes = "time,bid,ask\n1000,1.00,1.05\n3000,1.05,1.10\n"
    import_csv([write(tmp_path / "q.csv", quotes)], store, "X", bbo, tick_size="0.05", lot_size="1")
    with TickStore(store) as s:
        assert s.kinds("X", "19700101") == ["trades", "bbo"]
        before = s.read("X", "19700101", "trades")
        assert s.read("X", "19700101", "bbo")["bid_px"].tolist() == [20, 21]
    with pytest.raises(
        ImportConflictError,
        match=re.escape(
            "already holds bbo (use --replace to overwrite it; other kinds are added to the day)"
        ),
    ):
        import_csv(
            [write(tmp_path / "q.csv", quotes)], store, "X", bbo, tick_size="0.05", lot_size="1"
        )
    again = "time,bid,ask\n2000,0.95,1.00\n"
    import_csv(
        [write(tmp_path / "r.csv", again)],
        store,
        "X",
        bbo,
        tick_size="0.05",
        lot_size="1",
        replace=True,
    )
    with TickStore(store) as s:
        np.testing.assert_array_equal(s.read("X", "19700101", "trades"), before)
        assert s.read("X", "19700101", "bbo")["bid_px"].tolist() == [19]
        assert s.read("X", "19700101", "bbo", 2000 * 10**9, 2001 * 10**9).shape == (1,)
    with pytest.raises(
        ImportConflictError,
        match=re.escape("stored with tick size 0.05 and lot size 1, not 0.01 and 1"),
    ):
        import_csv(
            [write(tmp_path / "q.csv", quotes)],
            store,
            "X",
            bbo,
            tick_size="0.01",
            lot_size="1",
            replace=True,
        )
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_existing_days_are_a_conflict_unless_replaced_and_other_days_merge(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.h5"
    m = CsvMapping.parse("trades", "ts=time:s,px=price,qty=size")
    import_csv([write(tmp_path / "a.csv", GOOD)], store, "X", m, tick_size="0.05", lot_size="1")
    with pytest.raises(ImportConflictError, match="X/19700101 already holds trades"):
        import_csv([write(tmp_path / "b.csv", GOOD)], store, "X", m, tick_size="0.05", lot_size="1")
    day2 = "time,price,size\n90000,2.00,1\n"
    import_csv([write(tmp_path / "c.csv", day2)], store, "X", m, tick_size="0.05", lot_size="1")
    import_csv([write(tmp_path / "d.csv", GOOD)], store, "Y", m, tick_size="0.05", lot_size="1")
    import_csv(
        [write(tmp_path / "e.csv", "time,price,size\n10,9.00,2\n")],
        store,
        "X",
        m,
        tick_size="0.05",
        lot_size="1",
        replace=True,
    )
    with TickStore(store) as s:
        assert s.instruments() == ["X", "Y"]
        assert s.days("X") == ["19700101", "19700102"]
        assert s.read("X", "19700101", "trades")["px"].tolist() == [180]
        assert s.read("Y", "19700101", "trades").shape == (2,)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_mapping_errors_are_specific(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bbo rows need ask_px"):
        CsvMapping.parse("bbo", "ts,bid_px=bid")
    with pytest.raises(ValueError, match="no field 'price'"):
        CsvMapping.parse("trades", "ts,price,qty")
    with pytest.raises(ValueError, match="conversion 'hours'"):
        CsvMapping.parse("trades", "ts=t:hours,px,qty")
    src = write(tmp_path / "in.csv", GOOD)
    m = CsvMapping.parse("trades", "ts=when:s,px=price,qty=size")
    with pytest.raises(ImportRowError, match=r"when.*has no such column"):
        import_csv([src], tmp_path / "s.h5", "X", m, tick_size="0.05", lot_size="1")
    m = CsvMapping.parse("trades", "ts=#0:s,px=#1,qty=@7", header=False)
    r = import_csv(
        [write(tmp_path / "n.csv", "5,1.00\n6,1.05\n")],
        tmp_path / "s.h5",
        "X",
        m,
        tick_size="0.05",
        lot_size="1",
    )
    assert r.total_rows == 2
    with TickStore(tmp_path / "s.h5") as s:
        t = s.read("X", "19700101", "trades")
    assert t["qty"].tolist() == [7, 7]
    assert t["px"].tolist() == [20, 21]


# ------------------------------------------------------------------------------ DBN
def test_dbn_mbo_rebuilds_the_cme_book(tmp_path: Path) -> None:
    need(ES_MBO)
    store = tmp_path / "es.h5"
    calls: list[tuple[int, int, int]] = []
    r = import_dbn(
        [ES_MBO],
        store,
        tick_size="0.25",
        venue="GLBX",
        progress=lambda done, total, rows: calls.append((done, total, rows)),
    )
    size = ES_MBO.stat().st_size
    assert calls[-1] == (size, size, 68_793)  # records read (+ its symbol mapping), not 0
    assert r.rows == {("ESH4", "20231225", "mbo"): 59_448, ("ESH4", "20231225", "trades"): 2_973}
    with TickStore(store) as s:
        mbo = s.read("ESH4", "20231225", "mbo")
        trades = s.read("ESH4", "20231225", "trades")
        assert s.info("ESH4", "20231225").venue == "GLBX"
    assert int(trades["qty"].sum()) == 9_892
    assert (mbo["ts"][:8725] == day_start_ns("20231225")).all()  # the snapshot, at ts_recv
    ev = to_l3_events(mbo)
    lo, hi = int(ev["px"].min()), int(ev["px"].max())
    book = L3Book(lo, hi - lo + 1, capacity=1 << 14)
    book.apply(ev)
    assert (book.unknown, book.duplicates) == (0, 0)
    assert book.n_orders == 11_217
    assert book.best_bid() == (4810 * 4, book.best_bid()[1])  # type: ignore[index]
    assert book.best_ask() == (4810 * 4 + 1, book.best_ask()[1])  # type: ignore[index]


def test_dbn_mbp1_gives_quotes_and_trades_equal_to_the_vendor_csv(tmp_path: Path) -> None:
    need(ES_MBP1, ES_MBP1_CSV)
    store = tmp_path / "es.h5"
    r = import_dbn([ES_MBP1], store, symbol="ES", tick_size="0.25")
    with TickStore(store) as s:
        days = s.days("ES")
        bbo = np.concatenate([s.read("ES", d, "bbo") for d in days])
        trades = np.concatenate([s.read("ES", d, "trades") for d in days])
    rows = [line.split(",") for line in ES_MBP1_CSV.read_text().splitlines()]
    head, rows = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(head)}
    t_rows = [x for x in rows if x[col["action"]] == "T"]
    assert trades.shape[0] == len(t_rows) == 120
    assert trades["px"].tolist() == [round(float(x[col["price"]]) * 4) for x in t_rows]
    assert trades["qty"].tolist() == [int(x[col["size"]]) for x in t_rows]
    tops = [
        tuple(
            round(float(x[col[c]]) * 4) if "px" in c else int(x[col[c]])
            for c in ("bid_px_00", "bid_sz_00", "ask_px_00", "ask_sz_00")
        )
        for x in rows
    ]
    changes = [t for i, t in enumerate(tops) if i == 0 or t != tops[i - 1]]
    got = [tuple(int(v) for v in q) for q in bbo[["bid_px", "bid_qty", "ask_px", "ask_qty"]]]
    assert got == changes
    assert sum(n for (_s, _d, kind), n in r.rows.items() if kind == "bbo") == len(changes)


def test_dbn_price_off_the_tick_grid_is_a_bad_row(tmp_path: Path) -> None:
    need(ES_MBP1)
    with pytest.raises(ImportRowError, match=r"price.*not a multiple of the tick size 0\.5"):
        import_dbn([ES_MBP1], tmp_path / "es.h5", tick_size="0.5")
    assert not (tmp_path / "es.h5").exists()


# --------------------------------------------------------------------------- LOBSTER
def make_lobster(
    folder: Path, n: int, levels: int = 5, seed: int = 7
) -> tuple[Path, Path, list[int]]:
    """Write a LOBSTER pair (documented format) from a simulated book; return the types.

    Prices are dollars x 10000 on a 0.01 grid; times seconds after midnight with ns.
    """
    rng = np.random.default_rng(seed)
    orders: dict[int, list[int]] = {}  # id -> [direction, price, size]
    mid = 5_850_000
    msgs, books, types = [], [], []
    t = 34_200 * 10**9
    next_id = 1000
    for i in range(n):
        t += int(rng.integers(1, 5_000_000))
        r = rng.random()
        if i == n // 2:
            kind, oid, size, px, d = 7, 0, 0, -1, -1  # halt
        elif i % 97 == 50:
            kind, oid, size, px, d = 5, 0, 10, mid + 100, -1  # hidden execution
        elif not orders or r < 0.55:
            d = 1 if rng.random() < 0.5 else -1
            px = mid - d * 100 * int(rng.integers(1, 9))
            size = int(rng.integers(1, 20)) * 100
            kind, oid = 1, next_id
            next_id += 1
            orders[oid] = [d, px, size]
        else:
            oid = int(rng.choice(list(orders)))
            d, px, left = orders[oid]
            kind = 2 if r < 0.7 else 3 if r < 0.85 else 4
            size = left if kind == 3 else max(1, left // 2)
            if kind == 4 and size == left:
                size = left
            orders[oid][2] -= size
            if orders[oid][2] == 0:
                del orders[oid]
        msgs.append(f"{t // 10**9}.{t % 10**9:09d},{kind},{oid},{size},{px},{d}")
        types.append(kind)
        asks: dict[int, int] = {}
        bids: dict[int, int] = {}
        for od, opx, osz in orders.values():
            side = bids if od == 1 else asks
            side[opx] = side.get(opx, 0) + osz
        row = []
        a_lv = sorted(asks.items())[:levels]
        b_lv = sorted(bids.items(), reverse=True)[:levels]
        for j in range(levels):
            row += [*(a_lv[j] if j < len(a_lv) else (9_999_999_999, 0))]
            row += [*(b_lv[j] if j < len(b_lv) else (-9_999_999_999, 0))]
        books.append(",".join(map(str, row)))
    m = folder / f"XYZ_2012-06-21_34200000_57600000_message_{levels}.csv"
    b = folder / f"XYZ_2012-06-21_34200000_57600000_orderbook_{levels}.csv"
    m.write_text("\n".join(msgs) + "\n")
    b.write_text("\n".join(books) + "\n")
    return m, b, types


def test_lobster_pair_rebuilds_to_its_own_order_book_file(tmp_path: Path) -> None:
    m, b, types = make_lobster(tmp_path, 3000)
    store = tmp_path / "l.h5"
    r = import_lobster([(m, b)], store, "XYZ", tick_size="0.01")
    assert r.skipped == []
    with TickStore(store) as s:
        assert s.days("XYZ") == ["20120621"]
        mbo = s.read("XYZ", "20120621", "mbo")
        snap = s.read("XYZ", "20120621", "l2_snap")
        trades = s.read("XYZ", "20120621", "trades")
        assert s.info("XYZ", "20120621").n_levels == 5
    kinds = np.array(types)
    assert mbo.shape[0] == int((kinds <= 4).sum())
    assert snap.shape[0] == len(types)
    assert trades.shape[0] == int(((kinds == 4) | (kinds == 5)).sum())
    assert set(mbo["action"].tolist()) == {L3_ADD, L3_CANCEL, L3_EXECUTE}
    assert mbo["ts"][0] > day_start_ns("20120621") + 34_200 * 10**9
    book = L3Book(58_000, 1000)
    bbo = np.zeros((mbo.shape[0], 4), np.int64)
    book.apply(to_l3_events(mbo), bbo)
    assert book.unknown == 0
    lv1 = snap[kinds <= 4]
    want = np.stack(
        [lv1["bid_px"][:, 0], lv1["bid_qty"][:, 0], lv1["ask_px"][:, 0], lv1["ask_qty"][:, 0]],
        axis=1,
    )
    np.testing.assert_array_equal(bbo, want)


def test_lobster_bad_row_names_file_line_and_column(tmp_path: Path) -> None:
    m, b, _ = make_lobster(tmp_path, 50)
    lines = m.read_text().splitlines()
    lines[9] = lines[9].replace(",", ",x", 1)
    m.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportRowError) as err:
        import_lobster([(m, b)], tmp_path / "l.h5", "XYZ", tick_size="0.01")
    assert (err.value.bad.line, err.value.bad.column) == (10, "type")
    r = import_lobster([(m, b)], tmp_path / "l.h5", "XYZ", tick_size="0.01", skip_bad_rows=True)
    assert [x.line for x in r.skipped] == [10]
    with TickStore(tmp_path / "l.h5") as s:
        assert s.read("XYZ", "20120621", "l2_snap").shape[0] == 49


def test_short_lines_and_crlf(tmp_path: Path) -> None:
    src = tmp_path / "short.csv"
    src.write_bytes(b"t,p,q\r\n" + b"".join(b"%d,1,1\r\n" % i for i in range(1, 5000)))
    m = CsvMapping.parse("trades", "ts=t:s,px=p,qty=q")
    r = import_csv([src], tmp_path / "s.h5", "X", m, tick_size="1", lot_size="1")
    assert r.total_rows == 4999
    with TickStore(tmp_path / "s.h5") as s:
        t = np.concatenate([s.read("X", d, "trades") for d in s.days("X")])
    assert t["ts"].tolist() == [i * 10**9 for i in range(1, 5000)]


def write_dbn_trades(path: Path, n: int) -> Path:
    """Write a DBN trades file (zstd) with the databento-dbn encoder."""
    import databento_dbn
    import zstandard

    dbn: Any = databento_dbn  # its stubs type enum members as str

    meta = dbn.Metadata(
        dataset="GLBX.MDP3",
        schema=dbn.Schema.TRADES,
        start=0,
        stype_in=dbn.SType.RAW_SYMBOL,
        stype_out=dbn.SType.INSTRUMENT_ID,
        symbols=["ESZ6"],
        partial=[],
        not_found=[],
        mappings=[],
    )
    sides = [dbn.Side.BID, dbn.Side.ASK, dbn.Side.NONE]
    t0 = day_start_ns("20261201") + 3600 * 10**9
    data = meta.encode() + b"".join(
        bytes(
            dbn.TradeMsg(
                publisher_id=1,
                instrument_id=5,
                ts_event=t0 + i * 1000,
                ts_recv=t0 + i * 1000 + 7,
                price=6_000_250_000_000 + 250_000_000 * (i % 4),
                size=1 + i % 3,
                action=dbn.Action.TRADE,
                side=sides[i % 3],
                depth=0,
                flags=0,
                ts_in_delta=0,
                sequence=100 + i,
            )
        )
        for i in range(n)
    )
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    return path


def test_dbn_trades_schema(tmp_path: Path) -> None:
    src = write_dbn_trades(tmp_path / "t.trades.dbn.zst", 1000)
    r = import_dbn([src], tmp_path / "s.h5", symbol="ESZ6", tick_size="0.25")
    assert r.rows == {("ESZ6", "20261201", "trades"): 1000}
    with TickStore(tmp_path / "s.h5") as s:
        t = s.read("ESZ6", "20261201", "trades")
    assert t["px"][:4].tolist() == [24_001, 24_002, 24_003, 24_004]
    assert t["side"][:3].tolist() == [BUY, SELL, 0]
    assert t["trade_id"][:2].tolist() == [100, 101]
    assert (t["ts_recv"] - t["ts"] == 7).all()


def test_dbn_damaged_files_stop_with_a_clear_error(tmp_path: Path) -> None:
    import zstandard

    src = write_dbn_trades(tmp_path / "t.trades.dbn.zst", 10)
    raw = src.read_bytes()
    src.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ImportRowError, match=r"cannot be decoded \(the zstd data ends inside"):
        import_dbn([src], tmp_path / "s.h5", tick_size="0.25")
    plain = tmp_path / "t.trades.dbn"
    plain.write_bytes(zstandard.ZstdDecompressor().decompress(raw)[:-5])
    with pytest.raises(ImportRowError) as err:
        import_dbn([plain], tmp_path / "s.h5", tick_size="0.25")
    assert err.value.bad.line == 11  # records 1-9 and the metadata decoded; the 10th is cut
    assert "ends inside a record (43 bytes left)" in err.value.bad.reason
    assert not (tmp_path / "s.h5").exists()


def test_a_conflict_found_at_commit_leaves_no_staging_file(tmp_path: Path) -> None:
    from engine.tickstore.importing import Staging

    store = tmp_path / "s.h5"
    m = CsvMapping.parse("trades", "ts=time:s,px=price,qty=size")
    src = write(tmp_path / "a.csv", GOOD)
    import_csv([src], tmp_path / "other.h5", "X", m, tick_size="0.05", lot_size="1")
    with TickStore(tmp_path / "other.h5") as o:
        rows = o.read("X", "19700101", "trades")
    staging = Staging(store)
    staging.writer("X", "19700101", tick_size="0.05", lot_size="1", venue="").append("trades", rows)
    import_csv([src], store, "X", m, tick_size="0.05", lot_size="1")  # lands first

    def leave() -> None:
        with staging:
            pass

    with pytest.raises(ImportConflictError, match="already holds trades"):
        leave()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "other.h5", "s.h5"]


@pytest.mark.parametrize(
    ("day", "tz", "midnight_utc_h"),
    [
        ("20120621", None, 4),
        ("20120103", None, 5),
        ("20120621", "UTC", 0),
        ("20120621", "Europe/London", -1),
    ],
)
def test_lobster_times_are_local_to_the_exchange_and_stored_as_utc(
    tmp_path: Path, day: str, tz: str | None, midnight_utc_h: int
) -> None:
    """LOBSTER's seconds after midnight are New York time: EDT midnight is 04:00 UTC, EST 05:00."""
    m, b, _ = make_lobster(tmp_path, 20)
    store = tmp_path / "l.h5"
    kw: dict[str, Any] = {} if tz is None else {"tz": tz}
    import_lobster([(m, b)], store, "XYZ", tick_size="0.01", day=day, **kw)
    whole, frac = m.read_text().split(",", 1)[0].split(".")  # seconds after local midnight
    after_midnight = int(whole) * 10**9 + int(frac.ljust(9, "0"))
    with TickStore(store) as s:
        ts = int(s.read("XYZ", day, "mbo")["ts"][0])
    assert ts == day_start_ns(day) + midnight_utc_h * 3600 * 10**9 + after_midnight


def test_lobster_bad_time_zone_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.tickstore.cli import main

    m, b, _ = make_lobster(tmp_path, 5)
    argv = [
        "lobster",
        str(m),
        str(b),
        "--store",
        str(tmp_path / "l.h5"),
        "--symbol",
        "XYZ",
        "--tick-size",
        "0.01",
        "--tz",
        "New York",
        "--quiet",
    ]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "qwconsole import: error: tz: 'New York' is not a time zone name (e.g. "
        "America/New_York or UTC); nothing imported\n"
    )
    assert not (tmp_path / "l.h5").exists()


def test_round_to_tick_reads_float_artifacts_of_the_real_spot_trades(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared trades written back through floats (%.17g, %g) import as the original."""
    from engine.tickstore.cli import main

    need(SPOT_TRADES)
    lines = SPOT_TRADES.read_text().splitlines()[:2001]
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        f = line.split(",")
        if i % 7:  # float artifacts: 0.020000000000000000, 61837.629999999997
            f[4], f[5] = f"{float(f[4]):.17g}", f"{float(f[5]):.17g}"
        else:  # scientific notation: 6.1837630000e+04, and 2e-05 as Python writes it
            f[4], f[5] = f"{float(f[4]):.10e}", repr(float(f[5]) / 1000 * 1000)
        out.append(",".join(f))
    floats = tmp_path / "floats.csv"
    floats.write_text("\n".join(out) + "\n")
    assert any("e-0" in ln for ln in out)
    assert any(len(ln.split(",")[5]) > 18 for ln in out)
    argv = ["csv", "--symbol", "BTCUSDT", "--kind", "trades", "--mapping",
            "ts=trade_ts_ms:ms,ts_recv=timestamp,px=price,qty=size,trade_id,"
            "side=buyer_is_maker:maker", "--tick-size", "0.01", "--lot-size", "0.00000001",
            "--quiet"]  # fmt: skip
    assert main([*argv, str(floats), "--store", str(tmp_path / "f.h5")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"qwconsole import: error: {floats}:2: column price: '6.1837630000e+04' is not a number"
    )
    assert err.endswith(
        "(--round-to-tick rounds float artifacts such as 2e-06); nothing imported\n"
    )
    cut = tmp_path / "exact.csv"
    cut.write_text("\n".join(lines) + "\n")
    assert main([*argv, str(cut), "--store", str(tmp_path / "e.h5")]) == 0
    assert main([*argv, str(floats), "--store", str(tmp_path / "f.h5"), "--round-to-tick"]) == 0
    with TickStore(tmp_path / "e.h5") as a, TickStore(tmp_path / "f.h5") as b:
        want = a.read("BTCUSDT", "20240808", "trades")
        got = b.read("BTCUSDT", "20240808", "trades")
    assert want.shape[0] == 2000
    np.testing.assert_array_equal(got, want)


def test_round_to_tick_still_refuses_a_price_off_the_grid(tmp_path: Path) -> None:
    src = write(tmp_path / "t.csv", "time,price,size\n1,100.02,3e0\n2,100.005,1\n")
    m = CsvMapping.parse("trades", "ts=time:s,px=price,qty=size")
    with pytest.raises(ImportRowError) as err:
        import_csv(
            [src], tmp_path / "s.h5", "X", m, tick_size="0.01", lot_size="1", round_to_tick=True
        )
    assert str(err.value) == (
        f"{src}:3: column price: '100.005' is more than 1% of the tick size 0.01 off its grid "
        "(not a float artifact)"
    )


def _parquet(tmp: Path) -> Path:
    p = tmp / "t.parquet"  # the format's magic at both ends; no reader is needed to tell
    p.write_bytes(b"PAR1" + bytes(64) + b"PAR1")
    return p


def _bybit(tmp: Path) -> Path:
    p = tmp / "bybit.data"
    p.write_text('{"topic":"orderbook.500.BTCUSDT","type":"snapshot","ts":1,"data":{}}\n')
    return p


def _zip(tmp: Path) -> Path:
    import zipfile

    p = tmp / "depth.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("depth.data", '{"topic":"orderbook.500.BTCUSDT"}\n')
    return p


SPOT_RAW = DATA / "binance_spot_btcusdt_2024-08-08" / "btcusdt_20240808.gz"
ES_ZST = DATA / "cme_globex_esh4_mbo_2023-12-25" / "esh4-glbx-mdp3-20231225.mbo.dbn.zst"
CSV_ARGS = [
    "--symbol",
    "X",
    "--kind",
    "trades",
    "--mapping",
    "ts=a,px=b,qty=c",
    "--tick-size",
    "1",
    "--lot-size",
    "1",
]
BIN_ARGS = ["--symbol", "BTCUSDT", "--tick-size", "0.01", "--lot-size", "0.00000001"]


@pytest.mark.parametrize(
    ("fmt", "args", "make", "said"),
    [
        ("csv", CSV_ARGS, _parquet, "a Parquet file; use `qwconsole import parquet`"),
        (
            "csv",
            CSV_ARGS,
            lambda t: ES_ZST,
            "zstd-compressed data (a .dbn.zst?); use `qwconsole import dbn`",
        ),
        (
            "csv",
            CSV_ARGS,
            lambda t: SPOT_RAW,
            "a recording of JSON messages (<receive ns> "
            "<JSON> lines); use `qwconsole import binance`",
        ),
        ("binance", BIN_ARGS, lambda t: SPOT_TRADES, "delimited text; use `qwconsole import csv`"),
        (
            "binance",
            BIN_ARGS,
            _bybit,
            "Bybit JSON lines (topic/type/data), which are not supported yet",
        ),
        ("binance", BIN_ARGS, _zip, "a zip archive (Bybit's zipped depth is not supported"),
        ("dbn", ["--tick-size", "0.25"], lambda t: SPOT_RAW, "a recording of JSON messages"),
    ],
)
def test_an_importer_says_what_it_was_given_and_which_to_use(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    args: list[str],
    make: Any,
    said: str,
) -> None:
    from engine.tickstore.cli import main

    src = make(tmp_path)
    need(src)
    assert main([fmt, str(src), *args, "--store", str(tmp_path / "s.h5"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"qwconsole import: error: {src}: this is {said}")
    assert err.endswith("; nothing imported\n")
    assert err.count("\n") == 1
    assert not (tmp_path / "s.h5").exists()


def test_parquet_written_from_the_real_trades_imports_as_the_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared spot trades as Parquet (written here by pyarrow, a timestamp column added)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from engine.tickstore.cli import main

    need(SPOT_TRADES)
    cut = tmp_path / "trades.csv"
    cut.write_text("\n".join(SPOT_TRADES.read_text().splitlines()[:3001]) + "\n")
    table = pacsv.read_csv(cut)
    table = table.append_column("time", pc.cast(table["timestamp"], pa.timestamp("ns", "UTC")))
    pq.write_table(table, tmp_path / "trades.parquet", row_group_size=1000)
    common = [
        "--symbol",
        "BTCUSDT",
        "--kind",
        "trades",
        "--tick-size",
        "0.01",
        "--lot-size",
        "0.00000001",
        "--quiet",
    ]
    rest = "px=price,qty=size,trade_id,side=buyer_is_maker:maker"
    assert (
        main(
            [
                "csv",
                str(cut),
                "--store",
                str(tmp_path / "c.h5"),
                *common,
                "--mapping",
                f"ts=trade_ts_ms:ms,ts_recv=timestamp,{rest}",
            ]
        )
        == 0
    )
    pq_argv = ["parquet", str(tmp_path / "trades.parquet"), "--store", str(tmp_path / "p.h5")]
    assert main([*pq_argv, *common, "--mapping", f"ts=trade_ts_ms:ms,ts_recv=time:iso,{rest}"]) == 0
    with TickStore(tmp_path / "c.h5") as c, TickStore(tmp_path / "p.h5") as p:
        want = c.read("BTCUSDT", "20240808", "trades")
        np.testing.assert_array_equal(p.read("BTCUSDT", "20240808", "trades"), want)
    assert want.shape[0] == 3000
    capsys.readouterr()
    assert (
        main(
            [
                "parquet",
                str(cut),
                "--store",
                str(tmp_path / "x.h5"),
                *common,
                "--mapping",
                f"ts=trade_ts_ms:ms,{rest}",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err == (
        f"qwconsole import: error: {cut}: this is delimited text; use `qwconsole import csv` "
        "(or `import lobster` for LOBSTER pairs); nothing imported\n"
    )
