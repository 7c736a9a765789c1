# SPDX-License-Identifier: MIT
"""FIX codes of the order-management enums, and price/quantity text for an instrument.

Used by the FIX venue adapter (our side) and by the exchange simulator's FIX application
(the venue's side), so both speak exactly the same codes.
"""

from decimal import Decimal, InvalidOperation

from engine.enums import ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.instruments import Instrument

_B36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: Side <54>.
SIDE_TO_FIX: dict[Side, bytes] = {Side.BUY: b"1", Side.SELL: b"2"}
FIX_TO_SIDE: dict[bytes, Side] = {v: k for k, v in SIDE_TO_FIX.items()}
#: OrdType <40>.
ORD_TYPE_TO_FIX: dict[OrdType, bytes] = {OrdType.MARKET: b"1", OrdType.LIMIT: b"2"}
FIX_TO_ORD_TYPE: dict[bytes, OrdType] = {v: k for k, v in ORD_TYPE_TO_FIX.items()}
#: TimeInForce <59>.
TIF_TO_FIX: dict[TimeInForce, bytes] = {t: str(int(t)).encode() for t in TimeInForce}
FIX_TO_TIF: dict[bytes, TimeInForce] = {v: k for k, v in TIF_TO_FIX.items()}


class FixValueError(ValueError):
    """A field of a FIX message holds a value the engine cannot use; names tag and value."""

    def __init__(self, tag: int, value: bytes | None, why: str) -> None:
        super().__init__(f"tag {tag}: {value!r} {why}")
        self.tag = tag


def exec_type_to_fix(et: ExecType, begin_string: str, status: OrdStatus) -> bytes:
    """Return the ExecType <150> code; FIX 4.2 and earlier say 1/2 for partial/full fills."""
    if et is ExecType.TRADE and begin_string < "FIX.4.3":
        return b"2" if status is OrdStatus.FILLED else b"1"
    return _B36[int(et)].encode()


def fix_to_exec_type(value: bytes | None) -> ExecType:
    """Return the ExecType of a code ("F" -> TRADE)."""
    if not value or len(value) != 1 or value.decode("latin-1") not in _B36[:19]:
        raise FixValueError(150, value, "is not an ExecType")
    return ExecType(_B36.index(value.decode("latin-1")))


def ord_status_to_fix(status: OrdStatus) -> bytes:
    """Return the OrdStatus <39> code ("A" for PENDING_NEW)."""
    return _B36[int(status)].encode()


def fix_to_ord_status(value: bytes | None) -> OrdStatus:
    """Return the OrdStatus of a code."""
    if not value or len(value) != 1 or value.decode("latin-1") not in _B36[:15]:
        raise FixValueError(39, value, "is not an OrdStatus")
    return OrdStatus(_B36.index(value.decode("latin-1")))


def px_text(instrument: Instrument, px_ticks: int) -> bytes:
    """Return a price in ticks as FIX decimal text."""
    return format(instrument.ticks_to_price(px_ticks).normalize(), "f").encode()


def qty_text(instrument: Instrument, qty_lots: int) -> bytes:
    """Return a quantity in lots as FIX decimal text."""
    return format(instrument.lots_to_qty(qty_lots).normalize(), "f").encode()


def px_ticks(instrument: Instrument, tag: int, value: bytes | None) -> int:
    """Parse a FIX price into ticks; raise :class:`FixValueError` naming the tag."""
    if value is None:
        raise FixValueError(tag, value, "is missing")
    try:
        return instrument.price_to_ticks(Decimal(value.decode("latin-1")))
    except (InvalidOperation, ValueError) as e:
        raise FixValueError(tag, value, f"is not a price of {instrument.symbol}: {e}") from None


def qty_lots(instrument: Instrument, tag: int, value: bytes | None) -> int:
    """Parse a FIX quantity into lots; raise :class:`FixValueError` naming the tag."""
    if value is None:
        raise FixValueError(tag, value, "is missing")
    try:
        return instrument.qty_to_lots(Decimal(value.decode("latin-1")))
    except (InvalidOperation, ValueError) as e:
        raise FixValueError(tag, value, f"is not a quantity of {instrument.symbol}: {e}") from None
