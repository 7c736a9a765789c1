# SPDX-License-Identifier: MIT
"""The OUCH client's next expected sequence number waits for the journal (write-ahead).

A ``kill -9`` between taking a message and journaling what it caused must leave the state file
behind, so that the venue replays the message; and the replayed messages a previous run may
have applied are marked so the order manager takes them as old news.
"""

from collections.abc import Callable
from pathlib import Path

from engine.venues.ouch.session import WriteAheadState
from engine.venues.ouch.store import FileClientState


class Barrier:
    """The journal's ``after_written``, held back until the test says it wrote."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[], object]] = []
        self.closed = False

    def __call__(self, fn: Callable[[], object]) -> None:
        if self.closed:
            raise RuntimeError("journal closed")
        self.waiting.append(fn)

    def written(self) -> None:
        for fn in self.waiting:
            fn()
        self.waiting.clear()


def test_the_state_file_moves_only_after_the_journal_wrote(tmp_path: Path) -> None:
    barrier = Barrier()
    state = WriteAheadState(FileClientState(tmp_path, "c"), barrier, tmp_path / "c.taken")
    ref = state.take_user_ref_num()  # UserRefNums are on disk at once, as before
    for seq in (2, 3, 4):
        state.set_next_expected_seq(seq)
    assert state.next_expected_seq == 4  # this process asks for 4 next
    state.close()  # a kill -9 here: the journal never wrote what messages 1-3 caused

    reopened = FileClientState(tmp_path, "c")
    assert reopened.next_expected_seq == 1  # the venue replays 1-3
    assert reopened.next_user_ref_num == ref + 1
    again = WriteAheadState(reopened, Barrier(), tmp_path / "c.taken")
    assert again.replayed_below == 4  # 1-3 may have been applied: they come marked resent
    again.close()


def test_once_written_the_state_is_durable_and_nothing_is_replayed_as_resent(
    tmp_path: Path,
) -> None:
    barrier = Barrier()
    state = WriteAheadState(FileClientState(tmp_path, "c"), barrier, tmp_path / "c.taken")
    state.set_next_expected_seq(2)
    state.set_next_expected_seq(3)
    barrier.written()
    barrier.closed = True
    state.set_next_expected_seq(4)  # the journal closed first: kept in memory, no error
    state.close()
    reopened = WriteAheadState(FileClientState(tmp_path, "c"), Barrier(), tmp_path / "c.taken")
    assert reopened.next_expected_seq == 3
    assert reopened.replayed_below == 4
    reopened.reset("20261205")  # a new day's session starts at 1, nothing marked
    assert (reopened.next_expected_seq, reopened.replayed_below) == (1, 1)
    reopened.close()


def test_a_journal_that_calls_back_after_close_writes_nothing(tmp_path: Path) -> None:
    barrier = Barrier()
    state = WriteAheadState(FileClientState(tmp_path, "c"), barrier, tmp_path / "c.taken")
    state.set_next_expected_seq(2)
    state.close()  # the engine stops; the journal's writer thread still holds the callback
    barrier.written()  # must neither raise nor write to the closed file
    assert FileClientState(tmp_path, "c").next_expected_seq == 1
