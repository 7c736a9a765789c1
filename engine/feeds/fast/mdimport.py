# SPDX-License-Identifier: MIT
"""FAST market data (FIX semantics) out of a capture, as book and trade entries (issue 20).

FAST feeds of the FIX era (CME's legacy FIX/FAST, and most exchanges' FAST feeds) carry FIX
market-data messages: ``MarketDataIncrementalRefresh`` (MsgType X) whose ``MDEntries``
sequence holds updates of price levels and trades, and ``MarketDataSnapshotFullRefresh``
(MsgType W) holding one instrument's whole book. :class:`MdLayout` finds those templates in a
:class:`~engine.feeds.fast.templates.TemplateSet` by their FIX tags (the ``id`` of each field,
or its name when the id is missing), so any template set with FIX semantics works:

==========  ==============================================================================
tag         use
==========  ==============================================================================
35          MsgType, a constant ``X`` or ``W`` (a template without it is recognised by
            its name: "IncRefresh"/"Incremental" or "Snapshot"/"FullRefresh")
34, 52, 60  MsgSeqNum (gap detection), SendingTime, TransactTime (the rows' ``ts``)
268         the MDEntries sequence (its length); the element holds the tags below
279         MDUpdateAction: 0 New, 1 Change, 2 Delete, 3 DeleteThru, 4 DeleteFrom, 5 Overlay
269         MDEntryType: 0 bid, 1 offer, 2 trade, J empty book; others counted and left out
48 / 55     SecurityID / Symbol (entry first, then message)
270, 271    MDEntryPx, MDEntrySize (decimal or integer)
1023        MDPriceLevel (1 the best); without it the book is keyed by price
83          RptSeq
5797, 2446  AggressorSide (1 buy, 2 sell), CME's tag and FIX 5.0's
1003        TradeID
==========  ==============================================================================

:func:`read_capture` decodes every UDP datagram of a capture (:class:`~engine.feeds.pcap.
UdpCapture`) with a :class:`~engine.feeds.fast.decoder.Decoder` per destination (the operators'
dictionaries belong to a stream), optionally after a packet preamble (``framing="cme"``: a
4-byte big-endian packet sequence number and a sub-channel byte), and returns the entries as
one structured array (:data:`ENTRY_DTYPE`) with a sequence report. The destinations that carry
incremental messages are taken as copies of one channel (the A and B feeds): a MsgSeqNum (or
packet sequence number) seen before is a copy and skipped, and the numbers missing from every
copy are the gaps. Snapshot-only destinations (the recovery loop, numbered apart) are never
counted as gaps or copies. A snapshot with a RptSeq (83) is used only when it is ahead of the
instrument's book (the highest RptSeq applied from incremental entries or an earlier
snapshot): it fills a gap, and the recovery loop's repeats are left out and counted.

Resets follow the decoder: ``reset="packet"`` clears the dictionaries before each datagram,
``"message"`` before each message, ``"none"`` only where a template says ``reset="yes"`` or the
session-control Reset message (template 120) comes. With ``"none"`` a destination that misses a
MsgSeqNum has lost its dictionaries' state: its messages are left out (counted in
``undecodable``; a copy from another destination is used) until the next reset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from engine.feeds.fast.decoder import SCP_RESET_ID, Decoder, FastDecodeError, Message, Value
from engine.feeds.fast.templates import (
    Decimal,
    Field,
    Group,
    Instruction,
    Op,
    Sequence,
    Template,
    TemplateSet,
)
from engine.feeds.pcap import UdpCapture

#: ``ENTRY_DTYPE.kind``: a price level update (bid or offer).
E_BOOK: Final[int] = 0
#: ``ENTRY_DTYPE.kind``: a trade.
E_TRADE: Final[int] = 1
#: ``ENTRY_DTYPE.kind``: clear the instrument's book (snapshot start, MDEntryType J).
E_CLEAR: Final[int] = 2

#: ``ENTRY_DTYPE.side`` of a book entry.
SIDE_BID: Final[int] = 0
SIDE_OFFER: Final[int] = 1

#: One market-data entry, in feed order. Prices and sizes are in 1e-9 units.
ENTRY_DTYPE: Final = np.dtype(
    [
        ("msg", "i8"),  # the message's number in the capture (from 0, copies included)
        ("frame", "i8"),  # the capture frame it came in (from 1, as Wireshark counts)
        ("ts", "i8"),  # TransactTime, else SendingTime, else the capture time (UTC ns)
        ("ts_recv", "i8"),  # the capture time
        ("instrument", "i8"),  # index into MdCapture.instruments
        ("kind", "u1"),  # E_BOOK, E_TRADE, E_CLEAR
        ("side", "i1"),  # book: SIDE_BID / SIDE_OFFER; trade: aggressor 1 buy, 2 sell, 0
        ("action", "i1"),  # MDUpdateAction (0 New for snapshot entries)
        ("level", "i8"),  # MDPriceLevel, 0 when absent
        ("px", "i8"),  # MDEntryPx in 1e-9 units
        ("px_fine", "?"),  # the price has digits finer than 1e-9 (off any grid)
        ("qty", "i8"),  # MDEntrySize in 1e-9 units (0 when absent)
        ("trade_id", "i8"),  # TradeID, -1 when absent
        ("rpt_seq", "i8"),  # RptSeq, -1 when absent
    ]
)

TAG_MSG_TYPE = "35"
TAG_SEQ = "34"
TAG_SENDING_TIME = "52"
TAG_TRANSACT_TIME = "60"
TAG_NO_ENTRIES = "268"
TAG_ACTION = "279"
TAG_TYPE = "269"
TAG_SECURITY_ID = "48"
TAG_SYMBOL = "55"
TAG_PX = "270"
TAG_SIZE = "271"
TAG_LEVEL = "1023"
TAG_RPT_SEQ = "83"
TAG_AGGRESSOR = ("5797", "2446")
TAG_TRADE_ID = "1003"

#: Names accepted for a field that has no ``id`` attribute (FIX field names).
_NAMES: Final[dict[str, tuple[str, ...]]] = {
    TAG_MSG_TYPE: ("MsgType", "MessageType"),
    TAG_SEQ: ("MsgSeqNum",),
    TAG_SENDING_TIME: ("SendingTime",),
    TAG_TRANSACT_TIME: ("TransactTime",),
    TAG_NO_ENTRIES: ("NoMDEntries", "MDEntries"),
    TAG_ACTION: ("MDUpdateAction",),
    TAG_TYPE: ("MDEntryType",),
    TAG_SECURITY_ID: ("SecurityID",),
    TAG_SYMBOL: ("Symbol",),
    TAG_PX: ("MDEntryPx",),
    TAG_SIZE: ("MDEntrySize",),
    TAG_LEVEL: ("MDPriceLevel",),
    TAG_RPT_SEQ: ("RptSeq",),
    "5797": ("AggressorSide",),
    "2446": ("AggressorSide",),
    TAG_TRADE_ID: ("TradeID",),
}

FRAMINGS: Final = ("none", "cme")
RESETS: Final = ("none", "packet", "message")
#: The CME legacy FAST packet preamble: packet sequence number (u32, big-endian), sub-channel.
CME_PREAMBLE: Final[int] = 5


class FastMdError(ValueError):
    """A template set or capture that cannot be imported as FAST market data (says why)."""


def _tag_of(f: Field) -> str:
    if f.id:
        return f.id
    for tag, names in _NAMES.items():
        if f.name in names:
            return tag
    return ""


def _fields(instructions: tuple[Instruction, ...]) -> dict[str, str]:
    """Return tag -> field name of the fields of a run (group fields included)."""
    out: dict[str, str] = {}
    for ins in instructions:
        if isinstance(ins, Field):
            tag = _tag_of(ins)
            if tag:
                out.setdefault(tag, ins.name)
        elif isinstance(ins, Group):
            out.update({t: n for t, n in _fields(ins.instructions).items() if t not in out})
    return out


@dataclass(frozen=True)
class MdTemplate:
    """Where one market-data template keeps the fields the importer reads."""

    id: int
    name: str
    msg_type: str  # "X" or "W"
    fields: dict[str, str]  # tag -> name, message level
    entries: str  # name of the MDEntries sequence
    entry_fields: dict[str, str]  # tag -> name, in an entry


def _msg_type(t: Template) -> str:
    """Return the template's MsgType: its constant 35 field, else what its name says."""
    for ins in t.instructions:
        if (
            isinstance(ins, Field)
            and _tag_of(ins) == TAG_MSG_TYPE
            and ins.operator.op == Op.CONSTANT
            and isinstance(ins.operator.initial, str)
        ):
            return ins.operator.initial
    low = t.name.lower()
    if "increfresh" in low or "incremental" in low:
        return "X"
    if "snapshot" in low or "fullrefresh" in low:
        return "W"
    return ""


