# SPDX-License-Identifier: MIT
"""The HDF5 tick store: layout, batched appends and their checks, range reads, SWMR reading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from engine.tickstore.schema import (
    BBO_DTYPE,
    L2_DELTA_DTYPE,
    SCHEMA_VERSION,
    TRADE_DTYPE,
    l2_snapshot_dtype,
)
from engine.tickstore.store import (
    DAY_NS,
    DayInfo,
    TickStore,
    TickStoreError,
    day_of,
    day_start_ns,
    symbol_key,
)

REPO = Path(__file__).resolve().parents[4]
DAY = "20240808"
T0 = day_start_ns(DAY)


def trades(n: int, start: int = 0, step: int = 1_000_000) -> np.ndarray:
    a = np.zeros(n, TRADE_DTYPE)
    a["ts"] = T0 + (start + np.arange(n)) * step
    a["ts_recv"] = a["ts"] + 7
    a["px"] = 6_000_000 + np.arange(n) % 50
    a["qty"] = 1 + np.arange(n) % 9
    a["trade_id"] = start + np.arange(n)
    a["side"] = np.where(np.arange(n) % 2, 1, -1)
    return a


def test_day_helpers() -> None:
    assert day_start_ns("19700102") == DAY_NS
    assert day_of(T0 + DAY_NS - 1) == DAY
    assert day_of(T0 + DAY_NS) == "20240809"
    for bad in ("2024-08-08", "20241332", "abc", ""):
        with pytest.raises(ValueError, match="YYYYMMDD"):
            day_start_ns(bad)
    assert symbol_key("USD/JPY") == "USD%2FJPY"
    assert symbol_key("50%") == "50%25"
    with pytest.raises(ValueError, match="usable"):
        symbol_key("..")


def test_write_read_roundtrip_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    a = trades(100_000)
    with TickStore(path, "a", chunk_rows=4096) as s:
        w = s.writer("USD/JPY", DAY, tick_size="0.001", lot_size="1", venue="TRUEFX")
        for i in range(0, a.shape[0], 7000):
            w.append("trades", a[i : i + 7000])
        w.close()
    with TickStore(path) as s:
        assert s.instruments() == ["USD/JPY"]
        assert s.days("USD/JPY") == [DAY]
        assert s.days("NOPE") == []
        assert s.kinds("USD/JPY", DAY) == ["trades"]
        got = s.read("USD/JPY", DAY, "trades")
        assert got.dtype == TRADE_DTYPE
        np.testing.assert_array_equal(got, a)
        info = s.info("USD/JPY", DAY)
        assert info == DayInfo(
            symbol="USD/JPY", day=DAY, tick_size="0.001", lot_size="1", venue="TRUEFX",
            rows={"trades": 100_000}, first_ts=int(a["ts"][0]), last_ts=int(a["ts"][-1]),
            n_levels=0,
        )  # fmt: skip
        assert s.read("USD/JPY", DAY, "bbo").dtype == BBO_DTYPE
        assert s.read("USD/JPY", DAY, "bbo").shape == (0,)
        with pytest.raises(KeyError, match="20240809"):
            s.read("USD/JPY", "20240809", "trades")
    with h5py.File(path, "r") as f:  # readable by any HDF5 tool, as documented
        assert f.attrs["schema_version"] == SCHEMA_VERSION
        ds = f["USD%2FJPY"][DAY]["trades"]
        assert ds.chunks == (4096,)
        assert ds.maxshape == (None,)
        assert "32001" in ds._filters  # Blosc


@pytest.mark.parametrize("step", [1, 1_000_000, 3_333_333])
def test_range_reads_match_searchsorted(tmp_path: Path, step: int) -> None:
    a = trades(50_000, step=step)
    a["ts"][1000:1200] = a["ts"][1000]  # a run of equal times across a boundary
    a["ts"][1200:] += 5
    with TickStore(tmp_path / "t.h5", "a", chunk_rows=1000) as s:
        w = s.writer("X", DAY, tick_size="0.01", lot_size="1")
        w.append("trades", a)
        w.flush()
        ts = a["ts"]
        rng = np.random.default_rng(1)
        probes = [None, int(ts[0]), int(ts[1000]), int(ts[-1]), int(ts[-1]) + 1, T0 - 5]
        probes += [int(x) for x in rng.integers(ts[0] - 10, ts[-1] + 10, 40)]
        for t0 in probes:
            for t1 in probes[:8]:
                i0 = 0 if t0 is None else int(np.searchsorted(ts, t0))
                i1 = len(ts) if t1 is None else int(np.searchsorted(ts, t1))
                got = s.read("X", DAY, "trades", t0, t1)
                np.testing.assert_array_equal(got, a[i0 : max(i0, i1)])
        buf = np.zeros(60_000, TRADE_DTYPE)
        got = s.read("X", DAY, "trades", int(ts[5]), int(ts[20_000]), out=buf)
        assert got.base is buf or got.base is buf.base
        np.testing.assert_array_equal(got, a[5:20_000])
        with pytest.raises(ValueError, match="holds 10 rows, the range has 19995"):
            s.read("X", DAY, "trades", int(ts[5]), int(ts[20_000]), out=buf[:10])
        with pytest.raises(ValueError, match="C-contiguous"):
            s.read("X", DAY, "trades", out=np.zeros(60_000, BBO_DTYPE))
        chunks = list(s.iter_chunks("X", DAY, "trades", int(ts[10]), int(ts[45_000]), rows=777))
        assert max(c.shape[0] for c in chunks) == 777
        np.testing.assert_array_equal(np.concatenate(chunks), a[10:45_000])


def test_append_checks_and_keeps_nothing_of_a_bad_batch(tmp_path: Path) -> None:
    with TickStore(tmp_path / "t.h5", "a") as s:
        w = s.writer("X", DAY, tick_size="0.01", lot_size="1")
        w.append("trades", trades(10))
        with pytest.raises(ValueError, match="dtype"):
            w.append("trades", np.zeros(3, BBO_DTYPE))
        with pytest.raises(ValueError, match="not one of"):
            w.append("quotes", trades(3))
        back = trades(5, start=2)
        with pytest.raises(ValueError, match=r"row 0 ts .* before the last stored"):
            w.append("trades", back)
        unsorted = trades(5, start=20)
        unsorted["ts"][3] = unsorted["ts"][1]
        with pytest.raises(ValueError, match=r"row 3 ts \d+ is before row 2"):
            w.append("trades", unsorted)
        late = trades(3, start=20)
        late["ts"][2] = T0 + DAY_NS
        with pytest.raises(ValueError, match=r"row 2 .* on day 20240809, not 20240808"):
            w.append("trades", late)
        w.append("trades", trades(5, start=10))
        w.flush()
        assert s.read("X", DAY, "trades").shape == (15,)
        np.testing.assert_array_equal(s.read("X", DAY, "trades")["trade_id"], np.arange(15))


def test_writer_checks_instrument_attributes(tmp_path: Path) -> None:
    with TickStore(tmp_path / "t.h5", "a") as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").close()
        with pytest.raises(ValueError, match=r"tick_size is 0\.01 in the store, not 0\.1"):
            s.writer("X", DAY, tick_size="0.1", lot_size="1")
        with pytest.raises(ValueError, match="positive"):
            s.writer("Y", DAY, tick_size="-1", lot_size="1")
        with pytest.raises(ValueError, match="decimal"):
            s.writer("Y", DAY, tick_size="abc", lot_size="1")
        s.writer("X", DAY, tick_size="0.010", lot_size="1").close()  # same decimal value
    with TickStore(tmp_path / "t.h5") as s, pytest.raises(TickStoreError, match="read-only"):
        s.writer("X", DAY, tick_size="0.01", lot_size="1")


def test_appends_resume_across_opens_and_snapshots_keep_depth(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    snap = np.zeros(3, l2_snapshot_dtype(5))
    snap["ts"] = T0 + np.arange(3)
    snap["bid_px"][:, 0] = 100
    with TickStore(path, "a") as s:
        w = s.writer("X", DAY, tick_size="0.01", lot_size="1", n_levels=5)
        w.append("trades", trades(4))
        w.append("l2_snap", snap)
    with TickStore(path, "a") as s:
        w = s.writer("X", DAY, tick_size="0.01", lot_size="1")
        assert w.last_ts("trades") == int(trades(4)["ts"][-1])
        with pytest.raises(ValueError, match="before the last stored"):
            w.append("trades", trades(1))
        w.append("trades", trades(2, start=4))
        w.append("l2", np.zeros(0, L2_DELTA_DTYPE))
        with pytest.raises(ValueError, match="5 levels, not 4"):
            s.writer("X", DAY, tick_size="0.01", lot_size="1", n_levels=4)
    with TickStore(path) as s:
        assert s.info("X", DAY).rows == {"trades": 6, "l2_snap": 3}
        assert s.info("X", DAY).n_levels == 5
        got = s.read("X", DAY, "l2_snap")
        assert got.dtype == l2_snapshot_dtype(5)
        np.testing.assert_array_equal(got, snap)


def test_open_errors_are_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(TickStoreError, match="no such tick store"):
        TickStore(tmp_path / "missing.h5")
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not hdf5 at all")
    with pytest.raises(TickStoreError, match="not a readable HDF5 file"):
        TickStore(junk)
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = 1
    with pytest.raises(TickStoreError, match="not a tick store"):
        TickStore(tmp_path / "other.h5")


#: A SWMR writer in a child process: appends trades forever, printing the rows flushed.
WRITER = r"""
import sys, numpy as np
from engine.tickstore.store import TickStore, day_start_ns
from engine.tickstore.schema import TRADE_DTYPE
t0 = day_start_ns("20240808")
with TickStore(sys.argv[1], "a", swmr=True) as s:
    w = s.writer("X", "20240808", tick_size="0.01", lot_size="1")
    n = 0
    while True:
        a = np.zeros(500, TRADE_DTYPE)
        a["ts"] = t0 + np.arange(n, n + 500)
        a["trade_id"] = np.arange(n, n + 500)
        w.append("trades", a)
        w.flush()
        n += 500
        print(n, flush=True)
