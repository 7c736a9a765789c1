# SPDX-License-Identifier: MIT
"""``qwconsole import pcap --protocol fast``: FAST market data encoded here, imported for real.

A day of FIX market data for two instruments is FAST-encoded by the test encoder
(tests/unit/engine/feeds/fast/encoder.py) with a CME-shaped template set written for these
tests, put into a pcap with dpkt, and imported by the real command in a subprocess. The stored
``l2`` rows and trades must be what was encoded: level updates as price-level deltas, trades
with their aggressor and id; a dropped packet is a gap (refused, or imported and recorded with
``--allow-gaps``), and the snapshot (W) after it, ahead of the book, is a clear and the book it
holds (left out when nothing was lost); A and B copies count once; a template id the set
does not define, and CQG's templates (no market data), are clear one-line errors.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpkt
import numpy as np
import pytest

from engine.feeds.fast.templates import Decimal, TemplateSet
from engine.tickstore.importing import day_gaps
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_CLEAR, L2_SET, SELL
from tests.conftest import SHARED
from tests.unit.engine.feeds.fast.encoder import Encoder

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "tests/unit/engine/feeds/fast/data/md_templates.xml"
CQG = SHARED / "data/fast_cqg/templates.xml"
INC, SNAP, HEARTBEAT = 81, 82, 83
ES, NQ = 1001, 1002
DAY = "20261204"
#: SendingTime of message ``i``: YYYYMMDDHHMMSSsss, as CME's FAST feeds send it.
T0 = 20261204143000000
T0_NS = 1_796_394_600_000_000_000  # 2026-12-04 14:30:00 UTC
RECV0_NS = T0_NS + 250_000  # the capture sees each packet 250 µs later


def px(text: str) -> Decimal:
    """Return a price as a FAST decimal (two decimals, as a CME price)."""
    whole, _, frac = text.partition(".")
    return Decimal(-2, int(whole + frac.ljust(2, "0")))


def entry(
    action: int,
    etype: str,
    sec: int,
    rpt: int,
    price: str,
    size: int | None,
    level: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return one MDEntries element."""
    e: dict[str, Any] = {
        "MDUpdateAction": action,
        "MDEntryType": etype,
        "SecurityID": sec,
        "SecurityIDSource": 8,
        "RptSeq": rpt,
        "MDEntryPx": px(price),
    }
    if size is not None:
        e["MDEntrySize"] = size
    if level is not None:
        e["MDPriceLevel"] = level
    e.update(extra)
    return e


NEW, CHANGE, DELETE = 0, 1, 2

#: The feed: (MsgSeqNum, template, entries or snapshot fields), one message per packet
#: except where a heartbeat shares a packet with the next message.
FEED: list[tuple[int, int, dict[str, Any]]] = [
    (1, INC, {"MDEntries": [
        entry(NEW, "0", ES, 1, "4500.00", 10, 1),
        entry(NEW, "1", ES, 2, "4500.25", 7, 1),
        entry(NEW, "0", ES, 3, "4499.75", 5, 2),
    ]}),
    (2, INC, {"MDEntries": [
        entry(CHANGE, "0", ES, 4, "4500.00", 12, 1),
        entry(NEW, "2", ES, 5, "4500.25", 3, None, AggressorSide=1, TradeID=9001),
        entry(CHANGE, "1", ES, 6, "4500.25", 4, 1),
    ]}),
    (3, HEARTBEAT, {}),
    (4, INC, {"MDEntries": [
        entry(NEW, "0", ES, 7, "4500.25", 2, 1),
        entry(NEW, "1", NQ, 1, "100.50", 1, 1),
    ]}),
    (5, INC, {"MDEntries": [entry(DELETE, "0", ES, 8, "4500.25", None, 1)]}),
    (6, SNAP, {"LastMsgSeqNumProcessed": 5, "RptSeq": 8, "SecurityID": ES, "MDEntries": [
        {"MDEntryType": "0", "MDPriceLevel": 1, "MDEntryPx": px("4500.00"), "MDEntrySize": 12},
        {"MDEntryType": "0", "MDPriceLevel": 2, "MDEntryPx": px("4499.75"), "MDEntrySize": 5},
        {"MDEntryType": "1", "MDPriceLevel": 1, "MDEntryPx": px("4500.25"), "MDEntrySize": 4},
    ]}),
    (7, INC, {"MDEntries": [
        entry(NEW, "2", ES, 9, "4500.00", 1, None, AggressorSide=2, TradeID=9002),
        entry(DELETE, "0", ES, 10, "4500.00", None, 1),
    ]}),
]  # fmt: skip
#: The packets: lists of FEED indices (the heartbeat travels with message 4).
PACKETS = [[0], [1], [2, 3], [4], [5], [6]]
DROPPED = 3  # the packet holding MsgSeqNum 5

