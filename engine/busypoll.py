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

While it spins with one FIX connection on a plain TCP socket (the usual engine: one session to
its venue), that connection reads its socket itself (:class:`SocketReader`): the loop's own
reading of it is paused, and each iteration asks the socket for bytes directly. That takes the
loop's readiness poll and its read machinery off the path of a message that arrives: about
1.5-2 µs less per round trip of a 200-byte echo between two processes here (13.5 -> 11.7 µs
p50; ``qwconsole bench fix`` prints it in its transport floor), close to what a polling socket
loop without any event loop reaches. With two or more such connections the loop reads them
all, as before: a read that finds nothing costs about a syscall (~0.6-1.5 µs here), so one
readiness poll for all beats one read each (a second ``epoll`` of our own measured no faster
than the loop's). When the spin ends the loop reads the socket again and sleeps on it.

Read bursts. A loop iteration between two rounds of direct reads costs ~0.8 µs (the loop's own
zero-timeout poll, its callback machinery, the spin's re-scheduling), and a message that
arrives meanwhile waits for it: measured, ~0.5-1 µs of every round trip. So while its reads
find nothing, the direct reader keeps reading for up to :data:`READ_BURST_NS` before it hands
the loop its next iteration, as long as the loop has nothing else to do: every
:data:`READS_PER_SPIN` reads it polls the loop's own poller (uvloop's ``epoll`` descriptor,
asyncio's selector; readable when any socket, pipe or wake-up of the loop has something), and
it does not start when the loop has callbacks queued (asyncio's ``_ready``; uvloop does not
show its queue) or when someone asked for the loop (:meth:`BusyPoll.touch`: a send from outside
a read, whose flush is a callback). What a burst can delay is a timer that falls due during
it and, on uvloop, a callback queued by another callback of the same loop iteration: by
:data:`READ_BURST_NS` at most. The 200-byte echo: 7.3-8.2 -> 6.6-7.0 µs a round trip (mean);
batch 1 of ``qwconsole bench fix``: +5 % orders per second.

Turned on per FIX session by ``BusyPollMicroseconds`` (an extension key, default 0 = off) and per
OUCH account by ``[[ouch]] busy_poll_us`` (``SoupClientLink``, ``SoupServerListener``); the
longest window of the links on one loop wins. Meant for processes whose event loop is
their main loop (``qwconsole sim``, headless engines, the FIX benchmarks); in the console's
own process it would compete with the GUI thread for the interpreter lock.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import os
import select
import time
import weakref
from collections.abc import Callable, Sized

#: The longest window a setting may ask for, µs (ten seconds: past it, set no window at all).
MAX_BUSY_POLL_US = 10_000_000
#: A spinning loop offers its core to other processes this often (``sched_yield``), ns.
YIELD_EVERY_NS = 20_000
#: The most a direct read takes at once, bytes (below glibc's mmap threshold: a read of this
#: size is served from the heap; a batch bigger than this is read in several goes).
READ_SIZE = 65_536
#: Reads of a direct reader's socket per spin iteration while they find nothing. The loop's
#: own part of an iteration (its readiness poll, the callback) is then paid once per three
#: reads: a message that arrives waits less for the next read (a 200-byte echo's p50 here:
#: 11.3-12.8 -> 10.6-12.0 µs from one read to three), and other work on the loop at most
#: two empty reads (~1.5 µs) more.
READS_PER_SPIN = 3
#: How long a direct reader that finds nothing keeps reading before the loop's next iteration,
#: while the loop has nothing else to do (see the module's docstring), ns.
READ_BURST_NS = 5_000

_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BusyPoll] = weakref.WeakKeyDictionary()


class BusyPoll:
    """The busy-poll state of one event loop (use :func:`busy_poll_for`).

    Parameters
    ----------
    loop : asyncio.AbstractEventLoop
        The loop to keep polling.
    """

    __slots__ = (
        "__weakref__",
        "_direct",
        "_loop",
        "_loop_io",
        "_queued",
        "_readers",
        "_running",
        "_until",
        "_yield_at",
        "bursts",
        "direct_reads",
        "hurry",
        "iterations",
        "touched",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._until = 0
        self._yield_at = 0
        self._running = False
        self._readers: tuple[SocketReader, ...] = ()
        self._direct: SocketReader | None = None  # the reader when it is the only one
        #: Loop iterations spent polling (for tests and diagnostics).
        self.iterations = 0
        #: Reads that brought bytes through a :class:`SocketReader` (for tests and diagnostics).
        self.direct_reads = 0
        #: A window (ns) asked for while the loop spins, counted from the next iteration: what
        #: a transport's read sets instead of calling :meth:`touch` (whose clock read and call
        #: cost ~75 ns more a message) while :attr:`spinning`. The longest asked wins.
        self.touched = 0
        #: Set by :meth:`touch` (a send from outside a read: its flush is a callback of the
        #: loop): the next direct read makes no burst. Cleared by each spin iteration.
        self.hurry = False
        #: Read bursts made (for tests and diagnostics).
        self.bursts = 0
        # What a read burst needs to see that the loop has something to do: a poll of the
        # loop's own poller (None: no burst) and, on asyncio's loop, its queue of callbacks.
        self._loop_io, self._queued = _loop_business(loop)

    @property
    def spinning(self) -> bool:
        """Whether the loop polls without sleeping right now."""
        return self._running

    def touch(self, window_ns: int) -> None:
        """Keep the loop polling for ``window_ns`` from now (activity was seen)."""
        self.hurry = True
        until = time.monotonic_ns() + window_ns
        if until > self._until:
            self._until = until
        if not self._running and not self._loop.is_closed():
            self._running = True
            self._loop.call_soon(self._spin)
            if self._direct is not None:
                self._direct._pause()

    def attach(
        self, transport: asyncio.Transport, on_data: Callable[[bytes], object]
    ) -> SocketReader | None:
        """Read ``transport``'s socket directly while this loop spins; return its reader.

        The reader is added (:meth:`add`); ``on_data`` gets the bytes, as the transport's
        protocol's ``data_received`` would. None, and nothing added, when the transport is not
        a plain socket transport whose bytes are the protocol's (TLS: the socket carries
        ciphertext) or has no socket.
        """
        if transport.get_extra_info("sslcontext") is not None:
            return None
        if transport.get_extra_info("ssl_object") is not None:
            return None
        sock = transport.get_extra_info("socket")
        if sock is None:
            return None
        try:
            fd = sock.fileno()
        except (OSError, ValueError):
            return None
        if fd < 0:
            return None
        reader = SocketReader(self, transport, fd, on_data)
        self.add(reader)
        return reader

    def add(self, reader: SocketReader) -> None:
        """Let ``reader`` read its socket itself while this loop spins, if it is the only one."""
        if reader not in self._readers:
            self._set_readers((*self._readers, reader))

    def remove(self, reader: SocketReader) -> None:
        """Stop ``reader``'s direct reads for good; the loop reads its socket (unless closing)."""
        if reader in self._readers:
            self._set_readers(tuple(r for r in self._readers if r is not reader))
        reader._resume()

    def _set_readers(self, readers: tuple[SocketReader, ...]) -> None:
        # Direct reads only when one reader is left: the loop takes back any other.
        self._readers = readers
        direct = readers[0] if len(readers) == 1 else None
        if direct is not self._direct:
            if self._direct is not None:
                self._direct._resume()
            self._direct = direct
            if direct is not None and self._running:
                direct._pause()

    def _spin(self) -> None:
        now = time.monotonic_ns()
        touched = self.touched
        if touched:
            self.touched = 0
            if now + touched > self._until:
                self._until = now + touched
        if now < self._until and not self._loop.is_closed():
            self.iterations += 1
            direct = self._direct
            if direct is not None:
                direct._read()
            if now >= self._yield_at:
                # Polling, not hogging: every YIELD_EVERY_NS a process that is runnable on
                # this core (the peer of a ping-pong on a busy machine) gets it, rather than
                # at the end of our time slice (milliseconds). One short syscall when nothing
                # else wants the core; on a loaded machine the difference between 200 and
                # 1,800 round trips/s (2 cores, load 11).
                self._yield_at = now + YIELD_EVERY_NS
                os.sched_yield()
                if direct is not None:
                    direct._keep_paused()
            self.hurry = False
            self._loop.call_soon(self._spin)
        else:
            self._running = False
            if self._direct is not None:
                self._direct._resume()


class SocketReader:
    """Reads a transport's socket directly while the loop of a :class:`BusyPoll` spins.

    Made and added by :meth:`BusyPoll.attach`. While the loop spins and this is the loop's
    only reader, the transport's own reading is paused (``pause_reading``) and every spin
    iteration reads the socket (up to :data:`READS_PER_SPIN` non-blocking reads); bytes go to
    ``on_data``, as the transport would hand them to its protocol's ``data_received``. When
    the spin ends, or at the end of the stream or an error, the transport reads again: the
    loop then sleeps on the socket, and sees the end or the error itself and closes the
    connection as it always does. Remove the reader (:meth:`BusyPoll.remove`, :meth:`close`)
    before the transport is closed: it must never read a descriptor that may have been reused.
    """

    __slots__ = ("_on_data", "_paused", "_poll", "_read_fd", "_transport")

    def __init__(
        self,
        poll: BusyPoll,
        transport: asyncio.Transport,
        fd: int,
        on_data: Callable[[bytes], object],
    ) -> None:
        self._poll = poll
        self._transport = transport
        # A raw file of the descriptor (not closing it): its read answers None when nothing
        # is there, where os.read raises BlockingIOError (~0.3 µs more per idle spin).
        self._read_fd = io.FileIO(fd, "rb", closefd=False).read
        self._on_data = on_data
        self._paused = False

    @property
    def reading(self) -> bool:
        """Whether this reader reads the socket now (the transport's reading paused)."""
        return self._paused

    def close(self) -> None:
        """Stop reading, for good: the transport reads its socket again (unless closing)."""
        self._poll.remove(self)

    def _pause(self) -> None:
        t = self._transport
        if not self._paused and not t.is_closing():
            t.pause_reading()
            self._paused = True

    def _keep_paused(self) -> None:
        # uvloop starts reading a new connection after its protocol's connection_made, whatever
        # pause_reading said there (where an initiator's session is bound): pause it again.
        t = self._transport
        if self._paused and not t.is_closing() and t.is_reading():
            t.pause_reading()

    def _resume(self) -> None:
        if self._paused:
            self._paused = False
            t = self._transport
            if not t.is_closing():
                t.resume_reading()

    def _burst(self, read: Callable[[int], bytes | None]) -> bytes | None:
        # Nothing yet: read on, for up to READ_BURST_NS, while the loop has nothing else to do
        # (module docstring). None: nothing came.
        poll = self._poll
        loop_io = poll._loop_io
        if loop_io is None or poll.hurry or poll._queued:
            return None
        poll.bursts += 1
        end = time.monotonic_ns() + READ_BURST_NS
        while not loop_io(0):
            # READS_PER_SPIN reads between two looks at the loop (written out: a loop's
            # machinery costs about a read's worth of instructions).
            data = read(READ_SIZE)
            if data is not None:
                return data
            data = read(READ_SIZE)
            if data is not None:
                return data
            data = read(READ_SIZE)
            if data is not None or time.monotonic_ns() >= end:
                return data
        return None

    def _read(self) -> None:
        if not self._paused:
            return
        read = self._read_fd
        try:
            data = read(READ_SIZE)
            more = READS_PER_SPIN - 1
            while data is None and more:
                more -= 1
                data = read(READ_SIZE)
            if data is None:
                data = self._burst(read)
        except OSError:
            data = b""
        if data is None:  # nothing yet: the usual answer of a spin
            return
        if data:
            self._poll.direct_reads += 1
            try:
                self._on_data(data)
            except Exception as e:  # as the transport treats a failing data_received
                self._poll.remove(self)
                self._poll._loop.call_exception_handler(
                    {
                        "message": "protocol.data_received() call failed",
                        "exception": e,
                        "transport": self._transport,
                    }
                )
                self._transport.abort()
        else:  # the end of the stream or an error: the transport's own read takes it
            self._poll.remove(self)


def _loop_business(
    loop: asyncio.AbstractEventLoop,
) -> tuple[Callable[[int], list[tuple[int, int]]] | None, Sized]:
    # A zero-timeout poll of ``loop``'s own poller (uvloop: libuv's epoll descriptor; asyncio:
    # its selector's), and the loop's queue of callbacks where it shows it (asyncio's deque;
    # an empty tuple otherwise). No poll (no burst) when the loop has no such descriptor.
    fd = -1
    with contextlib.suppress(Exception):
        backend = getattr(loop, "_get_backend_id", None)  # uvloop's; asyncio's selector
        fd = int(backend() if backend is not None else loop._selector.fileno())  # type: ignore[attr-defined]
    queued: Sized = getattr(loop, "_ready", ())
    if not isinstance(queued, collections.deque):
        queued = ()
    if fd < 0:
        return None, queued
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return poller.poll, queued


def busy_poll_for(loop: asyncio.AbstractEventLoop) -> BusyPoll:
    """Return the :class:`BusyPoll` of ``loop`` (made on first use)."""
    bp = _loops.get(loop)
    if bp is None:
        bp = _loops[loop] = BusyPoll(loop)
    return bp
