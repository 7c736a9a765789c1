# SPDX-License-Identifier: MIT
"""FAST market data: the test encoder against both decoders, and the importer's rules.

The encoder (``encoder.py``) is checked first: whatever it encodes, the reference decoder and
the column kernel give back (hypothesis over entry lists, optional fields left out, dictionaries
carried from message to message). Then the import side on its own: random level flows
(hypothesis) whose stored ``l2`` deltas replay to the book the flow describes; templates found
by FIX tag or by name, a price-keyed book (no MDPriceLevel), instruments named by Symbol, CME's
integer timestamps, the reset rules (per message, a ``reset="yes"`` template) and entry types
left out.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import dpkt
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.feeds.fast.columnar import ColumnDecoder
from engine.feeds.fast.decoder import Decoder
from engine.feeds.fast.mdimport import (
    E_BOOK,
    E_CLEAR,
    E_TRADE,
    FastMdError,
    MdLayout,
    fix_time_ns,
    read_capture,
)
from engine.feeds.fast.templates import Decimal, TemplateSet
from engine.tickstore.fast_import import import_fast
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_CLEAR, L2_SET, SELL
from tests.unit.engine.feeds.fast.encoder import Encoder

DATA = Path(__file__).parent / "data"
TEMPLATES = DATA / "md_templates.xml"
MD = TemplateSet.from_file(TEMPLATES)

#: A price-keyed feed (no MDPriceLevel), fields named but without tag ids, Symbol not
#: SecurityID, MsgType only in the template's name.
PRICE_KEYED = """<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="MarketDataIncrementalRefresh" id="7">
    <uInt32 name="MsgSeqNum"><increment/></uInt32>
    <uInt64 name="SendingTime"><delta/></uInt64>
    <sequence name="MDEntries">
      <length name="NoMDEntries"/>
      <uInt32 name="MDUpdateAction"><copy/></uInt32>
      <string name="MDEntryType"><copy/></string>
      <string name="Symbol"><copy/></string>
      <decimal name="MDEntryPx"><copy/></decimal>
      <uInt64 name="MDEntrySize" presence="optional"><copy/></uInt64>
    </sequence>
  </template>
