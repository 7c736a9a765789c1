# SPDX-License-Identifier: MIT
"""The HDF5 tick store: layout, batched appends and their checks, range reads, SWMR reading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import engine.tickstore.chunks as chunks_module
from engine.tickstore.chunks import ChunkReader
from engine.tickstore.days import DAY_NS, DayInfo, TickStoreError, day_of, day_start_ns, symbol_key
from engine.tickstore.schema import (
    BBO_DTYPE,
    L2_DELTA_DTYPE,
    SCHEMA_VERSION,
    TRADE_DTYPE,
    l2_snapshot_dtype,
)
from engine.tickstore.store import TickStore

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
            symbol="USD/JPY",
            day=DAY,
            tick_size="0.001",
            lot_size="1",
            venue="TRUEFX",
            rows={"trades": 100_000},
            first_ts=int(a["ts"][0]),
            last_ts=int(a["ts"][-1]),
            n_levels=0,
        )
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
from engine.tickstore.days import day_start_ns
from engine.tickstore.store import TickStore
from engine.tickstore.schema import TRADE_DTYPE
t0 = day_start_ns("20240808")
with TickStore(sys.argv[1], "a", swmr=True, chunk_rows=1000) as s:
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
            early = s.read("X", DAY, "trades", T0 + 10, T0 + n_a)  # loads the chunk index
            np.testing.assert_array_equal(early["trade_id"], np.arange(10, n_a))
            while int(child.stdout.readline()) < n_a + 5000:
                pass
            s.refresh()
            a = s.read("X", DAY, "trades")
            assert a.shape[0] > n_a
            np.testing.assert_array_equal(a["trade_id"], np.arange(a.shape[0]))
            lo, hi = max(0, n_a - 1234), a.shape[0] - 7  # past the index loaded before
            late = s.read("X", DAY, "trades", T0 + lo, T0 + hi)
            np.testing.assert_array_equal(late["trade_id"], np.arange(lo, hi))
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
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        cwd=REPO,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
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


def _expect_ranges(s: TickStore, a: np.ndarray, kind: str = "trades") -> None:
    ts = a["ts"]
    rng = np.random.default_rng(7)
    probes = [None, int(ts[0]), int(ts[-1]), int(ts[-1]) + 1, T0 - 1]
    probes += [int(ts[i]) for i in (999, 1000, 1001, 2000, 4999, 5000) if i < len(ts)]
    probes += [int(x) for x in rng.integers(ts[0] - 10, ts[-1] + 10, 30)]
    for t0 in probes:
        for t1 in probes[:12]:
            i0 = 0 if t0 is None else int(np.searchsorted(ts, t0))
            i1 = len(ts) if t1 is None else int(np.searchsorted(ts, t1))
            assert s.row_range("X", DAY, kind, t0, t1) == (i0, max(i0, i1))
            np.testing.assert_array_equal(s.read("X", DAY, kind, t0, t1), a[i0 : max(i0, i1)])


def test_chunk_index_finds_bounds_and_older_files_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    a = trades(20_500, step=3_000_001)
    a["ts"][990:1010] = a["ts"][990]  # equal times across a chunk boundary
    a["ts"][1010:] += 9
    with TickStore(path, "a", chunk_rows=1000) as s:
        w = s.writer("X", DAY, tick_size="0.01", lot_size="1")
        for i in range(0, 12_000, 777):  # batches that start and end inside chunks
            w.append("trades", a[i : min(i + 777, 12_000)])
            w.flush()
    with h5py.File(path, "r") as f:
        idx = f["X"][DAY]["trades.chunk_ts"]
        assert idx.attrs["chunk_rows"] == 1000
        np.testing.assert_array_equal(idx[:], a["ts"][:12_000:1000])
    # A writer of an older version appends without the index: the rows past it are bisected.
    with h5py.File(path, "a", libver="latest") as f:
        ds = f["X"][DAY]["trades"]
        ds.resize((16_000,))
        ds[12_000:16_000] = a[12_000:16_000]
    with TickStore(path) as s:
        _expect_ranges(s, a[:16_000])
    with TickStore(path, "a", chunk_rows=1000) as s:  # the next append fills the index in
        s.writer("X", DAY, tick_size="0.01", lot_size="1").append("trades", a[16_000:])
    with TickStore(path) as s:
        _expect_ranges(s, a)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["X"][DAY]["trades.chunk_ts"][:], a["ts"][::1000])
    with h5py.File(path, "a") as f:  # a file written before the index existed
        del f["X"][DAY]["trades.chunk_ts"]
    with TickStore(path) as s:
        _expect_ranges(s, a)
        assert s.kinds("X", DAY) == ["trades"]


def test_whole_chunks_decompress_in_place_in_threads_as_hdf5_reads_them(tmp_path: Path) -> None:
    a = trades(64_000, step=1_000)
    with TickStore(tmp_path / "t.h5", "a", chunk_rows=1024) as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").append("trades", a)
    with h5py.File(tmp_path / "t.h5", "r") as f:
        ds = f["X"][DAY]["trades"]
        reader = ChunkReader.of(ds)
        assert reader is not None
        for threads in (1, 2, 3):
            for i0, i1 in ((0, 64_000), (5, 63_999), (1024, 60 * 1024), (100, 900)):
                dest = np.zeros(i1 - i0 + 3, TRADE_DTYPE)
                reader.read(i0, i1, dest, threads=threads)
                np.testing.assert_array_equal(dest[: i1 - i0], a[i0:i1])
                assert not dest[i1 - i0 :].view(np.uint8).any()  # nothing past the range


def test_incompressible_unfiltered_and_non_blosc_chunks_read_back(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    rng = np.random.default_rng(5)
    a = np.zeros(9_000, BBO_DTYPE)
    a["ts"] = T0 + np.arange(9_000) * 1_000
    for field in ("ts_recv", "bid_px", "bid_qty", "ask_px", "ask_qty", "seq"):
        a[field] = rng.integers(-(2**62), 2**62, 9_000)
    with TickStore(path, "a", chunk_rows=1000) as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").append("bbo", a)
    with h5py.File(path, "a") as f:
        ds = f["X"][DAY]["bbo"]
        # A chunk stored unfiltered, as HDF5 does when an optional filter fails on it.
        ds.id.write_direct_chunk((3000,), a[3000:4000].tobytes(), filter_mask=1)
        # Another tool wrote this day's trades with gzip: HDF5 reads them.
        t = trades(5_000)
        f["X"][DAY].create_dataset(
            "trades", data=t, chunks=(700,), maxshape=(None,), compression="gzip"
        )
    with TickStore(path) as s:
        assert s.file["X"][DAY]["bbo"].id.read_direct_chunk((3000,))[0] == 1
        np.testing.assert_array_equal(s.read("X", DAY, "bbo"), a)
        np.testing.assert_array_equal(
            s.read("X", DAY, "bbo", T0 + 1_500_000, T0 + 7_000_000), a[1500:7000]
        )
        _expect_ranges(s, t)


def test_a_damaged_chunk_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    with TickStore(path, "a", chunk_rows=1000) as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").append("trades", trades(5_000))
    with h5py.File(path, "a") as f:
        f["X"][DAY]["trades"].id.write_direct_chunk((2000,), b"\x02\x01\x21\x30" + bytes(60))
    with TickStore(path) as s:
        assert s.read("X", DAY, "trades", T0, T0 + 1_000_000_000).shape == (1000,)
        with pytest.raises(TickStoreError, match=r"/X/20240808/trades chunk 2 does not "):
            s.read("X", DAY, "trades")
        reader = ChunkReader.of(s.file["X"][DAY]["trades"])
        assert reader is not None
        with pytest.raises(TickStoreError, match="chunk 2 does not decompress to 48000 bytes"):
            reader.read(0, 5_000, np.zeros(5_000, TRADE_DTYPE), threads=3)  # in a helper


def test_rows_by_position_read_the_stored_chunks_outside_hdf5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = trades(10_000, step=1_000)
    with TickStore(tmp_path / "t.h5", "a", chunk_rows=1000) as s:
        s.writer("X", DAY, tick_size="0.01", lot_size="1").append("trades", a)
        np.testing.assert_array_equal(s.read_rows("X", DAY, "trades", 10, 20), a[10:20])
        assert s._raw is None  # a writer's chunks may still be in HDF5's cache
    reads: list[tuple[int, int]] = []
    real = chunks_module.RawFile.read

    def counted(self: chunks_module.RawFile, address: int, size: int) -> bytes:
        reads.append((address, size))
        return real(self, address, size)

    monkeypatch.setattr(chunks_module.RawFile, "read", counted)
    with TickStore(tmp_path / "t.h5") as s:
        for i0, i1 in ((0, 10_000), (999, 1001), (2500, 7300), (9990, 12_000), (-5, 3)):
            got = s.read_rows("X", DAY, "trades", i0, i1)
            np.testing.assert_array_equal(got, a[max(i0, 0) : min(i1, 10_000)])
        assert len(reads) >= 10  # every chunk of the whole read came through os.pread
        # Bytes that no longer decompress (a SWMR writer moved the chunk since its address was
        # looked up) are read again through HDF5: the rows are still right.
        monkeypatch.setattr(chunks_module.RawFile, "read", lambda *_: b"\x02\x01" + bytes(40))
        np.testing.assert_array_equal(s.read_rows("X", DAY, "trades", 1500, 4500), a[1500:4500])
        assert s.read_rows("X", DAY, "bbo", 0, 10).dtype == BBO_DTYPE  # a kind not there
