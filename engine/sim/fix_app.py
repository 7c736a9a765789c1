# SPDX-License-Identifier: MIT
"""The exchange simulator as a FIX acceptor application.

:class:`SimFixApplication` answers NewOrderSingle <D>, OrderCancelRequest <F>,
OrderCancelReplaceRequest <G> and OrderStatusRequest <H> with ExecutionReports <8> and
OrderCancelRejects <9>; MarketDataRequest <V> with a snapshot <W> and then incremental
refreshes <X>; other application messages are refused as unsupported. Each session is one
client of the :class:`engine.sim.exchange.SimExchange` (the same one across reconnects); with
``cancel_on_disconnect`` its working orders are canceled when it goes away. Reports for a
client that is not logged on are stored in its session and resent after its next logon.
"""

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import NoReturn

import numpy as np
import numpy.typing as npt

from engine.clock import Clock
from engine.enums import ExecType, OrdStatus, OrdType
from engine.fastlog import get_log
from engine.fix.application import (
    Application,
    FieldNotFound,
    IncorrectTagValue,
    SessionID,
    UnsupportedMessageType,
)
from engine.fix.codec import format_timestamp
from engine.fix.message import FixMessage, Group, OutMessage
from engine.fix.session import AppTemplate, FixSession, lookup_session
from engine.instruments import Instrument
from engine.matching.matcher import EV_LIQUIDITY, EV_PX, EV_QTY, EV_REASON
from engine.oms.venue import CancelReject, ExecutionReport
from engine.sim.exchange import CLOSE_TEXT, RawReport, SimExchange
from engine.types import BUY, L2_SET, L2_TRADE, LIQ_TAKER, ORD_LIMIT
from engine.venues.fix.codes import (
    FIX_TO_ORD_TYPE,
    FIX_TO_SIDE,
    FIX_TO_TIF,
    SIDE_TO_FIX,
    FixNumbers,
    FixValueError,
    exec_type_to_fix,
    ord_status_to_fix,
    px_text,
    px_ticks,
    qty_lots,
    qty_text,
)

log = get_log(__name__)

#: OrdStatus <39> codes (``ord_status_to_fix``, looked up once).
_ORD_STATUS_FIX = {s: ord_status_to_fix(s) for s in OrdStatus}
#: The fields an ack of a new limit order gives per send (ClOrdID, ExecID, OrderID,
#: OrderQty, Price, TransactTime, LeavesQty); its other fields are the template's constants.
_ACK_SLOTS = frozenset({11, 17, 37, 38, 44, 60, 151})
#: What an order request may hold, read in one lookup (``FixMessage.get_many``): MsgType,
#: ClOrdID, Side, OrdType, TimeInForce, Symbol, OrderQty, Price, OrigClOrdID.
_ORDER_FIELDS = (35, 11, 54, 40, 59, 55, 38, 44, 41)
#: Their values (None: absent).
_OrderValues = tuple[bytes | None, ...]
#: Report statuses with no quantity left open.
_NO_LEAVES = frozenset(
    {OrdStatus.FILLED, OrdStatus.CANCELED, OrdStatus.EXPIRED, OrdStatus.REJECTED}
)


#: FIX 4.2 status reports: ExecType <150> that matches the order's status.
_STATUS_EXEC_42 = {
    OrdStatus.PARTIALLY_FILLED: ExecType.PARTIAL_FILL,
    OrdStatus.FILLED: ExecType.FILL,
    OrdStatus.CANCELED: ExecType.CANCELED,
    OrdStatus.REJECTED: ExecType.REJECTED,
}


