# SPDX-License-Identifier: MIT
"""MoldUDP64 framing with sequence tracking, in front of the ITCH 5.0 decoder.

A MoldUDP64 downstream packet is a 10-byte session, the sequence number of its first message
(``u64`` big-endian), a message count (``u16``; 0 for a heartbeat, 0xFFFF at the end of the
session) and, per message, a ``u16`` length and the message. :class:`MoldUDP64Stream` takes
packets in arrival order, one batch at a time, and for each packet says whether it opened a
gap, arrived late into one (reordered or retransmitted), repeated messages already seen
(duplicate, or partly: overlap), or was a heartbeat or the end of the session. Messages
already seen are not decoded again. Sequence tracking and decoding are kernels over the
whole batch; Python only joins the payloads.

    stream = MoldUDP64Stream()
    batch = stream.feed(udp_payloads("itch.pcap"))
    batch.decoded["A"], stream.report().gaps
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.feeds.itch import _kernels as k
from engine.feeds.itch.decode import Arena, Decoded, ItchDecodeError, decode_buffer
from engine.feeds.pcap import UdpCapture

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]

#: Per-packet status bits (``MoldBatch.status``).
HEARTBEAT: int = k.PK_HEARTBEAT
END_OF_SESSION: int = k.PK_END
GAP: int = k.PK_GAP
LATE: int = k.PK_LATE
DUPLICATE: int = k.PK_DUPLICATE
OVERLAP: int = k.PK_OVERLAP

HEADER_SIZE: int = k.MOLD_HEADER
SESSION_SIZE: int = 10


class MoldError(ValueError):
    """A packet that is not MoldUDP64 of this stream; ``partial`` holds the batch before it."""

    def __init__(self, message: str, partial: MoldBatch, packet: int) -> None:
        super().__init__(message)
        self.partial = partial
        self.packet = packet


@dataclass(frozen=True, slots=True)
class MoldBatch:
    """What one :meth:`MoldUDP64Stream.feed` call produced.

    ``status[i]`` holds the ``GAP | LATE | DUPLICATE | OVERLAP | HEARTBEAT | END_OF_SESSION``
    bits of packet ``i``; ``seqs`` and ``counts`` its header fields. ``packets`` (the joined
    payloads and each packet's byte range) and ``keep`` (one flag per message: 0 for one
    already seen) let :meth:`engine.feeds.itch.book.ItchBooks.apply_batch` apply the same
    messages to the books.
    """

    decoded: Decoded
    status: U8
    seqs: I64
    counts: I64
    packets: tuple[U8, I64, I64]
    keep: U8


@dataclass(frozen=True, slots=True)
class MoldReport:
    """Sequence tracking of a stream so far.

    ``gaps`` are the missing ranges still open, as ``(first, last)`` sequence numbers
    (inclusive); ``missing`` is how many messages they hold.
    """

    session: bytes
    packets: int
    messages: int
    heartbeats: int
    end_of_session: bool
    gap_packets: int
    late_packets: int
    duplicate_packets: int
    overlap_packets: int
    skipped_messages: int
    next_expected: int
    gaps: tuple[tuple[int, int], ...]

    @property
    def missing(self) -> int:
        """Messages in the open gaps."""
        return sum(b - a + 1 for a, b in self.gaps)


def pack_payloads(payloads: Sequence[bytes]) -> tuple[U8, I64, I64]:
    """Join datagram payloads into one buffer; return it with each payload's byte range."""
    lens = np.fromiter((len(p) for p in payloads), np.int64, len(payloads))
    ends = np.cumsum(lens)
    starts = ends - lens
    buf = np.frombuffer(b"".join(payloads), np.uint8)
    return buf, starts, ends


