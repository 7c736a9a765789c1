# SPDX-License-Identifier: MIT
"""The order manager's vocabulary in OUCH 5.0 terms, and back (shared by both ends).

Sides, times in force, the market-order price, cancel reasons (``OrderCanceled`` Reason, a
character) and reject reasons (``Rejected`` Reason, a number: the specification's appendix of
reject reasons), with the words the console shows for them. The simulator's OUCH port
(``engine.sim.ouch_app``) and the venue adapter (``engine.venues.ouch.adapter``) both use
these, so what one writes the other reads.
"""

from typing import Final

from engine.enums import Side, TimeInForce
from engine.venues.ouch.messages import OuchDecodeError, decode_inbound, decode_outbound

SIDE_TO_OUCH: Final[dict[Side, str]] = {Side.BUY: "B", Side.SELL: "S"}
#: Sell short ('T') and sell short exempt ('E') are sells to the order manager.
OUCH_TO_SIDE: Final[dict[str, Side]] = {
    "B": Side.BUY,
    "S": Side.SELL,
    "T": Side.SELL,
    "E": Side.SELL,
}

#: TimeInForce: '0' market hours (a day order), '3' immediate or cancel, '5' system hours,
#: '6' good till triggered (not used here), 'E' after hours.
TIF_TO_OUCH: Final[dict[TimeInForce, str]] = {TimeInForce.DAY: "0", TimeInForce.IOC: "3"}
OUCH_TO_TIF: Final[dict[str, TimeInForce]] = {
    "0": TimeInForce.DAY, "3": TimeInForce.IOC, "5": TimeInForce.DAY, "E": TimeInForce.DAY,
}  # fmt: skip

#: The Price of a market order (214748.3647, the largest 4-byte price).
MARKET_PRICE: Final = 0x7FFFFFFF

#: OrderCanceled / AIQCanceled Reason.
CANCEL_REASONS: Final[dict[str, str]] = {
    "B": "canceled by the exchange's risk controls",
    "C": "canceled in a cross",
    "D": "regulatory restriction",
    "E": "closed: the market is closed for this order",
    "F": "post-only order would have removed liquidity",
    "H": "halted",
    "I": "immediate or cancel: the rest of the order did not trade",
    "K": "market collars",
    "Q": "self-match prevention",
    "S": "supervisory: canceled by the exchange",
    "T": "timeout",
    "U": "user requested",
    "X": "open protection",
    "Z": "system cancel",
}
#: Cancel reason of a request of the user, of an IOC's remainder, of self-match prevention,
#: of the exchange (e.g. on disconnect or close).
USER_REQUESTED: Final = "U"
IOC_REMAINDER: Final = "I"
SELF_MATCH: Final = "Q"
SUPERVISORY: Final = "S"

#: Rejected Reason (OUCH 5.0's reject reason codes, the ones a simulator has use for).
REJECT_REASONS: Final[dict[int, str]] = {
    0x0001: "quote unavailable",
    0x0002: "destination closed",
    0x0003: "invalid display",
    0x0007: "halted",
    0x0009: "invalid side",
    0x000A: "processing error",
    0x000B: "cancel pending",
    0x000C: "firm not authorized",
    0x000F: "other",
    0x0010: "cancel not allowed",
    0x0013: "invalid quantity",
    0x0015: "replace not allowed",
    0x0017: "invalid symbol",
    0x001D: "invalid price",
}
REJECT_OTHER: Final = 0x000F
REJECT_INVALID_QUANTITY: Final = 0x0013
REJECT_REPLACE_NOT_ALLOWED: Final = 0x0015
REJECT_INVALID_SYMBOL: Final = 0x0017
REJECT_INVALID_PRICE: Final = 0x001D


def cancel_reason_text(reason: str) -> str:
    """Return the words for an OrderCanceled Reason."""
    return CANCEL_REASONS.get(reason, f"reason {reason!r}")


def reject_reason_text(reason: int) -> str:
    """Return the words for a Rejected Reason."""
    return REJECT_REASONS.get(reason, f"reason 0x{reason:04X}")


def ns_since_midnight(ts_ns: int) -> int:
    """Return an OUCH Timestamp: nanoseconds since midnight (UTC here) of ``ts_ns``."""
    return ts_ns % 86_400_000_000_000


#: What the one-character codes of the messages mean, by field name (for the inspector).
FIELD_MEANINGS: Final[dict[str, dict[str, str]]] = {
    "Side": {"B": "buy", "S": "sell", "T": "sell short", "E": "sell short exempt"},
    "TimeInForce": {"0": "day (market hours)", "3": "immediate or cancel",
                    "5": "system hours", "6": "good till triggered", "E": "after hours"},
    "Display": {"Y": "visible", "N": "hidden", "A": "attributable"},
    "Capacity": {"A": "agency", "P": "principal", "R": "riskless principal", "O": "other"},
    "InterMarketSweepEligibility": {"Y": "eligible", "N": "not eligible"},
    "CrossType": {"N": "continuous market", "O": "opening cross", "C": "closing cross",
                  "H": "halt/IPO cross", "S": "supplemental", "R": "retail"},
    "OrderState": {"L": "live", "D": "dead"},
    "LiquidityFlag": {"A": "added (maker)", "R": "removed (taker)"},
    "EventCode": {"S": "start of day", "E": "end of day"},
}  # fmt: skip


def field_meaning(name: str, value: object) -> str:
    """Return what a field's value means ("" when it speaks for itself)."""
    if name == "Timestamp" and isinstance(value, int):
        secs, ns = divmod(value, 1_000_000_000)
        h, rest = divmod(secs, 3600)
        return f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}.{ns:09d}"
    if name == "Reason" and isinstance(value, int):
        return reject_reason_text(value)
    if name == "Reason" and isinstance(value, str):
        return CANCEL_REASONS.get(value, "")
    return FIELD_MEANINGS.get(name, {}).get(str(value), "")


def describe(raw: bytes, outbound: bool) -> tuple[tuple[str, str, str], ...]:
    """Return every field of the OUCH message ``raw`` as (spec name, value, meaning).

    ``outbound`` is the engine's direction: what the engine sent is a client-to-exchange
    message. Bytes that are no OUCH message give one ``("error", why, "")`` field.
    """
    try:
        msg = decode_inbound(raw) if outbound else decode_outbound(raw)
    except OuchDecodeError as e:
        return (("error", str(e), ""),)
    return tuple((n, str(v), field_meaning(n, v)) for n, v in msg.fields())
