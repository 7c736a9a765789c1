# SPDX-License-Identifier: MIT
"""Turn GUI intents into engine commands and own the engine connection's lifetime."""

import asyncio
import logging
import threading
import time
import weakref

import qasync
from PySide6.QtCore import QObject, Signal

from app.bridge import EngineBridge
from app.process import seconds_since_process_start
from engine.client import EngineClient, EngineStartError
from engine.commands import CommandAck, CommandResult, Ping
from widgets.relay import thread_relay

log = logging.getLogger(__name__)


class Controller(QObject):
    """Start and stop the engine and send it commands on behalf of the widgets.

    Signals
    -------
    message(str)
        A short outcome for the status bar ("engine answered ping in 84 µs").
    started()
        The engine :meth:`start_in_background` started runs (however long its start took).
    start_failed(str)
        :meth:`start_in_background` could not start the engine (the reason, one line): its
        set-up or start raised, or its thread ended. Never emitted for a start that is only
        slow, nor for a start cut short by :meth:`shutdown`.
    """

    message = Signal(str)
    started = Signal()
    start_failed = Signal(str)

    def __init__(self, client: EngineClient, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.client = client
        self.bridge = EngineBridge(client, parent=self)
        self._closed = False
        self._starter: threading.Thread | None = None

    def start(self) -> None:
        """Start (or connect to) the engine; raises ``EngineStartError`` with the reason."""
        self.client.start()

    def start_in_background(self) -> None:
        """Start the engine from a worker thread, so the window is never held up by it.

        The engine's own start (building it, replaying its journal, compiling kernels) then
        happens while the window is already on screen, and reports its stages as events
        (``EngineStartProgress``) through the bridge. The outcome arrives in the GUI thread:
        :attr:`started` once the engine runs, or :attr:`start_failed` with the reason (also
        logged). No deadline turns a slow start into a failure.
        """
        if self._starter is not None:
            raise EngineStartError("the engine was already started")
        relay, me, client = thread_relay(), weakref.ref(self), self.client

        def start() -> None:
            try:
                client.start()
            except EngineStartError as e:
                log.warning("engine %s did not start: %s", client.name, e)
                relay.post(me, "_report_start_failure", str(e))
                return
            except Exception as e:  # a bug, not a refusal: the traceback goes to the log
                log.exception("engine %s did not start", client.name)
                relay.post(me, "_report_start_failure", f"{type(e).__name__}: {e}")
                return
            log.info(
                "engine %s running %.0f ms after process start",
                client.name,
                seconds_since_process_start() * 1e3,
            )
            relay.post(me, "_report_started")

        self._starter = threading.Thread(target=start, name="qw-engine-start", daemon=True)
        self._starter.start()

    def _report_started(self) -> None:
        self.started.emit()

    def _report_start_failure(self, reason: str) -> None:
        if self._closed:  # the console is closing: the start was cut short on purpose
            log.info("engine %s start ended by the shutdown: %s", self.client.name, reason)
            return
        self.start_failed.emit(reason)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Deliver the last events, stop the engine and join its thread; idempotent."""
        if self._closed:
            return
        self._closed = True
        self.client.close(timeout_s)  # an engine still starting stops at its next stage
        if self._starter is not None:
            self._starter.join(timeout_s)
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
