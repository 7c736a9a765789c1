# SPDX-License-Identifier: MIT
"""Column specifications: a table's columns are declared as data (vn.py ``headers``)."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Column(Generic[R]):
    """One column of a table of rows of type ``R``.

    Parameters
    ----------
    key : str
        Stable name, used by tests, CSV headers and saved layouts.
    title : str
        Header text.
    text : Callable[[R], str]
        Display text of a row's cell.
    numeric : bool
        Right-align the cell; CSV export drops thousands separators.
    tone : Callable[[R], str] | None
        Colour name of a cell ("bid", "ask", "ok", "warn", "bad", "muted" or "" for the
        default); the view maps names to theme colours.
    width : int
        Initial width in pixels (0: the view's default).
    tooltip : Callable[[R], str] | None
        Tooltip of a cell.
    """

    key: str
    title: str
    text: Callable[[R], str]
    numeric: bool = False
    tone: Callable[[R], str] | None = None
    width: int = 0
    tooltip: Callable[[R], str] | None = None
