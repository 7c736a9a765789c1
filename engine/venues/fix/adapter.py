# SPDX-License-Identifier: MIT
"""The FIX venue adapter: the order manager's requests as FIX messages, and back.

:class:`FixVenue` is both a :class:`engine.oms.venue.Venue` (the order manager calls it) and a
FIX :class:`engine.fix.application.Application` (its initiator session calls it). It sends
NewOrderSingle <D>, OrderCancelRequest <F>, OrderCancelReplaceRequest <G> and
OrderStatusRequest <H>, and turns ExecutionReport <8>, OrderCancelReject <9>, session Reject
<3> and BusinessMessageReject <j> into the order manager's calls; market data on the same
session goes to the feed it carries (``engine.venues.fix.feed``). A request that cannot go out
because the session is not logged on is refused at once — it is never queued to surprise the
market later.

Order messages go out through the session's send templates (``FixSession.template`` and
``send_template``, one per body layout, built on first use and dropped on :meth:`FixVenue.bind`),
which write the bytes ``FixSession.send`` would; a limit NewOrderSingle's template has its
OrdType, Side, Symbol and TimeInForce written in (one per symbol, side and time in force).
The venue does not override ``to_app`` (that would send the session back to its generic
path): it reads the MsgSeqNum <34> each order message goes out under just before sending it,
to map a session Reject back to the order.
"""

import contextlib
import itertools
from collections.abc import Callable, Iterator, Mapping

from engine.clock import Clock
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import Event, OrderView, VenueLinkChanged, fast_constructor
from engine.fastlog import get_log
from engine.fix.application import Application, DoNotSend, IncorrectTagValue, SessionID
from engine.fix.codec import decode_one, format_timestamp, parse_timestamp
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import BUSINESS_REJECT_TEXTS, AppTemplate, FixSession
from engine.fix.validation.issues import REJECT_TEXTS
from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest
from engine.oms.venue import (
    CancelReject,
    ExecutionReport,
    RejectReason,
    ReportSink,
    Request,
    clordid_prefix,
)
from engine.venues.fix.codes import (
    EXEC_TYPE_OF_CODE,
    FIX_TO_ORD_TYPE,
    FIX_TO_SIDE,
    FIX_TO_TIF,
    ORD_STATUS_OF_CODE,
    ORD_TYPE_TO_FIX,
    SIDE_TO_FIX,
    TIF_TO_FIX,
    FixNumbers,
    FixValueError,
    fix_to_exec_type,
    fix_to_ord_status,
)
from engine.venues.fix.feed import MARKET_DATA_TYPES, FixMarketData

log = get_log(__name__)

#: Built per report: the fast constructor (engine.events.fast_constructor), every field
#: positional in field order.
_execution_report = fast_constructor(ExecutionReport, positional=True, every_field=True)

#: How many sent order messages are remembered for mapping session Rejects back to orders
#: (a Reject answers within a round trip; one beyond is logged, and the order's unanswered
#: request is resolved by the order manager's answer timeout). ~250 bytes each.
SENT_MEMORY = 20_000
#: How many ClOrdIDs of order messages are remembered with their symbol (older: asked of the
#: order managers).
SYMBOL_MEMORY = 10_000

_Layout = tuple[tuple[int, bytes | None], ...]


def _id_batches(prefix: str) -> Iterator[list[str]]:
    # The ClOrdIDs prefix + 1, 2, 3... ten at a time: the numbers 10k to 10k + 9 are the
    # text of k followed by each digit (a concatenation each, not a conversion).
    yield [prefix + d for d in "123456789"]
    for k in itertools.count(1):
        head = prefix + str(k)
        yield [head + d for d in "0123456789"]


def _layout(*tags: int) -> _Layout:
    # Body of an order message: HandlInst <21> is the one constant, every other field a slot.
    return tuple((t, b"1" if t == 21 else None) for t in sorted(tags))


#: Body layouts of the order messages, by (MsgType, with Price <44>, with OrderID <37>); the
#: values of a send are given in ascending tag order, as the body goes on the wire.
_LAYOUTS: dict[tuple[str, bool, bool], _Layout] = {
    ("D", True, False): _layout(11, 21, 38, 40, 44, 54, 55, 59, 60),
    ("D", False, False): _layout(11, 21, 38, 40, 54, 55, 59, 60),
    ("F", False, True): _layout(11, 37, 38, 41, 54, 55, 60),
    ("F", False, False): _layout(11, 38, 41, 54, 55, 60),
    ("G", True, True): _layout(11, 21, 37, 38, 40, 41, 44, 54, 55, 59, 60),
    ("G", True, False): _layout(11, 21, 38, 40, 41, 44, 54, 55, 59, 60),
    ("G", False, True): _layout(11, 21, 37, 38, 40, 41, 54, 55, 59, 60),
    ("G", False, False): _layout(11, 21, 38, 40, 41, 54, 55, 59, 60),
    ("H", False, True): _layout(11, 37, 54, 55),
    ("H", False, False): _layout(11, 54, 55),
}


