# SPDX-License-Identifier: MIT
"""SBE schema XML: CME's v8, v9 and v13 templates, and the errors a broken schema gives."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from engine.feeds.sbe.schema import CompositeType, EncodedType, EnumType, SchemaError, SetType
from engine.feeds.sbe.schema_xml import load_schema
from tests.conftest import SHARED

DATA = SHARED / "data/cme_mdp3_sbe/schema"


def cme(version: int) -> Path:
    path = DATA / f"Cme.Futures.Mdp3.Sbe.v1.{version}.xml"
    if not path.is_file():
        pytest.skip(f"{path} is not there")
    return path


@pytest.mark.parametrize(("version", "n_messages"), [(8, 19), (9, 29), (13, 31)])
def test_cme_schemas_load_with_every_block_where_the_schema_says(
    version: int, n_messages: int
) -> None:
    s = load_schema(cme(version))
    assert (s.id, s.version, s.byte_order, s.package) == (1, version, "<", "mktdata")
    assert len(s.messages) == n_messages
    assert s.header.size == 8
    assert s.header_offset("templateId") == (2, 2)
    for m in s.messages.values():
        for block in (m, *m.walk_groups()):
            # every column inside the block, none overlapping, dtype as long as the block
            spans = sorted((c.offset, c.offset + c.size) for c in block.columns)
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
            assert all(end <= block.block_length for _, end in spans)
            dt = block.dtype()
            assert dt.itemsize >= block.block_length
            assert len(block.null_row()) == block.block_length


def test_cme_v8_types() -> None:
    s = load_schema(cme(8))
    price = s.types["PRICENULL"]
    assert isinstance(price, CompositeType)
    assert price.size == 8
    mantissa = price.part("mantissa").type
    assert isinstance(mantissa, EncodedType)
    assert mantissa.null == 2**63 - 1
    exponent = price.part("exponent").type
    assert isinstance(exponent, EncodedType)
    assert exponent.constant == -7
    assert exponent.size == 0
    g8 = s.types["groupSize8Byte"]
    assert isinstance(g8, CompositeType)
    assert g8.size == 8
    assert g8.part("numInGroup").offset == 7
    side = s.types["AggressorSide"]
    assert isinstance(side, EnumType)
    assert side.encoding.null == 255
    assert side.values == {"NoAggressor": 0, "Buy": 1, "Sell": 2}
    etype = s.types["MDEntryType"]
    assert isinstance(etype, EnumType)
    assert etype.values["OpenInterest"] == "C"
    mei = s.types["MatchEventIndicator"]
    assert isinstance(mei, SetType)
    assert mei.choices["EndOfEvent"] == 7
    u64 = s.types["uInt64NULL"]
    assert isinstance(u64, EncodedType)
    assert u64.null == 2**64 - 1
    assert u64.since_version == 7
    sid = s.types["SecurityIDSource"]
    assert isinstance(sid, EncodedType)
    assert sid.constant == "8"
    book = s.message("MDIncrementalRefreshBook")
    assert book.id == 32
    assert book.block_length == 11
    assert book.since_version == 2
    orders = book.group("NoOrderIDEntries")
    assert orders.since_version == 7
    assert orders.block_length == 24
    assert orders.dimension_size == 8
    entries = book.group("NoMDEntries")
    assert entries.block_length == 32  # longer than its last field's end (27): padding
    assert entries.column("MDEntryPx.mantissa").exponent == -7
    assert entries.column("SecurityID").offset == 12
    px = entries.column("MDEntryPx.mantissa")
    assert px.is_null(np.array([2**63 - 1, 5])).tolist() == [True, False]
    trade = s.message(42).group("NoMDEntries")
    assert trade.field("MDEntryType").constant == "2"
    assert "MDEntryType" not in {c.name for c in trade.columns}
    # the fields of a message added in a later version inherit its sinceVersion
    assert all(c.since_version >= 7 for c in orders.columns)


def test_cme_v13_has_the_fields_added_since(tmp_path: Path) -> None:
    s = load_schema(cme(13))
    fut = s.message("MDInstrumentDefinitionFuture54")
    assert fut.block_length == 224
    assert any(c.since_version > 9 for c in fut.columns)
    assert s.message(46).group("NoMDEntries").column("MDEntryPx.mantissa").exponent == -9


HEAD = """<?xml version="1.0"?>
<sbe:messageSchema xmlns:sbe="http://fixprotocol.io/2016/sbe" id="3" version="1">
  <types>
    <composite name="messageHeader">
      <type name="blockLength" primitiveType="uint16"/>
      <type name="templateId" primitiveType="uint16"/>
      <type name="schemaId" primitiveType="uint16"/>
      <type name="version" primitiveType="uint16"/>
    </composite>
"""


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            '</types>\n<sbe:message name="M" id="1">\n'
            '<field name="Px" id="1" type="PRICEX"/>\n</sbe:message>',
            r':12: <field name="Px">: unknown type \'PRICEX\'',
        ),
        (
            '<type name="T" primitiveType="uint128"/>\n</types>',
            r':10: <type name="T">: primitiveType=\'uint128\' is not an SBE primitive type',
        ),
        (
            '<type name="T" primitiveType="uint8" nullValue="300"/>\n</types>',
            r':10: <type name="T">: nullValue=300 does not fit a uint8',
        ),
        (
            '<composite name="C"><type name="a" primitiveType="int32"/>\n'
            '<type name="b" primitiveType="int8" offset="2"/></composite>\n</types>',
            r':11: <type name="b">: offset=2 overlaps the member before it \(ends at 4\)',
        ),
        (
            '<enum name="E" encodingType="char"><validValue name="X">XY</validValue></enum>\n'
            "</types>",
            r":10: <validValue name=\"X\">: value 'XY' of a char enum is not one char",
        ),
        (
            '</types>\n<sbe:message name="M" id="1" blockLength="2">\n'
            '<field name="A" id="1" type="uint32"/>\n</sbe:message>',
            r':11: <message name="M">: blockLength=2 is shorter than its fields \(4 bytes\)',
        ),
        (
            '</types>\n<sbe:message name="M" id="1">\n'
            '<group name="G" id="2" dimensionType="messageHeader"/>\n</sbe:message>',
            r":12: <group name=\"G\">: dimensionType 'messageHeader' has no numInGroup",
        ),
        ("<type name=\"T\" primitiveType='int8'>\n</types", r":12: not well-formed XML"),
    ],
)
def test_a_broken_schema_names_file_line_and_element(tmp_path: Path, body: str, error: str) -> None:
    path = tmp_path / "broken.xml"
    path.write_text(HEAD + body + "\n</sbe:messageSchema>\n")
    with pytest.raises(SchemaError, match=r"broken\.xml" + error):
        load_schema(path)


def test_a_missing_schema_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"nothere\.xml: cannot read the schema"):
        load_schema(tmp_path / "nothere.xml")


def test_unknown_message_names_the_schema() -> None:
    s = load_schema(cme(8))
    with pytest.raises(KeyError, match=r"v1\.8\.xml \(schema 1 v8\) has no message 99"):
        s.message(99)