def _entries(t: Template) -> Sequence | None:
    for ins in t.instructions:
        if isinstance(ins, Sequence) and TAG_TYPE in _fields(ins.instructions):
            return ins
    return None


@dataclass(frozen=True)
class MdLayout:
    """The market-data templates of a template set (:meth:`of` finds them)."""

    templates: dict[int, MdTemplate]
    by_level: bool  # the entries carry MDPriceLevel: the book is level-indexed

    @classmethod
    def of(cls, ts: TemplateSet) -> MdLayout:
        """Return the layout of ``ts``.

        Raises
        ------
        FastMdError
            The set has no MsgType X or W template whose MDEntries sequence holds
            MDEntryType (269) and MDEntryPx (270): the message names the templates it has.
        """
        found: dict[int, MdTemplate] = {}
        for t in ts.templates:
            if t.id < 0:
                continue
            kind = _msg_type(t)
            seq = _entries(t)
            if kind not in ("X", "W") or seq is None:
                continue
            ef = _fields(seq.instructions)
            if TAG_PX not in ef:
                continue
            found[t.id] = MdTemplate(t.id, t.name, kind, _fields(t.instructions), seq.name, ef)
        if not found:
            have = ", ".join(f"{t.id} {t.name}" for t in ts.templates if t.id >= 0) or "none"
            raise FastMdError(
                f"{ts.source}: no FAST market-data templates (it has {have}); --protocol fast "
                "needs MarketDataIncrementalRefresh (MsgType X) or MarketDataSnapshotFullRefresh "
                "(W) templates whose MDEntries sequence holds MDEntryType (269) and MDEntryPx "
                "(270)"
            )
        by_level = any(TAG_LEVEL in m.entry_fields for m in found.values())
        return cls(found, by_level)


