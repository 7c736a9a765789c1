# SPDX-License-Identifier: MIT
"""Requests into the engine and the engine's answers: frozen, slotted dataclasses.

A client sends a :class:`Command` and gets exactly one :class:`CommandResult`: a
:class:`CommandAck` when the engine carried it out, or a :class:`CommandError` saying why not.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """Base of all commands."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ping(Command):
    """Ask the engine to answer at once; measures the command round trip."""

    payload: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SetHeartbeatInterval(Command):
    """Change how often the engine publishes :class:`engine.events.EngineHeartbeat`."""

    interval_ms: int  # 10 .. 60_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandAck:
    """The engine carried out ``command``."""

    command: Command
    ts_handled: int  # engine clock, ns
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandError:
    """The engine refused ``command``; ``reason`` says which rule and which values."""

    command: Command
    ts_handled: int  # engine clock, ns (0 when the engine never saw the command)
    reason: str


CommandResult = CommandAck | CommandError
