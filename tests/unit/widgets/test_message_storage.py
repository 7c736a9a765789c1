# SPDX-License-Identifier: MIT
"""The FIX message list's storage: packed bytes, rows rebuilt exactly, bounded retention."""

import pytest

from engine.events import FixMessageSeen, VenueMessageSeen
from tests.unit.widgets.builders import T0, fix_message, records
from widgets.fix_inspector import FixInspector, MessageCodec
from widgets.tables.arena import ByteArena

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
    return VenueMessageSeen(ts_event=T0 + seq, session_id="OUCH QWC1@127.0.0.1:5002",
                            protocol="OUCH", outbound=seq % 2 == 0, msg_type="U OrderReplaced",
                            seq_num=seq, raw=bytes([85, 0, seq % 256, 1, 2]), fields=fields,
                            client_order_id=f"Ö{seq}", orig_client_order_id=f"O{seq - 1}",
                            ts_created=T0 - 7, ts_wire=T0 - 3)  # fmt: skip


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
    return fix_message(f"8=FIX.4.4|35=8|34={n}|11=C{n}|17=X{n}|39=0|58={'p' * (n % 50)}|10=000|",
                       seq=n, ts=T0 + n * 1_000)  # fmt: skip


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
