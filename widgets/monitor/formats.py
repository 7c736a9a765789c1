# SPDX-License-Identifier: MIT
"""Display text for the Monitor: prices and quantities per instrument, enums, P&L, times.

Prices arrive in ticks and quantities in lots; :class:`InstrumentFormats` learns each
instrument's tick and lot size from ``InstrumentAdded`` and turns them into exact decimal text
with scaled integers (no float rounding), with the same number of decimals for every price of
one instrument.
"""

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from engine.enums import AlertLevel, KillLevel, OrdStatus, OrdType, Side, StrategyState, TimeInForce
from engine.events import InstrumentAdded
from widgets.fmt import fmt_duration_ns, fmt_ts_utc

#: Display text of each side.
SIDE_TEXT = {Side.BUY: "Buy", Side.SELL: "Sell"}
#: Tone (theme colour name) of each side.
SIDE_TONE = {Side.BUY: "bid", Side.SELL: "ask"}

#: Display text of each order status (OrdStatus <39>).
STATUS_TEXT = {
    OrdStatus.NEW: "New",
    OrdStatus.PARTIALLY_FILLED: "Partially filled",
    OrdStatus.FILLED: "Filled",
    OrdStatus.DONE_FOR_DAY: "Done for day",
    OrdStatus.CANCELED: "Canceled",
    OrdStatus.REPLACED: "Replaced",
    OrdStatus.PENDING_CANCEL: "Pending cancel",
    OrdStatus.STOPPED: "Stopped",
    OrdStatus.REJECTED: "Rejected",
    OrdStatus.SUSPENDED: "Suspended",
    OrdStatus.PENDING_NEW: "Pending new",
    OrdStatus.CALCULATED: "Calculated",
    OrdStatus.EXPIRED: "Expired",
    OrdStatus.ACCEPTED_FOR_BIDDING: "Accepted for bidding",
    OrdStatus.PENDING_REPLACE: "Pending replace",
}

#: Statuses after which an order can no longer trade.
TERMINAL_STATUSES = frozenset(
    {
        OrdStatus.FILLED,
        OrdStatus.CANCELED,
        OrdStatus.REJECTED,
        OrdStatus.EXPIRED,
        OrdStatus.DONE_FOR_DAY,
        OrdStatus.STOPPED,
        OrdStatus.CALCULATED,
    }
)

#: Tone of each status; statuses not listed use the default text colour.
STATUS_TONE = {
    OrdStatus.FILLED: "ok",
    OrdStatus.PARTIALLY_FILLED: "ok",
    OrdStatus.REJECTED: "bad",
    OrdStatus.CANCELED: "muted",
    OrdStatus.EXPIRED: "muted",
    OrdStatus.DONE_FOR_DAY: "muted",
    OrdStatus.PENDING_NEW: "warn",
    OrdStatus.PENDING_CANCEL: "warn",
    OrdStatus.PENDING_REPLACE: "warn",
}

#: Display text of order types and times in force.
ORD_TYPE_TEXT = {OrdType.MARKET: "Market", OrdType.LIMIT: "Limit"}
TIF_TEXT = {
    TimeInForce.DAY: "Day",
    TimeInForce.GTC: "GTC",
    TimeInForce.IOC: "IOC",
    TimeInForce.FOK: "FOK",
}

#: Display text and tone of alert levels.
LEVEL_TEXT = {
    AlertLevel.INFO: "Info",
    AlertLevel.WARNING: "Warning",
    AlertLevel.ERROR: "Error",
    AlertLevel.CRITICAL: "Critical",
}
LEVEL_TONE = {
    AlertLevel.INFO: "",
    AlertLevel.WARNING: "warn",
    AlertLevel.ERROR: "bad",
    AlertLevel.CRITICAL: "bad",
}

#: Display text of kill-switch levels.
KILL_TEXT = {
    KillLevel.OFF: "Off",
    KillLevel.BLOCK_NEW: "Block new",
    KillLevel.CANCEL_ALL: "Cancel all",
    KillLevel.FLATTEN: "Flatten",
}