@dataclass
class SequenceReport:
    """Sequence numbers of the incremental channel (all its copies together)."""

    first: int = -1
    last: int = -1
    gaps: list[tuple[int, int]] = field(default_factory=list)  # (first, last) missing
    copies: int = 0  # messages (or packets) seen before on another copy: skipped
    late: int = 0  # numbers that came after a higher one (filling a gap)

    @property
    def missing(self) -> int:
        """Return how many numbers the gaps hold."""
        return sum(b - a + 1 for a, b in self.gaps)


@dataclass
class MdCapture:
    """What :func:`read_capture` found in one capture."""

    entries: npt.NDArray[np.void]  # ENTRY_DTYPE, feed order
    instruments: list[str]  # SecurityID (decimal text) or Symbol per instrument index
    keyed_by_symbol: list[bool]  # instrument was named by Symbol (55), not SecurityID
    datagrams: int = 0
    messages: Counter[str] = field(default_factory=Counter)  # by template name
    skipped_types: Counter[str] = field(default_factory=Counter)  # entries left out
    message_seq: SequenceReport = field(default_factory=SequenceReport)
    packet_seq: SequenceReport | None = None  # with framing="cme"
    no_security: int = 0  # entries naming no instrument: left out
    stale_snapshots: int = 0  # snapshots whose RptSeq the book had reached: left out
    #: Messages of a stream that lost one since its last reset (``reset="none"``): their
    #: copy-, increment- and delta-coded values are unknown, so they are left out (a copy on
    #: another destination is used; without one, their numbers are gaps).
    undecodable: int = 0
    skipped_frames: Counter[str] = field(default_factory=Counter)  # pcap frames without UDP
    #: Datagrams to destinations not asked for (``channels``), by destination.
    other_destinations: Counter[str] = field(default_factory=Counter)


