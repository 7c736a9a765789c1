# SPDX-License-Identifier: MIT
"""Read the fills of one trading day from a state directory's three sources.

* the **journal**: every ``OrderFilled`` event of the day's journal files, with the orders
  (``OrderChanged``) that say which strategy a ClOrdID belongs to and the instruments
  (``InstrumentAdded``) that turn FIX prices and quantities into ticks and lots;
* the **engine's recovery**: :func:`engine.journal.recover` over the same files;
* the **venue's messages**: every ExecutionReport <8> with a fill that the venue sent on one of
  our sessions, wherever it is stored: the journal's inbound FIX messages, FIX file stores
  (``*.body``: the messages a session *sent*, so the venue's own store when the venue is the
  built-in simulator) and FIX message logs (``*.incoming.log``, ``*.messages*.log``).

The FIX files are only read (a :class:`engine.fix.store.FileStore` would cut a torn tail off on
open); messages are found by their ``35=8`` field and framed by BodyLength <9>, and a message
whose BodyLength or CheckSum <10> does not hold is counted as damaged, never guessed at.

OUCH venues the same way: the journal's inbound Order Executed messages
(``VenueMessageSeen``) and the sequenced-message stores of an OUCH port
(``ouch-<user>-<session>.soupseq``, the simulator's own record, read only). Their session is
``OUCH <user>``; the order (and so the instrument, side and strategy) is the journal's
``O<UserRefNum>``; ExecID is ``M<MatchNumber>``, as the OUCH adapter books it.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from engine.enums import Side
from engine.events import (
    Event,
    FixMessageSeen,
    InstrumentAdded,
    OrderChanged,
    OrderFilled,
    VenueMessageSeen,
)
from engine.fix.fields import parse_utc_timestamp
from engine.journal.format import (
    KIND_EVENT,
    KIND_FIX,
    FixDirection,
    FixMessageRecord,
    JournalEvent,
    qualified_name,
)
from engine.journal.reader import JournalReader, TornTail
from engine.venues.ouch.messages import OrderExecuted, OuchDecodeError, decode_outbound
from engine.venues.ouch.store import read_sequenced
from engine.venues.seen import message_fields

#: The fields of an ExecutionReport <8> in any byte blob: where a message is looked for.
ER_MARK = b"\x0135=8\x01"
#: A Logon <A>: names one of our sessions.
LOGON_MARK = b"\x0135=A\x01"
#: Journal file names: ``<engine id>-<YYYYMMDD>[-<pid>].qwj``.
JOURNAL_NAME = re.compile(r"^(?P<engine>.+)-(?P<day>\d{8})(?:-\d+)?\.qwj$")
#: FIX files holding messages: file stores' bodies and message logs.
FIX_FILE_PATTERNS = ("*.body", "*.incoming.log", "*.messages*.log")
#: An OUCH port's store of the messages it sent an account: ``ouch-<user>-<session>``.
OUCH_STORE_NAME = re.compile(r"^ouch-(?P<user>[A-Za-z0-9]{1,6})-.*\.soupseq$")

_WANTED_EVENTS = {
    qualified_name(c): c
    for c in (OrderChanged, OrderFilled, InstrumentAdded, FixMessageSeen, VenueMessageSeen)
}
_SIDES = {
    b"1": Side.BUY,
    b"3": Side.BUY,
    b"2": Side.SELL,
    b"4": Side.SELL,
    b"5": Side.SELL,
    b"6": Side.SELL,
}
#: ExecType <150> of a fill: Trade (FIX 4.3+), Partial fill and Fill (FIX 4.0 - 4.2).
_FILL_EXEC_TYPES = (b"F", b"1", b"2")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fill:
    """One fill as one source has it, in the core's units where they are known."""

    session: str  # our side's session, "FIX.4.4:QWCONSOLE->QWSIM"; the venue's name off FIX
    exec_id: str  # ExecID <17>
    client_order_id: str  # ClOrdID <11> the fill names
    order_key: str  # the order's first ClOrdID (a replaced order keeps its key)
    symbol: str  # Symbol <55>
    strategy_id: int | None  # None: no journaled order has this ClOrdID
    side: Side
    qty_lots: int | None  # LastQty <32> in lots; None when not a whole number of lots
    px_ticks: int | None  # LastPx <31> in ticks; None when the tick size is unknown or uneven
    px_text: str  # the price as the source gives it (FIX text, or ticks x tick size)
    qty_text: str
    ts: int  # fill time: TransactTime <60> (else SendingTime <52>), ns
    where: str  # file the fill was read from
    resent: bool = False  # PossDupFlag <43> = Y

    @property
    def key(self) -> tuple[str, str, str]:
        """Return the fill's identity: (session, ExecID <17>, order)."""
        return (self.session, self.exec_id, self.order_key)


