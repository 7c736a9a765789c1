# SPDX-License-Identifier: MIT
"""Damaged journals: torn tails are dropped, corruption is reported, nothing else escapes."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.journal import (
    Journal,
    JournalCorruptError,
    JournalError,
    JournalEvent,
    JournalFormatError,
    JournalOpened,
    JournalReader,
    read_journal,
    recover,
)
from engine.journal import format as fmt
from tests.unit.engine.journal.helpers import FIX_NOS, T0, alert, make_view, order_changed


def _write_sample(path: Path, n: int = 12) -> None:
    with Journal(path, TestClock(T0), sync="none") as j:
        for i in range(n):
            j.on_event(order_changed(make_view(i + 1)))
            j.record_fix("S", 2, FIX_NOS, i, i + 1, i + 2)
            j.log(logging.INFO, "t", "line %d", i)
            j.on_event(alert(i))


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[int]]:
    """Bytes of a valid journal and the offsets of its records (plus the end)."""
    path = tmp_path_factory.mktemp("sample") / "j.qwj"
    _write_sample(path)
    reader = JournalReader(path)
    offsets = [r.offset for r in reader.raw()]
    return path.read_bytes(), [*offsets, reader.end_offset]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch") / "j.qwj"


def _records(path: Path) -> list[object]:
    return read_journal(path)


def test_torn_tail_is_dropped_and_described(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 2)
    whole = read_journal(path)
    data = path.read_bytes()
    second = [r.offset for r in JournalReader(path).raw()][1]
    path.write_bytes(data + data[second : second + 20])  # a cut-off append of a record
    reader = JournalReader(path)
    assert list(reader.records()) == whole
    tail = reader.torn_tail
    assert tail is not None
    assert (tail.offset, tail.size, tail.index) == (len(data), 20, len(reader))
    assert "past the end" in tail.reason


def test_torn_tail_in_strict_mode_raises_with_offset(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 1)
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"\x05\x00")
    with pytest.raises(JournalCorruptError, match=f"at offset {size}: torn tail") as info:
        read_journal(path, strict=True)
    assert info.value.offset == size
    assert info.value.path == str(path)


def test_zero_filled_tail_is_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 1)
    whole = read_journal(path)
    with path.open("ab") as f:
        f.write(bytes(4096))  # what a crash can leave after preallocated blocks
    reader = JournalReader(path)
    assert list(reader.records()) == whole
    assert reader.torn_tail is not None
    assert reader.torn_tail.size == 4096


def test_damage_before_intact_records_is_corruption_naming_the_record(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 3)
    offsets = [r.offset for r in JournalReader(path).raw()]
    data = bytearray(path.read_bytes())
    data[offsets[4] + fmt.RECORD_HEADER_SIZE + 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError) as info:
        read_journal(path)
    e = info.value
    assert (e.offset, e.index) == (offsets[4], 4)
    assert "CRC mismatch" in e.reason
    assert "not a torn tail" in str(e)
    assert str(path) in str(e)


def test_writer_resumes_after_a_torn_tail_and_truncates_it(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 2)
    before = read_journal(path)
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(fmt.frame(fmt.KIND_LOG, 0, b"\x95" + bytes(30))[:25])
    with Journal(path, TestClock(T0 + 1), sync="none") as j:
        assert j.resumed_at == size
        assert j.dropped_tail_bytes == 25
        j.on_event(alert(99))
    reader = JournalReader(path)
    after = list(reader.records())
    assert reader.torn_tail is None
    assert after[: len(before)] == before
    assert isinstance(after[len(before)], JournalOpened)
    assert after[-1] == JournalEvent(seq=0, event=alert(99))


def test_writer_resumes_from_the_recovery_reading_only_while_the_file_is_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 2)
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(fmt.frame(fmt.KIND_LOG, 0, b"\x95" + bytes(30))[:25])
    state = recover(path)
    verified = state.verified_end(path)
    assert verified is not None
    assert (verified.end_offset, verified.size) == (size, size + 25)
    with Journal(path, TestClock(T0 + 1), sync="none", verified=verified) as j:
        assert j.resumed_verified  # not read again
        assert (j.resumed_at, j.dropped_tail_bytes) == (size, 25)
        j.on_event(alert(98))  # a schema the file had: its type id is reused
    reader = JournalReader(path)
    records = list(reader.records())
    assert reader.torn_tail is None
    assert records[-1] == JournalEvent(seq=0, event=alert(98))
    assert len({s.name for s in reader.schemas.values()}) == len(reader.schemas)
    # The file changed since that reading (here: the append above): read again, as always.
    with Journal(path, TestClock(T0 + 2), sync="none", verified=verified) as j:
        assert not j.resumed_verified
        assert j.dropped_tail_bytes == 0
        j.on_event(alert(99))
    assert list(read_journal(path))[-1] == JournalEvent(seq=0, event=alert(99))


def test_writer_refuses_to_append_to_a_corrupt_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 2)
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError):
        Journal(path, TestClock())
    assert path.read_bytes() == bytes(data)  # never truncated or overwritten


def test_intact_record_with_a_bad_payload_is_reported_not_raised_raw(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    header = fmt.pack_file_header(0)
    bad_fix = fmt.frame(fmt.KIND_FIX, 0, b"\x93\xa1S\x02\x01")  # an array of 3, not 6
    bad_event = fmt.frame(fmt.KIND_EVENT, 9, b"\x91\x00")  # type id 9 was never defined
    path.write_bytes(header + bad_fix + bad_event)
    reader = JournalReader(path)
    recs = list(reader.raw())
    with pytest.raises(JournalCorruptError, match=r"record 0 at offset 32: bad FIX record"):
        reader.decode(recs[0])
    with pytest.raises(JournalCorruptError, match="undefined type id 9"):
        reader.decode(recs[1])


def test_unknown_record_kind_is_skipped_for_forward_compatibility(tmp_path: Path) -> None:
    path = tmp_path / "j.qwj"
    _write_sample(path, 1)
    whole = read_journal(path)
    with path.open("ab") as f:
        f.write(fmt.frame(200, 0, b"future"))
    reader = JournalReader(path)
    assert list(reader.records()) == whole
    assert reader.skipped == 1
    assert reader.torn_tail is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncated_journal_reads_exactly_the_whole_records(
    sample: tuple[bytes, list[int]], scratch: Path, data: st.DataObject
) -> None:
    raw, bounds = sample
    cut = data.draw(st.integers(0, len(raw)))
    scratch.write_bytes(raw[:cut])
    if cut < fmt.FILE_HEADER_SIZE:
        with pytest.raises(JournalFormatError):
            JournalReader(scratch).scan()
        return
    reader = JournalReader(scratch)
    records = list(reader.raw())
    whole = [b for b in bounds[1:] if b <= cut]
    assert len(records) == len(whole)
    assert (reader.torn_tail is None) == (cut in bounds or cut == fmt.FILE_HEADER_SIZE)
    for rec in records:
        if rec.kind != fmt.KIND_SCHEMA:
            reader.decode(rec)  # every record kept decodes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_flipped_byte_is_corruption_or_a_torn_last_record(
    sample: tuple[bytes, list[int]], scratch: Path, data: st.DataObject
) -> None:
    raw, bounds = sample
    pos = data.draw(st.integers(fmt.FILE_HEADER_SIZE, len(raw) - 1))
    flip = data.draw(st.integers(1, 255))
    damaged = bytearray(raw)
    damaged[pos] ^= flip
    scratch.write_bytes(bytes(damaged))
    hit = max(i for i, b in enumerate(bounds[:-1]) if b <= pos)  # the record that was hit
    reader = JournalReader(scratch)
    if hit == len(bounds) - 2:  # the last record: a torn tail
        assert len(reader) == hit
        assert reader.torn_tail is not None
        assert reader.torn_tail.offset == bounds[hit]
    else:
        with pytest.raises(JournalCorruptError) as info:
            reader.scan()
        assert info.value.offset == bounds[hit]
        assert info.value.index == hit


@settings(max_examples=200, deadline=None)
@given(garbage=st.binary(max_size=400), keep=st.booleans())
def test_garbage_raises_only_journal_errors(garbage: bytes, keep: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.qwj"
        body = fmt.pack_file_header(0) + garbage if keep else garbage
        path.write_bytes(body)
        try:
            reader = JournalReader(path)
            for rec in reader.raw(fmt.KNOWN_KINDS - {fmt.KIND_SCHEMA}):
                offset = None
                try:
                    reader.decode(rec)
                except JournalCorruptError as e:
                    offset = e.offset
                assert offset in (None, rec.offset)
        except JournalError:
            pass


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(max_size=64), kind=st.sampled_from(sorted(fmt.KNOWN_KINDS - {2})))
def test_intact_frames_with_garbage_payloads_raise_only_corrupt_errors(
    payload: bytes, kind: int
) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.qwj"
        path.write_bytes(fmt.pack_file_header(0) + fmt.frame(kind, 1, payload))
        reader = JournalReader(path)
        [rec] = list(reader.raw())
        where = None
        try:
            reader.decode(rec)
        except JournalCorruptError as e:
            where = (e.offset, e.index)
        assert where in (None, (32, 0))


@pytest.mark.parametrize("kind", [fmt.KIND_FIX, fmt.KIND_EVENT, fmt.KIND_SCHEMA])
def test_deeply_nested_payload_is_reported_as_corruption(tmp_path: Path, kind: int) -> None:
    path = tmp_path / "deep.qwj"
    deep = b"\x92\x00" * 100_000 + b"\x00"  # arrays nested 100 000 deep
    good_schema = fmt.frame(fmt.KIND_SCHEMA, 1, b"\x92\xa1X\x91\x92\xa1a\xa5tuple")
    path.write_bytes(fmt.pack_file_header(0) + good_schema + fmt.frame(kind, 1 + (kind == 2), deep))
    reader = JournalReader(path)
    if kind == fmt.KIND_SCHEMA:  # schema records are decoded while scanning
        with pytest.raises(JournalCorruptError, match="record 1 at offset 57: bad schema"):
            reader.scan()
        return
    recs = list(reader.raw())
    with pytest.raises(JournalCorruptError, match="record 1 at offset 57"):
        reader.decode(recs[1])
