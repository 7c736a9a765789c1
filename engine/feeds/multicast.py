# SPDX-License-Identifier: MIT
"""Live UDP multicast feeds: A/B receiver with gap recovery, and a MoldUDP64 publisher.

:class:`FeedReceiver` joins the A and B groups of one feed, passes every datagram through an
:class:`~engine.feeds.arbiter.Arbiter` and hands the packets that come out, once each and in
sequence order, to its ``on_packets`` callback. When both feeds miss the same packets it
asks the publisher's retransmission server for them (a MoldUDP64 re-request: session,
sequence number, count, answered by unicast packets), retries, and in the end declares them
lost (counted, logged) rather than waiting for ever.

:class:`MoldPublisher` is the other end: it numbers messages, packs them into MoldUDP64
packets (up to ``max_payload`` bytes), sends each packet to the A and B groups, keeps the
last ``history`` messages and answers re-requests from them. The simulator publishes its
market through it; tests and benchmarks use both ends on loopback.

Multicast on loopback needs the sender's ``IP_MULTICAST_IF`` and the receiver's membership
both on 127.0.0.1 (:func:`open_receiver`, :func:`open_sender`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from engine.fastlog import get_log
from engine.feeds.arbiter import (
    FEED_A,
    FEED_B,
    MOLD_END_OF_SESSION,
    RECOVERY,
    Arbiter,
    Gap,
    MoldUdp64,
    Sequencing,
)

log = get_log(__name__)

#: A MoldUDP64 re-request: session (10), sequence number (u64 BE), count (u16 BE).
REQUEST = struct.Struct(">10sQH")
#: Largest UDP payload sent (fits a 1,500-byte Ethernet frame with IPv4 and UDP headers).
MAX_PAYLOAD = 1_472


@dataclass(frozen=True, slots=True)
class Group:
    """A multicast group and port, joined on ``interface``."""

    address: str
    port: int
    interface: str = "127.0.0.1"

    def __str__(self) -> str:
        return f"{self.address}:{self.port} on {self.interface}"


def open_receiver(group: Group, *, rcvbuf: int = 8 << 20) -> socket.socket:
    """Return a non-blocking UDP socket bound to ``group`` and joined to it.

    Raises
    ------
    OSError
        If the group cannot be joined (names the group and the interface).
    """
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.bind((group.address, group.port))
        mreq = struct.pack(
            "4s4s", socket.inet_aton(group.address), socket.inet_aton(group.interface)
        )
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        s.setblocking(False)
    except OSError as e:
        s.close()
        raise OSError(e.errno, f"cannot join multicast group {group}: {e.strerror}") from e
    return s


def open_sender(interface: str = "127.0.0.1", *, ttl: int = 1) -> socket.socket:
    """Return a UDP socket that sends multicast out of ``interface`` (looped back locally)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    return s


# ----------------------------------------------------------------------------- publisher


