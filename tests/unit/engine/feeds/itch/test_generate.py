# SPDX-License-Identifier: MIT
"""The synthetic ITCH day: repeatable, of the requested size, and consistent for the books."""

import io
from pathlib import Path

import numpy as np
import pytest

from engine.feeds.itch.book import ItchBooks
from engine.feeds.itch.decode import decode_file, decode_raw
from engine.feeds.itch.generate import generate_bytes, generate_day, parse_size, write_day


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_bytes() -> None:
    a = generate_bytes(300_000, n_stocks=20, seed=5)
    assert a == generate_bytes(300_000, n_stocks=20, seed=5)
    assert a != generate_bytes(300_000, n_stocks=20, seed=6)


def test_chunked_writing_gives_the_bytes_of_one_piece() -> None:
    f = io.BytesIO()
    summary = write_day(f, 200_000, n_stocks=30, seed=9, chunk=4096)
    assert f.getvalue() == generate_bytes(200_000, n_stocks=30, seed=9)
    assert summary.bytes == len(f.getvalue())


@pytest.mark.parametrize("size", [50_000, 1_000_000])
def test_the_file_has_the_requested_size_within_one_message(size: int) -> None:
    data = generate_bytes(size, n_stocks=25, seed=1)
    assert abs(len(data) - size) <= 50


def test_a_day_opens_and_closes_with_its_system_events_and_a_directory_per_stock() -> None:
    data = generate_bytes(400_000, n_stocks=40, seed=2)
    d = decode_raw(data)
    assert [chr(c[0]) for c in d["S"]["event_code"]] == list("OSQMEC")
    assert sorted(d["R"]["stock_locate"].tolist()) == list(range(1, 41))
    assert set(d["H"]["trading_state"].tolist()) == {b"T"}
    assert d["Q"].shape[0] == 40
    ts = np.concatenate([d[t][["seq", "timestamp"]] for t in d.counts()])
    ts = ts[np.argsort(ts["seq"])]
    assert np.all(np.diff(ts["timestamp"]) >= 0)
    counts = d.counts()
    flow = sum(counts[t] for t in "AFDUXECP")
    # the mix: adds and deletes dominate, replaces, cancels and executions follow
    assert 0.38 < (counts["A"] + counts["F"]) / flow < 0.52
    assert 0.28 < counts["D"] / flow < 0.42
    assert 0.04 < counts["U"] / flow < 0.12
    assert all(counts[t] > 0 for t in "FXECP")


@pytest.mark.parametrize("seed", [3, 4])
def test_every_book_of_a_generated_day_stays_consistent(seed: int) -> None:
    data = generate_bytes(2_000_000, n_stocks=60, seed=seed)
    books = ItchBooks(capacity=64, level_capacity=64)
    books.apply_raw(data)
    c = books.counters()
    assert sum(c.unknown.values()) == 0
    assert (c.duplicate_adds, c.duplicate_replaces, c.over_executions, c.over_cancels) == (
        0, 0, 0, 0,
    )  # fmt: skip
    assert books.check() == []
    assert books.crossed_stocks().tolist() == []
    assert books.last_system_event == "C"
    assert all(books.trading_state(s) == "T" for s in (1, 30, 60))
    assert books.symbol(1) == "AAAAB"


def test_resting_orders_at_the_close_match_the_generators_count(tmp_path: Path) -> None:
    p = tmp_path / "day.itch"
    summary = generate_day(p, 500_000, n_stocks=10, seed=8)
    assert p.stat().st_size == summary.bytes
    books = ItchBooks()
    assert books.apply_file(p) == summary.messages == decode_file(p).n_messages
    assert books.n_orders == summary.orders_resting


def test_sizes_parse_and_bad_sizes_are_named() -> None:
    assert parse_size("10GB") == 10_000_000_000
    assert parse_size("512MB") == 512_000_000
    assert parse_size("1.5GiB") == int(1.5 * 1024**3)
    assert parse_size("1000") == 1000
    for bad in ("", "ten", "10XB", "-5MB", "0GB"):
        with pytest.raises(ValueError, match="is not a size"):
            parse_size(bad)


def test_a_size_too_small_for_the_open_and_close_is_named() -> None:
    with pytest.raises(ValueError, match="cannot hold the open and close of 8000 stocks"):
        generate_bytes(10_000, n_stocks=8000)
    with pytest.raises(ValueError, match="n_stocks: must be in"):
        generate_bytes(10_000, n_stocks=0)
