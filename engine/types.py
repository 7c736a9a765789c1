# SPDX-License-Identifier: MIT
"""Structured dtypes and the integer constants used inside kernels, declared once.

Prices are integer ticks, quantities integer lots and times int64 nanoseconds since the epoch
(UTC). ``engine.enums`` mirrors these constants as ``IntEnum`` classes for Python code.
"""

from typing import Final

#: Side code stored in arrays; mirrored by ``engine.enums.Side``.
BUY: Final[int] = 1
SELL: Final[int] = -1
