# SPDX-License-Identifier: MIT
"""Message stores: MemoryStore, FileStore recovery, and a kill -9 in the middle of a burst."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.clock import TestClock
from engine.fix import store as store_module
from engine.fix.codec import decode_one, encode, format_timestamp
from engine.fix.message import FixMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import GAP_KEPT, FileStore, MemoryStore, MessageStore

ROOT = Path(__file__).resolve().parents[4]


def _exercise(store: MessageStore) -> None:
    store.set(1, b"one")
    store.incr_next_sender_seq_num()
    store.set(2, b"two")
    store.incr_next_sender_seq_num()
    store.incr_next_target_seq_num()
    assert store.get_range(1, 2) == [(1, b"one"), (2, b"two")]
    assert store.get_range(2, 99) == [(2, b"two")]
    assert (store.next_sender_seq_num, store.next_target_seq_num) == (3, 2)


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_store_set_get_and_counters(kind: str, tmp_path: Path) -> None:
    store: MessageStore = MemoryStore() if kind == "memory" else FileStore(tmp_path, "S")
    _exercise(store)
    store.reset(5)
    assert store.get_range(1, 10) == []
    assert (store.next_sender_seq_num, store.next_target_seq_num, store.creation_time_ns) == (
        1,
        1,
        5,
    )
    store.close()


class _DictStore:
    """What a MemoryStore keeps, as a plain dict: the model its list must agree with."""

    def __init__(self) -> None:
        self.messages: dict[int, bytes] = {}

    def set(self, seq: int, message: bytes) -> None:
        self.messages[seq] = message

    def get_range(self, begin: int, end: int) -> list[tuple[int, bytes]]:
        return sorted((s, m) for s, m in self.messages.items() if begin <= s <= end)


@pytest.mark.parametrize("chunk", [7, store_module.CHUNK])
def test_memory_store_keeps_what_a_dict_keeps(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Runs of consecutive numbers (the usual sends), small gaps bridged in the list, jumps far
    # ahead and back (numbers set by hand) and numbers stored again: every range asked for
    # afterwards is what a dict of every message stored gives.
    # (A chunk of 7 messages: many chunks filled and sealed.)
    monkeypatch.setattr(store_module, "CHUNK", chunk)
    rng = random.Random(7)
    for _ in range(40):
        store, model = MemoryStore(), _DictStore()
        seq = rng.choice([1, 1, 500, 10**12])
        for _ in range(rng.randrange(1, 400)):
            move = rng.random()
            if move < 0.05:
                seq += rng.randrange(2, GAP_KEPT + 2)  # a gap the list bridges
            elif move < 0.08:
                seq += GAP_KEPT + rng.randrange(2, 10**6)  # far ahead
            elif move < 0.11 and seq > 3:
                seq = rng.randrange(1, seq)  # back: numbers used again from here
            elif move < 0.13 and seq > 1:
                again = rng.randrange(max(1, seq - 50), seq)  # stored again in place
                model.set(again, b"again %d" % again)
                store.set(again, b"again %d" % again)
                continue
            message = b"m %d" % seq
            store.set(seq, message)
            model.set(seq, message)
            seq += 1
        top = max(model.messages) + 5
        for _ in range(30):
            begin = rng.randrange(0, top)
            end = rng.randrange(begin, top + 1)
            assert store.get_range(begin, end) == model.get_range(begin, end), (begin, end)
        assert store.get_range(0, top) == model.get_range(0, top)
        store.reset(1)
        assert store.get_range(0, top) == []


def test_memory_store_sends_through_a_session_keep_every_message() -> None:
    # send_template stores through its own inlined append: messages after a jump of the
    # sender's number (set by hand) are stored and resent like the others.
    clock = TestClock(1_764_892_800 * 1_000_000_000)
    store = MemoryStore()
    session = FixSession(
        SessionSettings(begin_string="FIX.4.4", sender_comp_id="A", target_comp_id="B"),
        store,
        clock=clock,
    )
    session.state.received_logon = session.state.sent_logon = True
    tmpl = session.template(b"D", [(11, None), (55, b"X")])
    n = 2 * store_module.CHUNK + 3  # two chunks filled and sealed on the way
    for i in range(n):
        assert session.send_template(tmpl, (b"c%d" % i,)) == i + 1
    # Filled chunks are sealed (tuples the collector stops walking): the list being filled
    # holds the last three only.
    assert len(store._tail) == 3
    far = n + GAP_KEPT + 100
    store.set_next_sender_seq_num(far)
    for i in range(n, n + 2):
        session.send_template(tmpl, (b"c%d" % i,))
    kept = store.get_range(1, 10**9)
    assert [s for s, _ in kept] == [*range(1, n + 1), far, far + 1]
    assert all(b"\x0111=c%d\x01" % i in raw for i, (_, raw) in enumerate(kept))
    session.close()


def test_file_store_reopen_restores_messages_and_seqnums(tmp_path: Path) -> None:
    store = FileStore(tmp_path, "S", now_ns=7)
    _exercise(store)
    store.set_next_target_seq_num(40)
    store.close()
    again = FileStore(tmp_path, "S", now_ns=99)
    assert again.get_range(1, 2) == [(1, b"one"), (2, b"two")]
    assert (again.next_sender_seq_num, again.next_target_seq_num) == (3, 40)
    assert again.creation_time_ns == 7
    again.close()


def test_file_store_with_torn_last_record_cuts_it_and_appends_cleanly(tmp_path: Path) -> None:
    store = FileStore(tmp_path, "S")
    _exercise(store)
    store.close()
    body = tmp_path / "S.body"
    body.write_bytes(body.read_bytes() + b"3,100\npartial")
    again = FileStore(tmp_path, "S")
    assert again.next_sender_seq_num == 3
    again.set(3, b"three")
    again.incr_next_sender_seq_num()
    again.close()
    third = FileStore(tmp_path, "S")
    assert third.get_range(1, 3) == [(1, b"one"), (2, b"two"), (3, b"three")]
    assert third.next_sender_seq_num == 4
    third.close()


def test_file_store_next_sender_survives_seqnums_behind_body(tmp_path: Path) -> None:
    # Killed between storing a message and rewriting .seqnums: the body file wins.
    store = FileStore(tmp_path, "S")
    store.set(1, b"one")
    store.close()
    assert FileStore(tmp_path, "S").next_sender_seq_num == 2


_CHILD = textwrap.dedent(
    """
    import sys
    from engine.clock import LiveClock
    from engine.fix.codec import decode_one, encode, format_timestamp
    from engine.fix.message import OutMessage
    from engine.fix.session import FixSession
    from engine.fix.settings import SessionSettings
    from engine.fix.store import FileStore

    clock = LiveClock()
    cfg = SessionSettings(begin_string="FIX.4.4", sender_comp_id="ISLD", target_comp_id="TW")
    s = FixSession(cfg, FileStore(sys.argv[1], "S", clock.now_ns()), clock=clock)
    s.on_connected(clock.now_ns())
    raw = encode(b"FIX.4.4", b"A", [(34, b"1"), (49, b"TW"),
                 (52, format_timestamp(clock.now_ns(), 3)), (56, b"ISLD")],
                 [(98, b"0"), (108, b"30")])
    s.on_message(decode_one(raw), clock.now_ns())
    assert s.is_logged_on
    n = 0
    while True:
        n += 1
        s.send(OutMessage("8", [(37, "o%d" % n), (17, "e%d" % n), (150, "0"), (39, "0"),
                                (55, "X"), (54, "1"), (151, "1"), (14, "0"), (6, "0")]))
        s.drain()
        if n % 200 == 0:
            print(n, flush=True)
    """
)


@pytest.mark.integration
def test_file_store_after_kill_9_mid_burst_resends_everything(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    reported = 0
    while reported < 3000:
        line = proc.stdout.readline()
        assert line, "child died"
        reported = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    clock = TestClock(1_800_000_000 * 10**9)
    cfg = SessionSettings(begin_string="FIX.4.4", sender_comp_id="ISLD", target_comp_id="TW")
    s = FixSession(cfg, FileStore(tmp_path, "S", clock.now_ns()), clock=clock)
    sent = s.next_sender_seq_num - 1
    assert sent >= reported + 1  # the Logon plus at least every burst message reported
    assert s.next_target_seq_num == 2
    stored = s.store.get_range(1, sent)
    assert [q for q, _ in stored] == list(range(1, sent + 1))

    def peer(mt: bytes, seq: int, body: list[tuple[int, bytes]]) -> FixMessage:
        ts = format_timestamp(clock.now_ns(), 3)
        m = decode_one(
            encode(b"FIX.4.4", mt, [(34, b"%d" % seq), (49, b"TW"), (52, ts), (56, b"ISLD")], body)
        )
        assert m is not None
        return m

    s.on_connected(clock.now_ns())
    out = s.on_message(peer(b"A", 2, [(98, b"0"), (108, b"30")]), clock.now_ns())
    assert [decode_one(o).msg_type for o in out] == [b"A"]  # type: ignore[union-attr]
    assert decode_one(out[0]).seq_num == sent + 1  # type: ignore[union-attr]
    out = s.on_message(peer(b"2", 3, [(7, b"1"), (16, b"0")]), clock.now_ns())
    msgs = [decode_one(o) for o in out]
    assert all(m is not None for m in msgs)
    # Logon gap-filled, every burst message resent with PossDupFlag, the new Logon gap-filled.
    assert (msgs[0].msg_type, msgs[0].get(36)) == (b"4", b"2")  # type: ignore[union-attr]
    resent = msgs[1:-1]
    assert [m.seq_num for m in resent] == list(range(2, sent + 1))  # type: ignore[union-attr]
    assert all(m.get(43) == b"Y" and m.msg_type == b"8" for m in resent)  # type: ignore[union-attr]
    assert resent[-1].get(37) == b"o%d" % (sent - 1)  # type: ignore[union-attr]
    s.close()


def test_refresh_on_logon_reloads_numbers_written_by_another_process(tmp_path: Path) -> None:
    # Hot fail-over: a standby session shares the store directory with the primary.
    clock = TestClock()
    cfg = SessionSettings(
        begin_string="FIX.4.4", sender_comp_id="ISLD", target_comp_id="TW", refresh_on_logon=True
    )
    standby = FixSession(cfg, FileStore(tmp_path, "S", clock.now_ns()), clock=clock)
    primary = FileStore(tmp_path, "S", clock.now_ns())
    for seq in range(1, 6):
        primary.set(seq, b"m%d" % seq)
        primary.incr_next_sender_seq_num()
    primary.set_next_target_seq_num(9)
    primary.close()
    assert standby.next_sender_seq_num == 1
    standby.on_connected(clock.now_ns())
    ts = format_timestamp(clock.now_ns(), 3)
    logon = decode_one(
        encode(
            b"FIX.4.4",
            b"A",
            [(34, b"9"), (49, b"TW"), (52, ts), (56, b"ISLD")],
            [(98, b"0"), (108, b"30")],
        )
    )
    assert logon is not None
    (out,) = standby.on_message(logon, clock.now_ns())
    assert decode_one(out).seq_num == 6  # type: ignore[union-attr]
    assert standby.next_target_seq_num == 10
    standby.close()


# ---------------------------------------------------------------- write-ahead behind the journal


def _disk_numbers(tmp_path: Path, prefix: str = "S") -> tuple[int, int]:
    """The numbers a restarted engine would read (a new store's file is empty: 1 and 1)."""
    raw = (tmp_path / f"{prefix}.seqnums").read_bytes()
    if not raw:
        return 1, 1
    sender, target = raw.split(b":")
    return int(sender), int(target)


def test_barrier_holds_the_inbound_number_until_the_journal_has_written(tmp_path: Path) -> None:
    from engine.journal import Journal

    # A journal whose writer thread sleeps for a minute: nothing is written until flush().
    journal = Journal(tmp_path / "j.qwj", TestClock(), flush_interval_ms=60_000)
    store = FileStore(tmp_path, "S")
    store.set_write_barrier(journal.after_written)
    for _ in range(5):
        journal.log(20, "test", "what message %d caused", 1)
        store.incr_next_target_seq_num()
    assert store.next_target_seq_num == 6  # the session counts them at once ...
    assert _disk_numbers(tmp_path) == (1, 1)  # ... the disk only after the journal
    assert FileStore(tmp_path, "S").next_target_seq_num == 1  # what a kill -9 now restarts at
    journal.flush()
    assert _disk_numbers(tmp_path) == (1, 6)
    # Sending is not held back: the sender number is never behind what went on the wire.
    store.set_next_sender_seq_num(9)
    store.incr_next_target_seq_num()
    assert _disk_numbers(tmp_path) == (9, 6)
    journal.close()
    # A closed journal will record nothing more: the number is written at once.
    store.incr_next_target_seq_num()
    assert _disk_numbers(tmp_path) == (9, 8)
    store.close()


def test_barrier_writes_never_undo_a_reset_or_a_move_back(tmp_path: Path) -> None:
    from engine.journal import Journal

    journal = Journal(tmp_path / "j.qwj", TestClock(), flush_interval_ms=60_000)
    store = FileStore(tmp_path, "S")
    store.set_write_barrier(journal.after_written)
    for _ in range(3):
        store.incr_next_target_seq_num()
    store.reset(0)  # e.g. a Logon with ResetSeqNumFlag <141> = Y
    journal.flush()  # the three earlier barrier writes arrive after the reset: void
    assert _disk_numbers(tmp_path) == (1, 1)
    store.incr_next_target_seq_num()
    store.set_next_target_seq_num(2)  # not a move back: waits like a message
    store.set_next_target_seq_num(1)  # a move back: at once
    journal.flush()
    assert _disk_numbers(tmp_path) == (1, 1)
    store.set_next_target_seq_num(40)  # SequenceReset-GapFill forward: behind the barrier
    assert _disk_numbers(tmp_path) == (1, 1)
    journal.flush()
    assert _disk_numbers(tmp_path) == (1, 40)
    journal.close()
    store.close()


def test_unreadable_sequence_numbers_are_an_error_naming_the_file(tmp_path: Path) -> None:
    from engine.fix.store import StoreError

    FileStore(tmp_path, "S").close()  # a new store: an empty .seqnums is fine
    (tmp_path / "S.seqnums").write_bytes(b"garbage\n")
    with pytest.raises(StoreError, match=r"S\.seqnums: sequence numbers unreadable: b'garbage"):
        FileStore(tmp_path, "S")


def test_file_store_index_is_sparse_and_finds_every_message(tmp_path: Path) -> None:
    from engine.fix import store as store_mod

    s = FileStore(tmp_path, "S", 1)
    n = store_mod.INDEX_EVERY * 5 + 7
    for seq in range(1, n + 1):
        if seq % 3 == 0:
            s.annotate(b"7 %d" % seq)
        s.set(seq, b"8=FIX.4.4\x0135=D\x0111=%d\x01" % seq)
        s.incr_next_sender_seq_num()
    assert len(s._index_seq) == 6  # one entry per INDEX_EVERY messages, not one per message
    for begin, end in ((1, 1), (31, 34), (n - 3, n + 10), (1, n)):
        got = s.get_range(begin, end)
        assert [q for q, _m in got] == list(range(begin, min(end, n) + 1))
        assert all(m.endswith(b"11=%d\x01" % q) for q, m in got)
    s.close()
    again = FileStore(tmp_path, "S", 2)
    assert again.next_sender_seq_num == n + 1
    assert [q for q, _m in again.get_range(60, 70)] == list(range(60, 71))
    assert [q for q, _n, _m in again.annotated()] == list(range(3, n + 1, 3))
    again.close()
