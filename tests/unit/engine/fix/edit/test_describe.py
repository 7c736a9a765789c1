# SPDX-License-Identifier: MIT
from app.fix_describe import FieldDescriber, humanize


def test_describer_names_fields_and_values_from_the_shipped_dictionaries() -> None:
    d = FieldDescriber()
    assert d(35, b"8") == ("MsgType", "Execution report")
    assert d(39, b"A") == ("OrdStatus", "Pending new")
    assert d(44, b"6000.25") == ("Price", "")
    assert d(9999, b"x") == ("", "")


def test_humanize_keeps_version_tokens() -> None:
    assert humanize("NEW_ORDER_SINGLE") == "New order single"
    assert humanize("FIX50SP2") == "FIX50SP2"
    assert humanize("") == ""
