# SPDX-License-Identifier: MIT
"""``StatusPoller``: watch relays' status from a console (the Monitor's Relays panel).

The poller runs on the caller's asyncio loop (the console gives it a thread of its own). For
each relay it keeps one link open: it checks the relay's certificate against the pinned
fingerprint *before* sending the token, logs in as ``qwconsole-monitor``, and every
``interval_s`` sends :class:`~engine.relay.protocol.StatusRequest` and waits for the
:class:`~engine.relay.protocol.RelayStatus`. It never subscribes: the relay sends it no market
data. Each answer, and each failure, becomes a :class:`Reading` handed to ``on_reading``.

Rates (rows/s in per relay and per source, rows/s out per link) come from two consecutive
answers (the relay's counters and clock); the first answer of a link gives averages since the
relay (or the link) started.

A relay that cannot be reached is retried with the remote client's backoff (0.25 s doubling
to 10 s); one that refuses (token, role, certificate, version) is asked again every
``refused_retry_s`` — retrying sooner cannot cure it and would trip the relay's login
throttle.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from engine.fastlog import get_log
from engine.relay.protocol import (
    RELAY_VERSION,
    Auth,
    AuthOk,
    Error,
    Hello,
    ProtocolError,
    RelayServerMessage,
    RelayStatus,
    StatusRequest,
    Welcome,
    decode_server,
    encode,
)
from engine.remote.client import Backoff
from engine.remote.protocol import MAX_SERVER_FRAME
from engine.remote.tls import PinStore, client_context, fingerprint

log = get_log(__name__)

#: The name a poller gives in ``hello`` (relays list its link under it).
CLIENT_NAME = "qwconsole-monitor"

#: Reading states.
CONNECTING, UP, UNREACHABLE, REFUSED = "connecting", "up", "unreachable", "refused"


@dataclass(frozen=True, slots=True)
class WatchTarget:
    """One relay to watch.

    Parameters
    ----------
    name : str
        Shown in the panel.
    host, port : str, int
        The relay.
    token : str
        A token of the relay's token store whose role may see the status (``status_role``).
    tls : bool
        ``wss://``; the certificate must match ``fingerprint`` or, without one, the pin in
        ``pins`` (trust on first use).
    fingerprint : str
        Expected SHA-256 fingerprint (``AB:CD:…``); ``""``: use ``pins``.
    pins : PinStore | None
        Pinned fingerprints; with ``tls`` and no ``fingerprint`` it is required.
    """

    name: str
    host: str
    port: int
    token: str
    tls: bool = True
    fingerprint: str = ""
    pins: PinStore | None = None

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Reading:
    """What the poller knows of one relay after an answer or a failure.

    ``state`` is :data:`CONNECTING`, :data:`UP`, :data:`UNREACHABLE` (retrying) or
    :data:`REFUSED` (token, role, certificate or version; ``error`` says which). ``status`` is
    the last answer while ``UP``, else ``None``. Rates are rows per second: ``rows_in_per_s``
    of the whole relay, ``source_rates`` by source name, ``subscriber_rates`` by peer.
    """

    name: str
    endpoint: str
    state: str
    error: str = ""
    status: RelayStatus | None = None
    rows_in_per_s: float = 0.0
    source_rates: dict[str, float] = field(default_factory=dict)
    subscriber_rates: dict[str, float] = field(default_factory=dict)


class _Refused(Exception):
    """The relay refused; retrying soon cannot cure it."""


def rates(
    prev: RelayStatus | None, cur: RelayStatus
) -> tuple[float, dict[str, float], dict[str, float]]:
    """Return rows/s in, per source and per link between ``prev`` and ``cur``.

    Without a previous answer of the same relay run, the averages since the relay started
    (sources) or the link connected (links).
    """
    same = prev is not None and prev.run_id == cur.run_id and cur.ts > prev.ts
    if prev is not None and same:
        dt = (cur.ts - prev.ts) / 1e9
        before_src = {s.name: s.rows_in for s in prev.sources}
        before_sub = {s.peer: s.rows_sent for s in prev.subscribers}
        total = (cur.rows_in - prev.rows_in) / dt
    else:
        dt = cur.uptime_s
        before_src, before_sub = {}, {}
        total = cur.rows_in / dt if dt > 0 else 0.0
    src = {
        s.name: (s.rows_in - before_src.get(s.name, 0)) / dt if dt > 0 else 0.0 for s in cur.sources
    }
    sub: dict[str, float] = {}
    for s in cur.subscribers:
        if s.peer in before_sub:
            sub[s.peer] = (s.rows_sent - before_sub[s.peer]) / dt
        else:  # a new link: its average since it connected
            sub[s.peer] = s.rows_sent / s.connected_s if s.connected_s > 0 else 0.0
    return total, src, sub


def describe_failure(e: BaseException, timeout_s: float) -> str:
    """Return a short reason for a failed link, for the panel."""
    if isinstance(e, ConnectionRefusedError):
        return "connection refused (is the relay running on that port?)"
    if isinstance(e, TimeoutError):
        return f"no answer within {timeout_s:g} s"
    if isinstance(e, ssl.SSLError):
        return f"TLS failed: {e.reason or e} (does the relay use TLS? ws:// vs wss://)"
    if isinstance(e, ConnectionClosed):
        rcvd = e.rcvd
        why = f" ({rcvd.code} {rcvd.reason})" if rcvd is not None and rcvd.reason else ""
        return f"link lost{why}"
    if isinstance(e, InvalidHandshake):
        return f"not a relay: {e}"
    if isinstance(e, OSError):
        return e.strerror or str(e) or type(e).__name__
    return str(e) or type(e).__name__


class StatusPoller:
    """Ask each relay of ``targets`` for its status every ``interval_s`` (module docstring).

    Parameters
    ----------
    targets : Sequence[WatchTarget]
        The relays (names must be unique).
    on_reading : Callable[[Reading], object]
        Called on the poller's loop with every new reading.
    interval_s : float
        Between two requests to the same relay.
    timeout_s : float
        For connecting, logging in and each answer.
    backoff : Backoff | None
        Reconnection delays after a failure.
    refused_retry_s : float
        Delay before asking a relay that refused again.
    """

    def __init__(
        self,
        targets: Sequence[WatchTarget],
        on_reading: Callable[[Reading], object],
        *,
        interval_s: float = 1.0,
        timeout_s: float = 5.0,
        backoff: Backoff | None = None,
        refused_retry_s: float = 30.0,
    ) -> None:
        names = [t.name for t in targets]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"relays to watch need distinct names; {', '.join(dup)} repeats")
        for t in targets:
            if t.tls and not t.fingerprint and t.pins is None:
                raise ValueError(f"relay {t.name}: TLS needs a fingerprint or a PinStore")
        if interval_s <= 0:
            raise ValueError(f"interval_s: must be > 0, got {interval_s}")
        self.targets = list(targets)
        self.on_reading = on_reading
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.backoff = backoff or Backoff()
        self.refused_retry_s = refused_retry_s
        #: The latest reading of each relay, by name.
        self.readings: dict[str, Reading] = {
            t.name: Reading(t.name, t.endpoint, CONNECTING) for t in self.targets
        }
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start watching every relay (returns at once)."""
        loop = asyncio.get_running_loop()
        for t in self.targets:
            self._emit(self.readings[t.name])
            self._tasks.append(loop.create_task(self._watch(t), name=f"relay-watch {t.name}"))

    async def close(self) -> None:
        """Stop watching; close every link."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    def _emit(self, reading: Reading) -> None:
        self.readings[reading.name] = reading
        try:
            self.on_reading(reading)
        except Exception:
            log.exception("relay watch %s: the reading's receiver failed", reading.name)

    async def _watch(self, t: WatchTarget) -> None:
        attempt = 0
        while True:
            try:
                await self._session(t)
            except _Refused as e:
                self._emit(Reading(t.name, t.endpoint, REFUSED, str(e)))
                log.warning("relay watch %s (%s): %s", t.name, t.endpoint, e)
                await asyncio.sleep(self.refused_retry_s)
                continue
            except (
                OSError,
                ConnectionClosed,
                InvalidHandshake,
                InvalidURI,
                TimeoutError,
                ProtocolError,
            ) as e:
                why = describe_failure(e, self.timeout_s)
                if self.readings[t.name].state == UP:
                    attempt = 0  # it was up: the first retry comes soon again
                self._emit(Reading(t.name, t.endpoint, UNREACHABLE, why))
            await asyncio.sleep(self.backoff.delay(attempt))
            attempt += 1

    async def _recv(self, ws: ClientConnection, timeout_s: float) -> RelayServerMessage:
        frame = await asyncio.wait_for(ws.recv(), timeout_s)
        if isinstance(frame, str):
            raise ProtocolError("text frame from the relay")
        return decode_server(frame)

    async def _session(self, t: WatchTarget) -> None:
        uri = f"{'wss' if t.tls else 'ws'}://{t.host}:{t.port}/"
        async with connect(
            uri,
            ssl=client_context() if t.tls else None,
            compression=None,
            max_size=MAX_SERVER_FRAME,
            open_timeout=self.timeout_s,
            ping_interval=5.0,
            ping_timeout=15.0,
            max_queue=16,
        ) as ws:
            if t.tls:
                _check_certificate(t, ws)
            await ws.send(encode(Hello(version=RELAY_VERSION, client=CLIENT_NAME)))
            welcome = await self._recv(ws, self.timeout_s)
            if isinstance(welcome, Error):
                raise _Refused(f"relay refused: {welcome.reason}")
            if not isinstance(welcome, Welcome):
                raise ProtocolError(f"expected welcome, got {type(welcome).__name__}")
            await ws.send(encode(Auth(token=t.token)))
            ok = await self._recv(ws, self.timeout_s + 30.0)  # a throttled login waits
            if isinstance(ok, Error):
                raise _Refused(f"login refused: {ok.reason}")
            if not isinstance(ok, AuthOk):
                raise ProtocolError(f"expected auth-ok, got {type(ok).__name__}")
            if "status" not in ok.commands:
                raise _Refused(
                    f"logged in as {ok.user} ({ok.role}), but that role may not see "
                    f"the relay's status (relay.toml status_role)"
                )
            prev: RelayStatus | None = None
            rid = 0
            while True:
                rid += 1
                await ws.send(encode(StatusRequest(rid=rid)))
                status = await self._answer(ws, rid)
                total, src, sub = rates(prev, status)
                self._emit(Reading(t.name, t.endpoint, UP, "", status, total, src, sub))
                prev = status
                await asyncio.sleep(self.interval_s)

    async def _answer(self, ws: ClientConnection, rid: int) -> RelayStatus:
        loop = asyncio.get_running_loop()
        end = loop.time() + self.timeout_s
        while True:
            msg = await self._recv(ws, max(0.0, end - loop.time()))
            if isinstance(msg, RelayStatus) and msg.rid == rid:
                return msg
            if isinstance(msg, Error):
                if msg.code == "forbidden":
                    raise _Refused(msg.reason)
                if msg.code == "shutdown":
                    with contextlib.suppress(Exception):
                        await ws.close()
                    raise ConnectionResetError(f"the relay is stopping ({msg.reason})")
                log.warning("relay watch: error %s: %s", msg.code, msg.reason)


def _check_certificate(t: WatchTarget, ws: ClientConnection) -> None:
    sslobj = ws.transport.get_extra_info("ssl_object")
    der = sslobj.getpeercert(binary_form=True) if sslobj is not None else None
    if not der:
        raise _Refused("the relay presented no TLS certificate")
    presented = fingerprint(der)
    if t.fingerprint:
        if presented.upper() != t.fingerprint.upper():
            raise _Refused(
                f"certificate fingerprint {presented} is not the one configured ({t.fingerprint})"
            )
        return
    assert t.pins is not None
    if not t.pins.check(t.endpoint, presented):
        raise _Refused(
            f"the certificate of {t.endpoint} changed (now {presented}); if it was "
            f"renewed on purpose, forget the old pin in {t.pins.path}"
        )
