# SPDX-License-Identifier: MIT
"""FIX codes of the order-management enums, and price/quantity text for an instrument.

Used by the FIX venue adapter (our side) and by the exchange simulator's FIX application
(the venue's side), so both speak exactly the same codes.
"""

from collections.abc import Mapping
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


#: ExecType <150> and OrdStatus <39> codes, both ways (looked up, not computed, per message).
_EXEC_TYPE_CODE: dict[ExecType, bytes] = {e: _B36[int(e)].encode() for e in ExecType}
_EXEC_TYPE_OF: dict[bytes, ExecType] = {v: k for k, v in _EXEC_TYPE_CODE.items()}
_ORD_STATUS_CODE: dict[OrdStatus, bytes] = {s: _B36[int(s)].encode() for s in OrdStatus}
_ORD_STATUS_OF: dict[bytes, OrdStatus] = {v: k for k, v in _ORD_STATUS_CODE.items()}
#: The ExecType and OrdStatus of each code, for a hot path's ``.get`` (``None``: no such code;
#: then :func:`fix_to_exec_type` / :func:`fix_to_ord_status` raise the error naming the tag).
EXEC_TYPE_OF_CODE: Mapping[bytes, ExecType] = _EXEC_TYPE_OF
ORD_STATUS_OF_CODE: Mapping[bytes, OrdStatus] = _ORD_STATUS_OF


def exec_type_to_fix(et: ExecType, begin_string: str, status: OrdStatus) -> bytes:
    """Return the ExecType <150> code; FIX 4.2 and earlier say 1/2 for partial/full fills."""
    if et is ExecType.TRADE and begin_string < "FIX.4.3":
        return b"2" if status is OrdStatus.FILLED else b"1"
    return _EXEC_TYPE_CODE[et]


def fix_to_exec_type(value: bytes | None) -> ExecType:
    """Return the ExecType of a code ("F" -> TRADE)."""
    et = _EXEC_TYPE_OF.get(value) if value is not None else None
    if et is None:
        raise FixValueError(150, value, "is not an ExecType")
    return et


def ord_status_to_fix(status: OrdStatus) -> bytes:
    """Return the OrdStatus <39> code ("A" for PENDING_NEW)."""
    return _ORD_STATUS_CODE[status]


def fix_to_ord_status(value: bytes | None) -> OrdStatus:
    """Return the OrdStatus of a code."""
    status = _ORD_STATUS_OF.get(value) if value is not None else None
    if status is None:
        raise FixValueError(39, value, "is not an OrdStatus")
    return status


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


#: How many texts :class:`FixNumbers` remembers per direction (it starts afresh when full).
TEXT_MEMORY = 4_096


class FixNumbers:
    """Prices and quantities of one instrument to and from FIX text, remembered.

    The same few prices and quantities go back and forth all day; each is converted once
    through ``Decimal`` (:func:`px_text`, :func:`px_ticks`, ...) and then looked up. A text
    that fails to convert is never remembered, so it fails again with the same
    :class:`FixValueError`.

    Parameters
    ----------
    instrument : Instrument
        Tick and lot sizes.
    """

    __slots__ = ("instrument", "lots_of", "px_texts", "qty_texts", "symbol", "ticks_of")

    def __init__(self, instrument: Instrument) -> None:
        self.instrument = instrument
        #: Symbol <55> as it goes on the wire.
        self.symbol = instrument.symbol.encode()
        #: Texts of the prices (ticks) and quantities (lots) converted so far, to read on the
        #: hot path (``px_texts.get(ticks) or px_text(ticks)``); never written from outside.
        self.px_texts: dict[int, bytes] = {}
        self.qty_texts: dict[int, bytes] = {}
        #: Prices (ticks) and quantities (lots) of the texts parsed so far, to read on the hot
        #: path (``lots_of.get(text)``, then :meth:`qty_lots` when ``None``); never written
        #: from outside.
        self.ticks_of: dict[bytes, int] = {}
        self.lots_of: dict[bytes, int] = {}

    def px_text(self, ticks: int) -> bytes:
        """Return a price in ticks as FIX decimal text."""
        texts = self.px_texts
        text = texts.get(ticks)
        if text is None:
            if len(texts) >= TEXT_MEMORY:
                texts.clear()
            text = texts[ticks] = px_text(self.instrument, ticks)
        return text

    def qty_text(self, lots: int) -> bytes:
        """Return a quantity in lots as FIX decimal text."""
        texts = self.qty_texts
        text = texts.get(lots)
        if text is None:
            if len(texts) >= TEXT_MEMORY:
                texts.clear()
            text = texts[lots] = qty_text(self.instrument, lots)
        return text

    def px_ticks(self, tag: int, value: bytes | None) -> int:
        """Parse a FIX price into ticks; raise :class:`FixValueError` naming the tag."""
        if value is None:
            raise FixValueError(tag, value, "is missing")
        known = self.ticks_of
        ticks = known.get(value)
        if ticks is None:
            ticks = px_ticks(self.instrument, tag, value)
            if len(known) >= TEXT_MEMORY:
                known.clear()
            known[value] = ticks
        return ticks

    def qty_lots(self, tag: int, value: bytes | None) -> int:
        """Parse a FIX quantity into lots; raise :class:`FixValueError` naming the tag."""
        if value is None:
            raise FixValueError(tag, value, "is missing")
        known = self.lots_of
        lots = known.get(value)
        if lots is None:
            lots = qty_lots(self.instrument, tag, value)
            if len(known) >= TEXT_MEMORY:
                known.clear()
            known[value] = lots
        return lots