class MoldPublisher:
    """Publish messages as MoldUDP64 packets on an A and a B group; answer re-requests.

    ``publish`` numbers and packs messages (one packet per ``max_payload`` bytes) and sends
    each packet to both groups. ``serve_requests`` answers re-requests on a unicast UDP port
    from the last ``history`` messages. ``drop`` (a test hook) is a callable deciding, per
    ``(feed, first sequence number)``, whether that copy is left unsent — to make gaps.
    """

    def __init__(
        self,
        session: bytes,
        a: Group,
        b: Group | None = None,
        *,
        history: int = 1 << 20,
        max_payload: int = MAX_PAYLOAD,
        next_seq: int = 1,
    ) -> None:
        if len(session) != 10:
            raise ValueError(f"MoldUDP64 session {session!r} is not 10 bytes")
        self.session = session
        self.groups = [a] if b is None else [a, b]
        self.next_seq = next_seq
        self.max_payload = max_payload
        self._sock = open_sender(a.interface)
        self._history: deque[bytes] = deque(maxlen=history)
        self._history_first = next_seq  # the sequence number of _history[0]
        self.drop: Callable[[int, int], bool] | None = None
        self.packets_sent = 0
        self.requests_answered = 0
        self._server: asyncio.DatagramTransport | None = None

    def publish(self, messages: Sequence[bytes]) -> int:
        """Send ``messages`` in as few packets as fit; return the next sequence number."""
        hist = self._history
        full = len(hist) == hist.maxlen
        for m in messages:
            if full:
                self._history_first += 1
            hist.append(m)
        i = 0
        n = len(messages)
        while i < n:
            size = 20
            j = i
            while j < n and (j == i or size + 2 + len(messages[j]) <= self.max_payload):
                size += 2 + len(messages[j])
                j += 1
            self._send(MoldUdp64.packet(self.session, self.next_seq, messages[i:j]))
            self.next_seq += j - i
            i = j
        return self.next_seq

    def heartbeat(self) -> None:
        """Send a heartbeat (count 0, the next sequence number) on both groups."""
        self._send(self.session + self.next_seq.to_bytes(8, "big") + b"\x00\x00")

    def end_session(self) -> None:
        """Send End of Session on both groups."""
        self._send(
            self.session + self.next_seq.to_bytes(8, "big") + MOLD_END_OF_SESSION.to_bytes(2, "big")
        )

    def _send(self, packet: bytes) -> None:
        seq = int.from_bytes(packet[10:18], "big")
        for feed, g in enumerate(self.groups):
            if self.drop is not None and self.drop(feed, seq):
                continue
            self._sock.sendto(packet, (g.address, g.port))  # blocks while the buffer is full
        self.packets_sent += 1

    def retransmission(self, seq: int, count: int) -> list[bytes]:
        """Return the packets answering a re-request of ``count`` messages from ``seq``."""
        first = max(seq, self._history_first)
        stop = min(seq + count, self.next_seq)
        out: list[bytes] = []
        i = first
        hist = self._history
        while i < stop:
            size = 20
            msgs: list[bytes] = []
            while i < stop and (
                not msgs or size + 2 + len(hist[i - self._history_first]) <= self.max_payload
            ):
                m = hist[i - self._history_first]
                msgs.append(m)
                size += 2 + len(m)
                i += 1
            out.append(MoldUdp64.packet(self.session, i - len(msgs), msgs))
        return out

    async def serve_requests(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Answer re-requests on ``host:port`` (0: any free port); return the port."""
        loop = asyncio.get_running_loop()
        pub = self

        class _Server(asyncio.DatagramProtocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.transport = transport

            def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
                if len(data) != REQUEST.size:
                    log.warning("MoldUDP64 re-request of %d bytes from %s ignored", len(data), addr)
                    return
                session, seq, count = REQUEST.unpack(data)
                if session != pub.session:
                    log.warning(
                        "MoldUDP64 re-request for session %r from %s ignored", session, addr
                    )
                    return
                for p in pub.retransmission(seq, count):
                    self.transport.sendto(p, addr)  # type: ignore[attr-defined]
                pub.requests_answered += 1

        transport, _ = await loop.create_datagram_endpoint(_Server, local_addr=(host, port))
        self._server = transport
        sockname = transport.get_extra_info("sockname")
        return int(sockname[1])

    def close(self) -> None:
        """Close the sockets."""
        if self._server is not None:
            self._server.close()
        self._sock.close()


# ----------------------------------------------------------------------------- receiver


class FeedReceiver:
    """Receive one feed's A and B groups, arbitrate, recover gaps, deliver in order.

    ``on_packets(packets, now_ns)`` gets each batch of in-order packets. ``recovery`` is the
    publisher's re-request server (host, port) for MoldUDP64 feeds; without it a gap is
    declared lost after the arbiter's retries, and ``on_lost(count)`` is told so before the
    packets after the gap are delivered (a book built from the feed must start again).
    """

    def __init__(
        self,
        a: Group,
        b: Group | None,
        on_packets: Callable[[list[bytes], int], None],
        *,
        sequencing: Sequencing | None = None,
        session: bytes = b"",
        recovery: tuple[str, int] | None = None,
        arbiter: Arbiter | None = None,
        name: str = "feed",
        on_lost: Callable[[int], None] | None = None,
    ) -> None:
        self.groups = [a] if b is None else [a, b]
        #: Told how many messages were declared lost, before the packets after them come.
        self.on_lost = on_lost
        self.on_packets = on_packets
        self.arbiter = arbiter or Arbiter(sequencing or MoldUdp64(), name=name)
        self.session = session
        self.recovery = recovery
        self.requests_sent = 0
        self._transports: list[asyncio.DatagramTransport] = []
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Join the groups and open the recovery socket."""
        loop = self._loop = asyncio.get_running_loop()
        for feed, g in enumerate(self.groups):
            sock = open_receiver(g)
            t, _ = await loop.create_datagram_endpoint(
                partial(_FeedProtocol, self, feed), sock=sock
            )
            self._transports.append(t)
        if self.recovery is not None:
            t, _ = await loop.create_datagram_endpoint(
                lambda: _FeedProtocol(self, RECOVERY), remote_addr=self.recovery
            )
            self._transports.append(t)

    def _received(self, feed: int, data: bytes) -> None:
        now = time.monotonic_ns()
        out = self.arbiter.on_packet(feed, data, now)
        if out:
            self.on_packets(out, now)
        if self.arbiter.gap is not None and self._timer is None:
            self._arm(self.arbiter.gap_timeout_ns)

    def _arm(self, after_ns: int) -> None:
        assert self._loop is not None
        self._timer = self._loop.call_later(after_ns / 1e9, self._check_gaps)

    def _check_gaps(self) -> None:
        self._timer = None
        now = time.monotonic_ns()
        arb = self.arbiter
        lost = arb.stats.lost_messages
        for gap in arb.due_gaps(now):
            self._request(gap)
        if arb.stats.lost_messages > lost and self.on_lost is not None:
            self.on_lost(arb.stats.lost_messages - lost)
        released = arb.take_released()
        if released:
            self.on_packets(released, now)
        if arb.gap is not None:
            self._arm(min(arb.retry_ns, arb.gap_timeout_ns))

    def _request(self, gap: Gap) -> None:
        if self.recovery is None or len(self._transports) <= len(self.groups):
            return
        t = self._transports[-1]
        first = gap.first
        while first <= gap.last:  # one request per 65,535 messages
            count = min(gap.last - first + 1, 0xFFFE)
            t.sendto(REQUEST.pack(self.session, first, count))
            self.requests_sent += 1
            first += count

    def close(self) -> None:
        """Leave the groups and close the sockets."""
        if self._timer is not None:
            self._timer.cancel()
        for t in self._transports:
            t.close()
        self._transports.clear()


class _FeedProtocol(asyncio.DatagramProtocol):
    def __init__(self, receiver: FeedReceiver, feed: int) -> None:
        self.receiver = receiver
        self.feed = feed

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self.receiver._received(self.feed, data)

    def error_received(self, exc: Exception) -> None:
        log.warning("feed %s: %s", ("A", "B", "recovery")[self.feed], exc)


__all__ = [
    "FEED_A",
    "FEED_B",
    "MAX_PAYLOAD",
    "REQUEST",
    "FeedReceiver",
    "Group",
    "MoldPublisher",
    "open_receiver",
    "open_sender",
]
