# SPDX-License-Identifier: MIT
"""Requests into the engine and the engine's answers: frozen, slotted dataclasses.

A client sends a :class:`Command` and gets exactly one :class:`CommandResult`: a
:class:`CommandAck` when the engine carried it out, or a :class:`CommandError` saying why not.
"""

from dataclasses import dataclass

from engine.enums import KillLevel
from engine.oms.request import OrderRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """Base of all commands."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ping(Command):
    """Ask the engine to answer at once; measures the command round trip."""

    payload: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SetHeartbeatInterval(Command):
    """Change how often the engine publishes :class:`engine.events.EngineHeartbeat`."""

    interval_ms: int  # 10 .. 60_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandAck:
    """The engine carried out ``command``."""

    command: Command
    ts_handled: int  # engine clock, ns
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandError:
    """The engine refused ``command``; ``reason`` says which rule and which values."""

    command: Command
    ts_handled: int  # engine clock, ns (0 when the engine never saw the command)
    reason: str


CommandResult = CommandAck | CommandError


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitOrder(OrderRequest, Command):
    """Send a new order: an :class:`engine.oms.request.OrderRequest` as a command.

    ``strategy_id`` 0 marks a manual order. ``band_override`` sends a manual order whose price
    is outside the price band (the user confirmed it in the ticket); the engine refuses it on
    any other order. Only an admin (or the console's own user) may send an order under a
    strategy's id.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelOrder(Command):
    """Cancel a working order (OrderCancelRequest <F>)."""

    order_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaceOrder(Command):
    """Change quantity and/or price of a working order (OrderCancelReplaceRequest <G>).

    ``band_override`` moves a manual order outside the price band (the user confirmed it);
    refused for any other order.
    """

    order_id: int
    qty_lots: int | None = None
    px_ticks: int | None = None
    band_override: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelAll(Command):
    """Cancel every working order, optionally only of one strategy and/or instrument."""

    strategy_id: int | None = None
    symbol: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Flatten(Command):
    """Cancel working orders and close positions (of one strategy and/or instrument)."""

    strategy_id: int | None = None
    symbol: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetKillSwitch(Command):
    """Set the kill switch (``KillLevel.OFF`` releases it); journaled with actor and reason."""

    level: KillLevel
    reason: str
    actor: str = "console"


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlStrategy(Command):
    """Start, pause, resume or stop a strategy."""

    strategy_id: int
    action: str  # "start", "pause", "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetStrategyParameters(Command):
    """Change a strategy's parameters while it runs (checked against their bounds)."""

    strategy_id: int
    values: tuple[tuple[str, object], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddStrategy(Command):
    """Load a strategy class and add it to the running engine (admin: it runs code).

    ``class_path`` is ``path/to/file.py:Class`` (a file on the engine's host), ``module:Class``
    or a built-in name; ``parameters`` are (name, value) pairs checked against the class's
    declared parameters (text values are converted); ``symbols`` must be traded by the engine.
    """

    class_path: str
    strategy_id: int
    symbols: tuple[str, ...]
    parameters: tuple[tuple[str, object], ...] = ()
    autostart: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlSession(Command):
    """Operate a FIX session: log on, log out, reset, or set its next sequence numbers.

    ``action`` is ``"logon"``, ``"logout"``, ``"reset"`` (log out, disconnect, both sequence
    numbers back to 1) or ``"set_seq"`` (``next_sender_seq_num`` / ``next_target_seq_num``).
    """

    session_id: str  # e.g. "FIX.4.4:QWCONSOLE->QWSIM"
    action: str
    next_sender_seq_num: int | None = None
    next_target_seq_num: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetRiskLimits(Command):
    """Change some pre-trade limits of one scope; every limit not named stays as it is.

    The scope is engine-wide (``strategy_id`` and ``symbol`` ``None``), one strategy's
    (``strategy_id``; 0 is manual orders) or one instrument's (``symbol``: the price band
    only, which replaces the engine-wide band there). A limit given a value is set; a limit
    named in ``clear`` is switched off; ``None`` leaves it unchanged (see
    ``engine.oms.risk.RiskLimits``). An unknown name in ``clear`` is refused. The engine
    answers with what changed and publishes ``RiskLimitsChanged``.
    """

    strategy_id: int | None = None
    symbol: str | None = None
    max_order_qty_lots: int | None = None
    max_order_notional: float | None = None
    max_position_lots: int | None = None
    price_band_ticks: int | None = None
    price_band_pct: float | None = None
    max_open_orders: int | None = None
    max_orders_per_second: int | None = None
    clear: tuple[str, ...] = ()  # names of limits to switch off
    actor: str = "console"  # who changed them (the remote server sets the user)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReloadSession(Command):
    """Re-read a FIX session's settings from the ``.cfg`` file it was started from; restart it.

    The engine reads and checks the file first: on any problem it refuses, naming the file, the
    line and the key, and the running session is left as it is. Otherwise the session logs out
    (if logged on), is replaced by one built from the new settings (its sequence numbers are
    kept unless FileStorePath changed) and logs on again as its schedule allows. The identity
    (BeginString, CompIDs, SessionQualifier) and the role cannot change by a reload.
    """

    session_id: str  # e.g. "FIX.4.4:QW->EXCH", as in SessionStatusChanged
