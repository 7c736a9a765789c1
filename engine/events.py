# SPDX-License-Identifier: MIT
"""Facts out of the engine: frozen, slotted, keyword-only dataclasses.

Every event carries ``ts_event``, the engine clock's time in ns since the epoch (UTC) at which
the fact became true. The engine numbers every event it publishes; a client sees them as
:class:`EventRecord` (sequence number + event) in strictly increasing order.
"""

from dataclasses import dataclass

from engine.enums import EngineState, SessionState


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


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event as a client sees it: its sequence number in the engine's stream and the event.

    Sequence numbers start at 1 and have no gaps within one engine run.
    """

    seq: int
    event: Event
