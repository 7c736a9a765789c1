# SPDX-License-Identifier: MIT
"""A/B feed arbitration and gap tracking for sequenced UDP market data (sans-IO, issue 20).

Exchanges publish every packet twice, on an A and a B multicast feed; a receiver takes the
first copy of each sequence number from either, drops the second, and notices a gap when a
sequence number is missing from both. :class:`Arbiter` does that for any protocol whose
packets carry a first sequence number and a message count (:class:`Sequencing`):
MoldUDP64 (Nasdaq ITCH: a u64 sequence number of its first message and a message count) and
CME MDP 3.0 (a u32 packet sequence number, one "message" per packet here).

A gap is not lost at once: a packet ahead of the expected one is held (up to ``max_pending``
packets), the gap is reported by :meth:`Arbiter.due_gaps` after ``gap_timeout_ns`` (the other
feed usually fills it within microseconds) so the owner can ask for a retransmission (a
MoldUDP64 re-request) or a snapshot, and again every ``retry_ns``; after ``max_retries`` (or
when the held packets overflow) the missing messages are declared lost, counted and logged,
and delivery goes on from the next held packet. Recovered packets come back through
:meth:`Arbiter.on_packet` like any other (feed ``RECOVERY``).

Nothing here touches a socket or a clock: the caller passes ``now_ns``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from engine.fastlog import get_log

log = get_log(__name__)

FEED_A = 0
FEED_B = 1
RECOVERY = 2
FEED_NAMES = ("A", "B", "recovery")

#: MoldUDP64's message count of an End of Session packet.
MOLD_END_OF_SESSION = 0xFFFF
MOLD_HEADER = 20


class FeedError(ValueError):
    """A packet that cannot be sequenced (too short, a message cut off)."""


class Sequencing(Protocol):
    """Where a protocol's packets keep their sequence numbers."""

    def span(self, payload: bytes) -> tuple[int, int, bool]:
        """Return ``(first sequence number, message count, end of session)`` of a packet.

        A count of 0 is a heartbeat: its sequence number is the next one to be sent.
        """
        ...

    def trim(self, payload: bytes, skip: int) -> bytes:
        """Return the packet without its first ``skip`` messages (already delivered)."""
        ...


class MoldUdp64:
    """MoldUDP64 1.0: session (10 bytes), sequence number (u64 BE), count (u16 BE), messages.

    Each message is a u16 BE length and that many bytes; the sequence number is the first
    message's. A count of 0xFFFF is End of Session (no messages).
    """

    def span(self, payload: bytes) -> tuple[int, int, bool]:
        """Return the packet's first sequence number, its message count, end of session."""
        if len(payload) < MOLD_HEADER:
            raise FeedError(f"MoldUDP64 packet of {len(payload)} bytes: the header has 20")
        seq = int.from_bytes(payload[10:18], "big")
        count = int.from_bytes(payload[18:20], "big")
        if count == MOLD_END_OF_SESSION:
            return seq, 0, True
        return seq, count, False

    def trim(self, payload: bytes, skip: int) -> bytes:
        """Return the packet without its first ``skip`` messages, its header renumbered."""
        seq, count, _ = self.span(payload)
        pos = MOLD_HEADER
        for i in range(skip):
            if pos + 2 > len(payload):
                raise FeedError(
                    f"MoldUDP64 packet {seq}: message {i + 1} of {count} is cut off at byte {pos}"
                )
            pos += 2 + int.from_bytes(payload[pos : pos + 2], "big")
        head = payload[:10] + (seq + skip).to_bytes(8, "big") + (count - skip).to_bytes(2, "big")
        return head + payload[pos:]

    @staticmethod
    def packet(session: bytes, seq: int, messages: Sequence[bytes]) -> bytes:
        """Return a MoldUDP64 packet of ``messages`` (their first sequence number ``seq``)."""
        if len(session) != 10:
            raise ValueError(f"MoldUDP64 session {session!r} is not 10 bytes")
        parts = [session, seq.to_bytes(8, "big"), len(messages).to_bytes(2, "big")]
        for m in messages:
            parts.append(len(m).to_bytes(2, "big"))
            parts.append(m)
        return b"".join(parts)

    @staticmethod
    def messages(payload: bytes) -> list[bytes]:
        """Return the messages of a MoldUDP64 packet (raises :class:`FeedError` if cut)."""
        count = int.from_bytes(payload[18:20], "big")
        if count == MOLD_END_OF_SESSION:
            return []
        out: list[bytes] = []
        pos = MOLD_HEADER
        for i in range(count):
            n = int.from_bytes(payload[pos : pos + 2], "big")
            if pos + 2 + n > len(payload):
                raise FeedError(
                    f"MoldUDP64 packet {int.from_bytes(payload[10:18], 'big')}: message "
                    f"{i + 1} of {count} ({n} bytes) is cut off at byte {pos}"
                )
            out.append(payload[pos + 2 : pos + 2 + n])
            pos += 2 + n
        return out


