# SPDX-License-Identifier: MIT
"""What every Monitor view shares: instrument formats, strategy names, a command channel.

Also the :class:`ThreadRelay` that carries calls from engine threads into the GUI thread.
"""

import logging
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, ClassVar

from PySide6.QtCore import QObject, Signal

from engine.commands import Command, CommandError, CommandResult
from engine.events import Event, EventRecord, InstrumentAdded, StrategyStatusChanged
from widgets.monitor.formats import InstrumentFormats
from widgets.relay import thread_relay

log = logging.getLogger(__name__)

#: What sends a command to the engine: ``EngineClient.send``.
CommandSink = Callable[[Command], "Future[CommandResult]"]

#: Strategy id of orders sent by hand.
MANUAL_STRATEGY_ID = 0


class MonitorContext(QObject):
    """Instrument formats and strategy names learned from the event stream.

    Feed every batch to :meth:`on_events` before the views see it.

    Signals
    -------
    formats_changed()
        A new instrument or strategy name arrived; views re-render their texts.
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (InstrumentAdded, StrategyStatusChanged)

    formats_changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.formats = InstrumentFormats()
        self.strategy_names: dict[int, str] = {}

    def strategy_name(self, strategy_id: int) -> str:
        """Return a strategy's display name (``manual`` for hand-sent orders)."""
        if strategy_id == MANUAL_STRATEGY_ID:
            return "manual"
        return self.strategy_names.get(strategy_id) or f"#{strategy_id}"

    def strategy_label(self, strategy_id: int) -> str:
        """Return a strategy's name with its id, ``market maker (20170101)``, for tables.

        Hand-sent orders are ``manual``; a strategy whose name is not known yet is ``#id``.
        """
        if strategy_id == MANUAL_STRATEGY_ID:
            return "manual"
        name = self.strategy_names.get(strategy_id)
        return f"{name} ({strategy_id})" if name else f"#{strategy_id}"

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Learn instruments and strategy names from a batch."""
        changed = False
        for record in batch:
            ev = record.event
            if isinstance(ev, InstrumentAdded):
                try:
                    self.formats.add(ev)
                except ValueError as e:
                    log.error("cannot format instrument: %s", e)
                    continue
                changed = True
            elif (
                isinstance(ev, StrategyStatusChanged)
                and self.strategy_names.get(ev.strategy_id) != ev.name
            ):
                self.strategy_names[ev.strategy_id] = ev.name
                changed = True
        if changed:
            self.formats_changed.emit()


class CommandChannel(QObject):
    """Send commands to the engine and deliver each answer in the GUI thread.

    Widgets emit intents (a :class:`Command`); the workspace passes them to :meth:`send`. The
    engine's answer comes back through :attr:`result_received`, in the GUI thread, with the
    very command object that was sent, so a widget recognizes its own commands by identity.

    Signals
    -------
    result_received(object, object)
        ``(command, result)``: the engine answered ``command`` with a ``CommandAck`` or a
        ``CommandError``.
    """

    result_received = Signal(object, object)

    def __init__(self, sink: CommandSink | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._sink = sink
        #: Every command sent, oldest first (for tests and the session's record).
        self.sent: list[Command] = []
        # Futures resolve on the engine's thread; the relay brings the answers here, and
        # drops them if this channel is gone by then.
        self._relay = thread_relay()
        self._self_ref: weakref.ref[Any] = weakref.ref(self)

    def _resolved(self, command: Command, result: CommandResult) -> None:
        self._relay.post(self._self_ref, "_deliver", command, result)

    def set_sink(self, sink: CommandSink | None) -> None:
        """Send future commands through ``sink`` (``None``: refuse them)."""
        self._sink = sink

    @property
    def connected(self) -> bool:
        """Return whether commands have somewhere to go."""
        return self._sink is not None

    def send(self, command: Command) -> None:
        """Send ``command``; its answer arrives later through :attr:`result_received`."""
        self.sent.append(command)
        if self._sink is None:
            self._resolved(
                command, CommandError(command=command, ts_handled=0, reason="no engine connected")
            )
            return
        try:
            future = self._sink(command)
        except Exception as e:  # the sink is someone else's code: report, never crash the GUI
            log.exception("sending %s failed", type(command).__name__)
            self._resolved(
                command, CommandError(command=command, ts_handled=0, reason=f"not sent: {e}")
            )
            return

        def done(f: "Future[CommandResult]") -> None:
            self._resolved(command, _result_of(command, f))

        future.add_done_callback(done)

    def _deliver(self, command: Command, result: CommandResult) -> None:
        self.result_received.emit(command, result)


def _result_of(command: Command, future: "Future[CommandResult]") -> CommandResult:
    if future.cancelled():
        return CommandError(command=command, ts_handled=0, reason="canceled before an answer")
    exc = future.exception()
    if exc is not None:
        return CommandError(command=command, ts_handled=0, reason=f"failed: {exc}")
    return future.result()
