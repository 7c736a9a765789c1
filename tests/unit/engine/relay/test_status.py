# SPDX-License-Identifier: MIT
"""A relay's status over real TLS sockets on 127.0.0.1, read by the console's poller.

One relay replays a tick-store day; two subscribers keep up, one stops reading. The poller
sees each link with its instruments, rate and lag, the stalled one as stalled and then
conflated; refusals (token, role, certificate) and an unreachable relay are readings too.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.relay.poller import (
    CLIENT_NAME,
    REFUSED,
    UNREACHABLE,
    UP,
    Reading,
    StatusPoller,
    WatchTarget,
)
from engine.relay.protocol import RELAY_VERSION, Auth, Hello, Subscribe, SubscriberStatus, encode
from engine.relay.server import STALLED_MS, Relay
from engine.relay.sources import TickStoreSource
from engine.remote.client import Backoff
from engine.remote.server import AuditLog
from engine.remote.tls import PinStore, make_self_signed, server_context
from engine.remote.tokens import TokenStore
from tests.unit.engine.relay.synth import DAY, write_day

SYMBOLS = ["AAA", "BBB", "CCC"]


async def until(cond: Callable[[], bool], timeout_s: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def tls_relay(tmp_path: Path, tokens: TokenStore, **kw: Any) -> tuple[Relay, MarketData]:
    make_self_signed(tmp_path / "r.crt", tmp_path / "r.key")
    clock = LiveClock()
    market = MarketData(SYMBOLS, MessageBus(), clock, n_levels=200)
    relay = Relay(
        "r1",
        market,
        clock,
        tokens,
        ssl_context=server_context(tmp_path / "r.crt", tmp_path / "r.key"),
        audit=AuditLog(tmp_path / "audit.log", clock),
        **kw,
    )
    return relay, market


async def stalled_subscriber(port: int, token: str) -> ClientConnection:
    """Return a TLS link subscribed to every instrument that reads nothing from now on."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
    sock.connect(("127.0.0.1", port))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ws = await connect(
        f"wss://127.0.0.1:{port}/", sock=sock, ssl=ctx, server_hostname="localhost", max_queue=1
    )
    await ws.send(encode(Hello(version=RELAY_VERSION, client="stalled")))
    await ws.recv()
    await ws.send(encode(Auth(token=token)))
    await ws.recv()
    await ws.send(encode(Subscribe(rid=1, symbols=SYMBOLS)))
    return ws


def links(r: Reading) -> dict[str, SubscriberStatus]:
    assert r.status is not None
    return {s.client: s for s in r.status.subscribers}


def test_poller_sees_sources_subscribers_rates_and_a_stalled_link(tmp_path: Path) -> None:
    day = tmp_path / "day.h5"
    write_day(day, SYMBOLS, 100_000)  # 1 s of venue time: 10 s at speed 0.1 (10,000 rows/s)
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("alice", "viewer", LiveClock().now_ns())
    watcher = tokens.add("ops", "viewer", LiveClock().now_ns())
    relay, market = tls_relay(tmp_path, tokens, cache_rows=4000, max_lag_rows=1000)
    source = TickStoreSource(market, day, DAY, SYMBOLS, speed=0.1, name="day")
    relay.add_source(source)
    pins = PinStore(tmp_path / "console-pins.json")
    readings: list[Reading] = []

    async def main() -> None:
        await relay.open()
        stalled = await stalled_subscriber(relay.port, token)
        m = MarketData(SYMBOLS, MessageBus(), LiveClock(), n_levels=200)
        a = RelayClient(
            "127.0.0.1",
            relay.port,
            token,
            ["AAA", "BBB"],
            market=m,
            tls=True,
            pins=pins,
            name="steady-a",
        )
        b = RelayClient(
            "127.0.0.1", relay.port, token, ["CCC"], market=m, tls=True, pins=pins, name="steady-b"
        )
        await a.start()
        await b.start()
        await source.start()
        poller = StatusPoller(
            [WatchTarget("ny4", "127.0.0.1", relay.port, watcher, pins=pins)],
            readings.append,
            interval_s=0.2,
        )
        await poller.start()

        def stalled_seen() -> bool:
            r = poller.readings["ny4"]
            return (
                r.state == UP
                and links(r).get("stalled", None) is not None
                and links(r)["stalled"].stalled
            )

        await until(stalled_seen)
        r = poller.readings["ny4"]
        assert r.status is not None
        subs = links(r)
        assert set(subs) == {"stalled", "steady-a", "steady-b", CLIENT_NAME}
        assert subs["steady-a"].symbols == ["AAA", "BBB"]
        assert subs["steady-b"].symbols == ["CCC"]
        assert subs["stalled"].symbols == SYMBOLS
        assert subs[CLIENT_NAME].symbols == []  # the poller's own link: it never subscribes
        assert (subs["steady-a"].user, subs["steady-a"].role) == ("alice", "viewer")
        assert (subs[CLIENT_NAME].user, subs[CLIENT_NAME].role) == ("ops", "viewer")
        for name in ("steady-a", "steady-b"):
            s = subs[name]
            assert r.subscriber_rates[s.peer] > 0, (name, r.subscriber_rates)
            assert not s.stalled
            assert s.lag_ms < STALLED_MS
            assert s.conflations == 0
        # Both keep up, so between them they are sent every row published (a's two to b's one).
        a_rate = r.subscriber_rates[subs["steady-a"].peer]
        b_rate = r.subscriber_rates[subs["steady-b"].peer]
        assert 1.2 < a_rate / b_rate < 3.5, (a_rate, b_rate)
        st = subs["stalled"]
        assert st.lag_rows > 1000  # more than max_lag_rows: it will be conflated
        assert st.lag_ms >= STALLED_MS
        assert r.subscriber_rates[st.peer] < a_rate / 10
        assert r.rows_in_per_s > 1000
        (src,) = r.status.sources
        assert (src.name, src.kind, src.symbols, src.state) == (
            "day",
            "tickstore",
            SYMBOLS,
            "replaying",
        )
        assert src.rows_in > 0
        assert 0 <= src.last_row_age_ms < 1000
        assert r.source_rates["day"] > 1000
        assert r.status.relay_id == "r1"
        assert r.status.instruments == 3
        assert 0 < r.status.cached_rows <= 3 * (4000 + 2000)
        assert r.status.uptime_s > 0
        # The stalled link reads again: it is sent the books (conflated), then keeps up.
        drained = asyncio.get_running_loop().create_task(drain(stalled))

        def caught_up() -> bool:
            s = links(poller.readings["ny4"]).get("stalled")
            return s is not None and s.conflations >= 1 and not s.stalled

        await until(caught_up)
        assert poller.readings["ny4"].status.conflations >= 1  # type: ignore[union-attr]
        await poller.close()
        drained.cancel()
        await stalled.close()
        await a.close()
        await b.close()
        await source.stop()
        await relay.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert readings[0].state == "connecting"
    assert all(r.state in ("connecting", UP) for r in readings), [r.error for r in readings]
    assert sum(r.state == UP for r in readings) >= 5


