# SPDX-License-Identifier: MIT
"""FixVenue reads an ExecutionReport <8> into the report the order manager gets (issue 25).

The adapter reads the fields through the conversions' memories, a TransactTime remembered from
the report before and a positional constructor. The reference here is the plain reading it
replaced: each value through ``FixNumbers``' methods and the ``fix_to_*`` functions, into
``ExecutionReport(**fields)``, in the same order (so a report with two bad values names the same
tag). Both read the same message; the report, or the tag of the error, must be the same.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.application import IncorrectTagValue, SessionID
from engine.fix.codec import decode_one, finish, parse_timestamp
from engine.fix.message import FixMessage
from engine.instruments import Instrument
from engine.oms.venue import CancelReject, ExecutionReport, RejectReason, Request
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.codes import (
    FIX_TO_SIDE,
    FixNumbers,
    FixValueError,
    fix_to_exec_type,
    fix_to_ord_status,
)

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))
SID = SessionID("FIX.4.4", "C", "S")


class Sink:
    """Keeps every report it is given."""

    def __init__(self) -> None:
        self.reports: list[ExecutionReport] = []

    def on_execution_report(self, rep: ExecutionReport) -> object:
        self.reports.append(rep)
        return None

    def get(self, client_order_id: str) -> None:
        return None

    def on_cancel_reject(self, rej: CancelReject) -> object:
        return None

    def on_request_rejected(
        self,
        request: Request | None,
        client_order_id: str,
        text: str,
        *,
        reason: RejectReason,
        detail: str = "",
    ) -> object:
        return None


def reference(m: FixMessage, nums: FixNumbers, ts_recv: int) -> ExecutionReport:
    """The report as read field by field (the adapter's reading before issue 25)."""
    get = m.get
    last_qty, last_px, order_qty, px = get(32), get(31), get(38), get(44)
    return ExecutionReport(
        client_order_id=(get(11) or b"").decode("latin-1"),
        orig_client_order_id=(get(41) or b"").decode("latin-1"),
        venue_order_id=(get(37) or b"").decode("latin-1"),
        exec_id=(get(17) or b"").decode("latin-1"),
        exec_type=fix_to_exec_type(get(150)),
        ord_status=fix_to_ord_status(get(39)),
        side=FIX_TO_SIDE.get(get(54) or b""),
        leaves_qty_lots=nums.qty_lots(151, get(151)),
        cum_qty_lots=nums.qty_lots(14, get(14)),
        last_qty_lots=nums.qty_lots(32, last_qty) if last_qty else 0,
        last_px_ticks=nums.px_ticks(31, last_px) if last_qty and last_px else 0,
        order_qty_lots=nums.qty_lots(38, order_qty) if order_qty else 0,
        px_ticks=nums.px_ticks(44, px) if px else 0,
        text=(get(58) or b"").decode("latin-1"),
        poss_resend=get(97) == b"Y",
        poss_dup=get(43) == b"Y",
        ts_event=parse_timestamp(get(60) or b"") or 0,
        ts_recv=m.ts_recv or ts_recv,
    )


def message(fields: list[tuple[int, bytes]]) -> FixMessage:
    body = b"35=8\x0134=2\x0149=S\x0152=20261205-10:00:00.000\x0156=C\x01"
    body += b"".join(b"%d=%s\x01" % (tag, value) for tag, value in fields)
    msg = decode_one(finish(b"FIX.4.4", body))
    assert msg is not None
    return msg


QTY = st.sampled_from([b"0", b"1", b"3", b"250", b"1.5", b"x", b"-2"])
PX = st.sampled_from([b"6000.25", b"6000", b"5999.75", b"0.25", b"6000.1", b"abc"])
# Optional fields: absent (None) or a value.
FIELDS = st.fixed_dictionaries(
    {
        55: st.sampled_from([b"ESZ6", b"ESZ6", b"ESZ6", b"NQZ6"]),
        11: st.sampled_from([b"F1-1", b"F1-2", b"\xe9t\xe9"]),
        41: st.none() | st.sampled_from([b"F1-0", b"F1-1"]),
        37: st.none() | st.just(b"V9"),
        17: st.none() | st.sampled_from([b"E1", b"E2"]),
        150: st.sampled_from([b"0", b"F", b"4", b"5", b"8", b"I", b"1", b"Z"]),
        39: st.sampled_from([b"0", b"1", b"2", b"4", b"8", b"A", b"Q"]),
        54: st.none() | st.sampled_from([b"1", b"2", b"7"]),
        151: st.none() | QTY,
        14: st.none() | QTY,
        32: st.none() | QTY,
        31: st.none() | PX,
        38: st.none() | QTY,
        44: st.none() | PX,
        58: st.none() | st.just(b"some text"),
        97: st.none() | st.sampled_from([b"Y", b"N"]),
        43: st.none() | st.sampled_from([b"Y", b"N"]),
        60: st.none()
        | st.sampled_from(
            [b"20261205-10:00:00.123", b"20261205-10:00:00.124", b"20261205-10:00:01", b"bad"]
        ),
    }
)


@settings(max_examples=400, deadline=None)
@given(st.lists(FIELDS, min_size=1, max_size=6))
def test_report_is_the_reference_reading(batch: list[dict[int, bytes | None]]) -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    sink = Sink()
    venue.route(ES, sink)
    nums = FixNumbers(ES)  # the reference's own conversions (fresh memories)
    for values in batch:  # several in a row: the remembered TransactTime and texts are reused
        m = message(sorted((t, v) for t, v in values.items() if v is not None))
        try:
            want: ExecutionReport | int = reference(m, nums, clock.now_ns())
        except FixValueError as e:
            want = e.tag
        if values[55] != b"ESZ6":
            want = 55  # not routed here
        before = len(sink.reports)
        try:
            venue.from_app(m, SID)
            got: ExecutionReport | int = sink.reports[-1]
            assert len(sink.reports) == before + 1
        except IncorrectTagValue as e:
            got = e.tag
            assert len(sink.reports) == before
        assert got == want
        if isinstance(got, ExecutionReport):
            assert type(got) is ExecutionReport
            with pytest.raises(AttributeError):
                got.cum_qty_lots = 5  # type: ignore[misc]  # still frozen


def test_report_of_a_symbol_without_latin1_bytes_is_refused_naming_the_symbol() -> None:
    # Routed, but no report can name it (Symbol <55> is read as Latin-1): refused as before.
    venue = FixVenue(TestClock())
    sink = Sink()
    venue.route(Instrument(symbol="Ω1", tick_size=Decimal(1)), sink)
    m = message([(11, b"A"), (14, b"0"), (39, b"0"), (55, "Ω1".encode()), (150, b"0"), (151, b"1")])
    with pytest.raises(IncorrectTagValue) as e:
        venue.from_app(m, SID)
    assert e.value.tag == 55
    assert sink.reports == []


def test_rerouting_a_symbol_sends_its_reports_to_the_new_sink() -> None:
    venue = FixVenue(TestClock())
    first, second = Sink(), Sink()
    venue.route(ES, first)
    venue.route(ES, second)
    fields = [(11, b"A"), (14, b"0"), (39, b"0"), (55, b"ESZ6"), (150, b"0"), (151, b"1")]
    venue.from_app(message(fields), SID)
    assert first.reports == []
    assert [r.client_order_id for r in second.reports] == ["A"]
