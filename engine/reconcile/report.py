# SPDX-License-Identifier: MIT
"""Compare the fills of the journal, of the engine's recovery and of the venue's messages.

A fill is identified by (session, ExecID <17>, order): the same ExecID on another order is
another fill (a venue that numbers its ExecIDs from 1 again after a restart), the same one on the
same order is one fill however often it was journaled or resent (PossDupFlag <43> = Y). Each
source's fills are summed per (session, instrument, strategy) into the table's rows; every fill
that is not the same in all sources is listed with where it is missing or how it differs.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from engine.clock import Clock, LiveClock
from engine.enums import Side
from engine.journal import JournalError, recover
from engine.reconcile.sources import (
    Fill,
    JournalDay,
    fix_fields,
    fix_files,
    journal_day,
    journal_engine,
    journal_files,
    journal_fill,
    ouch_files,
    ouch_fill,
    ouch_store_reports,
    our_session,
    read_journal_day,
    venue_fill,
    venue_reports,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: a running engine is not detected
    _FLOCK = False
else:
    _FLOCK = True

#: The three sources, in the table's order.
SOURCES: tuple[str, str, str] = ("journal", "recovery", "venue")
#: With the engine running, fills younger than this are not compared: a report the venue sent
#: a moment ago may not be journaled yet.
LIVE_SETTLE_NS = 2_000_000_000


class ReconcileError(Exception):
    """The state directory cannot be reconciled; the message is one line naming the file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceCount:
    """One source's fills in one row: how many, and the position they sum to."""

    fills: int = 0
    position_lots: int = 0  # signed: > 0 long


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileRow:
    """Fills and position of one (session, instrument, strategy) in each source."""

    session: str  # our side's FIX session, or the venue's name for orders that never used FIX
    symbol: str
    strategy_id: int | None  # None: fills of orders the journal does not know
    journal: SourceCount
    recovery: SourceCount
    venue: SourceCount | None  # None: no FIX messages of this session to compare with
    differences: int  # fills of this row listed in ReconcileReport.differences
    difference: str  # "" when the sources agree, else e.g. "journal -1 fill -1 lot"

    @property
    def agrees(self) -> bool:
        """Return whether every source has the same fills here."""
        return self.differences == 0 and not self.difference


@dataclass(frozen=True, slots=True, kw_only=True)
class FillDifference:
    """A fill that is missing in a source, counted twice, or not the same in all of them."""

    session: str
    exec_id: str  # ExecID <17>
    client_order_id: str  # ClOrdID <11>
    symbol: str
    strategy: str  # strategy id, "?" when unknown, "7 / 9" when the sources disagree
    side: Side
    qty: str  # LastQty <32>, as the venue (else the journal) has it
    px: str  # LastPx <31>
    found_in: tuple[str, ...]  # sources that have it
    missing_in: tuple[str, ...]  # sources that do not
    detail: str  # what differs, in words


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileReport:
    """The result of :func:`reconcile`: rows, differing fills, and what was read."""

    state_dir: str
    day: str  # YYYYMMDD (UTC)
    journals: tuple[str, ...]
    #: The venue's files read: FIX stores and logs, OUCH ports' stores (``*.soupseq``).
    fix_files: tuple[str, ...]
    rows: tuple[ReconcileRow, ...]
    differences: tuple[FillDifference, ...]
    notes: tuple[str, ...]  # what was skipped or could not be compared, and why
    totals: tuple[int, int, int | None]  # fills per source (venue None: no FIX at all)
    live: bool  # the engine was running: the newest fills were left out

    @property
    def ok(self) -> bool:
        """Return whether all sources agree."""
        return not self.differences and all(r.agrees for r in self.rows)

    @property
    def difference_count(self) -> int:
        """Return the number of differences (fills, or rows without a fill to blame)."""
        blamed = sum(1 for r in self.rows if not r.agrees and r.differences == 0)
        return len(self.differences) + blamed

    def verdict(self) -> str:
        """Return the one-line verdict."""
        day = f"{self.day[:4]}-{self.day[4:6]}-{self.day[6:]}"
        journal, recovery, venue = self.totals
        if self.ok:
            if venue is None:
                return (
                    f"Reconciled {day}: {journal} fills agree in the journal and the recovery "
                    "(no FIX messages to compare with)"
                )
            return (
                f"Reconciled {day}: {journal} fills agree in the journal, the recovery and "
                "the venue's messages"
            )
        n = self.difference_count
        return (
            f"{n} difference{'s' if n != 1 else ''} on {day}: journal {journal} fills, recovery "
            f"{recovery}, venue {'-' if venue is None else venue}"
        )


