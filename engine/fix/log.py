# SPDX-License-Identifier: MIT
"""Session logs: incoming and outgoing messages and events, one per line.

:class:`FileLog` writes ``<prefix>.incoming.log``, ``<prefix>.outgoing.log`` and
``<prefix>.event.log`` under ``FileLogPath``. Each line is ``<UTC timestamp, ns> : <text>``;
messages keep their SOH separators (viewers show them as ``|``). Lines are buffered and flushed
by :meth:`FileLog.flush` (the transport calls it on its timer) and on close: the logs are for
reading, the store is what must survive a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Protocol

from engine.fastlog import get_log
from engine.fix.codec import format_timestamp

_log = get_log("engine.fix.session")


class SessionLog(Protocol):
    """Where a session reports what it receives, sends and does."""

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        """Record a received message."""
        ...

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        """Record a sent message."""
        ...

    def on_event(self, text: str, now_ns: int) -> None:
        """Record a session event."""
        ...

    def flush(self) -> None:
        """Write buffered lines out."""
        ...

    def close(self) -> None:
        """Flush and release files."""
        ...


class NullLog:
    """A :class:`SessionLog` that sends events to :mod:`logging` at DEBUG and drops messages.

    Parameters
    ----------
    name : str
        Session name used in the log records.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str = "") -> None:
        self._name = name

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        """Drop the message."""

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        """Drop the message."""

    def on_event(self, text: str, now_ns: int) -> None:
        """Log the event at DEBUG."""
        _log.debug("%s: %s", self._name, text)

    def flush(self) -> None:
        """Do nothing."""

    def close(self) -> None:
        """Do nothing."""


class MemoryLog:
    """A :class:`SessionLog` that keeps everything in lists (for tests and the UI)."""

    __slots__ = ("events", "incoming", "outgoing")

    def __init__(self) -> None:
        self.incoming: list[bytes] = []
        self.outgoing: list[bytes] = []
        self.events: list[str] = []

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        """Keep the message."""
        self.incoming.append(message)

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        """Keep the message."""
        self.outgoing.append(message)

    def on_event(self, text: str, now_ns: int) -> None:
        """Keep the event."""
        self.events.append(text)

    def flush(self) -> None:
        """Do nothing."""

    def close(self) -> None:
        """Do nothing."""


class FileLog:
    """A :class:`SessionLog` writing three files, one line per message or event.

    Parameters
    ----------
    directory : str or Path
        ``FileLogPath``; created if missing.
    prefix : str
        File base name, normally ``SessionID.file_prefix``.
    """

    __slots__ = ("_events", "_in", "_out", "_paths")

    def __init__(self, directory: str | Path, prefix: str) -> None:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self._paths = (
            d / f"{prefix}.incoming.log",
            d / f"{prefix}.outgoing.log",
            d / f"{prefix}.event.log",
        )
        self._in: BinaryIO = open(self._paths[0], "ab")  # noqa: SIM115  (closed in close())
        self._out: BinaryIO = open(self._paths[1], "ab")  # noqa: SIM115
        self._events: BinaryIO = open(self._paths[2], "ab")  # noqa: SIM115

    @property
    def paths(self) -> tuple[Path, Path, Path]:
        """Return the incoming, outgoing and event log paths."""
        return self._paths

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        """Append a received message."""
        self._in.write(format_timestamp(now_ns, 9) + b" : " + message + b"\n")

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        """Append a sent message."""
        self._out.write(format_timestamp(now_ns, 9) + b" : " + message + b"\n")

    def on_event(self, text: str, now_ns: int) -> None:
        """Append an event."""
        line = text.replace("\n", " ").encode("utf-8", "replace")
        self._events.write(format_timestamp(now_ns, 9) + b" : " + line + b"\n")

    def flush(self) -> None:
        """Write buffered lines to the files."""
        for f in (self._in, self._out, self._events):
            if not f.closed:
                f.flush()

    def close(self) -> None:
        """Flush and close the files."""
        for f in (self._in, self._out, self._events):
            if not f.closed:
                f.close()