class Mdp3Packets:
    """CME MDP 3.0: a u32 LE MsgSeqNum per packet; the packet is the unit of sequencing."""

    def span(self, payload: bytes) -> tuple[int, int, bool]:
        """Return the packet's sequence number, 1, False."""
        if len(payload) < 12:
            raise FeedError(f"MDP 3.0 packet of {len(payload)} bytes: the header has 12")
        return int.from_bytes(payload[0:4], "little"), 1, False

    def trim(self, payload: bytes, skip: int) -> bytes:
        """Return the packet (never called with ``skip`` > 0: a packet is one unit)."""
        if skip:
            raise FeedError("an MDP 3.0 packet cannot be cut")
        return payload


@dataclass(slots=True)
class Gap:
    """Messages ``first`` .. ``last`` (inclusive) missing from both feeds."""

    first: int
    last: int
    seen_ns: int
    requests: int = 0
    requested_ns: int = 0

    @property
    def count(self) -> int:
        """Return how many messages are missing."""
        return self.last - self.first + 1


@dataclass(slots=True)
class ArbiterStats:
    """What an :class:`Arbiter` saw (per feed: A, B, recovery)."""

    packets: list[int] = field(default_factory=lambda: [0, 0, 0])
    duplicates: list[int] = field(default_factory=lambda: [0, 0, 0])
    delivered_messages: int = 0
    gaps: int = 0
    recovered_messages: int = 0
    lost_messages: int = 0
    bad_packets: int = 0


