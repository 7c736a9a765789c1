# SPDX-License-Identifier: MIT
"""Packed storage of the FIX message list and the log: rows rebuilt exactly, bounded retention."""

import numpy as np
import pytest

from engine.enums import AlertLevel
from engine.events import FixMessageSeen, VenueMessageSeen
from tests.unit.widgets.builders import T0, fix_message, records
from widgets.fix_inspector import FixInspector, MessageCodec
from widgets.log_view import LogEntry, LogView
from widgets.tables.arena import ByteArena
from widgets.tables.keys import SortedIndex

pytestmark = pytest.mark.gui


def test_arena_round_trips_blobs_across_chunks_and_frees_the_oldest() -> None:
    arena = ByteArena(chunk_bytes=16)
    blobs = [b"abc", b"", b"defghij", b"0123456789", b"x" * 40, b"yz"]
    at = arena.extend(blobs)
    assert [arena.get(int(a), len(b)) for a, b in zip(at, blobs, strict=True)] == blobs
    # "0123456789" did not fit after 10 bytes: it starts the second chunk; 40 bytes get their own.
    assert arena.chunk_starts() == [0, 16, 32, 72]
    assert at.tolist() == [0, 3, 3, 16, 32, 72]
    arena.release_below(int(at[4]))
    assert arena.chunk_starts() == [32, 72]
    assert arena.get(int(at[4]), 40) == b"x" * 40
    assert arena.get(int(at[5]), 2) == b"yz"
    with pytest.raises(KeyError, match="offset 0 was released"):
        arena.get(0, 3)
    arena.clear()
    assert arena.nbytes == 0
    assert arena.append(b"new") >= int(at[5]) + 2  # an old offset never names a new blob
    with pytest.raises(ValueError, match="chunk_bytes must be positive"):
        ByteArena(0)


def _venue(seq: int, fields: tuple[tuple[str, str, str], ...] = ()) -> VenueMessageSeen:
    return VenueMessageSeen(
        ts_event=T0 + seq,
        session_id="OUCH QWC1@127.0.0.1:5002",
        protocol="OUCH",
        outbound=seq % 2 == 0,
        msg_type="U OrderReplaced",
        seq_num=seq,
        raw=bytes([85, 0, seq % 256, 1, 2]),
        fields=fields,
        client_order_id=f"Ö{seq}",
        orig_client_order_id=f"O{seq - 1}",
        ts_created=T0 - 7,
        ts_wire=T0 - 3,
    )


def test_codec_rebuilds_every_message_exactly() -> None:
    codec = MessageCodec()
    events: list[FixMessageSeen | VenueMessageSeen] = [
        fix_message("8=FIX.4.4|35=G|34=9|11=A1.1|41=A1|55=ESZ6|10=000|", seq=9, outbound=False),
        _venue(4, fields=(("Side", "B", "buy"),)),
        fix_message("8=FIX.4.4|35=0|34=10|10=000|", seq=10, session="FIX.4.4:CL->OTHER"),
        _venue(5),
    ]
    rows = codec.encode_many(events)
    assert rows["row"].tolist() == [1, 2, 3, 4]
    decoded = [codec.decode(t) for t in rows.tolist()]
    assert [r.ev for r in decoded] == events
    assert [(r.client_order_id, r.orig_client_order_id) for r in decoded] == [
        ("A1.1", "A1"), ("Ö4", "O3"), ("", ""), ("Ö5", "O4")
    ]  # fmt: skip
    assert decoded[0].search == events[0].raw
    assert decoded[1].search == b"Side=B"
    assert codec.order_ids(rows[3].item()) == ("Ö5", "O4")
    # Numbering goes on; a restart (a cleared list) begins at 1 again.
    assert codec.encode_many(events[:1])["row"].tolist() == [5]
    codec.restart()
    again = codec.encode_many(events[2:])
    assert again["row"].tolist() == [1, 2]
    assert [codec.decode(t).ev for t in again.tolist()] == events[2:]


def _report(n: int) -> FixMessageSeen:
    return fix_message(
        f"8=FIX.4.4|35=8|34={n}|11=C{n}|17=X{n}|39=0|58={'p' * (n % 50)}|10=000|",
        seq=n,
        ts=T0 + n * 1_000,
    )