# ---------------------------------------------------------------------------------- reading


def _select_journals(state_dir: Path, day: str | None) -> tuple[str, list[Path]]:
    if not state_dir.exists():
        raise ReconcileError(f"{state_dir}: no such directory")
    if not state_dir.is_dir():
        raise ReconcileError(f"{state_dir}: not a directory")
    files = journal_files(state_dir)
    if not files:
        raise ReconcileError(f"{state_dir}: no journal (*.qwj) in it or in its journal/ folder")
    days = sorted({d for p in files if (d := journal_day(p)) is not None})
    if day is None:
        if not days:
            raise ReconcileError(
                f"{files[0]}: journal name without a day (<engine>-YYYYMMDD.qwj); give --day"
            )
        day = days[-1]
    chosen = [p for p in files if journal_day(p) == day]
    if not chosen:
        known = ", ".join(days) or "none"
        raise ReconcileError(f"{state_dir}: no journal of {day} (days journaled: {known})")
    return day, chosen


def journal_is_open(path: Path) -> bool:
    """Return whether a writer (a running engine) holds ``path`` open."""
    if not _FLOCK:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _recovered_fills(paths: list[Path], day: JournalDay) -> list[Fill]:
    by_engine: dict[str, list[Path]] = defaultdict(list)
    for path in paths:
        by_engine[journal_engine(path)].append(path)
    fills: list[Fill] = []
    for group in by_engine.values():
        state = recover(sorted(group))
        fills += [journal_fill(ev, "recovery", day) for ev in state.fills]
    return fills


def _read_venue(
    files: Sequence[Path], day: JournalDay, notes: list[str], ouch: Sequence[Path] = ()
) -> tuple[list[Fill], dict[str, str], set[str]]:
    """Return the venue's fills, the session of each order and the sessions seen.

    ``files`` are FIX stores and logs, ``ouch`` OUCH ports' stores.
    """
    fills: list[Fill] = []
    session_of: dict[str, str] = {}
    seen: set[str] = set()
    damaged: dict[str, int] = defaultdict(int)
    foreign = 0
    reports: Iterable[tuple[bytes | None, str]] = [*day.venue_reports, *venue_reports(files)]
    for raw, where in reports:
        if raw is None:
            damaged[where] += 1
            continue
        f = fix_fields(raw)
        session = our_session(f, inbound=True)
        if day.sessions and session not in day.sessions:
            foreign += 1  # a report this engine sent (it is the venue there) or another's
            continue
        seen.add(session)
        clordid = f.get(11, b"").decode("latin-1")
        session_of.setdefault(day.root.get(clordid, clordid), session)
        fill = venue_fill(f, where, day)
        if isinstance(fill, str):
            notes.append(fill)
        elif fill is not None:
            fills.append(fill)
    _read_ouch(ouch, day, fills, session_of, seen, notes)
    for where, n in sorted(damaged.items()):
        notes.append(f"{where}: {n} damaged message(s) (BodyLength or CheckSum) not read")
    if foreign:
        notes.append(
            f"{foreign} execution report(s) of sessions the journal does not name left out"
        )
    if not day.sessions and seen:
        notes.append("the journal names no FIX session: every stored ExecutionReport was taken")
    return fills, session_of, seen


