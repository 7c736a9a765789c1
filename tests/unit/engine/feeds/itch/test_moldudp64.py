# SPDX-License-Identifier: MIT
"""MoldUDP64 sequence tracking on packets built here: gaps, duplicates, reordering,
heartbeats, end of session, and bad packets."""

import struct
from typing import Any, cast

import numpy as np
import pytest

from engine.feeds.itch import moldudp64 as mold
from engine.feeds.itch.decode import ItchDecodeError
from engine.feeds.itch.moldudp64 import MoldError, MoldUDP64Stream

SESSION = b"SESSION001"


def _py(kernel: object) -> Any:
    """The plain-Python function behind a compiled kernel."""
    return cast(Any, kernel).py_func


def _delete(ref: int) -> bytes:
    return struct.pack(">cHHHIQ", b"D", 1, 0, 0, ref, ref)


def packet(
    seq: int, refs: list[int] | None = None, *, count: int | None = None, session: bytes = SESSION
) -> bytes:
    """A packet whose messages are Order Deletes of ref == their sequence number."""
    refs = list(range(seq, seq + len(refs))) if refs else []
    body = b"".join(struct.pack(">H", 19) + _delete(r) for r in refs)
    return session + struct.pack(">QH", seq, len(refs) if count is None else count) + body


def p(seq: int, n: int) -> bytes:
    return packet(seq, list(range(n)))


def refs(batch: mold.MoldBatch) -> list[int]:
    return [int(x) for x in batch.decoded["D"]["order_reference_number"]]


def test_in_order_packets_decode_all_with_their_sequence_numbers() -> None:
    s = MoldUDP64Stream()
    b = s.feed([p(1, 3), p(4, 2), p(6, 1)])
    assert refs(b) == [1, 2, 3, 4, 5, 6]
    assert b.decoded["D"]["seq"].tolist() == [1, 2, 3, 4, 5, 6]
    assert b.status.tolist() == [0, 0, 0]
    r = s.report()
    assert (r.next_expected, r.gaps, r.missing, r.packets, r.messages) == (7, (), 0, 3, 6)
    assert r.session == SESSION


def test_a_gap_is_reported_and_closed_by_the_late_packet() -> None:
    s = MoldUDP64Stream()
    b = s.feed([p(1, 2), p(6, 2)])
    assert refs(b) == [1, 2, 6, 7]
    assert b.status.tolist() == [0, mold.GAP]
    assert s.report().gaps == ((3, 5),)
    assert s.report().missing == 3
    b = s.feed([p(3, 3)])  # the retransmission
    assert refs(b) == [3, 4, 5]
    assert b.status.tolist() == [mold.LATE]
    r = s.report()
    assert (r.gaps, r.next_expected, r.late_packets, r.gap_packets) == ((), 8, 1, 1)


def test_reordered_packets_inside_one_batch_fill_the_gap_they_opened() -> None:
    s = MoldUDP64Stream()
    b = s.feed([p(1, 1), p(3, 2), p(2, 1), p(5, 1)])
    assert refs(b) == [1, 3, 4, 2, 5]  # arrival order
    assert b.status.tolist() == [0, mold.GAP, mold.LATE, 0]
    assert s.report().gaps == ()


def test_a_late_packet_inside_a_gap_splits_it() -> None:
    s = MoldUDP64Stream()
    s.feed([p(1, 1), p(10, 1)])
    assert s.report().gaps == ((2, 9),)
    b = s.feed([p(5, 2)])
    assert refs(b) == [5, 6]
    assert s.report().gaps == ((2, 4), (7, 9))
    assert s.report().missing == 6


def test_duplicate_packets_are_not_decoded_twice() -> None:
    s = MoldUDP64Stream()
    b = s.feed([p(1, 3), p(1, 3), p(4, 1), p(4, 1)])
    assert refs(b) == [1, 2, 3, 4]
    assert b.status.tolist() == [0, mold.DUPLICATE, 0, mold.DUPLICATE]
    r = s.report()
    assert (r.duplicate_packets, r.skipped_messages, r.messages) == (2, 4, 8)


