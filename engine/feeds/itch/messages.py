# SPDX-License-Identifier: MIT
"""NASDAQ TotalView-ITCH 5.0 messages as numpy structured dtypes, and their wire layouts.

Every message type of the specification (section 1.x of "Nasdaq TotalView-ITCH 5.0") is
declared once, field by field, in :data:`LAYOUTS`: the field's spec name in snake_case, its
wire kind and its size. From that one declaration come

* the decoded row's dtype (:data:`MESSAGE_DTYPES`, e.g. :data:`ADD_ORDER_DTYPE`): a leading
  ``seq`` (the message's MoldUDP64 sequence number, or its number in a raw file), then
  ``timestamp`` as int64 ns since midnight (the wire's 6 bytes), ``stock_locate``,
  ``tracking_number`` and the body fields in wire order;
* the kernels' layout table (:func:`layout_tables`): for each type byte, the byte moves that
  turn a big-endian wire message into its native row. Decoding is one table-driven byte
  permutation per message, so one compiled kernel serves every type.

Units: ``Price(4)`` fields (``price``, ``execution_price`` ...) become int64 ticks of 0.0001
USD; ``Price(8)`` (the MWCB levels) int64 ticks of 1e-8 USD; integers keep their spec width
unsigned (``shares`` uint32, ``order_reference_number`` and ``match_number`` uint64);
``Alpha`` fields stay the raw, space-padded ASCII bytes (``S<n>``), as on the wire.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

#: Wire kinds of a field.
#: Big-endian unsigned integer (2, 4 or 8 bytes); decoded as uint of the same width.
UINT: Final = "u"
#: ``Price(4)`` (4 bytes) or ``Price(8)`` (8 bytes); decoded as int64 ticks.
PRICE: Final = "p"
#: The 6-byte nanoseconds-since-midnight timestamp; decoded as int64.
TIME: Final = "t"
#: ``Alpha`` text of one or more bytes, kept raw (``S<n>``).
ALPHA: Final = "a"


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message as on the wire (after the type byte)."""

    name: str
    kind: str
    size: int


_HEADER: tuple[Field, ...] = (
    Field("stock_locate", UINT, 2),
    Field("tracking_number", UINT, 2),
    Field("timestamp", TIME, 6),
)


def _f(name: str, kind: str, size: int) -> Field:
    return Field(name, kind, size)


def _stock() -> Field:
    return _f("stock", ALPHA, 8)


def _char(name: str) -> Field:
    return _f(name, ALPHA, 1)


def _px(name: str) -> Field:
    return _f(name, PRICE, 4)


