# SPDX-License-Identifier: MIT
"""Structured dtypes and the integer constants used inside kernels, declared once.

Prices are integer ticks, quantities integer lots and times int64 nanoseconds since the epoch
(UTC). ``engine.enums`` mirrors these constants as ``IntEnum`` classes for Python code.

numba freezes module-level globals at compile time, so kernels read these constants at no
cost; Python code should prefer the ``IntEnum`` mirrors.
"""

from typing import Final

import numpy as np
import numpy.typing as npt

# ------------------------------------------------------------------------------------ sides
#: Side code stored in arrays; mirrored by ``engine.enums.Side``.
BUY: Final[int] = 1
SELL: Final[int] = -1

#: Book side index used inside kernels: bids live at index 0, asks at index 1.
BID_SIDE: Final[int] = 0
ASK_SIDE: Final[int] = 1

# ------------------------------------------------------------------------- L2 market events
#: ``L2_EVENT_DTYPE.kind``: the level at ``px`` now holds ``qty`` (0 deletes the level).
L2_SET: Final[int] = 0
#: ``L2_EVENT_DTYPE.kind``: a trade of ``qty`` at ``px``; ``side`` is the aggressor's side.
L2_TRADE: Final[int] = 1
#: ``L2_EVENT_DTYPE.kind``: clear the whole book (both sides).
L2_CLEAR: Final[int] = 2

#: One market-by-price event (a level change, a trade or a clear) for one of many books.
L2_EVENT_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # venue time, ns since epoch
        ("px", "i8"),  # price in ticks
        ("qty", "i8"),  # new level size (L2_SET) or traded size (L2_TRADE), lots
        ("book", "i4"),  # index of the book (instrument) the event belongs to
        ("side", "i1"),  # BUY (bid level / buyer-initiated trade) or SELL
        ("kind", "u1"),  # L2_SET, L2_TRADE, L2_CLEAR
    ],
    align=True,
)

#: Columns of the per-book state array of an L2 book (``int64[n_books, L2_NSTATE]``).
L2S_BASE: Final[int] = 0  # price in ticks of window index 0
L2S_BID: Final[int] = 1  # window index of the best bid, -1 when there is none
L2S_ASK: Final[int] = 2  # window index of the best ask, n_levels when there is none
L2S_DROPPED: Final[int] = 3  # updates and levels lost outside the window
L2S_RECENTRES: Final[int] = 4  # how often the window moved
L2S_TS: Final[int] = 5  # ts of the last applied event
L2_NSTATE: Final[int] = 8

# ------------------------------------------------------------------------- L3 market events
#: ``L3_EVENT_DTYPE.action``: a new order rests at ``px`` with ``qty``.
L3_ADD: Final[int] = 1
#: ``L3_EVENT_DTYPE.action``: the order now has price ``px`` and size ``qty``.
L3_MODIFY: Final[int] = 2
#: ``L3_EVENT_DTYPE.action``: the order is reduced by ``qty``; ``qty <= 0`` removes it.
L3_CANCEL: Final[int] = 3
#: ``L3_EVENT_DTYPE.action``: the order traded ``qty`` (it leaves the book when done).
L3_EXECUTE: Final[int] = 4
#: ``L3_EVENT_DTYPE.action``: clear the whole book.
L3_CLEAR: Final[int] = 5

#: One market-by-order event.
L3_EVENT_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # venue time, ns since epoch
        ("order_id", "i8"),  # venue order id (any int64 but INT64_MIN)
        ("px", "i8"),  # price in ticks (ADD, MODIFY; informative otherwise)
        ("qty", "i8"),  # lots: size (ADD, MODIFY) or reduction (CANCEL, EXECUTE)
        ("side", "i1"),  # BUY or SELL
        ("action", "u1"),  # L3_ADD ... L3_CLEAR
    ],
    align=True,
)

#: Priority policy bits of an L3 book or matcher: which modifications send an order to the
#: back of its queue. The default (price change or size increase) is CME's and most venues'.
PRIO_LOSE_ON_PRICE: Final[int] = 1
PRIO_LOSE_ON_INCREASE: Final[int] = 2
PRIO_LOSE_ON_DECREASE: Final[int] = 4
PRIO_DEFAULT: Final[int] = PRIO_LOSE_ON_PRICE | PRIO_LOSE_ON_INCREASE