class _Sequencer:
    """First arrivals of numbered items across copies, and the numbers missing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: dict[int, tuple[object, str]] = {}  # number -> (signature, destination)
        self.high = -1
        self.report = SequenceReport()

    def take(self, n: int, signature: object = None, dest: str = "") -> bool:
        """Return whether ``n`` is new (a copy is counted and refused).

        Raises
        ------
        FastMdError
            ``n`` came before from another destination with another ``signature``: the two
            are not copies of one channel.
        """
        first = self.seen.get(n)
        if first is not None:
            if signature is not None and first[0] != signature and first[1] != dest:
                raise FastMdError(
                    f"{self.path}: MsgSeqNum {n} carries different messages to {first[1]} "
                    f"and {dest}: they are not A and B copies of one channel; import one "
                    "channel at a time with --channel ADDR:PORT"
                )
            self.report.copies += 1
            return False
        self.seen[n] = (signature, dest)
        if n < self.high:
            self.report.late += 1
        self.high = max(self.high, n)
        return True

    def finish(self) -> SequenceReport:
        r = self.report
        if self.seen:
            s = np.unique(np.fromiter(self.seen.keys(), np.int64, len(self.seen)))
            r.first, r.last = int(s[0]), int(s[-1])
            jumps = np.flatnonzero(np.diff(s) > 1)
            r.gaps = [(int(s[j]) + 1, int(s[j + 1]) - 1) for j in jumps.tolist()]
        return r


def fix_time_ns(v: int) -> int | None:
    """Return a FIX-over-FAST timestamp in UTC ns, or None if it is not one.

    CME's FAST feeds send UTCTimestamp as the integer YYYYMMDDHHMMSSsss (17 digits); later
    feeds send ns since the epoch. Anything else is not read as a time.
    """
    if 10**16 <= v < 10**17:
        s = str(v)
        try:
            d = datetime(
                int(s[0:4]),
                int(s[4:6]),
                int(s[6:8]),
                int(s[8:10]),
                int(s[10:12]),
                int(s[12:14]),
                tzinfo=UTC,
            )
        except ValueError:
            return None
        return int(d.timestamp()) * 1_000_000_000 + int(s[14:17]) * 1_000_000
    if 10**17 <= v < 2**63:
        return v
    return None


def _units(v: Value | None) -> tuple[int, bool] | None:
    """Return a decimal or integer in 1e-9 units and whether it has finer digits."""
    if isinstance(v, Decimal):
        shift = v.exponent + 9
        if shift >= 0:
            return v.mantissa * 10**shift, False
        q, r = divmod(v.mantissa, 10**-shift)
        return q, r != 0
    if isinstance(v, int):
        return v * 1_000_000_000, False
    if isinstance(v, str):
        try:
            return _units(int(v))
        except ValueError:
            return None
    return None


def _aggressor(e: dict[str, Value], ef: dict[str, str]) -> int:
    """Return a trade entry's AggressorSide: 1 buy, 2 sell, 0 when not given."""
    for tag in TAG_AGGRESSOR:
        if tag in ef:
            side = _int(e.get(ef[tag]), 0)
            return side if side in (1, 2) else 0
    return 0


def _int(v: Value | None, default: int) -> int:
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return default


#: Entry rows gathered as tuples before they become an array (bounds the memory they take).
_CHUNK: Final[int] = 1 << 16


