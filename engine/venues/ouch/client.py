# SPDX-License-Identifier: MIT
"""OUCH 5.0 sessions: the order-entry client an adapter drives, and the exchange side.

:class:`OuchClient` puts OUCH on a :class:`~engine.venues.ouch.soupbin.SoupClientSession`:
``enter_order(...)`` takes the next UserRefNum (persisted before it returns, so a restart never
reuses one) and returns the bytes to write; every Sequenced Data is decoded and handed to an
:class:`OuchHandler` with its sequence number, exactly once across restarts. Like the SoupBinTCP
sessions it is sans-IO: the transport (:mod:`engine.venues.ouch.link`) feeds it and writes what
it returns.

:class:`OuchServerSession` is the exchange side of one account (the simulator's, and the
tests'): inbound messages are decoded for an :class:`OuchServerHandler`, outbound ones are
stored for replay and framed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from engine.fastlog import get_log
from engine.venues.ouch.messages import (
    CHAR_BYTES,
    INBOUND,
    OUTBOUND,
    AccountQuery,
    CancelOrder,
    Decoder,
    Encoder,
    ModifyOrder,
    OuchDecodeError,
    OuchMessage,
    ReplaceOrder,
    TagValue,
    encode_options,
    enter_order_flags,
    pad_alpha,
)
from engine.venues.ouch.soupbin import (
    UNSEQUENCED_DATA,
    ClientStatus,
    NotLoggedIn,
    SoupClientHandler,
    SoupClientSession,
    SoupServerHandler,
    SoupServerSession,
)
from engine.venues.ouch.store import ClientState, SequencedStore

log = get_log(__name__)

_U = b"U"
#: An Enter Order in Unsequenced Data: packet length, 'U', 'O', UserRefNum, Side, Quantity,
#: Symbol, Price, TimeInForce..CrossType (5 bytes), ClOrdID, AppendageLength.
_ENTER_ORDER = struct.Struct(">HccIcI8sq5s14sH")


class OuchHandler:
    """What an :class:`OuchClient` tells its owner (override what you need)."""

    def on_message(self, msg: OuchMessage, seq: int, now_ns: int, payload: bytes = b"") -> None:
        """Handle an outbound OUCH message (Accepted, Executed ...) and its sequence number.

        ``payload`` is the message's bytes as they came (without the SoupBinTCP framing).
        """

    def on_bad_message(self, seq: int, payload: bytes, error: str, now_ns: int) -> None:
        """Handle Sequenced Data ``seq`` that is no OUCH message this decoder knows (logged)."""

    def on_login_accepted(self, session: str, sequence_number: int, now_ns: int) -> None:
        """Handle an accepted login; messages from ``sequence_number`` follow."""

    def on_login_rejected(self, reason: str, now_ns: int) -> None:
        """Handle a refused login."""

    def on_end_of_session(self, now_ns: int) -> None:
        """Handle the end of the session (sent by the exchange)."""

    def on_disconnected(self, now_ns: int) -> None:
        """Handle the loss of the connection."""


class OuchClient:
    """OUCH 5.0 order entry over SoupBinTCP (sans-IO).

    Parameters
    ----------
    username, password : str
        SoupBinTCP credentials.
    state : ClientState
        Next expected sequence number and next UserRefNum, persisted across restarts.
    handler : OuchHandler
        Receives the decoded outbound messages and the session's events.
    session : str
        Session to log into ("" for the remembered or current one).
    heartbeat_interval_ns, timeout_ns, login_timeout_ns : int
        SoupBinTCP timers (:class:`SoupClientSession`).
    """

    def __init__(
        self,
        username: str,
        password: str,
        *,
        state: ClientState,
        handler: OuchHandler,
        session: str = "",
        heartbeat_interval_ns: int = 1_000_000_000,
        timeout_ns: int = 15_000_000_000,
        login_timeout_ns: int = 10_000_000_000,
    ) -> None:
        self.handler = handler
        self.state = state
        self.soup = SoupClientSession(
            username,
            password,
            state=state,
            handler=_ClientEvents(self),
            session=session,
            heartbeat_interval_ns=heartbeat_interval_ns,
            timeout_ns=timeout_ns,
            login_timeout_ns=login_timeout_ns,
        )
        self._decoder = Decoder(OUTBOUND)
        self._encoder = Encoder()
        self._symbols: dict[str, bytes] = {}
        self._flags: dict[tuple[str, str, str, str, str], bytes] = {}

    # ------------------------------------------------------------------ transport side
    @property
    def wants_disconnect(self) -> bool:
        """Return True when the session wants the connection closed."""
        return self.soup.wants_disconnect

    @property
    def is_logged_in(self) -> bool:
        """Return True while logged in (orders can be sent)."""
        return self.soup.status is ClientStatus.LOGGED_IN

    @property
    def status(self) -> ClientStatus:
        """Return the SoupBinTCP status."""
        return self.soup.status

    def on_connected(self, now_ns: int) -> bytes:
        """Return the Login Request for a new connection."""
        return self.soup.on_connected(now_ns)

    def on_data(self, data: bytes, now_ns: int) -> bytes:
        """Take received bytes (messages go to the handler); return what to send."""
        return self.soup.on_data(data, now_ns)

    def on_timer(self, now_ns: int) -> bytes:
        """Drive heartbeats and timeouts."""
        return self.soup.on_timer(now_ns)

    def logout(self, now_ns: int) -> bytes:
        """Return the Logout Request."""
        return self.soup.logout(now_ns)

    def on_disconnected(self, now_ns: int) -> None:
        """Handle the loss of the connection."""
        self.soup.on_disconnected(now_ns)

    # ------------------------------------------------------------------ orders
    def _check(self) -> None:
        if self.soup.status is not ClientStatus.LOGGED_IN:
            raise NotLoggedIn(f"OUCH session of {self.soup.username} is {self.soup.status.value}")

    def enter_order(
        self,
        *,
        side: str,
        quantity: int,
        symbol: str,
        price: int,
        now_ns: int,
        time_in_force: str = "0",
        display: str = "Y",
        capacity: str = "A",
        inter_market_sweep_eligibility: str = "N",
        cross_type: str = "N",
        cl_ord_id: str = "",
        appendage: bytes | Sequence[TagValue] = b"",
        user_ref_num: int | None = None,
    ) -> tuple[int, bytes]:
        """Return ``(UserRefNum, packet)``: an Enter Order in Unsequenced Data, to write.

        The UserRefNum is on disk before this returns (``user_ref_num``: one the caller took
        from the state already, e.g. as the order's ClOrdID). ``price`` is in OUCH's integer form (4
        implied decimals; :class:`~engine.venues.ouch.messages.PriceScale` maps ticks).

        Raises
        ------
        NotLoggedIn
            If the session is not logged in (no UserRefNum is used).
        ValueError
            If a field does not fit (symbol over 8 or ClOrdID over 14 characters ...).
        """
        if self.soup.status is not ClientStatus.LOGGED_IN:
            self._check()
        sym = self._symbols.get(symbol)
        if sym is None:
            sym = self._symbols[symbol] = pad_alpha("Symbol", symbol, 8)
        key = (time_in_force, display, capacity, inter_market_sweep_eligibility, cross_type)
        flags = self._flags.get(key)
        if flags is None:
            flags = self._flags[key] = enter_order_flags(*key)
        cid = cl_ord_id.encode("ascii")
        if len(cid) > 14:
            raise ValueError(f"Enter Order: ClOrdID {cl_ord_id!r} is longer than 14 characters")
        side_b = CHAR_BYTES.get(side)
        if not (0 <= quantity < 1 << 32 and -(1 << 63) <= price < 1 << 63) or side_b is None:
            raise ValueError(f"Enter Order: side {side!r}, quantity {quantity} or price {price}")
        app = b""
        if appendage:
            app = appendage if isinstance(appendage, bytes) else encode_options(tuple(appendage))
        ref = self.state.take_user_ref_num() if user_ref_num is None else user_ref_num
        self.soup.sent(now_ns)
        # One struct call (0.14 µs; a numba kernel's call took 0.29 and a copy out of its
        # buffer); tests hold it to the generic encoder's bytes.
        return ref, _ENTER_ORDER.pack(
            48 + len(app), b"U", b"O", ref, side_b, quantity, sym, price, flags,
            cid.ljust(14), len(app),
        ) + app  # fmt: skip

    def replace_order(
        self,
        *,
        orig_user_ref_num: int,
        quantity: int,
        price: int,
        now_ns: int,
        time_in_force: str = "0",
        display: str = "Y",
        inter_market_sweep_eligibility: str = "N",
        cl_ord_id: str = "",
        appendage: Sequence[TagValue] = (),
    ) -> tuple[int, bytes]:
        """Return ``(new UserRefNum, packet)``: a Replace Order of ``orig_user_ref_num``."""
        self._check()
        ref = self.state.take_user_ref_num()
        msg = ReplaceOrder(
            orig_user_ref_num=orig_user_ref_num,
            user_ref_num=ref,
            quantity=quantity,
            price=price,
            time_in_force=time_in_force,
            display=display,
            inter_market_sweep_eligibility=inter_market_sweep_eligibility,
            cl_ord_id=cl_ord_id,
            appendage=tuple(appendage),
        )
        return ref, self.send(msg, now_ns)

    def cancel_order(self, user_ref_num: int, *, now_ns: int, quantity: int = 0) -> bytes:
        """Return a Cancel Order packet: reduce ``user_ref_num`` to ``quantity`` (0: cancel)."""
        return self.send(CancelOrder(user_ref_num=user_ref_num, quantity=quantity), now_ns)

    def modify_order(self, user_ref_num: int, *, side: str, quantity: int, now_ns: int) -> bytes:
        """Return a Modify Order packet (new side, or a smaller quantity)."""
        return self.send(
            ModifyOrder(user_ref_num=user_ref_num, side=side, quantity=quantity), now_ns
        )

    def account_query(self, now_ns: int) -> bytes:
        """Return an Account Query packet (answered with the next expected UserRefNum)."""
        return self.send(AccountQuery(), now_ns)

    def send(self, msg: OuchMessage, now_ns: int) -> bytes:
        """Return any inbound OUCH message as an Unsequenced Data packet, to write."""
        self._check()
        if msg.DIRECTION != INBOUND:
            raise ValueError(f"{msg.NAME} is sent by the exchange, not the client")
        self.soup.sent(now_ns)
        return self._encoder.encode(msg, _U)

    def _on_sequenced(self, seq: int, payload: bytes, now_ns: int) -> None:
        try:
            msg = self._decoder.decode(payload)
        except OuchDecodeError as e:
            log.error("OUCH message %d: %s", seq, e)
            self.handler.on_bad_message(seq, payload, str(e), now_ns)
            return
        self.handler.on_message(msg, seq, now_ns, payload)


class _ClientEvents(SoupClientHandler):
    """Forward a SoupBinTCP client session's events to an :class:`OuchClient`'s handler."""

    def __init__(self, client: OuchClient) -> None:
        self.client = client
        # Every Sequenced Data goes straight to the client (one call fewer per message).
        self.on_sequenced = client._on_sequenced  # type: ignore[method-assign]

    def on_sequenced(self, seq: int, payload: bytes, now_ns: int) -> None:
        self.client._on_sequenced(seq, payload, now_ns)

    def on_login_accepted(self, session: str, sequence_number: int, now_ns: int) -> None:
        self.client.handler.on_login_accepted(session, sequence_number, now_ns)

    def on_login_rejected(self, reason: str, now_ns: int) -> None:
        self.client.handler.on_login_rejected(reason, now_ns)

    def on_end_of_session(self, now_ns: int) -> None:
        self.client.handler.on_end_of_session(now_ns)

    def on_disconnected(self, now_ns: int) -> None:
        self.client.handler.on_disconnected(now_ns)


class OuchServerHandler:
    """What an :class:`OuchServerSession` tells its owner (the exchange's matching side)."""

    def on_message(self, msg: OuchMessage, now_ns: int) -> bytes:
        """Handle an inbound message; return bytes to write (``OuchServerSession.send``)."""
        return b""

    def on_login(self, username: str, sequence_number: int, now_ns: int) -> None:
        """Handle a client's login."""


class OuchServerSession(SoupServerHandler):
    """The exchange side of one OUCH account over a :class:`SoupServerSession` (sans-IO).

    Parameters
    ----------
    username, password : str
        The account's credentials.
    session : str
        SoupBinTCP session name.
    store : SequencedStore
        Outbound messages for replay.
    handler : OuchServerHandler
        Receives decoded inbound messages.
    heartbeat_interval_ns, timeout_ns : int
        SoupBinTCP timers.
    """

    def __init__(
        self,
        username: str,
        password: str,
        *,
        session: str,
        store: SequencedStore,
        handler: OuchServerHandler,
        heartbeat_interval_ns: int = 1_000_000_000,
        timeout_ns: int = 15_000_000_000,
    ) -> None:
        self.handler = handler
        self.soup = SoupServerSession(
            username,
            password,
            session=session,
            store=store,
            handler=self,
            heartbeat_interval_ns=heartbeat_interval_ns,
            timeout_ns=timeout_ns,
        )
        self._decoder = Decoder(INBOUND)
        self._encoder = Encoder()
        #: Inbound payloads that did not decode (logged and dropped).
        self.bad_messages = 0

    def send(self, msg: OuchMessage, now_ns: int) -> bytes:
        """Store ``msg`` as the next Sequenced Data; return the packet to write (or b"")."""
        if msg.DIRECTION != OUTBOUND:
            raise ValueError(f"{msg.NAME} is sent by the client, not the exchange")
        return self.soup.send_sequenced(self._encoder.encode(msg), now_ns)

    def on_unsequenced(self, payload: bytes, now_ns: int) -> bytes:
        """Decode an inbound message and hand it to the handler; return its reply bytes."""
        try:
            msg = self._decoder.decode(payload)
        except OuchDecodeError as e:
            self.bad_messages += 1
            log.warning("OUCH %s: %s", self.soup.username, e)
            return b""
        return self.handler.on_message(msg, now_ns)

    def on_login(self, username: str, sequence_number: int, now_ns: int) -> None:
        """Pass the login on."""
        self.handler.on_login(username, sequence_number, now_ns)


__all__ = [
    "UNSEQUENCED_DATA",
    "NotLoggedIn",
    "OuchClient",
    "OuchHandler",
    "OuchServerHandler",
    "OuchServerSession",
]
