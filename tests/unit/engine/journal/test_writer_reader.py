# SPDX-License-Identifier: MIT
"""Writer and reader together on real files: what goes in comes back, in order."""

from __future__ import annotations

import logging
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import KillLevel, OrdStatus, SessionState, Side
from engine.events import (
    BookUpdated,
    EngineHeartbeat,
    Event,
    EventRecord,
    FixMessageSeen,
    KillSwitchChanged,
    OrderChanged,
    SessionStatusChanged,
)
from engine.journal import (
    FixDirection,
    FixMessageRecord,
    Journal,
    JournalClosedError,
    JournalError,
    JournalEvent,
    JournalFormatError,
    JournalHandler,
    JournalOpened,
    JournalReader,
    JournalWriteError,
    LogEntry,
    UnknownEvent,
    read_journal,
)
from engine.journal import format as fmt
from tests.unit.engine.journal.helpers import (
    FIX_NOS,
    T0,
    alert,
    make_view,
    order_changed,
    order_filled,
)


def _body(path: Path) -> list[object]:
    return [r for r in read_journal(path) if not isinstance(r, JournalOpened)]


def test_journal_all_record_kinds_round_trip_in_order(tmp_path: Path) -> None:
    path = tmp_path / "day.qwj"
    clock = TestClock(T0)
    view = make_view(1, status=OrdStatus.PARTIALLY_FILLED, cum=4)
    with Journal(path, clock, engine_id="e1", sync="none") as j:
        j.on_event(order_changed(view, "fill"))
        j.on_event_record(
            EventRecord(42, order_filled(view, 4, 18_000, exec_id="X1", ts=T0, leaves=6))
        )
        j.record_fix("FIX.4.4:CLIENT->EXCHANGE", FixDirection.OUTBOUND, FIX_NOS, 1, 2, 3)
        j.record_fix("FIX.4.4:CLIENT->EXCHANGE", 1, bytearray(b"8=FIX"), 4, 5, 6)
        clock.advance(10)
        j.log(logging.WARNING, "oms", "order %s rejected: %s", "C1", "price range")
        j.on_event(alert(3))
    records = read_journal(path)
    opened = records[0]
    assert isinstance(opened, JournalOpened)
    assert (opened.engine_id, opened.pid, opened.offset) == ("e1", os.getpid(), 32)
    assert records[1:] == [
        JournalEvent(seq=0, event=order_changed(view, "fill")),
        JournalEvent(seq=42, event=order_filled(view, 4, 18_000, exec_id="X1", ts=T0, leaves=6)),
        FixMessageRecord(
            session_id="FIX.4.4:CLIENT->EXCHANGE",
            direction=FixDirection.OUTBOUND,
            raw=FIX_NOS,
            ts_created=1,
            ts_wire=2,
            ts_handled=3,
        ),
        FixMessageRecord(
            session_id="FIX.4.4:CLIENT->EXCHANGE",
            direction=FixDirection.INBOUND,
            raw=b"8=FIX",
            ts_created=4,
            ts_wire=5,
            ts_handled=6,
        ),
        LogEntry(
            ts=T0 + 10,
            level=logging.WARNING,
            source="oms",
            message="order C1 rejected: price range",
            exc_text="",
        ),
        JournalEvent(seq=0, event=alert(3)),
    ]
    # Enums come back as enums, not bare ints.
    ev = records[1]
    assert isinstance(ev, JournalEvent)
    assert isinstance(ev.event, OrderChanged)
    assert ev.event.order.side is Side.BUY
    assert ev.event.order.status is OrdStatus.PARTIALLY_FILLED


