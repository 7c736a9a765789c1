# SPDX-License-Identifier: MIT
"""The engine's OUCH session to one venue: the client, its link, and the venue adapter joined.

:class:`OuchSession` owns an :class:`OuchClient` (the sans-IO OUCH/SoupBinTCP client, with its
state on disk) and the :class:`SoupClientLink` that connects it, and is both the
:class:`engine.venues.ouch.adapter.OrderEntry` its :class:`OuchVenue` sends through and the
:class:`OuchHandler` the client reports to: sequenced messages go to the venue adapter, login
and disconnection become the venue's :class:`engine.events.VenueLinkChanged`, and every
message, either way, a :class:`engine.events.VenueMessageSeen` for the inspector.
"""

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

from engine.clock import Clock
from engine.commands import Command, CommandResult
from engine.core import Engine
from engine.events import Event, VenueLinkChanged, VenueMessageSeen
from engine.fastlog import get_log
from engine.venues.ouch.adapter import PREFIX, OuchVenue
from engine.venues.ouch.client import OuchClient, OuchHandler
from engine.venues.ouch.link import SoupClientLink
from engine.venues.ouch.messages import (
    AccountQuery,
    AccountQueryResponse,
    EnterOrder,
    OuchMessage,
)
from engine.venues.ouch.store import (
    ENGINE_USER_REF_BLOCK,
    ClientState,
    FileClientState,
    MemoryClientState,
)

log = get_log(__name__)

#: ``barrier(fn)`` calls ``fn`` (on any thread) once what the process recorded before is safe
#: (the journal's ``after_written``); raises if it never will (the journal is closed).
WriteBarrier = Callable[[Callable[[], object]], None]


def message_seen(
    message: OuchMessage, raw: bytes, *, link: str, outbound: bool, seq: int, now_ns: int
) -> VenueMessageSeen:
    """Return the inspector's event of one OUCH message, ``raw`` its bytes on the wire.

    The fields are left to whoever shows them (:func:`engine.venues.ouch.codes.describe`,
    through :func:`engine.venues.seen.message_fields`): naming and explaining every field of every
    message cost the trading loop ~60 µs a message, for a console that may not be attached.
    """
    return _seen(
        type(message),
        raw,
        getattr(message, "user_ref_num", None),
        getattr(message, "orig_user_ref_num", None),
        link=link,
        outbound=outbound,
        seq=seq,
        now_ns=now_ns,
    )


def _seen(
    kind: type[OuchMessage],
    raw: bytes,
    ref: int | None,
    orig: int | None,
    *,
    link: str,
    outbound: bool,
    seq: int,
    now_ns: int,
) -> VenueMessageSeen:
    # The event of a message of type ``kind`` about UserRefNum ``ref`` (replacing ``orig``).
    return VenueMessageSeen(
        ts_event=now_ns,
        session_id=f"OUCH {link}",
        protocol="OUCH",
        outbound=outbound,
        msg_type=f"{kind.TYPE.decode()} {kind.NAME}",
        seq_num=seq,
        raw=raw,
        fields=(),
        client_order_id=f"{PREFIX}{ref}" if ref is not None else "",
        orig_client_order_id=f"{PREFIX}{orig}" if orig is not None else "",
        ts_created=now_ns,
        ts_wire=now_ns,
    )


