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
longest window of the links on one loop wins.

A link may also hand its socket to the spinner (:meth:`BusyPoll.watch`): while spinning, the
spinner then reads it itself (one ``epoll_wait`` with a zero timeout over every watched socket,
repeated for up to ``SLICE_NS`` until something arrives, then the bytes go straight to the
link's ``data_received``) instead of returning to the loop to learn from its selector that the
socket is readable (a ``call_soon`` and a pass of the loop per look: ~1.5 µs of a loopback
round trip). Plain TCP only: a TLS transport's socket carries ciphertext. The transport still
reads the socket too: whichever reads first gets the bytes, in order, on the loop's thread; an
end of file or an error is left for the transport to find. Meant for processes whose event
loop is their main loop (``qwconsole sim``, headless engines, the FIX benchmarks); in the console's
own process it would compete with the GUI thread for the interpreter lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import time
import weakref
from collections.abc import Callable

#: The longest window a setting may ask for, µs (ten seconds: past it, set no window at all).
MAX_BUSY_POLL_US = 10_000_000
#: A spinning loop offers its core to other processes this often (``sched_yield``), ns.
YIELD_EVERY_NS = 20_000
#: Longest a spin looks at its watched sockets before it lets the loop run again, ns: timers
#: and unwatched sockets wait at most this long.
SLICE_NS = 20_000
#: Bytes read at once from a watched socket (what uvloop reads at once).
READ_BYTES = 262_144

_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BusyPoll] = weakref.WeakKeyDictionary()


class BusyPoll:
    """The busy-poll state of one event loop (use :func:`busy_poll_for`).

    Parameters
    ----------
    loop : asyncio.AbstractEventLoop
        The loop to keep polling.
    """

    __slots__ = (
        "__weakref__", "_buf", "_epoll", "_loop", "_running", "_until", "_view", "_watched",
        "_yield_at", "iterations", "reads",
    )  # fmt: skip

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._until = 0
        self._yield_at = 0
        self._running = False
        self._watched: dict[int, Callable[[bytes], None]] = {}
        self._epoll: select.epoll | None = None
        self._buf = bytearray(READ_BYTES)
        self._view = memoryview(self._buf)
        #: Loop iterations spent polling (for tests and diagnostics).
        self.iterations = 0
        #: Reads the spinner made itself from watched sockets (for tests and diagnostics).
        self.reads = 0

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

    def watch(self, transport: asyncio.BaseTransport, on_data: Callable[[bytes], None]) -> int:
        """Read ``transport``'s socket while spinning and give its bytes to ``on_data``.

        Returns the key for :meth:`unwatch` (call it before the transport closes the socket),
        or -1 when the socket cannot be watched (TLS, no socket, no epoll on this system).
        """
        if not hasattr(select, "epoll") or transport.get_extra_info("sslcontext") is not None:
            return -1
        sock = transport.get_extra_info("socket")
        if sock is None:
            return -1
        fd = int(sock.fileno())
        if fd < 0:
            return -1
        if self._epoll is None:
            self._epoll = select.epoll()
        try:
            self._epoll.register(fd, select.EPOLLIN)
        except OSError:
            return -1
        self._watched[fd] = on_data
        return fd

    def unwatch(self, key: int, on_data: Callable[[bytes], None] | None = None) -> None:
        """Stop reading the socket of :meth:`watch`'s ``key`` (nothing when -1 or unknown).

        With ``on_data``, only while the key is still that reader's (a closed socket's number
        may already be a new connection's).
        """
        current = self._watched.get(key)
        if current is None or (on_data is not None and current != on_data):
            return
        del self._watched[key]
        if self._epoll is not None:
            with contextlib.suppress(OSError):  # closed already: the kernel dropped it
                self._epoll.unregister(key)

    @property
    def watching(self) -> int:
        """How many sockets the spinner reads itself."""
        return len(self._watched)

    def _read_watched(self, now: int) -> None:
        # Look at the watched sockets until something arrives or the slice ends.
        ep = self._epoll
        assert ep is not None
        watched = self._watched
        view = self._view
        end = now + SLICE_NS
        while True:
            ready = ep.poll(0)
            for fd, _ev in ready:
                on_data = watched.get(fd)
                if on_data is None:
                    continue
                try:
                    n = os.readv(fd, (view,))
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    self.unwatch(fd)  # the transport reports the error
                    continue
                if n == 0:
                    self.unwatch(fd)  # end of file: the transport's to handle
                    continue
                self.reads += 1
                try:
                    on_data(bytes(view[:n]))
                except Exception as exc:  # the spin goes on; the link is the loop's to judge
                    self.unwatch(fd)
                    self._loop.call_exception_handler(
                        {"message": "busy poll: data_received failed", "exception": exc}
                    )
            if ready or time.monotonic_ns() >= end or not watched:
                return

    def _spin(self) -> None:
        now = time.monotonic_ns()
        if now < self._until and not self._loop.is_closed():
            self.iterations += 1
            if self._watched:
                self._read_watched(now)
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