# Expected rows, in ticks of 0.25 (4500.00 is 18000): (side, kind, px, qty, RptSeq).
ES_L2 = [
    (BUY, L2_SET, 18000, 10, 1), (SELL, L2_SET, 18001, 7, 2), (BUY, L2_SET, 17999, 5, 3),
    (BUY, L2_SET, 18000, 12, 4), (SELL, L2_SET, 18001, 4, 6),
    (BUY, L2_SET, 18001, 2, 7),
    (BUY, L2_SET, 18001, 0, 8),  # msg 5: the delete
    (BUY, L2_CLEAR, 0, 0, -1),  # msg 6: the snapshot
    (BUY, L2_SET, 18000, 12, -1), (BUY, L2_SET, 17999, 5, -1), (SELL, L2_SET, 18001, 4, -1),
    (BUY, L2_SET, 18000, 0, 10),
]  # fmt: skip
ES_L2_MSG = [1, 1, 1, 2, 2, 4, 5, 6, 6, 6, 6, 7]  # the MsgSeqNum of each row
ES_TRADES = [(18001, 3, 9001, BUY, 2), (18000, 1, 9002, SELL, 7)]  # px, qty, id, side, msg


def sending_ns(seq: int) -> int:
    """Return the ns time of message ``seq``'s SendingTime (T0 + seq ms)."""
    return T0_NS + seq * 1_000_000


def packet_seq(seq: int) -> int:
    """Return the MsgSeqNum of the first message of the packet carrying message ``seq``."""
    for pkt in PACKETS:
        if any(FEED[i][0] == seq for i in pkt):
            return FEED[pkt[0]][0]
    raise AssertionError(seq)


def encode_packets(reset_per_packet: bool) -> list[bytes]:
    """Return the FAST payload of each packet of :data:`PACKETS`."""
    enc = Encoder(TemplateSet.from_file(TEMPLATES))
    out = []
    for pkt in PACKETS:
        if reset_per_packet:
            enc.reset()
        data = b""
        for i in pkt:
            seq, tid, fields = FEED[i]
            data += enc.encode(tid, {"MsgSeqNum": seq, "SendingTime": T0 + seq, **fields})
        out.append(data)
    return out


def frame(payload: bytes, dst: str = "224.0.31.1", dport: int = 14310) -> bytes:
    """Return an Ethernet frame carrying ``payload`` in a UDP datagram to ``dst:dport``."""
    udp = dpkt.udp.UDP(sport=31000, dport=dport, data=payload)
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(
        src=bytes([10, 0, 0, 1]),
        dst=bytes(map(int, dst.split("."))),
        p=dpkt.ip.IP_PROTO_UDP,
        data=udp,
    )
    ip.len = len(ip)
    eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x01" * 6, data=ip)
    eth.type = dpkt.ethernet.ETH_TYPE_IP
    return bytes(eth)