#: Fields of one packed order record (``int64[cap, ORDER_WIDTH]``, 64 bytes, one cache line).
OR_PX: Final[int] = 0  # window index of the price level
OR_QTY: Final[int] = 1  # leaves, lots (0: slot is free)
OR_PREV: Final[int] = 2  # previous slot in the level FIFO, -1 at the head
OR_NEXT: Final[int] = 3  # next slot in the level FIFO, -1 at the tail
OR_SIDE: Final[int] = 4  # BID_SIDE or ASK_SIDE
OR_ID: Final[int] = 5  # order id
OR_SEQ: Final[int] = 6  # arrival sequence number (time priority)
OR_OWNER: Final[int] = 7  # owner / self-trade group (-1: none)
ORDER_WIDTH: Final[int] = 8

#: Fields of one level record (``int64[2, n_levels, LEVEL_WIDTH]``).
LV_HEAD: Final[int] = 0
LV_TAIL: Final[int] = 1
LV_QTY: Final[int] = 2
LV_CNT: Final[int] = 3
LEVEL_WIDTH: Final[int] = 4

#: Columns of the state array of an L3 book or matcher (``int64[L3_NSTATE]``).
L3S_BID: Final[int] = 0  # level index of the best bid, -1 when there is none
L3S_ASK: Final[int] = 1  # level index of the best ask, n_levels when there is none
L3S_BASE: Final[int] = 2  # price in ticks of level index 0
L3S_NORDERS: Final[int] = 3  # resting orders
L3S_SEQ: Final[int] = 4  # last sequence number handed out
L3S_FREE: Final[int] = 5  # number of free slots on the free stack
L3S_UNKNOWN: Final[int] = 6  # events that referred to an unknown order id
L3S_DUPLICATE: Final[int] = 7  # adds whose order id was already resting
L3S_POLICY: Final[int] = 8  # PRIO_* bits
L3S_TS: Final[int] = 9  # ts of the last applied event
L3_NSTATE: Final[int] = 12

#: Empty bucket marker of the open-addressing order-id table.
ID_EMPTY: Final[int] = -(2**63)

# ------------------------------------------------------------------------------- matching
#: ``ORDER_CMD_DTYPE.action``.
CMD_NEW: Final[int] = 1
CMD_CANCEL: Final[int] = 2
CMD_REPLACE: Final[int] = 3

#: Order types (FIX OrdType <40> codes).
ORD_MARKET: Final[int] = 1
ORD_LIMIT: Final[int] = 2

#: Time in force (FIX TimeInForce <59> codes).
TIF_DAY: Final[int] = 0
TIF_GTC: Final[int] = 1
TIF_IOC: Final[int] = 3
TIF_FOK: Final[int] = 4

#: Self-trade prevention modes of the matcher.
STP_NONE: Final[int] = 0
STP_CANCEL_TAKER: Final[int] = 1  # cancel the rest of the incoming order
STP_CANCEL_MAKER: Final[int] = 2  # cancel the resting order and keep matching
STP_CANCEL_BOTH: Final[int] = 3

#: One request into the matcher.
ORDER_CMD_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # arrival time at the venue, ns
        ("order_id", "i8"),  # order id (new, or the order to cancel/replace)
        ("px", "i8"),  # limit price, ticks (ignored for market orders and cancels)
        ("qty", "i8"),  # order quantity (new) or new leaves quantity (replace), lots
        ("owner", "i8"),  # owner / self-trade group, -1 for none
        ("side", "i1"),  # BUY or SELL
        ("action", "u1"),  # CMD_NEW, CMD_CANCEL, CMD_REPLACE
        ("ord_type", "u1"),  # ORD_LIMIT or ORD_MARKET
        ("tif", "u1"),  # TIF_DAY, TIF_GTC, TIF_IOC, TIF_FOK
    ],
    align=True,
)

#: Execution types (FIX ExecType <150> codes; ``F`` trade is 15).
EXEC_NEW: Final[int] = 0
EXEC_CANCELED: Final[int] = 4
EXEC_REPLACED: Final[int] = 5
EXEC_REJECTED: Final[int] = 8
EXEC_EXPIRED: Final[int] = 12
EXEC_TRADE: Final[int] = 15

