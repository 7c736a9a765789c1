# SPDX-License-Identifier: MIT
"""A relay as an engine's market data: ``qwconsole engine --config F --market-data relay``.

:class:`RelayFeed` is an engine component holding a :class:`~engine.relay.client.RelayClient`
that applies what the relay sends to the engine's :class:`~engine.marketdata.MarketData`, so
the desk, the strategies and the console see ``BookUpdated`` / ``TradeReported`` as from any
feed. The venues then carry orders only (no MarketDataRequest is sent on the FIX sessions).

:func:`parse_relay_address` reads ``wss://host:port[#fingerprint]`` (``ws://`` for a relay on
loopback without TLS), the form of the console's ``[relays] watch`` setting.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.enums import AlertLevel
from engine.events import Alert, Event
from engine.fastlog import get_log
from engine.marketdata import MarketData
from engine.relay.client import RelayClient, RelayError
from engine.remote.tls import PinStore

if TYPE_CHECKING:
    from engine.core import Engine

log = get_log(__name__)

#: Where the token of the relay is read from, unless told otherwise.
TOKEN_ENV = "QWCONSOLE_RELAY_TOKEN"


@dataclass(frozen=True, slots=True)
class RelayAddress:
    """Where a relay is: ``tls`` for ``wss://``; ``fingerprint`` pins its certificate."""

    host: str
    port: int
    tls: bool = True
    fingerprint: str = ""

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"


def parse_relay_address(text: str) -> RelayAddress:
    """Return the relay ``text`` names: ``wss://host:port[#AB:CD:…]`` or ``ws://host:port``.

    Raises
    ------
    ValueError
        Saying what is wrong and what the form is.
    """
    form = "wss://host:port[#fingerprint] (ws://host:port without TLS)"
    scheme, sep, rest = text.strip().partition("://")
    if not sep or scheme not in ("ws", "wss"):
        raise ValueError(f"relay address {text!r}: must be {form}")
    rest, _, fp = rest.partition("#")
    host, _, port = rest.rstrip("/").rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"relay address {text!r}: must be {form}")
    if fp and scheme == "ws":
        raise ValueError(f"relay address {text!r}: a fingerprint needs wss://")
    return RelayAddress(host, int(port), scheme == "wss", fp.strip().upper())


class RelayFeed:
    """An engine component: the books of ``market`` come from a relay (module docstring).

    Parameters
    ----------
    market : MarketData
        The engine's books; every one of its symbols is followed.
    address : RelayAddress
        The relay.
    token : str
        A token of the relay's token store (any role).
    pins : PinStore | None
        Pinned certificate fingerprints (trust on first use); required with TLS. An address
        with a fingerprint is checked against it instead (pinned in ``pins`` first).
    client_name : str
        How the engine shows in the relay's status.
    timeout_s : float
        How long the first synchronisation may take before the engine stops, saying why.
    watch_interval_s : float
        How often the link is checked; a change raises an ``Alert`` (WARNING when lost: the
        books are stale until it resumes; INFO when back).
    """

    name = "relay market data"

    def __init__(
        self,
        market: MarketData,
        address: RelayAddress,
        token: str,
        *,
        pins: PinStore | None = None,
        client_name: str = "engine",
        timeout_s: float = 15.0,
        watch_interval_s: float = 0.25,
    ) -> None:
        if address.tls and pins is None:
            raise ValueError("a wss:// relay needs a pin store to check its certificate")
        pinned = (
            not address.fingerprint
            or pins is None
            or pins.check(address.endpoint, address.fingerprint)
        )
        if address.fingerprint and not pinned:
            assert pins is not None
            raise ValueError(
                f"{pins.path} pins another certificate for {address.endpoint} "
                f"than {address.fingerprint}"
            )
        self.address = address
        self.timeout_s = timeout_s
        self.watch_interval_s = watch_interval_s
        self.client = RelayClient(
            address.host,
            address.port,
            token,
            market.symbols,
            market=market,
            tls=address.tls,
            pins=pins,
            name=client_name,
        )
        #: Why the relay could not be used (the engine was stopped), or ``""``.
        self.failure = ""
        #: Set once every book came from the relay.
        self.ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self, engine: Engine) -> None:
        """Connect on the engine's loop; stop the engine, saying why, if the relay refuses."""
        self._task = asyncio.get_running_loop().create_task(self._open(engine), name=self.name)

    async def _open(self, engine: Engine) -> None:
        try:
            await self.client.start(self.timeout_s)
        except RelayError as e:
            self.failure = f"market-data relay {e}"  # the message starts with host:port
            log.error("%s; stopping the engine", self.failure)
            engine.bus.publish(
                Alert(
                    ts_event=engine.clock.now_ns(),
                    level=AlertLevel.ERROR,
                    source="relay",
                    text=self.failure,
                )
            )
            engine.request_stop()
            return
        log.info(
            "market data from relay %s (run %s): %d books",
            self.address.endpoint,
            self.client.run_id,
            len(self.client.symbols),
        )
        self.ready.set()
        await self._watch(engine)

    async def _watch(self, engine: Engine) -> None:
        """Alert when the link drops (books go stale until it resumes) and when it is back."""
        up = True
        while True:
            await asyncio.sleep(self.watch_interval_s)
            now = self.client.connected
            if now == up:
                continue
            up = now
            c = self.client
            if now:
                text = (
                    f"market-data relay {self.address.endpoint}: link back (resumed "
                    f"{c.resumed}, books resent {c.snapshots})"
                )
                level = AlertLevel.INFO
            else:
                why = c.last_error or "no reason"
                text = (
                    f"market-data relay {self.address.endpoint}: link lost ({why}); "
                    "books are stale until it is back"
                )
                level = AlertLevel.WARNING
            log.warning("%s", text)
            engine.bus.publish(
                Alert(
                    ts_event=engine.clock.now_ns(),
                    level=level,
                    source="relay",
                    text=text,
                    cause=f"relay-link {self.address.endpoint}",
                )
            )

    async def stop(self) -> None:
        """Close the link."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.client.close()

    def handle(self, command: object) -> None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state of its own to show."""
        return []
