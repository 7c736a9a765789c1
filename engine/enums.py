# SPDX-License-Identifier: MIT
"""``IntEnum`` mirrors of the kernel constants in ``engine.types`` for Python code.

Values are never display strings; the display text lives in ``widgets/``.
"""

from enum import IntEnum

from engine import types


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