@dataclass
class _Client:
    session_id: SessionID
    owner: int
    md: dict[bytes, set[str]] = field(default_factory=dict)  # MDReqID -> symbols
    # Send templates of ExecutionReports by their tags, for the session they were made for,
    # and of raw reports by the key of their layout (SimFixApplication._raw_values).
    templates: dict[tuple[int, ...], AppTemplate] = field(default_factory=dict)
    raw_templates: dict[int, AppTemplate] = field(default_factory=dict)
    ack_templates: dict[tuple[str, int], AppTemplate] = field(default_factory=dict)
    templates_of: FixSession | None = None
    # The session's FIX version, as the report writers ask it.
    begin_string: str = field(init=False)
    fix42: bool = field(init=False)  # before FIX 4.3: ExecTransType <20>, no ExecType I
    fix44: bool = field(init=False)  # FIX 4.4 on: LastLiquidityInd <851>
    ts_precision: int = field(init=False)  # TransactTime <60>: seconds before FIX 4.2

    def __post_init__(self) -> None:
        bs = self.begin_string = self.session_id.begin_string
        self.fix42 = bs < "FIX.4.3"
        self.fix44 = bs >= "FIX.4.4"
        self.ts_precision = 0 if bs < "FIX.4.2" else 3


def _refuse_order(values: tuple[bytes | None, ...]) -> NoReturn:
    """Raise what a NewOrderSingle's fields (``_ORDER_FIELDS``) are refused for.

    Checked in the order the simulator always read them: ClOrdID, Side, OrdType,
    TimeInForce, Symbol (the first problem is the one answered).
    """
    _, clordid, side, ord_type, tif, symbol, _, _, _ = values
    if clordid is None:
        raise FieldNotFound(11)
    if side is None:
        raise FieldNotFound(54)
    if side not in FIX_TO_SIDE:
        raise IncorrectTagValue(54)
    if ord_type is None:
        raise FieldNotFound(40)
    if ord_type not in FIX_TO_ORD_TYPE:
        raise IncorrectTagValue(40)
    if (tif or b"0") not in FIX_TO_TIF:
        raise IncorrectTagValue(59)
    if symbol is None:
        raise FieldNotFound(55)
    raise AssertionError("_refuse_order called for fields that pass")  # pragma: no cover


def _grid_text(ins: Instrument, error: FixValueError, raw: bytes | None) -> str:
    """Say why a price <44> or quantity <38> is refused: off the instrument's grid.

    Raises ``error`` again if the value is no number at all (a session-level reject).
    """
    text = (raw or b"").decode("latin-1")
    try:
        finite = Decimal(text).is_finite()
    except InvalidOperation:
        finite = False
    if not finite:
        raise error
    if error.tag == 44:
        return f"price {text} is not a multiple of the tick size {ins.tick_size} of {ins.symbol}"
    return f"quantity {text} is not a multiple of the lot size {ins.lot_size} of {ins.symbol}"


