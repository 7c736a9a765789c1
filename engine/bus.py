# SPDX-License-Identifier: MIT
"""Synchronous in-process publish/subscribe keyed by message type; no threads, no Qt."""

from collections.abc import Callable
from typing import Any, TypeVar

from engine.fastlog import get_log

log = get_log(__name__)

M = TypeVar("M")


class Interest:
    """Whether a message of one type would reach any handler now (:meth:`MessageBus.interest`).

    Its bus sets :attr:`wanted` whenever a subscription changes (subscribe, unsubscribe,
    mute), so a publisher reads one attribute per message instead of calling
    :meth:`MessageBus.wants`: the same answer, without a call on the order path.
    """

    __slots__ = ("msg_type", "wanted")

    def __init__(self, msg_type: type[Any], wanted: bool) -> None:
        #: The message type asked about (exactly this type: see :meth:`MessageBus.wants`).
        self.msg_type = msg_type
        #: ``MessageBus.wants(msg_type)``, as of the last change of subscriptions.
        self.wanted = wanted

    def __repr__(self) -> str:
        return f"Interest({self.msg_type.__name__}, wanted={self.wanted})"


class MessageBus:
    """Deliver each published message synchronously to the handlers of its type.

    Handlers subscribed to a class receive messages of that class and of its subclasses, in
    subscription order. A handler that raises is logged and counted; the other handlers still
    get the message, so one faulty view or strategy cannot silence the rest.
    """

    __slots__ = ("_cache", "_handlers", "_interests", "_muted", "handler_errors")

    def __init__(self) -> None:
        self._handlers: list[tuple[type[Any], Callable[[Any], None]]] = []
        self._muted: set[tuple[type[Any], Callable[[Any], None]]] = set()
        self._cache: dict[type[Any], tuple[Callable[[Any], None], ...]] = {}
        self._interests: dict[type[Any], Interest] = {}
        #: How many times a handler raised.
        self.handler_errors = 0

    def subscribe(self, msg_type: type[M], handler: Callable[[M], None]) -> None:
        """Call ``handler`` for every published message that is an instance of ``msg_type``."""
        self._handlers.append((msg_type, handler))
        self._changed()

    def unsubscribe(self, msg_type: type[M], handler: Callable[[M], None]) -> None:
        """Stop calling ``handler`` for ``msg_type``; raise ``KeyError`` if it was not there."""
        try:
            self._handlers.remove((msg_type, handler))
        except ValueError:
            raise KeyError(f"{handler!r} is not subscribed to {msg_type.__name__}") from None
        if (msg_type, handler) not in self._handlers:
            self._muted.discard((msg_type, handler))
        self._changed()

    def set_muted(self, msg_type: type[M], handler: Callable[[M], None], muted: bool) -> None:
        """Skip ``handler`` for ``msg_type`` while ``muted`` (it keeps its place in the order).

        For a subscriber that has nothing to do for a while (the strategy runner while no
        strategy has an ``on_order``): muted, it costs nothing, and :meth:`wants` says no
        when nobody else listens, so the publisher builds no message. Raises ``KeyError``
        if the handler is not subscribed to ``msg_type``.
        """
        key = (msg_type, handler)
        if key not in self._handlers:
            raise KeyError(f"{handler!r} is not subscribed to {msg_type.__name__}")
        if muted:
            self._muted.add(key)
        else:
            self._muted.discard(key)
        self._changed()

    def _changed(self) -> None:
        # Subscriptions changed: forget the handlers found per type, answer every interest again.
        self._cache.clear()
        for interest in self._interests.values():
            interest.wanted = bool(self._handlers_of(interest.msg_type))

    def interest(self, msg_type: type[Any]) -> Interest:
        """Return the :class:`Interest` in ``msg_type``: ``.wanted`` is :meth:`wants`, kept current.

        For a publisher that asks on every message (the order manager, per order and per
        report). One object per type, shared by whoever asks.
        """
        interest = self._interests.get(msg_type)
        if interest is None:
            interest = self._interests[msg_type] = Interest(msg_type, self.wants(msg_type))
        return interest

    def _handlers_of(self, cls: type[Any]) -> tuple[Callable[[Any], None], ...]:
        handlers = self._cache.get(cls)
        if handlers is None:
            muted = self._muted
            handlers = tuple(
                h for t, h in self._handlers if issubclass(cls, t) and (t, h) not in muted
            )
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
