# SPDX-License-Identifier: MIT
"""Facts out of the engine: frozen, slotted, keyword-only dataclasses.

Every event carries ``ts_event``, the engine clock's time in ns since the epoch (UTC) at which
the fact became true. The engine numbers every event it publishes; a client sees them as
:class:`EventRecord` (sequence number + event) in strictly increasing order.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.enums import (
    AlertLevel,
    EngineState,
    KillLevel,
    OrdStatus,
    OrdType,
    SessionState,
    Side,
    StrategyState,
    TimeInForce,
)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of all engine events."""

    ts_event: int  # ns since the epoch, engine clock


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineStateChanged(Event):
    """The engine moved to another lifecycle state."""

    engine_id: str
    state: EngineState
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineStartProgress(Event):
    """What a starting engine is doing now: replaying its journal, compiling kernels, ...

    Published while the engine is set up and while it is ``STARTING``; each one replaces the
    previous stage, and ``EngineStateChanged`` to ``RUNNING`` (or ``FAILED``) ends them.
    ``done`` of ``total`` counts ``unit`` ("bytes" for a journal replay); ``total`` is 0 when
    the stage cannot say how far it is.
    """

    engine_id: str
    stage: str  # "replaying journal", "compiling kernels", "starting fix"
    done: int = 0
    total: int = 0
    unit: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineHeartbeat(Event):
    """The engine's periodic proof of life, carrying its clock.

    Published every ``interval_ns`` by the engine loop; a client that stops receiving it knows
    the engine (or the link to it) is stalled.
    """

    engine_id: str
    counter: int  # heartbeats since start, from 1
    uptime_ns: int  # since the engine started, monotonic
    interval_ns: int
    loop_lag_ns: int  # how late this heartbeat ran against its schedule


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStatusChanged(Event):
    """A FIX session changed state.

    ``session_id`` is the QuickFIX-style id, e.g. ``FIX.4.4:CLIENT->EXCHANGE``.
    """

    session_id: str
    state: SessionState
    next_sender_seq_num: int  # next MsgSeqNum <34> we send
    next_target_seq_num: int  # next MsgSeqNum <34> we expect
    text: str = ""
    #: The data dictionary file the engine checks the session against, as configured
    #: (DataDictionary, or TransportDataDictionary under FIXT.1.1), resolved to an absolute
    #: path; ``""``: the dictionary shipped for its version, or validation off.
    dictionary: str = ""
    #: The AppDataDictionary file under FIXT.1.1 (``""``: the shipped one of its ApplVerID).
    app_dictionary: str = ""
    #: The ``.cfg`` file the session was built from, absolute (``""``: built in code); the
    #: Enterprise Manager opens it when no session file is open.
    settings_file: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class VenueLinkChanged(Event):
    """A venue's order-entry link came up or went down, whatever the venue's protocol.

    The trading desk asks the venue for the status of its working orders when the link comes
    back up; the protocol's own events carry the detail (FIX: ``SessionStatusChanged``).
    """

    venue: str  # the venue's name (``engine.oms.venue.Venue.name``)
    protocol: str  # "FIX", "OUCH", …
    up: bool
    detail: str = ""  # the protocol's words for the link (FIX: the session id)
    state: str = ""  # the link's state in the protocol's words ("Logged on", "Login sent", …)
    #: Sequence numbers where the protocol has them (0: none): the next one the engine sends
    #: (OUCH: its next UserRefNum) and the next one it expects from the venue.
    next_out: int = 0
    next_in: int = 0


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event as a client sees it: its sequence number in the engine's stream and the event.

    Sequence numbers start at 1 and have no gaps within one engine run.
    """

    seq: int
    event: Event


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderView:
    """An order as it stands after a change: the row a blotter shows.

    Prices are in ticks and quantities in lots; ``avg_px_ticks`` is a float because an average
    of fills falls between ticks.
    """

    order_id: int  # engine-wide, stable across cancel/replace chains
    client_order_id: str  # ClOrdID <11> currently in force
    orig_client_order_ids: tuple[str, ...]  # OrigClOrdID <41> chain, oldest first
    venue_order_id: str  # OrderID <37>, "" before the venue acknowledged
    strategy_id: int
    symbol: str  # Symbol <55>
    side: Side
    ord_type: OrdType
    time_in_force: TimeInForce
    qty_lots: int  # OrderQty <38>
    px_ticks: int  # Price <44>, 0 for market orders
    status: OrdStatus
    cum_qty_lots: int  # CumQty <14>
    leaves_qty_lots: int  # LeavesQty <151>
    avg_px_ticks: float  # AvgPx <6>, in ticks
    pending: str  # "", "cancel" or "replace": a request the venue has not answered yet
    text: str  # Text <58> of the last report, or why the engine refused the order
    ts_created: int
    ts_sent: int  # 0 if never sent
    ts_acked: int  # first acknowledgement from the venue, 0 before
    ts_last: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderChanged(Event):
    """An order was created, sent, acknowledged, filled, replaced, canceled or rejected."""

    order: OrderView
    change: str  # short reason: "sent", "ack", "fill", "cancel", "refused: ..."


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderFilled(Event):
    """An order received a full or partial fill.

    Corresponds to an ExecutionReport <8> with ExecType <150> = F (Trade).
    """

    order_id: int
    client_order_id: str  # ClOrdID <11>
    venue_order_id: str  # OrderID <37>
    exec_id: str  # ExecID <17>
    strategy_id: int
    symbol: str
    side: Side
    last_px_ticks: int  # LastPx <31>, in ticks
    last_qty_lots: int  # LastQty <32>, in lots
    leaves_qty_lots: int  # LeavesQty <151>, in lots
    ts_recv: int  # local receive time, ns


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert(Event):
    """Something a trader must see: an unknown execution, a business reject, a refused rule.

    Alerts are aggregated per cause on their way into the engine's stream
    (:class:`engine.alerts.AlertAggregator`): the first of a cause passes at once, repeats are
    counted and published at most once a second as an update of the same aggregate — ``count``
    occurrences from ``ts_first`` to ``ts_event``, the text of the latest one — so a storm
    leaves one line on screen and one journal record per update, not one per repeat.
    """

    level: AlertLevel
    source: str  # "oms", "risk", "fix", a strategy name
    text: str
    #: What makes repeats one alert (with ``source``); "" groups texts equal but for numbers.
    cause: str = ""
    count: int = 1  # occurrences in this aggregate so far
    ts_first: int = 0  # ts_event of the first occurrence (0: this is the first)
    #: Engine sequence number of the aggregate's first alert, the same in every update
    #: (0 for an alert that did not go through the engine's stream).
    aggregate: int = 0


#: ``extra=`` of a log call whose text is also published as an :class:`Alert` (the log feed
#: then leaves it out of the event stream, so the console shows it once).
ALERTED: dict[str, object] = {"qw_alerted": True}


@dataclass(frozen=True, slots=True, kw_only=True)
class KillSwitchChanged(Event):
    """The kill switch was engaged or released (every use is journaled)."""

    level: KillLevel
    actor: str  # who pulled it: "console", a user name, "risk"
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskLimitsChanged(Event):
    """The pre-trade limits one scope of the engine enforces from now on (all of them).

    Published at start for every scope with limits, on every change (``SetRiskLimits``) and
    in the snapshot; journaled, and restored after a restart. The scope is engine-wide
    (``strategy_id`` ``None`` and ``symbol`` ""), one strategy's (``strategy_id``; 0 is manual
    orders) or one instrument's (``symbol``: its own price band). ``None`` is a limit that is
    off. ``change`` says what moved, e.g. ``"max_open_orders 100 -> 50; price_band_pct 5 ->
    off"``, or ``"start"``, ``"restored"``, ``"snapshot"``. ``engine_id`` tells the scopes of
    several engines attached to one console apart.
    """

    engine_id: str
    strategy_id: int | None
    symbol: str
    max_order_qty_lots: int | None
    max_order_notional: float | None
    max_position_lots: int | None
    price_band_ticks: int | None
    price_band_pct: float | None
    max_open_orders: int | None
    max_orders_per_second: int | None
    actor: str  # "config" at start, else who sent SetRiskLimits
    change: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyStatusChanged(Event):
    """A strategy started, paused, resumed, stopped or took new parameters."""

    strategy_id: int
    name: str
    state: StrategyState
    parameters: tuple[tuple[str, object], ...]  # (name, value) in declaration order
    #: "started", "paused", "resumed", "stopped", "parameters", "failed: ...", or
    #: "halted by kill switch <LEVEL>" with ``state`` HALTED
    change: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyAdded(Event):
    """A strategy was loaded into the running engine (``AddStrategy``), not from its config.

    Journaled, so a restart the same day loads it again: ``class_path`` as given (a file,
    ``module:Class`` or a built-in name), with its symbols and the parameters it was given.
    """

    strategy_id: int
    name: str
    class_path: str
    symbols: tuple[str, ...]
    parameters: tuple[tuple[str, object], ...]
    autostart: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class BookUpdated(Event):
    """The book of an instrument changed; carries the top of book for displays.

    Strategies read the whole book through their context; this event says *when*.
    """

    symbol: str
    bid_px_ticks: int  # 0 with bid_qty_lots == 0 when the side is empty
    bid_qty_lots: int
    ask_px_ticks: int
    ask_qty_lots: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TradeReported(Event):
    """A trade printed on the market (anyone's, ours included)."""

    symbol: str
    px_ticks: int
    qty_lots: int
    aggressor: Side | None  # side of the taker, when the venue says


@dataclass(frozen=True, slots=True, kw_only=True)
class InstrumentAdded(Event):
    """An instrument became tradable in the engine; carries what displays need to format it."""

    symbol: str  # Symbol <55>
    tick_size: str  # decimal text, e.g. "0.25": price = px_ticks * tick_size
    lot_size: str  # decimal text: quantity = qty_lots * lot_size
    multiplier: str  # contract multiplier (currency per price point per unit)
    currency: str
    venue: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PositionChanged(Event):
    """Position and P&L of one strategy in one instrument after a fill or a new mark.

    P&L is average-cost, in the instrument's currency; ``unrealized_pnl`` is at ``mark_px``.
    """

    strategy_id: int
    symbol: str
    qty_lots: int  # signed: > 0 long
    avg_px_ticks: float  # average entry price of the open position, ticks (0.0 when flat)
    mark_px_ticks: int  # mark used for the unrealized P&L (0 when unknown)
    realized_pnl: float
    unrealized_pnl: float
    fees: float


@dataclass(frozen=True, slots=True, kw_only=True)
class FixMessageSeen(Event):
    """A FIX message went in or out of a session, with its three timestamps.

    ``ts_event`` is when the engine handled it; ``ts_created`` when it was built (outbound)
    or when the peer sent it (inbound: its SendingTime <52>, on the peer's clock, or the read
    time when that is missing or malformed); ``ts_wire`` when it was written to or read from
    the socket.
    """

    session_id: str  # e.g. "FIX.4.4:CLIENT->EXCHANGE"
    outbound: bool
    msg_type: str  # MsgType <35>
    seq_num: int  # MsgSeqNum <34>
    raw: bytes  # the whole message, SOH-separated
    ts_created: int
    ts_wire: int


@dataclass(frozen=True, slots=True, kw_only=True)
class VenueMessageSeen(Event):
    """A message of a venue protocol other than FIX went in or out (OUCH).

    ``raw`` is the message's bytes; its fields (the protocol's names, values as text, what a
    coded value means) are decoded from them where they are shown,
    :func:`engine.venues.seen.message_fields` (the engine leaves ``fields`` empty; events
    journaled before 4 Dec 2026 carry them);
    ``raw`` the message's bytes (without the transport's framing); ``client_order_id`` the
    engine's ClOrdID the message is about ("" if none), ``orig_client_order_id`` the one it
    replaces. ``ts_created`` / ``ts_wire`` as in :class:`FixMessageSeen` (a protocol without
    a sending time stamps an inbound message with its read time).
    """

    session_id: str  # the link, e.g. "OUCH QWC1@127.0.0.1:5002"
    protocol: str  # "OUCH"
    outbound: bool
    msg_type: str  # the protocol's type and name, e.g. "O EnterOrder"
    seq_num: int  # the transport's sequence number (0 for unsequenced messages)
    raw: bytes
    fields: tuple[tuple[str, str, str], ...]
    client_order_id: str = ""
    orig_client_order_id: str = ""
    ts_created: int = 0
    ts_wire: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSnapshot:
    """The engine's state at one point of its event stream.

    A client applies events with ``seq > snapshot.seq`` on top of it.
    """

    seq: int  # last event included in this snapshot
    engine_id: str
    state: EngineState
    ts_started: int  # ns since the epoch, 0 before start
    ts_snapshot: int  # ns since the epoch
    heartbeat_interval_ns: int
    heartbeats: int
    last_heartbeat: EngineHeartbeat | None
    recent: tuple[EventRecord, ...]  # the last few events, oldest first
    state_events: tuple[Event, ...] = ()  # current state of every component, as events


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnQuote:
    """One own working order as the depth ladder shows it."""

    order_id: int
    side: Side
    px_ticks: int
    leaves_qty_lots: int
    status: OrdStatus
    pending: str  # "", "cancel" or "replace"
    ahead_lots: float | None  # estimated lots in front of it in the queue; None if unknown


@dataclass(frozen=True, slots=True, kw_only=True)
class DepthChanged(Event):
    """The top levels of an instrument's book with own orders and their queue position.

    Published at most every ~100 ms per instrument (a display feed, not a tick feed).
    """

    symbol: str
    bids: tuple[tuple[int, int], ...]  # (px_ticks, qty_lots), best first
    asks: tuple[tuple[int, int], ...]
    last_trade_px_ticks: int  # 0 before the first trade
    own: tuple[OwnQuote, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LogRecorded(Event):
    """A log record of the engine (WARNING and above by default), for the console's log."""

    level: int  # logging level: 30 WARNING, 40 ERROR, 50 CRITICAL
    source: str  # logger name, e.g. "engine.fix.session"
    text: str


def fast_constructor(
    cls: type[_T], *, positional: bool = False, every_field: bool = False
) -> Callable[..., _T]:
    """Return a constructor of the frozen, slotted dataclass ``cls``, several times as fast.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (looked up
    and called per field: ~7 µs for the 21 fields of :class:`OrderView` on this project's
    machines; through the slots' descriptors, ~3.5 µs). This one fills an instance of a mutable
    twin of ``cls`` (the same bases and slots, so the same memory layout) with plain attribute
    stores, then makes it a ``cls`` by assigning ``__class__`` (~0.6 µs for :class:`OrderView`).
    Same arguments, defaults and result (``==`` to ``cls(**kw)``, ``type(...) is cls``, frozen);
    for the events built once per order or per book update.

    ``positional`` makes the arguments positional, in field order, defaults last (only when
    every defaulted field follows every required one): cheaper still for many fields.
    ``every_field`` (with ``positional``) makes every field a required positional argument, in
    field order, whatever its default: for a hot path that has every value at hand and a class
    whose required fields follow defaulted ones (a keyword-only dataclass).

    Raises
    ------
    TypeError
        If ``cls`` is not a slotted dataclass, has a ``__post_init__``, or (``positional``
        without ``every_field``) a required field after a defaulted one; ``every_field``
        without ``positional``.
    """
    if not (dataclasses.is_dataclass(cls) and "__slots__" in vars(cls)):
        raise TypeError(f"{cls.__name__}: not a slotted dataclass")
    if getattr(cls, "__post_init__", None) is not None:
        raise TypeError(f"{cls.__name__}: __post_init__ is not supported")
    # The twin: setattr as object does (neither cls's nor a frozen base's refusal).
    twin = type(
        f"_Mutable{cls.__name__}",
        cls.__bases__,
        {
            "__slots__": vars(cls)["__slots__"],
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
        },
    )
    ns: dict[str, Any] = {"_new": object.__new__, "_twin": twin, "_cls": cls}
    params, body = [], []
    seen_default = False
    if every_field and not positional:
        raise TypeError(f"{cls.__name__}: every_field needs positional=True")
    for i, f in enumerate(dataclasses.fields(cls)):
        if every_field:
            params.append(f.name)
        elif f.default is not dataclasses.MISSING:
            ns[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
            seen_default = True
        elif f.default_factory is not dataclasses.MISSING:
            ns[f"_f{i}"] = f.default_factory
            params.append(f"{f.name}=_missing")
            body.append(f"    if {f.name} is _missing: {f.name} = _f{i}()")
            seen_default = True
        else:
            if positional and seen_default:
                raise TypeError(
                    f"{cls.__name__}: field {f.name!r} without a default follows one with a "
                    "default: no positional constructor"
                )
            params.append(f.name)
        body.append(f"    o.{f.name} = {f.name}")
    ns["_missing"] = dataclasses.MISSING
    star = "" if positional else "*, "
    src = f"def make({star}{', '.join(params)}):\n    o = _new(_twin)\n" + "\n".join(body)
    exec(src + "\n    o.__class__ = _cls\n    return o\n", ns)  # as dataclasses does
    make: Callable[..., _T] = ns["make"]
    make.__qualname__ = f"fast_constructor({cls.__name__})"
    return make
