# SPDX-License-Identifier: MIT
"""The lines an explained FIX message is shown as (Qt-free, no dictionary needed to import).

:class:`FieldNode` is what :mod:`engine.fix.edit.describe` produces and the message
inspector's detail tree draws; it lives on its own so that the inspector can name it without
loading the dictionaries.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FieldNode"]


@dataclass(frozen=True, slots=True)
class FieldNode:
    """One line of an explained message: a field, or a section or group entry holding fields.

    ``tag`` is -1 for sections (Header, Body, Trailer), group entries and malformed fields.
    ``problem`` is why the field fails validation (QuickFIX's text), or ``""``.
    """

    tag: int
    name: str
    value: str
    meaning: str = ""
    problem: str = ""
    children: tuple[FieldNode, ...] = ()
