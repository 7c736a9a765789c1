# SPDX-License-Identifier: MIT
"""``IntEnum`` mirrors of the kernel constants in ``engine.types`` for Python code.

Values are never display strings; the display text lives in ``widgets/``.

On CPython 3.11 this module also removes ``EnumType.__getattr__`` (process-wide), as CPython
3.12 did (python/cpython#106762): a metaclass with ``__getattr__`` sends every attribute lookup
on every enum class through a slow hook, so ``OrdType.LIMIT`` cost ~250 ns instead of ~75 ns,
and the trading path reads dozens of members per order. The members are in each class's
``__dict__`` (or served by ``enum.property`` for names like ``name``/``value``), so
``__getattr__`` was only a fallback that 3.12 no longer has.
"""

import enum
import sys
from enum import IntEnum

from engine import types

if sys.version_info < (3, 12) and "__getattr__" in vars(enum.EnumType):
    del enum.EnumType.__getattr__  # type: ignore[attr-defined]


class Side(IntEnum):
    """Order side; FIX Side <54> codes live in ``engine.fix``."""

    BUY = types.BUY
    SELL = types.SELL


class EngineState(IntEnum):
    """Lifecycle of an engine as seen by a client."""

    STARTING = 0
    RUNNING = 1
    STOPPING = 2
    STOPPED = 3
    FAILED = 4


class SessionState(IntEnum):
    """Coarse state of a FIX session for status displays."""

    DISCONNECTED = 0
    CONNECTING = 1
    LOGON_SENT = 2
    LOGGED_ON = 3
    LOGOUT_SENT = 4


class OrdType(IntEnum):
    """OrdType <40>; values mirror ``engine.types.ORD_*`` (FIX codes: 1 Market, 2 Limit)."""

    MARKET = 1
    LIMIT = 2


class TimeInForce(IntEnum):
    """TimeInForce <59>; values equal the FIX codes and ``engine.types.TIF_*``."""

    DAY = 0
    GTC = 1
    IOC = 3
    FOK = 4


class OrdStatus(IntEnum):
    """OrdStatus <39>; each value is the FIX code read as a hexadecimal digit ("A" = 10)."""

    NEW = 0
    PARTIALLY_FILLED = 1
    FILLED = 2
    DONE_FOR_DAY = 3
    CANCELED = 4
    REPLACED = 5  # FIX 4.0-4.2 only; later versions report the new order's status
    PENDING_CANCEL = 6
    STOPPED = 7
    REJECTED = 8
    SUSPENDED = 9
    PENDING_NEW = 10
    CALCULATED = 11
    EXPIRED = 12
    ACCEPTED_FOR_BIDDING = 13
    PENDING_REPLACE = 14


class ExecType(IntEnum):
    """ExecType <150>; values equal the FIX code read in base 36 ("F" = 15, "I" = 18)."""

    NEW = 0
    PARTIAL_FILL = 1  # FIX 4.2 and earlier; later versions say TRADE
    FILL = 2  # FIX 4.2 and earlier; later versions say TRADE
    DONE_FOR_DAY = 3
    CANCELED = 4
    REPLACED = 5
    PENDING_CANCEL = 6
    STOPPED = 7
    REJECTED = 8
    SUSPENDED = 9
    PENDING_NEW = 10
    CALCULATED = 11
    EXPIRED = 12
    RESTATED = 13
    PENDING_REPLACE = 14
    TRADE = 15
    TRADE_CORRECT = 16
    TRADE_CANCEL = 17
    ORDER_STATUS = 18


class AlertLevel(IntEnum):
    """Severity of an alert shown to the trader."""

    INFO = 20
    WARNING = 30
    ERROR = 40
    CRITICAL = 50


class Liquidity(IntEnum):
    """Maker or taker side of a fill (FIX LastLiquidityInd <851> codes)."""

    NONE = types.LIQ_NONE
    MAKER = types.LIQ_MAKER
    TAKER = types.LIQ_TAKER


class Reason(IntEnum):
    """Why an order was rejected, canceled or expired by the matcher."""

    NONE = types.REASON_NONE
    UNKNOWN_ORDER = types.REASON_UNKNOWN_ORDER
    DUPLICATE_ID = types.REASON_DUPLICATE_ID
    BOOK_FULL = types.REASON_BOOK_FULL
    PRICE_RANGE = types.REASON_PRICE_RANGE
    IOC_REMAINDER = types.REASON_IOC_REMAINDER
    FOK_UNFILLABLE = types.REASON_FOK_UNFILLABLE
    SELF_TRADE = types.REASON_SELF_TRADE
    REQUESTED = types.REASON_REQUESTED


class CmdAction(IntEnum):
    """Action of an ``ORDER_CMD_DTYPE`` row."""

    NEW = types.CMD_NEW
    CANCEL = types.CMD_CANCEL
    REPLACE = types.CMD_REPLACE


class StpMode(IntEnum):
    """Self-trade prevention mode of the matcher."""

    NONE = types.STP_NONE
    CANCEL_TAKER = types.STP_CANCEL_TAKER
    CANCEL_MAKER = types.STP_CANCEL_MAKER
    CANCEL_BOTH = types.STP_CANCEL_BOTH


class L3Action(IntEnum):
    """Action of an ``L3_EVENT_DTYPE`` row."""

    ADD = types.L3_ADD
    MODIFY = types.L3_MODIFY
    CANCEL = types.L3_CANCEL
    EXECUTE = types.L3_EXECUTE
    CLEAR = types.L3_CLEAR


class L2Kind(IntEnum):
    """Kind of an ``L2_EVENT_DTYPE`` row."""

    SET = types.L2_SET
    TRADE = types.L2_TRADE
    CLEAR = types.L2_CLEAR


class QueueModelKind(IntEnum):
    """Queue-position model of own orders in an L2 book."""

    CONSERVATIVE = types.QM_CONSERVATIVE
    POWER = types.QM_POWER
    LOG = types.QM_LOG


class KillLevel(IntEnum):
    """Levels of the kill switch; each includes the ones below it."""

    OFF = 0
    BLOCK_NEW = 1  # refuse new orders
    CANCEL_ALL = 2  # and cancel every working order
    FLATTEN = 3  # and close every position


class StrategyState(IntEnum):
    """Lifecycle of a strategy: paused keeps its state but has no quotes out.

    ``HALTED`` is a pause the kill switch imposed: every level of the switch halts every
    strategy that is not stopped, and only an explicit start (resume) lifts it, once the switch
    is released — releasing the switch does not restart anything by itself.
    """

    STOPPED = 0
    RUNNING = 1
    PAUSED = 2
    HALTED = 3  # paused by the kill switch; survives a restart until resumed