def _read_ouch(
    stores: Sequence[Path],
    day: JournalDay,
    fills: list[Fill],
    session_of: dict[str, str],
    seen: set[str],
    notes: list[str],
) -> None:
    """Add the OUCH executions of the journal and of OUCH stores to the venue's fills."""
    midnight = (
        int(
            datetime.fromtimestamp(day.last_ts / 1e9, tz=UTC)
            .replace(hour=0, minute=0, second=0, microsecond=0)
            .timestamp()
        )
        * 1_000_000_000
    )
    reports = list(day.ouch_reports)
    for path in stores:
        got, bad = ouch_store_reports(path)
        reports += got
        if bad:
            notes.append(f"{path}: {bad} damaged or unreadable OUCH message(s) not read")
    for session, fields, where in reports:
        if day.sessions and session not in day.sessions:
            continue  # an account this engine never traded on
        seen.add(session)
        fill = ouch_fill(session, fields, where, day, midnight)
        if isinstance(fill, str):
            notes.append(fill)
            continue
        session_of.setdefault(fill.order_key, session)
        fills.append(fill)


# ---------------------------------------------------------------------------------- comparing


def _with_session(fills: list[Fill], session_of: dict[str, str], day: JournalDay) -> list[Fill]:
    by_symbol: dict[str, str] = {}
    for f in fills:
        s = session_of.get(f.order_key)
        if s is not None:
            by_symbol.setdefault(f.symbol, s)
    out = []
    for f in fills:
        session = session_of.get(f.order_key) or by_symbol.get(f.symbol)
        if session is None:  # never on FIX: the venue the instrument was added with
            inst = day.instruments.get(f.symbol)
            session = inst.venue if inst is not None and inst.venue else "(no FIX)"
        out.append(dataclasses.replace(f, session=session))
    return out


def _value(f: Fill) -> tuple[object, ...]:
    qty: object = f.qty_lots if f.qty_lots is not None else f.qty_text
    px: object = f.px_ticks if f.px_ticks is not None else f.px_text
    return (f.symbol, f.side, qty, px, f.strategy_id)


def _unique(fills: list[Fill]) -> tuple[list[Fill], list[Fill]]:
    """Return the fills with exact repeats (same identity and values) left out, and those."""
    seen: set[tuple[object, ...]] = set()
    out, repeats = [], []
    for f in fills:
        k = (f.key, _value(f))
        if k in seen:
            repeats.append(f)
        else:
            seen.add(k)
            out.append(f)
    return out, repeats


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _mismatches(a: Fill, b: Fill) -> list[str]:
    """Return the fields in which two sources' copies of one fill differ."""
    out = []
    if a.symbol != b.symbol:
        out.append(f"symbol {a.symbol} / {b.symbol}")
    if a.side is not b.side:
        out.append(f"side {a.side.name} / {b.side.name}")
    if a.qty_lots is not None and b.qty_lots is not None:
        if a.qty_lots != b.qty_lots:
            out.append(f"qty {a.qty_text} / {b.qty_text}")
    elif _decimal(a.qty_text) != _decimal(b.qty_text):
        out.append(f"qty {a.qty_text} / {b.qty_text}")
    if a.px_ticks is not None and b.px_ticks is not None:
        if a.px_ticks != b.px_ticks:
            out.append(f"px {a.px_text} / {b.px_text}")
    elif None not in (pa := _decimal(a.px_text), pb := _decimal(b.px_text)) and pa != pb:
        out.append(f"px {a.px_text} / {b.px_text}")
    if None not in (a.strategy_id, b.strategy_id) and a.strategy_id != b.strategy_id:
        out.append(f"strategy {a.strategy_id} / {b.strategy_id}")
    return out


def _strategy_text(copies: Iterable[Fill]) -> str:
    ids = list(dict.fromkeys("?" if f.strategy_id is None else str(f.strategy_id) for f in copies))
    return " / ".join(ids)