_NEW_OTHER = ("D", False, False)
_LIMIT = ORD_TYPE_TO_FIX[OrdType.LIMIT]
_LIMIT_TYPE = OrdType.LIMIT


#: The order messages and the requests they carry.
_REQUEST_OF = {"D": Request.NEW, "F": Request.CANCEL, "G": Request.REPLACE, "H": Request.STATUS}
#: How alerts name each request over FIX.
FIX_REQUEST_NAMES: Mapping[Request, str] = {
    Request.NEW: "NewOrderSingle <D>",
    Request.CANCEL: "OrderCancelRequest <F>",
    Request.REPLACE: "OrderCancelReplaceRequest <G>",
    Request.STATUS: "OrderStatusRequest <H>",
}


#: What an ExecutionReport <8> is read for, in one ``get_many`` (``_on_execution_report``):
#: Symbol, LastQty, LastPx, OrderQty, Price, ClOrdID, OrigClOrdID, OrderID, ExecID, ExecType,
#: OrdStatus, Side, LeavesQty, CumQty, Text, PossResend, PossDupFlag, TransactTime.
_ER_TAGS = (55, 32, 31, 38, 44, 11, 41, 37, 17, 150, 39, 54, 151, 14, 58, 97, 43, 60)


class FixVenue(Application):
    """Venue adapter and FIX application of one initiator session.

    Parameters
    ----------
    clock : Clock
        Time for TransactTime <60> and receive stamps.
    name : str
        Venue name for displays.
    defer : Callable | None
        Schedules a callable for later (``loop.call_soon``); refusals of requests that could
        not be sent are delivered through it, never inside the caller.
    publish : Callable[[Event], object] | None
        Where the link's ``VenueLinkChanged`` goes (the engine's ``bus.publish``) when the
        session logs on or off.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        name: str = "FIX",
        defer: Callable[[Callable[[], None]], object] | None = None,
        publish: Callable[[Event], object] | None = None,
    ) -> None:
        self.clock = clock
        self._name = name
        self.defer = defer or (lambda fn: fn())
        self.publish = publish
        self.session: FixSession | None = None
        self.instruments: dict[str, Instrument] = {}
        self._sinks: dict[str, ReportSink] = {}
        # ClOrdID -> symbol of the last SYMBOL_MEMORY order messages, for 9 and j (an older one
        # is asked of the order managers: _symbol).
        self._symbol_of: dict[str, str] = {}
        # MsgSeqNum -> (MsgType, ClOrdID) of an order message; a NewOrderSingle's is its
        # ClOrdID alone (no tuple per order): read through _sent_message().
        self._sent: dict[int, str | tuple[str, str]] = {}
        self._prefix = clordid_prefix("F", clock.now_ns())
        # ClOrdIDs: the prefix and the next number from 1, made ten at a time.
        self._client_order_ids = itertools.chain.from_iterable(_id_batches(self._prefix))
        if type(self).new_client_order_id is FixVenue.new_client_order_id:  # not overridden
            # The iterator's own __next__: a call runs no Python code, and the order manager
            # takes the iterator itself (engine.oms.manager._iterator_of).
            self.new_client_order_id = self._client_order_ids.__next__  # type: ignore[method-assign]
        self._precision = 3
        #: The market-data feed carried on this venue's session (:meth:`set_feed`), if any.
        self.feed: FixMarketData | None = None
        # Send templates of the bound session (built on first use, dropped on bind()).
        self._templates: dict[tuple[str, bool, bool], AppTemplate] = {}
        self._templates_of: FixSession | None = None
        # Limit NewOrderSingles' templates by symbol, side and time in force, of the session
        # they were built for.
        self._new_limit: dict[str, dict[Side, dict[TimeInForce, AppTemplate]]] = {}
        # TransactTime <60> text, formatted once per unit of the precision.
        self._ts_unit = 1_000_000
        # The unit of time (ns, [from, until)) the text is of: none yet.
        self._ts_from = self._ts_until = 0
        self._ts = b""
        # The store of the session last sent through and its annotate(), if it has one.
        self._store: object = None
        self._annotate: Callable[[bytes], None] | None = None
        # Price and quantity conversions by symbol (made afresh when it is routed again).
        self._numbers: dict[str, FixNumbers] = {}
        # The order manager and conversions of each routed symbol, by Symbol <55> as it comes.
        self._sinks_by_code: dict[bytes, tuple[ReportSink, FixNumbers]] = {}
        # The last TransactTime <60> read from an ExecutionReport and its time, ns.
        self._transact: bytes | None = None
        self._transact_ns = 0

    # ------------------------------------------------------------------ wiring
    @property
    def name(self) -> str:
        """Return the venue's name."""
        return self._name

    @property
    def request_names(self) -> Mapping[Request, str]:
        """Return the FIX messages' names of the requests, for alerts."""
        return FIX_REQUEST_NAMES

    def bind(self, session: FixSession) -> None:
        """Send through ``session`` (an initiator whose application is this venue)."""
        self.session = session
        self._precision = 0 if session.config.begin_string < "FIX.4.2" else 3
        self._ts_unit = 10 ** (9 - self._precision)
        self._ts_from = self._ts_until = 0
        self._templates = {}
        self._templates_of = session
        self._new_limit = {}

    def route(self, instrument: Instrument, sink: ReportSink) -> None:
        """Deliver what the venue says about ``instrument`` to ``sink`` (its order manager)."""
        self.instruments[instrument.symbol] = instrument
        self._sinks[instrument.symbol] = sink
        nums = self._numbers[instrument.symbol] = FixNumbers(instrument)
        # Symbol <55> is read as Latin-1 text: the bytes a report names it by (a symbol that
        # has none is looked up by _sink(), which says no report can name it).
        with contextlib.suppress(UnicodeEncodeError):
            self._sinks_by_code[instrument.symbol.encode("latin-1")] = (sink, nums)
        if self.feed is not None:
            self.feed.add_instrument(instrument)

    def set_feed(self, feed: FixMarketData) -> None:
        """Carry ``feed`` on this venue's session.

        It follows the instruments routed here, subscribes at each logon and gets the
        session's market-data messages.
        """
        self.feed = feed
        for instrument in self.instruments.values():
            feed.add_instrument(instrument)

    # ------------------------------------------------------------------ Venue
    def new_client_order_id(self) -> str:
        """Return a fresh ClOrdID: the venue's prefix and the next number from 1."""
        return next(self._client_order_ids)

    def submit(self, order: Order) -> None:  # noqa: C901  (one hot path, its checks inlined)
        """Send a NewOrderSingle <D>; TransactTime <60> is when the order was sent."""
        symbol = order.symbol
        nums = self._numbers[symbol]
        clordid = order.client_order_id
        # The order manager stamped ts_sent just now: no second clock read for <60>.
        now = order.ts_sent or self.clock.now_ns()
        if not self._ts_from <= now < self._ts_until:  # _now_text(), inlined
            self._stamp(now)
        session = self.session
        # ClOrdID <11>, [HandlInst <21>], OrderQty <38>, OrdType <40>, Price <44> if limit,
        # Side <54>, Symbol <55>, TimeInForce <59>, TransactTime <60>; the texts remembered.
        if order.ord_type is _LIMIT_TYPE:
            # A limit order's template has its OrdType, Side, Symbol and TimeInForce written
            # in (one per instrument, side and time in force): four values to fill in.
            qty, px = order.qty_lots, order.px_ticks
            try:  # the texts converted before (nums.qty_text(qty) and px_text(px), at hand)
                qty_text, px_text = nums.qty_texts[qty], nums.px_texts[px]
            except KeyError:
                qty_text, px_text = nums.qty_text(qty), nums.px_text(px)
            values: tuple[bytes, ...] = (clordid.encode(), qty_text, px_text, self._ts)
            template: AppTemplate | None
            try:  # by symbol, side and time in force
                template = self._new_limit[symbol][order.side][order.time_in_force]
            except KeyError:
                template = self._limit_template(session, order, nums)
            else:
                if template.session is not session:  # made for another session
                    template = self._limit_template(session, order, nums)
        else:
            values = (
                clordid.encode(), nums.qty_text(order.qty_lots), ORD_TYPE_TO_FIX[order.ord_type],
                SIDE_TO_FIX[order.side], nums.symbol, TIF_TO_FIX[order.time_in_force], self._ts,
            )  # fmt: skip
            template = None
        # _send_order(key, values, clordid, symbol, order), inlined: once per order.
        symbol_of = self._symbol_of
        symbol_of[clordid] = symbol
        if session is not None and (st := session.state).received_logon and st.sent_logon:
            # (session.is_logged_on, inlined)
            if template is None:
                template = (
                    self._templates.get(_NEW_OTHER) if self._templates_of is session else None
                )
                if template is None:
                    template = self._template(session, _NEW_OTHER)
            store = session.store
            if store is not self._store:  # the store's annotate(), looked up once per store
                self._store = store
                self._annotate = getattr(store, "annotate", None)
            annotate = self._annotate
            # SendingTime <52> is the TransactTime's clock reading (no second read).
            send = template.send  # (session.send_template, bound: see AppTemplate.send)
            if annotate is None:
                seq = send(template, values, now)
            else:
                # A file store keeps the order's strategy and engine order id beside it: a
                # restart finds the order there if the journal never got it.
                annotate(_note(order))
                seq = send(template, values, now)
                annotate(b"")  # not stored (messages not persisted): not for the next one
            if seq:  # self._remember(seq, "D", clordid), inlined: once per order
                sent = self._sent
                sent[seq] = clordid  # ("D", clordid): see _sent_message()
                if len(sent) > SENT_MEMORY:
                    self._forget_oldest()
                if len(symbol_of) > SYMBOL_MEMORY:
                    self._forget_symbols()
                return
        self._refuse("D", clordid, symbol)

    def _limit_template(
        self, session: FixSession | None, order: Order, nums: FixNumbers
    ) -> AppTemplate | None:
        # The limit NewOrderSingle's template of the order's instrument, side and time in
        # force, made on first use: its values ClOrdID, OrderQty, Price and TransactTime.
        # None without a session (the order is then refused); an unknown side or time in
        # force raises.
        side, tif = order.side, order.time_in_force
        fields = (
            (11, None), (21, b"1"), (38, None), (40, _LIMIT), (44, None),
            (54, SIDE_TO_FIX[side]), (55, nums.symbol), (59, TIF_TO_FIX[tif]), (60, None),
        )  # fmt: skip
        if session is None:
            return None
        if self._templates_of is not session:  # session set without bind()
            self._templates = {}
            self._new_limit = {}
            self._templates_of = session
        by_side = self._new_limit.setdefault(order.symbol, {})
        template = by_side.setdefault(side, {})[tif] = session.template("D", fields)
        return template

    def cancel(self, order: Order, request: PendingRequest) -> None:
        """Send an OrderCancelRequest <F>."""
        nums = self._numbers[order.symbol]
        # ClOrdID <11>, OrderID <37> if known, OrderQty <38>, OrigClOrdID <41>, Side <54>,
        # Symbol <55>, TransactTime <60>.
        values = [request.client_order_id.encode()]
        if order.venue_order_id:
            values.append(order.venue_order_id.encode())
        values.append(nums.qty_text(order.qty_lots))
        values.append(order.client_order_id.encode())
        values.append(SIDE_TO_FIX[order.side])
        values.append(order.symbol.encode())
        values.append(self._now_text())
        key = ("F", False, bool(order.venue_order_id))
        self._send_order(key, values, request.client_order_id, order.symbol)

    def replace(self, order: Order, request: PendingRequest) -> None:
        """Send an OrderCancelReplaceRequest <G>."""
        nums = self._numbers[order.symbol]
        limit = order.ord_type is OrdType.LIMIT
        # ClOrdID <11>, [HandlInst <21>], OrderID <37> if known, OrderQty <38>, OrdType <40>,
        # OrigClOrdID <41>, Price <44> if limit, Side <54>, Symbol <55>, TimeInForce <59>,
        # TransactTime <60>.
        values = [request.client_order_id.encode()]
        if order.venue_order_id:
            values.append(order.venue_order_id.encode())
        values.append(nums.qty_text(request.qty_lots))
        values.append(ORD_TYPE_TO_FIX[order.ord_type])
        values.append(order.client_order_id.encode())
        if limit:
            values.append(nums.px_text(request.px_ticks))
        values.append(SIDE_TO_FIX[order.side])
        values.append(order.symbol.encode())
        values.append(TIF_TO_FIX[order.time_in_force])
        values.append(self._now_text())
        key = ("G", limit, bool(order.venue_order_id))
        self._send_order(key, values, request.client_order_id, order.symbol)

    def request_status(self, order: Order) -> None:
        """Send an OrderStatusRequest <H>."""
        # ClOrdID <11>, OrderID <37> if known, Side <54>, Symbol <55>.
        values = [order.client_order_id.encode()]
        if order.venue_order_id:
            values.append(order.venue_order_id.encode())
        values.append(SIDE_TO_FIX[order.side])
        values.append(order.symbol.encode())
        key = ("H", False, bool(order.venue_order_id))
        self._send_order(key, values, order.client_order_id, order.symbol)

    def _now_text(self) -> bytes:
        # TransactTime changes once per unit of the precision: format it once per unit.
        now = self.clock.now_ns()
        if not self._ts_from <= now < self._ts_until:
            self._stamp(now)
        return self._ts

    def _stamp(self, now: int) -> None:
        # The TransactTime text of ``now`` (kept until the next unit of the precision).
        unit = self._ts_unit
        self._ts_from = start = now // unit * unit
        self._ts_until = start + unit
        self._ts = format_timestamp(now, self._precision)

    def _send_order(
        self, key: tuple[str, bool, bool], values: list[bytes], clordid: str, symbol: str
    ) -> None:
        # A cancel, replace or status request through the session's template for its layout,
        # as submit() sends a new order (whose note alone goes into a file store).
        self._symbol_of[clordid] = symbol
        session = self.session
        st = session.state if session is not None else None
        if session is not None and st is not None and st.received_logon and st.sent_logon:
            # (session.is_logged_on, inlined)
            template = self._templates.get(key) if self._templates_of is session else None
            if template is None:
                template = self._template(session, key)
            seq = session.send_template(template, tuple(values))  # (a tuple: the fast path)
            if seq:
                self._remember(seq, key[0], clordid)
                return
        self._refuse(key[0], clordid, symbol)

    def _remember(self, seq: int, msg_type: str, clordid: str) -> None:
        # The MsgSeqNum <34> a message went out under, for mapping a Reject back; both
        # memories kept bounded.
        sent = self._sent
        sent[seq] = (msg_type, clordid)
        if len(sent) > SENT_MEMORY:
            self._forget_oldest()
        if len(self._symbol_of) > SYMBOL_MEMORY:
            self._forget_symbols()

    def _sent_message(self, seq: int | None) -> tuple[str, str] | None:
        # The (MsgType, ClOrdID) of the order message sent under MsgSeqNum ``seq``, if known.
        sent = self._sent.get(seq) if seq is not None else None
        if isinstance(sent, str):
            return ("D", sent)
        return sent

    def _template(self, session: FixSession, key: tuple[str, bool, bool]) -> AppTemplate:
        # The session's send template of an order message layout, made on first use.
        if self._templates_of is not session:  # session set without bind()
            self._templates = {}
            self._templates_of = session
        template = self._templates[key] = session.template(key[0], _LAYOUTS[key])
        return template

    def send_order_message(self, msg: OutMessage, clordid: str, symbol: str) -> None:
        """Send an order message built by hand, or hand it back as not sent.

        For an adapter of a venue with its own layouts (a subclass overriding ``submit``,
        ``cancel``…): the message is mapped back to ``clordid`` if the session or the venue
        rejects it, like the messages this class builds from its templates.
        """
        msg_type = msg.msg_type.decode()
        self._symbol_of[clordid] = symbol
        if len(self._symbol_of) > SYMBOL_MEMORY:
            self._forget_symbols()
        session = self.session
        if session is not None and session.is_logged_on:
            seq = session.next_sender_seq_num  # send() says only whether it went out
            if session.send(msg):
                self._remember(seq, msg_type, clordid)
                return
        self._refuse(msg_type, clordid, symbol)

    def _refuse(self, msg_type: str, clordid: str, symbol: str) -> None:
        session = self.session
        name = session.session_id if session is not None else "(none)"
        why = f"not sent: FIX session {name} is not logged on"
        sink = self._sinks[symbol]

        def refuse() -> None:
            sink.on_request_rejected(
                _REQUEST_OF.get(msg_type), clordid, why, reason=RejectReason.NOT_SENT
            )

        self.defer(refuse)

    def _forget_oldest(self) -> None:
        sent = self._sent
        for old in list(itertools.islice(sent, SENT_MEMORY // 10)):
            del sent[old]

    def _forget_symbols(self) -> None:
        symbol_of = self._symbol_of
        for old in list(itertools.islice(symbol_of, SYMBOL_MEMORY // 10)):
            del symbol_of[old]

    def _symbol(self, *client_order_ids: str) -> str:
        """Return the symbol of the order one of ``client_order_ids`` names, else ``""``."""
        for clordid in client_order_ids:
            symbol = self._symbol_of.get(clordid)
            if symbol:
                return symbol
        for symbol, sink in self._sinks.items():  # an order message older than the memory
            get = getattr(sink, "get", None)
            if get is not None and any(c and get(c) is not None for c in client_order_ids):
                return symbol
        return ""

    # ------------------------------------------------------------------ recovery
    def unjournaled_orders(
        self, known: Callable[[str], bool], after_order_id: int, since_ns: int
    ) -> list[OrderView]:
        """Return the new orders in the session's file store that the journal does not have.

        A ``kill -9`` between sending a NewOrderSingle and the journal writing the order leaves
        the order only in the FIX store (written before the socket). Each comes back as it was
        sent, ``PENDING_NEW``, with the strategy and engine order id noted beside it, so that
        the venue's reports (resent after the restart) find it. Candidates are the orders
        ``known`` does not know, numbered above ``after_order_id`` (the journal writes orders
        in id order: a later one journaled means this one was) and sent at or after
        ``since_ns`` (the store outlives the day's journal).
        """
        session = self.session
        annotated = getattr(session.store, "annotated", None) if session is not None else None
        if annotated is None:
            return []
        out: list[OrderView] = []
        for _seq, note, raw in annotated():
            parts = note.split()
            # The note first: a restart finds thousands of stored orders, all but a few
            # numbered at or below the journal's last order (not decoded then).
            if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) <= after_order_id:
                continue
            msg = decode_one(raw)
            if msg is None or msg.msg_type != b"D":
                continue
            clordid = (msg.get(11) or b"").decode("latin-1")
            symbol = (msg.get(55) or b"").decode("latin-1")
            if (
                not clordid
                or (parse_timestamp(msg.get(52) or b"") or 0) < since_ns
                or known(clordid)
                or symbol not in self._sinks
            ):
                continue
            try:
                out.append(self._sent_order(msg, int(parts[0]), int(parts[1]), clordid, symbol))
            except (FixValueError, KeyError, ValueError) as e:
                log.warning("%s: stored order %s cannot be recovered: %s", session, clordid, e)
        return out

    def _sent_order(
        self, msg: FixMessage, strategy_id: int, order_id: int, clordid: str, symbol: str
    ) -> OrderView:
        nums = self._numbers[symbol]
        get = msg.get
        px = get(44)
        ts = parse_timestamp(get(60) or b"") or 0
        qty = nums.qty_lots(38, get(38))
        return OrderView(
            order_id=order_id,
            client_order_id=clordid,
            orig_client_order_ids=(),
            venue_order_id="",
            strategy_id=strategy_id,
            symbol=symbol,
            side=FIX_TO_SIDE[get(54) or b""],
            ord_type=FIX_TO_ORD_TYPE[get(40) or b""],
            time_in_force=FIX_TO_TIF.get(get(59) or b"0", TimeInForce.DAY),
            qty_lots=qty,
            px_ticks=nums.px_ticks(44, px) if px else 0,
            status=OrdStatus.PENDING_NEW,
            cum_qty_lots=0,
            leaves_qty_lots=qty,
            avg_px_ticks=0.0,
            pending="",
            text="recovered from the FIX store",
            ts_created=ts,
            ts_sent=ts,
            ts_acked=0,
            ts_last=ts,
        )

    # ------------------------------------------------------------------ Application
    def resend_app(self, message: OutMessage, session_id: SessionID) -> None:
        """Never resend an order message: gap-fill it and resolve the request here instead.

        The counterparty asks for a resend of messages it never received. An order, cancel or
        replace sent again later (perhaps after a restart) could surprise the market, so it is
        replaced by a SequenceReset-GapFill and the order manager learns the request did not
        arrive (a new order is rejected, a cancel or replace ends with the order as it was).
        Other messages (status and market-data requests) are gap-filled too: they are stale.
        """
        mt = message.msg_type
        if mt in (b"D", b"F", b"G"):
            fields = {e[0]: _text(e[1]) for e in message.body if isinstance(e, tuple)}
            clordid = fields.get(11, "")
            sink = self._sinks.get(fields.get(55, ""))
            if sink is not None and clordid:
                why = (
                    f"not delivered: {session_id} asked for a resend; gap-filled instead of "
                    "sending a stale request"
                )

                def undelivered() -> None:
                    sink.on_request_rejected(
                        _REQUEST_OF[mt.decode()], clordid, why, reason=RejectReason.SESSION
                    )

                self.defer(undelivered)
        raise DoNotSend

    def on_logon(self, session_id: SessionID) -> None:
        """Report the logon; let the market-data feed, if any, subscribe."""
        self._link_changed(session_id, True)
        if self.feed is not None and self.session is not None:
            self.feed.on_logon(self.session)

    def on_logout(self, session_id: SessionID) -> None:
        """Report the logout."""
        self._link_changed(session_id, False)

    def _link_changed(self, session_id: SessionID, up: bool) -> None:
        if self.publish is not None:
            ev = VenueLinkChanged(
                ts_event=self.clock.now_ns(),
                venue=self._name,
                protocol="FIX",
                up=up,
                detail=str(session_id),
            )
            self.publish(ev)

    def from_admin(self, message: FixMessage, session_id: SessionID) -> None:
        """Map a session Reject <3> of an order message back to its order by RefSeqNum <45>."""
        if message.msg_type != b"3":
            return
        ref = message.get_int(45)
        sent = self._sent_message(ref)
        if sent is None:
            log.warning(
                "%s: Reject of MsgSeqNum %s we cannot map: %s", session_id, ref, message.get(58)
            )
            return
        msg_type, clordid = sent
        text = (message.get(58) or b"").decode("latin-1")
        reason = message.get_int(373)
        words = REJECT_TEXTS.get(reason, "not a standard code") if reason is not None else ""
        parts = [f"RefSeqNum {ref}"]
        if reason is not None:
            parts.append(f"SessionRejectReason {reason} ({words})")
        ref_tag = message.get_int(371)
        if ref_tag is not None:
            parts.append(f"RefTagID {tag_text(ref_tag)}")
        sink = self._sinks.get(self._symbol(clordid))
        if sink is not None:
            sink.on_request_rejected(
                _REQUEST_OF.get(msg_type),
                clordid,
                text or words or "rejected by the session",
                reason=RejectReason.SESSION,
                detail=", ".join(parts),
            )

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        """Turn ExecutionReport, OrderCancelReject and BusinessMessageReject into OMS calls."""
        mt = message.msg_type
        try:
            if mt == b"8":
                self._on_execution_report(message)
            elif mt == b"9":
                self._on_cancel_reject(message)
            elif mt == b"j":
                self._on_business_reject(message)
            elif mt in MARKET_DATA_TYPES and self.feed is not None:
                self.feed.on_message(message, session_id)
        except FixValueError as e:
            log.warning("%s: %s", session_id, e)
            raise IncorrectTagValue(e.tag) from e

    def _sink(self, symbol: str) -> tuple[ReportSink, FixNumbers]:
        sink = self._sinks.get(symbol)
        if sink is None:
            raise FixValueError(55, symbol.encode(), "is not an instrument this engine trades")
        return sink, self._numbers[symbol]

    def _on_execution_report(self, m: FixMessage) -> None:
        # Every field in one call (FixMessage.get_many: ~1.6 µs for these 18, 5.5 µs by get).
        (
            symbol,
            last_qty,
            last_px,
            order_qty,
            px,
            clordid,
            orig,
            venue_id,
            exec_id,
            exec_type,
            status,
            side,
            leaves,
            cum,
            text,
            poss_resend,
            poss_dup,
            transact,
        ) = m.get_many(_ER_TAGS)
        sink, nums = self._sinks_by_code.get(symbol) or self._sink(  # type: ignore[arg-type]
            (symbol or b"").decode("latin-1")
        )
        # Codes, quantities and prices through the conversions' own memories first (a miss, a
        # zero, or a bad or missing value goes to the converter, which raises naming the tag;
        # in this order, as ExecutionReport's fields: a report with two bad values names the
        # same tag as ever).
        et = EXEC_TYPE_OF_CODE.get(exec_type)  # type: ignore[arg-type]
        if et is None:  # (NEW is 0: not `or`)
            et = fix_to_exec_type(exec_type)  # raises
        st = ORD_STATUS_OF_CODE.get(status)  # type: ignore[arg-type]
        if st is None:  # (NEW is 0: not `or`)
            st = fix_to_ord_status(status)  # raises
        lots, ticks = nums.lots_of, nums.ticks_of
        leaves_lots: int | None = lots.get(leaves)  # type: ignore[arg-type]
        if leaves_lots is None:
            leaves_lots = nums.qty_lots(151, leaves)
        cum_lots: int | None = lots.get(cum)  # type: ignore[arg-type]
        if cum_lots is None:
            cum_lots = nums.qty_lots(14, cum)
        last_lots = (lots.get(last_qty) or nums.qty_lots(32, last_qty)) if last_qty else 0
        last_ticks = (
            (ticks.get(last_px) or nums.px_ticks(31, last_px)) if last_qty and last_px else 0
        )
        order_lots = (lots.get(order_qty) or nums.qty_lots(38, order_qty)) if order_qty else 0
        px_ticks = (ticks.get(px) or nums.px_ticks(44, px)) if px else 0
        if transact != self._transact:  # TransactTime <60>: the same ms for a burst's reports
            self._transact_ns = parse_timestamp(transact or b"") or 0
            self._transact = transact
        # ExecutionReport's fields positionally, in their order (a test checks it against
        # ExecutionReport(**...)); symbol, ord_type, avg_px_ticks, maker, client: not read.
        rep = _execution_report(
            clordid.decode("latin-1") if clordid else "",
            orig.decode("latin-1") if orig else "",
            venue_id.decode("latin-1") if venue_id else "",
            exec_id.decode("latin-1") if exec_id else "",
            et, st, FIX_TO_SIDE.get(side),  # type: ignore[arg-type]
            leaves_lots, cum_lots, last_lots, last_ticks, order_lots, px_ticks,
            text.decode("latin-1") if text else "",
            poss_resend == b"Y", poss_dup == b"Y",
            self._transact_ns, m.ts_recv or self.clock.now_ns(),
            "", None, 0.0, False, 0,
        )  # fmt: skip
        sink.on_execution_report(rep)

    def _on_cancel_reject(self, m: FixMessage) -> None:
        clordid = (m.get(11) or b"").decode("latin-1")
        orig = (m.get(41) or b"").decode("latin-1")
        sink = self._sinks.get(self._symbol(clordid, orig))
        if sink is None:
            log.warning("OrderCancelReject for unknown ClOrdID %r / %r", clordid, orig)
            return
        status = m.get(39)
        reason = m.get_int(102)
        sink.on_cancel_reject(
            CancelReject(
                client_order_id=clordid,
                orig_client_order_id=orig,
                venue_order_id=(m.get(37) or b"").decode("latin-1"),
                ord_status=fix_to_ord_status(status) if status else None,
                response_to_replace=m.get(434) == b"2",
                reason=reason,
                text=(m.get(58) or b"").decode("latin-1"),
                ts_recv=m.ts_recv or self.clock.now_ns(),
            )
        )

    def _on_business_reject(self, m: FixMessage) -> None:
        # The rejected message: by BusinessRejectRefID <379> if it names one of our ClOrdIDs,
        # else by RefSeqNum <45> (QuickFIX, and most engines, set only 45 and RefMsgType <372>).
        ref_type = (m.get(372) or b"").decode("latin-1")
        ref_id = (m.get(379) or b"").decode("latin-1")
        ref_seq = m.get_int(45)
        reason = m.get_int(380)
        words = (
            BUSINESS_REJECT_TEXTS.get(reason, "not a standard code") if reason is not None else ""
        )
        parts = [f"BusinessRejectRefID {ref_id}"] if ref_id else []
        if ref_seq is not None:
            parts.append(f"RefSeqNum {ref_seq}")
        if reason is not None:
            parts.append(f"BusinessRejectReason {reason} ({words})")
        text = (m.get(58) or b"").decode("latin-1") or words or "rejected by the venue"
        msg_type, clordid = ref_type, ref_id
        symbol = self._symbol(ref_id) if ref_id else ""
        if not symbol and ref_seq is not None:
            sent = self._sent_message(ref_seq)
            if sent is not None and (not ref_type or sent[0] == ref_type):
                msg_type, clordid = sent
                symbol = self._symbol(clordid)
        sink = self._sinks.get(symbol)
        if sink is None:  # any order manager raises the alert for an unknown reference
            sink = next(iter(self._sinks.values()), None)
        if sink is not None:
            request = _REQUEST_OF.get(msg_type)
            if request is None and msg_type:  # not an order message: say which one
                parts.insert(0, f"RefMsgType {msg_type}")
            sink.on_request_rejected(
                request, clordid, text, reason=RejectReason.BUSINESS, detail=", ".join(parts)
            )


#: Names of the tags of our order messages, for alerts (any other tag is shown as its number).
_TAG_NAMES = {
    1: "Account", 11: "ClOrdID", 15: "Currency", 18: "ExecInst", 21: "HandlInst",
    37: "OrderID", 38: "OrderQty", 40: "OrdType", 41: "OrigClOrdID", 44: "Price", 54: "Side",
    55: "Symbol", 59: "TimeInForce", 60: "TransactTime", 99: "StopPx", 100: "ExDestination",
    107: "SecurityDesc", 167: "SecurityType", 207: "SecurityExchange",
}  # fmt: skip


def tag_text(tag: int) -> str:
    """Return ``54 (Side)`` for a tag of an order message, the number alone for others."""
    name = _TAG_NAMES.get(tag)
    return f"{tag} ({name})" if name else str(tag)


def _note(order: Order) -> bytes:
    return b"%d %d" % (order.strategy_id, order.order_id)


def _text(value: object) -> str:
    return bytes(value).decode("latin-1") if isinstance(value, bytes | bytearray) else str(value)