class SimFixApplication(Application):
    """The simulator's side of FIX sessions.

    Parameters
    ----------
    exchange : SimExchange
        The exchange clients trade on.
    clock : Clock
        Time for TransactTime <60> and requests.
    cancel_on_disconnect : bool
        Cancel a client's working orders when its session logs out or drops.
    """

    def __init__(
        self, exchange: SimExchange, clock: Clock, *, cancel_on_disconnect: bool = True
    ) -> None:
        self.exchange = exchange
        self.clock = clock
        self.cancel_on_disconnect = cancel_on_disconnect
        self.instruments: dict[str, Instrument] = {
            b.symbol: b.listing.instrument for b in exchange.books.values()
        }
        self._clients: dict[SessionID, _Client] = {}
        self._by_owner: dict[int, _Client] = {}
        self._owner_of: dict[SessionID, int] = {}
        self._owners = itertools.count(100)
        self._md_ids = itertools.count(1)
        self._nums: dict[str, FixNumbers] = {}
        self._ts_key = -1
        self._ts_precision = -1
        self._ts = b""
        self._epoch = exchange.epoch.encode()

    # ------------------------------------------------------------------ sessions
    def on_logon(self, session_id: SessionID) -> None:
        """Register the session as a client (the same owner id across reconnects)."""
        owner = self._owner_of.setdefault(session_id, next(self._owners))
        client = _Client(session_id, owner)
        self._clients[session_id] = client
        self._by_owner[owner] = client

    def on_logout(self, session_id: SessionID) -> None:
        """End the client's market data; cancel its orders if configured to (and report it)."""
        client = self._clients.pop(session_id, None)
        if client is None:
            return
        client.md.clear()
        if self.cancel_on_disconnect:
            canceled = self.exchange.cancel_owner(client.owner, self.clock.now_ns())
            log.info("%s: canceled %d orders on disconnect", session_id, len(canceled))
            self.dispatch(canceled)  # kept in the session's store for the client's next logon

    def cancel_all(self, text: str = CLOSE_TEXT) -> int:
        """Cancel every client's working orders, saying ``text``; return how many.

        For a simulator that stops: its orders do not outlive it, so every client is told (a
        client that is away gets the reports when it logs on again).
        """
        now = self.clock.now_ns()
        reports = [
            r
            for owner in list(self._by_owner)
            for r in self.exchange.cancel_owner(owner, now, text)
        ]
        self.dispatch(reports)
        return sum(r.exec_type is ExecType.CANCELED for r in reports)

    # ------------------------------------------------------------------ requests
    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        """Answer order and market-data requests; refuse other types."""
        client = self._clients.get(session_id)
        if client is None:  # pragma: no cover  (the session delivers only after logon)
            return
        # Every field an order request reads, in one lookup (_ORDER_FIELDS).
        values = message.get_many(_ORDER_FIELDS)
        mt = values[0]
        try:
            if mt == b"D":
                self._new_order(client, values)
            elif mt == b"F":
                self._cancel(client, values)
            elif mt == b"G":
                self._replace(client, values)
            elif mt == b"H":
                self._status(client, values)
            elif mt == b"V":
                self._md_request(client, message)
            else:
                raise UnsupportedMessageType
        except FixValueError as e:
            raise IncorrectTagValue(e.tag) from e

    def _req(self, m: FixMessage, tag: int) -> bytes:
        value = m.get(tag)
        if value is None:
            raise FieldNotFound(tag)
        return value

    def _new_order(self, client: _Client, values: _OrderValues) -> None:
        _, clordid_raw, side_raw, type_raw, tif_raw, symbol_raw, qty_raw, px_raw, _ = values
        side = FIX_TO_SIDE.get(side_raw or b"")
        ord_type = FIX_TO_ORD_TYPE.get(type_raw or b"")
        tif = FIX_TO_TIF.get(tif_raw or b"0")
        if (
            clordid_raw is None
            or side is None
            or ord_type is None
            or tif is None
            or symbol_raw is None
        ):
            _refuse_order(values)
        clordid = clordid_raw.decode("latin-1")
        symbol = symbol_raw.decode("latin-1")
        ins = self.instruments.get(symbol)
        now = self.clock.now_ns()
        if ins is None:
            reports = self.exchange.submit(
                client.owner, clordid, symbol, side, 1, 0, ord_type, tif, ts=now
            )
        else:
            nums = self._nums.get(symbol) or self._numbers(symbol)
            assert nums is not None
            if qty_raw is None:
                raise FieldNotFound(38)
            if ord_type is not OrdType.LIMIT:
                px_raw = None
            elif px_raw is None:
                raise FieldNotFound(44)
            try:
                # The conversions' memories first (a miss or a zero: the converter).
                qty = nums.lots_of.get(qty_raw) or nums.qty_lots(38, qty_raw)
                px = (
                    (nums.ticks_of.get(px_raw) or nums.px_ticks(44, px_raw))
                    if px_raw is not None
                    else 0
                )
            except FixValueError as e:
                why = _grid_text(ins, e, px_raw if e.tag == 44 else qty_raw)
                reports = [
                    self.exchange.refuse_new(
                        client.owner, clordid, symbol, side, ord_type, why, now
                    )
                ]
            else:
                raws = self.exchange.submit_raw(
                    client.owner, clordid, symbol, side, qty, px, ord_type, tif, ts=now
                )
                if isinstance(raws, ExecutionReport):
                    reports = [raws]
                else:
                    self.dispatch_raw(raws, now)
                    return
        self.dispatch(reports)

    def _cancel(self, client: _Client, values: _OrderValues) -> None:
        clordid, orig = values[1], values[8]
        if clordid is None:
            raise FieldNotFound(11)
        if orig is None:
            raise FieldNotFound(41)
        result = self.exchange.cancel(
            client.owner, clordid.decode("latin-1"), orig.decode("latin-1"), ts=self.clock.now_ns()
        )
        self._answer(client, result)

    def _replace(self, client: _Client, values: _OrderValues) -> None:
        _, clordid_raw, _, _, _, symbol_raw, qty_raw, px_raw, orig_raw = values
        if symbol_raw is None:
            raise FieldNotFound(55)
        symbol = symbol_raw.decode("latin-1")
        ins = self.instruments.get(symbol)
        if clordid_raw is None:
            raise FieldNotFound(11)
        if orig_raw is None:
            raise FieldNotFound(41)
        clordid = clordid_raw.decode("latin-1")
        orig = orig_raw.decode("latin-1")
        result: list[ExecutionReport] | CancelReject
        if ins is None:
            result = self.exchange.refuse_cancel(
                client.owner,
                clordid,
                orig,
                f"invalid replace: unknown symbol {symbol!r}",
                replace=True,
            )
        else:
            if qty_raw is None:
                raise FieldNotFound(38)
            try:
                qty = qty_lots(ins, 38, qty_raw)
                px = px_ticks(ins, 44, px_raw) if px_raw else 0
            except FixValueError as e:
                why = "invalid replace: " + _grid_text(ins, e, px_raw if e.tag == 44 else qty_raw)
                result = self.exchange.refuse_cancel(client.owner, clordid, orig, why, replace=True)
            else:
                result = self.exchange.replace(
                    client.owner, clordid, orig, qty, px, ts=self.clock.now_ns()
                )
        self._answer(client, result)

    def _status(self, client: _Client, values: _OrderValues) -> None:
        clordid_raw, side_raw, symbol_raw = values[1], values[2], values[5]
        if clordid_raw is None:
            raise FieldNotFound(11)
        clordid = clordid_raw.decode("latin-1")
        report = self.exchange.status(client.owner, clordid, self.clock.now_ns())
        if report is not None:
            self.dispatch([report])
            return
        # Unknown here (never seen, or from before a restart of the simulator).
        if symbol_raw is None:
            raise FieldNotFound(55)
        ins = self.instruments.get(symbol_raw.decode("latin-1"))
        side = FIX_TO_SIDE.get(side_raw or b"")
        if side is None:
            raise IncorrectTagValue(54)
        self._send(
            client,
            self._execution_report(
                client,
                self.exchange.unknown_status(
                    client.owner, clordid, ins.symbol if ins else "", side, self.clock.now_ns()
                ),
            ),
        )

    def _answer(self, client: _Client, result: list[ExecutionReport] | CancelReject) -> None:
        if isinstance(result, CancelReject):
            # The exchange always states both (the OMS type allows a venue to leave them out).
            status = result.ord_status if result.ord_status is not None else OrdStatus.REJECTED
            reason = result.reason if result.reason is not None else 99  # 99: Other
            body = [
                (11, result.client_order_id.encode()),
                (37, result.venue_order_id.encode()),
                (39, ord_status_to_fix(status)),
                (41, result.orig_client_order_id.encode()),
                (58, result.text.encode()),
                (102, b"%d" % reason),
                (434, b"2" if result.response_to_replace else b"1"),
            ]
            self._send(client, OutMessage(b"9", body))
        else:
            self.dispatch(result)

    # ------------------------------------------------------------------ reports
    def dispatch(self, reports: Iterable[ExecutionReport]) -> None:
        """Send each report to its client's session.

        A client that is not logged on gets it as QuickFIX's ``sendToTarget`` would: numbered
        and kept in the session's store, it reaches the client through the resend of that gap
        after its next logon (a fill or a cancel on disconnect is never lost).
        """
        by_owner = self._by_owner
        for r in reports:
            client = by_owner.get(r.client)
            if client is None:
                continue
            session = lookup_session(client.session_id)
            if session is None:
                continue
            if not session.is_logged_on:
                session.send(self._execution_report(client, r))
                continue
            # Through a send template per layout of the report: the bytes send() would
            # write for the same fields, without building and sorting a message each time.
            fields = self._report_fields(client, r)
            tags = tuple(t for t, _ in fields)
            templates = client.templates
            if client.templates_of is not session:
                templates = client.templates = {}
                client.raw_templates = {}
                client.templates_of = session
            template = templates.get(tags)
            if template is None:
                template = templates[tags] = session.template(b"8", [(t, None) for t in tags])
            session.send_template(template, tuple([v for _, v in fields]))

    def dispatch_raw(self, raws: Sequence[RawReport], ts: int) -> None:
        """Send raw reports made at ``ts`` (``SimExchange.submit_raw``) to their clients.

        The bytes :meth:`dispatch` writes for their ``ExecutionReport`` s, written from the
        orders' state through a send template per layout, without a report object.
        """
        by_owner = self._by_owner
        for raw in raws:
            order = raw[0]
            client = by_owner.get(order.owner)
            if client is None:
                continue
            session = lookup_session(client.session_id)
            if session is None:
                continue
            if not session.is_logged_on:
                report = self.exchange.report_of(raw, ts)
                session.send(self._execution_report(client, report))
                continue
            if client.templates_of is not session:
                client.templates = {}
                client.raw_templates = {}
                client.ack_templates = {}
                client.templates_of = session
            order, et, ev = raw[0], raw[1], raw[2]
            if (
                et is ExecType.NEW
                and not raw[5]  # nothing filled yet
                and order.type == ORD_LIMIT
                and order.px
                and raw[4] is OrdStatus.NEW
                and ev is not None
                and not ev[EV_REASON]
            ):
                # The ack of a new limit order, most of what a client hears: all but its
                # own values are constants of the order's symbol and side in the template.
                ack = client.ack_templates.get((order.symbol, order.side))
                if ack is None:
                    ack = self._ack_template(client, session, raw, ts)
                    client.ack_templates[(order.symbol, order.side)] = ack
                nums = self._nums[order.symbol]  # made by _ack_template at the latest
                epoch = self._epoch
                qty = nums.qty_texts.get(order.qty) or nums.qty_text(order.qty)
                precision = client.ts_precision  # _timestamp(ts, precision), its test inlined
                unit = 1_000_000 if precision == 3 else 1_000_000_000
                if ts // unit != self._ts_key or precision != self._ts_precision:
                    self._timestamp(ts, precision)  # (else its text is the one it made last)
                session.send_template(
                    ack,
                    (
                        order.clordid.encode(),
                        b"%sX%d" % (epoch, raw[3]),
                        b"%s%d" % (epoch, order.id),
                        qty,
                        nums.px_texts.get(order.px) or nums.px_text(order.px),
                        self._ts,
                        qty,  # leaves: all of it
                    ),
                )
                continue
            key, values = self._raw_values(client, raw, ts)
            template = client.raw_templates.get(key)
            if template is None:
                template = self._raw_template(client, session, raw, ts, len(values))
                client.raw_templates[key] = template
            session.send_template(template, tuple(values))  # (a tuple: the fast path)

    def _ack_template(
        self, client: _Client, session: FixSession, raw: RawReport, ts: int
    ) -> AppTemplate:
        # The ack's layout with the values of this first ack for every field that is the same
        # in every ack of its symbol and side (_ACK_SLOTS are given per send, in tag order).
        fields = self._report_fields(client, self.exchange.report_of(raw, ts))
        return session.template(b"8", [(t, None if t in _ACK_SLOTS else v) for t, v in fields])

    def _raw_template(
        self, client: _Client, session: FixSession, raw: RawReport, ts: int, n: int
    ) -> AppTemplate:
        # The template of a raw report's layout: the tags _report_fields writes for its
        # ExecutionReport, every value a slot.
        fields = self._report_fields(client, self.exchange.report_of(raw, ts))
        if len(fields) != n:  # pragma: no cover  (the two writers disagree: a bug)
            raise AssertionError(f"raw report layout of {n} values, {len(fields)} fields")
        return session.template(b"8", [(t, None) for t, _ in fields])

    def _raw_values(self, client: _Client, raw: RawReport, ts: int) -> tuple[int, list[bytes]]:
        # What _report_fields writes for report_of(raw), straight from the raw report: the
        # layout's key (which optional fields are there) and the values in ascending tag order.
        order, et, ev, exec_n, status, cum, notional = raw
        nums = self._numbers(order.symbol)
        assert nums is not None  # orders exist only on listed symbols
        qty_text = nums.qty_text
        epoch = self._epoch
        limit = order.type == ORD_LIMIT
        if not cum:
            avg = b"0"
        elif (avg_px := notional / cum).is_integer():
            avg = nums.px_text(int(avg_px))
        else:
            exact = nums.instrument.tick_size * Decimal(f"{avg_px:.6f}")
            avg = format(exact.normalize(), "f").encode()
        values = [avg, order.clordid.encode(), qty_text(cum), b"%sX%d" % (epoch, exec_n)]
        key = 0
        fix42 = client.fix42
        if fix42:
            values.append(b"0")
        last = ev is not None and et is ExecType.TRADE and ev[EV_QTY] != 0
        if last:
            assert ev is not None
            key |= 1
            values += [nums.px_text(ev[EV_PX]), qty_text(ev[EV_QTY])]
        values += [
            b"%s%d" % (epoch, order.id),
            qty_text(order.qty),
            _ORD_STATUS_FIX[status],
            b"2" if limit else b"1",
        ]
        if et is ExecType.CANCELED or et is ExecType.REPLACED:
            orig = order.orig
            if orig:
                key |= 2
                values.append(orig.encode())
        if limit and order.px:
            key |= 4
            values.append(nums.px_text(order.px))
        values += [b"1" if order.side == BUY else b"2", nums.symbol]
        text = self.exchange.report_text(raw) if ev is not None and ev[EV_REASON] else ""
        if text:
            key |= 8
            values.append(text.encode())
        leaves = 0 if status in _NO_LEAVES else order.qty - cum
        values += [
            self._timestamp(ts, client.ts_precision),
            exec_type_to_fix(et, client.begin_string, status),
            qty_text(leaves),
        ]
        if last and client.fix44:
            assert ev is not None
            values.append(b"1" if ev[EV_LIQUIDITY] != LIQ_TAKER else b"2")
        return key, values

    def _execution_report(self, client: _Client, r: ExecutionReport) -> OutMessage:
        return OutMessage(b"8", self._report_fields(client, r))

    def _numbers(self, symbol: str) -> FixNumbers | None:
        nums = self._nums.get(symbol)
        if nums is None:
            ins = self.instruments.get(symbol)
            if ins is None:
                return None
            nums = self._nums[symbol] = FixNumbers(ins)
        return nums

    def _report_fields(self, client: _Client, r: ExecutionReport) -> list[tuple[int, bytes]]:
        # The fields of an ExecutionReport <8> for ``r``, in ascending tag order.
        nums = self._numbers(r.symbol)
        bs = client.session_id.begin_string

        def qty(v: int) -> bytes:
            return nums.qty_text(v) if nums is not None else b"%d" % v

        def px(v: int) -> bytes:
            return nums.px_text(v) if nums is not None else b"%d" % v

        if nums is None or not r.cum_qty_lots:
            avg = b"0"
        elif r.avg_px_ticks.is_integer():
            avg = nums.px_text(int(r.avg_px_ticks))
        else:
            exact = nums.instrument.tick_size * Decimal(f"{r.avg_px_ticks:.6f}")
            avg = format(exact.normalize(), "f").encode()
        et = r.exec_type
        fix42 = bs < "FIX.4.3"
        if fix42 and et is ExecType.ORDER_STATUS:  # 4.2 has no "I": the status says it (20=3)
            et = _STATUS_EXEC_42.get(r.ord_status, ExecType.NEW)
        last = bool(r.last_qty_lots)
        body: list[tuple[int, bytes]] = [
            (6, avg),
            (11, r.client_order_id.encode()),
            (14, qty(r.cum_qty_lots)),
            (17, r.exec_id.encode()),
        ]
        if fix42:
            body.append((20, b"3" if r.exec_type is ExecType.ORDER_STATUS else b"0"))
        if last:
            body += [(31, px(r.last_px_ticks)), (32, qty(r.last_qty_lots))]
        body += [
            (37, r.venue_order_id.encode()),
            (38, qty(r.order_qty_lots)),
            (39, ord_status_to_fix(r.ord_status)),
            (40, b"2" if r.ord_type is OrdType.LIMIT else b"1"),
        ]
        if r.orig_client_order_id:
            body.append((41, r.orig_client_order_id.encode()))
        if r.px_ticks and r.ord_type is OrdType.LIMIT:
            body.append((44, px(r.px_ticks)))
        assert r.side is not None, "the exchange states the side of every report"
        body += [(54, SIDE_TO_FIX[r.side]), (55, r.symbol.encode())]
        if r.text:
            body.append((58, r.text.encode()))
        body += [
            (60, self._timestamp(r.ts_event, 0 if bs < "FIX.4.2" else 3)),
            (150, exec_type_to_fix(et, bs, r.ord_status)),
            (151, qty(r.leaves_qty_lots)),
        ]
        if last and bs >= "FIX.4.4":  # LastLiquidityInd <851> is new in FIX 4.4
            body.append((851, b"1" if r.maker else b"2"))
        return body

    def _timestamp(self, ts: int, precision: int) -> bytes:
        # TransactTime <60> (milliseconds, or seconds before FIX 4.2): the text changes once
        # a millisecond (format_timestamp truncates); format it once for all in between.
        key = ts // (1_000_000 if precision == 3 else 1_000_000_000)
        if key != self._ts_key or precision != self._ts_precision:
            self._ts_key = key
            self._ts_precision = precision
            self._ts = format_timestamp(ts, precision)
        return self._ts

    def _send(self, client: _Client, msg: OutMessage) -> None:
        session = lookup_session(client.session_id)
        if session is not None and session.is_logged_on:
            session.send(msg)

    # ------------------------------------------------------------------ market data
    def _md_request(self, client: _Client, m: FixMessage) -> None:
        req_id = self._req(m, 262)
        sub_type = self._req(m, 263)
        symbols = [v.decode("latin-1") for v in m.get_all(55)]
        if sub_type == b"2":
            client.md.pop(req_id, None)
            return
        unknown = [s for s in symbols if s not in self.instruments]
        if not symbols or unknown:
            why = f"unknown symbol {unknown[0]!r}" if unknown else "no symbol"
            body = [(262, req_id), (281, b"0"), (58, why.encode())]
            self._send(client, OutMessage(b"Y", body))
            return
        depth = m.get_int(264) or 10
        for symbol in symbols:
            self._send(client, self._snapshot(req_id, symbol, depth if depth > 0 else 10))
        if sub_type == b"1":
            client.md[req_id] = set(symbols)

    def _snapshot(self, req_id: bytes, symbol: str, depth: int) -> OutMessage:
        ins = self.instruments[symbol]
        bids, asks = self.exchange.depth(symbol, depth)
        entries: list[list[tuple[int, bytes] | Group]] = [
            [(269, b"0"), (270, px_text(ins, p)), (271, qty_text(ins, q))] for p, q in bids
        ]
        entries += [[(269, b"1"), (270, px_text(ins, p)), (271, qty_text(ins, q))] for p, q in asks]
        msg = OutMessage(b"W", [(55, symbol.encode()), (262, req_id)])
        msg.add_group(268, entries)
        return msg

    def publish_market_data(self, events: npt.NDArray[np.void]) -> None:
        """Send ``L2_EVENT_DTYPE`` rows (book changes, trades) to the subscribed clients."""
        if events.shape[0] == 0:
            return
        symbols = self.exchange.symbols
        rows = events.tolist()  # (ts, px, qty, book, side, kind) per row
        for client in list(self._clients.values()):
            wanted = set().union(*client.md.values()) if client.md else set()
            if not wanted:
                continue
            entries: list[list[tuple[int, bytes] | Group]] = []
            for _ts, px, qty, book, side, kind in rows:
                symbol = symbols[book]
                if symbol not in wanted:
                    continue
                nums = self._numbers(symbol)
                assert nums is not None
                if kind == L2_SET:
                    action = b"1" if qty else b"2"
                    typ = b"0" if side == BUY else b"1"
                elif kind == L2_TRADE:
                    action, typ = b"0", b"2"
                else:
                    continue
                entries.append(
                    [
                        (279, action),
                        (269, typ),
                        (55, symbol.encode()),
                        (270, nums.px_text(px)),
                        (271, nums.qty_text(qty)),
                    ]
                )
            if entries:
                msg = OutMessage(b"X", [(262, next(iter(client.md)))])
                msg.add_group(268, entries)
                self._send(client, msg)
