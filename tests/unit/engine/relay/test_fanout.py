# SPDX-License-Identifier: MIT
"""The relay's fan-out (one encoding, written straight to every link that keeps up) and its
instrument catalog, over real loopback sockets in one process."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from engine.clock import LiveClock
from engine.relay.client import RelayClient, RelayError, fetch_catalog
from engine.relay.protocol import (
    RELAY_VERSION,
    Auth,
    Catalog,
    CatalogRequest,
    Hello,
    InstrumentInfo,
    Subscribe,
    decode_server,
    encode,
)
from engine.relay.server import MAX_FRAME_BYTES, Relay, ws_binary_frame
from engine.remote.tls import PinStore
from engine.remote.tokens import TokenStore
from tests.unit.engine.relay.synth import l2_rows
from tests.unit.engine.relay.test_relay import SYMBOLS, books_of, new_market, run, until
from tests.unit.engine.relay.test_status import tls_relay


def test_binary_frames_are_rfc6455_headers_over_the_payload() -> None:
    for n, head in ((5, b"\x82\x05"), (300, b"\x82\x7e\x01\x2c"), (70_000, None)):
        frame = ws_binary_frame(b"x" * n)
        if head is not None:
            assert frame[: len(head)] == head
        else:
            assert frame[:2] == b"\x82\x7f"
            assert int.from_bytes(frame[2:10], "big") == n
        assert frame.endswith(b"x" * n)
        assert len(frame) == n + {5: 2, 300: 4, 70_000: 10}[n]


def test_subscribers_that_keep_up_share_one_encoding_per_batch(tmp_path: Path) -> None:
    rows = l2_rows(30_000, 3, seed=3)

    async def scenario(relay: Relay, token: str) -> None:
        markets = [new_market() for _ in range(4)]
        clients = [
            RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=m, name=f"c{i}")
            for i, m in enumerate(markets)
        ]
        for c in clients:
            await c.start()
        encodings = []
        for i in range(0, rows.shape[0], 300):
            relay.publish(rows[i : i + 300])
            await asyncio.sleep(0)  # the flush runs: every link at the heads gets the frame
            encodings.append(len(relay._frames))
            await asyncio.sleep(0.002)
        heads = [r.head for r in relay.rings]
        await until(lambda: all([c.seq[s] for s in SYMBOLS] == heads for c in clients))
        # One md encoding per batch for the four links (they were all at the heads).
        assert max(encodings) == 1
        frames = [s.frames_sent for s in relay._subscribers]
        assert min(frames) == max(frames) == rows.shape[0] // 300
        for c, m in zip(clients, markets, strict=True):
            assert c.gaps == 0
            assert c.conflated == 0
            assert books_of(m) == books_of(relay.market)
            await c.close()

    run(tmp_path, scenario)


def test_a_stalled_link_holds_at_most_its_write_limit_and_one_frame(tmp_path: Path) -> None:
    rows = l2_rows(300_000, 3, seed=5)

    async def scenario(relay: Relay, token: str) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 10)
        sock.connect(("127.0.0.1", relay.port))
        stalled = await connect(
            f"ws://127.0.0.1:{relay.port}/", sock=sock, max_queue=1, compression=None
        )
        await stalled.send(encode(Hello(version=RELAY_VERSION, client="stalled")))
        await stalled.recv()
        await stalled.send(encode(Auth(token=token)))
        await stalled.recv()
        await stalled.send(encode(Subscribe(rid=1, symbols=SYMBOLS)))
        m = new_market()
        c = RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=m)
        await c.start()
        held = 0
        for i in range(0, rows.shape[0], 3000):
            relay.publish(rows[i : i + 3000])
            await asyncio.sleep(0.001)
            for s in relay._subscribers:
                if s.client == "stalled":
                    held = max(held, s.ws.transport.get_write_buffer_size())
        heads = [r.head for r in relay.rings]
        await until(lambda: [c.seq[s] for s in SYMBOLS] == heads)
        assert c.conflated == 0
        assert c.gaps == 0
        assert books_of(m) == books_of(relay.market)
        # The stalled link's transport holds the WebSocket write limit (32 KiB) plus at most
        # one frame, however much was published (9.6 MB here).
        assert 0 < held <= (32 << 10) + MAX_FRAME_BYTES + 64
        (st,) = [s for s in relay._subscribers if s.client == "stalled"]
        assert st.busy  # its sender waits for the link to drain; the flush skips it
        stalled.transport.abort()
        await c.close()

    run(tmp_path, scenario, cache_rows=20_000, max_lag_rows=5_000)


def test_the_catalog_lists_instruments_with_their_sizes(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("analyst", "viewer", LiveClock().now_ns())
    relay, _ = tls_relay(tmp_path, tokens, sizes={"AAA": ("0.01", "1"), "BBB": ("0.25", "5")})
    pins = PinStore(tmp_path / "pins.json")

    async def main() -> None:
        await relay.open()
        try:
            cat = await fetch_catalog("127.0.0.1", relay.port, token, tls=True, pins=pins)
            assert cat.relay_id == "r1"
            assert cat.instruments == [
                InstrumentInfo("AAA", "0.01", "1"),
                InstrumentInfo("BBB", "0.25", "5"),
                *[InstrumentInfo(s) for s in cat_symbols[2:]],
            ]
            assert pins.get(f"127.0.0.1:{relay.port}")  # pinned before the token went
            with pytest.raises(RelayError, match="login refused"):
                await fetch_catalog("127.0.0.1", relay.port, "qw1.x.y", tls=True, pins=pins)
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                free = s.getsockname()[1]
            with pytest.raises(RelayError, match=f"127.0.0.1:{free}: connection refused"):
                await fetch_catalog("127.0.0.1", free, token, tls=True, pins=pins)
            with pytest.raises(RelayError, match="not a relay"):  # ws:// to a wss:// relay
                await fetch_catalog("127.0.0.1", relay.port, token, tls=False, timeout_s=3)
        finally:
            await relay.close()

    cat_symbols = list(relay.market.symbols)
    asyncio.run(main())


def test_a_catalog_request_is_answered_on_a_subscribed_link(tmp_path: Path) -> None:
    async def scenario(relay: Relay, token: str) -> None:
        ws = await connect(f"ws://127.0.0.1:{relay.port}/", compression=None)
        await ws.send(encode(Hello(version=RELAY_VERSION, client="x")))
        await ws.recv()
        await ws.send(encode(Auth(token=token)))
        ok = decode_server(await ws.recv(decode=False))
        assert "catalog" in ok.commands  # type: ignore[union-attr]
        await ws.send(encode(CatalogRequest(rid=7)))
        msg = decode_server(await asyncio.wait_for(ws.recv(decode=False), 5))
        assert isinstance(msg, Catalog)
        assert msg.rid == 7
        assert [i.symbol for i in msg.instruments] == SYMBOLS
        assert all(i.tick_size == "" for i in msg.instruments)  # sizes not given to it
        await ws.close()

    run(tmp_path, scenario)


def test_a_link_that_asks_and_never_reads_is_closed(tmp_path: Path) -> None:
    async def scenario(relay: Relay, token: str) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 10)
        sock.connect(("127.0.0.1", relay.port))
        ws = await connect(f"ws://127.0.0.1:{relay.port}/", sock=sock, max_queue=1)
        await ws.send(encode(Hello(version=RELAY_VERSION, client="greedy")))
        await ws.recv()
        await ws.send(encode(Auth(token=token)))
        await ws.recv()
        await until(lambda: relay.subscribers == 1)
        most = 0
        for rid in range(20_000):
            try:
                await ws.send(encode(CatalogRequest(rid=rid)))
            except Exception:
                break  # the relay closed the link
            if rid % 100 == 0:
                await asyncio.sleep(0.001)
                most = max([most, *(len(s.control) for s in relay._subscribers)])
            if relay.subscribers == 0:
                break
        await until(lambda: relay.subscribers == 0)
        assert most <= 64  # answers waiting for it never exceeded the bound
        ws.transport.abort()

    run(tmp_path, scenario)


def test_a_stalled_link_does_not_delay_the_others_by_one_loop_iteration(tmp_path: Path) -> None:
    """Issue 22: a stalled subscriber costs the others nothing.

    Measured in event-loop iterations, not wall time (the machine is shared): after a publish,
    how many iterations until the relay has written the rows to every link that keeps up, and
    until every client has applied them; first with no stalled link, then with one whose
    transport is paused (its kernel buffers and write limit full).
    """
    rows = l2_rows(400_000, 3, seed=9)

    async def scenario(relay: Relay, token: str) -> None:
        markets = [new_market() for _ in range(3)]
        clients = [
            RelayClient("127.0.0.1", relay.port, token, SYMBOLS, market=m, name=f"c{i}")
            for i, m in enumerate(markets)
        ]
        for c in clients:
            await c.start()
        fast = [s for s in relay._subscribers if s.client.startswith("c")]
        at = 0

        async def iterations(n: int) -> tuple[list[int], list[int]]:
            """Publish ``n`` batches of 100 rows; iterations until written, until applied."""
            nonlocal at
            written, applied = [], []
            for _ in range(n):
                relay.publish(rows[at : at + 100])
                at += 100
                heads = [r.head for r in relay.rings]
                w = a = 0
                for i in range(1, 100):
                    await asyncio.sleep(0)
                    if not w and all(
                        [s.cursors[b] for b in range(len(SYMBOLS))] == heads for s in fast
                    ):
                        w = i
                    if not a and all([c.seq[s] for s in SYMBOLS] == heads for c in clients):
                        a = i
                    if w and a:
                        break
                written.append(w)
                applied.append(a)
                await asyncio.sleep(0.001)
            return written, applied

        await iterations(5)  # the first batches after the snapshots
        alone_w, alone_a = await iterations(40)

        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 10)
        sock.connect(("127.0.0.1", relay.port))
        stalled = await connect(
            f"ws://127.0.0.1:{relay.port}/", sock=sock, max_queue=1, compression=None
        )
        await stalled.send(encode(Hello(version=RELAY_VERSION, client="stalled")))
        await stalled.recv()
        await stalled.send(encode(Auth(token=token)))
        await stalled.recv()
        await stalled.send(encode(Subscribe(rid=1, symbols=SYMBOLS)))
        await until(lambda: relay.subscribers == 4)
        (st,) = [s for s in relay._subscribers if s.client == "stalled"]
        while not st.ws.paused:  # fill its kernel buffers and its write limit
            relay.publish(rows[at : at + 3000])
            at += 3000
            await asyncio.sleep(0.001)
        heads = [r.head for r in relay.rings]
        await until(lambda: all([c.seq[s] for s in SYMBOLS] == heads for c in clients))
        held, frames = st.ws.transport.get_write_buffer_size(), st.frames_sent
        with_w, with_a = await iterations(40)

        # The flush writes to every link that keeps up in the iteration after the publish,
        # stalled link or not, and the clients have the rows no later than without it.
        assert max(alone_w) == max(with_w) == 1
        assert max(with_a) <= max(alone_a)
        # The stalled link was not written to, nor its sender woken, by those batches.
        assert st.busy
        assert not st.wake.is_set()
        assert st.frames_sent == frames
        assert st.ws.transport.get_write_buffer_size() == held
        for c, m in zip(clients, markets, strict=True):
            assert c.gaps == 0
            assert c.conflated == 0
            assert books_of(m) == books_of(relay.market)
            await c.close()
        stalled.transport.abort()

    run(tmp_path, scenario, cache_rows=400_000, max_lag_rows=400_000)
