# SPDX-License-Identifier: MIT
"""MDP 3.0 market by order into the tick store: known orders through a real pcap and HDF5.

The order flow of ``tests/unit/engine/feeds/sbe/mbo_flow.py`` is encoded with CME's v9 schema
into MDP 3.0 packets, written as a pcap (A and B feeds on two multicast groups) and imported;
the stored ``mbo`` rows must be the capture's events, and replayed through an L3 book they
must leave the dict-of-orders book of the same flow.
"""

from __future__ import annotations

from pathlib import Path

import dpkt
import pytest

from engine.book.l3 import L3Book
from engine.feeds.sbe.book import book_template
from engine.feeds.sbe.mbo import mbo_events
from engine.feeds.sbe.mdp3 import decode_capture
from engine.feeds.sbe.schema_xml import load_schema
from engine.tickstore.cli import main
from engine.tickstore.importing import ImportRowError
from engine.tickstore.mdp3_import import import_mdp3
from engine.tickstore.schema import MBO_DTYPE, to_l3_events
from engine.tickstore.store import TickStore
from tests.conftest import SHARED
from tests.unit.engine.feeds.sbe.mbo_flow import SIDS, TICK_SIZE, DictBook, flow_packets, order_flow

DATA = SHARED / "data/cme_mdp3_sbe"
V9 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"
GROUPS = {"A": bytes([224, 0, 31, 1]), "B": bytes([224, 0, 32, 1])}


def _write_pcap(path: Path, payloads: list[bytes], channels: list[str]) -> None:
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for i, (payload, ch) in enumerate(zip(payloads, channels, strict=True)):
            udp = dpkt.udp.UDP(sport=1, dport=14310, data=payload)
            udp.ulen = 8 + len(payload)
            ip = dpkt.ip.IP(src=bytes(4), dst=GROUPS[ch], p=17, data=udp)
            ip.len = 20 + len(bytes(udp))
            eth = dpkt.ethernet.Ethernet(data=ip, type=dpkt.ethernet.ETH_TYPE_IP)
            w.writepkt(bytes(eth), ts=1_700_000_000 + i * 1e-6)


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DictBook]:
    if not V9.is_file():
        pytest.skip(f"{V9} is absent")
    ops = order_flow(700, 11)
    flow = flow_packets(load_schema(V9), ops, 11)
    path = tmp_path_factory.mktemp("mbo") / "mbo.pcap"
    _write_pcap(path, flow.payloads, flow.channels)
    ref = DictBook()
    for op in ops:
        ref.apply(op)
    return path, ref


def test_the_stored_mbo_rows_are_the_captures_orders(
    tmp_path: Path, capture: tuple[Path, DictBook]
) -> None:
    path, ref = capture
    store = tmp_path / "s.h5"
    result, stats = import_mdp3(
        [path], store, schema=V9, tick_size=TICK_SIZE, symbols={SIDS[0]: "ESZ3"}
    )
    assert not result.skipped
    assert not stats.gaps  # the B copies are duplicates, not gaps
    ev = mbo_events(decode_capture(path, V9), tick_size=TICK_SIZE)
    assert stats.mbo_entries == ev.entries > 0
    assert sum(stats.mbo_skipped.values()) == sum(ev.skipped.values()) > 0
    with TickStore(store) as s:
        for sid in SIDS:
            name = "ESZ3" if sid == SIDS[0] else f"SECID{sid}"
            [day] = s.days(name)
            rows = s.read(name, day, "mbo")
            assert rows.dtype == MBO_DTYPE
            mine = ev.events[ev.book == ev.book_of(sid)]
            for col in ("ts", "order_id", "px", "qty", "side", "action"):
                assert rows[col].tolist() == mine[col].tolist(), (name, col)
            assert (rows["ts_recv"] == rows["ts"]).all()
            l3 = to_l3_events(rows)
            lo, hi = int(l3["px"].min()), int(l3["px"].max())
            book = L3Book(lo, hi - lo + 1)
            book.apply(l3)
            assert [tuple(r) for r in book.resting().tolist()] == ref.resting(sid), name
            for (side, px), ids in ref.fifo(sid).items():
                assert book.fifo_ids(side, px) == ids
            assert book.unknown == 0
            assert "trades" not in s.kinds(name, day)


