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

from collections.abc import Callable
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
