# SPDX-License-Identifier: MIT
"""A relay fed by a FIX market-data session of ``qwconsole sim``, as real processes.

* The relay's FIX source subscribes to the simulator; a subscriber over TLS ends with the very
  books a FIX session of its own to the simulator builds, level for level, through snapshots,
  new levels, a cancel and a trade that we cause with orders of our own.
* ``qwconsole engine --config … --market-data relay`` trades against the simulator with books
  that came only through the relay: its FIX session carries orders, no MarketDataRequest.
"""

from __future__ import annotations

import asyncio
import os
import signal
import ssl
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import Side
from engine.events import TradeReported
from engine.fix.message import OutMessage
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.relay.protocol import (
    RELAY_VERSION,
    Auth,
    Hello,
    RelayStatus,
    StatusRequest,
    decode_server,
    encode,
)
from engine.relay.sources import FixSource
from engine.remote.tls import PinStore, make_self_signed
from engine.remote.tokens import TokenStore
from tests.integration.headless_files import wait_for_fills, write_engine
from tests.integration.test_relay import RelayProcess, until
from tests.integration.test_sim_server import (
    LISTENING,
    QWCONSOLE,
    Client,
    client_session,
    connected,
    new_order,
    now_text,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SIM_CFG = """\
[DEFAULT]
ConnectionType=acceptor
StartTime=00:00:00
EndTime=00:00:00
FileStorePath={tmp}/sim-store
FileLogPath={tmp}/sim-log
{sessions}"""

MD_CFG = """\
[DEFAULT]
ConnectionType=initiator
SocketConnectHost=127.0.0.1
SocketConnectPort={port}
StartTime=00:00:00
EndTime=00:00:00
HeartBtInt=5
ReconnectInterval=1
ResetOnLogon=Y

[SESSION]
BeginString=FIX.4.4
SenderCompID={sender}
TargetCompID=EXECUTOR
"""

#: A venue nobody trades on but us: its books change only when the test sends orders.
QUIET_LISTINGS = """\
[[instruments]]
symbol = "ESH5"
tick_size = "0.25"
multiplier = "50"
initial_price = "5900.00"
participant_events_per_second = 0

[[instruments]]
symbol = "NQH5"
tick_size = "0.25"
multiplier = "20"
initial_price = "21000.00"
participant_events_per_second = 0
"""


def sim_cfg(tmp: Path, *clients: str) -> Path:
    sessions = "".join(
        f"\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=EXECUTOR\nTargetCompID={c}\n"
        for c in clients
    )
    path = tmp / "sim.cfg"
    path.write_text(SIM_CFG.format(tmp=tmp, sessions=sessions))
    return path


def start_sim(cfg: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    sim = subprocess.Popen(
        [str(QWCONSOLE), "sim", "--cfg", str(cfg), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert sim.stdout is not None
    line = sim.stdout.readline().rstrip("\n")
    m = LISTENING.match(line)
    if m is None:
        sim.kill()
        raise AssertionError(f"the simulator did not start: {line!r} {sim.communicate()[1]}")
    return sim, int(m.group(1))


def stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def relay_toml(tmp: Path, instruments: dict[str, str], session: str = "") -> Path:
    """Write a TLS relay with one FIX source (``md.cfg``); return its file."""
    make_self_signed(tmp / "relay.crt", tmp / "relay.key")
    ins = "".join(
        f'[[instruments]]\nsymbol = "{s}"\ntick_size = "{t}"\n\n' for s, t in instruments.items()
    )
    path = tmp / "relay.toml"
    path.write_text(
        f'[relay]\nid = "fix-relay"\nport = 0\ntls_cert = "relay.crt"\ntls_key = "relay.key"\n'
        f'token_store = "tokens.toml"\n\n{ins}'
        f'[[sources]]\ntype = "fix"\nname = "sim-md"\nsessions = "md.cfg"\n'
        + (f'session = "{session}"\n' if session else "")
    )
    return path


async def relay_status(port: int, token: str) -> RelayStatus:
    """Ask the relay for its status over TLS (any certificate: the test made it)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    async with connect(f"wss://127.0.0.1:{port}/", ssl=ctx) as ws:
        await ws.send(encode(Hello(version=RELAY_VERSION, client="test-watcher")))
        await ws.recv()
        await ws.send(encode(Auth(token=token)))
        await ws.recv()
        await ws.send(encode(StatusRequest(rid=1)))
        while True:
            msg = decode_server(await asyncio.wait_for(ws.recv(), 10))  # type: ignore[arg-type]
            if isinstance(msg, RelayStatus):
                return msg


def book_of(m: MarketData, symbol: str) -> list[list[list[int]]]:
    bids, asks = m.books.top(m.index[symbol], 50)
    return [bids.tolist(), asks.tolist()]


def test_fix_source_books_match_a_direct_fix_session(tmp_path: Path) -> None:
    symbols = {"ESH5": "0.25", "NQH5": "0.25"}
    (tmp_path / "listings.toml").write_text(QUIET_LISTINGS)
    sim, port = start_sim(
        sim_cfg(tmp_path, "RELAY", "REF", "CLIENT1"), "--config", str(tmp_path / "listings.toml")
    )
    (tmp_path / "md.cfg").write_text(MD_CFG.format(port=port, sender="RELAY"))
    (tmp_path / "ref.cfg").write_text(MD_CFG.format(port=port, sender="REF"))
    token = TokenStore(tmp_path / "tokens.toml").add("alice", "viewer", LiveClock().now_ns())
    relay = RelayProcess(relay_toml(tmp_path, symbols, "FIX.4.4:RELAY->EXECUTOR"))
    clock = LiveClock()
    instruments = [Instrument(symbol=s, tick_size=Decimal(t)) for s, t in symbols.items()]

    async def scenario() -> None:
        # The reference: a FIX market-data session of our own, straight to the simulator.
        ref = MarketData(list(symbols), MessageBus(), clock)
        direct = FixSource(ref, clock, instruments, tmp_path / "ref.cfg")
        await direct.start()
        sub_bus = MessageBus()
        trades: list[TradeReported] = []
        sub_bus.subscribe(TradeReported, trades.append)
        sub = MarketData(list(symbols), sub_bus, clock)
        client = RelayClient(
            "127.0.0.1",
            relay.port,
            token,
            list(symbols),
            market=sub,
            tls=True,
            pins=PinStore(tmp_path / "pins.json"),
        )
        await client.start()

        def same() -> bool:
            return all(book_of(sub, s) == book_of(ref, s) for s in symbols)

        # The seeded books (5 levels a side), through the relay's snapshot.
        await until(lambda: all(len(book_of(ref, s)[0]) == 5 for s in symbols), 20)
        await until(same, 20)
        es = sub.book("ESH5")
        assert es is not None
        bid = es.best_bid()
        ask = es.best_ask()
        assert bid is not None
        assert ask is not None
        assert (bid[1], ask[1]) == (5, 5)
        app = Client()
        session = client_session(tmp_path, app)
        async with connected(session, port):
            # A new level deeper than the seeded ones, then its cancel.
            deep = (bid[0] - 8) * Decimal("0.25")
            assert session.send(new_order("deep", "ESH5", "1", "3", str(deep)))
            await until(lambda: es.depth_at(Side.BUY, bid[0] - 8) == 3, 20)
            await until(same, 20)
            cancel = [
                (41, "deep"),
                (11, "deep-x"),
                (54, "1"),
                (55, "ESH5"),
                (38, "3"),
                (60, now_text()),
            ]
            assert session.send(OutMessage("F", cancel))
            await until(lambda: es.depth_at(Side.BUY, bid[0] - 8) == 0, 20)
            # A buy that takes the best ask (5 lots) and rests 2 lots there: a trade and a
            # level that changed sides.
            px = ask[0] * Decimal("0.25")
            assert session.send(new_order("take", "ESH5", "1", "7", str(px)))
            await until(lambda: es.best_bid() == (ask[0], 2), 20)
            await until(same, 20)
            assert [(t.symbol, t.px_ticks, t.qty_lots) for t in trades] == [("ESH5", ask[0], 5)]
            assert trades[0].aggressor is Side.BUY
            # NQH5 untouched: still its seeded book.
            nq = book_of(sub, "NQH5")
            assert [[q for _p, q in side] for side in nq] == [[5] * 5, [5] * 5]
        status = await relay_status(relay.port, token)
        (src,) = status.sources
        assert (src.name, src.kind, src.symbols, src.state) == (
            "sim-md",
            "fix",
            list(symbols),
            "up",
        )
        assert src.rows_in >= 20 + 4  # two snapshots of 10 levels, then the changes
        assert client.gaps == 0
        await client.close()
        await direct.stop()

    try:
        asyncio.run(scenario())
        # The simulator stops: the source says so, and the relay keeps serving.
        assert stop(sim)[0] == 0

        async def down() -> None:
            for _ in range(200):
                (src,) = (await relay_status(relay.port, token)).sources
                if src.state.startswith("down"):
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(f"the FIX source still says {src.state!r}")

        asyncio.run(down())
    finally:
        if sim.poll() is None:
            stop(sim)
        assert relay.stop() == 0
    incoming = (tmp_path / "sim-log" / "FIX.4.4-EXECUTOR-RELAY.incoming.log").read_bytes()
    assert incoming.count(b"\x0135=V\x01") == 2  # one request per instrument


MARKET_MAKER = """
[[strategies]]
id = 7
class = "MarketMaker"
symbols = ["ESZ6"]
[strategies.parameters]
qty_lots = 1
half_spread_ticks = 1
"""


def test_engine_trades_from_relayed_market_data(tmp_path: Path) -> None:
    """``qwconsole engine --market-data relay``: books from the relay, orders over FIX."""
    sim, port = start_sim(sim_cfg(tmp_path, "RELAY", "CLIENT1"))
    (tmp_path / "md.cfg").write_text(MD_CFG.format(port=port, sender="RELAY"))
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("engine-7", "viewer", LiveClock().now_ns())
    relay = RelayProcess(relay_toml(tmp_path, {"ESZ6": "0.25"}))
    engine_dir = tmp_path / "engine"
    config = write_engine(
        engine_dir,
        port=port,
        sender="CLIENT1",
        target="EXECUTOR",
        engine_id="relayed",
        strategies=MARKET_MAKER,
    )
    args = [
        str(QWCONSOLE),
        "engine",
        "--config",
        str(config),
        "--interval",
        "0.5",
        "--market-data",
        "relay",
        "--relay",
        f"wss://127.0.0.1:{relay.port}",
    ]
    engine = None
    try:
        # A token the relay does not know: one line, exit 2, before any trading.
        wrong = {**os.environ, "QWCONSOLE_RELAY_TOKEN": "qw1.nope.nope"}
        bad = subprocess.run(
            args, capture_output=True, text=True, timeout=60, check=False, env=wrong
        )
        assert bad.returncode == 2, bad.stderr
        assert bad.stderr.strip().splitlines()[-1] == (
            f"qwconsole engine: error: {config}: market-data relay 127.0.0.1:{relay.port}: "
            "login refused: token refused (see 'qwconsole engine --help')"
        ), bad.stderr
        engine = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "QWCONSOLE_RELAY_TOKEN": token},
        )
        fills = wait_for_fills(engine)
        assert fills > 0, "no fills" if engine.poll() is None else engine.communicate()[1]
        status = asyncio.run(relay_status(relay.port, token))
        (link,) = [s for s in status.subscribers if s.client == "engine relayed"]
        assert (link.symbols, link.user) == (["ESZ6"], "engine-7")
        assert link.rows_sent > 0
        code, out, err = stop(engine)
        assert code == 0, err
        assert "engine stopped cleanly" in out
    finally:
        if engine is not None and engine.poll() is None:
            stop(engine)
        sim_code = stop(sim)[0]
        assert relay.stop() == 0
    assert sim_code == 0
    log = tmp_path / "sim-log"
    # The engine's session carried orders and no market-data request; the relay's asked.
    engine_in = (log / "FIX.4.4-EXECUTOR-CLIENT1.incoming.log").read_bytes()
    assert b"\x0135=D\x01" in engine_in
    assert b"\x0135=V\x01" not in engine_in
    assert b"\x0135=V\x01" in (log / "FIX.4.4-EXECUTOR-RELAY.incoming.log").read_bytes()
    # The relay's pin of the engine: trust on first use, next to the configuration.
    assert f"127.0.0.1:{relay.port}" in (engine_dir / "known-relays.json").read_text()
