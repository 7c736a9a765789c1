# SPDX-License-Identifier: MIT
"""The exchange simulator as an OUCH 5.0 exchange: the messages of one port, answered.

:class:`SimOuchApplication` takes the inbound messages of logged-in accounts (Enter Order,
Replace Order, Cancel Order, Modify Order, Account Query) and answers each on the account's
sequenced stream with what the matching did: Order Accepted, Order Replaced, Order Executed
(one per fill, incremental), Order Canceled (the shares canceled, with the reason), Order
Modified, Rejected (a reason code), Account Query Response. Orders are the account's by
UserRefNum; on the :class:`engine.sim.exchange.SimExchange` they are the account's client
(its *owner*, the same across reconnects) with ClOrdID ``"<UserRefNum>"`` (a cancel's own id
``"<UserRefNum>x<n>"``). A stream keeps what it is sent while its client is away: the
SoupBinTCP session replays it at the next login, so a fill or a cancel on disconnect is never
lost.

The session layer (login, heartbeats, sequence numbers, replay) is the port's
(``engine.venues.ouch``); this module only needs a stream per account that takes a message.
"""

import itertools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from engine.clock import Clock
from engine.enums import ExecType, OrdStatus, OrdType
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.oms.venue import CancelReject as OmsCancelReject
from engine.oms.venue import ExecutionReport
from engine.sim.exchange import CLOSE_TEXT, DISCONNECT_TEXT, SimExchange
from engine.venues.ouch.client import OuchServerHandler, OuchServerSession
from engine.venues.ouch.codes import (
    IOC_REMAINDER,
    MARKET_PRICE,
    OUCH_TO_SIDE,
    OUCH_TO_TIF,
    REJECT_INVALID_PRICE,
    REJECT_INVALID_QUANTITY,
    REJECT_INVALID_SYMBOL,
    REJECT_OTHER,
    REJECT_REPLACE_NOT_ALLOWED,
    SELF_MATCH,
    SUPERVISORY,
    USER_REQUESTED,
    ns_since_midnight,
)
from engine.venues.ouch.link import SoupServerListener
from engine.venues.ouch.messages import (
    AccountQuery,
    AccountQueryResponse,
    CancelOrder,
    EnterOrder,
    ModifyOrder,
    OrderAccepted,
    OrderCanceled,
    OrderExecuted,
    OrderModified,
    OrderReplaced,
    OuchMessage,
    PriceScale,
    Rejected,
    ReplaceOrder,
)
from engine.venues.ouch.store import FileSequencedStore, MemorySequencedStore, SequencedStore

log = get_log(__name__)

_CANCEL_ID = re.compile(r"^(\d+)(?:x\d+)?$")


class Stream(Protocol):
    """An account's sequenced stream (SoupBinTCP Sequenced Data), kept for replay."""

    def send(self, message: OuchMessage) -> None:
        """Keep ``message`` under the next sequence number; send it if the client is in."""
        ...


@dataclass(slots=True)
class _Ref:
    """What the port remembers of one UserRefNum of an account."""

    symbol: str
    side: str  # the OUCH side as entered (B, S, T, E)
    tif: str
    display: str
    capacity: str
    cl_ord_id: str
    leaves: int = 0  # lots still open, as of the last report