@dataclass(slots=True)
class JournalDay:
    """Everything the day's journals say, read once."""

    paths: list[Path]
    fills: list[Fill] = field(default_factory=list)  # every OrderFilled, in journal order
    venue_reports: list[tuple[bytes, str]] = field(default_factory=list)  # inbound ERs, file
    torn_tails: list[tuple[Path, TornTail]] = field(default_factory=list)
    root: dict[str, str] = field(default_factory=dict)  # ClOrdID -> the order's first ClOrdID
    strategy: dict[str, int] = field(default_factory=dict)  # first ClOrdID -> strategy id
    instruments: dict[str, InstrumentAdded] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)  # our sessions seen in journaled FIX
    last_ts: int = 0  # newest event time read
    orders: dict[str, tuple[str, Side]] = field(default_factory=dict)  # root -> symbol, side
    #: Inbound OUCH Order Executed messages: (session, fields by name, where).
    ouch_reports: list[tuple[str, dict[str, str], str]] = field(default_factory=list)


def journal_files(state_dir: Path) -> list[Path]:
    """Return the journal files under ``state_dir`` (its ``journal/`` folder, or itself)."""
    found = sorted(state_dir.glob("*.qwj"))
    sub = state_dir / "journal"
    if sub.is_dir():
        found += sorted(sub.glob("*.qwj"))
    return found


def journal_day(path: Path) -> str | None:
    """Return the ``YYYYMMDD`` day in a journal's file name, ``None`` if it has none."""
    m = JOURNAL_NAME.match(path.name)
    return m.group("day") if m else None


def journal_engine(path: Path) -> str:
    """Return the engine id in a journal's file name (the whole stem if it has no day)."""
    m = JOURNAL_NAME.match(path.name)
    return m.group("engine") if m else path.stem


def fix_files(state_dir: Path) -> list[Path]:
    """Return the FIX stores' bodies and message logs anywhere under ``state_dir``."""
    found: set[Path] = set()
    for pattern in FIX_FILE_PATTERNS:
        found.update(p for p in state_dir.rglob(pattern) if p.is_file())
    return sorted(found)


# ---------------------------------------------------------------------------------- FIX


def fix_fields(raw: bytes) -> dict[int, bytes]:
    """Return the message's fields by tag (the first occurrence of a repeated tag)."""
    out: dict[int, bytes] = {}
    for part in raw.split(b"\x01"):
        tag, sep, value = part.partition(b"=")
        if sep and tag.isdigit():
            out.setdefault(int(tag), value)
    return out


def our_session(fields: dict[int, bytes], *, inbound: bool) -> str:
    """Return our side's session id (``BeginString:Us->Them``) of a message."""
    begin = fields.get(8, b"").decode("latin-1")
    sender = fields.get(49, b"").decode("latin-1")
    target = fields.get(56, b"").decode("latin-1")
    us, them = (target, sender) if inbound else (sender, target)
    return f"{begin}:{us}->{them}"


def find_execution_reports(data: bytes | mmap.mmap) -> Iterator[bytes | None]:
    """Yield every ExecutionReport <8> in ``data``; ``None`` for one that is damaged.

    A message is found by its ``35=8`` field, starts at the ``8=`` just before, and ends where
    its BodyLength <9> says; it must end in a CheckSum <10> that matches.
    """
    pos = data.find(ER_MARK)
    while pos >= 0:
        nxt = data.find(ER_MARK, pos + 1)
        start = data.rfind(b"8=", max(0, pos - 40), pos)
        head = data[start:pos] if start >= 0 else b""
        body_len = head.rpartition(b"\x019=")[2]
        if start < 0 or not body_len.isdigit():
            yield None
        else:
            end = pos + 1 + int(body_len)
            raw = data[start : end + 7]
            if (
                raw[end - start : end - start + 3] != b"10="
                or raw[-1:] != b"\x01"
                or not raw[-4:-1].isdigit()
                or sum(raw[: end - start]) % 256 != int(raw[-4:-1])
            ):
                yield None
            else:
                yield bytes(raw)
        pos = nxt


def read_fix_file(path: Path) -> Iterator[bytes | None]:
    """Yield the ExecutionReports of one FIX store body or log file (``None``: damaged)."""
    with path.open("rb") as f:
        if f.seek(0, 2) == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            yield from find_execution_reports(data)


def is_fill(fields: dict[int, bytes]) -> bool:
    """Return whether an ExecutionReport <8> reports a trade (ExecType <150>)."""
    et = fields.get(150)
    if et not in _FILL_EXEC_TYPES:
        return False
    if et != b"F" and fields.get(20, b"0") != b"0":
        return False  # FIX 4.0-4.2: ExecTransType <20> cancel, correct or status
    qty = fields.get(32, b"")
    return bool(qty) and qty.strip(b"0.") != b""


