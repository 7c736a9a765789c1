# SPDX-License-Identifier: MIT
"""Busy polling: keep an event loop polling its sockets instead of sleeping, for a while.

An idle core that sleeps in ``epoll_wait`` takes tens of microseconds to wake when a message
arrives (measured on this project's machines: a 200-byte echo between two processes on
127.0.0.1 takes 55-75 µs when both sleep, 9 µs when both poll). Low-latency engines offer a
busy-spin idle strategy for that reason (Aeron's ``BusySpinIdleStrategy``, Chronicle FIX's
busy-polling event loop); this is ours, for any asyncio event loop (uvloop included):

While a spin is on, a callback re-schedules itself with ``call_soon``, so every loop iteration
polls its selector with a zero timeout instead of blocking, and offers the core to any other
process waiting for it (``sched_yield``). The spin lasts a window after the last activity a
transport reports with :meth:`BusyPoll.touch` (a message received or sent), then the loop
sleeps as usual: a quiet session costs nothing, an active one costs one core
(about 1 µs of CPU per iteration, all of it while nothing else is ready).

Turned on per FIX session by ``BusyPollMicroseconds`` (an extension key, default 0 = off) and per
OUCH account by ``[[ouch]] busy_poll_us`` (``SoupClientLink``, ``SoupServerListener``); the
longest window of the links on one loop wins. Meant for processes whose event loop is
their main loop (``qwconsole sim``, headless engines, the FIX benchmarks); in the console's
own process it would compete with the GUI thread for the interpreter lock.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref

#: The longest window a setting may ask for, µs (ten seconds: past it, set no window at all).
MAX_BUSY_POLL_US = 10_000_000
#: A spinning loop offers its core to other processes this often (``sched_yield``), ns.
YIELD_EVERY_NS = 20_000

_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BusyPoll] = weakref.WeakKeyDictionary()


class BusyPoll:
    """The busy-poll state of one event loop (use :func:`busy_poll_for`).

    Parameters
    ----------
    loop : asyncio.AbstractEventLoop
        The loop to keep polling.
    """

    __slots__ = ("__weakref__", "_loop", "_running", "_until", "_yield_at", "iterations")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._until = 0
        self._yield_at = 0
        self._running = False
        #: Loop iterations spent polling (for tests and diagnostics).
        self.iterations = 0

    @property
    def spinning(self) -> bool:
        """Whether the loop polls without sleeping right now."""
        return self._running

    def touch(self, window_ns: int) -> None:
        """Keep the loop polling for ``window_ns`` from now (activity was seen)."""
        until = time.monotonic_ns() + window_ns
        if until > self._until:
            self._until = until
        if not self._running and not self._loop.is_closed():
            self._running = True
            self._loop.call_soon(self._spin)

    def _spin(self) -> None:
        now = time.monotonic_ns()
        if now < self._until and not self._loop.is_closed():
            self.iterations += 1
            if now >= self._yield_at:
                # Polling, not hogging: every YIELD_EVERY_NS a process that is runnable on
                # this core (the peer of a ping-pong on a busy machine) gets it, rather than
                # at the end of our time slice (milliseconds). One short syscall when nothing
                # else wants the core; on a loaded machine the difference between 200 and
                # 1,800 round trips/s (2 cores, load 11).
                self._yield_at = now + YIELD_EVERY_NS
                os.sched_yield()
            self._loop.call_soon(self._spin)
        else:
            self._running = False


def busy_poll_for(loop: asyncio.AbstractEventLoop) -> BusyPoll:
    """Return the :class:`BusyPoll` of ``loop`` (made on first use)."""
    bp = _loops.get(loop)
    if bp is None:
        bp = _loops[loop] = BusyPoll(loop)
    return bp
