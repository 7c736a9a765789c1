# SPDX-License-Identifier: MIT
"""The 7 real ES packets of ``hex/packets.hex`` give the values tfgm/sbedecoder's tests assert.

The values below are those of sbedecoder's ``tests/test_sbe_parser.py`` (MIT), which decodes
the same packets; the file holds its 5 distinct packets (two of them twice).
"""

from __future__ import annotations

import binascii

import numpy as np
import pytest

from engine.feeds.sbe.mdp3 import DecodedCapture, decode_payloads
from tests.conftest import SHARED

DATA = SHARED / "data/cme_mdp3_sbe"
HEX = DATA / "hex/packets.hex"
SCHEMA = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"


@pytest.fixture(scope="module")
def packets() -> list[bytes]:
    if not HEX.is_file() or not SCHEMA.is_file():
        pytest.skip(f"{HEX} or {SCHEMA} is not there")
    return [binascii.a2b_hex(line.strip()) for line in HEX.read_text().split() if line.strip()]


def one(packets: list[bytes], i: int) -> DecodedCapture:
    return decode_payloads([packets[i]], SCHEMA)


def test_security_status_reset_statistics(packets: list[bytes]) -> None:
    cap = one(packets, 0)
    assert cap.decoded.n_messages == 1
    st = cap.template("SecurityStatus")
    assert len(st) == 1
    assert st.message.id == 30
    assert st.rows["_index"][0] == 0
    assert st.value(0, "TradeDate") == 17389
    assert st.value(0, "TransactTime") == 1502401500001346819
    event = st.column("SecurityTradingEvent").enum
    status = st.column("SecurityTradingStatus").enum
    halt = st.column("HaltReason").enum
    assert event is not None
    assert status is not None
    assert halt is not None
    assert event.name_of(st.rows["SecurityTradingEvent"][0]) == "ResetStatistics"
    assert event.descriptions["ResetStatistics"] == "Reset Statistics"
    assert status.name_of(st.rows["SecurityTradingStatus"][0]) == "PreOpen"
    assert status.descriptions["PreOpen"] == "Pre Open"
    assert st.value(0, "SecurityGroup") == "ES"
    assert st.value(0, "Asset") == ""
    assert halt.name_of(st.rows["HaltReason"][0]) == "GroupSchedule"
    assert st.value(0, "SecurityID") is None  # Int32NULL at its null value
    assert st.is_null("SecurityID")[0]
    assert not st.is_null("TradeDate")[0]


def test_security_status(packets: list[bytes]) -> None:
    st = one(packets, 1).template(30)
    assert st.value(0, "TradeDate") == 17389
    assert st.value(0, "TransactTime") == 1502402370000951321
    mei = st.column("MatchEventIndicator").set
    assert mei is not None
    assert mei.names_of(int(st.rows["MatchEventIndicator"][0])) == ["EndOfEvent"]
    event = st.column("SecurityTradingEvent").enum
    assert event is not None
    assert event.name_of(st.rows["SecurityTradingEvent"][0]) == "NoCancel"
    assert st.value(0, "SecurityGroup") == "ES"
    assert st.value(0, "SecurityID") is None


