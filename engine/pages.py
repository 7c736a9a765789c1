# SPDX-License-Identifier: MIT
"""Memory pages for a process with a latency-bound loop: no transparent huge pages for numpy.

On Linux numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for
every array of 4 MB or more. The first write into each 2 MB of such an array then faults in a
huge page, in the thread that writes: the kernel finds 2 MB of contiguous memory (compacting
memory when none is at hand) and zeroes it. On the project's 2-core VMs one such fault took
up to 70 ms, and writing 200 MB into a fresh array took 2.2 s against 85 ms with 4 KB pages.
The console's tables reserve their buffers ahead and fill them as rows come, so the Monitor's
GUI thread stalled 40-110 ms a few times a minute in a 20,000 events/s storm
(``bench_monitor``); with 4 KB pages its longest stall was 21 ms.

:func:`small_pages` turns transparent huge pages off for the process (``prctl``
``PR_SET_THP_DISABLE``, Linux 3.15 on: whatever the system's mode, ``always`` included) and
numpy's request with them. The console, the headless engine and the exchange simulator call it
first thing; batch tools (imports, backtests, benchmarks of throughput) keep the defaults.
numpy reads its half of the choice from ``NUMPY_MADVISE_HUGEPAGE=0`` at import; this is the
call its import makes with that value.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

_PR_SET_THP_DISABLE = 41  # <linux/prctl.h>
_PR_GET_THP_DISABLE = 42


def _switch() -> Callable[[bool], Any] | None:
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    return getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)


def _prctl(option: int, arg: int) -> int | None:
    """Return ``prctl(option, arg)``'s result, or None off Linux or without the call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return int(ctypes.CDLL(None).prctl(option, arg, 0, 0, 0))
    except (OSError, AttributeError):
        return None


def small_pages() -> bool:
    """Give memory the process maps from now on 4 KB pages; return whether the kernel agreed.

    Memory mapped before the call keeps its pages. Elsewhere than Linux nothing changes and
    the result is False (numpy asks for huge pages on Linux only).
    """
    setter = _switch()
    if setter is not None:
        setter(False)
    result = _prctl(_PR_SET_THP_DISABLE, 1)
    done = result == 0
    if result is not None and not done:
        log.info("the kernel kept transparent huge pages for this process (prctl refused)")
    return done


def thp_disabled() -> bool:
    """Return whether transparent huge pages are off for this process (``PR_GET_THP_DISABLE``)."""
    return _prctl(_PR_GET_THP_DISABLE, 0) == 1


def huge_pages_requested() -> bool:
    """Return whether numpy asks for huge pages for new arrays now."""
    setter = _switch()
    if setter is None:
        return False
    was = bool(setter(True))  # the switch returns the previous value: read it, put it back
    setter(was)
    return was


__all__ = ["huge_pages_requested", "small_pages", "thp_disabled"]
