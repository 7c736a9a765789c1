# SPDX-License-Identifier: MIT
"""Pre-trade risk: limits per strategy and for the whole engine, and the kill switch.

Every refusal names the rule and the values that broke it, e.g.
``max_order_qty: 500 lots > 100 lots (strategy 20170101)``.
"""

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass

from engine.clock import Clock
from engine.enums import KillLevel, Side

#: Length of the order-rate window, ns.
RATE_WINDOW_NS = 1_000_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskLimits:
    """Pre-trade limits; ``None`` disables a rule.

    Parameters
    ----------
    max_order_qty_lots : int | None
        Largest quantity of one order.
    max_order_notional : float | None
        Largest price x quantity x multiplier of one order, in the instrument's currency.
    max_position_lots : int | None
        Largest absolute position, counting the worst case of working orders on the same side.
    price_band_ticks : int | None
        Farthest a limit price may be from the reference (last trade, else the touch).
    max_open_orders : int | None
        Most working orders at once.
    max_orders_per_second : int | None
        Most new and replace requests in any one-second window.
    """

    max_order_qty_lots: int | None = None
    max_order_notional: float | None = None
    max_position_lots: int | None = None
    price_band_ticks: int | None = None
    max_open_orders: int | None = None
    max_orders_per_second: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "max_order_qty_lots",
            "max_order_notional",
            "max_position_lots",
            "price_band_ticks",
            "max_open_orders",
            "max_orders_per_second",
        ):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"RiskLimits.{name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class RiskRefusal:
    """Why an order was refused before it was sent."""

    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.text}"


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderIntent:
    """What risk needs to know of an order about to be sent (or replaced)."""

    strategy_id: int
    symbol: str
    side: Side
    qty_lots: int
    px_ticks: int  # 0 for a market order
    tick_value: float  # currency value of one tick on one lot
    is_replace: bool = False
    extra_qty_lots: int = 0  # replace: quantity added on top of the working quantity


#: Limits that check nothing (the default): an order against them passes at once.
_NO_LIMITS = RiskLimits()