@pytest.mark.parametrize("i", [2, 3])
def test_incremental_refresh_groups(packets: list[bytes], i: int) -> None:
    book = one(packets, i).template("MDIncrementalRefreshBook")
    assert len(book) == 1
    assert book.message.id == 32
    assert book.value(0, "TransactTime") == 1502402403112954773
    assert book.rows["MatchEventIndicator"][0] == 132
    mei = book.column("MatchEventIndicator").set
    assert mei is not None
    assert mei.names_of(132) == ["LastQuoteMsg", "EndOfEvent"]
    md = book.groups["NoMDEntries"]
    assert len(md) == 2
    assert list(md.rows["_msg"]) == [0, 0]
    assert list(md.decimal("MDEntryPx")) == [243150.0, 243125.0]
    assert list(md.rows["MDEntryPx.mantissa"]) == [2431500000000, 2431250000000]
    assert list(md.rows["MDEntrySize"]) == [2, 2]
    assert list(md.rows["SecurityID"]) == [23936, 23936]
    assert list(md.rows["RptSeq"]) == [1322302, 1322303]
    assert list(md.rows["NumberOfOrders"]) == [1, 1]
    assert list(md.rows["MDPriceLevel"]) == [1, 2]
    action = md.column("MDUpdateAction").enum
    assert action is not None
    assert [action.name_of(v) for v in md.rows["MDUpdateAction"]] == ["New", "Change"]
    assert list(md.rows["MDEntryType"]) == [b"0", b"0"]
    etype = md.column("MDEntryType").enum
    assert etype is not None
    assert etype.name_of("0") == "Bid"
    orders = book.groups["NoOrderIDEntries"]
    assert len(orders) == 1
    assert orders.value(0, "OrderID") == 644422849436
    assert orders.value(0, "MDOrderPriority") == 5437133604
    assert orders.value(0, "MDDisplayQty") == 2
    assert orders.value(0, "ReferenceID") == 1
    assert orders.rows["OrderUpdateAction"][0] == 1
    oua = orders.column("OrderUpdateAction").enum
    assert oua is not None
    assert oua.name_of(1) == "Update"


def test_incremental_refresh_multiple_messages(packets: list[bytes]) -> None:
    cap = one(packets, 4)
    assert cap.decoded.n_messages == 2
    book = cap.template("MDIncrementalRefreshBook")
    assert len(book) == 2
    first, second = (book.entries("NoMDEntries", r) for r in (0, 1))
    assert len(first) == 1
    assert len(second) == 1
    assert first["MDEntryPx.mantissa"][0] * 1e-7 == 243225.0
    assert first["MDEntrySize"][0] == 142
    assert second["MDEntryPx.mantissa"][0] * 1e-7 == 243275.0
    assert second["MDEntrySize"][0] == 4


def test_incremental_refresh_trade_summary(packets: list[bytes]) -> None:
    cap = one(packets, 5)
    ts = cap.template("MDIncrementalRefreshTradeSummary")
    assert len(ts) == 1
    assert ts.message.id == 42
    assert ts.value(0, "TransactTime") == 1502402400015595653
    assert ts.rows["MatchEventIndicator"][0] == 1
    assert len(ts.message.groups) == 2
    md = ts.groups["NoMDEntries"]
    assert len(md) == 1
    assert md.decimal("MDEntryPx")[0] == 243450.0
    assert md.value(0, "MDEntrySize") == 2
    assert md.value(0, "SecurityID") == 24842
    assert md.value(0, "RptSeq") == 11283198
    assert md.value(0, "NumberOfOrders") == 2
    aggressor = md.column("AggressorSide").enum
    assert aggressor is not None
    assert aggressor.name_of(md.rows["AggressorSide"][0]) == "Buy"
    assert md.rows["MDUpdateAction"][0] == 0
    assert md.block.constants["MDEntryType"] == "2"  # a constant: no bytes on the wire
    orders = ts.groups["NoOrderIDEntries"]
    assert list(orders.rows["OrderID"]) == [644422848816, 644422848685]
    assert list(orders.rows["LastQty"]) == [2, 2]


def test_all_seven_packets_at_once_give_the_same_rows_as_one_by_one(packets: list[bytes]) -> None:
    together = decode_payloads(packets, SCHEMA)
    assert len(packets) == 7
    assert together.decoded.n_messages == 8
    assert not together.issues
    at = 0
    for i in range(len(packets)):
        alone = one(packets, i)
        for tid, rows in alone.decoded.templates.items():
            if not len(rows):
                continue
            mine = together.decoded.templates[tid]
            lo = int(np.searchsorted(mine.rows["_packet"], i))
            for name in rows.message.dtype().names or ():
                if not name.startswith("_"):
                    assert np.array_equal(rows.rows[name], mine.rows[name][lo : lo + len(rows)])
        at += alone.decoded.n_messages
    assert at == together.decoded.n_messages
