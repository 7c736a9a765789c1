# SPDX-License-Identifier: MIT
"""``qwconsole sim --ouch-port``: the simulator's OUCH 5.0 port as a real process.

Nasdaq's own SoupBinTCP library (``nasdaq-protocols``, an independent implementation) logs in
and trades; the engine's OUCH path (order manager, ``OuchVenue``, ``OuchSession``) logs in as
the same account afterwards, trades, and after the simulator is stopped and started again on
the same ``--ouch-store`` its session resumes: the UserRefNums go on rising and nothing the
venue sent is applied twice.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import OrdStatus, Side, TimeInForce
from engine.events import Event, OrderFilled, VenueLinkChanged
from engine.instruments import Instrument
from engine.oms.router import OrderRouter
from engine.venues.ouch.adapter import OuchVenue
from engine.venues.ouch.session import OuchSession
from engine.venues.ouch.store import FileClientState
from tests.integration.headless_files import wait_for_fills, write_engine

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QWCONSOLE = Path(sys.executable).with_name("qwconsole")
FIX_LINE = re.compile(r"^sim: listening on 127\.0\.0\.1:(\d+) ")
#: The FIX port of each simulator process started here, by pid.
SIM_FIX_PORTS: dict[int, int] = {}
OUCH_LINE = re.compile(r"^sim: OUCH 5\.0 listening on 127\.0\.0\.1:(\d+) \(accounts: (.*)\)$")
ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))
CFG = (
    "[DEFAULT]\nConnectionType=acceptor\nNonStopSession=Y\nSocketAcceptPort=0\n"
    "ResetOnLogon=Y\n\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=S\nTargetCompID=A\n"
)
ENTER = struct.Struct(">cIcI8sQccccc14sH")  # Enter Order, no appendage (the spec's layout)


def start_sim(tmp: Path) -> tuple[subprocess.Popen[str], int]:
    cfg = tmp / "sim.cfg"
    cfg.write_text(CFG)
    proc = subprocess.Popen(
        [str(QWCONSOLE), "sim", "--cfg", str(cfg), "--ouch-port", "0",
         "--ouch-account", "QWC1:qwdemo", "--ouch-store", str(tmp / "ouch-store"),
         "--ouch-busy-poll", "200"],  # its port polls after traffic: the same trades
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    lines = [proc.stdout.readline().rstrip("\n") for _ in range(2)]
    fix = FIX_LINE.match(lines[0])
    if fix is not None:
        SIM_FIX_PORTS[proc.pid] = int(fix.group(1))
    m = OUCH_LINE.match(lines[1])
    if m is None:
        proc.kill()
        pytest.fail(f"no OUCH port line: {lines}, {proc.stderr.read() if proc.stderr else ''}")
    assert m.group(2) == "QWC1"
    return proc, int(m.group(1))


def stop_sim(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return out


async def until(pred: Callable[[], object], within_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not pred():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def their_client_trades(port: int) -> None:
    soup = pytest.importorskip("nasdaq_protocols.soup")
    got: list[Any] = []

    async def on_msg(msg: Any) -> None:
        got.append(msg)

    client = await soup.connect_async(
        ("127.0.0.1", port), "QWC1", "qwdemo", "", sequence=1, on_msg_coro=on_msg
    )
    # Buy 2 ES at 6100.00 (the book starts at 6000.00): it crosses and trades.
    client.send_unseq_data(
        ENTER.pack(
            b"O",
            7,
            b"B",
            2,
            b"ESZ6".ljust(8),
            61_000_000,
            b"3",
            b"Y",
            b"A",
            b"N",
            b"N",
            b"THEIRS".ljust(14),
            0,
        )
    )
    await until(lambda: [x for x in got if isinstance(x, soup.SequencedData)][1:])
    data = [x.data for x in got if isinstance(x, soup.SequencedData)]
    assert data[0][:1] == b"A"  # Order Accepted
    assert struct.unpack(">I", data[0][9:13])[0] == 7  # its UserRefNum
    assert data[1][:1] == b"E"  # Order Executed
    assert struct.unpack(">I", data[1][9:13])[0] == 7
    client.logout()
    await asyncio.sleep(0.2)


async def engine_trades(port: int, store: Path) -> tuple[list[Event], OuchSession]:
    clock = LiveClock()
    loop = asyncio.get_running_loop()
    bus = MessageBus()
    events: list[Event] = []
    bus.subscribe(Event, events.append)
    venue = OuchVenue(clock, name="SIM-OUCH", defer=loop.call_soon, publish=bus.publish)
    router = OrderRouter(bus, clock)
    manager = router.add_instrument(ES, venue)
    venue.route(ES, manager)
    state = FileClientState(store, "client")
    session = OuchSession(
        venue,
        username="QWC1",
        password="qwdemo",
        host="127.0.0.1",
        port=port,
        state=state,
        clock=clock,
    )
    await session.link.start()
    await session.wait_ready(10)
    order = manager.send(
        strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=24_400, time_in_force=TimeInForce.IOC
    )
    await until(lambda: order.is_terminal)
    assert order.status is OrdStatus.FILLED
    return events, session


async def test_their_client_then_the_engine_trade_and_a_restart_resumes(tmp_path: Path) -> None:
    proc, port = start_sim(tmp_path)
    try:
        await their_client_trades(port)
        events, session = await engine_trades(port, tmp_path)
        links = [e for e in events if isinstance(e, VenueLinkChanged)]
        assert links[0].up
        assert links[0].detail == f"QWC1@127.0.0.1:{port}"
        # Sequenced messages so far: theirs (Accepted, Executed+) then ours.
        first_ref = session.state.next_user_ref_num
        seen_in = session.state.next_expected_seq
        assert seen_in > 3
        await session.link.stop(logout=True)
        fills = [e for e in events if isinstance(e, OrderFilled)]
        assert sum(f.last_qty_lots for f in fills) == 1
    finally:
        out = stop_sim(proc)
    assert out.endswith("sim: stopped\n")
    # The simulator again, on the same store: the session resumes where it was.
    proc, port = start_sim(tmp_path)
    try:
        session.link.port = port
        before = len(events)
        await session.link.start()
        await session.wait_ready(10)
        assert session.state.next_expected_seq >= seen_in  # nothing replayed twice
        # The next order's UserRefNum continues (persisted, never reused).
        clordid = session.venue.new_client_order_id()
        assert int(clordid[1:]) >= first_ref
        await session.link.stop(logout=True)
        session.state.close()
        again = [e for e in events[before:] if isinstance(e, OrderFilled)]
        assert again == []  # no fill of the first run delivered again
    finally:
        stop_sim(proc)


MARKET_MAKER = """
[[strategies]]
id = 7
class = "MarketMaker"
symbols = ["ESZ6"]
[strategies.parameters]
qty_lots = 1
half_spread_ticks = 1
"""


def test_a_headless_engine_trades_over_an_ouch_account_of_its_configuration(
    tmp_path: Path,
) -> None:
    """``[[ouch]]`` + ``instruments[].venue``: orders over OUCH, market data over FIX."""
    sim_dir = tmp_path / "sim"
    sim_dir.mkdir()
    proc, ouch_port = start_sim(sim_dir)
    engine = None
    try:
        toml = write_engine(
            tmp_path,
            port=SIM_FIX_PORTS[proc.pid],
            sender="A",
            target="S",
            engine_id="over-ouch",
            strategies=MARKET_MAKER,
        )
        text = toml.read_text().replace('session = "FIX.4.4:A->S"', 'venue = "SIMOUCH"')
        toml.write_text(text + OUCH_ACCOUNT.format(port=ouch_port))
        engine = subprocess.Popen(
            [str(QWCONSOLE), "engine", "--config", str(toml), "--interval", "0.5"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SIM_OUCH_PASSWORD": "qwdemo"},
        )
        fills = wait_for_fills(engine)
        assert fills > 0, "no fills" if engine.poll() is None else engine.communicate()[1]
        engine.send_signal(signal.SIGTERM)
        out, err = engine.communicate(timeout=30)
        assert engine.returncode == 0, err
        assert "engine stopped cleanly" in out
    finally:
        if engine is not None and engine.poll() is None:
            engine.kill()
            engine.communicate()
        stop_sim(proc)
    # The orders went over OUCH: the simulator's OUCH store has the day's messages, and the
    # engine keeps the account's state next to its configuration.
    assert any(p.stat().st_size > 0 for p in (sim_dir / "ouch-store").glob("ouch-QWC1-*"))
    assert (tmp_path / "fix-store" / "ouch-SIMOUCH.ouchstate").is_file()


OUCH_ACCOUNT = """
[[ouch]]
name = "SIMOUCH"
host = "127.0.0.1"
port = {port}
username = "QWC1"
password_env = "SIM_OUCH_PASSWORD"
firm = "QWCN"
"""


def test_ouch_busy_poll_needs_the_port_and_microseconds(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.sim.server import main

    assert main(["--cfg", "sim.cfg", "--ouch-busy-poll", "200"]) == 2
    assert "--ouch-busy-poll need --ouch-port" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--cfg", "sim.cfg", "--ouch-port", "0", "--ouch-busy-poll", "fast"])
    assert "'fast': give microseconds" in capsys.readouterr().err