class RiskChecker:
    """Apply :class:`RiskLimits` globally and per strategy, and hold the kill switch.

    The order manager tells it about working orders and fills (:meth:`on_working_changed`,
    :meth:`on_fill`); :meth:`check` then answers with ``None`` or a :class:`RiskRefusal`.

    Parameters
    ----------
    clock : Clock
        For the order-rate window.
    global_limits : RiskLimits
        Limits over all strategies together.
    reference_px : Callable[[str], int | None] | None
        Reference price in ticks of a symbol for the price band (last trade, else the touch).
    """

    def __init__(
        self,
        clock: Clock,
        global_limits: RiskLimits | None = None,
        reference_px: Callable[[str], int | None] | None = None,
    ) -> None:
        self.clock = clock
        self.global_limits = global_limits or RiskLimits()
        self.strategy_limits: dict[int, RiskLimits] = {}
        self.reference_px = reference_px
        self.kill_level = KillLevel.OFF
        # Keys: None for the whole engine, else the strategy id.
        self._open: defaultdict[int | None, int] = defaultdict(int)
        self._position: defaultdict[tuple[int | None, str], int] = defaultdict(int)
        self._working: defaultdict[tuple[int | None, str, Side], int] = defaultdict(int)
        self._sent: defaultdict[int | None, deque[int]] = defaultdict(deque)
        self._seen: dict[int, tuple[RiskLimits, bool]] = {}
        self._glob = self.global_limits
        self._glob_active = self._checks_anything(self._glob)

    def set_strategy_limits(self, strategy_id: int, limits: RiskLimits) -> None:
        """Set (or replace) the limits of one strategy."""
        self.strategy_limits[strategy_id] = limits

    # ---------------------------------------------------------------- bookkeeping
    def on_working_changed(
        self, strategy_id: int, symbol: str, side: Side, d_orders: int, d_leaves_lots: int
    ) -> None:
        """Adjust the count of working orders and their leaves quantity."""
        opened, working = self._open, self._working
        opened[None] += d_orders
        opened[strategy_id] += d_orders
        working[(None, symbol, side)] += d_leaves_lots
        working[(strategy_id, symbol, side)] += d_leaves_lots

    def on_fill(self, strategy_id: int, symbol: str, side: Side, qty_lots: int) -> None:
        """Book a fill into the positions risk sees."""
        for key in (None, strategy_id):
            self._position[(key, symbol)] += int(side) * qty_lots

    def position(self, symbol: str, strategy_id: int | None = None) -> int:
        """Return the net position in lots (signed) of a strategy, or of the whole engine."""
        return self._position[(strategy_id, symbol)]

    def strategies_with_position(self, symbol: str) -> list[int]:
        """Return the strategies with a non-zero position in ``symbol``."""
        return sorted(
            k for (k, sym), pos in self._position.items() if k is not None and sym == symbol and pos
        )

    def open_orders(self, strategy_id: int | None = None) -> int:
        """Return the number of working orders of a strategy, or of the whole engine."""
        return self._open[strategy_id]

    def record_sent(self, strategy_id: int) -> None:
        """Count a new or replace request in the order-rate window."""
        now = self.clock.monotonic_ns()
        sent = self._sent
        sent[None].append(now)
        sent[strategy_id].append(now)

    # ---------------------------------------------------------------- the check
    def check(self, intent: OrderIntent) -> RiskRefusal | None:
        """Return why ``intent`` must not be sent, or ``None`` if every rule passes."""
        return self.check_order(
            intent.strategy_id,
            intent.symbol,
            intent.side,
            intent.qty_lots,
            intent.px_ticks,
            intent.tick_value,
            intent.is_replace,
            intent.extra_qty_lots,
        )

    def check_order(
        self,
        strategy_id: int,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        tick_value: float,
        is_replace: bool = False,
        extra_qty_lots: int = 0,
    ) -> RiskRefusal | None:
        """:meth:`check` with the fields of an :class:`OrderIntent` as arguments (per order)."""
        if self.kill_level >= KillLevel.BLOCK_NEW:
            return RiskRefusal(
                "kill_switch", f"kill switch is at {self.kill_level.name}: new orders are blocked"
            )
        limits = self.strategy_limits.get(strategy_id)
        if limits is not None and self._checks_anything(limits):
            refusal = self._check_scope(
                strategy_id, limits, f"strategy {strategy_id}", symbol, side, qty_lots,
                px_ticks, tick_value, is_replace, extra_qty_lots,
            )  # fmt: skip
            if refusal is not None:
                return refusal
        glob = self.global_limits
        if glob is not self._glob:  # _checks_anything() of the global limits, kept at hand
            self._glob, self._glob_active = glob, self._checks_anything(glob)
        if not self._glob_active:
            return None
        return self._check_scope(
            None, glob, "engine-wide", symbol, side, qty_lots, px_ticks, tick_value, is_replace,
            extra_qty_lots,
        )  # fmt: skip

    def _checks_anything(self, lim: RiskLimits) -> bool:
        # Whether ``lim`` has a rule at all; remembered per limits object (they are frozen).
        seen = self._seen.get(id(lim))
        if seen is None or seen[0] is not lim:
            if len(self._seen) > 256:
                self._seen.clear()
            seen = self._seen[id(lim)] = (lim, lim != _NO_LIMITS)
        return seen[1]

    def _check_scope(
        self,
        key: int | None,
        lim: RiskLimits,
        where: str,
        symbol: str,
        side: Side,
        qty: int,
        px_ticks: int,
        tick_value: float,
        is_replace: bool,
        extra_qty_lots: int,
    ) -> RiskRefusal | None:
        if lim.max_order_qty_lots is not None and qty > lim.max_order_qty_lots:
            return RiskRefusal(
                "max_order_qty", f"{qty} lots > {lim.max_order_qty_lots} lots ({where})"
            )
        if lim.max_order_notional is not None and px_ticks:
            notional = abs(px_ticks) * qty * tick_value
            if notional > lim.max_order_notional:
                return RiskRefusal(
                    "max_order_notional",
                    f"{notional:,.2f} > {lim.max_order_notional:,.2f} ({where})",
                )
        if lim.max_position_lots is not None:
            pos = self._position[(key, symbol)]
            working = self._working[(key, symbol, side)]
            added = extra_qty_lots if is_replace else qty
            worst = pos + int(side) * (working + added)
            if abs(worst) > lim.max_position_lots and abs(worst) > abs(pos):
                return RiskRefusal(
                    "max_position",
                    f"position {pos:+d} with working {int(side) * working:+d} and this "
                    f"order {int(side) * added:+d} lots reaches {worst:+d}, beyond "
                    f"±{lim.max_position_lots} lots ({where})",
                )
        if lim.price_band_ticks is not None and px_ticks and self.reference_px:
            ref = self.reference_px(symbol)
            if ref is not None and abs(px_ticks - ref) > lim.price_band_ticks:
                return RiskRefusal(
                    "price_band",
                    f"price {px_ticks} ticks is {abs(px_ticks - ref)} ticks from "
                    f"the reference {ref}, more than {lim.price_band_ticks} ({where})",
                )
        if (
            lim.max_open_orders is not None
            and not is_replace
            and self._open[key] + 1 > lim.max_open_orders
        ):
            return RiskRefusal(
                "max_open_orders",
                f"{self._open[key]} working + 1 > {lim.max_open_orders} ({where})",
            )
        if lim.max_orders_per_second is not None:
            window = self._sent[key]
            horizon = self.clock.monotonic_ns() - RATE_WINDOW_NS
            while window and window[0] <= horizon:
                window.popleft()
            if len(window) + 1 > lim.max_orders_per_second:
                return RiskRefusal(
                    "max_order_rate",
                    f"{len(window)} orders in the last second + 1 > "
                    f"{lim.max_orders_per_second}/s ({where})",
                )
        return None