def fill_time(fields: dict[int, bytes]) -> int:
    """Return the fill's time: TransactTime <60>, else (Orig)SendingTime <122>/<52>; 0."""
    for tag in (60, 122, 52):
        value = fields.get(tag)
        if value:
            ns = parse_utc_timestamp(value)
            if ns is not None:
                return ns
    return 0


def _units(text: str, step: str | None) -> int | None:
    try:
        value = Decimal(text)
        n = value / Decimal(step) if step else value
    except (InvalidOperation, ArithmeticError):
        return None
    return int(n) if n == n.to_integral_value() else None


def venue_fill(f: dict[int, bytes], where: str, journal: JournalDay) -> Fill | str | None:
    """Turn the fields of an ExecutionReport (:func:`fix_fields`) into a :class:`Fill`.

    Returns ``None`` for a report that is not a fill, a text saying why for a fill that cannot
    be read (no ExecID, an unknown side).
    """
    if not is_fill(f):
        return None
    exec_id = f.get(17, b"").decode("latin-1")
    side = _SIDES.get(f.get(54, b""))
    if not exec_id or side is None:
        what = "no ExecID <17>" if not exec_id else f"Side <54> {f.get(54, b'')!r}"
        return f"{where}: a fill with {what} was not compared"
    clordid = f.get(11, b"").decode("latin-1")
    orig = f.get(41, b"").decode("latin-1")
    root = journal.root.get(clordid) or journal.root.get(orig) or clordid
    symbol = f.get(55, b"").decode("latin-1")
    inst = journal.instruments.get(symbol)
    px_text = f.get(31, b"").decode("latin-1")
    qty_text = f.get(32, b"").decode("latin-1")
    return Fill(
        session=our_session(f, inbound=True),
        exec_id=exec_id,
        client_order_id=clordid,
        order_key=root,
        symbol=symbol,
        strategy_id=journal.strategy.get(root),
        side=side,
        qty_lots=_units(qty_text, inst.lot_size if inst else None),
        px_ticks=_units(px_text, inst.tick_size) if inst else None,
        px_text=px_text,
        qty_text=qty_text,
        ts=fill_time(f),
        where=where,
        resent=f.get(43) == b"Y",
    )


def venue_reports(files: Iterable[Path]) -> Iterator[tuple[bytes | None, str]]:
    """Yield ``(ExecutionReport or None if damaged, file name)`` from FIX files."""
    for path in files:
        for raw in read_fix_file(path):
            yield raw, str(path)


# ---------------------------------------------------------------------------------- journal


def _decimal_text(ticks: int, step: str | None) -> str:
    if not step:
        return f"{ticks} ticks"
    try:
        value = Decimal(ticks) * Decimal(step)
    except InvalidOperation:
        return f"{ticks} ticks"
    text = f"{value.normalize():f}"
    return text


def read_journal_day(paths: list[Path]) -> JournalDay:
    """Read the fills, orders, instruments and inbound ExecutionReports of ``paths``.

    Raises
    ------
    engine.journal.JournalError
        If a file is not a journal or is damaged before its tail.
    """
    day = JournalDay(paths=paths)
    filled: list[tuple[OrderFilled, str]] = []
    for path in paths:
        reader = JournalReader(path)
        reader.scan()
        if reader.torn_tail is not None:
            day.torn_tails.append((path, reader.torn_tail))
        wanted = {
            tid for tid, sch in reader.schemas.items() if sch.name in _WANTED_EVENTS and sch.cls
        }
        for rec in reader.raw([KIND_EVENT, KIND_FIX]):
            if rec.kind == KIND_EVENT and rec.type_id not in wanted:
                continue
            if rec.kind == KIND_FIX or _is_fix_seen(reader, rec.type_id):
                payload = bytes(rec.payload)
                if ER_MARK not in payload and LOGON_MARK not in payload:
                    continue  # neither a fill nor a session's logon: not decoded
            decoded = reader.decode(rec)
            if isinstance(decoded, FixMessageRecord):
                _add_fix(day, decoded.raw, decoded.direction is FixDirection.INBOUND, path)
                continue
            assert isinstance(decoded, JournalEvent)
            _add_event(day, decoded.event, path, filled)
    day.fills = [journal_fill(ev, where, day) for ev, where in filled]
    return day


def _add_event(
    day: JournalDay, ev: Event, path: Path, filled: list[tuple[OrderFilled, str]]
) -> None:
    day.last_ts = max(day.last_ts, ev.ts_event)
    if isinstance(ev, OrderChanged):
        _add_order(day, ev)
    elif isinstance(ev, OrderFilled):
        filled.append((ev, str(path)))
    elif isinstance(ev, InstrumentAdded):
        day.instruments[ev.symbol] = ev
    elif isinstance(ev, FixMessageSeen):
        _add_fix(day, ev.raw, not ev.outbound, path)
    elif isinstance(ev, VenueMessageSeen) and ev.protocol == "OUCH":
        _add_ouch(day, ev, path)