def write_pcap(path: Path, frames: list[tuple[int, bytes]]) -> Path:
    """Write ``(capture time ns, frame)`` pairs as a nanosecond pcap."""
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for ts, fr in frames:
            w.writepkt(fr, ts=ts / 1e9)
    return path


def capture(
    path: Path,
    *,
    reset_per_packet: bool = True,
    drop: int | None = None,
    cme: bool = False,
    ab: bool = False,
    drop_a: int | None = None,
) -> Path:
    """Write the feed as a capture: optionally a packet dropped, a CME preamble, A and B.

    ``drop_a`` drops a packet from the A feed only (B still has it).
    """
    frames = []
    for n, payload in enumerate(encode_packets(reset_per_packet)):
        if n == drop:
            continue
        seq = FEED[PACKETS[n][0]][0]
        data = (n + 1).to_bytes(4, "big") + b"\x01" + payload if cme else payload
        t = RECV0_NS + sending_ns(seq) - T0_NS
        if n != drop_a:
            frames.append((t, frame(data)))
        if ab:
            frames.append((t + 1_000, frame(data, dst="224.0.32.1", dport=15310)))
    return write_pcap(path, frames)


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``qwconsole import pcap ... --protocol fast`` for real."""
    code = "import sys; from app.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "import",
            "pcap",
            *map(str, args),
            "--protocol",
            "fast",
            "--quiet",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def stored_l2(store: Path, name: str) -> list[tuple[int, int, int, int, int]]:
    """Return the stored l2 rows of ``name`` as (side, kind, px, qty, seq)."""
    with TickStore(store) as s:
        rows = s.read(name, DAY, "l2")
    return [tuple(int(r[c]) for c in ("side", "kind", "px", "qty", "seq")) for r in rows]  # type: ignore[misc]


def check_es(store: Path, keep: Callable[[int], bool]) -> None:
    """Check SECID1001's l2 rows, times and trades against the feed (messages ``keep`` s)."""
    want = [(r, m) for r, m in zip(ES_L2, ES_L2_MSG, strict=True) if keep(m)]
    got = stored_l2(store, "SECID1001")
    # a clear's side means nothing: compare it as a clear
    got = [(0, *g[1:]) if g[1] == L2_CLEAR else g for g in got]
    assert got == [(0, *r[1:]) if r[1] == L2_CLEAR else r for r, _ in want]
    with TickStore(store) as s:
        l2 = s.read("SECID1001", DAY, "l2")
        trades = s.read("SECID1001", DAY, "trades")
        bbo = s.read("SECID1001", DAY, "bbo")
        info = s.info("SECID1001", DAY)
    assert l2["ts"].tolist() == [sending_ns(m) for _, m in want]
    # capture times pass through dpkt's float seconds: equal to within a microsecond (plus
    # the microsecond B's copies come after A's, when B's is the one used)
    recv = np.array([RECV0_NS + sending_ns(packet_seq(m)) - T0_NS for _, m in want])
    assert np.abs(l2["ts_recv"] - recv).max() < 2_000
    assert [(int(t["px"]), int(t["qty"]), int(t["trade_id"]), int(t["side"])) for t in trades] == [
        t[:4] for t in ES_TRADES
    ]
    assert trades["ts"].tolist() == [sending_ns(t[4]) for t in ES_TRADES]
    assert info.tick_size == "0.25"
    # the top after the last message: 4499.75 x 5 bid, 4500.25 x 4 offer
    top = [int(bbo[-1][c]) for c in ("bid_px", "bid_qty", "ask_px", "ask_qty")]
    assert top == [17999, 5, 18001, 4]