@dataclass(slots=True)
class _Account:
    name: str
    owner: int
    stream: Stream | None = None
    refs: dict[int, _Ref] = field(default_factory=dict)
    next_ref: int = 1  # the next UserRefNum it may use (Account Query)
    cancels: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class SimOuchApplication:
    """The simulator's OUCH port: accounts' messages in, the matching's answers out.

    Parameters
    ----------
    exchange : SimExchange
        The exchange the accounts trade on (shared with its FIX port).
    clock : Clock
        Time of requests and of the answers' Timestamp.
    cancel_on_disconnect : bool
        Cancel an account's working orders when its session ends or drops.
    owners : Callable[[], int] | None
        Source of exchange owner ids (shared with the FIX port, so no two clients share one).
    """

    def __init__(
        self,
        exchange: SimExchange,
        clock: Clock,
        *,
        cancel_on_disconnect: bool = True,
        owners: Callable[[], int] | None = None,
    ) -> None:
        self.exchange = exchange
        self.clock = clock
        self.cancel_on_disconnect = cancel_on_disconnect
        counter = itertools.count(500)
        self._owners = owners or (lambda: next(counter))
        self._accounts: dict[str, _Account] = {}
        self._by_owner: dict[int, _Account] = {}
        #: Inbound messages handled (a lockstep test compares it with what clients sent).
        self.requests = 0
        self._scales: dict[str, PriceScale] = {}
        self.instruments: dict[str, Instrument] = {
            b.symbol: b.listing.instrument for b in exchange.books.values()
        }
        # OrderReferenceNumber and MatchNumber: unique over the day across restarts of the
        # simulator (a run's numbers start at its start's millisecond of the day x 10^6).
        base = ns_since_midnight(clock.now_ns()) // 1_000_000 * 1_000_000
        self._order_refs: dict[str, int] = {}
        self._order_ref_n = itertools.count(base + 1)
        self._match_n = itertools.count(base + 1)

    # ------------------------------------------------------------------ accounts
    def attach(self, account: str, stream: Stream) -> None:
        """Send the answers of ``account`` (it logged in) to ``stream`` from now on."""
        acc = self._account(account)
        acc.stream = stream

    def detach(self, account: str) -> None:
        """Cancel the orders of ``account`` (its session ended) if configured to."""
        acc = self._accounts.get(account)
        if acc is None:
            return
        if self.cancel_on_disconnect:
            reports = self.exchange.cancel_owner(acc.owner, self.clock.now_ns(), DISCONNECT_TEXT)
            log.info("OUCH %s: canceled %d orders on disconnect", account, len(reports))
            self.dispatch(reports)  # kept in the stream for the account's next login

    def cancel_all(self, text: str = CLOSE_TEXT) -> int:
        """Cancel every account's working orders (the simulator stops); return how many."""
        now = self.clock.now_ns()
        reports = [
            r
            for acc in list(self._accounts.values())
            for r in self.exchange.cancel_owner(acc.owner, now, text)
        ]
        self.dispatch(reports)
        return sum(r.exec_type is ExecType.CANCELED for r in reports)

    def _account(self, name: str) -> _Account:
        acc = self._accounts.get(name)
        if acc is None:
            acc = self._accounts[name] = _Account(name, self._owners())
            self._by_owner[acc.owner] = acc
        return acc

    def owns(self, owner: int) -> bool:
        """Return whether exchange client ``owner`` is one of this port's accounts."""
        return owner in self._by_owner

    # ------------------------------------------------------------------ requests
    def on_message(self, account: str, message: OuchMessage) -> None:
        """Answer one inbound message of ``account`` (a logged-in client)."""
        self.requests += 1
        acc = self._account(account)
        if isinstance(message, EnterOrder):
            self._enter(acc, message)
        elif isinstance(message, CancelOrder):
            self._cancel(acc, message)
        elif isinstance(message, ReplaceOrder):
            self._replace(acc, message)
        elif isinstance(message, ModifyOrder):
            self._modify(acc, message)
        elif isinstance(message, AccountQuery):
            self._send(
                acc, AccountQueryResponse(timestamp=self._ts(), next_user_ref_num=acc.next_ref)
            )
        else:
            log.warning("OUCH %s: %s is not a request; ignored", account, type(message).__name__)

    def _scale(self, symbol: str) -> PriceScale | None:
        scale = self._scales.get(symbol)
        if scale is None:
            ins = self.instruments.get(symbol)
            if ins is None:
                return None
            scale = self._scales[symbol] = PriceScale(ins)
        return scale

    def _reject(self, acc: _Account, ref: int, reason: int, cl_ord_id: str, why: str) -> None:
        log.info("OUCH %s: UserRefNum %d rejected: %s", acc.name, ref, why)
        self._send(
            acc,
            Rejected(timestamp=self._ts(), user_ref_num=ref, reason=reason, cl_ord_id=cl_ord_id),
        )

    def _enter(self, acc: _Account, m: EnterOrder) -> None:
        ref = m.user_ref_num
        if ref < acc.next_ref:
            why = f"UserRefNum {ref} is not above the last one ({acc.next_ref - 1})"
            self._reject(acc, ref, REJECT_OTHER, m.cl_ord_id, why)
            return
        acc.next_ref = ref + 1
        scale = self._scale(m.symbol)
        side = OUCH_TO_SIDE.get(m.side)
        tif = OUCH_TO_TIF.get(m.time_in_force)
        if scale is None:
            self._reject(acc, ref, REJECT_INVALID_SYMBOL, m.cl_ord_id, f"symbol {m.symbol!r}")
            return
        if side is None or tif is None:
            self._reject(
                acc,
                ref,
                REJECT_OTHER,
                m.cl_ord_id,
                f"side {m.side!r} / time in force {m.time_in_force!r}",
            )
            return
        try:
            qty = scale.lots_from_quantity(m.quantity)
            market = m.price == MARKET_PRICE
            px = 0 if market else scale.ticks_from_price(m.price)
        except ValueError as e:
            code = REJECT_INVALID_QUANTITY if "quantity" in str(e) else REJECT_INVALID_PRICE
            self._reject(acc, ref, code, m.cl_ord_id, str(e))
            return
        acc.refs[ref] = _Ref(m.symbol, m.side, m.time_in_force, m.display, m.capacity, m.cl_ord_id)
        reports = self.exchange.submit(
            acc.owner,
            str(ref),
            m.symbol,
            side,
            qty,
            px,
            OrdType.MARKET if market else OrdType.LIMIT,
            tif,
            ts=self.clock.now_ns(),
        )
        self.dispatch(reports)

    def _cancel(self, acc: _Account, m: CancelOrder) -> None:
        state = acc.refs.get(m.user_ref_num)
        if state is None:
            log.info("OUCH %s: cancel of unknown UserRefNum %d ignored", acc.name, m.user_ref_num)
            return
        now = self.clock.now_ns()
        cancel_id = f"{m.user_ref_num}x{next(acc.cancels)}"
        if m.quantity:  # reduce to ``quantity`` shares: a replace down at the same price
            scale = self._scale(state.symbol)
            assert scale is not None
            status = self.exchange.status(acc.owner, str(m.user_ref_num), now)
            if status is None or status.leaves_qty_lots == 0:
                return
            total = status.cum_qty_lots + scale.lots_from_quantity(m.quantity)
            result = self.exchange.replace(
                acc.owner, cancel_id, str(m.user_ref_num), total, status.px_ticks, ts=now
            )
        else:
            result = self.exchange.cancel(acc.owner, cancel_id, str(m.user_ref_num), ts=now)
        if isinstance(result, OmsCancelReject):
            log.info(
                "OUCH %s: cancel of UserRefNum %d ignored: %s",
                acc.name,
                m.user_ref_num,
                result.text,
            )
            return
        self.dispatch(result)

    def _replace(self, acc: _Account, m: ReplaceOrder) -> None:
        orig = acc.refs.get(m.orig_user_ref_num)
        new = m.user_ref_num
        if new < acc.next_ref:
            why = f"UserRefNum {new} is not above the last one ({acc.next_ref - 1})"
            self._reject(acc, new, REJECT_OTHER, m.cl_ord_id, why)
            return
        acc.next_ref = new + 1
        scale = self._scale(orig.symbol) if orig is not None else None
        if orig is None or scale is None:
            self._reject(
                acc,
                new,
                REJECT_REPLACE_NOT_ALLOWED,
                m.cl_ord_id,
                f"unknown UserRefNum {m.orig_user_ref_num}",
            )
            return
        now = self.clock.now_ns()
        status = self.exchange.status(acc.owner, str(m.orig_user_ref_num), now)
        try:
            open_lots = scale.lots_from_quantity(m.quantity)
            px = scale.ticks_from_price(m.price)
        except ValueError as e:
            code = REJECT_INVALID_QUANTITY if "quantity" in str(e) else REJECT_INVALID_PRICE
            self._reject(acc, new, code, m.cl_ord_id, str(e))
            return
        cum = status.cum_qty_lots if status is not None else 0
        acc.refs[new] = _Ref(
            orig.symbol,
            orig.side,
            m.time_in_force,
            m.display,
            orig.capacity,
            m.cl_ord_id,
            orig.leaves,
        )
        # OUCH's Quantity is the new open quantity; the exchange's, the order's total.
        result = self.exchange.replace(
            acc.owner, str(new), str(m.orig_user_ref_num), cum + open_lots, px, ts=now
        )
        if isinstance(result, OmsCancelReject):
            del acc.refs[new]
            self._reject(acc, new, REJECT_REPLACE_NOT_ALLOWED, m.cl_ord_id, result.text)
            return
        self.dispatch(result)

    def _modify(self, acc: _Account, m: ModifyOrder) -> None:
        # A Modify changes the side between sell kinds (S, T, E) or reduces the quantity.
        state = acc.refs.get(m.user_ref_num)
        if state is None or OUCH_TO_SIDE.get(m.side) is not OUCH_TO_SIDE.get(state.side):
            log.info("OUCH %s: modify of UserRefNum %d ignored", acc.name, m.user_ref_num)
            return
        state.side = m.side
        scale = self._scale(state.symbol)
        assert scale is not None
        if scale.lots_from_quantity(m.quantity) < state.leaves:
            self._cancel(acc, CancelOrder(user_ref_num=m.user_ref_num, quantity=m.quantity))
        self._send(
            acc,
            OrderModified(
                timestamp=self._ts(), user_ref_num=m.user_ref_num, side=m.side, quantity=m.quantity
            ),
        )

    # ------------------------------------------------------------------ answers
    def dispatch(self, reports: Iterable[ExecutionReport]) -> None:
        """Send each report of one of this port's accounts as its OUCH message(s)."""
        for r in reports:
            acc = self._by_owner.get(r.client)
            if acc is None:
                continue
            message = self._message(acc, r)
            if message is not None:
                self._send(acc, message)

    def _message(self, acc: _Account, r: ExecutionReport) -> OuchMessage | None:
        match = _CANCEL_ID.match(r.client_order_id)
        if match is None:
            return None
        ref = int(match.group(1))
        state = acc.refs.get(ref)
        scale = self._scale(r.symbol)
        if state is None or scale is None:
            return None
        ts = ns_since_midnight(r.ts_event or self.clock.now_ns())
        et = r.exec_type
        before, state.leaves = state.leaves, r.leaves_qty_lots
        if et is ExecType.NEW:
            return self._accepted(OrderAccepted, ref, state, scale, r, ts)
        if et is ExecType.REPLACED:
            orig = _CANCEL_ID.match(r.orig_client_order_id)
            orig_ref = int(orig.group(1)) if orig else 0
            if orig_ref == ref:  # a Cancel Order that reduced the quantity
                return OrderCanceled(
                    timestamp=ts,
                    user_ref_num=ref,
                    quantity=scale.quantity_from_lots(before - r.leaves_qty_lots),
                    reason=USER_REQUESTED,
                )
            old = acc.refs.get(orig_ref)
            if old is not None:
                old.leaves = 0
            return self._accepted(OrderReplaced, ref, state, scale, r, ts, orig_ref)
        if et in (ExecType.TRADE, ExecType.PARTIAL_FILL, ExecType.FILL):
            return OrderExecuted(
                timestamp=ts,
                user_ref_num=ref,
                quantity=scale.quantity_from_lots(r.last_qty_lots),
                price=scale.price_from_ticks(r.last_px_ticks),
                liquidity_flag="A" if r.maker else "R",
                match_number=next(self._match_n),
            )
        if et in (ExecType.CANCELED, ExecType.EXPIRED):
            return OrderCanceled(
                timestamp=ts,
                user_ref_num=ref,
                quantity=scale.quantity_from_lots(max(before, 0)),
                reason=_cancel_reason(et, r.text),
            )
        if et is ExecType.REJECTED:
            code = REJECT_INVALID_PRICE if "price" in r.text else REJECT_OTHER
            return Rejected(timestamp=ts, user_ref_num=ref, reason=code, cl_ord_id=state.cl_ord_id)
        return None

    def _accepted(
        self,
        kind: type[OrderAccepted] | type[OrderReplaced],
        ref: int,
        state: _Ref,
        scale: PriceScale,
        r: ExecutionReport,
        ts: int,
        orig_ref: int = 0,
    ) -> OuchMessage:
        order_ref = self._order_refs.get(r.venue_order_id)
        if order_ref is None:
            order_ref = self._order_refs[r.venue_order_id] = next(self._order_ref_n)
        live = r.ord_status in (OrdStatus.NEW, OrdStatus.PARTIALLY_FILLED)
        market = r.ord_type is OrdType.MARKET
        price = MARKET_PRICE if market else scale.price_from_ticks(r.px_ticks)
        quantity = scale.quantity_from_lots(r.leaves_qty_lots)
        if kind is OrderReplaced:
            return OrderReplaced(
                timestamp=ts,
                orig_user_ref_num=orig_ref,
                user_ref_num=ref,
                side=state.side,
                quantity=quantity,
                symbol=r.symbol,
                price=price,
                time_in_force=state.tif,
                display=state.display,
                order_reference_number=order_ref,
                capacity=state.capacity,
                inter_market_sweep_eligibility="N",
                cross_type="N",
                order_state="L" if live else "D",
                cl_ord_id=state.cl_ord_id,
            )
        return OrderAccepted(
            timestamp=ts,
            user_ref_num=ref,
            side=state.side,
            quantity=quantity,
            symbol=r.symbol,
            price=price,
            time_in_force=state.tif,
            display=state.display,
            order_reference_number=order_ref,
            capacity=state.capacity,
            inter_market_sweep_eligibility="N",
            cross_type="N",
            order_state="L" if live else "D",
            cl_ord_id=state.cl_ord_id,
        )

    def _send(self, acc: _Account, message: OuchMessage) -> None:
        if acc.stream is None:
            log.warning("OUCH %s: no stream; %s dropped", acc.name, type(message).__name__)
            return
        acc.stream.send(message)

    def _ts(self) -> int:
        return ns_since_midnight(self.clock.now_ns())