#: Display text and tone of strategy states.
STRATEGY_STATE_TEXT = {
    StrategyState.STOPPED: "Stopped",
    StrategyState.RUNNING: "Running",
    StrategyState.PAUSED: "Paused",
    StrategyState.HALTED: "Halted",  # by the kill switch; only an explicit resume lifts it
}
STRATEGY_STATE_TONE = {
    StrategyState.STOPPED: "muted",
    StrategyState.RUNNING: "ok",
    StrategyState.PAUSED: "warn",
    StrategyState.HALTED: "bad",
}


def is_working(status: OrdStatus, leaves_qty_lots: int) -> bool:
    """Return whether an order in ``status`` with ``leaves_qty_lots`` can still trade."""
    return status not in TERMINAL_STATUSES and (
        leaves_qty_lots > 0 or status is OrdStatus.PENDING_NEW
    )


#: ``HH:MM:SS`` of recent whole seconds: tables format thousands of times a second, mostly
#: within the same few seconds, and ``strftime`` is the costly part.
_HMS_CACHE: dict[int, str] = {}


def fmt_time(ts_ns: int) -> str:
    """Format ns since the epoch as UTC ``HH:MM:SS.ffffff``; ``""`` for 0 (never)."""
    if not ts_ns:
        return ""
    secs, frac = divmod(ts_ns, 1_000_000_000)
    hms = _HMS_CACHE.get(secs)
    if hms is None:
        if len(_HMS_CACHE) > 4096:
            _HMS_CACHE.clear()
        hms = _HMS_CACHE[secs] = fmt_ts_utc(secs * 1_000_000_000, precision=0)
    return f"{hms}.{frac // 1000:06d}"


def fmt_latency(start_ns: int, end_ns: int) -> str:
    """Format ``end - start`` as a duration; ``""`` when either is unknown."""
    return fmt_duration_ns(end_ns - start_ns) if start_ns and end_ns else ""


def fmt_money(value: float) -> str:
    """Format an amount of money with thousands separators and 2 decimals (``-1,234.50``)."""
    text = f"{value:,.2f}"
    return "0.00" if text == "-0.00" else text


def money_tone(value: float) -> str:
    """Return ``ok`` for a gain, ``bad`` for a loss and ``""`` for zero."""
    if value > 0.005:
        return "ok"
    if value < -0.005:
        return "bad"
    return ""


def _decimals(d: Decimal) -> int:
    exp = d.normalize().as_tuple().exponent
    return max(0, -exp) if isinstance(exp, int) else 0


def _fmt_scaled(units: int, decimals: int) -> str:
    # ``units`` is the value times 10**decimals: exact, no float rounding.
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), 10**decimals)
    if decimals == 0:
        return f"{sign}{whole:,}"
    return f"{sign}{whole:,}.{frac:0{decimals}d}"


