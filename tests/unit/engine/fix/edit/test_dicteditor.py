# SPDX-License-Identifier: MIT
"""Tests for engine.fix.edit.dicteditor: the dictionary editor's model."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from engine.fix.dictionary import DataDictionary
from engine.fix.edit.dicteditor import DictEditError, DictionaryEditor
from engine.fix.edit.splitting import split_fields

ROOT = Path(__file__).resolve().parents[5]
SHARED_SPEC = ROOT.parent / "shared" / "fix-spec"
SPECS = sorted(SHARED_SPEC.glob("*.xml")) if SHARED_SPEC.is_dir() else []
FIX44 = ROOT / "resources" / "fix" / "FIX44.xml"


def fix(*fields: tuple[int, str], begin: str = "FIX.4.4") -> str:
    """Return a framed FIX message (BodyLength and CheckSum computed), SOH as '|'."""
    body = "".join(f"{t}={v}\x01" for t, v in fields)
    head = f"8={begin}\x019={len(body)}\x01"
    total = sum((head + body).encode()) % 256
    return (head + body + f"10={total:03d}\x01").replace("\x01", "|")


def _canonical(el: ET.Element) -> tuple[object, ...]:
    return (el.tag, tuple(sorted(el.attrib.items())), tuple(_canonical(c) for c in el))


@pytest.mark.skipif(not SPECS, reason="../shared/fix-spec not available")
@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_shared_dictionary_saves_and_loads_to_an_equal_model(path: Path, tmp_path: Path) -> None:
    ed = DictionaryEditor.load(path)
    assert not ed.modified
    assert ed.diff() == []
    saved = ed.save_full(tmp_path / path.name)
    again = DictionaryEditor.load(saved)
    assert again.spec == ed.spec
    # Unchanged, the saved XML is equivalent to the original: same elements, same attributes,
    # same order (only quoting, indentation and comments may differ).
    assert _canonical(ET.parse(saved).getroot()) == _canonical(ET.parse(path).getroot())
    # Saving again gives the same bytes.
    assert again.to_xml() == saved.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def fix44() -> DataDictionary:
    return DataDictionary.load(FIX44)


NOS = (
    (35, "D"),
    (49, "ME"),
    (56, "THEM"),
    (34, "2"),
    (52, "20261202-12:00:00.000"),
    (11, "ORD-1"),
    (21, "1"),
    (55, "EURUSD"),
    (54, "1"),
    (60, "20261202-12:00:00.000"),
    (38, "100"),
    (40, "2"),
    (44, "1.2345"),
)


def test_custom_field_in_new_order_single_validates(fix44: DataDictionary) -> None:
    ed = DictionaryEditor(fix44)
    ed.add_field(5001, "VenueTag", "char", {"A": "AGGRESSIVE", "P": "PASSIVE"})
    ed.add_member(("message", "D"), "VenueTag", required=True)
    rows = ed.check_message(fix(*NOS, (5001, "A")))
    assert [r.status for r in rows] == ["ok"] * len(rows)
    venue = next(r for r in rows if r.tag == 5001)
    assert (venue.name, venue.meaning) == ("VenueTag", "AGGRESSIVE")
    side = next(r for r in rows if r.tag == 54)
    assert (side.name, side.meaning) == ("Side", "BUY")
    # Required now: a message without it is refused, naming the tag.
    missing = ed.check_message(fix(*NOS))
    [bad] = [r for r in missing if r.status == "error"]
    assert bad.tag == 35
    assert "Required tag missing: VenueTag (5001)" in bad.note
    # A value outside the enums is refused on its own row.
    wrong = ed.check_message(fix(*NOS, (5001, "Z")))
    [bad2] = [r for r in wrong if r.status == "error"]
    assert (bad2.tag, bad2.value) == (5001, "Z")
    assert "incorrect" in bad2.note.lower()
    # The base dictionary still does not know the tag.
    base_rows = DictionaryEditor(fix44).check_message(fix(*NOS, (5001, "A")))
    assert next(r for r in base_rows if r.tag == 5001).status == "error"


def test_engine_validates_with_the_saved_dictionary(fix44: DataDictionary, tmp_path: Path) -> None:
    # The engine's own validator, given the dictionary as saved, accepts the custom field and
    # still refuses a value outside its enums.
    from engine.fix.validation.validator import validate

    ed = DictionaryEditor(fix44)
    ed.add_field(5001, "VenueTag", "CHAR", {"A": "AGGRESSIVE"})
    ed.add_member(("message", "D"), "VenueTag", required=True)
    saved = DataDictionary.load(ed.save_full(tmp_path / "FIX44-venue.xml"))
    ok = split_fields(fix(*NOS, (5001, "A")))
    assert validate(ok, saved) is None
    assert validate(ok, fix44) is not None
    bad = validate(split_fields(fix(*NOS, (5001, "Z"))), saved)
    assert bad is not None
    assert bad.ref_tag == 5001
    missing = validate(split_fields(fix(*NOS)), saved)
    assert missing is not None
    assert missing.ref_tag == 5001


def test_bad_checksum_and_body_length_are_flagged(fix44: DataDictionary) -> None:
    ed = DictionaryEditor(fix44)
    text = fix(*NOS).replace("|38=100|", "|38=1000|")
    rows = ed.check_message(text)
    assert "BodyLength says" in next(r for r in rows if r.tag == 9).note
    assert "CheckSum says" in next(r for r in rows if r.tag == 10).note


def test_split_fields_accepts_log_prefix_and_separators() -> None:
    pairs = split_fields(
        "20261202-12:00:00.000 : 8=FIX.4.4^A9=5^A35=0^A10=000^A\r\n", from_begin=True
    )
    assert pairs == [(8, b"FIX.4.4"), (9, b"5"), (35, b"0"), (10, b"000")]
    assert split_fields("8=FIX.4.4|junk|35=0")[1] == (-1, b"junk")
    assert split_fields("8=FIX.4.4<SOH>58=a|b<SOH>")[1] == (58, b"a|b")  # one stand-in only
    assert split_fields(b"8=FIX.4.4\x0158=a|b\x01")[1] == (58, b"a|b")  # SOH: "|" is a value
    kept = split_fields("x 8=FIX.4.4|35=0")[0]  # the prefix kept unless asked
    assert kept == (-1, b"x 8=FIX.4.4")


@pytest.mark.parametrize(
    ("tag", "name", "type_", "reason"),
    [
        (4999, "Low", "STRING", "5000 and above"),
        (5001, "Side", "STRING", "already tag 54"),
        (5001, "9bad", "STRING", "use a letter"),
        (5001, "Fine", "NOTATYPE", "not a FIX type"),
    ],
)
def test_add_field_refuses_bad_definitions(
    fix44: DataDictionary, tag: int, name: str, type_: str, reason: str
) -> None:
    ed = DictionaryEditor(fix44)
    with pytest.raises(DictEditError, match=reason):
        ed.add_field(tag, name, type_)
    assert not ed.modified


def test_add_field_refuses_used_tag_and_bad_enum(fix44: DataDictionary) -> None:
    ed = DictionaryEditor(fix44)
    ed.add_field(5001, "VenueTag", "INT")
    with pytest.raises(DictEditError, match="tag 5001 is already field VenueTag"):
        ed.add_field(5001, "Other", "INT")
    with pytest.raises(DictEditError, match="'x' is not a valid INT"):
        ed.set_enums("VenueTag", {"x": "BAD"})


def test_add_to_group_edit_enums_diff_and_overlay_round_trip(
    fix44: DataDictionary, tmp_path: Path
) -> None:
    ed = DictionaryEditor(fix44)
    ed.add_field(5002, "DeskCode", "STRING")
    ed.add_member(("component", "Parties", "NoPartyIDs"), "DeskCode", required=False)
    side = ed.field("Side")
    assert side is not None
    ed.set_enums("Side", {**side.enums, "Z": "VENUE_SIDE"})
    ed.set_required(("message", "D"), "Account", required=True)
    assert ed.diff() == [
        "+ values of Side: Z=VENUE_SIDE",
        "+ field DeskCode (5002, STRING)",
        "~ message NewOrderSingle (35=D): Account optional → required",
        "+ component Parties / NoPartyIDs: field DeskCode (optional)",
    ]
    overlay = ed.save_overlay(tmp_path / "venue-overlay.xml")
    full = ed.save_full(tmp_path / "FIX44-venue.xml")
    assert fix44.with_overlay(overlay).spec == ed.spec
    assert DataDictionary.load(full).spec == ed.spec
    # Group member reachable through the flattened view.
    group = ed.dictionary().group("D", 453)
    assert group is not None
    assert 5002 in group.tags


def test_removal_cannot_be_an_overlay_but_can_be_a_full_dictionary(
    fix44: DataDictionary, tmp_path: Path
) -> None:
    ed = DictionaryEditor(fix44)
    ed.remove_member(("message", "D"), "ClOrdLinkID")
    assert ed.diff() == ["- message NewOrderSingle (35=D): field ClOrdLinkID"]
    with pytest.raises(DictEditError, match="save a full dictionary"):
        ed.save_overlay(tmp_path / "o.xml")
    ed.save_full(tmp_path / "full.xml")
    assert DataDictionary.load(tmp_path / "full.xml").spec == ed.spec


def test_add_member_refuses_duplicates(fix44: DataDictionary) -> None:
    ed = DictionaryEditor(fix44)
    with pytest.raises(DictEditError, match="already in message D"):
        ed.add_member(("message", "D"), "Symbol", required=True)  # via the Instrument component
    with pytest.raises(DictEditError, match="no field 'Nope'"):
        ed.add_member(("message", "D"), "Nope", required=True)
    with pytest.raises(DictEditError, match="no message with MsgType 'ZZ'"):
        ed.add_member(("message", "ZZ"), "Symbol", required=True)


def test_undo_by_restoring_the_previous_spec(fix44: DataDictionary) -> None:
    ed = DictionaryEditor(fix44)
    before = ed.spec
    ed.add_field(5001, "VenueTag", "STRING")
    assert ed.modified
    ed.restore(before)
    assert not ed.modified
    assert ed.dictionary().field(5001) is None


def test_browse_and_search(fix44: DataDictionary) -> None:
    ed = DictionaryEditor(fix44)
    kinds = {n.kind for n in ed.nodes()}
    assert kinds == {"header", "trailer", "message", "component", "group", "field"}
    hits = ed.search("neworder")
    assert [(h.kind, h.name) for h in hits] == [
        ("message", "NewOrderSingle"),
        ("message", "NewOrderList"),
        ("message", "NewOrderCross"),
        ("message", "NewOrderMultileg"),
    ]
    by_enum = [h.name for h in ed.search("SELL_SHORT")]
    assert "Side" in by_enum
    assert [h.name for h in ed.search("35=D")] == ["NewOrderSingle"]
    tag = [h for h in ed.search("453") if h.kind == "field"]
    assert [h.name for h in tag] == ["NoPartyIDs"]


def test_fix50_app_dictionary_checks_with_fixt_header() -> None:
    ed = DictionaryEditor.load(ROOT / "resources" / "fix" / "FIX50SP2.xml")
    rows = ed.check_message(
        fix(
            (35, "D"),
            (49, "ME"),
            (56, "THEM"),
            (34, "2"),
            (52, "20261202-12:00:00.000"),
            (1128, "9"),
            (11, "ORD-1"),
            (55, "EURUSD"),
            (54, "1"),
            (60, "20261202-12:00:00.000"),
            (38, "100"),
            (40, "1"),
            begin="FIXT.1.1",
        )
    )
    assert [(r.tag, r.note) for r in rows if r.status != "ok"] == []


# ------------------------------------------------------------------ saving in the file's own style
RES = Path(__file__).resolve().parents[5] / "resources" / "fix"
SHARED_SPEC = Path(__file__).resolve().parents[6] / "shared" / "fix-spec"


def _diff(a: str, b: str) -> list[str]:
    import difflib

    return [
        line
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("name", ["FIX44.xml", "FIXT11.xml", "FIX50SP2.xml"])
def test_an_unchanged_dictionary_saves_byte_for_byte(name: str, tmp_path: Path) -> None:
    for src in (RES / name, SHARED_SPEC / name):
        if not src.exists():
            continue
        out = DictionaryEditor.load(src).save_full(tmp_path / name)
        assert out.read_bytes() == src.read_bytes()


def test_an_edit_is_a_minimal_diff_in_the_files_style(tmp_path: Path) -> None:
    src = RES / "FIX44.xml"
    ed = DictionaryEditor.load(src)
    ed.add_field(5001, "VenueTag", "char", {"A": "AGGRESSIVE"})
    ed.add_member(("message", "D"), "VenueTag", required=True)
    side = ed.dictionary().field(54)
    assert side is not None
    ed.set_enums("Side", {**side.enums, "Z": "ZED_SIDE"})
    ed.remove_member(("message", "0"), "TestReqID")
    out = ed.save_full(tmp_path / "edited.xml")
    changes = _diff(src.read_text(), out.read_text())
    assert changes == [
        "-   <field name='TestReqID' required='N' />",
        "+   <field name='VenueTag' required='Y' />",
        "+   <value enum='Z' description='ZED_SIDE' />",
        "+  <field number='5001' name='VenueTag' type='CHAR'>",
        "+   <value enum='A' description='AGGRESSIVE' />",
        "+  </field>",
    ]
    assert DataDictionary.load(out).spec == ed.spec


def test_a_double_quoted_dictionary_keeps_its_quotes(tmp_path: Path) -> None:
    text = (RES / "FIX44.xml").read_text().replace("'", '"').replace(" />", "/>")
    src = tmp_path / "dq.xml"
    src.write_text(text)
    ed = DictionaryEditor.load(src)
    ed.add_field(5002, "DeskNote", "string", {})
    out = ed.save_full(tmp_path / "dq-edited.xml")
    assert _diff(text, out.read_text()) == [
        '+  <field number="5002" name="DeskNote" type="STRING"/>'
    ]