#: Body fields of each message type (after the common header), in wire order, spec names.
BODIES: Final[dict[str, tuple[Field, ...]]] = {
    "S": (_char("event_code"),),
    "R": (
        _stock(),
        _char("market_category"),
        _char("financial_status_indicator"),
        _f("round_lot_size", UINT, 4),
        _char("round_lots_only"),
        _char("issue_classification"),
        _f("issue_sub_type", ALPHA, 2),
        _char("authenticity"),
        _char("short_sale_threshold_indicator"),
        _char("ipo_flag"),
        _char("luld_reference_price_tier"),
        _char("etp_flag"),
        _f("etp_leverage_factor", UINT, 4),
        _char("inverse_indicator"),
    ),
    "H": (_stock(), _char("trading_state"), _char("reserved"), _f("reason", ALPHA, 4)),
    "Y": (_stock(), _char("reg_sho_action")),
    "L": (
        _f("mpid", ALPHA, 4),
        _stock(),
        _char("primary_market_maker"),
        _char("market_maker_mode"),
        _char("market_participant_state"),
    ),
    "V": (_f("level_1", PRICE, 8), _f("level_2", PRICE, 8), _f("level_3", PRICE, 8)),
    "W": (_char("breached_level"),),
    "K": (
        _stock(),
        _f("ipo_quotation_release_time", UINT, 4),
        _char("ipo_quotation_release_qualifier"),
        _px("ipo_price"),
    ),
    "J": (
        _stock(),
        _px("auction_collar_reference_price"),
        _px("upper_auction_collar_price"),
        _px("lower_auction_collar_price"),
        _f("auction_collar_extension", UINT, 4),
    ),
    "h": (_stock(), _char("market_code"), _char("operational_halt_action")),
    "A": (
        _f("order_reference_number", UINT, 8),
        _char("buy_sell_indicator"),
        _f("shares", UINT, 4),
        _stock(),
        _px("price"),
    ),
    "F": (
        _f("order_reference_number", UINT, 8),
        _char("buy_sell_indicator"),
        _f("shares", UINT, 4),
        _stock(),
        _px("price"),
        _f("attribution", ALPHA, 4),
    ),
    "E": (
        _f("order_reference_number", UINT, 8),
        _f("executed_shares", UINT, 4),
        _f("match_number", UINT, 8),
    ),
    "C": (
        _f("order_reference_number", UINT, 8),
        _f("executed_shares", UINT, 4),
        _f("match_number", UINT, 8),
        _char("printable"),
        _px("execution_price"),
    ),
    "X": (_f("order_reference_number", UINT, 8), _f("cancelled_shares", UINT, 4)),
    "D": (_f("order_reference_number", UINT, 8),),
    "U": (
        _f("original_order_reference_number", UINT, 8),
        _f("new_order_reference_number", UINT, 8),
        _f("shares", UINT, 4),
        _px("price"),
    ),
    "P": (
        _f("order_reference_number", UINT, 8),
        _char("buy_sell_indicator"),
        _f("shares", UINT, 4),
        _stock(),
        _px("price"),
        _f("match_number", UINT, 8),
    ),
    "Q": (
        _f("shares", UINT, 8),
        _stock(),
        _px("cross_price"),
        _f("match_number", UINT, 8),
        _char("cross_type"),
    ),
    "B": (_f("match_number", UINT, 8),),
    "I": (
        _f("paired_shares", UINT, 8),
        _f("imbalance_shares", UINT, 8),
        _char("imbalance_direction"),
        _stock(),
        _px("far_price"),
        _px("near_price"),
        _px("current_reference_price"),
        _char("cross_type"),
        _char("price_variation_indicator"),
    ),
    "N": (_stock(), _char("interest_flag")),
    "O": (
        _stock(),
        _char("open_eligibility_status"),
        _px("minimum_allowable_price"),
        _px("maximum_allowable_price"),
        _px("near_execution_price"),
        _f("near_execution_time", UINT, 8),
        _px("lower_price_range_collar"),
        _px("upper_price_range_collar"),
    ),
}

#: The spec's name of each message type.
MESSAGE_NAMES: Final[dict[str, str]] = {
    "S": "System Event",
    "R": "Stock Directory",
    "H": "Stock Trading Action",
    "Y": "Reg SHO Short Sale Price Test Restricted Indicator",
    "L": "Market Participant Position",
    "V": "MWCB Decline Level",
    "W": "MWCB Status",
    "K": "IPO Quoting Period Update",
    "J": "LULD Auction Collar",
    "h": "Operational Halt",
    "A": "Add Order (no MPID attribution)",
    "F": "Add Order with MPID Attribution",
    "E": "Order Executed",
    "C": "Order Executed With Price",
    "X": "Order Cancel",
    "D": "Order Delete",
    "U": "Order Replace",
    "P": "Trade (non-cross)",
    "Q": "Cross Trade",
    "B": "Broken Trade",
    "I": "Net Order Imbalance Indicator (NOII)",
    "N": "Retail Price Improvement Indicator (RPII)",
    "O": "Direct Listing with Capital Raise Price Discovery",
}

#: Every message type byte, in the order of the kernels' type index.
MESSAGE_TYPES: Final[str] = "SRHYLVWKJhAFECXDUPQBINO"

#: Every type's wire fields after the type byte (header then body).
LAYOUTS: Final[dict[str, tuple[Field, ...]]] = {t: _HEADER + BODIES[t] for t in MESSAGE_TYPES}

#: Length of each message on the wire, type byte included (the spec's fixed sizes).
MESSAGE_LENGTHS: Final[dict[str, int]] = {
    t: 1 + sum(f.size for f in LAYOUTS[t]) for t in MESSAGE_TYPES
}


def _native(f: Field) -> str:
    if f.kind == ALPHA:
        return f"S{f.size}"
    if f.kind in (PRICE, TIME):
        return "i8"
    return f"u{f.size}"