def test_journal_every_engine_event_class_round_trips(tmp_path: Path) -> None:
    events: list[Event] = [
        EngineHeartbeat(
            ts_event=T0, engine_id="e", counter=1, uptime_ns=5, interval_ns=10, loop_lag_ns=0
        ),
        SessionStatusChanged(
            ts_event=T0,
            session_id="S",
            state=SessionState.LOGGED_ON,
            next_sender_seq_num=2,
            next_target_seq_num=3,
        ),
        KillSwitchChanged(ts_event=T0, level=KillLevel.CANCEL_ALL, actor="console", reason="x"),
        order_changed(make_view(2)),
        alert(1),
    ]
    bus = MessageBus()
    with Journal(tmp_path / "j.qwj", TestClock(), sync="none") as j:
        j.subscribe(bus)
        for e in events:
            bus.publish(e)
    assert [r.event for r in _body(tmp_path / "j.qwj")] == events  # type: ignore[attr-defined]


def test_journal_schema_is_written_once_per_class(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), sync="none") as j:
        for i in range(50):
            j.on_event(alert(i))
            j.on_event(order_changed(make_view(i + 1)))
    reader = JournalReader(path)
    kinds = [r.kind for r in reader.raw()]
    assert kinds.count(fmt.KIND_SCHEMA) == 3  # Alert, OrderView (nested), OrderChanged
    assert kinds.count(fmt.KIND_EVENT) == 100
    names = sorted(s.name for s in reader.schemas.values())
    assert names == [
        "engine.events.Alert",
        "engine.events.OrderChanged",
        "engine.events.OrderView",
    ]


def test_journal_reopen_resumes_and_reuses_schemas(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    clock = TestClock(T0)
    with Journal(path, clock, sync="none") as j:
        j.on_event(alert(1))
    size = path.stat().st_size
    with Journal(path, clock, engine_id="again", sync="none") as j:
        assert j.resumed_at == size
        assert j.dropped_tail_bytes == 0
        j.on_event(alert(2))
    records = read_journal(path)
    opens = [r for r in records if isinstance(r, JournalOpened)]
    assert [o.offset for o in opens] == [32, size]
    assert [r.event for r in records if isinstance(r, JournalEvent)] == [alert(1), alert(2)]
    reader = JournalReader(path)
    assert len(reader.schemas) == 1  # the resumed writer reused the Alert schema


def test_journal_flush_makes_records_readable_before_close(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    j = Journal(path, TestClock(), flush_interval_ms=10_000, sync="flush")
    try:
        for i in range(10):
            j.on_event(alert(i))
        j.flush()
        assert j.records_written == 10
        assert [r.event for r in _body(path)] == [alert(i) for i in range(10)]  # type: ignore[attr-defined]
    finally:
        j.close()


def test_journal_writer_thread_writes_within_the_flush_interval(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), flush_interval_ms=5, sync="none") as j:
        j.on_event(alert(1))
        reader = JournalReader(path)
        for _ in range(400):  # up to 2 s on a loaded machine; normally 5-10 ms
            reader.scan()
            if len(reader) == 3:  # open, schema, event
                break
            threading.Event().wait(0.005)
        assert len(reader) == 3


def test_journal_batches_larger_backlog_in_several_writes(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), batch_records=7, flush_interval_ms=10_000, sync="none") as j:
        for i in range(100):
            j.on_event(alert(i))
        j.flush()
        assert j.records_written == 100
        assert j.bytes_written == path.stat().st_size
    assert len(_body(path)) == 100


def test_journal_append_after_close_raises(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.qwj", TestClock(), sync="none")
    log = j.logger("x")
    j.close()
    j.close()  # idempotent
    assert j.closed
    with pytest.raises(JournalClosedError):
        j.on_event(alert(1))
    with pytest.raises(JournalClosedError):
        log.info("late")
    with pytest.raises(JournalClosedError):
        j.flush()


def test_journal_second_writer_on_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), sync="none"), pytest.raises(JournalError, match="another"):
        Journal(path, TestClock(), sync="none")


def test_journal_refuses_a_file_that_is_not_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello, this is not a journal at all....")
    with pytest.raises(JournalFormatError, match="bad magic"):
        Journal(path, TestClock())
    assert path.read_bytes() == b"hello, this is not a journal at all...."


