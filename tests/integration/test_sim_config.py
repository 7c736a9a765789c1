# SPDX-License-Identifier: MIT
"""The simulator as a QA venue: its instruments from configuration, in-engine and standalone.

``[simulator] enabled`` lists the TOML's ``[[instruments]]`` (tick, initial price,
participants) with the demo's market maker only when ``demo_strategy`` asks for it;
``qwconsole sim --cfg --config engine.toml`` lists the same instruments for a headless engine
trading over FIX; a strategy on an instrument nobody publishes raises an alert.
"""

import asyncio
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.clock import LiveClock
from engine.config.reader import load_config
from engine.core import Engine, EngineState
from engine.demo import DEMO_STRATEGY_ID
from engine.events import BookUpdated
from engine.headless import BuildError, build_from_config
from tests.integration.test_strategies_doc import blocks

pytestmark = pytest.mark.integration

QWCONSOLE = Path(sys.executable).with_name("qwconsole")
LISTENING = re.compile(r"^sim: listening on 127\.0\.0\.1:(\d+) \(sessions: (.*)\)$")

INSTRUMENTS = """
[[instruments]]
symbol = "ESH5"
tick_size = "0.25"
multiplier = "50"
initial_price = "5900.00"
participant_events_per_second = 300
"""


def tinybuy(folder: Path) -> None:
    code = next(c for name, _lang, c in blocks() if name == "tinybuy.py")
    (folder / "tinybuy.py").write_text(code, encoding="utf-8")


@pytest.mark.parametrize("demo_strategy", [False, True])
async def test_simulator_lists_the_configured_instruments(
    tmp_path: Path, demo_strategy: bool
) -> None:
    tinybuy(tmp_path)
    toml = tmp_path / "engine.toml"
    toml.write_text(
        f"[simulator]\nenabled = true\ndemo_strategy = {str(demo_strategy).lower()}\n"
        + INSTRUMENTS
        + '\n[[strategies]]\nid = 42\nclass = "tinybuy.py:TinyBuy"\nsymbols = ["ESH5"]\n'
    )
    engine = Engine(LiveClock(), engine_id="sim-config")
    desk = build_from_config(engine, load_config(toml))
    assert [(i.symbol, str(i.tick_size), str(i.multiplier)) for i, _v in desk.instruments] == [
        ("ESH5", "0.25", "50")
    ]
    expected = {42, DEMO_STRATEGY_ID} if demo_strategy else {42}
    assert set(desk.runner.strategies) == expected
    books: list[BookUpdated] = []
    engine.add_sink(lambda r: books.append(r.event) if isinstance(r.event, BookUpdated) else None)
    task = asyncio.create_task(engine.run())
    try:
        for _ in range(300):
            if books and engine.state is EngineState.RUNNING:
                break
            await asyncio.sleep(0.05)
    finally:
        engine.request_stop()
        await task
    assert books, "no market data"
    mid = (books[0].bid_px_ticks + books[0].ask_px_ticks) / 2
    assert abs(mid - 5900 / 0.25) < 200  # around the initial price, in ticks


async def test_bad_simulator_configurations_are_one_line(tmp_path: Path) -> None:
    toml = tmp_path / "engine.toml"
    toml.write_text(
        '[simulator]\nenabled = true\n[[instruments]]\nsymbol = "ESH5"\ntick_size = "0.25"\n'
    )
    with pytest.raises(
        BuildError,
        match=r"instruments\[0\]: ESH5 is not traded by this engine: "
        "give it initial_price",
    ):
        build_from_config(Engine(LiveClock(), engine_id="x"), load_config(toml))
    toml.write_text(
        '[simulator]\nenabled = true\n[[strategies]]\nid = 42\nclass = "Taker"\n'
        'symbols = ["ESH5"]\n'
    )
    with pytest.raises(
        BuildError,
        match=r"strategies\[0\]\.symbols: ESH5 not traded by this "
        r"engine \(traded: ESZ6, NQZ6, CLF7\)",
    ):
        build_from_config(Engine(LiveClock(), engine_id="x"), load_config(toml))


SIM_CFG = """\
[DEFAULT]
ConnectionType=acceptor
SocketAcceptPort=0
StartTime=00:00:00
EndTime=00:00:00
ResetOnLogon=Y

[SESSION]
BeginString=FIX.4.4
SenderCompID=EXCH
TargetCompID=QA
"""

SESSIONS_CFG = """\
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
SenderCompID=QA
TargetCompID=EXCH
"""


def test_sim_process_lists_the_engine_configuration_and_unpublished_data_is_an_alert(
    tmp_path: Path,
) -> None:
    tinybuy(tmp_path)
    (tmp_path / "sim.cfg").write_text(SIM_CFG)
    sim_toml = tmp_path / "sim.toml"  # what the venue lists: ESH5 only
    sim_toml.write_text(INSTRUMENTS)
    sim = subprocess.Popen(
        [str(QWCONSOLE), "sim", "--cfg", "sim.cfg", "--config", "sim.toml"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    engine = None
    try:
        assert sim.stdout is not None
        m = LISTENING.match(sim.stdout.readline().rstrip("\n"))
        assert m is not None, sim.stderr.read() if sim.stderr else "no port line"
        (tmp_path / "sessions.cfg").write_text(SESSIONS_CFG.format(port=m.group(1)))
        (tmp_path / "engine.toml").write_text(
            '[engine]\nid = "qa"\n[files]\nlogs_dir = "logs"\n[sessions]\nfile = "sessions.cfg"\n'
            + INSTRUMENTS
            + '\n[[instruments]]\nsymbol = "NQH5"\ntick_size = "0.25"\n'
            '\n[[strategies]]\nid = 42\nclass = "tinybuy.py:TinyBuy"\nsymbols = ["ESH5"]\n'
            '\n[[strategies]]\nid = 43\nclass = "tinybuy.py:TinyBuy"\nsymbols = ["NQH5"]\n'
        )
        engine = subprocess.Popen(
            [str(QWCONSOLE), "engine", "--config", "engine.toml", "--interval", "0.5"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert engine.stdout is not None
        log = tmp_path / "logs" / "engine.log"
        fills, told = 0, False
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (fills and told):
            line = engine.stdout.readline()
            if not line:
                break
            found = re.search(r"fills\s+(\d+)", line)
            fills = int(found.group(1)) if found else fills
            told = log.exists() and "nobody publishes market data" in log.read_text()
        assert fills > 0, engine.communicate()[1] if engine.poll() is not None else "no fills"
        text = log.read_text()
        assert (
            "strategy tiny buy (43) trades NQH5, but nobody publishes market data for it "
            "(5 s since it started; data arrives for: ESH5)"
        ) in text
        assert "(42) trades ESH5, but nobody" not in text
        engine.send_signal(signal.SIGTERM)
        out, err = engine.communicate(timeout=30)
        assert engine.returncode == 0, err
        assert "ESH5:+" in out or "ESH5:-" in out
    finally:
        for p in (engine, sim):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.communicate(timeout=30)
    assert sim.returncode == 0


def test_sim_config_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "sim.cfg").write_text(SIM_CFG)
    (tmp_path / "bad.toml").write_text(INSTRUMENTS.replace('"5900.00"', '"5900.10"'))
    proc = subprocess.run(
        [str(QWCONSOLE), "sim", "--cfg", "sim.cfg", "--config", "bad.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "qwconsole sim: error: bad.toml:6: instruments[0].initial_price: '5900.10': not a "
        "multiple of tick_size 0.25"
    ]