class _Reader:
    """Turns decoded market-data messages into entry rows."""

    def __init__(self, layout: MdLayout) -> None:
        self.layout = layout
        self.rows: list[tuple[int, ...]] = []
        self.ids: dict[tuple[bool, str], int] = {}
        self.instruments: list[str] = []
        self.by_symbol: list[bool] = []
        self.skipped_types: Counter[str] = Counter()
        self.no_security = 0
        self.last_rpt: dict[int, int] = {}  # instrument -> highest RptSeq applied
        self.stale_snapshots = 0
        self.snapshot_levels = [0, 0]  # entries per side so far in the current snapshot
        self._done: list[npt.NDArray[np.void]] = []  # rows already made arrays

    def _row(self, row: tuple[int, ...]) -> None:
        self.rows.append(row)
        if len(self.rows) >= _CHUNK:
            self._done.append(np.array(self.rows, dtype=ENTRY_DTYPE))
            self.rows = []

    def entries(self) -> npt.NDArray[np.void]:
        """Return every entry row so far, as one array."""
        parts = [*self._done, np.array(self.rows, dtype=ENTRY_DTYPE).reshape(-1)]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def instrument(self, fields: dict[str, Value], names: dict[str, str]) -> int:
        for tag, is_symbol in ((TAG_SECURITY_ID, False), (TAG_SYMBOL, True)):
            name = names.get(tag)
            v = fields.get(name) if name else None
            if v is not None and not isinstance(v, list | dict | Message):
                text = v.hex() if isinstance(v, bytes) else str(v)
                key = (is_symbol, text)
                i = self.ids.get(key)
                if i is None:
                    i = self.ids[key] = len(self.instruments)
                    self.instruments.append(text)
                    self.by_symbol.append(is_symbol)
                return i
        return -1

    def message(self, m: Message, md: MdTemplate, msg_no: int, frame: int, ts_recv: int) -> None:
        f = m.fields
        ts = self._time(f, md.fields, ts_recv)
        raw = f.get(md.entries)
        entries = raw if isinstance(raw, list) else []
        msg_instrument = -1
        if md.msg_type == "W":
            msg_instrument = self.instrument(f, md.fields)
            if msg_instrument < 0 and entries:
                msg_instrument = self.instrument(entries[0], md.entry_fields)
            rpt = _int(f.get(md.fields.get(TAG_RPT_SEQ, "")), -1)
            if msg_instrument >= 0 and rpt >= 0:
                if self.last_rpt.get(msg_instrument, -1) >= rpt:
                    self.stale_snapshots += 1  # the book is already there (or newer)
                    return
                self.last_rpt[msg_instrument] = rpt
            if msg_instrument >= 0:
                self._row(
                    (msg_no, frame, ts, ts_recv, msg_instrument, E_CLEAR, 0, 0, 0, 0, 0, 0, -1, -1)
                )
        ef = md.entry_fields
        self.snapshot_levels = [0, 0]
        for e in entries:
            self.entry(e, ef, md, msg_no, frame, self._time(e, ef, ts), ts_recv, msg_instrument, f)

    def entry(
        self,
        e: dict[str, Value],
        ef: dict[str, str],
        md: MdTemplate,
        msg_no: int,
        frame: int,
        ts: int,
        ts_recv: int,
        msg_instrument: int,
        msg_fields: dict[str, Value],
    ) -> None:
        etype = str(e.get(ef[TAG_TYPE], ""))
        if etype not in ("0", "1", "2", "J"):
            self.skipped_types[etype or "(none)"] += 1
            return
        if md.msg_type == "W" and etype == "2":
            self.skipped_types["2 (in a snapshot)"] += 1
            return
        inst = self.instrument(e, ef)
        if inst < 0:
            inst = msg_instrument if msg_instrument >= 0 else self.instrument(msg_fields, md.fields)
        if inst < 0:
            self.no_security += 1
            return
        rpt = _int(e.get(ef.get(TAG_RPT_SEQ, "")), -1)
        if rpt >= 0 and md.msg_type == "X":
            self.last_rpt[inst] = max(rpt, self.last_rpt.get(inst, -1))
        if etype == "J":
            self._row((msg_no, frame, ts, ts_recv, inst, E_CLEAR, 0, 0, 0, 0, 0, 0, -1, rpt))
            return
        px = _units(e.get(ef[TAG_PX]))
        size = _units(e.get(ef.get(TAG_SIZE, "")))
        qty = size[0] if size is not None else 0
        action = 0 if md.msg_type == "W" else _int(e.get(ef.get(TAG_ACTION, "")), 0)
        if px is None:
            if action in (3, 4):  # DeleteThru / DeleteFrom name levels, not prices
                px = (0, False)
            else:
                self.skipped_types[f"{etype} (no MDEntryPx)"] += 1
                return
        if etype == "2":
            tid = _int(e.get(ef.get(TAG_TRADE_ID, "")), -1)
            row = (msg_no, frame, ts, ts_recv, inst, E_TRADE, _aggressor(e, ef), 0, 0)
            self._row((*row, px[0], px[1], qty, tid, rpt))
            return
        level = _int(e.get(ef.get(TAG_LEVEL, "")), 0)
        side = SIDE_BID if etype == "0" else SIDE_OFFER
        if md.msg_type == "W":  # a snapshot without levels lists each side best first
            self.snapshot_levels[side] += 1
            level = level or self.snapshot_levels[side]
        row = (msg_no, frame, ts, ts_recv, inst, E_BOOK, side, action, level)
        self._row((*row, px[0], px[1], qty, -1, rpt))

    @staticmethod
    def _time(f: dict[str, Value], names: dict[str, str], default: int) -> int:
        for tag in (TAG_TRANSACT_TIME, TAG_SENDING_TIME):
            name = names.get(tag)
            v = f.get(name) if name else None
            if isinstance(v, int):
                t = fix_time_ns(v)
                if t is not None:
                    return t
        return default