def test_a_fast_capture_becomes_the_l2_rows_and_trades_encoded(tmp_path: Path) -> None:
    pcap = capture(tmp_path / "md.pcap")
    store = tmp_path / "s.h5"
    done = run(
        pcap,
        "--store",
        store,
        "--templates",
        TEMPLATES,
        "--tick-size",
        "0.25",
        "--reset",
        "packet",
        "--symbol",
        "1002=NQZ6",
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "6 datagrams; messages: MDHeartbeat 1, MDIncRefresh 5, MDSnapshotFullRefresh 1" in (
        done.stderr
    )
    assert "message sequence 1 to 7: 0 gaps (0 messages missing), 0 copies skipped" in done.stderr
    # the snapshot (RptSeq 8) holds nothing the book has not had from message 5: left out
    assert "1 snapshots the books were already at or past: left out" in done.stderr
    check_es(store, lambda m: m != 6)
    assert stored_l2(store, "NQZ6") == [(SELL, L2_SET, 402, 1, 1)]
    with TickStore(store) as s:
        assert sorted(s.instruments()) == ["NQZ6", "SECID1001"]
        assert day_gaps(s, "SECID1001", DAY) == []


def test_dictionaries_kept_across_packets_and_a_and_b_copies_count_once(tmp_path: Path) -> None:
    # A lost the packet of message 5; B has it: no gap, and message 5's delete is stored
    pcap = capture(tmp_path / "md.pcap", reset_per_packet=False, ab=True, drop_a=DROPPED)
    store = tmp_path / "s.h5"
    done = run(pcap, "--store", store, "--templates", TEMPLATES, "--tick-size", "0.25")
    assert done.returncode == 0, done.stderr
    assert "11 datagrams" in done.stderr
    assert "messages: MDHeartbeat 1, MDIncRefresh 5, MDSnapshotFullRefresh 1" in done.stderr
    assert "0 gaps (0 messages missing), 4 copies skipped" in done.stderr
    # A's dictionaries missed message 5 (no resets): its later messages are not trusted
    assert "2 messages of a stream that had lost one since its last reset" in done.stderr
    check_es(store, lambda m: m != 6)
    assert stored_l2(store, "SECID1002") == [(SELL, L2_SET, 402, 1, 1)]


def test_a_dropped_packet_is_a_gap_refused_or_recorded(tmp_path: Path) -> None:
    pcap = capture(tmp_path / "gap.pcap", drop=DROPPED, cme=True)
    store = tmp_path / "s.h5"
    args = (
        pcap,
        "--store",
        store,
        "--templates",
        TEMPLATES,
        "--tick-size",
        "0.25",
        "--reset",
        "packet",
        "--framing",
        "cme",
    )
    done = run(*args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "misses messages 5-5, packets 4-4; --allow-gaps imports it anyway" in done.stderr
    assert not store.exists()
    done = run(*args, "--allow-gaps")
    assert done.returncode == 0, done.stderr
    assert "message sequence 1 to 7: 1 gaps (1 messages missing)" in done.stderr
    assert "packet sequence 1 to 6: 1 gaps (1 packets missing)" in done.stderr
    assert "  gap: messages 5 to 5" in done.stderr
    # without message 5 the book is at RptSeq 7: the snapshot (8) clears it and sets its levels
    assert "snapshots the books were already" not in done.stderr
    check_es(store, lambda m: m != 5)
    with TickStore(store) as s:
        gaps = day_gaps(s, "SECID1001", DAY)
    assert [(g["sequence"], g["first_seq"], g["last_seq"]) for g in gaps] == [
        ("message", 5, 5),
        ("packet", 4, 4),
    ]


def test_an_unknown_template_id_names_the_packet(tmp_path: Path) -> None:
    payloads = encode_packets(True)
    bad = b"\xc0" + bytes([0x80 | 99])  # pmap (template id present), template id 99
    frames = [(RECV0_NS + i, frame(p)) for i, p in enumerate([*payloads[:2], bad, *payloads[2:]])]
    pcap = write_pcap(tmp_path / "bad.pcap", frames)
    store = tmp_path / "s.h5"
    done = run(
        pcap, "--store", store, "--templates", TEMPLATES, "--tick-size", "0.25", "--reset", "packet"
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "bad.pcap: frame 3 (datagram 3 to 224.0.31.1:14310)" in done.stderr
    assert "unknown template id 99" in done.stderr
    assert not store.exists()


def test_templates_without_market_data_are_a_clear_error(tmp_path: Path) -> None:
    if not CQG.is_file():
        pytest.skip(f"{CQG} is not there")
    pcap = capture(tmp_path / "md.pcap")
    done = run(pcap, "--store", tmp_path / "s.h5", "--templates", CQG, "--tick-size", "0.25")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "no FAST market-data templates (it has 2 MDSecurityDefinition, 4 MDHeartbeat" in (
        done.stderr
    )
    assert "needs MarketDataIncrementalRefresh (MsgType X)" in done.stderr


def test_prices_off_the_tick_are_reported_and_arguments_checked(tmp_path: Path) -> None:
    pcap = capture(tmp_path / "md.pcap")
    base = (pcap, "--store", tmp_path / "s.h5", "--templates", TEMPLATES, "--reset", "packet")
    done = run(*base, "--tick-size", "0.5")
    assert done.returncode == 2
    assert "MDEntryPx" in done.stderr
    assert "4500.25" in done.stderr
    assert "is not a multiple of the tick size 0.5" in done.stderr
    done = run(*base, "--tick-size", "0.5", "--skip-bad-rows")
    assert done.returncode == 0, done.stderr
    with TickStore(tmp_path / "s.h5") as s:
        l2 = s.read("SECID1001", DAY, "l2")
    assert np.all(l2["px"][l2["kind"] == L2_SET] % 1 == 0)
    done = run(pcap, "--store", tmp_path / "t.h5", "--tick-size", "0.25")
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "qwconsole import: error: --protocol fast needs --templates (the feed's FAST "
        "template XML); nothing imported",
    )


def test_two_channels_are_not_taken_for_copies_and_one_is_chosen(tmp_path: Path) -> None:
    # a second channel with its own numbering: messages 1 and 2 of SecurityID 2002
    enc = Encoder(TemplateSet.from_file(TEMPLATES))
    frames = []
    for n in (1, 2):
        e = entry(NEW, "1", 2002, n, f"{99 + n}.00", n, 1)
        enc.reset()  # the import resets per packet
        p = enc.encode(INC, {"MsgSeqNum": n, "SendingTime": T0 + n, "MDEntries": [e]})
        frames.append((RECV0_NS + sending_ns(n) - T0_NS + 500, frame(p, "224.0.31.9", 14399)))
    one = capture(tmp_path / "one.pcap")
    with one.open("rb") as f:
        frames += [(int(ts * 1_000_000_000), bytes(fr)) for ts, fr in dpkt.pcap.Reader(f)]
    pcap = write_pcap(tmp_path / "two.pcap", sorted(frames, key=lambda f: f[0]))
    store = tmp_path / "s.h5"
    base = (pcap, "--store", store, "--templates", TEMPLATES, "--tick-size", "0.25",
            "--reset", "packet")  # fmt: skip
    done = run(*base)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "MsgSeqNum 1 carries different messages to 224.0.31.1:14310 and 224.0.31.9:14399" in (
        done.stderr
    )
    assert "import one channel at a time with --channel ADDR:PORT" in done.stderr
    done = run(*base, "--channel", "224.0.31.1:14310")
    assert done.returncode == 0, done.stderr
    assert "2 datagrams to other destinations left out (224.0.31.9:14399)" in done.stderr
    check_es(store, lambda m: m != 6)
    done = run(*base, "--channel", "224.0.31.9:14399", "--replace")
    assert done.returncode == 0, done.stderr
    assert stored_l2(store, "SECID2002") == [(SELL, L2_SET, 400, 1, 1), (SELL, L2_SET, 404, 2, 2)]
    done = run(*base, "--channel", "224.0.31.9")
    assert done.returncode == 2
    assert "--channel '224.0.31.9': give ADDR:PORT" in done.stderr
