# SPDX-License-Identifier: MIT
"""UDP datagrams out of pcap and pcapng capture files (market-data captures, issue 20).

dpkt reads both file formats and the Ethernet / 802.1Q / IPv4 / IPv6 / UDP headers; this
module picks the UDP datagrams out, in capture order, with their capture time in ns and
their addresses, and counts what it skipped (non-UDP frames, IP fragments, frames cut short
by the capture's snap length) so an importer can say so instead of dropping data silently.

    reader = UdpCapture("day.pcapng")
    for d in reader:
        feed.on_datagram(d.payload, d.ts_ns)
    print(reader.skipped)
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import dpkt

# Link types (tcpdump.org/linktypes.html) this reader understands.
_LINK_ETHERNET = 1
_LINK_RAW = (101, 12, 14)  # DLT_RAW on its various platforms: an IP packet, no link header
_LINK_LINUX_SLL = 113
_LINK_LINUX_SLL2 = 276


class CaptureError(ValueError):
    """A capture file that cannot be read (names the file and why)."""


@dataclass(frozen=True, slots=True)
class Datagram:
    """One UDP datagram of a capture."""

    index: int  # the frame's number in the file, from 1 (as Wireshark counts)
    ts_ns: int  # capture time, ns since the epoch
    src: str
    sport: int
    dst: str
    dport: int
    payload: bytes


def _open(path: Path, f: BinaryIO) -> dpkt.pcap.Reader | dpkt.pcapng.Reader:
    magic = f.read(4)
    f.seek(0)
    try:
        if magic == b"\x0a\x0d\x0d\x0a":
            return dpkt.pcapng.Reader(f)
        return dpkt.pcap.Reader(f)
    except (ValueError, dpkt.NeedData, dpkt.UnpackError) as e:
        raise CaptureError(f"{path}: not a pcap or pcapng file ({e or magic.hex()})") from e


class UdpCapture:
    """The UDP datagrams of one capture file, iterated in file order (re-iterable).

    ``skipped`` counts, per reason, the frames that carried no whole UDP datagram; a frame
    that is cut off inside a datagram (snap length) counts as ``"truncated"``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise CaptureError(f"{self.path}: no such capture file")
        self.skipped: Counter[str] = Counter()
        self.frames = 0

    def __iter__(self) -> Iterator[Datagram]:
        self.skipped.clear()
        self.frames = 0
        with self.path.open("rb") as f:
            reader = _open(self.path, f)
            link = reader.datalink()
            decode_link = _link_decoder(self.path, link)
            try:
                for ts, frame in reader:
                    self.frames += 1
                    d = self._datagram(decode_link, ts, frame)
                    if d is not None:
                        yield d
            except (dpkt.NeedData, dpkt.UnpackError, ValueError) as e:
                raise CaptureError(
                    f"{self.path}: frame {self.frames + 1} is cut off or corrupt ({e}); "
                    f"{self.frames} frames were read before it"
                ) from e

    def _datagram(self, decode_link: _LinkDecoder, ts: float, frame: bytes) -> Datagram | None:
        try:
            ip = decode_link(frame)
        except (dpkt.NeedData, dpkt.UnpackError):
            self.skipped["truncated"] += 1
            return None
        if isinstance(ip, dpkt.ip.IP):
            if ip.mf or ip.offset:
                self.skipped["IP fragment"] += 1
                return None
            family = socket.AF_INET
        elif isinstance(ip, dpkt.ip6.IP6):
            family = socket.AF_INET6
        else:
            self.skipped["not IP"] += 1
            return None
        udp = ip.data
        if not isinstance(udp, dpkt.udp.UDP):
            self.skipped["not UDP"] += 1
            return None
        payload = bytes(udp.data)
        if udp.ulen and len(payload) != udp.ulen - 8:
            self.skipped["truncated"] += 1
            return None
        return Datagram(
            index=self.frames,
            ts_ns=_ts_ns(ts),
            src=socket.inet_ntop(family, ip.src),
            sport=udp.sport,
            dst=socket.inet_ntop(family, ip.dst),
            dport=udp.dport,
            payload=payload,
        )


def _ts_ns(ts: float | object) -> int:
    # dpkt gives a float of seconds (pcapng with ns resolution too): round to the µs/ns grid.
    return round(float(ts) * 1e9)  # type: ignore[arg-type]


_LinkDecoder = Callable[[bytes], object]


def _link_decoder(path: Path, link: int) -> _LinkDecoder:
    if link == _LINK_ETHERNET:
        return lambda frame: dpkt.ethernet.Ethernet(frame).data
    if link in _LINK_RAW:
        return _raw_ip
    if link == _LINK_LINUX_SLL:
        return lambda frame: dpkt.sll.SLL(frame).data
    if link == _LINK_LINUX_SLL2:
        return lambda frame: dpkt.sll2.SLL2(frame).data
    raise CaptureError(
        f"{path}: link type {link} is not read (Ethernet, raw IP and Linux cooked captures are)"
    )


def _raw_ip(frame: bytes) -> object:
    if frame and frame[0] >> 4 == 6:
        return dpkt.ip6.IP6(frame)
    return dpkt.ip.IP(frame)


def udp_payloads(path: str | Path) -> list[bytes]:
    """Return every UDP payload of the capture at ``path``, in file order."""
    return [d.payload for d in UdpCapture(path)]


__all__ = ["CaptureError", "Datagram", "UdpCapture", "udp_payloads"]
