# SPDX-License-Identifier: MIT
"""Pre-trade risk: limits per strategy and for the whole engine, and the kill switch.

Every refusal names the rule and the values that broke it, e.g.
``max_order_qty: 500 lots > 100 lots (strategy 20170101)``.
"""

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace

from engine.clock import Clock
from engine.enums import KillLevel, Side

#: Length of the order-rate window, ns.
RATE_WINDOW_NS = 1_000_000_000

#: Largest quantity of one order, lots (sanity check before any venue; a risk limit is tighter).
MAX_ORDER_QTY_LOTS = 1_000_000_000
#: Largest limit price, ticks (exact as a float: average prices are floats).
MAX_PX_TICKS = 2**53
#: Largest price x quantity of one order, ticks x lots (sums of them stay inside int64).
MAX_NOTIONAL_TICKS_LOTS = 2**62

#: The engine-wide price band an engine starts with unless its configuration says otherwise.
DEFAULT_PRICE_BAND_PCT = 5.0


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
        Farthest a limit price may be from the reference (last trade, else the mid), in ticks.
    price_band_pct : float | None
        The same as a percentage of the reference price (both apply when both are set).
    max_open_orders : int | None
        Most working orders at once.
    max_orders_per_second : int | None
        Most new and replace requests in any one-second window.
    """

    max_order_qty_lots: int | None = None
    max_order_notional: float | None = None
    max_position_lots: int | None = None
    price_band_ticks: int | None = None
    price_band_pct: float | None = None
    max_open_orders: int | None = None
    max_orders_per_second: int | None = None

    def __post_init__(self) -> None:
        for name in LIMIT_NAMES:
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"RiskLimits.{name} must be >= 0, got {value}")

    def patched(
        self, values: Mapping[str, int | float | None], clear: Iterable[str] = ()
    ) -> "RiskLimits":
        """Return these limits with ``values`` set and the limits named in ``clear`` off.

        A ``None`` value leaves that limit as it is. Raises ``ValueError`` naming an unknown
        limit, a limit both set and cleared, or a bad value.
        """
        clear = tuple(clear)
        for name in (*values, *clear):
            if name not in LIMIT_NAMES:
                raise ValueError(f"unknown risk limit {name!r}; limits: {', '.join(LIMIT_NAMES)}")
        both = sorted(n for n in clear if values.get(n) is not None)
        if both:
            raise ValueError(f"{', '.join(both)}: both set and cleared")
        changes: dict[str, int | float | None] = dict.fromkeys(clear)
        changes.update({n: v for n, v in values.items() if v is not None})
        return replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> str:
        """Return the limits that are on, as ``name=value`` pairs (``"none"`` when all off)."""
        on = [f"{n}={getattr(self, n):g}" for n in LIMIT_NAMES if getattr(self, n) is not None]
        return ", ".join(on) or "none"

    def diff(self, other: "RiskLimits") -> str:
        """Return what changes from these limits to ``other``, e.g. ``max_open_orders 5 -> off``."""

        def text(v: int | float | None) -> str:
            return "off" if v is None else f"{v:g}"

        out = [
            f"{n} {text(getattr(self, n))} -> {text(getattr(other, n))}"
            for n in LIMIT_NAMES
            if getattr(self, n) != getattr(other, n)
        ]
        return "; ".join(out) or "no change"


#: Names of the limits, in declaration order (``SetRiskLimits`` fields and ``clear`` names).
LIMIT_NAMES: tuple[str, ...] = tuple(f.name for f in fields(RiskLimits))
#: The limits an instrument may have of its own (they replace the engine-wide band there).
BAND_NAMES: tuple[str, ...] = ("price_band_ticks", "price_band_pct")
#: Engine-wide limits of an engine whose configuration names none.
DEFAULT_LIMITS = RiskLimits(price_band_pct=DEFAULT_PRICE_BAND_PCT)


def order_problem(qty_lots: int, px_ticks: int, *, limit: bool) -> str | None:
    """Return what makes an order's quantity or price impossible, or ``None`` if sane.

    These hold whatever the risk limits say (and for flattening too): a quantity in
    1..:data:`MAX_ORDER_QTY_LOTS` lots, and for a limit order a price in 1..:data:`MAX_PX_TICKS`
    ticks whose product with the quantity fits in :data:`MAX_NOTIONAL_TICKS_LOTS`.
    """
    if not 1 <= qty_lots <= MAX_ORDER_QTY_LOTS:
        if qty_lots <= 0:
            return f"order quantity must be > 0 lots, got {qty_lots}"
        return f"order quantity {qty_lots:,} lots is above the maximum {MAX_ORDER_QTY_LOTS:,}"
    if not limit:
        return None
    if px_ticks == 0:
        return "a limit order needs a price (px_ticks=0 given)"
    if px_ticks < 0:
        return f"limit price {px_ticks} ticks: must be > 0"
    if px_ticks > MAX_PX_TICKS:
        return f"limit price {px_ticks:,} ticks is above the maximum {MAX_PX_TICKS:,}"
    if px_ticks * qty_lots > MAX_NOTIONAL_TICKS_LOTS:
        return (
            f"price {px_ticks:,} ticks x quantity {qty_lots:,} lots is above "
            f"{MAX_NOTIONAL_TICKS_LOTS:,} (the engine's integer range)"
        )
    return None


@dataclass(frozen=True, slots=True)
class RiskRefusal:
    """Why an order was refused before it was sent."""

    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.text}"


#: Limits that check nothing (the default): an order against them passes at once.
_NO_LIMITS = RiskLimits()
_OFF = KillLevel.OFF
_BLOCK_NEW = KillLevel.BLOCK_NEW


class _Exposure:
    """What one scope (the engine, or one strategy) holds in one instrument, in lots.

    ``position`` is signed; ``buy`` and ``sell`` are the leaves quantities of its working
    orders on each side. A slotted object per scope and instrument, reached through two
    lookups by cached-hash keys (a symbol, then ``None`` or a strategy id): on the order
    path this replaced dictionaries keyed by ``(scope, symbol, side)`` tuples, each update
    of which built, hashed and compared a tuple twice (issue 25).
    """

    __slots__ = ("buy", "position", "sell")

    def __init__(self) -> None:
        self.position = 0
        self.buy = 0
        self.sell = 0


class _Scope:
    """One strategy's working orders (across instruments) and its send times in the window.

    ``sent`` holds the monotonic times of its new and replace requests, ascending. A send
    appends its time (a list append: the interpreter's fastest call) and, when its time has
    reached ``trim_at``, :meth:`trim` forgets what left the window: at most a second's sends
    older than the window are kept, instead of testing the oldest on every send (a deque's
    ``popleft`` loop, ~40 ns more per order; issue 25).
    """

    __slots__ = ("open", "sent", "trim_at")

    def __init__(self) -> None:
        self.open = 0
        self.sent: list[int] = []
        self.trim_at = 0

    def trim(self, now: int) -> None:
        """Forget the send times that left the window by ``now``; the next trim a window on."""
        sent = self.sent
        del sent[: bisect_right(sent, now - RATE_WINDOW_NS)]
        self.trim_at = now + RATE_WINDOW_NS

    def in_window(self, now: int) -> int:
        """Return how many sends are in the window ending at ``now``."""
        sent = self.sent
        return len(sent) - bisect_right(sent, now - RATE_WINDOW_NS)


class _Exposures(dict[int | None, _Exposure]):
    """The exposures of one instrument by scope (``None``: the engine); made on first use.

    The engine's is made at once and kept at hand as :attr:`every` too (``every is of[None]``):
    an attribute read on the order path instead of a lookup of a dict subclass.
    """

    __slots__ = ("every",)

    def __init__(self) -> None:
        super().__init__()
        self.every = self[None] = _Exposure()

    def __missing__(self, key: int | None) -> _Exposure:
        exposure = self[key] = _Exposure()
        return exposure


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
        Reference price in ticks of a symbol for the price band (last trade, else the mid).

    Limits have three scopes: engine-wide (:attr:`global_limits`), per strategy
    (:attr:`strategy_limits`; strategy 0 holds manual orders) and per instrument
    (:attr:`instrument_limits`, the price band only: it replaces the engine-wide band there).
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
        self.instrument_limits: dict[str, RiskLimits] = {}
        self.reference_px = reference_px
        self.kill_level = KillLevel.OFF
        # Keys: None for the whole engine, else the strategy id.
        # symbol -> scope (None or a strategy id) -> position and working lots per side.
        self._exposure: defaultdict[str, _Exposures] = defaultdict(_Exposures)
        # Per strategy: working orders and send times in the rate window (the engine's count
        # and window are all of them together: each working order and each send is in exactly
        # one strategy's).
        self._scopes: defaultdict[int, _Scope] = defaultdict(_Scope)
        self._seen: dict[int, tuple[RiskLimits, bool]] = {}
        self._glob = self.global_limits
        self._glob_active = self._checks_anything(self._glob)

    def set_strategy_limits(self, strategy_id: int, limits: RiskLimits) -> None:
        """Set (or replace) the limits of one strategy."""
        self.strategy_limits[strategy_id] = limits

    def limits(self, strategy_id: int | None = None, symbol: str | None = None) -> RiskLimits:
        """Return the limits of one scope: engine-wide, a strategy's or an instrument's."""
        if symbol is not None:
            return self.instrument_limits.get(symbol, _NO_LIMITS)
        if strategy_id is not None:
            return self.strategy_limits.get(strategy_id, _NO_LIMITS)
        return self.global_limits

    def set_limits(
        self, limits: RiskLimits, strategy_id: int | None = None, symbol: str | None = None
    ) -> None:
        """Set the limits of one scope (see :meth:`limits`); an instrument has only a band."""
        if symbol is not None:
            other = sorted(
                n for n in LIMIT_NAMES if n not in BAND_NAMES and getattr(limits, n) is not None
            )
            if other:
                raise ValueError(
                    f"instrument {symbol}: only {' and '.join(BAND_NAMES)} can be set per "
                    f"instrument, not {', '.join(other)}"
                )
            self.instrument_limits[symbol] = limits
        elif strategy_id is not None:
            self.strategy_limits[strategy_id] = limits
        else:
            self.global_limits = limits

    def scopes(self) -> list[tuple[int | None, str | None, RiskLimits]]:
        """Return ``(strategy_id, symbol, limits)`` of every scope with limits (engine first)."""
        out: list[tuple[int | None, str | None, RiskLimits]] = [(None, None, self.global_limits)]
        out += [(sid, None, lim) for sid, lim in sorted(self.strategy_limits.items())]
        out += [(None, sym, lim) for sym, lim in sorted(self.instrument_limits.items())]
        return out

    # ---------------------------------------------------------------- bookkeeping
    def on_working_changed(
        self, strategy_id: int, symbol: str, side: Side, d_orders: int, d_leaves_lots: int
    ) -> None:
        """Adjust the count of working orders and their leaves quantity."""
        self._scopes[strategy_id].open += d_orders
        of = self._exposure[symbol]
        every, own = of.every, of[strategy_id]
        if side > 0:
            every.buy += d_leaves_lots
            own.buy += d_leaves_lots
        else:
            every.sell += d_leaves_lots
            own.sell += d_leaves_lots

    def on_fill(self, strategy_id: int, symbol: str, side: Side, qty_lots: int) -> None:
        """Book a fill into the positions risk sees."""
        lots = int(side) * qty_lots
        of = self._exposure[symbol]
        of.every.position += lots
        of[strategy_id].position += lots

    def restore_position(self, strategy_id: int, symbol: str, lots: int) -> None:
        """Add a signed position (a restart's sum of the day's fills) to what risk sees."""
        of = self._exposure[symbol]
        of.every.position += lots
        of[strategy_id].position += lots

    def position(self, symbol: str, strategy_id: int | None = None) -> int:
        """Return the net position in lots (signed) of a strategy, or of the whole engine."""
        return self._exposure[symbol][strategy_id].position  # (made, at zero, if new)

    def working_lots(self, symbol: str, side: Side, strategy_id: int | None = None) -> int:
        """Return the leaves quantity of the working orders of a strategy (or all) on a side."""
        of = self._exposure.get(symbol)
        exposure = of.get(strategy_id) if of is not None else None
        if exposure is None:
            return 0
        return exposure.buy if side > 0 else exposure.sell

    def strategies_with_position(self, symbol: str) -> list[int]:
        """Return the strategies with a non-zero position in ``symbol``."""
        of = self._exposure.get(symbol)
        return sorted(k for k, e in (of or {}).items() if k is not None and e.position)

    def open_orders(self, strategy_id: int | None = None) -> int:
        """Return the number of working orders of a strategy, or of the whole engine."""
        if strategy_id is None:  # each working order is in exactly one strategy's count
            n = 0
            for each in self._scopes.values():  # (a loop: sum() of a generator costs more)
                n += each.open
            return n
        scope = self._scopes.get(strategy_id)
        return scope.open if scope is not None else 0

    def record_sent(self, strategy_id: int) -> None:
        """Count a new or replace request in the order-rate window."""
        now = self.clock.monotonic_ns()
        scope = self._scopes[strategy_id]
        scope.sent.append(now)
        # Forget what left the window here too: without a rate limit nothing else would, and
        # the window held one timestamp per order of the day (issue 16's soak: 80 MB).
        if now >= scope.trim_at:
            scope.trim(now)

    def on_new_order_sent(self, strategy_id: int, symbol: str, side: Side, qty_lots: int) -> None:
        """Book a new order sent: :meth:`record_sent`, and one more working order of ``qty_lots``.

        The same as ``record_sent(strategy_id)`` then ``on_working_changed(strategy_id, symbol,
        side, 1, qty_lots)``, in one call (the order manager's, once per order).
        """
        now = self.clock.monotonic_ns()
        scope = self._scopes[strategy_id]
        scope.sent.append(now)
        if now >= scope.trim_at:  # as record_sent
            scope.trim(now)
        # on_working_changed(strategy_id, symbol, side, 1, qty_lots), inlined: once per order.
        scope.open += 1
        of = self._exposure[symbol]
        every, own = of.every, of[strategy_id]
        if side > 0:
            every.buy += qty_lots
            own.buy += qty_lots
        else:
            every.sell += qty_lots
            own.sell += qty_lots

    def new_order(
        self,
        strategy_id: int,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        tick_value: float,
        band_override: bool = False,
    ) -> RiskRefusal | None:
        """Check a new order and book it as sent if it passes; return the refusal or ``None``.

        :meth:`check_new`, then, when it answers ``None``, :meth:`on_new_order_sent`, in one
        call with positional arguments. A refused order is not booked. (The order manager
        makes the same two steps itself: :meth:`passes_new`, then its own booking.)
        """
        refusal = self.check_new(
            strategy_id, symbol, side, qty_lots, px_ticks, tick_value, band_override
        )
        if refusal is None:
            self.on_new_order_sent(strategy_id, symbol, side, qty_lots)
        return refusal

    # ---------------------------------------------------------------- the check
    def no_rule_applies(self, strategy_id: int) -> bool:
        """Return whether no rule can refuse a new order of ``strategy_id`` now.

        The kill switch is off and neither the strategy, an instrument nor the engine-wide
        limits have a rule. The order manager's send path makes this same test inline
        (``OrderManager._send_new``) before booking an order itself.
        """
        return (
            self.kill_level is _OFF
            and self.global_limits is self._glob
            and not self._glob_active
            and not self.instrument_limits
            and strategy_id not in self.strategy_limits
        )

    def check_new(
        self,
        strategy_id: int,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        tick_value: float,
        band_override: bool = False,
    ) -> RiskRefusal | None:
        """Return :meth:`check_order` of a new order (not a replace); positional arguments.

        The order manager's call, once per order: it answers ``None`` after the few tests
        that show every rule passes, and asks :meth:`check_order` only when one refuses
        (which then names it).
        """
        if self.passes_new(
            strategy_id, symbol, side, qty_lots, px_ticks, tick_value, band_override
        ):
            return None
        return self.check_order(
            strategy_id=strategy_id,
            symbol=symbol,
            side=side,
            qty_lots=qty_lots,
            px_ticks=px_ticks,
            tick_value=tick_value,
            band_override=band_override,
        )

    def passes_new(
        self,
        strategy_id: int,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        tick_value: float,
        band_override: bool,
    ) -> bool:
        """Return whether every rule passes a new order: ``check_new(...) is None``, faster.

        The same rules in the same scopes as :meth:`check_order`, without building a refusal,
        in two calls at most (:meth:`check_order` and its scopes' checks took ~1.9 µs per
        order with every engine-wide limit set; issue 25). The order manager asks this on
        every order some rule applies to, and :meth:`check_new` only when it answers False,
        for the refusal. Books nothing. (``test_risk_fast_check`` compares the two on any
        limits and state.)
        """
        if self.kill_level >= _BLOCK_NEW:
            return False
        limits = self.strategy_limits.get(strategy_id)
        if limits is not None and not self._scope_passes(
            strategy_id,
            limits,
            None if band_override else limits,
            symbol,
            side,
            qty_lots,
            px_ticks,
            tick_value,
        ):
            return False
        glob = self.global_limits
        if glob is not self._glob:  # as check_order
            self._glob, self._glob_active = glob, self._checks_anything(glob)
        band = glob
        instrument_limits = self.instrument_limits
        if instrument_limits:
            own = instrument_limits.get(symbol)
            if own is not None and self._checks_anything(own):  # (own != _NO_LIMITS)
                band = own
        elif not self._glob_active:
            return True
        return self._scope_passes(
            None,
            glob,
            None if band_override else band,
            symbol,
            side,
            qty_lots,
            px_ticks,
            tick_value,
        )

    def _scope_passes(
        self,
        key: int | None,
        lim: RiskLimits,
        band: RiskLimits | None,
        symbol: str,
        side: Side,
        qty: int,
        px_ticks: int,
        tick_value: float,
    ) -> bool:
        # Whether _check_scope() of a new order answers None (see there for each rule).
        most = lim.max_order_qty_lots
        if most is not None and qty > most:
            return False
        notional = lim.max_order_notional
        if notional is not None and px_ticks and abs(px_ticks) * qty * tick_value > notional:
            return False
        most = lim.max_position_lots
        if most is not None:
            exposure = self._exposure[symbol][key]
            pos = exposure.position
            worst = pos + int(side) * ((exposure.buy if side > 0 else exposure.sell) + qty)
            if abs(worst) > most and abs(worst) > abs(pos):
                return False
        if band is not None and px_ticks:
            ticks, pct = band.price_band_ticks, band.price_band_pct
            reference_px = self.reference_px
            if (ticks is not None or pct is not None) and reference_px is not None:
                ref = reference_px(symbol)  # as _check_band
                if ref is not None:
                    off = px_ticks - ref
                    if ticks is not None and abs(off) > ticks:
                        return False
                    if pct is not None and ref > 0 and abs(off * 100.0 / ref) > pct:
                        return False
        most = lim.max_open_orders
        if most is not None and self.open_orders(key) + 1 > most:
            return False
        most = lim.max_orders_per_second
        return most is None or self.sent_in_window(key) + 1 <= most

    def check_order(
        self,
        *,
        strategy_id: int,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        tick_value: float,
        is_replace: bool = False,
        extra_qty_lots: int = 0,
        band_override: bool = False,
    ) -> RiskRefusal | None:
        """Return why the order must not be sent, or ``None`` if every rule passes.

        The order's fields as in :class:`engine.oms.request.OrderRequest`, and: ``tick_value``,
        the currency value of one tick on one lot; ``is_replace`` with ``extra_qty_lots``, the
        quantity a replace adds on top of the working quantity.

        ``band_override`` skips the price band (a manual order the user confirmed).
        """
        if self.kill_level >= KillLevel.BLOCK_NEW:
            return RiskRefusal(
                "kill_switch", f"kill switch is at {self.kill_level.name}: new orders are blocked"
            )
        limits = self.strategy_limits.get(strategy_id)
        if limits is not None and self._checks_anything(limits):
            refusal = self._check_scope(
                strategy_id,
                limits,
                f"strategy {strategy_id}",
                symbol,
                side,
                qty_lots,
                px_ticks,
                tick_value,
                is_replace,
                extra_qty_lots,
                None if band_override else limits,
            )
            if refusal is not None:
                return refusal
        glob = self.global_limits
        if glob is not self._glob:  # _checks_anything() of the global limits, kept at hand
            self._glob, self._glob_active = glob, self._checks_anything(glob)
        band: RiskLimits | None = glob
        band_where = "engine-wide"
        if self.instrument_limits:
            own = self.instrument_limits.get(symbol)
            if own is not None and own != _NO_LIMITS:
                band, band_where = own, f"{symbol}'s own band"
        elif not self._glob_active:
            return None
        return self._check_scope(
            None,
            glob,
            "engine-wide",
            symbol,
            side,
            qty_lots,
            px_ticks,
            tick_value,
            is_replace,
            extra_qty_lots,
            None if band_override else band,
            band_where,
        )

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
        band: RiskLimits | None,
        band_where: str = "",
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
            exposure = self._exposure[symbol][key]
            pos = exposure.position
            working = exposure.buy if side > 0 else exposure.sell
            added = extra_qty_lots if is_replace else qty
            worst = pos + int(side) * (working + added)
            if abs(worst) > lim.max_position_lots and abs(worst) > abs(pos):
                return RiskRefusal(
                    "max_position",
                    f"position {pos:+d} with working {int(side) * working:+d} and this "
                    f"order {int(side) * added:+d} lots reaches {worst:+d}, beyond "
                    f"±{lim.max_position_lots} lots ({where})",
                )
        if (
            band is not None
            and px_ticks
            and (band.price_band_ticks is not None or band.price_band_pct is not None)
        ):
            refusal = self._check_band(band, symbol, side, px_ticks, band_where or where)
            if refusal is not None:
                return refusal
        if (
            lim.max_open_orders is not None
            and not is_replace
            and self.open_orders(key) + 1 > lim.max_open_orders
        ):
            return RiskRefusal(
                "max_open_orders",
                f"{self.open_orders(key)} working + 1 > {lim.max_open_orders} ({where})",
            )
        if lim.max_orders_per_second is not None:
            sent = self.sent_in_window(key)
            if sent + 1 > lim.max_orders_per_second:
                return RiskRefusal(
                    "max_order_rate",
                    f"{sent} orders in the last second + 1 > "
                    f"{lim.max_orders_per_second}/s ({where})",
                )
        return None

    def sent_in_window(self, strategy_id: int | None = None) -> int:
        """Return the new and replace requests of a strategy (or all) in the last second."""
        now = self.clock.monotonic_ns()
        scopes = self._scopes
        if strategy_id is not None:
            return scopes[strategy_id].in_window(now)
        n = 0
        for scope in scopes.values():
            n += scope.in_window(now)
        return n

    def _check_band(
        self, band: RiskLimits, symbol: str, side: Side, px_ticks: int, where: str
    ) -> RiskRefusal | None:
        ref = self.reference_px(symbol) if self.reference_px is not None else None
        if ref is None:
            return None
        off = px_ticks - ref
        pct = off * 100.0 / ref if ref > 0 else None
        too_far = []
        if band.price_band_ticks is not None and abs(off) > band.price_band_ticks:
            too_far.append(f"±{band.price_band_ticks} ticks")
        if band.price_band_pct is not None and pct is not None and abs(pct) > band.price_band_pct:
            too_far.append(f"±{band.price_band_pct:g}%")
        if not too_far:
            return None
        away = "above" if off > 0 else "below"
        how_far = f"{abs(off)} ticks" + (f" ({abs(pct):.1f}%)" if pct is not None else "")
        return RiskRefusal(
            "price_band",
            f"{side.name.lower()} at {px_ticks} ticks is {how_far} {away} the reference "
            f"{ref}, beyond {' and '.join(too_far)} ({where})",
        )
