# SPDX-License-Identifier: MIT
"""Known order flow, its MDP 3.0 packets, and the plain-dict book it must give (tests only).

:func:`order_flow` makes random order events for a few SecurityIDs (adds, size decreases that
keep their place, size increases and price changes that lose it, deletes, book resets), with
CME's priorities (a global counter: a new or re-prioritised order goes behind every other).
:class:`DictBook` applies them to a dict of orders, the reference. :func:`flow_packets` encodes
them with the schema, as MDIncrementalRefreshOrderBook (47) entries or as the order entries of
MDIncrementalRefreshBook (46) pointing at its price entries, several messages per packet, with
B-feed copies of some packets, and a few entries that are not orders (implied entries, a bad
ReferenceID) that must be left out.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from engine.feeds.sbe.schema import Schema
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_CLEAR, L3_MODIFY, SELL
from tests.unit.engine.feeds.sbe.encode import encode_message, mdp3_packet

SIDS = (174969, 23456, 987654)
TICK = 250_000_000  # 0.25 in PRICE9 mantissa units
TICK_SIZE = "0.25"
T0 = 1_700_000_000_000_000_000


@dataclass(frozen=True)
class Op:
    """One order event of the flow (``kind``: new, change, delete or reset)."""

    kind: str
    sid: int
    oid: int = 0
    side: int = 0
    px: int = 0  # ticks
    qty: int = 0
    prio: int = 0
    lose: bool = False  # a change that loses priority (the book: cancel, then add)


class DictBook:
    """The reference: order id -> [sid, side, px, qty, prio]."""

    def __init__(self) -> None:
        self.orders: dict[int, list[int]] = {}

    def apply(self, op: Op) -> None:
        """Apply one event."""
        if op.kind == "reset":
            self.orders = {k: v for k, v in self.orders.items() if v[0] != op.sid}
        elif op.kind == "delete":
            del self.orders[op.oid]
        else:
            self.orders[op.oid] = [op.sid, op.side, op.px, op.qty, op.prio]

    def resting(self, sid: int) -> list[tuple[int, int, int, int]]:
        """``(order_id, side, px, qty)`` of one instrument, by id."""
        return sorted((k, v[1], v[2], v[3]) for k, v in self.orders.items() if v[0] == sid)

    def fifo(self, sid: int) -> dict[tuple[int, int], list[int]]:
        """Each level's order ids in priority order."""
        out: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for k, (s, side, px, _q, prio) in self.orders.items():
            if s == sid:
                out.setdefault((side, px), []).append((prio, k))
        return {lv: [k for _p, k in sorted(v)] for lv, v in out.items()}

    def touch(self, sid: int) -> tuple[int, int, int, int]:
        """Best bid px, its qty, best ask px, its qty (0, 0 for an empty side)."""
        bids: dict[int, int] = {}
        asks: dict[int, int] = {}
        for s, side, px, qty, _p in self.orders.values():
            if s == sid:
                lv = bids if side == BUY else asks
                lv[px] = lv.get(px, 0) + qty
        b = max(bids) if bids else None
        a = min(asks) if asks else None
        return (b or 0, bids[b] if b is not None else 0, a or 0, asks[a] if a is not None else 0)


def order_flow(n: int, seed: int) -> list[Op]:
    """Return ``n`` random order events that are valid against :class:`DictBook`."""
    rng = random.Random(seed)
    live: dict[int, Op] = {}
    ops: list[Op] = []
    next_oid, prio = 7_000_000_000, 1
    while len(ops) < n:
        r = rng.random()
        if not live or r < 0.38:
            sid, side = rng.choice(SIDS), rng.choice((BUY, SELL))
            px = rng.randint(400, 409) if side == BUY else rng.randint(410, 419)
            op = Op("new", sid, next_oid, side, px, rng.randint(1, 50), prio)
            next_oid += rng.randint(1, 3)
            prio += 1
        elif r < 0.97:
            o = live[rng.choice(list(live))]
            if r < 0.55 and o.qty > 1:  # smaller: keeps its place
                op = Op("change", o.sid, o.oid, o.side, o.px, rng.randint(1, o.qty - 1), o.prio)
            elif r < 0.65:  # bigger: to the back
                op = Op(
                    "change", o.sid, o.oid, o.side, o.px, o.qty + rng.randint(1, 9), prio, lose=True
                )
                prio += 1
            elif r < 0.78:  # another price: to the back there
                px = o.px + rng.choice((-2, -1, 1, 2))
                op = Op("change", o.sid, o.oid, o.side, px, o.qty, prio, lose=True)
                prio += 1
            else:
                op = Op("delete", o.sid, o.oid, o.side, o.px, o.qty, o.prio)
        else:
            op = Op("reset", rng.choice(SIDS))
        ops.append(op)
        if op.kind == "reset":
            live = {k: v for k, v in live.items() if v.sid != op.sid}
        elif op.kind == "delete":
            del live[op.oid]
        else:
            live[op.oid] = op
    return ops