def test_the_list_keeps_its_newest_messages_and_frees_the_bytes_of_the_others(
    qtbot: object,
) -> None:
    v = FixInspector()
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    v.model.capacity = 400
    v.codec.arena = ByteArena(chunk_bytes=2048)
    sent = [_report(n) for n in range(1, 3001)]
    for i in range(0, len(sent), 100):
        v.on_events(records(sent[i : i + 100]))
    kept = len(v.model)
    assert 400 - 400 // 20 <= kept <= 400
    assert [r.ev for r in v.model.records()] == sent[::-1][:kept]  # newest first, exact
    # The bytes of the messages that left are freed, a chunk at a time.
    assert v.codec.arena.nbytes <= sum(len(m.raw) for m in sent[-kept:]) + 3 * 2048
    # Filters read the stored rows.
    v.set_filter(text="17=X2999|")
    assert [r.ev for r in v.visible_rows()] == [sent[2998]]
    v.set_filter(client_order_id="C2990")
    assert [r.ev.seq_num for r in v.visible_rows()] == [2990]
    v.set_filter()
    v.show_chain(("C2995",))
    assert v.current == sent[2994]


def test_a_cleared_list_numbers_its_messages_from_one(qtbot: object) -> None:
    v = FixInspector()
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    v.on_events(records([_report(n) for n in range(1, 50)]))
    v.model.clear()
    assert v.codec.arena.nbytes == 0
    chain = [_report(n) for n in (7, 8, 9)]
    v.on_events(records(chain))
    # The Analyzer selects the n-th message of an order's chain by its number.
    assert [v.model.record(v.model.row_of(n)).ev for n in (1, 2, 3)] == chain


def test_sorted_index_answers_like_a_dict() -> None:
    rng = np.random.default_rng(9)
    ix = SortedIndex()
    reference: dict[int, int] = {}
    for step in range(60):
        # Mostly newer keys (appended), some older or known ones (inserted, updated).
        keys = np.unique(
            np.concatenate(
                [
                    rng.integers(step * 1000, step * 1000 + 900, 20),
                    rng.integers(-50, step * 1000 + 1, 5),
                ]
            )
        )
        pos = keys * 7 + step  # known keys move: their positions change
        ix.set_many(keys, pos)
        reference.update(zip(keys.tolist(), pos.tolist(), strict=True))
        gone = np.array([*list(reference)[step : step + 4], 10**12], np.int64)
        ix.pop_many(gone)
        for k in gone.tolist():
            reference.pop(k, None)
        probe = np.array([*list(reference)[-40:], -99, 10**11], np.int64)
        assert ix.get_many(probe).tolist() == [reference.get(k, -1) for k in probe.tolist()]
        assert len(ix) == len(reference)
    k = next(iter(reference))
    ix.set(k, 5)
    assert ix.get(k) == 5
    ix.pop(k)
    assert ix.get(k) == -1
    assert ix.nbytes == 16 * len(ix)
    ix.clear()
    assert ix.get(3) == -1


def _alert_entry(key: int, n: int, text: str, count: int = 1) -> LogEntry:
    level = int(AlertLevel.WARNING if n % 3 else AlertLevel.INFO)
    return LogEntry(key, T0 + n * 1_000, level, f"src{n % 4}", text, count, T0 if count > 1 else 0)


def test_the_log_keeps_its_newest_lines_exactly_and_frees_the_texts_of_the_others(
    qtbot: object,
) -> None:
    v = LogView()
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    v.model.capacity = 200
    v.codec.arena = ByteArena(chunk_bytes=1024)
    expected: dict[int, LogEntry] = {}  # key -> the line shown, oldest first
    for n in range(1, 2001, 20):
        batch = [
            _alert_entry(10 * k, k, f"ordre près de la limite {k} " + "x" * (k % 30))
            for k in range(n, n + 20)
        ]
        # An aggregate's update replaces its line and moves it to the top.
        batch.append(_alert_entry(10, n, f"limit hit ×{n}", count=n))
        v.add_entries(batch)
        for e in batch:
            expected.pop(e.key, None)
            expected[e.key] = e
    kept = len(v.model)
    assert 200 - 200 // 20 <= kept <= 200
    assert v.visible_entries() == list(expected.values())[::-1][:kept]  # newest first
    assert v.visible_entries()[0].key == 10
    assert v.model.cell_text(0, "text") == "×1,981  limit hit ×1981"
    assert v.codec.arena.nbytes <= sum(len(e.text.encode()) for e in v.visible_entries()) + 3 * 1024
    # The filters read the stored rows.
    v.set_level(int(AlertLevel.WARNING))
    assert all(e.level >= AlertLevel.WARNING for e in v.visible_entries())
    v.search_edit.setText("LIMITE 1999")
    assert [e.key for e in v.visible_entries()] == [19_990]
    v.search_edit.setText("src1")
    assert {e.source for e in v.visible_entries()} == {"src1"}
