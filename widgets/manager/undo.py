# SPDX-License-Identifier: MIT
"""Undo commands of the Manager editors: snapshots of a whole document, before and after.

Both editors' models are cheap to snapshot (a ``.cfg`` file is its text; a dictionary is an
immutable spec), so one command type per editor restores a state instead of reversing an
operation: undo can never disagree with what the edit did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from PySide6.QtGui import QUndoCommand

T = TypeVar("T")

#: Consecutive raw-text edits within one command merge (typing is one undo step per pause).
RAW_TEXT_ID = 1001


class SnapshotCommand(QUndoCommand, Generic[T]):
    """Switch a document between two states.

    Parameters
    ----------
    text : str
        What the command did, for the Edit menu ("Set HeartBtInt = 45").
    before, after : T
        The states.
    apply : Callable[[T], None]
        Makes a state current (and refreshes the views).
    merge_id : int
        Commands with the same non-negative id merge (see :data:`RAW_TEXT_ID`).
    """

    def __init__(
        self, text: str, before: T, after: T, apply: Callable[[T], None], merge_id: int = -1
    ) -> None:
        super().__init__(text)
        self.before = before
        self.after = after
        self._apply = apply
        self._merge_id = merge_id

    def redo(self) -> None:
        """Make the ``after`` state current."""
        self._apply(self.after)

    def undo(self) -> None:
        """Make the ``before`` state current."""
        self._apply(self.before)

    def id(self) -> int:
        """Return the merge id (-1: never merges)."""
        return self._merge_id

    def mergeWith(self, other: QUndoCommand) -> bool:
        """Absorb a following command of the same id (keeps the first ``before``)."""
        if not isinstance(other, SnapshotCommand) or other.id() != self._merge_id:
            return False
        self.after = other.after
        return True
