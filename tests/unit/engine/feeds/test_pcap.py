# SPDX-License-Identifier: MIT
"""UDP datagrams out of capture files: the shared real captures and files written here."""

from pathlib import Path

import dpkt
import pytest

from engine.feeds.pcap import CaptureError, UdpCapture, udp_payloads
from tests.conftest import SHARED

CME = SHARED / "data/cme_mdp3_sbe/pcap"


def _frame(payload: bytes, *, proto: str = "udp", fragment: bool = False) -> bytes:
    if proto == "udp":
        inner: dpkt.Packet = dpkt.udp.UDP(sport=5000, dport=6000, data=payload)
        inner.ulen = 8 + len(payload)
        p = dpkt.ip.IP_PROTO_UDP
    else:
        inner = dpkt.tcp.TCP(sport=5000, dport=6000, data=payload)
        p = dpkt.ip.IP_PROTO_TCP
    ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1]), dst=bytes([239, 1, 2, 3]), p=p, data=inner)
    if fragment:
        ip.mf = 1
    ip.len = 20 + len(bytes(inner))
    eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x01" * 6, data=ip)
    eth.type = dpkt.ethernet.ETH_TYPE_IP
    return bytes(eth)


def _write(path: Path, frames: list[bytes], *, pcapng: bool = False) -> None:
    with path.open("wb") as f:
        w = dpkt.pcapng.Writer(f) if pcapng else dpkt.pcap.Writer(f, nano=True)
        for i, fr in enumerate(frames):
            w.writepkt(fr, ts=1_700_000_000 + i / 1000)


@pytest.mark.parametrize("pcapng", [False, True])
def test_udp_datagrams_come_out_in_order_and_everything_else_is_counted(
    tmp_path: Path, pcapng: bool
) -> None:
    path = tmp_path / ("c.pcapng" if pcapng else "c.pcap")
    frames = [
        _frame(b"first"),
        _frame(b"tcp", proto="tcp"),
        _frame(b"frag", fragment=True),
        _frame(b"second"),
    ]
    _write(path, frames, pcapng=pcapng)
    cap = UdpCapture(path)
    got = list(cap)
    assert [d.payload for d in got] == [b"first", b"second"]
    assert [d.index for d in got] == [1, 4]
    assert (got[0].src, got[0].sport, got[0].dst, got[0].dport) == (
        "10.0.0.1",
        5000,
        "239.1.2.3",
        6000,
    )
    assert got[1].ts_ns - got[0].ts_ns == pytest.approx(3_000_000, abs=1_000)
    assert cap.frames == 4
    assert cap.skipped == {"not UDP": 1, "IP fragment": 1}


def test_a_datagram_cut_by_the_snap_length_is_counted_not_passed_on(tmp_path: Path) -> None:
    path = tmp_path / "snap.pcap"
    whole = _frame(b"x" * 100)
    _write(path, [whole[:-30], _frame(b"ok")])
    cap = UdpCapture(path)
    assert [d.payload for d in cap] == [b"ok"]
    assert cap.skipped == {"truncated": 1}


def test_bad_files_are_named_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no such capture file"):
        UdpCapture(tmp_path / "missing.pcap")
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture file at all")
    with pytest.raises(CaptureError, match=r"junk\.pcap: not a pcap or pcapng file"):
        list(UdpCapture(junk))
    cut = tmp_path / "cut.pcap"
    _write(cut, [_frame(b"a"), _frame(b"b" * 50)])
    cut.write_bytes(cut.read_bytes()[:-20])  # a capture still being written: the end is cut
    cap = UdpCapture(cut)
    assert [d.payload for d in cap] == [b"a"]
    assert cap.skipped == {"truncated": 1}
    ng = tmp_path / "cut.pcapng"
    _write(ng, [_frame(b"a"), _frame(b"b" * 50)], pcapng=True)
    ng.write_bytes(ng.read_bytes()[:-20])
    with pytest.raises(CaptureError, match=r"cut\.pcapng: frame 2 is cut off or corrupt.*1 frames"):
        list(UdpCapture(ng))


@pytest.mark.parametrize(
    ("name", "packets"),
    [
        ("Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap", 10_000),  # pcapng
        ("Mdp3.Sbe.v1.8__MdIncrementalRefreshSessionStatistics.35.pcap", 356),
        ("Mdp3.Sbe.v1.8__MdIncrementalRefreshVolume.37.pcap", 112),
    ],
)
def test_the_shared_cme_captures_hold_the_packets_their_readme_counts(
    name: str, packets: int
) -> None:
    path = CME / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    cap = UdpCapture(path)
    payloads = [d.payload for d in cap]
    assert len(payloads) == packets
    assert not cap.skipped
    # Every payload is one MDP 3.0 packet: a 12-byte header, then messages whose u16 LE sizes
    # add up to the payload exactly.
    for p in payloads:
        pos = 12
        while pos < len(p):
            pos += int.from_bytes(p[pos : pos + 2], "little")
        assert pos == len(p)
    assert udp_payloads(path) == payloads
