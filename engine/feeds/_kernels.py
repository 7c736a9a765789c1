# SPDX-License-Identifier: MIT
"""Kernels shared by the feed tools (:mod:`engine.feeds.cli`)."""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel


@kernel
def whole_messages_end(data: npt.NDArray[np.uint8], start: int, end: int) -> int:
    """Return where the last whole length-prefixed message in ``data[start:end]`` ends.

    Messages are a ``u16`` big-endian length and that many bytes (a raw ITCH day file). The
    result is ``start`` when not even one message fits (the caller then takes a longer piece).
    """
    p = start
    while p + 2 <= end:
        n = (int(data[p]) << 8) | int(data[p + 1])
        if p + 2 + n > end:
            break
        p += 2 + n
    return p
