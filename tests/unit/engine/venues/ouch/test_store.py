# SPDX-License-Identifier: MIT
"""The OUCH stores on real files: restart, torn and damaged tails, compaction, kill -9."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.venues.ouch.store import (
    COMPACT_AT,
    STATE_RECORD,
    FileClientState,
    FileSequencedStore,
    StoreError,
)

ROOT = Path(__file__).resolve().parents[5]


def test_sequenced_store_survives_reopen_and_replays_any_range(tmp_path: Path) -> None:
    store = FileSequencedStore(tmp_path, "A")
    msgs = [bytes([i % 256]) * (1 + i % 70) for i in range(3000)]
    for i, msg in enumerate(msgs, 1):
        assert store.append(msg) == i
    store.close()
    again = FileSequencedStore(tmp_path, "A")
    assert again.next_seq == 3001
    assert again.get_range(1, 3000) == msgs
    assert again.get_range(2999, 5000) == msgs[-2:]
    assert again.get_range(0, 1) == msgs[:1]
    assert again.get_range(10, 9) == []
    again.reset()
    assert again.next_seq == 1
    assert again.get_range(1, 10) == []
    again.close()


@pytest.mark.parametrize("damage", ["cut", "flip", "zeros"])
def test_sequenced_store_cuts_a_torn_or_damaged_tail(tmp_path: Path, damage: str) -> None:
    store = FileSequencedStore(tmp_path, "A")
    for i in range(10):
        store.append(b"message %d" % i)
    store.close()
    path = tmp_path / "A.soupseq"
    data = bytearray(path.read_bytes())
    if damage == "cut":
        data = data[:-3]
    elif damage == "flip":
        data[-1] ^= 0xFF
    else:
        data += bytes(40)  # power loss: zeros after the last record
    path.write_bytes(bytes(data))
    again = FileSequencedStore(tmp_path, "A")
    expected = 10 if damage == "zeros" else 9
    assert again.next_seq == expected + 1
    assert again.get_range(1, 100) == [b"message %d" % i for i in range(expected)]
    assert again.append(b"next") == expected + 1
    again.close()
    assert FileSequencedStore(tmp_path, "A").get_range(expected + 1, expected + 1) == [b"next"]


def test_client_state_keeps_its_counters_and_cuts_a_torn_record(tmp_path: Path) -> None:
    state = FileClientState(tmp_path, "U")
    assert (state.next_expected_seq, state.next_user_ref_num, state.session) == (1, 1, "")
    assert [state.take_user_ref_num() for _ in range(3)] == [1, 2, 3]
    state.set_next_expected_seq(8)
    state.set_session("SESS1")
    state.close()
    path = tmp_path / "U.ouchstate"
    with open(path, "ab") as f:
        f.write(b"\x00" * (STATE_RECORD - 5))  # a record cut off mid-write
    again = FileClientState(tmp_path, "U")
    assert (again.next_expected_seq, again.next_user_ref_num, again.session) == (8, 4, "SESS1")
    assert path.stat().st_size % STATE_RECORD == 0
    again.reset("NEWDAY")
    again.close()
    last = FileClientState(tmp_path, "U")
    assert (last.next_expected_seq, last.next_user_ref_num, last.session) == (1, 1, "NEWDAY")
    last.close()


def test_client_state_with_a_bad_last_record_falls_back_to_the_one_before(tmp_path: Path) -> None:
    state = FileClientState(tmp_path, "U")
    state.take_user_ref_num()
    state.take_user_ref_num()
    state.close()
    path = tmp_path / "U.ouchstate"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    again = FileClientState(tmp_path, "U")
    assert again.next_user_ref_num == 2  # the record of the second take was damaged
    again.close()


def test_client_state_in_blocks_never_reuses_a_user_ref_num(tmp_path: Path) -> None:
    state = FileClientState(tmp_path, "U", user_ref_block=100)
    assert [state.take_user_ref_num() for _ in range(150)] == list(range(1, 151))
    size = (tmp_path / "U.ouchstate").stat().st_size
    assert size == 2 * STATE_RECORD  # one record per block of 100
    # Killed (not closed): the restart goes on after the reserved block.
    again = FileClientState(tmp_path, "U", user_ref_block=100)
    assert again.take_user_ref_num() == 201
    again.close()  # a clean stop records the exact next number
    assert FileClientState(tmp_path, "U").next_user_ref_num == 202


def test_client_state_refuses_a_file_that_is_no_state(tmp_path: Path) -> None:
    (tmp_path / "U.ouchstate").write_bytes(b"x" * 100)
    with pytest.raises(StoreError, match="no valid state record"):
        FileClientState(tmp_path, "U")


def test_client_state_is_compacted_when_large(tmp_path: Path) -> None:
    state = FileClientState(tmp_path, "U")
    for _ in range(COMPACT_AT // STATE_RECORD + 10):
        state.take_user_ref_num()
    n = state.next_user_ref_num
    state.close()
    again = FileClientState(tmp_path, "U")
    assert again.next_user_ref_num == n
    assert (tmp_path / "U.ouchstate").stat().st_size == STATE_RECORD
    assert again.take_user_ref_num() == n
    again.close()


WRITER = """
import sys
from engine.venues.ouch.store import FileClientState, FileSequencedStore
store = FileSequencedStore(sys.argv[1], "S")
state = FileClientState(sys.argv[1], "C")
i = store.next_seq
print("ready", flush=True)
while True:
    ref = state.take_user_ref_num()
    seq = store.append(b"payload-%d-" % ref + bytes(ref % 300))
    state.set_next_expected_seq(seq + 1)
    if ref % 1000 == 0:
        print(ref, seq, flush=True)
"""


@pytest.mark.slow
def test_kill_9_at_any_instant_leaves_stores_that_open_and_continue(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    last_ref = 0
    for round_ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        seen = 0
        deadline = time.monotonic() + 0.3 + 0.1 * round_
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line:
                seen = int(line.split()[0])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        store = FileSequencedStore(tmp_path, "S")
        state = FileClientState(tmp_path, "C")
        n = store.next_seq - 1
        # Each message numbered in order, none torn, none missing; the counters never behind.
        msgs = store.get_range(1, n)
        assert len(msgs) == n >= seen > last_ref
        assert all(msg.startswith(b"payload-%d-" % (i + 1)) for i, msg in enumerate(msgs))
        assert state.next_user_ref_num >= n + 1
        assert state.next_user_ref_num >= seen + 1
        assert state.next_expected_seq in (n, n + 1)  # killed between append and record
        last_ref = state.next_user_ref_num - 1
        # The stores of the next round go on from here: make the counters agree again.
        state.set_next_user_ref_num(n + 1)
        store.close()
        state.close()
