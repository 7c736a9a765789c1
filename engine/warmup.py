# SPDX-License-Identifier: MIT
"""Compile (or load from numba's disk cache) every kernel, ahead of the first real event.

The first call of a numba kernel compiles it (seconds) or loads it from the cache (a fraction of
a second). :func:`warm_up` makes those first calls on tiny inputs through
``engine.matching.warmup`` (which covers every book, matching, queue and P&L kernel) and
one FIX frame through the decoder, so the
console can do it on the engine thread while the window appears.
"""

import logging
import time

from engine.fix.codec import decode_one, encode
from engine.matching.warmup import warm_up as _warm_all

log = logging.getLogger(__name__)


def warm_up() -> float:
    """Run every kernel once; return the seconds it took."""
    t0 = time.perf_counter()
    _warm_all()
    # The FIX decoder's framing kernels: a start that closes before any traffic would
    # otherwise leave them for the next start to compile.
    frame = encode(b"FIX.4.4", b"0", [(34, b"1"), (49, b"A"), (56, b"B")], [])
    if decode_one(frame) is None:
        raise RuntimeError("FIX decoder warm-up: a well-formed Heartbeat did not decode")
    seconds = time.perf_counter() - t0
    log.info("kernels ready in %.2f s", seconds)
    return seconds
