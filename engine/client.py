# SPDX-License-Identifier: MIT
"""The one interface the GUI uses for any engine, embedded or remote.

A client gives three things:

* :meth:`EngineClient.snapshot` — the engine's state at a sequence number;
* an ordered event stream — :meth:`EngineClient.drain` returns the events received since the
  last call, each an :class:`engine.events.EventRecord` with a strictly increasing sequence
  number; :meth:`EngineClient.set_wakeup` registers a callback, called from any thread, when
  the stream goes from empty to non-empty (so a GUI can drain in batches instead of polling);
* :meth:`EngineClient.send` — a command, answered by exactly one
  :class:`engine.commands.CommandAck` or :class:`engine.commands.CommandError` through a
  ``concurrent.futures.Future`` (usable from threads, and from asyncio with
  ``asyncio.wrap_future``).
"""

import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from enum import IntEnum
from typing import Protocol

from engine.commands import Command, CommandResult
from engine.events import EngineSnapshot, EventRecord


class ClientState(IntEnum):
    """State of the link between a client and its engine."""

    IDLE = 0  # not started
    CONNECTING = 1
    CONNECTED = 2
    DISCONNECTED = 3  # stopped or lost; see ``EngineClient.last_error``


class EngineClient(Protocol):
    """What the console knows of an engine."""

    @property
    def name(self) -> str:
        """Return a short name for displays ("embedded", "ny4-engine-1")."""
        ...

    @property
    def state(self) -> ClientState:
        """Return the link state."""
        ...

    @property
    def last_error(self) -> str:
        """Return why the link was lost, or ``""``."""
        ...

    def start(self) -> None:
        """Connect to (or start) the engine; raise ``EngineStartError`` when that fails."""
        ...

    def snapshot(self, timeout_s: float = 2.0) -> EngineSnapshot:
        """Return the engine's state; events after ``snapshot.seq`` follow in the stream."""
        ...

    def drain(self, max_events: int | None = None) -> list[EventRecord]:
        """Return (and forget) the events received so far, oldest first."""
        ...

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` (from any thread) when events arrive after a drain."""
        ...

    def send(self, command: Command) -> Future[CommandResult]:
        """Send ``command``; the future resolves to the engine's answer."""
        ...

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop (or detach from) the engine and release its resources; idempotent."""
        ...


class EngineStartError(RuntimeError):
    """The engine could not be started or reached; the message says why."""


class EventInbox:
    """The received side of a client's event stream: a bounded queue with a wake-up.

    Producers (the engine thread, a network thread) call :meth:`push` / :meth:`push_many`; the
    GUI calls :meth:`drain`. The wake-up callback is called once when the queue goes from
    drained to non-empty, under the lock: once ``set_wakeup(None)`` returns, the previous
    callback is never called again (its owner may be deleted), so it must not block. When the
    queue is full the oldest records go and :attr:`dropped` counts them; the consumer sees the
    gap in sequence numbers and re-reads a snapshot.
    """

    def __init__(self, max_queue: int) -> None:
        if max_queue < 1:
            raise ValueError(f"max_queue: {max_queue} must be >= 1")
        self.max_queue = max_queue
        self.dropped = 0
        self._lock = threading.Lock()
        self._queue: deque[EventRecord] = deque()
        self._wake_pending = False
        self._wakeup: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, record: EventRecord) -> None:
        """Append one record (dropping the oldest when full) and wake the consumer."""
        with self._lock:
            q = self._queue
            if len(q) >= self.max_queue:
                q.popleft()
                self.dropped += 1
            q.append(record)
            if not self._wake_pending:
                self._wake_pending = True
                if self._wakeup is not None:
                    self._wakeup()

    def push_many(self, records: Iterable[EventRecord]) -> None:
        """Append records in order (dropping the oldest when full) and wake the consumer."""
        with self._lock:
            q = self._queue
            q.extend(records)
            over = len(q) - self.max_queue
            if over > 0:
                for _ in range(over):
                    q.popleft()
                self.dropped += over
            if q and not self._wake_pending:
                self._wake_pending = True
                if self._wakeup is not None:
                    self._wakeup()

    def drain(self, max_events: int | None = None) -> list[EventRecord]:
        """Return (and forget) the queued records, oldest first."""
        with self._lock:
            q = self._queue
            if max_events is None or max_events >= len(q):
                out = list(q)
                q.clear()
                self._wake_pending = False
            else:
                out = [q.popleft() for _ in range(max_events)]
            return out

    def clear(self) -> None:
        """Forget every queued record (a fresh snapshot replaces them)."""
        with self._lock:
            self._queue.clear()

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` when records arrive after a drain (at once if some are queued)."""
        with self._lock:
            self._wakeup = callback
            pending = bool(self._queue)
            self._wake_pending = pending
        if pending and callback is not None:
            callback()