class Arbiter:
    """Deliver each sequence number once and in order from two feeds and a recovery channel.

    ``on_packet`` returns the packets (trimmed of messages already delivered) that can be
    handed on now, in sequence order. ``next_seq`` is the first sequence number expected; None
    takes the first packet seen (a late joiner starts where the feed is, after a snapshot).
    """

    def __init__(
        self,
        sequencing: Sequencing,
        *,
        next_seq: int | None = None,
        gap_timeout_ns: int = 2_000_000,
        retry_ns: int = 50_000_000,
        max_retries: int = 5,
        max_pending: int = 65_536,
        name: str = "feed",
    ) -> None:
        self.seq = sequencing
        self.next_seq = next_seq
        self.gap_timeout_ns = gap_timeout_ns
        self.retry_ns = retry_ns
        self.max_retries = max_retries
        self.max_pending = max_pending
        self.name = name
        self.stats = ArbiterStats()
        self.ended = False
        self._pending: dict[int, bytes] = {}  # first seq -> packet, all ahead of next_seq
        self._heap: list[int] = []  # the pending packets' first seqs
        self._gap: Gap | None = None  # the messages missing before the first pending packet
        self._released: list[bytes] = []

    @property
    def gap(self) -> Gap | None:
        """Return the gap waiting to be filled, if any."""
        return self._gap

    @property
    def pending_packets(self) -> int:
        """Return how many packets ahead of a gap are held."""
        return len(self._pending)

    def on_packet(self, feed: int, payload: bytes, now_ns: int) -> list[bytes]:
        """Take a packet from ``feed``; return the packets to deliver now, in order."""
        st = self.stats
        st.packets[feed] += 1
        try:
            first, count, end = self.seq.span(payload)
        except FeedError as e:
            st.bad_packets += 1
            log.warning("%s: %s packet dropped: %s", self.name, FEED_NAMES[feed], e)
            return []
        if end:
            self.ended = True
        nxt = self.next_seq
        if nxt is None:
            nxt = self.next_seq = first
        if count == 0:  # heartbeat / end of session: its number is the next one to come
            if first > nxt and not self._pending:
                self._open_gap(nxt, first - 1, now_ns)
            return []
        stop = first + count
        if stop <= nxt:
            st.duplicates[feed] += 1
            return []
        if first > nxt:
            if first in self._pending:
                st.duplicates[feed] += 1
                return []
            self._pending[first] = payload
            heapq.heappush(self._heap, first)
            self._open_gap(nxt, self._heap[0] - 1, now_ns)
            if len(self._pending) > self.max_pending:
                return self._give_up(now_ns, f"over {self.max_pending} packets held")
            return []
        out = [payload if first == nxt else self.seq.trim(payload, nxt - first)]
        self._advance(stop)
        if self._pending:
            self._drain(out, now_ns)
        return out

    def _advance(self, stop: int) -> None:
        nxt = self.next_seq
        assert nxt is not None
        self.stats.delivered_messages += stop - nxt
        gap = self._gap
        if gap is not None:
            filled = min(stop, gap.last + 1) - max(nxt, gap.first)
            if filled > 0:
                self.stats.recovered_messages += filled
            if stop > gap.last:
                self._gap = None
            else:
                gap.first = stop
        self.next_seq = stop

    def _drain(self, out: list[bytes], now_ns: int) -> None:
        pending, heap = self._pending, self._heap
        while heap:
            nxt = self.next_seq
            assert nxt is not None
            nearest = heap[0]
            if nearest > nxt:  # still ahead: the messages between are missing
                self._open_gap(nxt, nearest - 1, now_ns)
                return
            heapq.heappop(heap)
            payload = pending.pop(nearest)
            first, count, _ = self.seq.span(payload)
            stop = first + count
            if stop > nxt:
                out.append(payload if first == nxt else self.seq.trim(payload, nxt - first))
                self._advance(stop)

    def _open_gap(self, first: int, last: int, now_ns: int) -> None:
        gap = self._gap
        if gap is None:
            self.stats.gaps += 1
            self._gap = Gap(first, last, now_ns)
        else:
            gap.first = first
            gap.last = last

    def due_gaps(self, now_ns: int) -> list[Gap]:
        """Return the gap to ask a retransmission of now (empty when none is due).

        A gap is due ``gap_timeout_ns`` after it was seen, then every ``retry_ns``; after
        ``max_retries`` requests its messages are declared lost and delivery moves on (the
        held packets behind it then come out of :meth:`take_released`).
        """
        gap = self._gap
        if gap is None:
            return []
        if gap.requests == 0:
            if now_ns - gap.seen_ns < self.gap_timeout_ns:
                return []
        elif now_ns - gap.requested_ns < self.retry_ns:
            return []
        if gap.requests >= self.max_retries:
            self._released += self._give_up(now_ns, f"{gap.requests} requests unanswered")
            return []
        gap.requests += 1
        gap.requested_ns = now_ns
        return [gap]

    def take_released(self) -> list[bytes]:
        """Return the held packets delivered when a gap was given up on (each once)."""
        out, self._released = self._released, []
        return out

    def _give_up(self, now_ns: int, why: str) -> list[bytes]:
        nxt = self.next_seq
        assert nxt is not None
        gap = self._gap
        resume = self._heap[0] if self._heap else (gap.last + 1 if gap else nxt)
        if resume > nxt:
            self.stats.lost_messages += resume - nxt
            log.error(
                "%s: messages %d to %d are lost (%s); going on from %d",
                self.name,
                nxt,
                resume - 1,
                why,
                resume,
            )
        self._gap = None
        self.next_seq = resume
        out: list[bytes] = []
        self._drain(out, now_ns)
        return out

    def skip_to(self, seq: int, now_ns: int) -> list[bytes]:
        """Start again at ``seq`` (after a snapshot); return held packets now deliverable."""
        self.next_seq = seq
        self._gap = None
        out: list[bytes] = []
        self._drain(out, now_ns)
        return out


__all__ = [
    "FEED_A",
    "FEED_B",
    "RECOVERY",
    "Arbiter",
    "ArbiterStats",
    "FeedError",
    "Gap",
    "Mdp3Packets",
    "MoldUdp64",
    "Sequencing",
]
