# SPDX-License-Identifier: MIT
"""Self-trade prevention: our own orders never trade with each other.

A venue sees one account for all of an engine's strategies; two of them on one instrument
crossing each other would trade with ourselves, or meet the venue's own self-trade prevention
(which cancels whichever order it chooses, often the one a strategy needed). The order manager
asks :class:`SelfTradePrevention` about every new order *before it leaves the engine*, against
the working orders of the same group on the other side of the same instrument, and the
configured mode decides:

=================  ====================================================================
``cancel_newest``  the new order is refused (the default; nothing reaches the venue)
``cancel_oldest``  the resting orders it would trade with are canceled, then it is sent
``cancel_both``    both: the resting orders are canceled and the new order is refused
``allow``          nothing is done (the venue's own rules apply)
=================  ====================================================================

Orders of one strategy are its own business (a market maker's quotes may meet for an instant
while a replace is on its way, exactly as in the compiled backtest, which has one strategy):
the rules apply between different strategies, and between a strategy and manual orders.
The mode is that of the new order's strategy (``[[strategies]] stp``), else the engine's
(``[stp] mode``). Orders meet only within a group (``[[strategies]] stp_group``; by default
every strategy and manual orders are one group: one account at the venue). A resting order
whose cancel is already sent is not counted, and one whose replace is sent counts at its new
price: the venue gets those requests first. An order that
closes positions (flatten, the kill switch) is never refused: the orders it would meet are
canceled instead. A replace that would move an order across another strategy's is decided the
same way (refused: the order stays where it was). The live engine and the generic backtest
share the order manager, so both apply the same rule.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from engine.alerts import RefusalCounter
from engine.bus import MessageBus
from engine.clock import Clock
from engine.enums import OrdType, Side, TimeInForce
from engine.oms.order import Order


class StpMode(StrEnum):
    """What happens when a new order would trade with one of our own resting orders."""

    CANCEL_NEWEST = "cancel_newest"
    CANCEL_OLDEST = "cancel_oldest"
    CANCEL_BOTH = "cancel_both"
    ALLOW = "allow"


_NEVER_REST = frozenset({TimeInForce.IOC, TimeInForce.FOK})

#: Mode names as written in configuration files.
STP_MODES: tuple[str, ...] = tuple(m.value for m in StpMode)


@dataclass(frozen=True, slots=True)
class StpDecision:
    """The outcome for one new order: resting orders to cancel, and why it is refused (if)."""

    cancel: tuple[Order, ...] = ()
    refusal: str | None = None


def crosses(new: Order, resting: Order, px_ticks: int | None = None) -> bool:
    """Return whether ``new`` would trade with ``resting`` (opposite sides, prices meet).

    Only resting limit orders count (an IOC or FOK order never rests on the book), at the price
    of a replace already sent for them. ``px_ticks`` is ``new``'s price if not its own (a
    replace about to move it).
    """
    if new.side is resting.side or resting.ord_type is not OrdType.LIMIT:
        return False
    if resting.time_in_force in _NEVER_REST:  # filled or gone at once: it never rests
        return False
    if new.ord_type is OrdType.MARKET:
        return True
    px = resting.px_ticks
    pending = resting.pending
    if pending is not None and pending.kind == "replace" and pending.px_ticks:
        px = pending.px_ticks  # the venue takes the replace before the new order
    own = new.px_ticks if px_ticks is None else px_ticks
    if new.side is Side.BUY:
        return own >= px
    return own <= px


@dataclass
class SelfTradePrevention:
    """The engine's self-trade prevention rules (one per order router).

    Parameters
    ----------
    mode : StpMode
        The mode of strategies that set none.
    modes : dict[int, StpMode]
        Per-strategy modes.
    groups : dict[int, str]
        Per-strategy groups (``""``, the default, is everyone not in another group).
    """

    mode: StpMode = StpMode.CANCEL_NEWEST
    modes: dict[int, StpMode] = field(default_factory=dict)
    groups: dict[int, str] = field(default_factory=dict)
    refusals: RefusalCounter | None = None
    #: New orders refused and resting orders canceled by the rules.
    refused: int = 0
    canceled: int = 0

    def attach(self, bus: MessageBus, clock: Clock) -> None:
        """Count refusals in one growing alert on ``bus``."""
        self.refusals = RefusalCounter(bus, clock, "self-trade prevention")

    def set_strategy(self, strategy_id: int, mode: StpMode | None, group: str = "") -> None:
        """Give a strategy its own mode (``None``: the engine's) and group."""
        if mode is None:
            self.modes.pop(strategy_id, None)
        else:
            self.modes[strategy_id] = mode
        if group:
            self.groups[strategy_id] = group
        else:
            self.groups.pop(strategy_id, None)

    def mode_of(self, strategy_id: int) -> StpMode:
        """Return the mode that applies to the orders of ``strategy_id``."""
        return self.modes.get(strategy_id, self.mode)

    def check(
        self,
        new: Order,
        working: Iterable[Order],
        *,
        closing: bool = False,
        px_ticks: int | None = None,
    ) -> StpDecision:
        """Decide for ``new`` against the instrument's ``working`` orders (see the module).

        ``px_ticks`` checks a replace of ``new`` to that price (refused: the replace is not sent).
        """
        mode = self.mode_of(new.strategy_id)
        if mode is StpMode.ALLOW:
            return StpDecision()
        group = self.groups.get(new.strategy_id, "")
        met = tuple(
            o
            for o in working
            if o.strategy_id != new.strategy_id
            and o.is_working
            and not (o.pending is not None and o.pending.kind == "cancel")
            and self.groups.get(o.strategy_id, "") == group
            and crosses(new, o, px_ticks)
        )
        if not met:
            return StpDecision()
        if closing:
            mode = StpMode.CANCEL_OLDEST
        first = met[0]
        who = "manual orders" if first.strategy_id == 0 else f"strategy {first.strategy_id}"
        refusal = None
        if mode in (StpMode.CANCEL_NEWEST, StpMode.CANCEL_BOTH):
            self.refused += 1
            refusal = (
                f"self-trade prevention ({mode.value}): it would trade with order "
                f"{first.order_id} of {who} at {first.px_ticks} ticks"
            )
            if self.refusals is not None:
                self.refusals.refuse(
                    f"self-trade prevention {mode.value}",
                    detail=f"last: {new.symbol}, strategy {new.strategy_id} against {who}",
                )
        cancel = met if mode in (StpMode.CANCEL_OLDEST, StpMode.CANCEL_BOTH) else ()
        self.canceled += len(cancel)
        return StpDecision(cancel=cancel, refusal=refusal)
