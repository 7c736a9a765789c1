# SPDX-License-Identifier: MIT
"""OUCH 5.0 messages (Nasdaq specification): layouts, immutable message types, codec.

Inbound (client to exchange, carried in SoupBinTCP Unsequenced Data): Enter Order 'O',
Replace Order 'U', Cancel Order 'X', Modify Order 'M', Account Query 'Q'.
Outbound (exchange to client, in Sequenced Data): System Event 'S', Order Accepted 'A', Order
Replaced 'U', Order Canceled 'C', AIQ Canceled 'D', Order Executed 'E', Broken Trade 'B',
Trade Correction 'F', Rejected 'J', Cancel Pending 'P', Cancel Reject 'I', Order Priority
Update 'T', Order Modified 'M', Order Restated 'R', Account Query Response 'Q'.

Integers are unsigned big-endian; Price is an 8-byte integer with 4 implied decimals
(``63.02`` is ``630200``; :class:`PriceScale` maps it to an instrument's ticks); Timestamp is
nanoseconds since midnight; alpha fields are ASCII, left-justified and padded with spaces
(decoding strips the padding). The messages that carry one end with AppendageLength and the
optional appendage: TagValue options, each a length byte (tag + value), a tag byte and the
value (:data:`OPTIONS`).

Each message type is a frozen dataclass whose ``LAYOUT`` names its fields in wire order;
:meth:`OuchMessage.fields` lists ``(spec name, value)`` pairs for the message inspector.
Encoding and decoding run in the kernels of :mod:`engine.venues.ouch._kernels`, driven by
tables compiled here from the layouts.

Not checked here: field values against the specification's code sets (a Side of ``'Z'``
encodes and decodes), and whether an option is allowed on a given message type.

Why one long module: the message types and their codec are one unit. The codec is generated
from each type's ``LAYOUT`` (a struct encoder, decoder and constructor written out per message
type, the kernels' layout tables checked against the dataclass fields), and
:meth:`OuchMessage.encode` calls it; split apart, the two modules would import each other.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import fields as dc_fields
from decimal import Decimal
from typing import Any, ClassVar, Final

import numpy as np

from engine.instruments import Instrument
from engine.venues.ouch import _kernels as k

#: Implied decimals of an OUCH Price.
PRICE_DECIMALS: Final = 4
#: One unit of price (1.0) in the wire's integer form.
PRICE_SCALE: Final = 10**PRICE_DECIMALS

#: Direction indices of the layout tables.
INBOUND: Final = 0  # client to exchange
OUTBOUND: Final = 1  # exchange to client

# ----------------------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One TagValue option of the appendage: its tag, spec name, kind and value size."""

    tag: int
    name: str
    kind: int  # k.K_UINT, k.K_INT, k.K_CHAR or k.K_ALPHA
    size: int
    #: True for prices (4 implied decimals): shown as Decimal by ``fields()``.
    price: bool = False


#: The OUCH 5.0 appendage options by tag.
OPTIONS: Final[dict[int, OptionSpec]] = {
    s.tag: s
    for s in (
        OptionSpec(1, "SecondaryOrdRefNum", k.K_UINT, 8),
        OptionSpec(2, "Firm", k.K_ALPHA, 4),
        OptionSpec(3, "MinQty", k.K_UINT, 4),
        OptionSpec(4, "CustomerType", k.K_CHAR, 1),
        OptionSpec(5, "MaxFloor", k.K_UINT, 4),
        OptionSpec(6, "PriceType", k.K_CHAR, 1),
        OptionSpec(7, "PegOffset", k.K_INT, 4, price=True),
        OptionSpec(9, "DiscretionPrice", k.K_INT, 8, price=True),
        OptionSpec(10, "DiscretionPriceType", k.K_CHAR, 1),
        OptionSpec(11, "DiscretionPegOffset", k.K_INT, 4, price=True),
        OptionSpec(12, "PostOnly", k.K_CHAR, 1),
        OptionSpec(13, "RandomReserves", k.K_UINT, 4),
        OptionSpec(14, "Route", k.K_ALPHA, 4),
        OptionSpec(15, "ExpireTime", k.K_UINT, 4),
        OptionSpec(16, "TradeNow", k.K_CHAR, 1),
        OptionSpec(17, "HandleInst", k.K_CHAR, 1),
        OptionSpec(18, "BBOWeightIndicator", k.K_CHAR, 1),
        OptionSpec(19, "ReferencePrice", k.K_INT, 8, price=True),
        OptionSpec(20, "ReferencePriceType", k.K_CHAR, 1),
        OptionSpec(22, "DisplayQuantity", k.K_UINT, 4),
        OptionSpec(23, "DisplayPrice", k.K_INT, 8, price=True),
        OptionSpec(24, "GroupID", k.K_UINT, 2),
        OptionSpec(25, "SharesLocated", k.K_CHAR, 1),
        OptionSpec(27, "LocateBroker", k.K_ALPHA, 4),
        OptionSpec(28, "Side", k.K_CHAR, 1),
        OptionSpec(29, "UserRefIdx", k.K_UINT, 1),
    )
}
#: Option tag by spec name.
OPTION_TAGS: Final[dict[str, int]] = {s.name: s.tag for s in OPTIONS.values()}


@dataclass(frozen=True, slots=True)
class TagValue:
    """One appendage option.

    ``value`` is an int for numeric options (prices in the 4-decimal integer form), a str for
    alpha and one-character options, or bytes for a tag this module does not know.
    """

    tag: int
    value: int | str | bytes

    @property
    def name(self) -> str:
        """Return the option's spec name (``"Tag<n>"`` for an unknown tag)."""
        spec = OPTIONS.get(self.tag)
        return spec.name if spec is not None else f"Tag{self.tag}"

    @classmethod
    def of(cls, name: str, value: int | str) -> TagValue:
        """Return the option called ``name`` (``"Firm"``, ``"MinQty"`` ...) with ``value``."""
        try:
            return cls(OPTION_TAGS[name], value)
        except KeyError:
            raise ValueError(f"unknown OUCH option {name!r}") from None