def _compare_one(lists: dict[str, list[Fill]]) -> FillDifference | None:
    """Return how one fill differs between the sources (``lists`` by source), or None."""
    found = tuple(name for name, fills in lists.items() if fills)
    missing = tuple(name for name, fills in lists.items() if not fills)
    details = [
        f"{name} has it {len(fills)} times" for name, fills in lists.items() if len(fills) > 1
    ]
    if missing:
        details.insert(0, f"missing in {', '.join(missing)}")
    else:
        first = SOURCES[0]
        for name, fills in lists.items():
            if name != first and len(fills) == 1 == len(lists[first]):
                details += [
                    f"{m} ({first} / {name})" for m in _mismatches(lists[first][0], fills[0])
                ]
    if not details:
        return None
    shown = next(lists[n][0] for n in ("venue", "journal", "recovery") if lists.get(n))
    return FillDifference(
        session=shown.session,
        exec_id=shown.exec_id,
        client_order_id=shown.client_order_id,
        symbol=shown.symbol,
        strategy=_strategy_text(f for fills in lists.values() for f in fills),
        side=shown.side,
        qty=shown.qty_text,
        px=shown.px_text,
        found_in=found,
        missing_in=missing,
        detail="; ".join(details),
    )


RowKey = tuple[str, str, int | None]


def _row_key(f: Fill) -> RowKey:
    return (f.session, f.symbol, f.strategy_id)


def _plural(n: int, word: str) -> str:
    return f"{n:+d} {word}{'' if abs(n) == 1 else 's'}"


def _row_difference(counts: dict[str, SourceCount], venue_known: bool) -> str:
    ref_name = "venue" if venue_known else "journal"
    ref = counts[ref_name]
    parts = []
    for name in SOURCES:
        c = counts[name]
        if name == ref_name or (name == "venue" and not venue_known):
            continue
        if (c.fills, c.position_lots) != (ref.fills, ref.position_lots):
            d = [_plural(c.fills - ref.fills, "fill")] if c.fills != ref.fills else []
            if c.position_lots != ref.position_lots:
                d.append(_plural(c.position_lots - ref.position_lots, "lot"))
            parts.append(f"{name} {' '.join(d)}")
    return "; ".join(parts) + (f" (against the {ref_name})" if parts else "")


def _rows(
    sources: dict[str, list[Fill]],
    venue_sessions: set[str],
    blamed: dict[RowKey, int],
) -> list[ReconcileRow]:
    sums: dict[RowKey, dict[str, list[int]]] = defaultdict(
        lambda: {name: [0, 0] for name in SOURCES}
    )
    for name, fills in sources.items():
        for f in fills:
            cell = sums[_row_key(f)][name]
            cell[0] += 1
            cell[1] += int(f.side) * (f.qty_lots or 0)
    rows = []
    for key in sorted(sums, key=lambda k: (k[0], k[1], -1 if k[2] is None else k[2])):
        counts = {n: SourceCount(fills=v[0], position_lots=v[1]) for n, v in sums[key].items()}
        venue_known = key[0] in venue_sessions
        rows.append(
            ReconcileRow(
                session=key[0],
                symbol=key[1],
                strategy_id=key[2],
                journal=counts["journal"],
                recovery=counts["recovery"],
                venue=counts["venue"] if venue_known else None,
                differences=blamed.get(key, 0),
                difference=_row_difference(counts, venue_known),
            )
        )
    return rows