async def drain(ws: ClientConnection) -> None:
    async for _ in ws:
        pass


def test_refusals_and_an_unreachable_relay_are_readings(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.toml")
    viewer = tokens.add("vera", "viewer", LiveClock().now_ns())
    admin = tokens.add("ada", "admin", LiveClock().now_ns())
    relay, _ = tls_relay(tmp_path, tokens, status_role="admin")
    pins = PinStore(tmp_path / "console-pins.json")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = int(s.getsockname()[1])
    got: dict[str, list[Reading]] = {}

    async def main() -> None:
        await relay.open()
        port = relay.port
        targets = [
            WatchTarget("admin", "127.0.0.1", port, admin, pins=pins),
            WatchTarget("viewer", "127.0.0.1", port, viewer, pins=pins),
            WatchTarget("bad-token", "127.0.0.1", port, "qw1.nope.nope", pins=pins),
            WatchTarget("wrong-pin", "127.0.0.1", port, admin, fingerprint="AB:" * 31 + "AB"),
            WatchTarget("plain", "127.0.0.1", port, admin, tls=False),
            WatchTarget("closed", "127.0.0.1", closed, admin, pins=pins),
        ]
        poller = StatusPoller(
            targets,
            lambda r: got.setdefault(r.name, []).append(r),
            interval_s=0.2,
            timeout_s=3.0,
            backoff=Backoff(0.05, 0.2),
            refused_retry_s=60,
        )

        want = {
            "admin": UP,
            "viewer": REFUSED,
            "bad-token": REFUSED,
            "wrong-pin": REFUSED,
            "plain": UNREACHABLE,
            "closed": UNREACHABLE,
        }

        def settled() -> bool:
            return {n: poller.readings[n].state for n in poller.readings} == want

        await poller.start()
        await until(settled, 30)
        await poller.close()
        await relay.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    last = {n: rs[-1] for n, rs in got.items()}
    assert last["viewer"].error == (
        "logged in as vera (viewer), but that role may not see the relay's status "
        "(relay.toml status_role)"
    )
    assert last["bad-token"].error == "login refused: token refused"
    assert last["wrong-pin"].error.startswith("certificate fingerprint ")
    assert "is not the one configured (AB:AB:" in last["wrong-pin"].error
    assert last["closed"].error == "connection refused (is the relay running on that port?)"
    assert last["plain"].error  # a plain WebSocket to a TLS port: the handshake fails
    assert last["admin"].status is not None
    assert last["admin"].status.subscribers[0].user == "ada"
    assert all(r.status is None for n, r in last.items() if n != "admin")
    # Refusals are not retried at once (the relay's login throttle stays untouched).
    assert len([r for r in got["bad-token"] if r.state == REFUSED]) == 1