#: Liquidity flag of a fill (FIX LastLiquidityInd <851> codes).
LIQ_NONE: Final[int] = 0
LIQ_MAKER: Final[int] = 1
LIQ_TAKER: Final[int] = 2

#: Reasons carried by rejects, cancels and expiries.
REASON_NONE: Final[int] = 0
REASON_UNKNOWN_ORDER: Final[int] = 1
REASON_DUPLICATE_ID: Final[int] = 2
REASON_BOOK_FULL: Final[int] = 3
REASON_PRICE_RANGE: Final[int] = 4
REASON_IOC_REMAINDER: Final[int] = 5
REASON_FOK_UNFILLABLE: Final[int] = 6
REASON_SELF_TRADE: Final[int] = 7
REASON_REQUESTED: Final[int] = 8

#: One event out of the matcher (an ack, one side of a fill, a cancel, an expiry, a reject).
EXEC_EVENT_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # ts of the command that caused it, ns
        ("order_id", "i8"),  # the order this report is about
        ("other_id", "i8"),  # the counterparty order of a fill, else -1
        ("px", "i8"),  # fill price / resting price, ticks
        ("qty", "i8"),  # fill qty (trade), canceled qty (cancel/expiry), order qty otherwise
        ("leaves", "i8"),  # remaining open quantity after this event, lots
        ("cmd", "i4"),  # index of the command in its batch
        ("side", "i1"),  # side of ``order_id``
        ("kind", "u1"),  # EXEC_*
        ("liquidity", "u1"),  # LIQ_MAKER / LIQ_TAKER on trades
        ("reason", "u1"),  # REASON_*
    ],
    align=True,
)

# --------------------------------------------------------------------------- queue models
#: Queue models for own orders in an L2 book.
QM_CONSERVATIVE: Final[int] = 0  # advance only on trades at the price (and level shrink)
QM_POWER: Final[int] = 1  # probabilistic, f(x) = x**n
QM_LOG: Final[int] = 2  # probabilistic, f(x) = log(1 + x)

#: ``OWN_ORDER_DTYPE.status``.
OWN_PENDING: Final[int] = 0  # not yet at the venue
OWN_ACTIVE: Final[int] = 1
OWN_FILLED: Final[int] = 2
OWN_CANCELED: Final[int] = 3

#: One own (simulated) order whose queue position is tracked.
OWN_ORDER_DTYPE: Final = np.dtype(
    [
        ("order_id", "i8"),
        ("ts", "i8"),  # time the order reaches the venue, ns
        ("px", "i8"),  # ticks
        ("qty", "i8"),  # original quantity, lots
        ("leaves", "i8"),  # open quantity, lots
        ("ahead", "f8"),  # estimated quantity ahead in the queue, lots (exact in L3)
        ("pending", "f8"),  # traded at the price since the last depth update (L2 models)
        ("seq", "i8"),  # L3: sequence number the order took in the FIFO
        ("cancel_ts", "i8"),  # time a cancel reaches the venue (INT64_MAX: never)
        ("book", "i4"),  # book index
        ("side", "i1"),  # BUY or SELL
        ("status", "u1"),  # OWN_*
    ],
    align=True,
)

# ---------------------------------------------------------------------- fills and P&L
#: One fill as booked by positions and P&L.
FILL_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # ns since epoch
        ("order_id", "i8"),  # the order that filled
        ("px", "i8"),  # ticks
        ("qty", "i8"),  # lots, > 0
        ("fee", "f8"),  # fee in the quote currency (negative: rebate)
        ("strategy", "i8"),  # PositionBook slot, or the strategy id (backtest fills)
        ("instrument", "i4"),  # instrument index
        ("side", "i1"),  # BUY or SELL
        ("liquidity", "u1"),  # LIQ_*
    ],
    align=True,
)

#: Position and P&L state of one (strategy, instrument) pair.
POSITION_DTYPE: Final = np.dtype(
    [
        ("qty", "i8"),  # signed position, lots
        ("cost", "f8"),  # signed cost basis, ticks*lots (avg_px * qty)
        ("realized", "f8"),  # realized P&L before fees, quote currency
        ("fees", "f8"),  # fees paid, quote currency
        ("volume", "i8"),  # traded lots
        ("n_fills", "i8"),
        ("last_ts", "i8"),
    ],
    align=True,
)

