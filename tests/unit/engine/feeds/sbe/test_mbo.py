# SPDX-License-Identifier: MIT
"""MDP 3.0 market by order into L3 events and books: known orders, encoded, decoded, rebuilt.

A random order flow over three SecurityIDs (adds, smaller and bigger sizes, price changes,
deletes, book resets; both sides) is encoded with CME's schema into MDIncrementalRefreshOrderBook
(47) messages and the order entries of MDIncrementalRefreshBook (46), several messages a packet
and B-feed copies of some packets. The events and books built from the decoded packets must be
the flow's own, and equal a dict-of-orders book after every event; the real v9 captures'
order entries must become the events their fields say.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.feeds.sbe.mbo import MboError, build_l3_books, mbo_events
from engine.feeds.sbe.mdp3 import decode_capture, decode_payloads
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_MODIFY, SELL
from tests.conftest import SHARED
from tests.unit.engine.feeds.sbe.encode import encode_message, mdp3_packet
from tests.unit.engine.feeds.sbe.mbo_flow import (
    SIDS,
    TICK,
    TICK_SIZE,
    DictBook,
    Op,
    expected_events,
    flow_packets,
    order_flow,
)

DATA = SHARED / "data/cme_mdp3_sbe"
SCHEMAS = {v: DATA / f"schema/Cme.Futures.Mdp3.Sbe.v1.{v}.xml" for v in (8, 9, 13)}


@pytest.fixture(scope="module", params=[9, 13])
def schema(request: pytest.FixtureRequest) -> Schema:
    path = SCHEMAS[request.param]
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return load_schema(path)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_events_are_the_known_orders_in_feed_order(schema: Schema, seed: int) -> None:
    ops = order_flow(600, seed)
    flow = flow_packets(schema, ops, seed)
    cap = decode_payloads(flow.payloads, schema, channels=flow.channels)
    assert not cap.issues
    ev = mbo_events(cap, tick_size=TICK_SIZE)
    assert ev.exponent == -9
    assert ev.ticks.tolist() == [TICK] * len(SIDS)
    assert ev.entries == sum(op.kind != "reset" for op in ops)
    assert dict(ev.skipped) == flow.noise  # implied entries and bad references, nothing else
    rows = ev.events
    got = list(
        zip(
            ev.security_ids[ev.book].tolist(),
            rows["order_id"].tolist(),
            rows["px"].tolist(),
            rows["qty"].tolist(),
            rows["side"].tolist(),
            rows["action"].tolist(),
            strict=True,
        )
    )
    assert got == expected_events(ops)
    # each event's time is its message's TransactTime, and the message order is kept
    want_ts = [
        t
        for t, m in zip(flow.times, flow.messages, strict=True)
        for op in m
        for _ in range(1 + op.lose)
    ]
    assert rows["ts"].tolist() == want_ts
    assert (np.diff(ev.event_index) >= 0).all()
    assert set(ev.template_id.tolist()) == {46, 47}
    # priorities as sent; the raw prices at exponent -9
    want_prio = [op.prio if op.kind != "reset" else -1 for op in ops for _ in range(1 + op.lose)]
    assert ev.priority.tolist() == want_prio
    assert (ev.mantissa == rows["px"] * TICK).all()
    # without a tick size, each instrument's tick is the gcd of its prices (here 0.25 too)
    assert mbo_events(cap).events.tolist() == rows.tolist()


@pytest.mark.parametrize("seed", [3, 4])
def test_the_books_equal_a_dict_of_orders_after_every_event(schema: Schema, seed: int) -> None:
    ops = order_flow(800, seed)
    kinds = {op.kind for op in ops}
    assert kinds == {"new", "change", "delete", "reset"}
    assert any(op.lose and op.px != 0 for op in ops)
    flow = flow_packets(schema, ops, seed)
    books = build_l3_books(
        decode_payloads(flow.payloads, schema, channels=flow.channels), tick_size=TICK_SIZE
    )
    assert books.unknown == 0
    assert books.duplicates == 0
    ref = DictBook()
    touch = books.touch
    at = 0
    for op in ops:
        ref.apply(op)
        at += 1 + op.lose
        assert tuple(touch[at - 1].tolist()) == ref.touch(op.sid), f"after event {at - 1}"
    assert at == touch.shape[0]
    for sid in SIDS:
        book = books.books[sid]
        assert [tuple(r) for r in book.resting().tolist()] == ref.resting(sid)
        for (side, px), ids in ref.fifo(sid).items():
            assert book.fifo_ids(side, px) == ids  # the queue is MDOrderPriority's order
        assert not book.is_crossed()
        assert book.n_orders == len(ref.resting(sid))


def test_a_change_keeps_or_loses_its_place_as_its_priority_says(schema: Schema) -> None:
    sid = SIDS[0]
    ops = [
        Op("new", sid, 1, BUY, 400, 10, 1),
        Op("new", sid, 2, BUY, 400, 10, 2),
        Op("new", sid, 3, BUY, 400, 10, 3),
        Op("change", sid, 1, BUY, 400, 4, 1),  # smaller: stays first
        Op("change", sid, 2, BUY, 400, 30, 4, lose=True),  # bigger: behind 3
        Op("new", sid, 4, SELL, 410, 5, 5),
        Op("change", sid, 3, BUY, 401, 10, 6, lose=True),  # new price: alone at 401
        Op("change", sid, 4, SELL, 410, 5, 7, lose=True),  # same size, new priority
    ]
    flow = flow_packets(schema, ops, 0)
    books = build_l3_books(decode_payloads(flow.payloads, schema, channels=flow.channels))
    book = books.books[sid]
    assert book.fifo_ids(BUY, 400) == [1, 2]
    assert book.fifo_ids(BUY, 401) == [3]
    assert books.events.ticks[0] == TICK  # the prices' gcd: 400 and 401 ticks
    assert book.best_bid() == (401, 10)
    assert book.depth_at(BUY, 400) == (34, 2)
    assert book.best_ask() == (410, 5)
    acts = books.events.events["action"].tolist()
    assert acts == [L3_ADD] * 3 + [
        L3_MODIFY,
        L3_CANCEL,
        L3_ADD,
        L3_ADD,
        L3_CANCEL,
        L3_ADD,
        L3_CANCEL,
        L3_ADD,
    ]


def test_off_tick_prices_and_bad_tick_sizes_are_named(schema: Schema) -> None:
    ops = order_flow(40, 9)
    flow = flow_packets(schema, ops, 9)
    cap = decode_payloads(flow.payloads, schema, channels=flow.channels)
    with pytest.raises(
        MboError,
        match=r"SecurityID \d+ OrderID \d+: price \d+e-9 is not a "
        r"multiple of the tick size 0.3",
    ):
        mbo_events(cap, tick_size="0.3")
    with pytest.raises(
        MboError,
        match=r"tick size 1e-10: must be a positive multiple of the "
        r"price unit 1e-9",
    ):
        mbo_events(cap, tick_size="1e-10")
    with pytest.raises(MboError, match="tick size 'quarter': not a decimal number"):
        mbo_events(cap, tick_size="quarter")


def test_a_capture_without_orders_gives_no_events() -> None:
    if not SCHEMAS[8].is_file():
        pytest.skip("the shared CME captures are absent")
    cap = decode_capture(DATA / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap", SCHEMAS[8])
    ev = mbo_events(cap)
    assert ev.events.shape[0] == 0
    assert ev.security_ids.size == 0
    assert build_l3_books(cap).books == {}


def test_the_real_order_book_entry_is_an_add() -> None:
    if not SCHEMAS[9].is_file():
        pytest.skip("the shared CME captures are absent")
    cap = decode_capture(
        DATA / "pcap/Mdp3.Sbe.v1.9__MdIncrementalRefreshOrderBook.47.pcap", SCHEMAS[9]
    )
    books = build_l3_books(cap, tick_size="0.25")
    ev = books.events
    t = cap.template(47).rows["TransactTime"][0]
    # OrderID 76662054355 offers 4 at 12068.0 (mantissa 12068000000000e-9), priority 641463012
    assert ev.events.tolist() == [(int(t), 76662054355, 48272, 4, SELL, L3_ADD)]
    assert ev.priority.tolist() == [641463012]
    assert ev.security_ids.tolist() == [532259]
    book = books.books[532259]
    assert book.best_ask() == (48272, 4)
    assert book.best_bid() is None


def test_the_real_combined_book_order_entries_take_their_referenced_price() -> None:
    if not SCHEMAS[9].is_file():
        pytest.skip("the shared CME captures are absent")
    cap = decode_capture(DATA / "pcap/Mdp3.Sbe.v1.9__MdIncrementalRefreshBook.46.pcap", SCHEMAS[9])
    t = cap.template(46)
    levels = t.groups["NoMDEntries"].rows
    orders = t.groups["NoOrderIDEntries"].rows
    want = []
    want_prio = []
    for o in orders.tolist():  # by hand: (OrderID, prio, qty, ReferenceID, action, _msg, _)
        oid, prio, qty, ref, action, msg = o[:6]
        lv = levels[levels["_msg"] == msg][ref - 1]
        side = BUY if lv["MDEntryType"] == b"0" else SELL
        px = int(lv["MDEntryPx.mantissa"]) // 10**7
        l3 = {0: L3_ADD, 1: L3_MODIFY, 2: L3_CANCEL}[action]
        want.append((int(lv["SecurityID"]), oid, px, 0 if l3 == L3_CANCEL else qty, side, l3))
        want_prio.append(prio)
    assert len(want) == 16
    ev = mbo_events(cap, tick_size="0.01")
    rows = ev.events
    got = list(
        zip(
            ev.security_ids[ev.book].tolist(),
            rows["order_id"].tolist(),
            rows["px"].tolist(),
            rows["qty"].tolist(),
            rows["side"].tolist(),
            rows["action"].tolist(),
            strict=True,
        )
    )
    assert got == want
    assert ev.priority.tolist() == want_prio
    books = build_l3_books(cap, events=ev)
    # the capture starts mid-session: changes and deletes name orders it never added
    assert books.unknown == sum(a != L3_ADD for *_x, a in want)
    assert sum(b.n_orders for b in books.books.values()) == sum(a == L3_ADD for *_x, a in want)


def test_entries_that_are_not_order_events_are_left_out_and_counted(schema: Schema) -> None:
    sid = SIDS[1]
    good = {"OrderID": 5, "MDOrderPriority": 1, "MDEntryPx.mantissa": 400 * TICK,
            "MDDisplayQty": 3, "SecurityID": sid, "MDUpdateAction": 0,
            "MDEntryType": b"0"}  # fmt: skip
    bad = [
        {**good, "OrderID": 6, "MDEntryType": b"F"},  # implied offer
        {**good, "OrderID": 7, "MDUpdateAction": 5},  # Overlay: an MBP action
        {k: v for k, v in good.items() if k != "OrderID"},  # OrderID null
        {**good, "OrderID": 8, "MDDisplayQty": 0},  # a New of nothing
        {k: v for k, v in good.items() if k != "MDEntryPx.mantissa"} | {"OrderID": 9},  # no px
        {**good, "OrderID": 5, "MDUpdateAction": 2, "MDDisplayQty": 0},  # the Delete of 5: kept
    ]
    msg = encode_message(
        schema, 47, {"TransactTime": 1, "MatchEventIndicator": 0}, {"NoMDEntries": [good, *bad]}
    )
    ev = mbo_events(decode_payloads([mdp3_packet(1, 1, [msg])], schema))
    assert dict(ev.skipped) == {
        "entry type other than Bid or Offer": 1,
        "action other than New, Change, Delete": 1,
        "no OrderID": 1,
        "New without a quantity": 1,
        "New or Change without a price": 1,
    }
    assert ev.entries == 2
    assert ev.events[["order_id", "qty", "side", "action"]].tolist() == [
        (5, 3, BUY, L3_ADD),
        (5, 0, BUY, L3_CANCEL),
    ]


def test_a_book_wider_than_max_levels_is_refused_by_name(schema: Schema) -> None:
    flow = flow_packets(schema, order_flow(60, 5), 5)
    cap = decode_payloads(flow.payloads, schema, channels=flow.channels)
    with pytest.raises(
        MboError,
        match=r"SecurityID \d+: prices span \d+ ticks .* more than "
        r"max_levels 8; check the tick size",
    ):
        build_l3_books(cap, max_levels=8)
    assert len(build_l3_books(cap, max_levels=30).books) == len(SIDS)


def test_v8_order_book_43_prices_at_exponent_minus_7_join_those_of_47() -> None:
    """Schema v9 has both 43 (PRICENULL, 1e-7) and 47 (PRICENULL9): one price scale, -9."""
    if not SCHEMAS[9].is_file():
        pytest.skip(f"{SCHEMAS[9]} is absent")
    schema = load_schema(SCHEMAS[9])
    sid = SIDS[2]

    def entry(oid: int, px_units: int, action: int, qty: int) -> dict[str, object]:
        return {"OrderID": oid, "MDOrderPriority": oid, "MDEntryPx.mantissa": px_units,
                "MDDisplayQty": qty, "SecurityID": sid, "MDUpdateAction": action,
                "MDEntryType": b"1"}  # fmt: skip

    root = {"TransactTime": 5, "MatchEventIndicator": 0}
    m43 = encode_message(schema, 43, root, {"NoMDEntries": [entry(1, 41_000_000, 0, 2)]})  # 4.1
    later = [entry(2, 4_125_000_000, 0, 3), entry(1, 4_100_000_000, 1, 1)]  # 4.125, 4.1
    m47 = encode_message(schema, 47, root, {"NoMDEntries": later})
    cap = decode_payloads([mdp3_packet(1, 1, [m43, m47])], schema)
    ev = mbo_events(cap, tick_size="0.025")
    assert ev.exponent == -9
    assert ev.mantissa.tolist() == [4_100_000_000, 4_125_000_000, 4_100_000_000]
    assert ev.events[["order_id", "px", "qty", "action"]].tolist() == [
        (1, 164, 2, L3_ADD), (2, 165, 3, L3_ADD), (1, 164, 1, L3_MODIFY)
    ]  # fmt: skip
    assert ev.template_id.tolist() == [43, 47, 47]
    book = build_l3_books(cap, events=ev).books[sid]
    assert book.best_ask() == (164, 1)
    assert book.fifo_ids(SELL, 165) == [2]