def _messages(dec: Decoder, payload: bytes, reset: str) -> Iterator[Message]:
    if reset == "packet":
        dec.reset()
    for m in dec.iter_decode(payload):
        yield m
        if reset == "message":
            dec.reset()


def _decoded(
    path: Path,
    cap: UdpCapture,
    templates: TemplateSet,
    framing: str,
    reset: str,
    channels: frozenset[str] | None,
    others: Counter[str],
) -> Iterator[tuple[int, int, str, int, list[Message]]]:
    """Yield (frame, capture ns, destination, packet seq, messages) per datagram read."""
    decoders: dict[str, Decoder] = {}
    for n, d in enumerate(cap, 1):
        dest = f"{d.dst}:{d.dport}"
        if channels is not None and dest not in channels:
            others[dest] += 1
            continue
        payload, pseq = d.payload, -1
        if framing == "cme":
            if len(payload) < CME_PREAMBLE:
                raise FastMdError(
                    f"{path}: frame {d.index}: {len(payload)} bytes, shorter than the "
                    f"{CME_PREAMBLE}-byte packet preamble of --framing cme"
                )
            pseq = int.from_bytes(payload[:4], "big")
            payload = payload[CME_PREAMBLE:]
        dec = decoders.get(dest)
        if dec is None:
            dec = decoders[dest] = Decoder(templates)
        try:
            msgs = list(_messages(dec, payload, reset))
        except FastDecodeError as e:
            raise FastMdError(f"{path}: frame {d.index} (datagram {n} to {dest}): {e}") from e
        yield d.index, d.ts_ns, dest, pseq, msgs


class _Streams:
    """Whether each destination's dictionaries are whole (``reset="none"``: lost after a gap)."""

    def __init__(self, templates: TemplateSet, reset: str) -> None:
        self.resets = {t.id for t in templates.templates if t.reset}
        if SCP_RESET_ID not in templates.by_id:
            self.resets.add(SCP_RESET_ID)
        self.check = reset == "none"
        self.last: dict[str, int] = {}  # destination -> its last MsgSeqNum
        self.lost: set[str] = set()  # destinations that missed a message since a reset

    def usable(self, dest: str, template_id: int, seq: Value | None) -> bool:
        """Return whether a message decoded on ``dest`` can be trusted."""
        if template_id in self.resets:
            self.lost.discard(dest)
        if self.check and isinstance(seq, int):
            last = self.last.get(dest, seq - 1)
            if seq > last + 1:
                self.lost.add(dest)  # the operators' values of the missing ones are unknown
            self.last[dest] = max(seq, last)
        return dest not in self.lost


