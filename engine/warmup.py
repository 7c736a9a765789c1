# SPDX-License-Identifier: MIT
"""Compile (or load from numba's disk cache) every kernel, ahead of the first real event.

The first call of a numba kernel compiles it (seconds) or loads it from the cache (a fraction of
a second). :func:`warm_up` makes those first calls on tiny inputs through
``engine.matching.precompile`` (which covers every book, matching, queue and P&L kernel),
one FIX frame through the decoder, a small journal through restart recovery and the OUCH
codec, framer and stores (``engine.venues.ouch.precompile``), so the
console can do it on the engine thread while the window appears.

``python -m engine.warmup`` does the same from a shell and prints its progress
(``bootstrap: compiling kernels 12/97``): ``packaging/bootstrap.sh run|test|env`` runs it, so a
fresh clone's first start loads every kernel from the cache instead of compiling them while
the user waits. A cache that is stale (changed sources), from another checkout or damaged is
not used and is rebuilt (``engine.jit.GuardedCache``).
"""

import argparse
import sys
import time
from collections.abc import Callable, Sequence

from engine import jit
from engine.fastlog import get_log
from engine.fix.codec import decode_one, encode
from engine.fix.precompile import warm_up as warm_layouts
from engine.journal.recovery import warm_up as warm_journal
from engine.matching.precompile import warm_up as _warm_all
from engine.venues.ouch.precompile import warm_up as warm_ouch

log = get_log(__name__)

#: How many compilations a warm-up on an empty cache makes (numba compiles a kernel once per
#: argument types, and the helpers it calls with them). The progress figure's total; the
#: first-start test (tests/integration/test_first_start.py) checks it on an empty cache.
EXPECTED_COMPILES = 97

#: Called with (kernels compiled so far, expected total) after each compilation.
Progress = Callable[[int, int], None]


def warm_up(progress: Progress | None = None) -> float:
    """Run every kernel once; return the seconds it took.

    ``progress(done, total)`` is called on this thread after each kernel that had to be
    compiled (none when the cache holds them all); ``total`` is :data:`EXPECTED_COMPILES`, or
    ``done`` if more were compiled.
    """
    t0 = time.perf_counter()
    first = jit.compiled_count()

    def on_compiled(count: int) -> None:
        if progress is not None:
            done = count - first
            progress(done, max(done, EXPECTED_COMPILES))

    with jit.on_compiled(on_compiled):
        _warm_all()
        # The FIX decoder's framing kernels: a start that closes before any traffic would
        # otherwise leave them for the next start to compile.
        frame = encode(b"FIX.4.4", b"0", [(34, b"1"), (49, b"A"), (56, b"B")], [])
        if decode_one(frame) is None:
            raise RuntimeError("FIX decoder warm-up: a well-formed Heartbeat did not decode")
        warm_layouts()  # and the check of the layouts a validating session keeps
        # A restart's journal kernels (framing, CRC, orders and fills).
        warm_journal()
        # The OUCH codec, framer and stores (the demo trades one instrument over OUCH).
        warm_ouch()
    seconds = time.perf_counter() - t0
    log.info("kernels ready in %.2f s (%d compiled)", seconds, jit.compiled_count() - first)
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """Fill the numba cache from a shell, with a progress line; exit 0 when every kernel ran."""
    parser = argparse.ArgumentParser(
        prog="python -m engine.warmup",
        description="Compile every numba kernel into the on-disk cache (or check it is there).",
    )
    parser.add_argument("--prefix", default="bootstrap", help="what each line starts with")
    opts = parser.parse_args(argv)
    tty = sys.stdout.isatty()

    def show(done: int, total: int) -> None:
        # A line per kernel on a terminal (overwritten), every tenth one into a log.
        if tty or done == 1 or done % 10 == 0:
            end = "\r" if tty else "\n"
            sys.stdout.write(f"{opts.prefix}: compiling kernels {done}/{total}{end}")
            sys.stdout.flush()

    try:
        seconds = warm_up(show)
    except Exception as e:  # one line, no traceback: the console compiles on first use then
        sys.stderr.write(f"{opts.prefix}: error: kernel warm-up failed: {type(e).__name__}: {e}\n")
        return 1
    compiled = jit.compiled_count()
    if compiled:
        total = max(compiled, EXPECTED_COMPILES)
        sys.stdout.write(f"{opts.prefix}: compiling kernels {compiled}/{total}\n")
        sys.stdout.write(
            f"{opts.prefix}: {compiled} kernels compiled into the cache in {seconds:.1f} s\n"
        )
    else:
        sys.stdout.write(
            f"{opts.prefix}: kernels ready (loaded from the cache in {seconds:.1f} s)\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