class MoldUDP64Stream:
    """One MoldUDP64 session's packets, decoded once each, with gaps and repeats reported.

    Parameters
    ----------
    expected : int or None
        Sequence number of the first message expected (1: a session from its start); None
        takes the first packet's (joining a session late).
    max_gaps : int
        Open gaps the tracker can hold at once.
    """

    def __init__(self, expected: int | None = 1, max_gaps: int = 4096) -> None:
        if expected is not None and expected < 1:
            raise ValueError(f"expected: must be >= 1 or None, got {expected}")
        if max_gaps < 1:
            raise ValueError(f"max_gaps: must be >= 1, got {max_gaps}")
        self._state = np.zeros(k.T_WIDTH, np.int64)
        self._state[k.T_EXPECTED] = expected or 0
        self._join = expected is None
        self._gaps = np.zeros((max_gaps, 2), np.int64)
        self.session: bytes | None = None
        self._n = {"packets": 0, "messages": 0, "skipped": 0}
        self._bits = dict.fromkeys((HEARTBEAT, END_OF_SESSION, GAP, LATE, DUPLICATE, OVERLAP), 0)
        self._arena: Arena | None = None

    def reuse_output(self) -> None:
        """Decode every batch into one reused buffer.

        A batch's rows are then valid only until the next :meth:`feed`.
        """
        self._arena = Arena()

    def feed(
        self, payloads: Sequence[bytes] | tuple[U8, I64, I64], source: str = "<packets>"
    ) -> MoldBatch:
        """Track and decode a batch of packets (payloads, or a packed buffer and ranges).

        Raises
        ------
        MoldError
            At a packet shorter than the header or of another session; the packets before
            it are tracked and decoded (``partial``).
        ItchDecodeError
            At a bad ITCH message inside a packet; the packets before that packet are
            tracked and decoded (``partial``), the stream stays usable.
        """
        buf, starts, ends = payloads if isinstance(payloads, tuple) else pack_payloads(payloads)
        n = int(starts.shape[0])
        bad, why = self._first_bad_packet(buf, starts, ends)
        upto = n if bad < 0 else bad
        state0, gaps0 = self._state.copy(), self._gaps.copy()
        try:
            batch = self._run(buf, starts[:upto], ends[:upto], source)
        except ItchDecodeError as e:
            self._state[:], self._gaps[:] = state0, gaps0
            partial = self._run(buf, starts[: e.packet], ends[: e.packet], source)
            raise ItchDecodeError(str(e), partial.decoded, e.code, e.packet, e.offset) from None
        if bad >= 0:
            raise MoldError(f"{source}: packet {bad}: {why}", batch, bad)
        return batch

    def _first_bad_packet(self, buf: U8, starts: I64, ends: I64) -> tuple[int, str]:
        short = np.flatnonzero(ends - starts < HEADER_SIZE)
        n = int(short[0]) if short.shape[0] else int(starts.shape[0])
        if n and self.session is None:
            self.session = bytes(buf[starts[0] : starts[0] + SESSION_SIZE])
        if n:
            sess = buf[starts[:n, None] + np.arange(SESSION_SIZE)]
            want = np.frombuffer(self.session or b"", np.uint8)
            other = np.flatnonzero((sess != want).any(axis=1))
            if other.shape[0]:
                i = int(other[0])
                got = bytes(sess[i])
                return i, f"session {got!r} is not this stream's session {self.session!r}"
        if short.shape[0]:
            i = int(short[0])
            return i, f"{int(ends[i] - starts[i])} bytes, shorter than the 20-byte header"
        return -1, ""

    def _run(self, buf: U8, starts: I64, ends: I64, source: str) -> MoldBatch:
        n = int(starts.shape[0])
        seqs = np.zeros(n, np.int64)
        counts = np.zeros(n, np.int64)
        k.mold_headers(buf, starts, seqs, counts)
        if self._join and n:
            self._state[k.T_EXPECTED] = seqs[0]
            self._join = False
        real = np.where(counts == k.MOLD_END_OF_SESSION, 0, counts)
        keep = np.zeros(int(real.sum()), np.uint8)
        status = np.zeros(n, np.uint8)
        done = int(k.mold_track(seqs, counts, self._state, self._gaps, keep, status))
        if done < n:
            raise MoldError(
                f"{source}: packet {done}: more than {self._gaps.shape[0]} open gaps "
                "(raise max_gaps)",
                self._run(buf, starts[:0], ends[:0], source),
                done,
            )
        decoded = decode_buffer(
            buf, starts, ends, mold=True, keep=keep, source=source, arena=self._arena
        )
        self._n["packets"] += n
        self._n["messages"] += int(keep.shape[0])
        self._n["skipped"] += int(keep.shape[0]) - decoded.n_messages
        for bit in self._bits:
            self._bits[bit] += int(np.count_nonzero(status & bit))
        return MoldBatch(decoded, status, seqs, counts, (buf, starts, ends), keep)

    def report(self) -> MoldReport:
        """Return the sequence tracking so far."""
        ng = int(self._state[k.T_NGAPS])
        return MoldReport(
            session=self.session or b"",
            packets=self._n["packets"],
            messages=self._n["messages"],
            heartbeats=self._bits[HEARTBEAT],
            end_of_session=self._bits[END_OF_SESSION] > 0,
            gap_packets=self._bits[GAP],
            late_packets=self._bits[LATE],
            duplicate_packets=self._bits[DUPLICATE],
            overlap_packets=self._bits[OVERLAP],
            skipped_messages=self._n["skipped"],
            next_expected=int(self._state[k.T_EXPECTED]),
            gaps=tuple((int(a), int(b) - 1) for a, b in self._gaps[:ng]),
        )


def decode_packets(
    payloads: Sequence[bytes] | tuple[U8, I64, I64], source: str = "<packets>"
) -> Decoded:
    """Decode every message of every MoldUDP64 packet as is, with no sequence tracking.

    For captures whose sequence numbers cannot be trusted (the shared sample captures have
    them zeroed); a live or recorded session goes through :class:`MoldUDP64Stream`.

    Raises
    ------
    ItchDecodeError
        At the first bad packet or message (``partial``: the messages before it).
    """
    buf, starts, ends = payloads if isinstance(payloads, tuple) else pack_payloads(payloads)
    return decode_buffer(buf, starts, ends, mold=True, source=source)


def read_capture(
    path: str | Path, *, track: bool = True, expected: int | None = None
) -> tuple[Decoded, MoldReport | None]:
    """Decode every MoldUDP64 packet of a pcap/pcapng capture (UDP payloads, file order).

    With ``track`` the packets go through a :class:`MoldUDP64Stream` (``expected`` defaults
    to None: a capture usually starts inside a session) and its report is returned;
    without, every message is decoded as is (:func:`decode_packets`) and the report is None.
    """
    payloads = [d.payload for d in UdpCapture(path)]
    if not track:
        return decode_packets(payloads, source=str(path)), None
    stream = MoldUDP64Stream(expected=expected)
    batch = stream.feed(payloads, source=str(path))
    return batch.decoded, stream.report()


__all__ = [
    "DUPLICATE",
    "END_OF_SESSION",
    "GAP",
    "HEADER_SIZE",
    "HEARTBEAT",
    "LATE",
    "OVERLAP",
    "MoldBatch",
    "MoldError",
    "MoldReport",
    "MoldUDP64Stream",
    "decode_packets",
    "pack_payloads",
    "read_capture",
]
