# SPDX-License-Identifier: MIT
"""Several engines seen as one ``EngineClient``, so the Monitor shows them combined unchanged.

Each member engine keeps its own stream; :class:`MultiEngineClient` drains them all into one
stream with its own sequence numbers, and routes each command to the engine it concerns.
Identifiers of different engines would collide in combined views, so every member but the
first is *qualified*:

* symbols, FIX session ids, ClOrdIDs, OrderIDs and ExecIDs get the engine's name as a prefix
  (``ny4-2:ESZ6``);
* order ids and strategy ids are offset by ``index * ID_STRIDE`` (``ID_STRIDE`` = 10**12):
  order 42 of the second engine shows as 1000000000042.

The first member (usually the embedded engine) is shown as it is. A command carrying a
qualified id, symbol or session goes to that engine with the qualification removed; a command
without any (a ping, the kill switch, engine-wide risk limits, a manual order on an
unqualified symbol) goes to the :attr:`MultiEngineClient.selected` engine, or to every engine
when the selection is :data:`ALL`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from engine.client import ClientState, EngineClient, EngineStartError
from engine.commands import Command, CommandAck, CommandError, CommandResult
from engine.events import EngineSnapshot, EventRecord

#: Offset between the order and strategy ids of two member engines.
ID_STRIDE = 10**12
#: :attr:`MultiEngineClient.selected` value sending id-less commands to every engine.
ALL = -1

_ID_FIELDS = ("order_id", "strategy_id")
_NAME_FIELDS = ("symbol", "session_id", "client_order_id", "venue_order_id", "exec_id")
_NESTED = ("order", "own", "orig_client_order_ids")


@dataclass
class Member:
    """One engine of the group."""

    client: EngineClient
    index: int
    prefix: str  # "" for the first member, else "<name>:"
    last_seq: int = 0
    gap: bool = False


def _fields_of(tp: type, cache: dict[type, tuple[str, ...]]) -> tuple[str, ...]:
    got = cache.get(tp)
    if got is None:
        names = {f.name for f in dataclasses.fields(tp)}
        got = cache[tp] = tuple(n for n in (*_ID_FIELDS, *_NAME_FIELDS, *_NESTED) if n in names)
    return got


class MultiEngineClient:
    """Present several ``EngineClient`` objects as one (see the module docstring).

    Parameters
    ----------
    members : Sequence[EngineClient]
        Initial engines; more can be attached later with :meth:`attach`.
    """

    def __init__(self, members: Sequence[EngineClient] = ()) -> None:
        self._lock = threading.Lock()
        self._members: list[Member] = []
        self._wakeup: Callable[[], None] | None = None
        self._seq = 0
        self._fields: dict[type, tuple[str, ...]] = {}
        #: Index of the engine that gets commands without an engine-specific id, or ``ALL``.
        self.selected = 0
        for client in members:
            self.attach(client)

    # ------------------------------------------------------------------ membership
    def attach(self, client: EngineClient) -> Member:
        """Add ``client`` to the group (its events join the stream from now on)."""
        with self._lock:
            if any(m.client.name == client.name for m in self._members):
                raise EngineStartError(f"an engine named {client.name!r} is already attached")
            index = len(self._members)
            member = Member(client, index, "" if index == 0 else f"{client.name}:")
            self._members.append(member)
        client.set_wakeup(self._on_member_wake)
        return member

    def detach(self, name: str, timeout_s: float = 5.0) -> bool:
        """Close and remove the engine named ``name`` (not the first); return whether found."""
        with self._lock:
            found = [m for m in self._members if m.client.name == name and m.index > 0]
        if not found:
            return False
        m = found[0]
        m.client.set_wakeup(None)
        m.client.close(timeout_s)
        with self._lock:
            self._members = [x for x in self._members if x is not m]
            if self.selected == m.index:
                self.selected = 0
        return True

    def members(self) -> list[Member]:
        """Return the member engines in attach order."""
        with self._lock:
            return list(self._members)

    def _on_member_wake(self) -> None:
        cb = self._wakeup
        if cb is not None:
            cb()

    # ------------------------------------------------------------------ EngineClient
    @property
    def name(self) -> str:
        """Return the first engine's name, or a count when there are several."""
        ms = self.members()
        if len(ms) == 1:
            return ms[0].client.name
        return f"{len(ms)} engines" if ms else "no engine"

    @property
    def state(self) -> ClientState:
        """Return the worst state of the members (``DISCONNECTED`` if any is down)."""
        states = [m.client.state for m in self.members()]
        for s in (ClientState.DISCONNECTED, ClientState.CONNECTING, ClientState.IDLE):
            if s in states:
                return s
        return ClientState.CONNECTED if states else ClientState.IDLE

    @property
    def last_error(self) -> str:
        """Return the members' errors, each prefixed with its engine's name."""
        return "; ".join(
            f"{m.client.name}: {m.client.last_error}" for m in self.members() if m.client.last_error
        )

    def start(self) -> None:
        """Start the first member (the others are started by whoever attaches them)."""
        ms = self.members()
        if ms:
            ms[0].client.start()

    def snapshot(self, timeout_s: float = 2.0) -> EngineSnapshot:
        """Return the combined state of every connected member, at the current stream point."""
        state_events: list[Any] = []
        first: EngineSnapshot | None = None
        for m in self.members():
            if m.client.state is not ClientState.CONNECTED:
                continue
            snap = m.client.snapshot(timeout_s)
            first = first or snap
            state_events += [self._qualify(e, m) for e in snap.state_events]
        if first is None:
            raise EngineStartError(f"no engine is connected: {self.last_error}")
        with self._lock:
            seq = self._seq
        return dataclasses.replace(first, seq=seq, recent=(), state_events=tuple(state_events))

    def drain(self, max_events: int | None = None) -> list[EventRecord]:
        """Return the events of every member since the last call, renumbered in one stream.

        A member that lost events (its own stream skipped numbers) makes this stream skip a
        number too, so the consumer notices the gap and re-reads :meth:`snapshot`.
        """
        out: list[EventRecord] = []
        with self._lock:
            members = list(self._members)
        for m in members:
            batch = m.client.drain(max_events)
            if not batch:
                continue
            if m.last_seq and batch[0].seq != m.last_seq + 1:
                m.gap = True
            if batch[-1].seq - batch[0].seq + 1 != len(batch):
                m.gap = True
            m.last_seq = batch[-1].seq
            with self._lock:
                if m.gap:
                    self._seq += 1  # leave a hole: the bridge resynchronises
                    m.gap = False
                for r in batch:
                    self._seq += 1
                    out.append(EventRecord(self._seq, self._qualify(r.event, m)))
        return out

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` when any member has new events."""
        self._wakeup = callback
        if callback is not None:
            for m in self.members():
                m.client.set_wakeup(self._on_member_wake)

    def send(self, command: Command) -> Future[CommandResult]:
        """Route ``command`` to its engine (see the module docstring)."""
        member, plain = self._route(command)
        if member is not None:
            return self._relay(member, plain, command)
        targets = (
            self.members()
            if self.selected == ALL
            else [m for m in self.members() if m.index == self.selected]
        )
        if not targets:
            fut: Future[CommandResult] = Future()
            fut.set_result(
                CommandError(command=command, ts_handled=0, reason="no engine is selected")
            )
            return fut
        if len(targets) == 1:
            return self._relay(targets[0], command, command)
        return self._fan_out(targets, command)

    def close(self, timeout_s: float = 5.0) -> None:
        """Close every member; idempotent."""
        for m in self.members():
            m.client.set_wakeup(None)
            m.client.close(timeout_s)

    # ------------------------------------------------------------------ mapping
    def _qualify(self, obj: Any, m: Member) -> Any:
        if m.index == 0 or not dataclasses.is_dataclass(obj):
            return obj
        changes: dict[str, Any] = {}
        for name in _fields_of(type(obj), self._fields):
            value = getattr(obj, name)
            if name in _ID_FIELDS:
                if isinstance(value, int) and value:
                    changes[name] = value + m.index * ID_STRIDE
            elif name in _NAME_FIELDS:
                if isinstance(value, str) and value:
                    changes[name] = m.prefix + value
            elif isinstance(value, tuple):
                changes[name] = tuple(
                    m.prefix + v if isinstance(v, str) and v else self._qualify(v, m) for v in value
                )
            elif value is not None:
                changes[name] = self._qualify(value, m)
        return dataclasses.replace(obj, **changes) if changes else obj  # type: ignore[type-var]

    def _route(self, command: Command) -> tuple[Member | None, Command]:
        """Return the member a qualified command belongs to and the command unqualified."""
        members = self.members()
        target: Member | None = None
        changes: dict[str, Any] = {}
        for name in _fields_of(type(command), self._fields):
            value = getattr(command, name)
            if name in _ID_FIELDS and isinstance(value, int) and value >= ID_STRIDE:
                idx = value // ID_STRIDE
                target = target or next((m for m in members if m.index == idx), None)
                changes[name] = value % ID_STRIDE
            elif name in _NAME_FIELDS and isinstance(value, str):
                for m in members[1:]:
                    if value.startswith(m.prefix):
                        target = target or m
                        changes[name] = value[len(m.prefix) :]
                        break
        if target is None and changes:
            return None, command
        if target is None:
            # Unqualified ids belong to the first member when the selection is another one.
            has_id = any(getattr(command, n, None) for n in ("order_id", "session_id"))
            if has_id and members:
                return members[0], command
            return None, command
        return target, dataclasses.replace(command, **changes)

    def _relay(self, m: Member, plain: Command, original: Command) -> Future[CommandResult]:
        out: Future[CommandResult] = Future()

        def done(f: Future[CommandResult]) -> None:
            try:
                r = f.result()
            except Exception as e:  # a client must answer; never leave the caller waiting
                r = CommandError(command=plain, ts_handled=0, reason=f"{m.client.name}: {e}")
            out.set_result(dataclasses.replace(r, command=original))

        m.client.send(plain).add_done_callback(done)
        return out

    def _fan_out(self, targets: list[Member], command: Command) -> Future[CommandResult]:
        out: Future[CommandResult] = Future()
        results: dict[str, CommandResult] = {}
        lock = threading.Lock()

        def one(m: Member) -> Callable[[Future[CommandResult]], None]:
            def done(f: Future[CommandResult]) -> None:
                with lock:
                    results[m.client.name] = f.result()
                    if len(results) < len(targets):
                        return
                ordered = [(t.client.name, results[t.client.name]) for t in targets]
                errors = {n: r for n, r in ordered if isinstance(r, CommandError)}
                ts = max(r.ts_handled for _n, r in ordered)
                if errors:
                    reason = "; ".join(f"{n}: {r.reason}" for n, r in errors.items())
                    out.set_result(CommandError(command=command, ts_handled=ts, reason=reason))
                else:
                    detail = "; ".join(
                        f"{n}: {r.detail}" for n, r in ordered if isinstance(r, CommandAck)
                    )
                    out.set_result(CommandAck(command=command, ts_handled=ts, detail=detail))

            return done

        for m in targets:
            m.client.send(command).add_done_callback(one(m))
        return out