</templates>"""


def test_fix_times_read_as_cme_sends_them() -> None:
    assert fix_time_ns(20261204143000123) == 1_796_394_600_123_000_000
    assert fix_time_ns(1_796_394_600_123_456_789) == 1_796_394_600_123_456_789  # ns already
    assert fix_time_ns(20261304143000123) is None  # month 13
    assert fix_time_ns(12345) is None


entries = st.lists(
    st.fixed_dictionaries(
        {
            "MDUpdateAction": st.integers(0, 5),
            "MDEntryType": st.sampled_from(["0", "1", "2", "J"]),
            "SecurityID": st.integers(1, 5),
            "RptSeq": st.integers(0, 1 << 31),
            "MDEntryPx": st.builds(Decimal, st.integers(-4, 0), st.integers(-(10**9), 10**9)),
        },
        optional={
            "MDPriceLevel": st.integers(0, 10),
            "MDEntrySize": st.integers(-(1 << 31), (1 << 31) - 1),
            "NumberOfOrders": st.integers(0, 1000),
            "TradingSessionID": st.sampled_from(["2", "17", ""]),
            "AggressorSide": st.integers(0, 2),
            "TradeID": st.integers(0, 1 << 32 - 1),
        },
    ),
    min_size=1,
    max_size=6,
)


def _normal(fields: dict[str, Any]) -> dict[str, Any]:
    """Return the fields as a decoder gives them: the constants filled in.

    An optional field with a default that is left out is sent as NULL, and stays out.
    """
    out = {"MessageType": "X", "ApplVerID": "9", **fields}
    out["MDEntries"] = [{"SecurityIDSource": 8, **e} for e in fields["MDEntries"]]
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(entries, min_size=1, max_size=4), st.booleans())
def test_what_the_encoder_writes_both_decoders_read_back(
    messages: list[list[dict[str, Any]]], one_buffer: bool
) -> None:
    enc = Encoder(MD)
    want, data = [], []
    for n, es in enumerate(messages):
        fields = {"MsgSeqNum": 10 + n, "SendingTime": 20261204143000000 + 7 * n, "MDEntries": es}
        data.append(enc.encode(81, fields))
        want.append(_normal(fields))
    py = Decoder(MD)
    col = ColumnDecoder(MD)
    if one_buffer:
        got_py = py.decode(b"".join(data))
        got_col = col.decode(b"".join(data)).messages()
    else:
        got_py = [m for d in data for m in py.decode(d)]
        got_col = [m for d in data for m in col.decode(d).messages()]
    for got in (got_py, got_col):
        assert [m.fields for m in got] == want


def _pcap(path: Path, payloads: list[bytes], t0_ns: int = 1_796_394_600_000_000_000) -> Path:
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for i, p in enumerate(payloads):
            udp = dpkt.udp.UDP(sport=1, dport=2, data=p)
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=b"\x0a\0\0\x01", dst=b"\xe0\0\0\x01", p=17, data=udp)
            ip.len = len(ip)
            eth = dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\1" * 6, data=ip)
            w.writepkt(bytes(eth), ts=(t0_ns + i * 1_000_000) / 1e9)
    return path


def test_a_price_keyed_feed_named_by_symbol_and_found_by_field_names(tmp_path: Path) -> None:
    ts = TemplateSet.from_xml(PRICE_KEYED, "price_keyed.xml")
    layout = MdLayout.of(ts)
    assert (list(layout.templates), layout.by_level) == ([7], False)
    enc = Encoder(ts)

    def msg(seq: int, *es: tuple[int, str, str, str, int | None]) -> bytes:
        items = []
        for action, etype, sym, price, size in es:
            e: dict[str, Any] = {"MDUpdateAction": action, "MDEntryType": etype, "Symbol": sym}
            e["MDEntryPx"] = Decimal(-1, int(price.replace(".", "")))
            if size is not None:
                e["MDEntrySize"] = size
            items.append(e)
        return enc.encode(7, {"MsgSeqNum": seq, "SendingTime": 0, "MDEntries": items})

    pcap = _pcap(
        tmp_path / "p.pcap",
        [
            msg(
                1,
                (0, "0", "RTS", "10.5", 3),
                (0, "0", "RTS", "10.4", 2),
                (0, "1", "RTS", "10.7", 1),
            ),
            msg(2, (1, "0", "RTS", "10.5", 4), (2, "0", "RTS", "10.4", None)),
            msg(3, (0, "2", "RTS", "10.6", 2), (0, "9", "RTS", "10.6", 2)),
            msg(4, (3, "0", "RTS", "10.5", None)),
        ],
    )
    cap = read_capture(pcap, ts)
    assert cap.instruments == ["RTS"]
    assert cap.keyed_by_symbol == [True]
    assert dict(cap.skipped_types) == {"9": 1}
    assert cap.entries["kind"].tolist() == [E_BOOK] * 5 + [E_TRADE, E_BOOK]
    # SendingTime 0 is no time: the capture's time stands in
    assert cap.entries["ts"].tolist() == cap.entries["ts_recv"].tolist()
    store = tmp_path / "s.h5"
    result, stats = import_fast(
        [pcap], store, templates=_write(tmp_path, PRICE_KEYED), tick_size="0.1"
    )
    assert stats.skipped_types == {"9": 1}
    day = result.days[0][1]
    with TickStore(store) as s:
        l2 = s.read("RTS", day, "l2")
        trades = s.read("RTS", day, "trades")
    assert [(int(r["side"]), int(r["px"]), int(r["qty"])) for r in l2] == [
        (BUY, 105, 3), (BUY, 104, 2), (SELL, 107, 1),
        (BUY, 105, 4), (BUY, 104, 0),
        (BUY, 105, 0),  # DeleteThru empties the bid side: 10.5 was all that was left
    ]  # fmt: skip
    assert (l2["kind"] == L2_SET).all()
    assert [(int(t["px"]), int(t["qty"]), int(t["side"])) for t in trades] == [(106, 2, 0)]


def _write(tmp_path: Path, xml: str) -> Path:
    p = tmp_path / "t.xml"
    p.write_text(xml)
    return p


def _feed(enc: Encoder, reset_each_message: bool) -> list[bytes]:
    """Return three packets of two incremental messages each, then a reset template."""
    out = []
    seq = 1
    for p in range(3):
        data = b""
        for _ in range(2):
            if reset_each_message:
                enc.reset()
            e = {
                "MDUpdateAction": 0,
                "MDEntryType": "0",
                "SecurityID": 7,
                "RptSeq": seq,
                "MDEntryPx": Decimal(0, 100 + seq),
                "MDEntrySize": seq,
                "MDPriceLevel": 1,
            }
            data += enc.encode(81, {"MsgSeqNum": seq, "SendingTime": 0, "MDEntries": [e]})
            seq += 1
        if p == 1 and not reset_each_message:
            data += enc.encode(84, {"MsgSeqNum": seq})  # reset="yes": both sides reset
            seq += 1
        out.append(data)
    return out


def test_reset_rules_follow_the_feed(tmp_path: Path) -> None:
    pcap = _pcap(tmp_path / "m.pcap", _feed(Encoder(MD), reset_each_message=True))
    cap = read_capture(pcap, MD, reset="message")
    assert cap.entries["px"].tolist() == [(100 + s) * 10**9 for s in range(1, 7)]
    assert cap.message_seq.gaps == []
    # read without the per-message reset, the operators' values run on and drift
    wrong = read_capture(pcap, MD, reset="none")
    assert wrong.entries["px"].tolist() != cap.entries["px"].tolist()
    pcap = _pcap(tmp_path / "t.pcap", _feed(Encoder(MD), reset_each_message=False))
    cap = read_capture(pcap, MD, reset="none")
    assert cap.entries["px"].tolist() == [(100 + s) * 10**9 for s in (1, 2, 3, 4, 6, 7)]
    assert cap.messages["MDReset"] == 1
    assert (cap.message_seq.first, cap.message_seq.last, cap.message_seq.gaps) == (1, 7, [])


def test_snapshot_clears_then_sets_and_bad_options_are_refused(tmp_path: Path) -> None:
    enc = Encoder(MD)
    snap = enc.encode(82, {"MsgSeqNum": 1, "SendingTime": 0, "LastMsgSeqNumProcessed": 0,
                           "RptSeq": 3, "SecurityID": 9, "MDEntries": [
        {"MDEntryType": "1", "MDPriceLevel": 1, "MDEntryPx": Decimal(0, 5), "MDEntrySize": 2},
        {"MDEntryType": "2", "MDEntryPx": Decimal(0, 5), "MDEntrySize": 2},  # last trade
        {"MDEntryType": "1", "MDEntryPx": Decimal(0, 6), "MDEntrySize": 3},  # level 2, unsaid
    ]})  # fmt: skip
    pcap = _pcap(tmp_path / "s.pcap", [snap])
    cap = read_capture(pcap, MD)
    assert cap.entries["kind"].tolist() == [E_CLEAR, E_BOOK, E_BOOK]
    assert cap.entries["level"].tolist() == [0, 1, 2]
    assert cap.instruments == ["9"]
    assert dict(cap.skipped_types) == {"2 (in a snapshot)": 1}
    with pytest.raises(FastMdError, match="--framing 'x': give one of none, cme"):
        read_capture(pcap, MD, framing="x")
    with pytest.raises(FastMdError, match="frame 1: 3 bytes, shorter than the 5-byte"):
        read_capture(_pcap(tmp_path / "short.pcap", [b"\x01\x02\x03"]), MD, framing="cme")
    store = tmp_path / "x.h5"
    result, _ = import_fast([pcap], store, templates=TEMPLATES, tick_size="1", symbols={9: "NINE"})
    with TickStore(store) as s:
        l2 = s.read("NINE", result.days[0][1], "l2")
    assert [(int(r["kind"]), int(r["side"]), int(r["px"]), int(r["qty"])) for r in l2][1:] == [
        (L2_SET, SELL, 5, 2),
        (L2_SET, SELL, 6, 3),
    ]
    assert int(l2["kind"][0]) == L2_CLEAR
    assert np.all(l2["seq"] == -1)


DEPTH = 4


@st.composite
def book_flows(draw: st.DrawFn) -> list[tuple[int, int, int, int, int]]:
    """Return valid MBP level operations (action, side, level, price, size) for a depth-4 book.

    Bids are kept descending and offers ascending, apart by side (bids below 1000, offers
    above); New inserts at the price's rank, Change and Delete name a level that is there.
    """
    sides: list[list[int]] = [[], []]
    ops = []
    for _ in range(draw(st.integers(1, 40))):
        s = draw(st.integers(0, 1))
        levels = sides[s]
        choice = draw(st.sampled_from(["new", "change", "delete"] if levels else ["new"]))
        if choice == "new":
            taken = set(levels)
            px = draw(st.integers(900, 999) if s == 0 else st.integers(1001, 1100))
            if px in taken:
                continue
            levels.append(px)
            levels.sort(reverse=s == 0)
            level = levels.index(px) + 1
            if level > DEPTH:
                levels.remove(px)
                continue
            del levels[DEPTH:]  # the level pushed past the depth is gone
            ops.append((0, s, level, px, draw(st.integers(1, 99))))
        elif choice == "change":
            level = draw(st.integers(1, len(levels)))
            ops.append((1, s, level, levels[level - 1], draw(st.integers(1, 99))))
        else:
            level = draw(st.integers(1, len(levels)))
            ops.append((2, s, level, levels.pop(level - 1), 0))
    return ops


@settings(max_examples=25, deadline=None)
@given(book_flows(), st.integers(1, 3))
def test_stored_level_deltas_replay_to_the_book_the_flow_describes(
    flow: list[tuple[int, int, int, int, int]], per_message: int
) -> None:
    enc = Encoder(MD)
    payloads: list[bytes] = []
    want: list[dict[int, int]] = [{}, {}]
    for n in range(0, len(flow), per_message):
        items: list[dict[str, Any]] = []
        for action, side, level, price, size in flow[n : n + per_message]:
            e: dict[str, Any] = {
                "MDUpdateAction": action,
                "MDEntryType": str(side),
                "SecurityID": 5,
                "RptSeq": len(payloads) * 10 + len(items),
                "MDEntryPx": Decimal(-1, price),
                "MDPriceLevel": level,
            }
            if action != 2:
                e["MDEntrySize"] = size
            items.append(e)
            book = want[side]
            if action == 2:
                del book[price]
            else:
                book[price] = size
            if action == 0:  # a level pushed past the depth leaves the book
                ranked = sorted(book, reverse=side == 0)
                for gone in ranked[DEPTH:]:
                    del book[gone]
        seq = len(payloads) + 1
        payloads.append(enc.encode(81, {"MsgSeqNum": seq, "SendingTime": 0, "MDEntries": items}))
    with tempfile.TemporaryDirectory() as t:
        pcap = _pcap(Path(t) / "f.pcap", payloads)
        store = Path(t) / "s.h5"
        result, stats = import_fast(
            [pcap], store, templates=TEMPLATES, tick_size="0.1", depth=DEPTH
        )
        assert stats.bad_levels == 0
        got: list[dict[int, int]] = [{}, {}]
        with TickStore(store) as ticks:
            l2 = ticks.read("SECID5", result.days[0][1], "l2")
            bbo = ticks.read("SECID5", result.days[0][1], "bbo")
    for r in l2:
        book = got[0 if int(r["side"]) == BUY else 1]
        if int(r["qty"]):
            book[int(r["px"])] = int(r["qty"])
        else:
            book.pop(int(r["px"]), None)
    assert got == want
    best_bid = max(want[0], default=0)
    best_ask = min(want[1], default=0)
    assert (int(bbo[-1]["bid_px"]), int(bbo[-1]["ask_px"])) == (best_bid, best_ask)
