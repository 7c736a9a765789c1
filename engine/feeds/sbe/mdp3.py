# SPDX-License-Identifier: MIT
"""CME MDP 3.0 captures: packet framing, sequence gaps and whole-capture SBE decoding.

An MDP 3.0 packet (one UDP payload) is a 12-byte header, ``MsgSeqNum`` (u32) and
``SendingTime`` (u64 ns), followed by messages, each a ``MsgSize`` (u16, counting itself) and
an SBE message (header, root block, groups). :func:`decode_capture` reads a pcap or pcapng
file (:class:`~engine.feeds.pcap.UdpCapture`), decodes every packet with the schema in a few
kernel calls (:class:`~engine.feeds.sbe.decoder.SbeDecoder`), and checks each channel's
(destination address and port) sequence numbers:

    cap = decode_capture("day.pcapng", "templates_FixBinary.xml")
    book = cap.template(32)                       # MDIncrementalRefreshBook32 rows
    cap.packets["seq"], cap.packets["seq_status"] # per packet
    print(cap.sequence)                           # drops, duplicates, reordered, per channel
    print(cap.issues)                             # skipped packets and messages, with why

Nothing before a bad packet or message is lost: a cut packet keeps its whole messages, an
unknown template or a message of another schema is skipped and counted (MsgSize frames the
next one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.feeds.pcap import UdpCapture
from engine.feeds.sbe import _kernels as k
from engine.feeds.sbe.decoder import (
    MDP3_FRAMING,
    Decoded,
    DecodeIssue,
    SbeDecoder,
    TemplateRows,
    pack_packets,
)
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema

#: ``seq_status`` of a packet.
SEQ_IN_ORDER = 0
SEQ_AFTER_GAP = 1  # sequence numbers were skipped just before it
SEQ_DUPLICATE = 2  # its number came before (an A/B feed copy, a resend)
SEQ_LATE = 3  # it fills a gap left earlier (reordered)
SEQ_NONE = 4  # no sequence number (packet shorter than its header)

#: One row per packet of a decoded capture.
PACKET_DTYPE = np.dtype(
    [
        ("frame", "<i8"),  # frame number in the capture file, from 1 (0: not from a file)
        ("ts_ns", "<i8"),  # capture time (0: not from a file)
        ("channel", "<i8"),  # index into DecodedCapture.channels
        ("seq", "<i8"),  # MsgSeqNum (-1: none)
        ("sending_time", "<i8"),  # SendingTime, ns since the epoch
        ("n_messages", "<i8"),  # messages framed (skipped ones included)
        ("first_message", "<i8"),  # row of its first message in DecodedCapture.messages
        ("status", "<i8"),  # 0, or the issue code that stopped its framing
        ("seq_status", "<i8"),  # SEQ_*
    ]
)

#: Widest span of sequence numbers of one channel that the gap check handles.
MAX_SEQ_SPAN = 1 << 28


@dataclass(frozen=True)
class ChannelSequence:
    """Sequence numbers of one channel: what arrived out of order, and what never arrived."""

    channel: str
    packets: int
    first: int
    last: int
    duplicates: int
    reordered: int  # late packets that filled an earlier gap
    gaps: tuple[tuple[int, int], ...]  # (first, last) numbers that never arrived

    @property
    def missing(self) -> int:
        """Sequence numbers that never arrived."""
        return sum(b - a + 1 for a, b in self.gaps)

    def __str__(self) -> str:
        gaps = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.gaps[:10])
        more = f" (+{len(self.gaps) - 10} more)" if len(self.gaps) > 10 else ""
        return (
            f"{self.channel}: {self.packets} packets, seq {self.first}..{self.last}, "
            f"{self.missing} missing{': ' + gaps + more if gaps else ''}, "
            f"{self.duplicates} duplicates, {self.reordered} reordered"
        )


@dataclass
class DecodedCapture:
    """An MDP 3.0 capture decoded: per-template rows, packets, messages, issues, sequence."""

    path: Path | None
    decoded: Decoded
    packets: npt.NDArray[np.void]  # PACKET_DTYPE
    channels: list[str]
    sequence: list[ChannelSequence]
    skipped_frames: Counter[str] = field(default_factory=Counter)

    @property
    def schema(self) -> Schema:
        """The schema the capture was decoded with."""
        return self.decoded.schema

    @property
    def messages(self) -> npt.NDArray[np.void]:
        """One row per framed message (``decoder.MESSAGE_DTYPE``), in capture order."""
        return self.decoded.messages

    @property
    def issues(self) -> list[DecodeIssue]:
        """Skipped packets and messages, with where and why."""
        return self.decoded.issues

    @property
    def skipped(self) -> Counter[str]:
        """How many packets or messages were skipped, by reason."""
        return self.decoded.skipped

    def template(self, key: int | str) -> TemplateRows:
        """Return the rows of one message type, by templateId or name."""
        return self.decoded.template(key)

    def counts(self) -> Counter[str]:
        """Return how many messages of each name were decoded."""
        out: Counter[str] = Counter()
        for tid, rows in self.decoded.templates.items():
            if len(rows):
                out[self.schema.messages[tid].description or rows.name] = len(rows)
        return out


def _as_schema(schema: Schema | str | Path) -> Schema:
    return schema if isinstance(schema, Schema) else load_schema(schema)


def check_sequence(
    seqs: npt.NDArray[np.int64], channel_of: npt.NDArray[np.int64], names: Sequence[str]
) -> tuple[npt.NDArray[np.int64], list[ChannelSequence]]:
    """Check each channel's packet sequence numbers in arrival order.

    Returns each packet's ``SEQ_*`` status and one report per channel: the numbers that never
    arrived (gaps, as ranges), duplicates, and late packets that filled a gap (reordered).
    """
    status = np.full(seqs.shape[0], SEQ_NONE, dtype=np.int64)
    reports: list[ChannelSequence] = []
    for c, name in enumerate(names):
        idx = np.flatnonzero(channel_of == c)
        s = seqs[idx]
        valid = s[s >= 0]
        if valid.size == 0:
            reports.append(ChannelSequence(name, int(idx.size), -1, -1, 0, 0, ()))
            continue
        first, last = int(valid.min()), int(valid.max())
        if last - first >= MAX_SEQ_SPAN:
            raise ValueError(
                f"{name}: sequence numbers span {first}..{last}, too wide to check for gaps"
            )
        seen = np.zeros(last - first + 1, dtype=np.uint8)
        st = np.zeros(idx.size, dtype=np.int64)
        k.sequence_check(np.ascontiguousarray(s), first, seen, st)
        status[idx] = st
        missing = np.flatnonzero(seen == 0)
        gaps: list[tuple[int, int]] = []
        if missing.size:
            breaks = np.flatnonzero(np.diff(missing) != 1)
            lo = np.concatenate(([0], breaks + 1))
            hi = np.concatenate((breaks, [missing.size - 1]))
            gaps = [
                (first + int(missing[a]), first + int(missing[b]))
                for a, b in zip(lo, hi, strict=True)
            ]
        reports.append(
            ChannelSequence(
                channel=name,
                packets=int(idx.size),
                first=first,
                last=last,
                duplicates=int(np.count_nonzero(st == SEQ_DUPLICATE)),
                reordered=int(np.count_nonzero(st == SEQ_LATE)),
                gaps=tuple(gaps),
            )
        )
    return status, reports


def decode_payloads(
    payloads: Sequence[bytes],
    schema: Schema | str | Path,
    *,
    channels: Sequence[str] | None = None,
    frames: npt.ArrayLike | None = None,
    ts_ns: npt.ArrayLike | None = None,
    decoder: SbeDecoder | None = None,
) -> DecodedCapture:
    """Decode MDP 3.0 packets (UDP payloads), all at once.

    Parameters
    ----------
    payloads
        The packets, in arrival order.
    schema
        The schema (or its file) the packets were sent with.
    channels
        Each packet's channel name (its sequence numbers are checked per channel; default:
        one channel).
    frames, ts_ns
        Each packet's frame number and capture time, kept in :attr:`DecodedCapture.packets`.
    decoder
        A decoder made for ``schema`` already (saves compiling its tables again).
    """
    sch = decoder.schema if decoder is not None else _as_schema(schema)
    dec = decoder or SbeDecoder(sch, MDP3_FRAMING)
    buf, starts, lengths = pack_packets(list(payloads))
    decoded = dec.decode(buf, starts, lengths)
    n = len(payloads)
    names = sorted(set(channels)) if channels is not None else ["mdp3"]
    index = {c: i for i, c in enumerate(names)}
    channel_of = (
        np.fromiter((index[c] for c in channels), dtype=np.int64, count=n)
        if channels is not None
        else np.zeros(n, dtype=np.int64)
    )
    pk = decoded.packets
    table = np.zeros(n, dtype=PACKET_DTYPE)
    table["frame"] = 0 if frames is None else np.asarray(frames, dtype=np.int64)
    table["ts_ns"] = 0 if ts_ns is None else np.asarray(ts_ns, dtype=np.int64)
    table["channel"] = channel_of
    table["seq"] = pk[:, k.PK_SEQ]
    table["sending_time"] = pk[:, k.PK_TIME]
    table["n_messages"] = pk[:, k.PK_MESSAGES]
    table["first_message"] = pk[:, k.PK_FIRST]
    table["status"] = pk[:, k.PK_STATUS]
    status, reports = check_sequence(pk[:, k.PK_SEQ].copy(), channel_of, names)
    table["seq_status"] = status
    return DecodedCapture(None, decoded, table, names, reports)


def decode_capture(path: str | Path, schema: Schema | str | Path) -> DecodedCapture:
    """Decode every MDP 3.0 packet of a pcap or pcapng capture.

    Parameters
    ----------
    path
        The capture file; every UDP datagram in it is taken as one MDP 3.0 packet.
    schema
        The schema (or its file) the capture was sent with.

    Returns
    -------
    DecodedCapture
        Per template the decoded rows, per packet its header, channel and sequence status,
        the issues, and each channel's sequence report.

    Raises
    ------
    engine.feeds.pcap.CaptureError
        If the file is not a readable capture.
    engine.feeds.sbe.schema.SchemaError
        If the schema file cannot be used.
    """
    sch = _as_schema(schema)
    reader = UdpCapture(path)
    payloads: list[bytes] = []
    channels: list[str] = []
    frames: list[int] = []
    stamps: list[int] = []
    for d in reader:
        payloads.append(d.payload)
        channels.append(f"{d.dst}:{d.dport}")
        frames.append(d.index)
        stamps.append(d.ts_ns)
    out = decode_payloads(payloads, sch, channels=channels, frames=frames, ts_ns=stamps)
    out.path = Path(path)
    out.skipped_frames = Counter(reader.skipped)
    return out