def test_journal_refuses_another_major_version(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    path.write_bytes(struct.pack("<8sHHIq8x", fmt.MAGIC, 2, 0, 32, 0))
    with pytest.raises(JournalFormatError, match=r"format version 2\.0"):
        read_journal(path)


@pytest.mark.parametrize("bad", [0, -1.5, float("nan")])
def test_journal_rejects_bad_flush_interval(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="flush_interval_ms"):
        Journal(tmp_path / "j.qwj", TestClock(), flush_interval_ms=bad)


def test_journal_logger_defers_formatting_and_honours_level(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    clock = TestClock(T0)
    with Journal(path, clock, sync="none") as j:
        log = j.logger("strat.mm", level=logging.INFO)
        log.debug("hidden %d", 1)
        log.info("quote %d@%d", 5, 18_000)
        log.warning("bad args %d", "not a number")  # formatting fails on the writer thread
        log.error("plain")
        log.log(logging.CRITICAL, "crit %s", "x")
        log.log(logging.DEBUG, "hidden too")
    entries = [r for r in read_journal(path) if isinstance(r, LogEntry)]
    assert [(e.level, e.source) for e in entries] == [
        (logging.INFO, "strat.mm"),
        (logging.WARNING, "strat.mm"),
        (logging.ERROR, "strat.mm"),
        (logging.CRITICAL, "strat.mm"),
    ]
    assert entries[0].message == "quote 5@18000"
    assert entries[1].message.startswith("bad args %d ('not a number',) (formatting failed")
    assert entries[3].message == "crit x"
    assert all(e.ts == T0 for e in entries)


def test_journal_logger_captures_values_at_call_time(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(T0), sync="none") as j:
        log = j.logger("strat.mm", level=logging.INFO)
        order = {"qty": 1}
        levels = [1, 2]
        log.info("order %s", order)
        log.info("levels %s and %d", levels, 3)
        log.info("bad %d", [1])  # formatting fails: reported with the values as they were
        order["qty"] = 999  # changed after the call, before the writer formats
        levels.append(99)
    messages = [r.message for r in read_journal(path) if isinstance(r, LogEntry)]
    assert messages[:2] == ["order {'qty': 1}", "levels [1, 2] and 3"]
    assert messages[2].startswith("bad %d ('[1]',) (formatting failed")


def test_logging_handler_feeds_stdlib_records_with_exceptions(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    clock = TestClock(T0)
    logger = logging.getLogger("tests.journal.handler")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    with Journal(path, clock, sync="none") as j:
        handler = JournalHandler(j, level=logging.INFO)
        logger.addHandler(handler)
        try:
            logger.debug("not handled")
            args = ["mutable"]
            logger.info("list %s", args)
            args.append("changed later")  # formatted at the call: the journal keeps the old text
            try:
                raise RuntimeError("boom")
            except RuntimeError:
                logger.exception("failed to %s", "send")
        finally:
            logger.removeHandler(handler)
    entries = [r for r in read_journal(path) if isinstance(r, LogEntry)]
    assert [e.message for e in entries] == ["list ['mutable']", "failed to send"]
    assert entries[1].level == logging.ERROR
    assert entries[1].source == "tests.journal.handler"
    assert "RuntimeError: boom" in entries[1].exc_text
    assert "Traceback" in entries[1].exc_text


@dataclass(frozen=True, slots=True, kw_only=True)
class _LocalEvent(Event):
    name: str
    qty: int
    tags: tuple[str, ...] = ()


def test_event_of_a_class_unknown_to_the_reader_becomes_unknown_event(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), sync="none") as j:
        j.on_event(_LocalEvent(ts_event=5, name="n", qty=3, tags=("a",)))
    # The writer registered the class, so this process rebuilds it.
    assert _body(path) == [
        JournalEvent(seq=0, event=_LocalEvent(ts_event=5, name="n", qty=3, tags=("a",)))
    ]
    # Another process would not know it: simulate by dropping it from the registry.
    fmt._REGISTRY.pop(fmt.qualified_name(_LocalEvent))
    try:
        [rec] = _body(path)
    finally:
        fmt.register_type(_LocalEvent)
    assert isinstance(rec, JournalEvent)
    assert rec.event == UnknownEvent(
        ts_event=5,
        type_name=fmt.qualified_name(_LocalEvent),
        fields=(("ts_event", 5), ("name", "n"), ("qty", 3), ("tags", ("a",))),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _OddEvent(Event):
    payload: object


def test_unencodable_event_is_replaced_by_an_error_log_and_others_survive(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), sync="none") as j:
        j.on_event(alert(1))
        j.on_event(_OddEvent(ts_event=1, payload=object()))
        j.on_event(_OddEvent(ts_event=2, payload=2**70))  # outside int64/uint64
        j.on_event(alert(2))
        j.flush()
        assert j.encode_errors == 2
    body = _body(path)
    assert body[0] == JournalEvent(seq=0, event=alert(1))
    assert body[3] == JournalEvent(seq=0, event=alert(2))
    for rec in body[1:3]:
        assert isinstance(rec, LogEntry)
        assert rec.level == logging.ERROR
        assert "could not encode a record (_OddEvent)" in rec.message
    assert "could not encode" in caplog.text


def test_reader_sees_records_appended_after_a_first_scan(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    with Journal(path, TestClock(), sync="none") as j:
        j.on_event(alert(1))
        j.flush()
        reader = JournalReader(path)
        assert reader.scan() == path.stat().st_size
        n = len(reader)
        j.on_event(alert(2))
        j.flush()
        reader.scan()
        assert len(reader) == n + 1
        assert reader.torn_tail is None


def test_journal_exclude_skips_exact_event_classes(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    book = BookUpdated(
        ts_event=T0, symbol="ESZ6", bid_px_ticks=1, bid_qty_lots=2, ask_px_ticks=3, ask_qty_lots=4
    )
    with Journal(path, TestClock(), sync="none", exclude=[BookUpdated]) as j:
        j.on_event(book)
        j.on_event_record(EventRecord(1, book))
        j.on_event(alert(1))
    assert _body(path) == [JournalEvent(seq=0, event=alert(1))]


def test_fix_messages_merges_fix_records_and_fix_message_seen_events(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    seen = FixMessageSeen(
        ts_event=30,
        session_id="S",
        outbound=False,
        msg_type="8",
        seq_num=7,
        raw=b"8=FIX.4.4\x0135=8\x01",
        ts_created=10,
        ts_wire=20,
    )
    with Journal(path, TestClock(), sync="none") as j:
        j.record_fix("S", FixDirection.OUTBOUND, FIX_NOS, 1, 2, 3)
        j.on_event(alert(1))
        j.on_event(seen)
    assert list(JournalReader(path).fix_messages()) == [
        FixMessageRecord(
            session_id="S",
            direction=FixDirection.OUTBOUND,
            raw=FIX_NOS,
            ts_created=1,
            ts_wire=2,
            ts_handled=3,
        ),
        FixMessageRecord(
            session_id="S",
            direction=FixDirection.INBOUND,
            raw=b"8=FIX.4.4\x0135=8\x01",
            ts_created=10,
            ts_wire=20,
            ts_handled=30,
        ),
    ]


def test_failed_write_is_reported_by_flush_and_retried_without_loss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.qwj"
    j = Journal(path, TestClock(), flush_interval_ms=5, sync="none")
    real = j._write_all
    failing = True

    def write_all(fd: int, data: bytes) -> None:
        if failing:
            raise OSError(28, "No space left on device")
        real(fd, data)

    j._write_all = write_all  # type: ignore[method-assign]
    try:
        j.on_event(alert(1))
        with pytest.raises(JournalWriteError, match="No space left") as info:
            j.flush()
        assert isinstance(info.value.__cause__, OSError)
        failing = False  # the disk has room again
        j.flush()  # nothing new appended: the kept bytes are retried all the same
        assert j.error is None
        j.on_event(alert(2))
    finally:
        j.close()
    assert _body(path) == [JournalEvent(seq=0, event=alert(1)), JournalEvent(seq=0, event=alert(2))]
    assert "journal writer failed" in caplog.text