def _dtype(t: str) -> np.dtype[np.void]:
    # Every field sits at a multiple of its own size (text of 2, 4 or 8 bytes too), so the
    # kernels store whole fields through uint16/uint32/int64 views of the rows.
    fields = [("seq", "i8"), ("timestamp", "i8"), ("stock_locate", "u2")]
    fields.append(("tracking_number", "u2"))
    fields += [(f.name, _native(f)) for f in BODIES[t]]
    names, formats, offsets = [], [], []
    off = 0
    for name, fmt in fields:
        size = np.dtype(fmt).itemsize
        off = -(-off // size) * size
        names.append(name)
        formats.append(fmt)
        offsets.append(off)
        off += size
    spec = {"names": names, "formats": formats, "offsets": offsets, "itemsize": -(-off // 8) * 8}
    return np.dtype(spec)  # type: ignore[call-overload, no-any-return]


#: The decoded row of each message type, by type byte.
MESSAGE_DTYPES: Final[dict[str, np.dtype[np.void]]] = {t: _dtype(t) for t in MESSAGE_TYPES}

#: System Event ('S').
SYSTEM_EVENT_DTYPE: Final = MESSAGE_DTYPES["S"]
#: Stock Directory ('R').
STOCK_DIRECTORY_DTYPE: Final = MESSAGE_DTYPES["R"]
#: Stock Trading Action ('H').
STOCK_TRADING_ACTION_DTYPE: Final = MESSAGE_DTYPES["H"]
#: Reg SHO Restriction ('Y').
REG_SHO_DTYPE: Final = MESSAGE_DTYPES["Y"]
#: Market Participant Position ('L').
MARKET_PARTICIPANT_POSITION_DTYPE: Final = MESSAGE_DTYPES["L"]
#: MWCB Decline Level ('V').
MWCB_DECLINE_LEVEL_DTYPE: Final = MESSAGE_DTYPES["V"]
#: MWCB Status ('W').
MWCB_STATUS_DTYPE: Final = MESSAGE_DTYPES["W"]
#: IPO Quoting Period Update ('K').
IPO_QUOTING_PERIOD_DTYPE: Final = MESSAGE_DTYPES["K"]
#: LULD Auction Collar ('J').
LULD_AUCTION_COLLAR_DTYPE: Final = MESSAGE_DTYPES["J"]
#: Operational Halt ('h').
OPERATIONAL_HALT_DTYPE: Final = MESSAGE_DTYPES["h"]
#: Add Order, no MPID attribution ('A').
ADD_ORDER_DTYPE: Final = MESSAGE_DTYPES["A"]
#: Add Order with MPID attribution ('F').
ADD_ORDER_MPID_DTYPE: Final = MESSAGE_DTYPES["F"]
#: Order Executed ('E').
ORDER_EXECUTED_DTYPE: Final = MESSAGE_DTYPES["E"]
#: Order Executed With Price ('C').
ORDER_EXECUTED_WITH_PRICE_DTYPE: Final = MESSAGE_DTYPES["C"]
#: Order Cancel ('X').
ORDER_CANCEL_DTYPE: Final = MESSAGE_DTYPES["X"]
#: Order Delete ('D').
ORDER_DELETE_DTYPE: Final = MESSAGE_DTYPES["D"]
#: Order Replace ('U').
ORDER_REPLACE_DTYPE: Final = MESSAGE_DTYPES["U"]
#: Trade, non-cross ('P').
TRADE_DTYPE: Final = MESSAGE_DTYPES["P"]
#: Cross Trade ('Q').
CROSS_TRADE_DTYPE: Final = MESSAGE_DTYPES["Q"]
#: Broken Trade ('B').
BROKEN_TRADE_DTYPE: Final = MESSAGE_DTYPES["B"]
#: Net Order Imbalance Indicator ('I').
NOII_DTYPE: Final = MESSAGE_DTYPES["I"]
#: Retail Price Improvement Indicator ('N').
RPII_DTYPE: Final = MESSAGE_DTYPES["N"]
#: Direct Listing with Capital Raise Price Discovery ('O').
DLCR_DTYPE: Final = MESSAGE_DTYPES["O"]

#: Most fields of one message type (header included): 'R' has 17.
MAX_FIELDS: Final[int] = 20

#: Columns of a field move (``LayoutTables.ops[b, j, :]``); the kernels' ``OP_*``.
OP_WIDTH: Final[int] = 3

# Field move kinds by (wire kind, wire size, row size): the kernels' K_* codes.
_KINDS: Final[dict[tuple[str, int, int], int]] = {
    (ALPHA, 1, 1): 0,
    (UINT, 2, 2): 1,
    (UINT, 4, 4): 2,
    (PRICE, 4, 8): 3,
    (TIME, 6, 8): 4,
    (UINT, 8, 8): 5,
    (PRICE, 8, 8): 5,
    (ALPHA, 8, 8): 6,
    (ALPHA, 4, 4): 7,
    (ALPHA, 2, 2): 8,
}


@dataclass(frozen=True, slots=True)
class LayoutTables:
    """The kernels' view of :data:`LAYOUTS`, indexed by type byte (0..255).

    ``index[b]``: the type's position in :data:`MESSAGE_TYPES`, -1 for a byte that names no
    message; ``length[b]``: the wire length (type byte included), 0 when unknown;
    ``ops[b, :n_ops[b]]``: one field move per field (wire offset, row offset, kind);
    ``itemsize[i]``: row size of the type
    at index ``i``.
    """

    index: npt.NDArray[np.int64]
    length: npt.NDArray[np.int64]
    ops: npt.NDArray[np.int64]
    n_ops: npt.NDArray[np.int64]
    itemsize: npt.NDArray[np.int64]


def _ops(t: str) -> list[tuple[int, int, int]]:
    fields = MESSAGE_DTYPES[t].fields
    assert fields is not None
    out: list[tuple[int, int, int]] = []
    src = 1  # after the type byte
    for f in LAYOUTS[t]:
        size, dst = fields[f.name][0].itemsize, int(fields[f.name][1])
        if dst % size:
            raise AssertionError(f"{t}.{f.name}: row field of {size} bytes at {dst}")
        out.append((src, dst, _KINDS[f.kind, f.size, size]))
        src += f.size
    return out


def layout_tables() -> LayoutTables:
    """Return the layout tables the decoding kernels walk.

    The kernels write whole fields through uint16/uint32/int64 views of the output, so every
    row field must be 1, 2, 4 or 8 bytes at an offset that is a multiple of its size (the
    dtypes are aligned) and the host must be little-endian.
    """
    if sys.byteorder != "little":
        raise RuntimeError("ITCH decoding kernels assume a little-endian host")
    index = np.full(256, -1, np.int64)
    length = np.zeros(256, np.int64)
    ops = np.zeros((256, MAX_FIELDS, OP_WIDTH), np.int64)
    n_ops = np.zeros(256, np.int64)
    itemsize = np.zeros(len(MESSAGE_TYPES), np.int64)
    for i, t in enumerate(MESSAGE_TYPES):
        b = ord(t)
        index[b] = i
        length[b] = MESSAGE_LENGTHS[t]
        rows = _ops(t)
        ops[b, : len(rows)] = rows
        n_ops[b] = len(rows)
        itemsize[i] = MESSAGE_DTYPES[t].itemsize
    return LayoutTables(index, length, ops, n_ops, itemsize)


__all__ = [
    "ADD_ORDER_DTYPE",
    "ADD_ORDER_MPID_DTYPE",
    "ALPHA",
    "BODIES",
    "BROKEN_TRADE_DTYPE",
    "CROSS_TRADE_DTYPE",
    "DLCR_DTYPE",
    "IPO_QUOTING_PERIOD_DTYPE",
    "LAYOUTS",
    "LULD_AUCTION_COLLAR_DTYPE",
    "MARKET_PARTICIPANT_POSITION_DTYPE",
    "MAX_FIELDS",
    "MESSAGE_DTYPES",
    "MESSAGE_LENGTHS",
    "MESSAGE_NAMES",
    "MESSAGE_TYPES",
    "MWCB_DECLINE_LEVEL_DTYPE",
    "MWCB_STATUS_DTYPE",
    "NOII_DTYPE",
    "OPERATIONAL_HALT_DTYPE",
    "ORDER_CANCEL_DTYPE",
    "ORDER_DELETE_DTYPE",
    "ORDER_EXECUTED_DTYPE",
    "ORDER_EXECUTED_WITH_PRICE_DTYPE",
    "ORDER_REPLACE_DTYPE",
    "PRICE",
    "REG_SHO_DTYPE",
    "RPII_DTYPE",
    "STOCK_DIRECTORY_DTYPE",
    "STOCK_TRADING_ACTION_DTYPE",
    "SYSTEM_EVENT_DTYPE",
    "TIME",
    "TRADE_DTYPE",
    "UINT",
    "Field",
    "LayoutTables",
    "layout_tables",
]