"""


@pytest.mark.slow
def test_swmr_reader_follows_a_writer_and_a_killed_writer_leaves_a_readable_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.h5"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        first = int(child.stdout.readline())
        with TickStore(path) as s:  # falls back to SWMR reading on its own
            n_a = s.read("X", DAY, "trades").shape[0]
            assert n_a >= first
            while int(child.stdout.readline()) < n_a + 5000:
                pass
            s.refresh()
            a = s.read("X", DAY, "trades")
            assert a.shape[0] > n_a
            np.testing.assert_array_equal(a["trade_id"], np.arange(a.shape[0]))
        seen = int(child.stdout.readline())
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    with TickStore(path) as s:
        a = s.read("X", DAY, "trades")
        assert a.shape[0] >= seen
        np.testing.assert_array_equal(a["trade_id"], np.arange(a.shape[0]))
    with pytest.raises(TickStoreError, match="recover"):
        TickStore(path, "a")
    assert TickStore.recover(path) == 1
    with TickStore(path, "a") as s:
        w = s.writer("X", DAY, tick_size="0.01", lot_size="1")
        w.append("trades", trades(1, start=10**9 // 1_000_000 * 1000))
    with TickStore(path) as s:
        assert s.read("X", DAY, "trades").shape[0] == a.shape[0] + 1


def test_a_reader_does_not_keep_a_writer_out(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    with TickStore(path, "a") as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").append("trades", trades(10))
    code = (
        "import sys\n"
        "from engine.tickstore.store import TickStore\n"
        "from tests.unit.engine.tickstore.test_store import trades\n"
        "with TickStore(sys.argv[1], 'a', swmr=True) as s:\n"
        "    s.writer('X', '20240808', tick_size='0.01', lot_size='1')"
        ".append('trades', trades(5, start=10))\n"
    )
    with TickStore(path) as reader:
        assert reader.read("X", DAY, "trades").shape == (10,)
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)], cwd=REPO, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        reader.refresh()
        np.testing.assert_array_equal(reader.read("X", DAY, "trades")["trade_id"], np.arange(15))


def test_a_store_held_by_a_plain_writer_says_so(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    with TickStore(path, "a") as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").close()
    code = (
        "import sys\n"
        "from engine.tickstore.store import TickStore\n"
        "s = TickStore(sys.argv[1], 'a')\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=REPO, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(TickStoreError, match="another process is writing it"):
            TickStore(path)
        with pytest.raises(TickStoreError, match="another process is writing it"):
            TickStore(path, "a")
    finally:
        child.communicate("", timeout=30)
    with TickStore(path) as s:
        assert s.days("X") == [DAY]