class WriteAheadState:
    """A :class:`ClientState` whose next expected sequence number waits for the journal.

    As the FIX file store's write barrier (``engine.fix.store``): a sequenced message counts
    as taken on disk only once ``barrier`` (the journal's ``after_written``) says everything it
    caused is written, so a ``kill -9`` at any instant leaves the state at or behind the
    journal and the venue replays the rest. What this process has taken is known at once (the
    session asks for the next message after it when it logs in again); the highest number it
    took is also written at once to ``<prefix>.taken``, so that after a restart the messages
    up to it are marked as possibly applied already (``resent``), as FIX's PossDupFlag: the
    order manager ignores an execution it has, and old news quietly.

    Parameters
    ----------
    inner : ClientState
        The state file (``FileClientState``).
    barrier : WriteBarrier
        ``barrier(fn)`` calls ``fn`` (on any thread) once what was recorded before is written.
    taken_path : Path | None
        Where the highest number taken is written at once (``None``: nowhere).
    """

    def __init__(
        self, inner: ClientState, barrier: WriteBarrier, taken_path: Path | None = None
    ) -> None:
        self.inner = inner
        self.barrier = barrier
        self._lock = threading.Lock()  # the barrier writes from the journal's thread
        self._closed = False  # a barrier call after close writes nothing
        self._next = inner.next_expected_seq
        self._fd = -1
        #: Messages below this number may have been applied before a restart.
        self.replayed_below = self._next
        if taken_path is not None:
            self._fd = os.open(taken_path, os.O_RDWR | os.O_CREAT, 0o644)
            raw = os.pread(self._fd, 8, 0)
            if len(raw) == 8:
                self.replayed_below = max(self._next, int.from_bytes(raw, "big") + 1)

    @property
    def next_expected_seq(self) -> int:
        """Return the next sequence number this process expects (taken in memory)."""
        return self._next

    @property
    def next_user_ref_num(self) -> int:
        """Return the next UserRefNum."""
        return self.inner.next_user_ref_num

    @property
    def session(self) -> str:
        """Return the session logged into last."""
        return self.inner.session

    def set_next_expected_seq(self, value: int) -> None:
        """Take every message before ``value``; on disk once the journal has what they caused."""
        self._next = value
        if self._fd >= 0:
            os.pwrite(self._fd, (value - 1).to_bytes(8, "big"), 0)

        def durable() -> None:
            with self._lock:
                if not self._closed and value > self.inner.next_expected_seq:
                    self.inner.set_next_expected_seq(value)

        try:
            self.barrier(durable)
        except Exception:  # the journal is closed: nothing after it is written; keep it
            log.warning("OUCH state: the journal is closed; next expected %d kept in memory", value)

    def take_user_ref_num(self) -> int:
        """Return the next UserRefNum (on disk before it returns)."""
        with self._lock:
            return self.inner.take_user_ref_num()

    def set_next_user_ref_num(self, value: int) -> None:
        """Set the next UserRefNum."""
        with self._lock:
            self.inner.set_next_user_ref_num(value)

    def set_session(self, session: str) -> None:
        """Record the session logged into."""
        with self._lock:
            self.inner.set_session(session)

    def reset(self, session: str = "") -> None:
        """Start afresh (a new session)."""
        with self._lock:
            self.inner.reset(session)
            self._next = self.replayed_below = self.inner.next_expected_seq
        if self._fd >= 0:
            os.pwrite(self._fd, (0).to_bytes(8, "big"), 0)

    def close(self) -> None:
        """Close the files (the journal may still call back: nothing more is written)."""
        with self._lock:
            self._closed = True
            self.inner.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def engine_state(
    store_dir: Path | None, prefix: str, barrier: WriteBarrier | None = None, *, day: str = ""
) -> ClientState:
    """Return the engine's state of one OUCH account, as the demo and configurations keep it.

    In memory without ``store_dir``; else ``<prefix>.ouchstate`` there, UserRefNums reserved
    :data:`ENGINE_USER_REF_BLOCK` at a time, started afresh when it holds another session than
    ``day`` (yesterday's), and behind the journal with ``barrier`` (:class:`WriteAheadState`).
    """
    if store_dir is None:
        return MemoryClientState()
    store_dir.mkdir(parents=True, exist_ok=True)
    state: ClientState = FileClientState(store_dir, prefix, user_ref_block=ENGINE_USER_REF_BLOCK)
    if day and state.session not in ("", day):
        state.reset(day)
    if barrier is not None:
        state = WriteAheadState(state, barrier, store_dir / f"{prefix}.taken")
    return state


