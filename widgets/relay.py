# SPDX-License-Identifier: MIT
"""Hand results from worker and engine threads to GUI objects that may be deleted meanwhile.

A thread that emits a signal of a ``QObject`` while the GUI thread destroys that object races
with its destructor: a crash inside Qt's event processing, later and elsewhere (seen in CI).
Every cross-thread handoff in the console therefore goes through the one
:class:`ThreadRelay`, which is never deleted, with a weak reference to its target.
"""

import threading
import weakref
from typing import Any

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal


class ThreadRelay(QObject):
    """Carry calls from any thread to a GUI-thread object that may be deleted meanwhile.

    An engine thread that emits a signal of a ``QObject`` the GUI thread is destroying at
    that moment races with its destructor (a crash inside Qt's event processing, seen twice
    in CI). The relay is created once and never deleted, so other threads only ever emit on
    it; in the GUI thread it calls the target's method only if the target still exists.
    Use :func:`thread_relay` to get it.
    """

    _posted = Signal(object, str, object)

    def __init__(self) -> None:
        super().__init__()
        self._posted.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def post(self, target: "weakref.ref[Any]", method: str, *args: object) -> None:
        """Call ``target().method(*args)`` in the relay's (the GUI) thread, if it still lives."""
        self._posted.emit(target, method, args)

    @staticmethod
    def _deliver(target: "weakref.ref[Any]", method: str, args: tuple[Any, ...]) -> None:
        obj = target()
        if obj is not None and shiboken6.isValid(obj):
            getattr(obj, method)(*args)


_relay: ThreadRelay | None = None
_relay_lock = threading.Lock()


def thread_relay() -> ThreadRelay:
    """Return the process's :class:`ThreadRelay`, made on first use in the GUI thread."""
    global _relay
    with _relay_lock:
        if _relay is None:
            relay = ThreadRelay()
            app = QCoreApplication.instance()
            if app is not None and relay.thread() is not app.thread():
                relay.moveToThread(app.thread())
            _relay = relay
        return _relay


def post_to(target: QObject, method: str, *args: object) -> None:
    """Call ``target.method(*args)`` in the GUI thread if ``target`` still lives then."""
    thread_relay().post(weakref.ref(target), method, *args)
