# SPDX-License-Identifier: MIT
"""Turn GUI intents into engine commands and own the engine connection's lifetime."""

import asyncio
import logging
import time

import qasync
from PySide6.QtCore import QObject, Signal

from app.bridge import EngineBridge
from engine.client import EngineClient
from engine.commands import CommandAck, CommandResult, Ping

log = logging.getLogger(__name__)


class Controller(QObject):
    """Start and stop the engine and send it commands on behalf of the widgets.

    Signals
    -------
    message(str)
        A short outcome for the status bar ("engine answered ping in 84 µs").
    """

    message = Signal(str)

    def __init__(self, client: EngineClient, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.client = client
        self.bridge = EngineBridge(client, parent=self)
        self._closed = False

    def start(self) -> None:
        """Start (or connect to) the engine; raises ``EngineStartError`` with the reason."""
        self.client.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Deliver the last events, stop the engine and join its thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        self.client.close(timeout_s)
        self.bridge.flush(force=True)
        self.bridge.detach()
        log.info("engine %s stopped", self.client.name)

    async def ping(self) -> CommandResult:
        """Send a ``Ping`` and report the round trip in :attr:`message`."""
        t0 = time.perf_counter_ns()
        result = await asyncio.wrap_future(self.client.send(Ping(payload="console")))
        rtt_us = (time.perf_counter_ns() - t0) / 1000
        if isinstance(result, CommandAck):
            self.message.emit(f"Engine answered ping in {rtt_us:,.0f} µs")
        else:
            self.message.emit(f"Engine refused ping: {result.reason}")
        return result

    @qasync.asyncSlot()  # type: ignore[untyped-decorator]  # qasync is untyped
    async def on_ping_requested(self) -> None:
        """Ping the engine from a menu action (runs on the GUI's qasync loop)."""
        await self.ping()
