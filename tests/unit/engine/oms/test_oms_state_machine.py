# SPDX-License-Identifier: MIT
"""Model-based test: random submit / cancel / replace / fill / reject sequences against a
reference venue that answers as a FIX venue would; the order manager must agree with it."""

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.enums import ExecType, OrdStatus, Side
from engine.oms.order import Order
from engine.oms.venue import CancelReject, ExecutionReport, RejectReason, Request
from tests.factories import make_oms


@dataclass
class VenueOrder:
    """The venue's own view of one order."""

    order: Order
    acked: bool = False
    alive: bool = True
    qty: int = 0
    cum: int = 0
    request: tuple[str, str, int, int] | None = None  # (kind, ClOrdID, qty, px)

    def status(self) -> OrdStatus:
        if not self.alive:
            return OrdStatus.FILLED if self.cum == self.qty else OrdStatus.CANCELED
        return OrdStatus.PARTIALLY_FILLED if self.cum else OrdStatus.NEW


class OmsAgainstVenue(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.rig = make_oms()
        self.venue: list[VenueOrder] = []
        self.exec_n = 0
        self.position = 0

    def _er(self, vo: VenueOrder, et: ExecType, status: OrdStatus, **kw: object) -> None:
        self.exec_n += 1
        clordid = kw.pop("clordid", vo.order.client_order_id)
        rep = ExecutionReport(
            client_order_id=str(clordid),
            venue_order_id=f"V{vo.order.order_id}",
            exec_id=f"E{self.exec_n}",
            exec_type=et,
            ord_status=status,
            cum_qty_lots=vo.cum,
            leaves_qty_lots=(vo.qty - vo.cum) if vo.alive else 0,
            **kw,  # type: ignore[arg-type]
        )
        self.rig.oms.on_execution_report(rep)

    def _pick(self, data: st.DataObject, pred: object) -> VenueOrder | None:
        assert callable(pred)
        live = [v for v in self.venue if pred(v)]
        return data.draw(st.sampled_from(live)) if live else None

    @rule(
        side=st.sampled_from([Side.BUY, Side.SELL]), qty=st.integers(1, 20), px=st.integers(90, 110)
    )
    def submit(self, side: Side, qty: int, px: int) -> None:
        order = self.rig.oms.send(strategy_id=1, side=side, qty_lots=qty, px_ticks=px)
        assert order.status is OrdStatus.PENDING_NEW
        self.venue.append(VenueOrder(order=order, qty=qty))

    @rule(data=st.data(), reject=st.booleans())
    def ack_or_reject(self, data: st.DataObject, reject: bool) -> None:
        vo = self._pick(data, lambda v: not v.acked and v.alive)
        if vo is None:
            return
        if reject:
            vo.alive, vo.qty = False, vo.cum
            self._er(vo, ExecType.REJECTED, OrdStatus.REJECTED, text="venue says no")
            assert vo.order.status is OrdStatus.REJECTED
        else:
            vo.acked = True
            self._er(vo, ExecType.NEW, OrdStatus.NEW)

    @rule(data=st.data())
    def session_reject_new(self, data: st.DataObject) -> None:
        vo = self._pick(data, lambda v: not v.acked and v.alive)
        if vo is None:
            return
        vo.alive, vo.qty = False, 0
        self.rig.oms.on_request_rejected(
            Request.NEW,
            vo.order.client_order_id,
            "Required tag missing",
            reason=RejectReason.SESSION,
        )
        assert vo.order.status is OrdStatus.REJECTED

    @rule(data=st.data(), q=st.integers(1, 20))
    def fill(self, data: st.DataObject, q: int) -> None:
        vo = self._pick(data, lambda v: v.acked and v.alive)
        if vo is None:
            return
        q = min(q, vo.qty - vo.cum)
        vo.cum += q
        self.position += int(vo.order.side) * q
        if vo.cum == vo.qty:
            vo.alive = False
        self._er(vo, ExecType.TRADE, vo.status(), last_qty_lots=q, last_px_ticks=100)

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        vo = self._pick(data, lambda v: v.order.is_working and v.order.pending is None)
        if vo is None:
            return
        assert self.rig.oms.cancel(vo.order)
        vo.request = ("cancel", vo.order.pending.client_order_id, 0, 0)  # type: ignore[union-attr]

    @rule(data=st.data(), dq=st.integers(-5, 5), dpx=st.integers(-3, 3))
    def replace(self, data: st.DataObject, dq: int, dpx: int) -> None:
        vo = self._pick(data, lambda v: v.order.is_working and v.order.pending is None)
        if vo is None:
            return
        new_qty = max(vo.order.cum_qty_lots + 1, vo.order.qty_lots + dq)
        assert self.rig.oms.replace(vo.order, qty_lots=new_qty, px_ticks=vo.order.px_ticks + dpx)
        pending = vo.order.pending
        assert pending is not None
        vo.request = ("replace", pending.client_order_id, new_qty, pending.px_ticks)

    @precondition(lambda self: any(v.request for v in self.venue))
    @rule(data=st.data(), accept=st.booleans())
    def answer_request(self, data: st.DataObject, accept: bool) -> None:
        vo = self._pick(data, lambda v: v.request is not None)
        assert vo is not None
        assert vo.request is not None
        kind, clordid, qty, _px = vo.request
        vo.request = None
        orig = vo.order.client_order_id
        if accept and vo.alive and vo.acked and (kind == "cancel" or qty > vo.cum):
            if kind == "cancel":
                vo.alive, vo.qty = False, vo.cum
                vo.qty = vo.cum if vo.cum else 0
                self._er(
                    vo,
                    ExecType.CANCELED,
                    OrdStatus.CANCELED,
                    clordid=clordid,
                    orig_client_order_id=orig,
                )
                assert vo.order.status is OrdStatus.CANCELED
            else:
                vo.qty = qty
                self._er(
                    vo,
                    ExecType.REPLACED,
                    vo.status(),
                    clordid=clordid,
                    orig_client_order_id=orig,
                    order_qty_lots=qty,
                )
                assert vo.order.client_order_id == clordid
                assert vo.order.qty_lots == qty
        else:
            if not vo.acked and vo.alive:  # the venue has not seen the order yet
                vo.acked = True
                self._er(vo, ExecType.NEW, OrdStatus.NEW)
            status = vo.status() if vo.qty or vo.cum else OrdStatus.REJECTED
            self.rig.oms.on_cancel_reject(
                CancelReject(
                    client_order_id=clordid,
                    orig_client_order_id=orig,
                    ord_status=status,
                    response_to_replace=kind == "replace",
                    text="no",
                )
            )
            assert vo.order.pending is None

    @invariant()
    def agrees_with_venue(self) -> None:
        working = 0
        leaves = {Side.BUY: 0, Side.SELL: 0}
        for vo in self.venue:
            o = vo.order
            assert o.cum_qty_lots == vo.cum
            # Every change is published: the last view published is the order as it is now.
            assert o.published == o.view()
            if o.is_terminal:
                assert o.leaves_qty_lots == 0
                assert not vo.alive
            else:
                assert o.cum_qty_lots + o.leaves_qty_lots == o.qty_lots
                working += 1
                leaves[o.side] += o.leaves_qty_lots
        assert self.rig.risk.open_orders() == working
        # Risk counts each working order's leaves on its side (what max_position adds up).
        for side, lots in leaves.items():
            assert self.rig.risk.working_lots("ESZ6", side) == lots
        assert self.rig.risk.position("ESZ6") == self.position
        bad = [a.text for a in self.rig.alerts if "does not allow" in a.text or "unknown" in a.text]
        assert not bad


OmsAgainstVenue.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestOmsAgainstVenue = OmsAgainstVenue.TestCase