def encode_options(options: tuple[TagValue, ...] | list[TagValue]) -> bytes:
    """Return the appendage bytes of ``options`` (without AppendageLength).

    Raises
    ------
    ValueError
        If a value does not fit its option (text too long, number out of range).
    """
    out = bytearray()
    for opt in options:
        spec = OPTIONS.get(opt.tag)
        v = opt.value
        if isinstance(v, bytes):
            raw = v
        elif spec is None:
            raise ValueError(f"option tag {opt.tag}: unknown; give its value as bytes")
        elif spec.kind in (k.K_ALPHA, k.K_CHAR):
            raw = _pad(spec.name, str(v), spec.size)
        else:
            if not isinstance(v, int):
                raise ValueError(f"{spec.name}: expected an int, got {v!r}")
            raw = _int_bytes(spec.name, v, spec.size, signed=spec.kind == k.K_INT)
        if not 0 <= opt.tag <= 255 or len(raw) > 254:
            raise ValueError(f"option tag {opt.tag}: tag or value out of range")
        out += bytes((len(raw) + 1, opt.tag)) + raw
    return bytes(out)


#: Most appendage options one message may carry (a decode error beyond).
MAX_OPTIONS: Final = 64


_SET_TAG = vars(TagValue)["tag"].__set__
_SET_VALUE = vars(TagValue)["value"].__set__


def _tag_value(tag: int, value: int | str | bytes) -> TagValue:
    # TagValue(tag, value) through the slots' setters: the frozen dataclass's __init__ sets
    # each field through object.__setattr__ (half a decoded option's time).
    tv: TagValue = object.__new__(TagValue)
    _SET_TAG(tv, tag)
    _SET_VALUE(tv, value)
    return tv


def _options(data: bytes, rows: list[list[int]]) -> tuple[TagValue, ...]:
    out = []
    for tag, at, size in rows:
        value = data[at : at + size]
        spec = OPTIONS.get(tag)
        if spec is None or spec.size != size:
            out.append(_tag_value(tag, value))
        elif spec.kind == k.K_ALPHA:
            out.append(_tag_value(tag, value.decode("latin-1").rstrip(" ")))
        elif spec.kind == k.K_CHAR:
            out.append(_tag_value(tag, value.decode("latin-1")))  # a space is a code of its own
        else:
            out.append(_tag_value(tag, int.from_bytes(value, "big", signed=spec.kind == k.K_INT)))
    return tuple(out)


