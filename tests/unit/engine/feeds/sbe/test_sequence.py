# SPDX-License-Identifier: MIT
"""MDP 3.0 packet sequence numbers: drops, duplicates and reordering, per channel."""

from __future__ import annotations

import struct

import pytest

from engine.feeds.sbe.mdp3 import (
    SEQ_AFTER_GAP,
    SEQ_DUPLICATE,
    SEQ_IN_ORDER,
    SEQ_LATE,
    SEQ_NONE,
    decode_capture,
    decode_payloads,
)
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
from tests.conftest import SHARED

DATA = SHARED / "data/cme_mdp3_sbe"
V8 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"
EXAMPLE = DATA / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"


@pytest.fixture(scope="module")
def v8() -> Schema:
    if not V8.is_file():
        pytest.skip(f"{V8} is not there")
    return load_schema(V8)


def heartbeat_packet(seq: int) -> bytes:
    """An MDP 3.0 packet with one AdminHeartbeat12 (an empty block)."""
    return struct.pack("<IQHHHHH", seq, 10**18 + seq, 10, 0, 12, 1, 8)


def test_drops_duplicates_and_reordering_are_told_apart(v8: Schema) -> None:
    seqs = [10, 11, 13, 12, 12, 16, 17, 11]
    cap = decode_payloads([heartbeat_packet(s) for s in seqs] + [b"short"], v8)
    assert list(cap.packets["seq"]) == [*seqs, -1]
    assert list(cap.packets["seq_status"]) == [
        SEQ_IN_ORDER, SEQ_IN_ORDER, SEQ_AFTER_GAP, SEQ_LATE, SEQ_DUPLICATE,
        SEQ_AFTER_GAP, SEQ_IN_ORDER, SEQ_DUPLICATE, SEQ_NONE,
    ]  # fmt: skip
    (report,) = cap.sequence
    assert (report.first, report.last) == (10, 17)
    assert report.gaps == ((14, 15),)
    assert report.missing == 2
    assert (report.duplicates, report.reordered) == (2, 1)
    assert "2 missing: 14-15, 2 duplicates, 1 reordered" in str(report)
    assert len(cap.template("AdminHeartbeat")) == 8  # every copy still decoded


def test_each_channel_has_its_own_sequence(v8: Schema) -> None:
    seqs = [5, 1, 6, 2, 8, 3]
    cap = decode_payloads(
        [heartbeat_packet(s) for s in seqs], v8, channels=["a", "b", "a", "b", "a", "b"]
    )
    a, b = cap.sequence
    assert (a.channel, a.gaps, b.channel, b.gaps) == ("a", ((7, 7),), "b", ())
    assert list(cap.packets["channel"]) == [0, 1, 0, 1, 0, 1]


def test_the_example_capture_has_two_whole_feeds() -> None:
    if not EXAMPLE.is_file():
        pytest.skip(f"{EXAMPLE} is not there")
    cap = decode_capture(EXAMPLE, V8)
    assert cap.channels == ["224.0.31.11:14320", "224.0.32.11:15320"]  # feeds A and B
    for s in cap.sequence:
        assert (s.packets, s.first, s.last) == (5000, 17347815, 17352814)
        assert (s.missing, s.duplicates, s.reordered) == (0, 0, 0)
    assert (cap.packets["frame"][:3] == [1, 2, 3]).all()
    assert (cap.packets["ts_ns"] > 1_474_000_000 * 10**9).all()  # September 2016
