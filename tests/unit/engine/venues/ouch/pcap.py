# SPDX-License-Identifier: MIT
"""A tiny pcap reader for the shared OUCH captures: TCP payloads of Ethernet/IPv4 frames.

Reads the classic pcap format in either byte order, with microsecond (``a1b2c3d4``) or
nanosecond (``a1b23c4d``) timestamps; skips 802.1Q VLAN tags and cuts Ethernet trailer bytes
off by the IPv4 total length. No pcapng, no IPv6, no reassembly (one message per packet).
"""

import struct
from dataclasses import dataclass
from pathlib import Path

#: The shared captures, found next to the project (``../shared/data``).
CAPTURES = Path(__file__).resolve().parents[5].parent / "shared/data/nasdaq_itch_ouch/ouch"


@dataclass(frozen=True)
class Packet:
    ts_ns: int  # capture time, ns since the epoch
    payload: bytes  # the TCP payload


def read_tcp_payloads(path: Path) -> list[Packet]:
    data = path.read_bytes()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap file (magic {magic.hex()})")
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        raise ValueError(f"{path}: link type {linktype}, only Ethernet (1) is read")
    out = []
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[pos : pos + 16])
        frame = data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        ts = sec * 1_000_000_000 + (frac if nanos else frac * 1000)
        eth = 14
        ethertype = struct.unpack(">H", frame[12:14])[0]
        while ethertype == 0x8100:  # 802.1Q tag
            ethertype = struct.unpack(">H", frame[eth + 2 : eth + 4])[0]
            eth += 4
        if ethertype != 0x0800:
            continue
        ip = frame[eth:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        if ip[9] != 6:  # TCP
            continue
        ip = ip[:total]  # drop the Ethernet trailer
        tcp = ip[ihl:]
        doff = (tcp[12] >> 4) * 4
        out.append(Packet(ts, bytes(tcp[doff:])))
    return out