def decode_options(raw: bytes | memoryview) -> tuple[TagValue, ...]:
    """Return the options of appendage bytes ``raw`` (without AppendageLength).

    Raises
    ------
    ValueError
        If an option is cut off or has length 0.
    """
    buf = np.frombuffer(raw, np.uint8)
    rows = np.empty((len(buf) // 2 + 1, 3), np.int64)
    n = k.parse_appendage(buf, 0, len(buf), rows)
    if n < 0:
        raise ValueError(f"OUCH appendage: an option is cut off or empty: {bytes(raw).hex()}")
    return _options(bytes(raw), rows[:n].tolist())


# ----------------------------------------------------------------------------- helpers


def _pad(name: str, text: str, size: int) -> bytes:
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError(f"{name}: {text!r} is not ASCII text") from None
    if len(raw) > size:
        raise ValueError(f"{name}: {text!r} is longer than {size} characters")
    return raw.ljust(size, b" ")


def _int_bytes(name: str, v: int, size: int, *, signed: bool) -> bytes:
    try:
        return int(v).to_bytes(size, "big", signed=signed)
    except OverflowError:
        raise ValueError(f"{name}: {v} does not fit in {size} bytes") from None


def price_to_decimal(px: int) -> Decimal:
    """Return the OUCH price ``px`` (4 implied decimals) as an exact Decimal."""
    return Decimal(px).scaleb(-PRICE_DECIMALS)


def decimal_to_price(price: Decimal | str | int) -> int:
    """Return ``price`` in OUCH's integer form (4 implied decimals).

    Raises
    ------
    ValueError
        If the price has more than 4 decimals.
    """
    d = Decimal(price) * PRICE_SCALE
    if d != d.to_integral_value():
        raise ValueError(f"price {price}: OUCH prices have at most {PRICE_DECIMALS} decimals")
    return int(d)


class PriceScale:
    """Map between an instrument's ticks and lots and OUCH prices and quantities.

    Parameters
    ----------
    instrument : Instrument
        Its ``tick_size`` must be a whole number of 0.0001 and its ``lot_size`` a whole number
        of shares.

    Raises
    ------
    ValueError
        If the instrument's tick or lot cannot be expressed on the wire.
    """

    __slots__ = ("_lot", "_per_tick", "instrument")

    def __init__(self, instrument: Instrument) -> None:
        self.instrument = instrument
        per_tick = instrument.tick_size * PRICE_SCALE
        if per_tick != per_tick.to_integral_value():
            raise ValueError(
                f"{instrument.symbol}: tick size {instrument.tick_size} is finer than OUCH's "
                f"{Decimal(1).scaleb(-PRICE_DECIMALS)}"
            )
        if instrument.lot_size != instrument.lot_size.to_integral_value():
            raise ValueError(
                f"{instrument.symbol}: lot size {instrument.lot_size} is not whole shares"
            )
        self._per_tick = int(per_tick)
        self._lot = int(instrument.lot_size)

    def price_from_ticks(self, px_ticks: int) -> int:
        """Return the OUCH price (4 implied decimals) of ``px_ticks``."""
        return px_ticks * self._per_tick

    def ticks_from_price(self, price: int) -> int:
        """Return the ticks of OUCH price ``price``.

        Raises
        ------
        ValueError
            If the price lies off the instrument's tick grid.
        """
        ticks, rest = divmod(price, self._per_tick)
        if rest:
            raise ValueError(
                f"{self.instrument.symbol}: OUCH price {price_to_decimal(price)} is not a "
                f"multiple of tick size {self.instrument.tick_size}"
            )
        return ticks

    def quantity_from_lots(self, qty_lots: int) -> int:
        """Return the OUCH quantity (shares) of ``qty_lots``."""
        return qty_lots * self._lot

    def lots_from_quantity(self, quantity: int) -> int:
        """Return the lots of ``quantity`` shares.

        Raises
        ------
        ValueError
            If the quantity is not a whole number of lots.
        """
        lots, rest = divmod(quantity, self._lot)
        if rest:
            raise ValueError(
                f"{self.instrument.symbol}: quantity {quantity} is not a multiple of lot size "
                f"{self.instrument.lot_size}"
            )
        return lots


# ----------------------------------------------------------------------------- layouts


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One fixed field of a message layout."""

    attr: str  # dataclass attribute
    name: str  # spec name, shown by the message inspector
    kind: int
    size: int
    price: bool = False


def _u(attr: str, name: str, size: int) -> FieldSpec:
    return FieldSpec(attr, name, k.K_UINT, size)


def _c(attr: str, name: str) -> FieldSpec:
    return FieldSpec(attr, name, k.K_CHAR, 1)


def _a(attr: str, name: str, size: int) -> FieldSpec:
    return FieldSpec(attr, name, k.K_ALPHA, size)


def _p(attr: str, name: str) -> FieldSpec:
    return FieldSpec(attr, name, k.K_INT, 8, price=True)


TIMESTAMP = _u("timestamp", "Timestamp", 8)
USER_REF = _u("user_ref_num", "UserRefNum", 4)
ORIG_USER_REF = _u("orig_user_ref_num", "OrigUserRefNum", 4)
SIDE = _c("side", "Side")
QTY = _u("quantity", "Quantity", 4)
SYMBOL = _a("symbol", "Symbol", 8)
PRICE = _p("price", "Price")
TIF = _c("time_in_force", "TimeInForce")
DISPLAY = _c("display", "Display")
CAPACITY = _c("capacity", "Capacity")
ISO = _c("inter_market_sweep_eligibility", "InterMarketSweepEligibility")
CROSS = _c("cross_type", "CrossType")
CLORDID = _a("cl_ord_id", "ClOrdID", 14)
ORDER_REF = _u("order_reference_number", "OrderReferenceNumber", 8)
ORDER_STATE = _c("order_state", "OrderState")
REASON = _c("reason", "Reason")
LIQUIDITY = _c("liquidity_flag", "LiquidityFlag")
MATCH = _u("match_number", "MatchNumber", 8)


class OuchMessage:
    """Base of every OUCH message type (the dataclasses below)."""

    __slots__ = ()

    #: Message type byte.
    TYPE: ClassVar[bytes]
    #: ``INBOUND`` (client to exchange) or ``OUTBOUND``.
    DIRECTION: ClassVar[int]
    #: Fixed fields in wire order.
    LAYOUT: ClassVar[tuple[FieldSpec, ...]]
    #: Whether AppendageLength and the appendage follow the fixed fields.
    HAS_APPENDAGE: ClassVar[bool] = False
    #: Spec name of the message.
    NAME: ClassVar[str]

    def fields(self) -> list[tuple[str, Any]]:
        """Return ``(spec name, value)`` for every field on the wire, in wire order.

        Prices are exact Decimals; appendage options follow AppendageLength, each under its
        own name.
        """
        out: list[tuple[str, Any]] = [("MessageType", self.TYPE.decode())]
        for f in self.LAYOUT:
            v = getattr(self, f.attr)
            out.append((f.name, price_to_decimal(v) if f.price else v))
        if self.HAS_APPENDAGE:
            options: tuple[TagValue, ...] = getattr(self, "appendage", ())
            out.append(("AppendageLength", len(encode_options(options))))
            for opt in options:
                spec = OPTIONS.get(opt.tag)
                v2 = opt.value
                if spec is not None and spec.price and isinstance(v2, int):
                    out.append((opt.name, price_to_decimal(v2)))
                else:
                    out.append((opt.name, v2))
        return out

    def encode(self) -> bytes:
        """Return the message's bytes (type byte first, no SoupBinTCP header)."""
        return encode(self)

    def options(self) -> dict[str, int | str | bytes]:
        """Return the appendage options by name (empty for a type without an appendage)."""
        return {o.name: o.value for o in getattr(self, "appendage", ())}


# --- inbound -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EnterOrder(OuchMessage):
    """Enter Order 'O': a new order."""

    TYPE = b"O"
    DIRECTION = INBOUND
    NAME = "EnterOrder"
    HAS_APPENDAGE = True
    LAYOUT = (USER_REF, SIDE, QTY, SYMBOL, PRICE, TIF, DISPLAY, CAPACITY, ISO, CROSS, CLORDID)

    user_ref_num: int
    side: str
    quantity: int
    symbol: str
    price: int
    time_in_force: str = "0"
    display: str = "Y"
    capacity: str = "A"
    inter_market_sweep_eligibility: str = "N"
    cross_type: str = "N"
    cl_ord_id: str = ""
    appendage: tuple[TagValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaceOrder(OuchMessage):
    """Replace Order 'U': replace a live order (new UserRefNum, quantity, price ...)."""

    TYPE = b"U"
    DIRECTION = INBOUND
    NAME = "ReplaceOrder"
    HAS_APPENDAGE = True
    LAYOUT = (ORIG_USER_REF, USER_REF, QTY, PRICE, TIF, DISPLAY, ISO, CLORDID)

    orig_user_ref_num: int
    user_ref_num: int
    quantity: int
    price: int
    time_in_force: str = "0"
    display: str = "Y"
    inter_market_sweep_eligibility: str = "N"
    cl_ord_id: str = ""
    appendage: tuple[TagValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelOrder(OuchMessage):
    """Cancel Order 'X': reduce an order to ``quantity`` shares (0 cancels it)."""

    TYPE = b"X"
    DIRECTION = INBOUND
    NAME = "CancelOrder"
    LAYOUT = (USER_REF, QTY)

    user_ref_num: int
    quantity: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModifyOrder(OuchMessage):
    """Modify Order 'M': change the side (sell / sell short ...) or reduce the quantity."""

    TYPE = b"M"
    DIRECTION = INBOUND
    NAME = "ModifyOrder"
    LAYOUT = (USER_REF, SIDE, QTY)

    user_ref_num: int
    side: str
    quantity: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountQuery(OuchMessage):
    """Account Query 'Q': ask for the next expected UserRefNum."""

    TYPE = b"Q"
    DIRECTION = INBOUND
    NAME = "AccountQuery"
    LAYOUT = ()


# --- outbound ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemEvent(OuchMessage):
    """System Event 'S': start ('S') or end ('E') of day."""

    TYPE = b"S"
    DIRECTION = OUTBOUND
    NAME = "SystemEvent"
    LAYOUT = (TIMESTAMP, _c("event_code", "EventCode"))

    timestamp: int
    event_code: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderAccepted(OuchMessage):
    """Order Accepted 'A': the order is live (OrderState 'L') or already dead ('D')."""

    TYPE = b"A"
    DIRECTION = OUTBOUND
    NAME = "OrderAccepted"
    HAS_APPENDAGE = True
    LAYOUT = (
        TIMESTAMP, USER_REF, SIDE, QTY, SYMBOL, PRICE, TIF, DISPLAY, ORDER_REF, CAPACITY,
        ISO, CROSS, ORDER_STATE, CLORDID,
    )  # fmt: skip

    timestamp: int
    user_ref_num: int
    side: str
    quantity: int
    symbol: str
    price: int
    time_in_force: str
    display: str
    order_reference_number: int
    capacity: str
    inter_market_sweep_eligibility: str
    cross_type: str
    order_state: str
    cl_ord_id: str
    appendage: tuple[TagValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderReplaced(OuchMessage):
    """Order Replaced 'U': the replacement of ``orig_user_ref_num`` is live."""

    TYPE = b"U"
    DIRECTION = OUTBOUND
    NAME = "OrderReplaced"
    HAS_APPENDAGE = True
    LAYOUT = (
        TIMESTAMP, ORIG_USER_REF, USER_REF, SIDE, QTY, SYMBOL, PRICE, TIF, DISPLAY, ORDER_REF,
        CAPACITY, ISO, CROSS, ORDER_STATE, CLORDID,
    )  # fmt: skip

    timestamp: int
    orig_user_ref_num: int
    user_ref_num: int
    side: str
    quantity: int
    symbol: str
    price: int
    time_in_force: str
    display: str
    order_reference_number: int
    capacity: str
    inter_market_sweep_eligibility: str
    cross_type: str
    order_state: str
    cl_ord_id: str
    appendage: tuple[TagValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderCanceled(OuchMessage):
    """Order Canceled 'C': ``quantity`` shares were just canceled (incremental)."""

    TYPE = b"C"
    DIRECTION = OUTBOUND
    NAME = "OrderCanceled"
    LAYOUT = (TIMESTAMP, USER_REF, QTY, REASON)

    timestamp: int
    user_ref_num: int
    quantity: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AiqCanceled(OuchMessage):
    """AIQ Canceled 'D': shares canceled by anti-internalization (self-match prevention)."""

    TYPE = b"D"
    DIRECTION = OUTBOUND
    NAME = "AIQCanceled"
    LAYOUT = (
        TIMESTAMP, USER_REF, _u("decrement_shares", "DecrementShares", 4), REASON,
        _u("quantity_prevented_from_trading", "QuantityPreventedFromTrading", 4),
        _p("execution_price", "ExecutionPrice"), LIQUIDITY, _c("aiq_strategy", "AIQStrategy"),
    )  # fmt: skip

    timestamp: int
    user_ref_num: int
    decrement_shares: int
    reason: str
    quantity_prevented_from_trading: int
    execution_price: int
    liquidity_flag: str
    aiq_strategy: str = " "


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderExecuted(OuchMessage):
    """Order Executed 'E': ``quantity`` shares traded at ``price`` (incremental)."""

    TYPE = b"E"
    DIRECTION = OUTBOUND
    NAME = "OrderExecuted"
    HAS_APPENDAGE = True
    LAYOUT = (TIMESTAMP, USER_REF, QTY, PRICE, LIQUIDITY, MATCH)

    timestamp: int
    user_ref_num: int
    quantity: int
    price: int
    liquidity_flag: str
    match_number: int
    appendage: tuple[TagValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokenTrade(OuchMessage):
    """Broken Trade 'B': execution ``match_number`` was broken."""

    TYPE = b"B"
    DIRECTION = OUTBOUND
    NAME = "BrokenTrade"
    LAYOUT = (TIMESTAMP, USER_REF, MATCH, REASON, CLORDID)

    timestamp: int
    user_ref_num: int
    match_number: int
    reason: str
    cl_ord_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TradeCorrection(OuchMessage):
    """Trade Correction 'F': execution ``match_number`` was corrected."""

    TYPE = b"F"
    DIRECTION = OUTBOUND
    NAME = "TradeCorrection"
    LAYOUT = (TIMESTAMP, USER_REF, QTY, PRICE, LIQUIDITY, MATCH, REASON, CLORDID)

    timestamp: int
    user_ref_num: int
    quantity: int
    price: int
    liquidity_flag: str
    match_number: int
    reason: str
    cl_ord_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected(OuchMessage):
    """Rejected 'J': an Enter or Replace Order was rejected (numeric ``reason``)."""

    TYPE = b"J"
    DIRECTION = OUTBOUND
    NAME = "Rejected"
    LAYOUT = (TIMESTAMP, USER_REF, _u("reason", "Reason", 2), CLORDID)

    timestamp: int
    user_ref_num: int
    reason: int
    cl_ord_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelPending(OuchMessage):
    """Cancel Pending 'P': a cancel will take effect when the order leaves a cross."""

    TYPE = b"P"
    DIRECTION = OUTBOUND
    NAME = "CancelPending"
    LAYOUT = (TIMESTAMP, USER_REF)

    timestamp: int
    user_ref_num: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelReject(OuchMessage):
    """Cancel Reject 'I': a cancel of an order in a cross was refused."""

    TYPE = b"I"
    DIRECTION = OUTBOUND
    NAME = "CancelReject"
    LAYOUT = (TIMESTAMP, USER_REF)

    timestamp: int
    user_ref_num: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderPriorityUpdate(OuchMessage):
    """Order Priority Update 'T': the order's price or display changed and lost priority."""

    TYPE = b"T"
    DIRECTION = OUTBOUND
    NAME = "OrderPriorityUpdate"
    LAYOUT = (TIMESTAMP, USER_REF, PRICE, DISPLAY, ORDER_REF)

    timestamp: int
    user_ref_num: int
    price: int
    display: str
    order_reference_number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderModified(OuchMessage):
    """Order Modified 'M': a Modify Order took effect."""

    TYPE = b"M"
    DIRECTION = OUTBOUND
    NAME = "OrderModified"
    LAYOUT = (TIMESTAMP, USER_REF, SIDE, QTY)

    timestamp: int
    user_ref_num: int
    side: str
    quantity: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderRestated(OuchMessage):
    """Order Restated 'R': the exchange changed the order (display quantity or price)."""

    TYPE = b"R"
    DIRECTION = OUTBOUND
    NAME = "OrderRestated"
    HAS_APPENDAGE = True
    LAYOUT = (TIMESTAMP, USER_REF, REASON)

    timestamp: int
    user_ref_num: int
    reason: str
    appendage: tuple[TagValue, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountQueryResponse(OuchMessage):
    """Account Query Response 'Q': the next UserRefNum the exchange expects."""

    TYPE = b"Q"
    DIRECTION = OUTBOUND
    NAME = "AccountQueryResponse"
    LAYOUT = (TIMESTAMP, _u("next_user_ref_num", "NextUserRefNum", 4))

    timestamp: int
    next_user_ref_num: int


INBOUND_TYPES: Final[tuple[type[OuchMessage], ...]] = (
    EnterOrder, ReplaceOrder, CancelOrder, ModifyOrder, AccountQuery,
)  # fmt: skip
OUTBOUND_TYPES: Final[tuple[type[OuchMessage], ...]] = (
    SystemEvent, OrderAccepted, OrderReplaced, OrderCanceled, AiqCanceled, OrderExecuted,
    BrokenTrade, TradeCorrection, Rejected, CancelPending, CancelReject, OrderPriorityUpdate,
    OrderModified, OrderRestated, AccountQueryResponse,
)  # fmt: skip

#: Message class by direction and type byte.
CLASSES: Final[tuple[dict[int, type[OuchMessage]], dict[int, type[OuchMessage]]]] = (
    {c.TYPE[0]: c for c in INBOUND_TYPES},
    {c.TYPE[0]: c for c in OUTBOUND_TYPES},
)


class Tables:
    """The layout table of one direction, as the kernels read it (``layout``)."""

    __slots__ = ("layout",)

    def __init__(self, classes: dict[int, type[OuchMessage]]) -> None:
        self.layout = np.zeros((256, k.L_COLUMNS), np.int64)
        self.layout[:, k.L_NFIELDS] = -1
        for t, cls in classes.items():
            layout = cls.LAYOUT
            assert len(layout) <= k.MAX_FIELDS, cls
            attrs = [f.name for f in dc_fields(cls)]  # type: ignore[arg-type]
            expected = [f.attr for f in layout] + (["appendage"] if cls.HAS_APPENDAGE else [])
            assert attrs == expected, (cls.NAME, attrs, expected)
            self.layout[t, k.L_NFIELDS] = len(layout)
            self.layout[t, k.L_HAS_APP] = int(cls.HAS_APPENDAGE)
            for i, f in enumerate(layout):
                self.layout[t, k.L_KIND + i] = f.kind
                self.layout[t, k.L_SIZE + i] = f.size


#: Layout tables by direction (``TABLES[INBOUND]``, ``TABLES[OUTBOUND]``).
TABLES: Final = (Tables(CLASSES[INBOUND]), Tables(CLASSES[OUTBOUND]))


# ----------------------------------------------------------------------------- codec


class OuchDecodeError(ValueError):
    """Bytes that are not an OUCH message of the expected direction (says why)."""


_REASONS = {
    k.DECODE_UNKNOWN_TYPE: "unknown message type",
    k.DECODE_SHORT: "shorter than its fixed fields",
    k.DECODE_BAD_APPENDAGE: "AppendageLength runs past the end of the message",
    k.DECODE_EMPTY: "empty",
}

_EMPTY = np.zeros(0, np.uint8)


class Encoder:
    """Encode OUCH messages, optionally framed as SoupBinTCP packets, into one owned buffer.

    Not thread-safe: one per session (it reuses its buffers).
    """

    __slots__ = ("_alpha", "_alpha_np", "_buf", "_out", "_vals")

    def __init__(self) -> None:
        self._buf = bytearray(1 << 16)
        self._out = np.frombuffer(self._buf, np.uint8)  # a view: slices of _buf are cheap
        self._vals = np.zeros(k.MAX_FIELDS + 2, np.int64)
        self._alpha = bytearray(256)
        self._alpha_np = np.frombuffer(self._alpha, np.uint8)

    def encode(self, msg: OuchMessage, soup_type: bytes = b"") -> bytes:
        """Return ``msg``'s bytes, inside a SoupBinTCP packet of type ``soup_type`` if given.

        Raises
        ------
        ValueError
            If a field does not fit (text too long, number out of range).
        """
        fast = _STRUCT_ENCODERS.get(type(msg))
        raw = fast(msg) if fast is not None else None
        if raw is None:  # a field that does not fit: the kernel path says which
            return self.encode_by_kernel(msg, soup_type)
        if soup_type:
            return (len(raw) + 1).to_bytes(2, "big") + soup_type + raw
        return raw

    def encode_by_kernel(self, msg: OuchMessage, soup_type: bytes = b"") -> bytes:
        """Return :meth:`encode` of ``msg`` the general way: each field checked, then written.

        The layout kernel writes the fields; this is the path that names a field that does
        not fit.

        Raises
        ------
        ValueError
            If a field does not fit (names it).
        """
        vals = self._vals
        alpha = self._alpha
        at = 0
        for i, f in enumerate(msg.LAYOUT):
            v = getattr(msg, f.attr)
            kind = f.kind
            if kind == k.K_CHAR:
                if not isinstance(v, str) or len(v) != 1 or ord(v) > 127:
                    raise ValueError(f"{msg.NAME}.{f.name}: expected one ASCII character: {v!r}")
                vals[i] = ord(v)
            elif kind == k.K_ALPHA:
                vals[i] = at
                alpha[at : at + f.size] = _pad(f.name, v, f.size)
                at += f.size
            else:
                bits = 8 * f.size
                lo, hi = (0, 1 << bits) if kind == k.K_UINT else (-(1 << bits - 1), 1 << bits - 1)
                if not lo <= v < hi or v >= 1 << 63:
                    raise ValueError(f"{msg.NAME}.{f.name}: {v} out of range")
                vals[i] = v
        app_len = 0
        if msg.HAS_APPENDAGE:
            raw = encode_options(getattr(msg, "appendage", ()))
            app_len = len(raw)
            if app_len > len(self._buf) - 256:
                raise ValueError(f"{msg.NAME}: appendage of {app_len} bytes is too long")
        st = soup_type[0] if soup_type else -1
        end = k.encode_fields(
            self._out,
            0,
            st,
            msg.TYPE[0],
            TABLES[msg.DIRECTION].layout,
            vals,
            self._alpha_np,
            self._alpha_np,
            0,
        )
        if app_len:
            # The kernel wrote AppendageLength 0 last: the options are copied after it.
            self._buf[end - 2 : end] = app_len.to_bytes(2, "big")
            self._buf[end : end + app_len] = raw
            end += app_len
            if st >= 0:
                self._buf[0:2] = (end - 2).to_bytes(2, "big")
        return bytes(self._buf[:end])


_ENCODER = Encoder()


def encode(msg: OuchMessage) -> bytes:
    """Return the bytes of ``msg`` (type byte first, no SoupBinTCP header)."""
    return _ENCODER.encode(msg)


def _builder(cls: type[OuchMessage]) -> tuple[tuple[str, int, int, int], ...]:
    return tuple((f.attr, f.kind, f.size, i) for i, f in enumerate(cls.LAYOUT))


def _split_options(data: bytes, start: int, end: int) -> tuple[TagValue, ...] | None:
    """Return the options of the appendage ``data[start:end]``, None when it is malformed.

    :func:`_kernels.parse_appendage`'s rules in Python, for the struct path: a message's few
    options cost less here than the kernel's copy into its buffer (Order Accepted with two
    options: 4.5 µs against 6.2). Malformed: past the end of ``data``, an option cut off or of
    length 0, more than MAX_OPTIONS options; the kernel path then says which. A test decodes
    every type both ways.
    """
    if end > len(data):
        return None
    rows: list[list[int]] = []
    p = start
    while p < end:
        length = data[p]
        if length == 0 or p + 1 + length > end or len(rows) >= MAX_OPTIONS:
            return None
        rows.append([data[p + 1], p + 2, length - 1])
        p += 1 + length
    return _options(data, rows)


_STRUCT_CODES: Final = {
    (k.K_UINT, 1): "B", (k.K_UINT, 2): "H", (k.K_UINT, 4): "I", (k.K_UINT, 8): "Q",
    (k.K_INT, 1): "b", (k.K_INT, 2): "h", (k.K_INT, 4): "i", (k.K_INT, 8): "q",
    (k.K_CHAR, 1): "c",
}  # fmt: skip


#: A character field's bytes by its value (ASCII only: anything else is not in it).
CHAR_BYTES: Final = {chr(i): bytes([i]) for i in range(128)}
_MAX_U63: Final = 1 << 63


def _struct_encoder(cls: type[OuchMessage]) -> Callable[[OuchMessage], bytes | None]:
    # The message's fields packed by one struct call, written out per type (as the decoders
    # are): Order Accepted 6.7 -> ~1.5 µs. Anything that does not fit (a text too long, a
    # character that is not one ASCII byte, a number out of range) returns None, and
    # encode_by_kernel then raises the error that names the field.
    layout = cls.LAYOUT
    fmt = ">c" + "".join(
        f"{f.size}s" if f.kind == k.K_ALPHA else _STRUCT_CODES[f.kind, f.size] for f in layout
    )
    if cls.HAS_APPENDAGE:
        fmt += "H"
    names: dict[str, Any] = {
        "pack": struct.Struct(fmt).pack, "B": CHAR_BYTES, "M63": _MAX_U63, "T": cls.TYPE,
        "opts": encode_options, "error": struct.error,
    }  # fmt: skip
    lines = ["def encode(msg):", "    try:"]
    args = ["T"]
    for i, f in enumerate(layout):
        if f.kind == k.K_CHAR:
            lines.append(f"        v{i} = B[msg.{f.attr}]")
        elif f.kind == k.K_ALPHA:
            lines += [
                f"        v{i} = msg.{f.attr}.ljust({f.size})",
                f"        if len(v{i}) != {f.size}:",
                "            return None",
                f"        v{i} = v{i}.encode('ascii')",
            ]
        else:
            lines.append(f"        v{i} = msg.{f.attr}")
            if f.kind == k.K_UINT and f.size == 8:  # the kernels' int64: below 2**63
                lines += [f"        if not 0 <= v{i} < M63:", "            return None"]
        args.append(f"v{i}")
    if cls.HAS_APPENDAGE:
        lines += ["        app = opts(msg.appendage) if msg.appendage else b''"]
        args.append("len(app)")
        lines.append(f"        return pack({', '.join(args)}) + app")
    else:
        lines.append(f"        return pack({', '.join(args)})")
    lines += [
        "    except (KeyError, AttributeError, UnicodeEncodeError, TypeError, error):",
        "        return None",
    ]
    exec("\n".join(lines), names)  # our own text, from the class's layout
    encode: Callable[[OuchMessage], bytes | None] = names["encode"]
    return encode


_STRUCT_ENCODERS: Final = {c: _struct_encoder(c) for table in CLASSES for c in table.values()}


class _Unpacker:
    """A message type's fixed fields as one :class:`struct.Struct` (the decoder's quick way).

    ``unpack_from`` reads every fixed field in one C call (AppendageLength last, for the
    types that have one); characters and texts are then made ``str`` the way the kernel
    path makes them. ``make`` (both paths' constructor) builds the message without the
    dataclass's ``__init__`` (a frozen dataclass sets each field through
    ``object.__setattr__``: 2 µs for an Order Accepted), through the slots' own setters; the
    classes have no ``__post_init__``.
    """

    __slots__ = (
        "alpha", "chars", "cls", "decode", "has_app", "make", "set_appendage", "setters", "size",
        "struct",
    )  # fmt: skip

    def __init__(self, cls: type[OuchMessage]) -> None:
        fmt = ">" + "".join(
            f"{f.size}s" if f.kind == k.K_ALPHA else _STRUCT_CODES[f.kind, f.size]
            for f in cls.LAYOUT
        )
        self.has_app = cls.HAS_APPENDAGE
        self.struct = struct.Struct(fmt + ("H" if cls.HAS_APPENDAGE else ""))
        self.size = 1 + self.struct.size  # with the type byte
        self.cls = cls
        self.chars = tuple(i for i, f in enumerate(cls.LAYOUT) if f.kind == k.K_CHAR)
        self.alpha = tuple(i for i, f in enumerate(cls.LAYOUT) if f.kind == k.K_ALPHA)
        assert not hasattr(cls, "__post_init__"), cls
        # The Tables check that the dataclass fields are the layout's, then the appendage.
        self.setters = tuple(getattr(cls, f.attr).__set__ for f in cls.LAYOUT)
        self.set_appendage = vars(cls)["appendage"].__set__ if cls.HAS_APPENDAGE else None
        #: ``make(vals, appendage=())``: the message of fixed-field values ``vals`` (which may
        #: end in AppendageLength) and ``appendage``.
        self.make: Callable[..., OuchMessage] = _maker(cls, self.setters, self.set_appendage)
        #: ``decode(data)``: the message in ``data`` (at least ``size`` bytes, type byte
        #: first), or None when its appendage is malformed (the kernel path then says why).
        self.decode: Callable[[bytes], OuchMessage | None] = _struct_decoder(self)


def _maker(
    cls: type[OuchMessage],
    setters: tuple[Callable[[Any, Any], None], ...],
    set_appendage: Callable[[Any, Any], None] | None,
) -> Callable[..., OuchMessage]:
    # A constructor written out for the class, one setter call per field (as dataclasses
    # writes its __init__): a loop over the setters cost 0.6 µs more for an Order Accepted.
    names: dict[str, Any] = {"new": object.__new__, "cls": cls, "sa": set_appendage}
    lines = ["def make(vals, appendage=()):", "    msg = new(cls)"]
    for i, setter in enumerate(setters):
        names[f"s{i}"] = setter
        lines.append(f"    s{i}(msg, vals[{i}])")
    if set_appendage is not None:
        lines.append("    sa(msg, appendage)")
    lines.append("    return msg")
    exec("\n".join(lines), names)  # our own text, from the class's layout
    make: Callable[..., OuchMessage] = names["make"]
    return make


#: A character field's value by its byte (``struct``'s ``c`` gives a 1-byte ``bytes``).
_CHARS: Final = {bytes([i]): chr(i) for i in range(256)}


def _struct_decoder(u: _Unpacker) -> Callable[[bytes], OuchMessage | None]:
    # The struct path of one type written out (as _maker is): unpack into names, each field
    # made str where it is one and set through its slot, the options split last. Against the
    # loop over index lists and make(): Order Accepted 1.9 -> 1.3 µs.
    layout = u.cls.LAYOUT
    names: dict[str, Any] = {
        "new": object.__new__, "cls": u.cls, "unpack": u.struct.unpack_from, "C": _CHARS,
        "split": _split_options, "SIZE": u.size, "sa": u.set_appendage,
    }  # fmt: skip
    values = [f"v{i}" for i in range(len(layout))] + (["app"] if u.has_app else [])
    lines = ["def decode(data):"]
    if values:
        lines.append(f"    {', '.join(values)}, = unpack(data, 1)")
    if u.has_app:
        lines += [
            "    opts = ()",
            "    if app:",
            "        opts = split(data, SIZE, SIZE + app)",
            "        if opts is None:",
            "            return None",
        ]
    lines.append("    msg = new(cls)")
    for i, (f, setter) in enumerate(zip(layout, u.setters, strict=True)):
        names[f"s{i}"] = setter
        if f.kind == k.K_CHAR:
            value = f"C[v{i}]"
        elif f.kind == k.K_ALPHA:
            value = f"v{i}.decode('latin-1').rstrip(' ')"
        else:
            value = f"v{i}"
        lines.append(f"    s{i}(msg, {value})")
    if u.has_app:
        lines.append("    sa(msg, opts)")
    lines.append("    return msg")
    exec("\n".join(lines), names)  # our own text, from the class's layout
    decode: Callable[[bytes], OuchMessage | None] = names["decode"]
    return decode


class Decoder:
    """Decode OUCH messages of one direction (reuses its buffers; one per session)."""

    __slots__ = (
        "_buf", "_builders", "_classes", "_in", "_layout", "_opts", "_unpackers", "_vals",
        "direction",
    )  # fmt: skip

    def __init__(self, direction: int) -> None:
        self.direction = direction
        self._layout = TABLES[direction].layout
        self._classes = CLASSES[direction]
        self._builders = {t: _builder(c) for t, c in self._classes.items()}
        self._unpackers = {t: _Unpacker(c) for t, c in self._classes.items()}
        self._vals = np.zeros(k.MAX_FIELDS + 3, np.int64)
        self._opts = np.zeros((MAX_OPTIONS, 3), np.int64)
        self._buf = bytearray(1 << 16)
        self._in = np.frombuffer(self._buf, np.uint8)

    def decode(self, data: bytes) -> OuchMessage:
        """Return the message in ``data`` (type byte first; trailing bytes are ignored).

        Raises
        ------
        OuchDecodeError
            If ``data`` is not a message of this direction (unknown type, too short, bad
            appendage).
        """
        # A whole message: one struct call for the fixed fields, the few options (if any) split
        # here. Anything cut or malformed goes to the kernel, which says what is wrong.
        u = self._unpackers.get(data[0]) if data else None
        if u is not None and len(data) >= u.size:
            msg = u.decode(data)
            if msg is not None:
                return msg
        return self.decode_by_kernel(data)

    def decode_by_kernel(self, data: bytes) -> OuchMessage:
        """Return :meth:`decode` of ``data`` the general way: the layout kernel, options too.

        Raises
        ------
        OuchDecodeError
            As :meth:`decode`.
        """
        n = len(data)
        if n > len(self._buf):
            self._buf = bytearray(n)
            self._in = np.frombuffer(self._buf, np.uint8)
        self._buf[:n] = data
        status = k.decode_fields(self._in, 0, n, self._layout, self._vals, self._opts)
        if status != k.DECODE_OK:
            where = "inbound" if self.direction == INBOUND else "outbound"
            head = data[:1].decode("latin-1") or "-"
            raise OuchDecodeError(
                f"OUCH {where} message type {head!r}: {_REASONS[status]} ({n} bytes: "
                f"{data[:64].hex()})"
            )
        t = data[0]
        spec = self._builders[t]
        vals = self._vals[: len(spec) + 3].tolist()
        out: list[Any] = []
        for _, kind, size, i in spec:
            v = vals[i]
            if kind == k.K_CHAR:
                out.append(chr(v))
            elif kind == k.K_ALPHA:
                out.append(data[v : v + size].decode("latin-1").rstrip(" "))
            else:
                out.append(v)
        u = self._unpackers[t]
        count = vals[len(spec) + 2] if u.has_app else 0
        return u.make(out, _options(data, self._opts[:count].tolist()) if count else ())


_DECODERS = (Decoder(INBOUND), Decoder(OUTBOUND))


def decode_inbound(data: bytes) -> OuchMessage:
    """Return the client-to-exchange message in ``data`` (raises :class:`OuchDecodeError`)."""
    return _DECODERS[INBOUND].decode(data)


def decode_outbound(data: bytes) -> OuchMessage:
    """Return the exchange-to-client message in ``data`` (raises :class:`OuchDecodeError`)."""
    return _DECODERS[OUTBOUND].decode(data)


def pad_alpha(name: str, text: str, size: int) -> bytes:
    """Return ``text`` as the space-padded ``size`` bytes of alpha field ``name``.

    Raises
    ------
    ValueError
        If ``text`` is not ASCII or longer than ``size``.
    """
    return _pad(name, text, size)


def enter_order_flags(
    time_in_force: str, display: str, capacity: str, inter_market_sweep: str, cross_type: str
) -> bytes:
    """Return the five one-character Enter Order flags as their 5 bytes, in wire order.

    Raises
    ------
    ValueError
        If a flag is not one ASCII character.
    """
    flags = (time_in_force, display, capacity, inter_market_sweep, cross_type)
    if any(f not in CHAR_BYTES for f in flags):
        raise ValueError(f"Enter Order flags: each must be one ASCII character: {flags}")
    return "".join(flags).encode("ascii")


__all__ = [
    "CHAR_BYTES",
    "CLASSES",
    "INBOUND",
    "INBOUND_TYPES",
    "OPTIONS",
    "OUTBOUND",
    "OUTBOUND_TYPES",
    "PRICE_SCALE",
    "TABLES",
    "AccountQuery",
    "AccountQueryResponse",
    "AiqCanceled",
    "BrokenTrade",
    "CancelOrder",
    "CancelPending",
    "CancelReject",
    "Decoder",
    "Encoder",
    "EnterOrder",
    "ModifyOrder",
    "OrderAccepted",
    "OrderCanceled",
    "OrderExecuted",
    "OrderModified",
    "OrderPriorityUpdate",
    "OrderReplaced",
    "OrderRestated",
    "OuchDecodeError",
    "OuchMessage",
    "PriceScale",
    "Rejected",
    "ReplaceOrder",
    "SystemEvent",
    "TagValue",
    "TradeCorrection",
    "decimal_to_price",
    "decode_inbound",
    "decode_options",
    "decode_outbound",
    "encode",
    "encode_options",
    "enter_order_flags",
    "pad_alpha",
    "price_to_decimal",
]