def _utc_day(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y%m%d")


def _in_scope(
    sources: dict[str, list[Fill]], day: str, cutoff: int | None, notes: list[str]
) -> dict[str, list[Fill]]:
    other_day = late = 0
    out: dict[str, list[Fill]] = {}
    for name, fills in sources.items():
        kept = []
        for f in fills:
            if cutoff is not None and f.ts > cutoff:
                late += 1
            elif name == "venue" and f.ts and _utc_day(f.ts) != day:
                other_day += 1
            else:
                kept.append(f)
        out[name] = kept
    if other_day:
        notes.append(f"{other_day} venue fill(s) of other days left out")
    if late:
        notes.append(
            f"the engine is running: {late} fill copies of the last "
            f"{LIVE_SETTLE_NS // 1_000_000_000} s not compared (reports may still be arriving)"
        )
    return out


def reconcile(
    state_dir: Path,
    day: str | None = None,
    *,
    live: bool | None = None,
    clock: Clock | None = None,
) -> ReconcileReport:
    """Compare the fills of the journal, the engine's recovery and the venue's messages.

    Parameters
    ----------
    state_dir : Path
        An engine's state directory: journals in it or in ``journal/``, FIX stores and message
        logs anywhere below it (``qwconsole engine --demo --state-dir DIR`` writes ``DIR/journal``
        and ``DIR/fix``).
    day : str | None
        ``YYYYMMDD`` (UTC); the newest journaled day by default.
    live : bool | None
        Whether the engine is running (then fills of the last :data:`LIVE_SETTLE_NS` are left
        out); by default, whether a writer holds one of the day's journals open.
    clock : Clock | None
        Wall clock for the live cut-off.

    Returns
    -------
    ReconcileReport
        Rows per (session, instrument, strategy), the fills that differ, and notes.

    Raises
    ------
    ReconcileError
        If the directory, its journals or its FIX files cannot be read (one line naming the
        file and why).
    """
    day, paths = _select_journals(state_dir, day)
    if live is None:
        live = any(journal_is_open(p) for p in paths)
    cutoff = (clock or LiveClock()).now_ns() - LIVE_SETTLE_NS if live else None
    notes: list[str] = []
    files = fix_files(state_dir)
    stores = ouch_files(state_dir)
    try:
        jday = read_journal_day(paths)
        recovered = _recovered_fills(paths, jday)
        venue, session_of, seen = _read_venue(files, jday, notes, stores)
    except JournalError as e:
        raise ReconcileError(str(e).replace("\n", " ")) from e
    except OSError as e:
        raise ReconcileError(f"{e.filename or state_dir}: cannot read: {e.strerror or e}") from e
    for path, torn in jday.torn_tails:
        notes.append(f"{path}: a torn last record ({torn.size} bytes) was dropped: {torn.reason}")
    journal, twice = _unique(_with_session(jday.fills, session_of, jday))
    if twice:
        notes.append(f"{len(twice)} fill(s) journaled twice, counted once")
    venue, repeats = _unique(venue)  # a report is both journaled and in a store or log
    repeated = {f.key for f in repeats}
    if resent := len({f.key for f in (*venue, *repeats) if f.resent and f.key in repeated}):
        notes.append(f"{resent} resent execution report(s) (PossDupFlag=Y) counted once")
    venue_sessions = seen | jday.sessions
    if not venue_sessions:
        notes.append("no FIX messages found: the journal and the recovery are compared alone")
    sources = _in_scope(
        {
            "journal": journal,
            "recovery": _with_session(recovered, session_of, jday),
            "venue": venue,
        },
        day,
        cutoff,
        notes,
    )
    differences, blamed = _compare(sources, venue_sessions)
    return ReconcileReport(
        state_dir=str(state_dir),
        day=day,
        journals=tuple(str(p) for p in paths),
        fix_files=tuple(str(p) for p in (*files, *stores)),
        rows=tuple(_rows(sources, venue_sessions, blamed)),
        differences=tuple(differences),
        notes=tuple(notes),
        totals=(
            len(sources["journal"]),
            len(sources["recovery"]),
            len(sources["venue"]) if venue_sessions else None,
        ),
        live=live,
    )


def _compare(
    sources: dict[str, list[Fill]], venue_sessions: set[str]
) -> tuple[list[FillDifference], dict[RowKey, int]]:
    by_key: dict[tuple[str, str, str], dict[str, list[Fill]]] = defaultdict(
        lambda: {name: [] for name in SOURCES}
    )
    for name, fills in sources.items():
        for f in fills:
            by_key[f.key][name].append(f)
    differences: list[FillDifference] = []
    blamed: dict[RowKey, int] = defaultdict(int)
    for key in sorted(by_key):
        lists = by_key[key]
        if key[0] not in venue_sessions:
            del lists["venue"]  # nothing to compare with: not a difference
        diff = _compare_one(lists)
        if diff is not None:
            differences.append(diff)
            for row in {_row_key(f) for fills in lists.values() for f in fills}:
                blamed[row] += 1
    return differences, blamed


def report_dict(report: ReconcileReport) -> dict[str, Any]:
    """Return the report as JSON-ready data (sides by name)."""
    data = dataclasses.asdict(report)
    for d in data["differences"]:
        d["side"] = Side(d["side"]).name
    data["ok"] = report.ok
    data["verdict"] = report.verdict()
    return data
