# SPDX-License-Identifier: MIT
"""Synchronous in-process publish/subscribe keyed by message type; no threads, no Qt."""

from collections.abc import Callable
from typing import Any, TypeVar

from engine.fastlog import get_log

log = get_log(__name__)

M = TypeVar("M")


class MessageBus:
    """Deliver each published message synchronously to the handlers of its type.

    Handlers subscribed to a class receive messages of that class and of its subclasses, in
    subscription order. A handler that raises is logged and counted; the other handlers still
    get the message, so one faulty view or strategy cannot silence the rest.
    """

    __slots__ = ("_cache", "_handlers", "handler_errors")

    def __init__(self) -> None:
        self._handlers: list[tuple[type[Any], Callable[[Any], None]]] = []
        self._cache: dict[type[Any], tuple[Callable[[Any], None], ...]] = {}
        #: How many times a handler raised.
        self.handler_errors = 0

    def subscribe(self, msg_type: type[M], handler: Callable[[M], None]) -> None:
        """Call ``handler`` for every published message that is an instance of ``msg_type``."""
        self._handlers.append((msg_type, handler))
        self._cache.clear()

    def unsubscribe(self, msg_type: type[M], handler: Callable[[M], None]) -> None:
        """Stop calling ``handler`` for ``msg_type``; raise ``KeyError`` if it was not there."""
        try:
            self._handlers.remove((msg_type, handler))
        except ValueError:
            raise KeyError(f"{handler!r} is not subscribed to {msg_type.__name__}") from None
        self._cache.clear()

    def _handlers_of(self, cls: type[Any]) -> tuple[Callable[[Any], None], ...]:
        handlers = self._cache.get(cls)
        if handlers is None:
            handlers = tuple(h for t, h in self._handlers if issubclass(cls, t))
            self._cache[cls] = handlers
        return handlers

    def wants(self, msg_type: type[Any]) -> bool:
        """Return whether a message of exactly ``msg_type`` would reach any handler.

        Lets a publisher skip building a message nobody would get.
        """
        handlers = self._cache.get(msg_type)
        if handlers is None:
            handlers = self._handlers_of(msg_type)
        return bool(handlers)

    def publish(self, msg: object) -> None:
        """Deliver ``msg`` to every matching handler, in subscription order."""
        cls = type(msg)
        handlers = self._cache.get(cls)
        if handlers is None:
            handlers = self._handlers_of(cls)
        for handler in handlers:
            try:
                handler(msg)
            except Exception:
                self.handler_errors += 1
                log.exception("handler %r failed on %s", handler, cls.__name__)