def _is_fix_seen(reader: JournalReader, type_id: int) -> bool:
    schema = reader.schemas.get(type_id)
    return schema is not None and schema.cls is FixMessageSeen


def _add_order(day: JournalDay, ev: OrderChanged) -> None:
    view = ev.order
    chain = (*view.orig_client_order_ids, view.client_order_id)
    root = next((day.root[c] for c in chain if c in day.root), chain[0])
    for clordid in chain:
        day.root.setdefault(clordid, root)
    day.strategy[root] = view.strategy_id
    day.orders[root] = (view.symbol, view.side)


def ouch_session(link: str) -> str:
    """Return the reconciliation's session of an OUCH link: ``OUCH <user>`` (no address)."""
    return link.split("@", 1)[0]


def _add_ouch(day: JournalDay, ev: VenueMessageSeen, path: Path) -> None:
    session = ouch_session(ev.session_id)
    day.sessions.add(session)
    if not ev.outbound and ev.msg_type.startswith("E "):  # Order Executed
        fields = {name: value for name, value, _meaning in message_fields(ev)}
        day.ouch_reports.append((session, fields, f"{path} (inbound OUCH)"))


def ouch_files(state_dir: Path) -> list[Path]:
    """Return the OUCH ports' sequenced-message stores anywhere under ``state_dir``."""
    return sorted(p for p in state_dir.rglob("*.soupseq") if OUCH_STORE_NAME.match(p.name))


def ouch_store_reports(path: Path) -> tuple[list[tuple[str, dict[str, str], str]], int]:
    """Return the Order Executed messages of an OUCH store, and its unreadable messages."""
    m = OUCH_STORE_NAME.match(path.name)
    assert m is not None
    session = f"OUCH {m.group('user')}"
    payloads, torn = read_sequenced(path)
    out = []
    bad = 1 if torn else 0
    for payload in payloads:
        try:
            msg = decode_outbound(payload)
        except OuchDecodeError:
            bad += 1
            continue
        if isinstance(msg, OrderExecuted):
            fields = {name: str(value) for name, value in msg.fields()}
            out.append((session, fields, str(path)))
    return out, bad


def ouch_fill(
    session: str, f: dict[str, str], where: str, day: JournalDay, midnight_ns: int
) -> Fill | str:
    """Turn an OUCH Order Executed (fields by name) into a :class:`Fill`, or say why not."""
    ref = f.get("UserRefNum", "")
    clordid = f"O{ref}"
    root = day.root.get(clordid, clordid)
    order = day.orders.get(root)
    if not ref.isdigit() or order is None:
        return f"{where}: an OUCH execution of UserRefNum {ref or '?'} names no journaled order"
    symbol, side = order
    inst = day.instruments.get(symbol)
    qty_text, px_text = f.get("Quantity", ""), f.get("Price", "")
    return Fill(
        session=session,
        exec_id=f"M{f.get('MatchNumber', '')}",
        client_order_id=clordid,
        order_key=root,
        symbol=symbol,
        strategy_id=day.strategy.get(root),
        side=side,
        qty_lots=_units(qty_text, inst.lot_size if inst else None),
        px_ticks=_units(px_text, inst.tick_size) if inst else None,
        px_text=px_text,
        qty_text=qty_text,
        ts=midnight_ns + int(f.get("Timestamp", "0") or 0),
        where=where,
    )


def _add_fix(day: JournalDay, raw: bytes, inbound: bool, path: Path) -> None:
    fields = fix_fields(raw)
    day.sessions.add(our_session(fields, inbound=inbound))
    if inbound and ER_MARK in raw:
        day.venue_reports.append((raw, f"{path} (inbound FIX)"))


def journal_fill(ev: OrderFilled, where: str, day: JournalDay, session: str = "") -> Fill:
    """Turn a journaled ``OrderFilled`` into a :class:`Fill` (``session`` is set later)."""
    inst = day.instruments.get(ev.symbol)
    return Fill(
        session=session,
        exec_id=ev.exec_id,
        client_order_id=ev.client_order_id,
        order_key=day.root.get(ev.client_order_id, ev.client_order_id),
        symbol=ev.symbol,
        strategy_id=ev.strategy_id,
        side=ev.side,
        qty_lots=ev.last_qty_lots,
        px_ticks=ev.last_px_ticks,
        px_text=_decimal_text(ev.last_px_ticks, inst.tick_size if inst else None),
        qty_text=_decimal_text(ev.last_qty_lots, inst.lot_size if inst else None),
        ts=ev.ts_event,
        where=where,
    )