@dataclass(frozen=True, slots=True)
class InstrumentFormat:
    """How one instrument's prices and quantities are written.

    ``tick_units`` is the tick size times ``10**price_decimals`` (an exact integer), and the
    same for lots.
    """

    symbol: str
    tick_size: Decimal
    lot_size: Decimal
    multiplier: Decimal
    currency: str
    price_decimals: int
    qty_decimals: int
    tick_units: int
    lot_units: int

    @classmethod
    def from_event(cls, ev: InstrumentAdded) -> "InstrumentFormat":
        """Build the format from an ``InstrumentAdded`` event (decimal-text sizes)."""
        try:
            tick, lot = Decimal(ev.tick_size), Decimal(ev.lot_size)
            mult = Decimal(ev.multiplier or "1")
        except InvalidOperation:
            raise ValueError(
                f"{ev.symbol}: tick size {ev.tick_size!r} / lot size {ev.lot_size!r} "
                "is not a decimal number"
            ) from None
        pd, qd = _decimals(tick), _decimals(lot)
        return cls(
            symbol=ev.symbol,
            tick_size=tick,
            lot_size=lot,
            multiplier=mult,
            currency=ev.currency,
            price_decimals=pd,
            qty_decimals=qd,
            tick_units=int(tick.scaleb(pd)),
            lot_units=int(lot.scaleb(qd)),
        )

    def price(self, px_ticks: int) -> str:
        """Return the price of ``px_ticks`` as text (``4,512.25``)."""
        return _fmt_scaled(px_ticks * self.tick_units, self.price_decimals)

    def avg_price(self, avg_px_ticks: float) -> str:
        """Return an average price (float ticks) with two more decimals than a price."""
        d = self.price_decimals + 2
        value = Decimal(repr(avg_px_ticks)) * self.tick_size
        return _fmt_scaled(int(value.scaleb(d).to_integral_value()), d)

    def qty(self, qty_lots: int) -> str:
        """Return the quantity of ``qty_lots`` as text."""
        return _fmt_scaled(qty_lots * self.lot_units, self.qty_decimals)

    def parse_price(self, text: str) -> int:
        """Return the ticks of a price typed by the user; raise ``ValueError`` off the grid."""
        value = _parse_decimal(text, "price")
        ticks, rest = divmod(value, self.tick_size)
        if rest != 0:
            raise ValueError(
                f"price {text.strip()} is not on the tick grid of {self.symbol} "
                f"(tick size {self.tick_size})"
            )
        return int(ticks)

    def parse_qty(self, text: str) -> int:
        """Return the lots of a quantity typed by the user; raise ``ValueError`` when invalid."""
        value = _parse_decimal(text, "quantity")
        if value <= 0:
            raise ValueError(f"quantity must be greater than 0 (got {text.strip()})")
        lots, rest = divmod(value, self.lot_size)
        if rest != 0:
            raise ValueError(
                f"quantity {text.strip()} is not a multiple of the lot size {self.lot_size} "
                f"of {self.symbol}"
            )
        return int(lots)


def _parse_decimal(text: str, what: str) -> Decimal:
    cleaned = text.strip().replace(",", "").replace("_", "")
    if not cleaned:
        raise ValueError(f"{what} is empty")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"{what} {text.strip()!r} is not a number") from None
    if not value.is_finite():
        raise ValueError(f"{what} {text.strip()!r} is not a number")
    return value


class InstrumentFormats:
    """The formats of every instrument seen so far, with raw fallbacks for unknown ones.

    Before an instrument's ``InstrumentAdded`` arrives its prices show as raw ticks with a
    ``t`` suffix (``1234t``) and its quantities as lots, so nothing is silently mis-scaled.
    """

    def __init__(self) -> None:
        self._by_symbol: dict[str, InstrumentFormat] = {}

    def add(self, ev: InstrumentAdded) -> InstrumentFormat:
        """Learn (or update) an instrument's format from its event."""
        fmt = InstrumentFormat.from_event(ev)
        self._by_symbol[ev.symbol] = fmt
        return fmt

    def get(self, symbol: str) -> InstrumentFormat | None:
        """Return the format of ``symbol``, or ``None`` when it is unknown."""
        return self._by_symbol.get(symbol)

    def symbols(self) -> list[str]:
        """Return the known symbols, sorted."""
        return sorted(self._by_symbol)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self._by_symbol

    def price(self, symbol: str, px_ticks: int) -> str:
        """Return a price as text."""
        f = self._by_symbol.get(symbol)
        return f.price(px_ticks) if f else f"{px_ticks:,}t"

    def avg_price(self, symbol: str, avg_px_ticks: float) -> str:
        """Return an average price as text; ``""`` for 0 (no fills)."""
        if not avg_px_ticks:
            return ""
        f = self._by_symbol.get(symbol)
        return f.avg_price(avg_px_ticks) if f else f"{avg_px_ticks:,.2f}t"

    def qty(self, symbol: str, qty_lots: int) -> str:
        """Return a quantity as text."""
        f = self._by_symbol.get(symbol)
        return f.qty(qty_lots) if f else f"{qty_lots:,}"