def read_capture(
    path: Path,
    templates: TemplateSet,
    *,
    framing: str = "none",
    reset: str = "none",
    layout: MdLayout | None = None,
    channels: frozenset[str] | None = None,
) -> MdCapture:
    """Decode the FAST market data of one capture into entries.

    Parameters
    ----------
    path
        A pcap or pcapng capture of the feed's UDP datagrams.
    templates
        The feed's FAST templates.
    framing
        ``"none"``: each datagram is FAST messages back to back; ``"cme"``: after a 5-byte
        preamble (packet sequence number, u32 big-endian, and a sub-channel byte).
    reset
        When the dictionaries are cleared besides the templates' own resets: ``"none"``,
        ``"packet"`` (every datagram) or ``"message"``.
    layout
        The templates' layout (found from ``templates`` when None).
    channels
        Read only the datagrams sent to these destinations (``"ADDR:PORT"``); the others
        are counted in ``other_destinations``. None reads every destination.

    Raises
    ------
    FastMdError
        A datagram that does not decode (frame, message, offset, field, why), a datagram
        shorter than the preamble, a bad ``framing``/``reset``, or two destinations that
        carry different messages under one MsgSeqNum (two channels, not A and B copies).
    """
    if framing not in FRAMINGS:
        raise FastMdError(f"--framing {framing!r}: give one of {', '.join(FRAMINGS)}")
    if reset not in RESETS:
        raise FastMdError(f"--reset {reset!r}: give one of {', '.join(RESETS)}")
    md = layout or MdLayout.of(templates)
    cap = UdpCapture(path)
    seq_names = {t.id: _fields(t.instructions).get(TAG_SEQ) for t in templates.templates}
    reader = _Reader(md)
    out = MdCapture(np.zeros(0, ENTRY_DTYPE), [], [])
    by_msg = _Sequencer(path)
    by_packet = _Sequencer(path) if framing == "cme" else None
    incremental: set[str] = set()  # destinations that carried an incremental message
    streams = _Streams(templates, reset)
    msg_no = 0
    decoded = _decoded(path, cap, templates, framing, reset, channels, out.other_destinations)
    for frame, ts_recv, dest, pseq, msgs in decoded:
        out.datagrams += 1
        if dest not in incremental and any(
            (t := md.templates.get(m.template_id)) is not None and t.msg_type == "X" for m in msgs
        ):
            incremental.add(dest)
        sequenced = dest in incremental
        if by_packet is not None and sequenced and not by_packet.take(pseq):
            msg_no += len(msgs)
            continue
        for m in msgs:
            msg_no += 1
            seq_name = seq_names.get(m.template_id)
            seq = m.fields.get(seq_name) if seq_name else None
            if not streams.usable(dest, m.template_id, seq if sequenced else None):
                out.undecodable += 1
                continue
            if (
                sequenced
                and isinstance(seq, int)
                and not by_msg.take(seq, (m.template_id, m.size), dest)
            ):
                continue
            out.messages[m.name] += 1
            t = md.templates.get(m.template_id)
            if t is not None:
                reader.message(m, t, msg_no - 1, frame, ts_recv)
    out.entries = reader.entries()
    out.instruments, out.keyed_by_symbol = reader.instruments, reader.by_symbol
    out.skipped_types, out.no_security = reader.skipped_types, reader.no_security
    out.stale_snapshots = reader.stale_snapshots
    out.message_seq = by_msg.finish()
    out.packet_seq = by_packet.finish() if by_packet is not None else None
    out.skipped_frames = Counter(cap.skipped)
    return out


__all__ = [
    "ENTRY_DTYPE",
    "E_BOOK",
    "E_CLEAR",
    "E_TRADE",
    "FRAMINGS",
    "RESETS",
    "SIDE_BID",
    "SIDE_OFFER",
    "FastMdError",
    "MdCapture",
    "MdLayout",
    "MdTemplate",
    "SequenceReport",
    "fix_time_ns",
    "read_capture",
]