def test_an_overlapping_retransmission_decodes_only_its_new_messages() -> None:
    s = MoldUDP64Stream()
    b = s.feed([p(1, 3), p(2, 4)])
    assert refs(b) == [1, 2, 3, 4, 5]
    assert b.status.tolist() == [0, mold.OVERLAP]


def test_heartbeats_and_end_of_session() -> None:
    s = MoldUDP64Stream()
    b = s.feed([p(1, 2), packet(3), packet(5), packet(5, count=0xFFFF)])
    assert refs(b) == [1, 2]
    assert b.status.tolist() == [0, mold.HEARTBEAT, mold.HEARTBEAT | mold.GAP, mold.END_OF_SESSION]
    r = s.report()
    assert (r.heartbeats, r.end_of_session, r.gaps, r.next_expected) == (2, True, ((3, 4),), 5)


def test_joining_late_takes_the_first_packets_number() -> None:
    s = MoldUDP64Stream(expected=None)
    s.feed([p(1000, 2), p(1002, 1)])
    assert s.report().gaps == ()
    assert s.report().next_expected == 1003
    s2 = MoldUDP64Stream()
    s2.feed([p(1000, 2)])
    assert s2.report().gaps == ((1, 999),)


def test_too_many_open_gaps_is_an_error_naming_the_packet() -> None:
    s = MoldUDP64Stream(max_gaps=2)
    with pytest.raises(MoldError, match=r"packet 3: more than 2 open gaps"):
        s.feed([p(1, 1), p(3, 1), p(5, 1), p(7, 1)])


def test_a_packet_of_another_session_stops_the_batch_keeping_what_came_before() -> None:
    s = MoldUDP64Stream()
    with pytest.raises(MoldError, match=r"<packets>: packet 2: session b'OTHERSESS1'") as e:
        s.feed([p(1, 1), p(2, 1), packet(3, [0], session=b"OTHERSESS1"), p(4, 1)])
    assert refs(e.value.partial) == [1, 2]
    assert s.report().next_expected == 3


def test_a_packet_shorter_than_the_header_is_named() -> None:
    s = MoldUDP64Stream()
    with pytest.raises(MoldError, match=r"packet 1: 7 bytes, shorter than the 20-byte header"):
        s.feed([p(1, 1), SESSION[:7]], source="cap.pcap")


def test_a_bad_message_inside_a_packet_keeps_the_packets_before_and_the_stream_usable() -> None:
    s = MoldUDP64Stream()
    bad = p(3, 1)[:-3]
    with pytest.raises(ItchDecodeError, match=r"packet 2, byte \d+ \(message 3\)") as e:
        s.feed([p(1, 1), p(2, 1), bad, p(4, 1)])
    assert e.value.partial["D"]["order_reference_number"].tolist() == [1, 2]
    assert s.report().next_expected == 3
    assert refs(s.feed([p(3, 1)])) == [3]


def test_trailing_bytes_after_the_announced_count_are_an_error() -> None:
    with pytest.raises(ItchDecodeError, match="3 bytes are left after the packet's announced"):
        MoldUDP64Stream().feed([p(1, 1) + b"xyz"])


def test_reused_output_and_packed_input_give_the_same_rows() -> None:
    s = MoldUDP64Stream()
    s.reuse_output()
    packed = mold.pack_payloads([p(1, 2), p(3, 2)])
    assert refs(s.feed(packed)) == [1, 2, 3, 4]
    assert refs(s.feed(mold.pack_payloads([p(5, 1)]))) == [5]


def test_tracker_kernel_and_its_python_function_agree() -> None:
    from engine.feeds.itch import _kernels as k

    seqs = np.array([1, 5, 3, 3, 9, 4], np.int64)
    counts = np.array([2, 2, 1, 1, 0, 1], np.int64)
    results = []
    for fn in (k.mold_track, _py(k.mold_track)):
        state = np.zeros(k.T_WIDTH, np.int64)
        state[k.T_EXPECTED] = 1
        gaps = np.zeros((8, 2), np.int64)
        keep = np.zeros(7, np.uint8)
        status = np.zeros(6, np.uint8)
        fn(seqs, counts, state, gaps, keep, status)
        results.append((state.tolist(), gaps.tolist(), keep.tolist(), status.tolist()))
    assert results[0] == results[1]
    assert results[0][2] == [1, 1, 1, 1, 1, 0, 1]
