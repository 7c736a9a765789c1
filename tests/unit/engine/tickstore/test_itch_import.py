# SPDX-License-Identifier: MIT
"""ITCH captures into the tick store: a generated day through real pcap files and HDF5."""

from collections import defaultdict
from datetime import date
from pathlib import Path

import dpkt
import numpy as np
import pytest

from engine.feeds.arbiter import MoldUdp64
from engine.feeds.itch.book import ItchBooks
from engine.feeds.itch.generate import generate_bytes
from engine.tickstore.importing import ImportRowError, day_gaps
from engine.tickstore.itch_import import ItchGapError, import_itch, trading_day_midnight_ns
from engine.tickstore.store import TickStore
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_EXECUTE, SELL
from tests.conftest import SHARED

SESSION = b"TESTSESS01"
DAY = date(2024, 3, 1)


def _messages(raw: bytes) -> list[bytes]:
    out, p = [], 0
    while p < len(raw):
        n = int.from_bytes(raw[p : p + 2], "big")
        out.append(raw[p + 2 : p + 2 + n])
        p += 2 + n
    return out


def _write_pcap(path: Path, msgs: list[bytes], *, per_packet: int = 20, drop: int = -1) -> None:
    """Write ``msgs`` as MoldUDP64 packets in UDP/IPv4/Ethernet frames (packet ``drop`` lost)."""
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for i, at in enumerate(range(0, len(msgs), per_packet)):
            if i == drop:
                continue
            payload = MoldUdp64.packet(SESSION, 1 + at, msgs[at : at + per_packet])
            udp = dpkt.udp.UDP(sport=1, dport=2, data=payload)
            udp.ulen = 8 + len(payload)
            ip = dpkt.ip.IP(src=bytes(4), dst=bytes([233, 54, 12, 1]), p=17, data=udp)
            ip.len = 20 + len(bytes(udp))
            eth = dpkt.ethernet.Ethernet(data=ip, type=dpkt.ethernet.ETH_TYPE_IP)
            w.writepkt(bytes(eth), ts=1_709_300_000 + i * 1e-6)


@pytest.fixture(scope="module")
def day_bytes() -> bytes:
    return generate_bytes(400_000, n_stocks=12, seed=5)


def _replay(rows: np.ndarray) -> dict[tuple[int, int], int]:
    """Replay ``mbo`` rows with a plain dict book: shares per (side, price)."""
    orders: dict[int, list[int]] = {}
    for oid, px, qty, side, action in zip(
        rows["order_id"].tolist(),
        rows["px"].tolist(),
        rows["qty"].tolist(),
        rows["side"].tolist(),
        rows["action"].tolist(),
        strict=True,
    ):
        if action == L3_ADD:
            assert oid not in orders
            orders[oid] = [side, px, qty]
        elif action in (L3_EXECUTE, L3_CANCEL):
            o = orders[oid]
            assert (o[0], o[1]) == (side, px)  # each event carries its order's side and price
            o[2] = 0 if (action == L3_CANCEL and qty == 0) else o[2] - qty
            assert o[2] >= 0
            if o[2] == 0:
                del orders[oid]
    levels: dict[tuple[int, int], int] = defaultdict(int)
    for side, px, qty in orders.values():
        levels[(side, px)] += qty
    return dict(levels)


def test_a_generated_day_imports_into_books_equal_to_the_itch_books(
    tmp_path: Path, day_bytes: bytes
) -> None:
    msgs = _messages(day_bytes)
    cap = tmp_path / "day.pcap"
    _write_pcap(cap, msgs)
    store = tmp_path / "store.h5"
    result, stats = import_itch([cap], store, tick_size="0.0001", day=DAY)
    assert stats.report is not None
    assert not stats.report.gaps
    assert stats.unknown_orders == 0
    books = ItchBooks()
    books.apply_raw(day_bytes)
    midnight = trading_day_midnight_ns(DAY)
    with TickStore(store) as s:
        symbols = s.instruments()
        assert len(symbols) == 12
        trades_total = 0
        for loc in range(1, 13):
            sym = books.symbol(loc)
            assert sym in symbols
            [day] = s.days(sym)
            mbo = s.read(sym, day, "mbo")
            assert (np.diff(mbo["ts"]) >= 0).all()
            assert mbo["ts"][0] >= midnight
            got = _replay(mbo)
            want = {(BUY, int(p)): int(q) for p, q, _n in books.levels(loc, BUY).tolist()}
            want |= {(SELL, int(p)): int(q) for p, q, _n in books.levels(loc, SELL).tolist()}
            assert got == {k: v for k, v in want.items() if v}, sym
            if "trades" in s.kinds(sym, day):
                trades_total += s.read(sym, day, "trades").shape[0]
    assert trades_total == books.trades.shape[0]  # E, printable C, P and crossing Q
    assert result.total_rows > len(msgs) // 2