def _cancel_reason(et: ExecType, text: str) -> str:
    if et is ExecType.EXPIRED or "IOC" in text or "remainder" in text:
        return IOC_REMAINDER
    if "self-trade" in text:
        return SELF_MATCH
    if text in (DISCONNECT_TEXT, CLOSE_TEXT):
        return SUPERVISORY
    return USER_REQUESTED


class _AccountHandler(OuchServerHandler):
    """An account's requests, to the port (whose answers are written as they are made)."""

    def __init__(self, app: SimOuchApplication, account: str) -> None:
        self.app = app
        self.account = account

    def on_message(self, msg: OuchMessage, now_ns: int) -> bytes:
        """Answer ``msg`` through the port."""
        self.app.on_message(self.account, msg)
        return b""

    def on_login(self, username: str, sequence_number: int, now_ns: int) -> None:
        """Log the login."""
        log.info("OUCH %s logged in (replay from %d)", username, sequence_number)


class _AccountSession(OuchServerSession):
    """One account's server session; its end cancels its orders (cancel on disconnect)."""

    def __init__(
        self,
        app: SimOuchApplication,
        account: str,
        password: str,
        *,
        session: str,
        store: SequencedStore,
    ) -> None:
        self.app = app
        self.account = account
        super().__init__(
            account, password, session=session, store=store, handler=_AccountHandler(app, account)
        )

    def on_logout(self, now_ns: int) -> None:
        """Cancel the account's orders: it logged out."""
        self.app.detach(self.account)

    def on_disconnected(self, now_ns: int) -> None:
        """Cancel the account's orders: its connection dropped."""
        self.app.detach(self.account)


