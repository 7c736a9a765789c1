# SPDX-License-Identifier: MIT
"""Tests for engine.fix.dictionary: loading all nine QuickFIX dictionaries, lookups, overlays."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.dictionary import (
    ComponentMember,
    DataDictionary,
    DictionaryError,
    FieldMember,
    Overlay,
    default_dictionary_path,
)

ROOT = Path(__file__).resolve().parents[4]
SHARED_SPEC = ROOT.parent / "shared" / "fix-spec"
RESOURCES = ROOT / "resources" / "fix"
DATA = ROOT / "tests" / "data" / "fix"

NAMES = ["FIX40", "FIX41", "FIX42", "FIX43", "FIX44", "FIX50", "FIX50SP1", "FIX50SP2", "FIXT11"]
#: name -> (version, begin_string, appl_ver_id, n_messages)
EXPECTED = {
    "FIX40": ("FIX.4.0", "FIX.4.0", "2", 27),
    "FIX41": ("FIX.4.1", "FIX.4.1", "3", 28),
    "FIX42": ("FIX.4.2", "FIX.4.2", "4", 46),
    "FIX43": ("FIX.4.3", "FIX.4.3", "5", 68),
    "FIX44": ("FIX.4.4", "FIX.4.4", "6", 93),
    "FIX50": ("FIX.5.0", "FIXT.1.1", "7", 93),
    "FIX50SP1": ("FIX.5.0SP1", "FIXT.1.1", "8", 105),
    "FIX50SP2": ("FIX.5.0SP2", "FIXT.1.1", "9", 156),
    "FIXT11": ("FIXT.1.1", "FIXT.1.1", None, 8),
}

_cache: dict[Path, DataDictionary] = {}


def load(path: Path) -> DataDictionary:
    if path not in _cache:
        _cache[path] = DataDictionary.load(path)
    return _cache[path]


def shared(name: str) -> Path:
    path = SHARED_SPEC / f"{name}.xml"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


@pytest.fixture(scope="module")
def fix44() -> DataDictionary:
    return load(RESOURCES / "FIX44.xml")


@pytest.fixture(scope="module")
def mini() -> DataDictionary:
    return DataDictionary.load(DATA / "mini.xml")


@pytest.mark.parametrize("name", NAMES)
def test_load_shared_dictionary_reports_its_version(name: str) -> None:
    dd = load(shared(name))
    version, begin, appl, n_messages = EXPECTED[name]
    assert dd.version == version
    assert dd.begin_string == begin
    assert dd.appl_ver_id == appl
    assert len(dd.messages) == n_messages
    assert dd.is_transport == (name == "FIXT11")
    assert dd.is_app_only == name.startswith("FIX5")


@pytest.mark.parametrize("name", NAMES)
def test_shipped_dictionary_is_identical_to_shared_copy(name: str) -> None:
    shipped = RESOURCES / f"{name}.xml"
    assert shipped.read_bytes() == shared(name).read_bytes()
    assert default_dictionary_path(EXPECTED[name][0]) == shipped


def test_default_dictionary_path_unknown_version_raises() -> None:
    with pytest.raises(KeyError):
        default_dictionary_path("FIX.9.9")


def test_load_fix50sp2_is_fast() -> None:
    path = RESOURCES / "FIX50SP2.xml"
    t0 = time.perf_counter()
    dd = DataDictionary.load(path)
    elapsed = time.perf_counter() - t0
    assert len(dd.fields) > 5000
    # Measured ~0.17 s here; a generous bound that still catches a pathological slowdown.
    assert elapsed < 3.0


def test_field_lookup_by_tag_and_name(fix44: DataDictionary) -> None:
    side = fix44.field(54)
    assert side is not None
    assert side is fix44.field("Side")
    assert side.type == "CHAR"
    assert side.describe("1") == "BUY"
    assert fix44.describe_value(54, "2") == "SELL"
    assert fix44.field_name(38) == "OrderQty"
    assert fix44.field_type(44) == "PRICE"
    assert fix44.field(99999) is None
    assert fix44.field("NoSuchField") is None


def test_message_definition_new_order_single(fix44: DataDictionary) -> None:
    d = fix44.message("D")
    assert d is not None
    assert d is fix44.message_by_name("NewOrderSingle")
    assert d.name == "NewOrderSingle"
    assert d.category == "app"
    assert not d.is_admin
    assert set(d.required_tags) == {11, 54, 60, 40}
    # Instrument is a required component, but Symbol inside it is optional in FIX 4.4.
    assert 55 in d.tags
    assert 55 not in d.required_tags
    tags = [f.tag for f in d.fields]
    assert tags[0] == 11
    assert tags.index(453) < tags.index(54)
    assert fix44.message("A") is not None
    assert fix44.is_admin_msg_type("A")
    assert not fix44.is_admin_msg_type("D")
    assert not fix44.is_msg_type("*")


def test_nested_groups_have_delimiters_and_members(fix44: DataDictionary) -> None:
    parties = fix44.group("D", 453)
    assert parties is not None
    assert parties.name == "NoPartyIDs"
    assert parties.delimiter == 448
    assert [f.tag for f in parties.fields] == [448, 447, 452, 802]
    sub = parties.groups[802]
    assert sub.delimiter == 523
    assert [f.tag for f in sub.fields] == [523, 803]
    assert fix44.is_group("D", 453)
    assert not fix44.is_group("D", 448)
    assert fix44.group("0", 453) is None
    assert fix44.group("?", 453) is None


def test_group_member_is_not_a_message_field(fix44: DataDictionary) -> None:
    assert fix44.is_msg_field("D", 453)
    assert not fix44.is_msg_field("D", 448)
    assert 448 in fix44.all_tags("D")
    assert 49 in fix44.all_tags("D")


def test_header_and_trailer(fix44: DataDictionary) -> None:
    for tag in (8, 9, 35, 49, 56, 34, 52, 43, 122):
        assert fix44.is_header_field(tag)
    assert not fix44.is_header_field(11)
    assert fix44.is_trailer_field(10)
    assert fix44.is_trailer_field(93)
    assert not fix44.is_trailer_field(52)
    assert set(fix44.header.required_tags) == {8, 9, 35, 49, 56, 34, 52}
    hops = fix44.group("_header_", 627)
    assert hops is not None
    assert hops.delimiter == 628


def test_data_length_tags_pair_length_with_data(fix44: DataDictionary) -> None:
    assert fix44.data_length_tags[95] == 96
    assert fix44.data_length_tags[93] == 89
    assert fix44.data_length_tags[90] == 91
    assert fix44.data_length_tags[212] == 213
    assert fix44.data_length_tags[354] == 355


def test_fixt_transport_and_app_dictionaries() -> None:
    transport = load(RESOURCES / "FIXT11.xml")
    app = load(RESOURCES / "FIX50SP2.xml")
    assert transport.is_msg_type("A")
    assert not app.is_msg_type("A")
    assert app.is_msg_type("D")
    assert transport.is_header_field(1128)
    assert not app.is_header_field(49)
    assert app.group("D", 453) is not None


def test_component_required_flag_combines_with_field_flag(mini: DataDictionary) -> None:
    d = mini.message("D")
    assert d is not None
    # Instrument required + Symbol required -> required; Extras optional + Text required -> not.
    assert 55 in d.required_tags
    assert 58 not in d.required_tags
    assert 48 not in d.required_tags
    parties = d.groups[453]
    assert parties.required_tags == (448,)
    assert parties.groups[802].required_tags == (523,)


def test_load_malformed_xml_names_file_and_line() -> None:
    with pytest.raises(DictionaryError) as e:
        DataDictionary.load(DATA / "bad_xml.xml")
    assert e.value.line == 4
    assert "bad_xml.xml:4" in str(e.value)


def test_load_unknown_field_reference_names_line_and_element() -> None:
    with pytest.raises(DictionaryError) as e:
        DataDictionary.load(DATA / "bad_field.xml")
    assert e.value.line == 28
    assert "NoSuchField" in e.value.element
    assert "not defined in <fields>" in e.value.reason


@pytest.mark.parametrize(
    ("xml", "line", "reason"),
    [
        ("<fix major='4' minor='4'>\n<header/>\n<trailer/>\n<messages/>\n</fix>", 1, "<fields>"),
        (
            "<fix major='4' minor='4'><header/><trailer/><messages/>\n<fields>\n"
            "<field name='A' type='INT'/></fields></fix>",
            3,
            "number",
        ),
        (
            "<fix major='4' minor='4'><header/><trailer/><messages/>\n<fields>\n"
            "<field number='x' name='A' type='INT'/></fields></fix>",
            3,
            "not an integer",
        ),
        (
            "<fix major='4' minor='4'><header/><trailer/>\n<messages>\n"
            "<message name='X' msgtype='X'><component name='Nope' required='Y'/></message>"
            "</messages><fields/></fix>",
            3,
            "component 'Nope'",
        ),
        (
            "<fix major='4' minor='4'><header>\n<field name='A' required='maybe'/>"
            "</header><trailer/><messages/><fields/></fix>",
            2,
            "must be Y or N",
        ),
        ("<fox/>", 1, "root element"),
        ("", 1, "no element found"),
    ],
)
def test_load_errors_are_located(xml: str, line: int, reason: str) -> None:
    with pytest.raises(DictionaryError) as e:
        DataDictionary.from_string(xml, "x.xml")
    assert e.value.source == "x.xml"
    assert e.value.line == line
    assert reason in str(e.value)


def test_load_missing_file_raises_dictionary_error(tmp_path: Path) -> None:
    with pytest.raises(DictionaryError, match=r"nope\.xml"):
        DataDictionary.load(tmp_path / "nope.xml")


@pytest.mark.parametrize("name", ["FIX42", "FIX44", "FIXT11"])
def test_to_xml_round_trips_structure(name: str, tmp_path: Path) -> None:
    dd = load(RESOURCES / f"{name}.xml")
    out = tmp_path / "copy.xml"
    dd.save(out)
    again = DataDictionary.load(out)
    assert again.spec == dd.spec
    assert again.to_xml() == dd.to_xml()
    d1, d2 = dd.messages, again.messages
    assert d1.keys() == d2.keys()
    for mt in d1:
        assert d1[mt].fields == d2[mt].fields


def test_overlay_file_applies_to_base(fix44: DataDictionary) -> None:
    custom = fix44.with_overlay(DATA / "overlay.xml")
    venue = custom.field(5001)
    assert venue is not None
    assert venue.name == "VenueTag"
    side = custom.field(54)
    assert side is not None
    assert side.enums["Z"] == "VENUE_SIDE"
    assert side.enums["1"] == "BUY"
    d = custom.message("D")
    assert d is not None
    assert 5001 in d.required_tags
    assert 11 not in d.required_tags
    assert 5001 in d.groups[453].tags
    # The base is untouched.
    base_d = fix44.message("D")
    assert base_d is not None
    assert 11 in base_d.required_tags
    assert fix44.field(5001) is None


def test_overlay_round_trips_through_xml(fix44: DataDictionary, tmp_path: Path) -> None:
    ov = Overlay.load(DATA / "overlay.xml")
    path = tmp_path / "ov.xml"
    ov.save(path)
    again = Overlay.load(path)
    assert fix44.with_overlay(again).spec == fix44.with_overlay(ov).spec


def test_overlay_builder_adds_field_to_message_and_group(fix44: DataDictionary) -> None:
    ov = (
        Overlay(version="FIX.4.4")
        .add_field(9001, "MyTag", "int", {"1": "ONE"})
        .add_enums("OrdType", {"Z": "VENUE_ORDTYPE"})
        .set_message_field("D", "MyTag", required=True)
        .set_message_field("D", "MyTag", required=False, groups=("NoPartyIDs", "NoPartySubIDs"))
        .set_message_field("D", "Symbol", required=True)
    )
    custom = fix44.with_overlay(Overlay.from_string(ov.to_xml()))
    d = custom.message("D")
    assert d is not None
    assert 9001 in d.required_tags
    assert 55 in d.required_tags
    assert 9001 in d.groups[453].groups[802].tags
    assert custom.describe_value(40, "Z") == "VENUE_ORDTYPE"
    fd = custom.field("MyTag")
    assert fd is not None
    assert fd.type == "INT"
    # Saving the customised dictionary as full XML keeps the change.
    assert DataDictionary.from_string(custom.to_xml()).message("D").required_tags == d.required_tags  # type: ignore[union-attr]


def test_overlay_adds_new_message_and_component(fix44: DataDictionary) -> None:
    text = """<fixoverlay>
      <fields><field number='9100' name='Venue' type='STRING'/></fields>
      <components><component name='VenueBlock'><field name='Venue' required='Y'/></component>
      </components>
      <messages><message name='VenueStatus' msgtype='U1' msgcat='app'>
        <component name='VenueBlock' required='Y'/><field name='Text' required='N'/>
      </message></messages>
    </fixoverlay>"""
    custom = fix44.with_overlay(Overlay.from_string(text))
    m = custom.message("U1")
    assert m is not None
    assert m.name == "VenueStatus"
    assert m.required_tags == (9100,)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<fixoverlay version='FIX.4.2'/>", "overlay is for FIX.4.2"),
        (
            "<fixoverlay><fields><field number='54' name='Other' type='INT'/></fields>"
            "</fixoverlay>",
            "already 'Side'",
        ),
        ("<fixoverlay><fields><field name='Brand' /></fields></fixoverlay>", "needs a positive"),
        (
            "<fixoverlay><messages><message msgtype='D'><field name='NoPartyIDs'/></message>"
            "</messages></fixoverlay>",
            "is a group in the base",
        ),
        (
            "<fixoverlay><messages><message msgtype='ZZ'><field name='Text'/></message>"
            "</messages></fixoverlay>",
            "needs 'msgtype' and 'name'",
        ),
    ],
)
def test_overlay_mismatch_is_an_error(fix44: DataDictionary, text: str, reason: str) -> None:
    with pytest.raises(DictionaryError, match=reason):
        fix44.with_overlay(Overlay.from_string(text, "ov.xml"))


def test_overlay_unknown_field_reference_fails_at_build(fix44: DataDictionary) -> None:
    text = (
        "<fixoverlay><messages><message msgtype='D'><field name='Ghost' required='Y'/>"
        "</message></messages></fixoverlay>"
    )
    with pytest.raises(DictionaryError, match="'Ghost' is not defined"):
        fix44.with_overlay(Overlay.from_string(text))


def test_overlay_parse_error_is_located() -> None:
    with pytest.raises(DictionaryError) as e:
        Overlay.from_string("<fixoverlay>\n<bogus/>\n</fixoverlay>", "ov.xml")
    assert e.value.line == 2


def test_member_equality_ignores_line() -> None:
    assert FieldMember("A", True, 3) == FieldMember("A", True, 9)
    assert ComponentMember("C", False, 1) == ComponentMember("C", False)


def test_shipped_overlay_example_applies(fix44: DataDictionary) -> None:
    custom = fix44.with_overlay(RESOURCES / "overlay-example.xml")
    assert custom.describe_value(54, "Z") == "VENUE_SIDE"


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_fuzz_damaged_dictionary_loads_or_raises_dictionary_error(data: st.DataObject) -> None:
    text = (DATA / "mini.xml").read_bytes()
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(text) - 1))
        j = data.draw(st.integers(i, min(len(text), i + 40)))
        text = text[:i] + data.draw(st.binary(max_size=6)) + text[j:]
    try:
        dd = DataDictionary.from_bytes(text, "fuzz.xml")
    except DictionaryError as e:
        source = e.source
        assert source == "fuzz.xml"
    else:
        assert dd.version


def test_duplicate_definitions_are_located() -> None:
    text = (DATA / "mini.xml").read_text()
    twice = text.replace(
        "  <field number='8' name='BeginString' type='STRING' />",
        "  <field number='8' name='BeginString' type='STRING' />\n"
        "  <field number='8' name='Other' type='STRING' />",
    )
    with pytest.raises(DictionaryError, match="field number defined twice") as e:
        DataDictionary.from_string(twice)
    assert (
        e.value.line
        == text.splitlines().index("  <field number='8' name='BeginString' type='STRING' />") + 2
    )
    msg_twice = text.replace(
        "  <message name='Order' msgtype='D' msgcat='app'>",
        "  <message name='Heartbeat2' msgtype='0' msgcat='admin'><field name='TestReqID'/>"
        "</message>\n  <message name='Order' msgtype='D' msgcat='app'>",
    )
    with pytest.raises(DictionaryError, match="msgtype '0' defined twice") as e:
        DataDictionary.from_string(msg_twice)
    assert e.value.line == 15


def test_allow_other_values_keeps_enums_as_descriptions_only() -> None:
    text = (
        (DATA / "mini.xml")
        .read_text()
        .replace(
            "<field number='54' name='Side' type='CHAR'>",
            "<field number='54' name='Side' type='CHAR' allowOtherValues='Y'>",
        )
    )
    dd = DataDictionary.from_string(text)
    side = dd.field(54)
    assert side is not None
    assert side.allow_other_values
    assert DataDictionary.from_string(dd.to_xml()).spec == dd.spec
    from engine.fix.validation.validator import validate

    pairs = [
        (8, b"FIX.4.4"), (9, b"1"), (35, b"D"), (34, b"1"), (49, b"A"), (52, b"20240102-10:00:00"),
        (56, b"B"), (11, b"x"), (55, b"S"), (54, b"Q"), (10, b"000"),
    ]  # fmt: skip
    assert validate(pairs, dd) is None
    assert validate(pairs, DataDictionary.load(DATA / "mini.xml")) is not None


def test_overlay_diff_recreates_an_edited_dictionary(fix44: DataDictionary) -> None:
    ov = (
        Overlay()
        .add_field(9001, "MyTag", "INT")
        .add_enums("Side", {"Z": "VENUE_SIDE"})
        .set_message_field("D", "MyTag", required=True)
        .set_message_field("D", "ClOrdID", required=False)
    )
    custom = fix44.with_overlay(ov)
    diff = Overlay.diff(fix44.spec, custom.spec)
    assert diff.version == "FIX.4.4"
    again = fix44.with_overlay(Overlay.from_string(diff.to_xml()))
    assert again.spec == custom.spec
    assert Overlay.diff(fix44.spec, fix44.spec) == Overlay(version="FIX.4.4")


def test_overlay_diff_of_group_edit_in_mini_dictionary() -> None:
    base = DataDictionary.load(DATA / "mini.xml")
    edited = base.with_overlay(
        Overlay().set_message_field("D", "PartyRole", required=True, groups=("NoParties",))
    )
    diff = Overlay.diff(base.spec, edited.spec)
    assert base.with_overlay(diff).spec == edited.spec
    d = edited.message("D")
    assert d is not None
    assert d.groups[453].required_tags == (448, 452)


def test_overlay_diff_refuses_removals(fix44: DataDictionary) -> None:
    inlined = fix44.with_overlay(DATA / "overlay.xml")  # inlines Parties into D
    with pytest.raises(ValueError, match="removed or reordered"):
        Overlay.diff(fix44.spec, inlined.spec)
    fewer = dataclasses.replace(fix44.spec, messages=fix44.spec.messages[1:])
    with pytest.raises(ValueError, match="messages removed"):
        Overlay.diff(fix44.spec, fewer)