def test_a_gap_stops_the_import_unless_allowed_and_then_it_is_recorded(
    tmp_path: Path, day_bytes: bytes
) -> None:
    msgs = _messages(day_bytes)
    cap = tmp_path / "gap.pcap"
    _write_pcap(cap, msgs, drop=30)  # messages 601..620 lost
    store = tmp_path / "store.h5"
    with pytest.raises(ItchGapError, match=r"20 messages missing .*601-620"):
        import_itch([cap], store, tick_size="0.0001", day=DAY)
    assert not store.exists() or not TickStore(store).instruments()
    _result, stats = import_itch(
        [cap], store, tick_size="0.0001", day=DAY, allow_gaps=True, skip_bad_rows=True
    )
    assert stats.report is not None
    assert stats.report.missing == 20
    with TickStore(store) as s:
        sym = s.instruments()[0]
        gaps = day_gaps(s, sym, s.days(sym)[0])
    assert gaps == [{"first_seq": 601, "last_seq": 620, "missing": 20}]


def test_prices_off_the_tick_grid_are_named_or_skipped(tmp_path: Path, day_bytes: bytes) -> None:
    cap = tmp_path / "day.pcap"
    _write_pcap(cap, _messages(day_bytes))
    with pytest.raises(ImportRowError, match=r"price.*is not a multiple of the tick size 1000"):
        import_itch([cap], tmp_path / "a.h5", tick_size="1000", day=DAY)
    result, _ = import_itch([cap], tmp_path / "b.h5", tick_size="1000", day=DAY, skip_bad_rows=True)
    assert result.skipped
    assert all(b.reason.startswith("is not a multiple") for b in result.skipped)


def test_the_shared_add_order_capture_imports_its_five_orders(tmp_path: Path) -> None:
    itch = SHARED / "data/nasdaq_itch_ouch/itch"
    cap = itch / "Nasdaq.Equities.TotalView.Itch.v5.0.20230822__AddOrderNoMPID.pcap"
    if not cap.is_file():
        pytest.skip(f"{cap} is absent")
    result, stats = import_itch([cap], tmp_path / "s.h5", tick_size="0.0001")
    assert stats.report is None  # the sample's sequence numbers are zeroed: decoded as is
    assert stats.day == "2023-08-22"
    assert stats.messages == {"A": 5}
    assert result.total_rows == 5


def test_qwconsole_import_pcap_reports_what_it_read_and_refuses_junk(
    tmp_path: Path, day_bytes: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.tickstore.cli import main

    cap = tmp_path / "day.pcap"
    _write_pcap(cap, _messages(day_bytes), drop=5)
    store = tmp_path / "s.h5"
    args = [
        "pcap",
        str(cap),
        "--protocol",
        "itch",
        "--store",
        str(store),
        "--day",
        "20240301",
        "--quiet",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "20 messages missing" in err
    assert "nothing imported" in err
    assert main([*args, "--allow-gaps"]) == 0
    err = capsys.readouterr().err
    assert "1 gaps (20 messages missing)" in err
    assert "gap: messages 101 to 120" in err
    with TickStore(store) as s:
        assert len(s.instruments()) == 12
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture")
    assert main(["pcap", str(junk), "--protocol", "itch", "--store", str(store), "--quiet"]) == 2
    assert "junk.pcap: not a pcap or pcapng file" in capsys.readouterr().err