#: Rows of ``L2_EVENT_DTYPE``.
L2EventArray = npt.NDArray[np.void]
#: Rows of ``L3_EVENT_DTYPE``.
L3EventArray = npt.NDArray[np.void]
#: Rows of ``ORDER_CMD_DTYPE``.
OrderCmdArray = npt.NDArray[np.void]
#: Rows of ``EXEC_EVENT_DTYPE``.
ExecEventArray = npt.NDArray[np.void]
#: Rows of ``FILL_DTYPE``.
FillArray = npt.NDArray[np.void]
#: An int64 array.
I64Array = npt.NDArray[np.int64]

# ------------------------------------------------------------------ post-trade (journal)
#: One order as the journal last saw it, one row per order (``engine.posttrade``).
JOURNAL_ORDER_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # ts_event of the order's last change, ns since epoch
        ("order_id", "i8"),  # engine-wide order id
        ("ts_created", "i8"),  # ns
        ("ts_sent", "i8"),  # ns, 0 if never sent
        ("ts_acked", "i8"),  # ns, 0 if never acknowledged
        ("px", "i8"),  # limit price, ticks (0: market order)
        ("qty", "i8"),  # OrderQty <38>, lots
        ("cum_qty", "i8"),  # CumQty <14>, lots
        ("leaves_qty", "i8"),  # LeavesQty <151>, lots
        ("avg_px", "f8"),  # AvgPx <6>, ticks
        ("strategy", "i8"),  # strategy id (int64: any id the configuration accepts)
        ("instrument", "i4"),  # index into the symbol table of the load
        ("n_changes", "i4"),  # how many changes the journal recorded for the order
        ("side", "i1"),  # BUY or SELL
        ("ord_type", "u1"),  # ORD_LIMIT, ORD_MARKET
        ("tif", "u1"),  # TIF_*
        ("status", "u1"),  # OrdStatus <39> as ``engine.enums.OrdStatus``
    ],
    align=True,
)

#: One change of an order (one ``OrderChanged`` event): the order flow of a day.
ORDER_EVENT_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # ts_event of the change, ns since epoch
        ("seq", "i8"),  # engine event sequence number (0 if journaled off the bus)
        ("order_id", "i8"),
        ("px", "i8"),  # ticks
        ("qty", "i8"),  # lots
        ("cum_qty", "i8"),  # lots
        ("leaves_qty", "i8"),  # lots
        ("avg_px", "f8"),  # ticks
        ("strategy", "i8"),  # strategy id
        ("instrument", "i4"),  # index into the symbol table of the load
        ("side", "i1"),  # BUY or SELL
        ("ord_type", "u1"),
        ("tif", "u1"),
        ("status", "u1"),  # OrdStatus after the change
    ],
    align=True,
)

#: One execution (one ``OrderFilled`` event).
EXECUTION_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # ts_event: TransactTime <60> (or engine time), ns since epoch
        ("ts_recv", "i8"),  # local receive time, ns
        ("seq", "i8"),  # engine event sequence number (0 if journaled off the bus)
        ("order_id", "i8"),
        ("px", "i8"),  # LastPx <31>, ticks
        ("qty", "i8"),  # LastQty <32>, lots
        ("leaves_qty", "i8"),  # LeavesQty <151>, lots
        ("strategy", "i8"),  # strategy id
        ("instrument", "i4"),  # index into the symbol table of the load
        ("side", "i1"),  # BUY or SELL
    ],
    align=True,
)

#: Market state of one instrument from ``ts`` on (input of the post-trade as-of join).
MARKET_SNAPSHOT_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),  # ns since epoch; rows sorted by ts
        ("bid_px", "i8"),  # best bid, ticks
        ("bid_qty", "i8"),  # lots at the best bid (0: no bid)
        ("ask_px", "i8"),  # best ask, ticks
        ("ask_qty", "i8"),  # lots at the best ask (0: no ask)
        ("last_px", "i8"),  # last trade price, ticks
        ("last_qty", "i8"),  # last trade size, lots (0: no trade yet)
    ],
    align=True,
)

#: Rows of ``JOURNAL_ORDER_DTYPE``, ``ORDER_EVENT_DTYPE`` or ``EXECUTION_DTYPE``.
PostTradeArray = npt.NDArray[np.void]
#: Rows of ``MARKET_SNAPSHOT_DTYPE``.
MarketSnapshotArray = npt.NDArray[np.void]
