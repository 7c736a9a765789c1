# SPDX-License-Identifier: MIT
"""Engine log records as events, so the console shows them live.

:class:`BusLogHandler` is a ``logging.Handler`` that turns records (WARNING and above by
default) into :class:`engine.events.LogRecorded` events on the engine bus; records logged
with ``extra=ALERTED`` are skipped, their text being on the bus already as an ``Alert``.
Records logged on other threads are handed to the engine loop with ``call_soon_threadsafe``;
a burst beyond
``max_per_second`` is summarized in one line instead of flooding the stream.
"""

import asyncio
import logging
import threading

from engine.commands import Command, CommandResult
from engine.core import Engine
from engine.events import Event, LogRecorded


class BusLogHandler(logging.Handler):
    """Publish log records on an engine's bus.

    Parameters
    ----------
    engine : Engine
        Whose bus and loop to use.
    loop : asyncio.AbstractEventLoop
        The engine's loop.
    level : int
        Lowest level published.
    max_per_second : int
        Most records published per second; the rest are counted and reported once.
    """

    def __init__(
        self,
        engine: Engine,
        loop: asyncio.AbstractEventLoop,
        level: int = logging.WARNING,
        max_per_second: int = 50,
    ) -> None:
        super().__init__(level)
        self.engine = engine
        self.loop = loop
        self.max_per_second = max_per_second
        self._window_s = -1
        self._in_window = 0
        self._suppressed = 0
        self._guard = threading.Lock()
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        """Queue ``record`` for the bus (never raises; never blocks the caller)."""
        if getattr(self._busy, "on", False):  # a record logged while publishing one
            return
        self._busy.on = True
        try:
            self._emit(record)
        finally:
            self._busy.on = False

    def _emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "qw_alerted", False):  # already in the stream as an Alert
            return
        second = int(record.created)
        with self._guard:
            if second != self._window_s:
                suppressed, self._suppressed = self._suppressed, 0
                self._window_s, self._in_window = second, 0
            else:
                suppressed = 0
            self._in_window += 1
            if self._in_window > self.max_per_second:
                self._suppressed += 1
                return
        try:
            text = record.getMessage()
        except Exception:  # a bad format string must not break logging
            text = str(record.msg)
        if suppressed:
            text = f"{text} ({suppressed} more records in the previous second were not shown)"
        event = LogRecorded(
            ts_event=self.engine.clock.now_ns(),
            level=record.levelno,
            source=record.name,
            text=text,
        )
        try:
            if self._on_loop():
                self.engine.bus.publish(event)
            else:
                self.loop.call_soon_threadsafe(self.engine.bus.publish, event)
        except RuntimeError:  # the loop is closed: the engine is gone
            pass

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False


class LogFeed:
    """Engine component that publishes the process's log records (WARNING+) as events."""

    name = "log feed"

    def __init__(self, level: int = logging.WARNING) -> None:
        self.level = level
        self.handler: BusLogHandler | None = None

    def start(self, engine: Engine) -> None:
        """Attach the handler to the root logger."""
        self.handler = BusLogHandler(engine, asyncio.get_running_loop(), self.level)
        logging.getLogger().addHandler(self.handler)

    async def stop(self) -> None:
        """Detach the handler."""
        if self.handler is not None:
            logging.getLogger().removeHandler(self.handler)
            self.handler = None

    def handle(self, command: Command) -> CommandResult | None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state to show."""
        return []