def expected_events(ops: list[Op]) -> list[tuple[int, int, int, int, int, int]]:
    """``(sid, order_id, px, qty, side, action)`` of the L3 rows the flow must become."""
    out = []
    for op in ops:
        if op.kind == "reset":
            out.append((op.sid, 0, 0, 0, 0, L3_CLEAR))
        elif op.kind == "new":
            out.append((op.sid, op.oid, op.px, op.qty, op.side, L3_ADD))
        elif op.kind == "delete":
            out.append((op.sid, op.oid, op.px, 0, op.side, L3_CANCEL))
        elif op.lose:
            out.append((op.sid, op.oid, op.px, 0, op.side, L3_CANCEL))
            out.append((op.sid, op.oid, op.px, op.qty, op.side, L3_ADD))
        else:
            out.append((op.sid, op.oid, op.px, op.qty, op.side, L3_MODIFY))
    return out


_ACTION = {"new": 0, "change": 1, "delete": 2}


def _side_char(side: int) -> bytes:
    return b"0" if side == BUY else b"1"


@dataclass
class Flow:
    """What :func:`flow_packets` made."""

    payloads: list[bytes]
    channels: list[str]
    messages: list[list[Op]]  # the order events of each message, in feed order
    times: list[int]  # each message's TransactTime
    noise: dict[str, int]  # entries that are not order events, by the reason they are left out


def flow_packets(schema: Schema, ops: list[Op], seed: int) -> Flow:
    """Encode ``ops`` as MDP 3.0 packets (A feed, and B copies of some of them)."""
    rng = random.Random(seed)
    msgs: list[list[Op]] = []
    i = 0
    while i < len(ops):  # a reset starts its message (46: price entries come first)
        j = i + 1
        while j < len(ops) and j - i < rng.randint(1, 5) and ops[j].kind != "reset":
            j += 1
        msgs.append(ops[i:j])
        i = j
    noise = {
        "entry type other than Bid or Offer": 0,
        "ReferenceID names no entry of its message": 0,
    }
    encoded: list[bytes] = []
    times: list[int] = []
    for m, group in enumerate(msgs):
        ts = T0 + 1000 * m
        times.append(ts)
        root = {"TransactTime": ts, "MatchEventIndicator": 0x80}
        if group[0].kind == "reset" or rng.random() < 0.5:
            levels: list[dict[str, object]] = []
            refs: dict[tuple[int, int, int], int] = {}
            orders: list[dict[str, object]] = []
            for op in group:
                if op.kind == "reset":
                    reset = {"SecurityID": op.sid, "MDEntryType": b"J", "MDUpdateAction": 0}
                    levels.append(reset)
                    continue
                key = (op.sid, op.side, op.px)
                if key not in refs:
                    levels.append({"MDEntryPx.mantissa": op.px * TICK, "MDEntrySize": 99,
                                   "SecurityID": op.sid, "RptSeq": m, "NumberOfOrders": 1,
                                   "MDPriceLevel": 1, "MDUpdateAction": 1,
                                   "MDEntryType": _side_char(op.side)})  # fmt: skip
                    refs[key] = len(levels)
                orders.append({"OrderID": op.oid, "MDOrderPriority": op.prio,
                               "MDDisplayQty": op.qty, "ReferenceID": refs[key],
                               "OrderUpdateAction": _ACTION[op.kind]})  # fmt: skip
            if rng.random() < 0.2:  # an order entry naming no price entry
                orders.append(
                    {
                        "OrderID": 1,
                        "MDOrderPriority": 1,
                        "MDDisplayQty": 1,
                        "ReferenceID": len(levels) + 1,
                        "OrderUpdateAction": 0,
                    }
                )
                noise["ReferenceID names no entry of its message"] += 1
            body = {"NoMDEntries": levels, "NoOrderIDEntries": orders}
            encoded.append(encode_message(schema, 46, root, body))
        else:
            entries: list[dict[str, object]] = [
                {"OrderID": op.oid, "MDOrderPriority": op.prio, "MDEntryPx.mantissa": op.px * TICK,
                 "MDDisplayQty": op.qty, "SecurityID": op.sid, "MDUpdateAction": _ACTION[op.kind],
                 "MDEntryType": _side_char(op.side)}
                for op in group
            ]  # fmt: skip
            if rng.random() < 0.2:  # an implied entry: not an order
                entries.insert(rng.randint(0, len(entries)), {
                    "OrderID": 2, "MDOrderPriority": 2, "MDEntryPx.mantissa": TICK,
                    "MDDisplayQty": 5, "SecurityID": SIDS[0], "MDUpdateAction": 0,
                    "MDEntryType": b"E"})  # fmt: skip
                noise["entry type other than Bid or Offer"] += 1
            encoded.append(encode_message(schema, 47, root, {"NoMDEntries": entries}))
    payloads: list[bytes] = []
    channels: list[str] = []
    k, seq = 0, 1
    while k < len(encoded):
        n = rng.randint(1, 3)
        pkt = mdp3_packet(seq, T0 + seq, encoded[k : k + n])
        first, second = ("B", "A") if rng.random() < 0.2 else ("A", "B")
        payloads.append(pkt)
        channels.append(first)
        if rng.random() < 0.5:  # the other feed's copy (arrives later: left out)
            payloads.append(pkt)
            channels.append(second)
        k += n
        seq += 1
    return Flow(payloads, channels, msgs, times, {k: v for k, v in noise.items() if v})