class OuchSession(OuchHandler):
    """One OUCH account at one venue, logged in and kept so.

    Parameters
    ----------
    venue : OuchVenue
        The adapter orders go through; bound to this session here.
    username, password : str
        SoupBinTCP credentials.
    host, port : str, int
        Where the venue's OUCH port listens.
    state : ClientState
        The next expected sequence number and UserRefNum (``FileClientState`` in production).
    clock : Clock
        Time of messages and timers.
    session : str
        SoupBinTCP session to log into ("" for the current one).
    publish : Callable | None
        Where every message goes as a :class:`VenueMessageSeen` (the engine bus, for the
        Monitor's message inspector); ``None`` to keep nothing.
    connect_on_start : bool
        Connect when the engine starts the component; ``False`` when the owner starts
        ``link`` itself (after the venue's port listens, in the demo).
    busy_poll_us : int
        The link's busy polling (``[[ouch]] busy_poll_us``; :mod:`engine.busypoll`).
    """

    def __init__(
        self,
        venue: OuchVenue,
        *,
        username: str,
        password: str,
        host: str,
        port: int,
        state: ClientState,
        clock: Clock,
        session: str = "",
        publish: Callable[[Event], object] | None = None,
        connect_on_start: bool = True,
        busy_poll_us: int = 0,
    ) -> None:
        self.venue = venue
        self.username = username
        self.clock = clock
        self.state = state
        self.publish = publish
        self.client = OuchClient(username, password, state=state, handler=self, session=session)
        self.link = SoupClientLink(self.client, host, port, clock=clock, busy_poll_us=busy_poll_us)
        self.connect_on_start = connect_on_start
        #: Messages sent to the venue (a lockstep test compares it with what the venue took).
        self.requests_sent = 0
        self._up = False
        self._ready = False  # logged in and the venue's next UserRefNum known
        #: Set while orders can go out (see :attr:`logged_in`).
        self.ready = asyncio.Event()
        self._last: VenueLinkChanged | None = None
        self._task: asyncio.Task[None] | None = None
        venue.bind(self)

    @property
    def detail(self) -> str:
        """Return the link's name for displays: ``user@host:port``."""
        return f"{self.username}@{self.link.host}:{self.link.port}"

    # ------------------------------------------------------------------ OrderEntry
    @property
    def logged_in(self) -> bool:
        """Return whether orders sent now reach the venue (logged in, UserRefNum agreed)."""
        return self._ready and self.client.is_logged_in and self.link.connected

    def take_user_ref_num(self) -> int:
        """Return the next UserRefNum (on disk before it is returned)."""
        return self.state.take_user_ref_num()

    def send(self, message: OuchMessage) -> None:
        """Write ``message`` as Unsequenced Data."""
        now = self.clock.now_ns()
        data = self.client.send(message, now)
        self.link.send(data)
        self.requests_sent += 1
        if self.publish is not None:
            self.publish(
                message_seen(message, data[3:], link=self.detail, outbound=True, seq=0, now_ns=now)
            )

    def enter_order(
        self,
        user_ref_num: int,
        *,
        side: str,
        quantity: int,
        symbol: str,
        price: int,
        time_in_force: str,
        cl_ord_id: str,
        appendage: bytes,
    ) -> None:
        """Write an Enter Order through the client's compiled fast path."""
        now = self.clock.now_ns()
        _, data = self.client.enter_order(
            side=side,
            quantity=quantity,
            symbol=symbol,
            price=price,
            now_ns=now,
            time_in_force=time_in_force,
            cl_ord_id=cl_ord_id,
            appendage=appendage,
            user_ref_num=user_ref_num,
        )
        self.link.send(data)
        self.requests_sent += 1
        if self.publish is not None:  # what went on the wire (the inspector decodes it)
            self.publish(
                _seen(
                    EnterOrder,
                    data[3:],
                    user_ref_num,
                    None,
                    link=self.detail,
                    outbound=True,
                    seq=0,
                    now_ns=now,
                )
            )

    # ------------------------------------------------------------------ OuchHandler
    def on_message(self, msg: OuchMessage, seq: int, now_ns: int, payload: bytes = b"") -> None:
        """Hand a sequenced message to the venue adapter."""
        if self.publish is not None:
            self.publish(
                message_seen(
                    msg,
                    payload or msg.encode(),
                    link=self.detail,
                    outbound=False,
                    seq=seq,
                    now_ns=now_ns,
                )
            )
        if isinstance(msg, AccountQueryResponse):
            self._agree(msg.next_user_ref_num)
            return
        state = self.state
        resent = isinstance(state, WriteAheadState) and seq < state.replayed_below
        self.venue.on_message(msg, resent=resent)

    def _agree(self, venue_next: int) -> None:
        # The venue's next expected UserRefNum: another client of the account (or a state
        # file lost) may have used numbers this one never took; go past them.
        ours = self.state.next_user_ref_num
        if venue_next > ours:
            log.warning(
                "OUCH %s: the venue expects UserRefNum %d, this session had %d; "
                "going on from the venue's",
                self.detail,
                venue_next,
                ours,
            )
            self.state.set_next_user_ref_num(venue_next)
        if not self._ready:
            self._ready = True
            self.ready.set()
            self._changed(True, "Logged in")

    def on_bad_message(self, seq: int, payload: bytes, error: str, now_ns: int) -> None:
        """Log a message that did not decode (the session goes on)."""
        log.error(
            "OUCH %s: message %d does not decode (%s): %s",
            self.detail,
            seq,
            error,
            payload[:64].hex(),
        )

    def on_login_accepted(self, session: str, sequence_number: int, now_ns: int) -> None:
        """Tell the engine the link is up (the desk reconciles)."""
        log.info(
            "OUCH %s: logged in to session %r at sequence number %d",
            self.detail,
            session,
            sequence_number,
        )
        # Orders wait for the venue's next expected UserRefNum (Account Query).
        self._ready = False
        self.ready.clear()
        self.send(AccountQuery())

    def on_login_rejected(self, reason: str, now_ns: int) -> None:
        """Say why the venue refused the login (the link stops retrying)."""
        log.error("OUCH %s: login rejected: %s", self.detail, reason)
        self._changed(False, f"Login rejected: {reason}")

    def on_end_of_session(self, now_ns: int) -> None:
        """Say the venue ended the session for the day."""
        log.warning("OUCH %s: end of session", self.detail)
        self._changed(False, "End of session")

    def on_disconnected(self, now_ns: int) -> None:
        """Say the connection went away (the link reconnects)."""
        self._ready = False
        self.ready.clear()
        if self._up:
            log.warning("OUCH %s: disconnected", self.detail)
            self._changed(False, "Disconnected")

    def _changed(self, up: bool, state: str) -> None:
        self._up = up
        self._last = self.venue.link_changed(
            up,
            detail=self.detail,
            state=state,
            next_out=self.state.next_user_ref_num,
            next_in=self.state.next_expected_seq,
        )

    async def wait_ready(self, within_s: float = 10.0) -> None:
        """Wait until orders can go out (raises ``TimeoutError`` after ``within_s``)."""
        await asyncio.wait_for(self.ready.wait(), within_s)

    # ------------------------------------------------------------------ component
    @property
    def name(self) -> str:
        """Return the component's name for logs."""
        return f"ouch {self.detail}"

    def start(self, engine: Engine) -> None:
        """Start connecting (the link logs in and reconnects by itself)."""
        if self.connect_on_start:
            self._task = asyncio.get_running_loop().create_task(self.link.start(), name=self.name)

    async def stop(self) -> None:
        """Log out and close the link, then the state file."""
        await self.link.stop(logout=True)
        self.state.close()

    def handle(self, command: Command) -> CommandResult | None:
        """Answer nothing (the link logs in and out by itself)."""
        return None

    def state_events(self) -> list[Event]:
        """Return the link's last state, for a console that attaches later."""
        return [self._last] if self._last is not None else []