class _ListenerStream:
    """An account's stream: stored in its session, written when it is connected."""

    def __init__(self, listener: SoupServerListener, session: _AccountSession) -> None:
        self.listener = listener
        self.session = session

    def send(self, message: OuchMessage) -> None:
        """Store ``message`` as the account's next Sequenced Data; write it if connected."""
        self.listener.send(
            self.session.soup, self.session.send(message, self.listener.clock.now_ns())
        )


def ouch_session_name(
    store_dir: Path | None, accounts: Sequence[tuple[str, str]], now_ns: int
) -> str:
    """Return the SoupBinTCP session the simulator's OUCH port serves: the one it kept.

    :func:`kept_ouch_session` when ``store_dir`` holds one, else the UTC day of ``now_ns``
    (``YYYYMMDD``).
    """
    kept = kept_ouch_session(store_dir, accounts)
    return kept or time.strftime("%Y%m%d", time.gmtime(now_ns // 1_000_000_000))


def kept_ouch_session(store_dir: Path | None, accounts: Sequence[tuple[str, str]]) -> str | None:
    """Return the SoupBinTCP session last served to ``accounts`` from ``store_dir``, or None.

    The session of the newest ``ouch-<user>-<session>.soupseq`` of theirs there. A restarted
    simulator continues that session, as an exchange keeps its session until its end-of-day: a
    restart after midnight UTC still replays what a client missed the day before (a new day's
    session would not know the old one's messages).
    """
    if store_dir is None or not store_dir.is_dir():
        return None
    users = {user.upper() for user, _ in accounts}
    newest: tuple[float, str] | None = None
    for path in store_dir.glob("ouch-*-*.soupseq"):
        user, _, session = path.stem[len("ouch-") :].partition("-")
        if user.upper() in users and session:
            kept = (path.stat().st_mtime, session)
            if newest is None or kept > newest:
                newest = kept
    return None if newest is None else newest[1]


def ouch_port(
    app: SimOuchApplication,
    accounts: Sequence[tuple[str, str]],
    *,
    session: str,
    clock: Clock,
    store_dir: Path | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    busy_poll_us: int = 0,
) -> SoupServerListener:
    """Return the listener of the simulator's OUCH port for ``accounts`` (user, password).

    ``session`` names the SoupBinTCP session (the day's: at most 10 characters). With
    ``store_dir`` each account's sequenced messages are kept in a file there
    (``ouch-<user>-<session>.soupseq``), so a restarted simulator replays what a client missed;
    without it they live in memory. ``busy_poll_us``: the listener's busy polling
    (:mod:`engine.busypoll`). Start the listener with ``await listener.start()``.
    """
    listener = SoupServerListener([], host, port, clock=clock, busy_poll_us=busy_poll_us)
    for user, password in accounts:
        store: SequencedStore = (
            MemorySequencedStore()
            if store_dir is None
            else FileSequencedStore(store_dir, f"ouch-{user}-{session}")
        )
        account = _AccountSession(app, user, password, session=session, store=store)
        listener.sessions[user.upper()] = account.soup
        app.attach(user, _ListenerStream(listener, account))
    return listener
