# SPDX-License-Identifier: MIT
"""How the simulator reads order requests (NewOrderSingle, cancel, replace, status): each
missing or bad field gets its answer, the first problem in the order the fields are read.

Without a dictionary (validation off) the simulator's own checks are what answers: a missing
field is a BusinessMessageReject 380=5 naming it, a bad one a Reject 373=5 with RefTagID 371.
The same requests answer alike read one by one (messages without tag codes) and all in one
read (messages with them).
"""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from engine.clock import TestClock
from engine.fix.codec import FixDecoder
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.instruments import Instrument
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.fix_app import SimFixApplication
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))
TS = b"20240102-03:04:05.678"

_ids = itertools.count(1)
NOS = {11: b"A1", 54: b"1", 40: b"2", 59: b"0", 55: b"ESZ6", 38: b"2", 44: b"5750", 60: TS}


def _nos(**change: bytes | None) -> tuple[bytes, dict[int, bytes | None]]:
    # A ClOrdID of its own (A1, A2, ...) unless the case says otherwise.
    fields: dict[int, bytes | None] = dict(NOS)
    fields[11] = b"A%d" % next(_ids)
    fields.update({int(k[1:]): v for k, v in change.items()})
    return b"D", fields


def _req(mt: bytes, **fields: bytes | None) -> tuple[bytes, dict[int, bytes | None]]:
    return mt, {int(k[1:]): v for k, v in fields.items()}


def _missing(tag: int) -> tuple[bytes, dict[int, bytes]]:
    return b"j", {380: b"5", 58: b"Conditionally Required Field Missing (%d)" % tag}


def _bad(tag: int) -> tuple[bytes, dict[int, bytes]]:
    return b"3", {373: b"5", 371: b"%d" % tag}


def _report(exec_type: bytes) -> tuple[bytes, dict[int, bytes]]:
    return b"8", {150: exec_type}


#: An answer: its MsgType and fields it holds.
Answer = tuple[bytes, dict[int, bytes]]
#: (request, its answer or answers).
CASES: list[tuple[tuple[bytes, dict[int, bytes | None]], Answer | list[Answer]]] = [
    (_nos(), _report(b"0")),
    (_nos(t11=None, t55=None), _missing(11)),
    (_nos(t54=None, t55=None), _missing(54)),
    (_nos(t54=b"9", t55=None, t40=None), _bad(54)),
    (_nos(t40=None, t59=b"Z"), _missing(40)),
    (_nos(t40=b"Z", t59=b"Z"), _bad(40)),
    (_nos(t59=b"Z", t55=None), _bad(59)),
    (_nos(t59=None), _report(b"0")),  # Day when absent
    (_nos(t55=None, t38=None), _missing(55)),
    (_nos(t55=b"ZZZ", t38=None, t44=None), _report(b"8")),  # unknown symbol: rejected
    (_nos(t38=None, t44=None), _missing(38)),
    (_nos(t44=None), _missing(44)),
    (_nos(t40=b"1", t44=None), [_report(b"0"), _report(b"C")]),  # no one to trade with
    (
        _nos(t44=b"5750.1"),
        (b"8", {150: b"8", 58: b"price 5750.1 is not a multiple of the tick size 0.25 of ESZ6"}),
    ),
    (_nos(t44=b"abc"), _bad(44)),
    (_nos(t38=b"x"), _bad(38)),
    (_req(b"F", t11=None, t41=None, t55=b"ESZ6", t54=b"1"), _missing(11)),
    (_req(b"F", t11=b"X1", t55=b"ESZ6", t54=b"1"), _missing(41)),
    (
        _req(b"F", t11=b"X2", t41=b"nope", t55=b"ESZ6", t54=b"1", t60=TS),
        (b"9", {434: b"1", 41: b"nope"}),
    ),
    (_req(b"G", t11=None, t41=b"A1", t38=b"1", t54=b"1", t40=b"2", t60=TS), _missing(55)),
    (_req(b"G", t41=b"A1", t55=b"ESZ6", t38=b"1", t54=b"1", t40=b"2", t60=TS), _missing(11)),
    (_req(b"G", t11=b"R1", t55=b"ESZ6", t38=b"1", t54=b"1", t40=b"2", t60=TS), _missing(41)),
    (
        _req(b"G", t11=b"R2", t41=b"A1", t55=b"ZZZ", t54=b"1", t40=b"2", t60=TS),
        (b"9", {434: b"2", 58: b"invalid replace: unknown symbol 'ZZZ'"}),
    ),
    (
        _req(b"G", t11=b"R3", t41=b"A1", t55=b"ESZ6", t54=b"1", t40=b"2", t60=TS),
        _missing(38),
    ),
    (
        _req(b"G", t11=b"R4", t41=b"A1", t55=b"ESZ6", t38=b"3", t44=b"5749", t54=b"1", t60=TS),
        _report(b"5"),
    ),
    (_req(b"H", t55=b"ESZ6", t54=b"1"), _missing(11)),
    (
        _req(b"H", t11=b"R4", t54=b"1"),
        (b"8", {11: b"R4", 150: b"I", 38: b"3"}),
    ),  # known: 38=3 below
    (_req(b"H", t11=b"Q1", t54=b"1"), _missing(55)),
    (_req(b"H", t11=b"Q2", t55=b"ESZ6"), _bad(54)),
    (_req(b"H", t11=b"Q3", t55=b"ESZ6", t54=b"2"), _report(b"I")),
    (_req(b"R", t131=b"Q"), (b"j", {380: b"3", 372: b"R"})),
]


def _requests(client: FixSession) -> bytes:
    for mt, fields in (req for req, _ in CASES):
        body = [(t, v) for t, v in fields.items() if v is not None]
        client.send(OutMessage(mt, body))
    # Heartbeats after them (no answer): more than 32 frames in one read, so that the decoder
    # gives its messages tag codes.
    for _ in range(10):
        client.send(OutMessage(b"0"))
    return b"".join(client.drain())


def _answers(one_by_one: bool) -> list[FixMessage]:
    clock = TestClock()
    exchange = SimExchange(
        [SimInstrument(instrument=ES, start_px_ticks=24_000, flow=FlowConfig(events_per_second=0))]
    )
    sim, client, _ = fix_pair(SimFixApplication(exchange, clock), clock, validate=False)
    data = _requests(client)
    decoder = FixDecoder()
    out: list[bytes] = []
    msgs = decoder.feed(data)
    assert len(msgs) == len(CASES) + 10
    if one_by_one:
        for m in msgs:
            (alone,) = FixDecoder().feed(m.raw)  # a read of one: no tag codes
            assert alone._b.codes is None
            out += sim.on_message(alone, clock.now_ns())
    else:
        assert msgs[0]._b.codes is not None
        out += sim.on_messages(msgs, clock.now_ns())
    sim.close()
    client.close()
    return FixDecoder().feed(b"".join(out))


@pytest.mark.parametrize("one_by_one", [True, False])
def test_each_request_gets_the_answer_its_first_problem_calls_for(one_by_one: bool) -> None:
    answers = iter(_answers(one_by_one))
    for request, expected in CASES:
        for mt, holds in expected if isinstance(expected, list) else [expected]:
            answer = next(answers)
            assert answer.msg_type == mt, (request, answer)
            assert {t: answer.get(t) for t in holds} == holds, (request, answer)
    assert next(answers, None) is None


def test_one_read_and_reads_of_one_answer_alike() -> None:
    alone = [a.pairs for a in _answers(True)]
    together = [a.pairs for a in _answers(False)]
    assert alone == together
