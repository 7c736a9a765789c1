# SPDX-License-Identifier: MIT
"""Enum members stay what they were after ``engine.enums`` drops 3.11's slow lookup hook."""

import enum
import pickle
import sys

import pytest

from engine.enums import OrdStatus, OrdType, Side


def test_members_are_plain_class_attributes() -> None:
    if sys.version_info < (3, 12):
        assert "__getattr__" not in vars(enum.EnumType)
    assert OrdType.__dict__["LIMIT"] is OrdType.LIMIT
    assert OrdType.LIMIT is OrdType(2) is OrdType["LIMIT"]
    assert pickle.loads(pickle.dumps(OrdStatus.PARTIALLY_FILLED)) is OrdStatus.PARTIALLY_FILLED
    assert [s.name for s in Side] == ["BUY", "SELL"]


def test_members_named_like_enum_properties_and_missing_members() -> None:
    class Odd(enum.Enum):
        A = 1
        name = 2
        value = 3

    assert Odd.name is Odd["name"]
    assert Odd.value.value == 3
    assert Odd.A.name == "A"
    with pytest.raises(AttributeError, match="has no attribute 'B'"):
        _ = Odd.B  # type: ignore[attr-defined]
