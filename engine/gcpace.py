# SPDX-License-Identifier: MIT
r"""Paced garbage collection: CPython's full collections never stall a trading loop for long.

A full (generation 2) collection walks every container object the process holds. A process
that keeps what it trades (a simulator's orders and sessions, an engine's books and
journals) holds more of them every minute, so each automatic full collection pauses it longer:
``qwconsole sim`` stopped for 45-150 ms once per 9,000 orders (``bench_ouch``'s ping-pong
against it found one such stall in every run). The pacing here moves everything long-lived out
of the collector's reach: every ``interval_s`` it collects the young generations (a
millisecond or so), then ``gc.freeze()``\ s the survivors; every ``full_every``-th pass first
collects everything made since the last freeze. Automatic collections are off meanwhile.

Reference counting still frees frozen objects; only a reference cycle that becomes garbage
after it was frozen is never collected — the same trade-off the console's GUI thread makes
(``app.bridge.GcPacer`` runs :func:`pacing_step` on a Qt timer; :class:`GcPacing` runs it as
an asyncio task for processes without Qt).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time


def freeze_start_up() -> None:
    """Keep what start-up made (modules, kernels, dictionaries, caches) out of full collections.

    A full (generation 2) collection walks every tracked object: with the start-up's millions
    it paused the engine loop for ~200 ms every few seconds of heavy trading (issue 16), and
    a FIX session's process for 35 ms in 200,000 messages. Frozen, those objects are never
    scanned again; a full pass then costs what trading keeps. Called once start-up is done
    (the engine's start, the FIX benchmarks' processes once logged on).

    Start-up's garbage is collected first only on the main thread. An engine embedded in the
    console starts in a thread of its own, and the console collects in its GUI thread only
    (``app.bridge.GcPacer``): a collection there can free a cycle holding a Qt object and
    destroy it in the wrong thread, or wait on the GUI thread while that waits for the
    interpreter lock (the console hung while its window was being built). Elsewhere the
    objects are frozen as they are.
    """
    if threading.current_thread() is threading.main_thread():
        gc.collect()
    gc.freeze()


def pacing_step(passes: int, full_every: int) -> int:
    """Run pass number ``passes + 1``: collect, freeze the survivors; return objects freed."""
    collected = gc.collect(2 if (passes + 1) % max(1, full_every) == 0 else 1)
    gc.freeze()
    return collected


class GcPacing:
    """Paced collection on the running asyncio loop (see the module docstring).

    Parameters
    ----------
    interval_s : float
        Time between two passes.
    full_every : int
        Every this many passes, collect all unfrozen objects, not only the young ones.
    """

    def __init__(self, interval_s: float = 1.0, full_every: int = 10) -> None:
        self.interval_s = interval_s
        self.full_every = max(1, full_every)
        self._task: asyncio.Task[None] | None = None
        self._was_enabled = True
        #: Passes so far, objects freed by them and the longest pass, ms.
        self.passes = 0
        self.collected = 0
        self.longest_ms = 0.0

    @property
    def active(self) -> bool:
        """Return whether the pacing runs."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Freeze what exists now and pace collections from now on (call on the loop)."""
        if self.active:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        gc.collect()
        gc.freeze()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gc-pacing")

    def step(self) -> None:
        """Run one pass now."""
        t = time.perf_counter()
        self.collected += pacing_step(self.passes, self.full_every)
        self.passes += 1
        self.longest_ms = max(self.longest_ms, (time.perf_counter() - t) * 1e3)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            self.step()

    async def stop(self) -> None:
        """Stop pacing, hand every frozen object back and restore automatic collection."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()


__all__ = ["GcPacing", "freeze_start_up", "pacing_step"]