def test_prices_off_the_tick_size_are_named_or_skipped(
    tmp_path: Path, capture: tuple[Path, DictBook]
) -> None:
    path, _ref = capture
    with pytest.raises(ImportRowError, match=r"MDEntryPx.*is not a multiple of the tick size 0.5"):
        import_mdp3([path], tmp_path / "a.h5", schema=V9, tick_size="0.5")
    result, _stats = import_mdp3(
        [path], tmp_path / "b.h5", schema=V9, tick_size="0.5", skip_bad_rows=True
    )
    assert result.skipped
    ev = mbo_events(decode_capture(path, V9))
    on_grid = ev.mantissa % 500_000_000 == 0  # 0.5 at exponent -9
    assert 0 < int(on_grid.sum()) < on_grid.size
    stored = sum(n for (_s, _d, kind), n in result.rows.items() if kind == "mbo")
    assert stored == int(on_grid.sum())  # exactly the rows on the grid, the rest skipped
    with TickStore(tmp_path / "b.h5") as s:
        name = f"SECID{SIDS[1]}"
        rows = s.read(name, s.days(name)[0], "mbo")
        mine = ev.events[(ev.book == ev.book_of(SIDS[1])) & on_grid]
        assert rows["order_id"].tolist() == mine["order_id"].tolist()
        assert (
            rows["px"] * 500_000_000 == ev.mantissa[(ev.book == ev.book_of(SIDS[1])) & on_grid]
        ).all()


def test_qwconsole_import_pcap_mdp3_stores_mbo(
    tmp_path: Path, capture: tuple[Path, DictBook], capsys: pytest.CaptureFixture[str]
) -> None:
    path, ref = capture
    store = tmp_path / "s.h5"
    assert (
        main(
            [
                "pcap",
                str(path),
                "--protocol",
                "mdp3",
                "--store",
                str(store),
                "--quiet",
                "--schema",
                str(V9),
                "--tick-size",
                TICK_SIZE,
            ]
        )
        == 0
    )
    assert "0 gaps" in capsys.readouterr().err
    with TickStore(store) as s:
        for sid in SIDS:
            name = f"SECID{sid}"
            [day] = s.days(name)
            assert "mbo" in s.kinds(name, day)
            rows = s.read(name, day, "mbo")
            assert rows.shape[0] > 0
            live = {r[0] for r in ref.resting(sid)}
            assert live <= set(rows["order_id"].tolist())


def test_the_real_combined_book_capture_stores_its_order_entries(tmp_path: Path) -> None:
    cap = DATA / "pcap/Mdp3.Sbe.v1.9__MdIncrementalRefreshBook.46.pcap"
    if not (cap.is_file() and V9.is_file()):
        pytest.skip("the shared CME captures are absent")
    result, stats = import_mdp3([cap], tmp_path / "s.h5", schema=V9, tick_size="0.01")
    assert stats.mbo_entries == 16
    assert sum(n for (_s, _d, kind), n in result.rows.items() if kind == "mbo") == 16
    with TickStore(tmp_path / "s.h5") as s:
        rows = s.read("SECID384238", s.days("SECID384238")[0], "mbo")
        assert rows[["order_id", "px", "qty", "side", "action"]].tolist() == [
            (563189423864, 897000, 1, -1, 1)  # a New offer of 1 at 8970.00
        ]


def test_a_v9_combined_book_capture_stores_its_levels_as_v13_reads_them(tmp_path: Path) -> None:
    """Schema v9 defines MDIncrementalRefreshBook twice (32 and 46): the capture's 46 is used."""
    cap = DATA / "pcap/Mdp3.Sbe.v1.9__MdIncrementalRefreshBook.46.pcap"
    v13 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.13.xml"
    if not (cap.is_file() and V9.is_file() and v13.is_file()):
        pytest.skip("the shared CME captures are absent")
    assert book_template(decode_capture(cap, V9)).message.id == 46
    stored = {}
    for version, schema in ((9, V9), (13, v13)):
        store = tmp_path / f"v{version}.h5"
        import_mdp3([cap], store, schema=schema, tick_size="0.01")
        with TickStore(store) as s:
            stored[version] = {
                (name, kind): s.read(name, day, kind).tolist()
                for name in s.instruments()
                for day in s.days(name)
                for kind in s.kinds(name, day)
            }
    assert stored[9] == stored[13]
    kinds = {kind for _name, kind in stored[9]}
    assert kinds == {"l2", "bbo", "mbo"}
    # the first level entry: SecurityID 157660 deletes its offer at 15230.00
    first = stored[9][("SECID157660", "l2")][0]
    assert (first[2], first[3]) == (1523000, 0)
