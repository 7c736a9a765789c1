# SPDX-License-Identifier: MIT
"""``qwconsole sim --cfg FILE.cfg`` as a real process, traded against over real FIX sessions.

Our own initiator (``FixSession`` + ``SocketInitiator``) logs on, reads the book, sends a
NewOrderSingle that crosses it and gets fills; rejects say why in words; the simulator is
stopped with SIGTERM and started again on the same FileStorePath, and the session resumes its
sequence numbers (and resends what it sent before the restart). Bad input exits 2 with one
line. With the ``quickfix`` package installed, a QuickFIX initiator trades against it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from engine.fix.application import Application, SessionID
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import FileStore
from engine.fix.transport import SocketInitiator
from tests.integration.headless_files import wait_for_fills, write_engine

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The installed console script, next to the interpreter running the tests.
QWCONSOLE = Path(sys.executable).with_name("qwconsole")
ROOT = Path(__file__).resolve().parents[2]
#: The example configuration the project ships.
SHIPPED_CFG = ROOT / "resources" / "sim" / "sim.cfg"
LISTENING = re.compile(r"^sim: listening on 127\.0\.0\.1:(\d+) \(sessions: (.*)\)$")
STARTUP_S = 60.0

SIM_CFG = """\
[DEFAULT]
ConnectionType=acceptor
SocketAcceptPort=5001
StartTime=00:00:00
EndTime=00:00:00
FileStorePath={store}
FileLogPath={log}

[SESSION]
BeginString=FIX.4.4
SenderCompID=EXECUTOR
TargetCompID=CLIENT1

[SESSION]
BeginString=FIX.4.2
SenderCompID=EXECUTOR
TargetCompID=CLIENT1
"""


def shipped_cfg_in(tmp: Path) -> Path:
    """Return a copy of the shipped example with its store and log folders under ``tmp``."""
    text = SHIPPED_CFG.read_text()
    cfg = tmp / "sim.cfg"
    cfg.write_text(
        text.replace("=sim-store", f"={tmp}/sim-store").replace("=sim-log", f"={tmp}/sim-log")
    )
    return cfg


def write_cfg(tmp: Path) -> Path:
    cfg = tmp / "sim.cfg"
    cfg.write_text(SIM_CFG.format(store=tmp / "sim-store", log=tmp / "sim-log"))
    return cfg


class SimProcess:
    """A running ``qwconsole sim`` and the port it printed."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int, sessions: str) -> None:
        self.proc = proc
        self.port = port
        self.sessions = sessions

    async def stop(self) -> str:
        """SIGTERM; return stdout after the port line; the exit must be clean."""
        self.proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(self.proc.communicate(), 30)
        assert self.proc.returncode == 0, err.decode()
        assert b"Traceback" not in err, err.decode()
        return out.decode()


async def start_sim(cfg: Path, *args: str) -> SimProcess:
    assert QWCONSOLE.exists(), f"{QWCONSOLE}: the package is not installed in this environment"
    proc = await asyncio.create_subprocess_exec(
        str(QWCONSOLE),
        "sim",
        "--cfg",
        str(cfg),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), STARTUP_S)).decode().rstrip("\n")
    m = LISTENING.match(line)
    if m is None:
        proc.kill()
        _out, err = await proc.communicate()
        raise AssertionError(f"no port line: {line!r}; stderr: {err.decode()}")
    return SimProcess(proc, int(m.group(1)), m.group(2))


class Client(Application):
    """Collects application messages and the counterparty's Logon sequence numbers."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[FixMessage] = asyncio.Queue()
        self.logon_seqs: list[int] = []
        self.logouts: list[str] = []

    def from_admin(self, message: FixMessage, session_id: SessionID) -> None:
        if message.msg_type == b"A":
            self.logon_seqs.append(message.get_int(34) or 0)
        elif message.msg_type == b"5":
            self.logouts.append((message.get(58) or b"").decode())

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.inbox.put_nowait(message)

    async def next(self, *types: bytes, within: float = 10.0) -> FixMessage:
        """Return the next application message of one of ``types`` (others are skipped)."""
        async with asyncio.timeout(within):
            while True:
                msg = await self.inbox.get()
                if msg.msg_type in types:
                    return msg


def client_session(tmp: Path, app: Client, begin: str = "FIX.4.4") -> FixSession:
    config = SessionSettings(
        begin_string=begin,
        sender_comp_id="CLIENT1",
        target_comp_id="EXECUTOR",
        connection_type="initiator",
        heart_bt_int=5,
    )
    store = FileStore(tmp / "client-store", config.session_id.file_prefix)
    return FixSession(config, store, app)


@contextlib.asynccontextmanager
async def connected(session: FixSession, port: int) -> AsyncIterator[SocketInitiator]:
    initiator = SocketInitiator(session, [("127.0.0.1", port)], reconnect_interval=0.2)
    await initiator.start()
    try:
        await initiator.wait_logged_on(20)
        yield initiator
    finally:
        await initiator.stop()


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H:%M:%S.%f")[:-3]


def new_order(clordid: str, symbol: str, side: str, qty: str, price: str | None) -> OutMessage:
    body = [(11, clordid), (21, "1"), (38, qty), (40, "2" if price else "1")]
    if price:
        body.append((44, price))
    body += [(54, side), (55, symbol), (59, "0"), (60, now_text())]
    return OutMessage("D", body)


async def best_ask(session: FixSession, app: Client, symbol: str) -> Decimal:
    request = OutMessage("V", [(262, f"md-{symbol}"), (263, "0"), (264, "5")])
    request.add_group(267, [[(269, "0")], [(269, "1")]])
    request.add_group(146, [[(55, symbol)]])
    assert session.send(request)
    snap = await app.next(b"W")
    sides = snap.get_all(269)
    prices = [Decimal(p.decode()) for p in snap.get_all(270)]
    return min(p for s, p in zip(sides, prices, strict=True) if s == b"1")


def dec(msg: FixMessage, tag: int) -> Decimal:
    value = msg.get(tag)
    assert value is not None, f"no tag {tag} in {msg!r}"
    return Decimal(value.decode())


async def fills_of(app: Client, clordid: bytes) -> list[FixMessage]:
    """Collect the reports of ``clordid`` until it is filled, or no more come for 2 s."""
    reports: list[FixMessage] = []
    with contextlib.suppress(TimeoutError):
        while not reports or reports[-1].get(39) != b"2":
            msg = await app.next(b"8", within=2.0 if reports else 10.0)
            if msg.get(11) == clordid:
                reports.append(msg)
    return reports


async def test_client_trades_against_the_sim_and_rejects_say_why(tmp_path: Path) -> None:
    sim = await start_sim(write_cfg(tmp_path), "--port", "0")
    assert sim.sessions == "FIX.4.4:EXECUTOR->CLIENT1, FIX.4.2:EXECUTOR->CLIENT1"
    app = Client()
    session = client_session(tmp_path, app)
    try:
        async with connected(session, sim.port):
            ask = await best_ask(session, app, "ESZ6")
            # A buy limit four ticks through the best ask crosses the book.
            assert session.send(new_order("o1", "ESZ6", "1", "2", str(ask + Decimal("1.00"))))
            reports = await fills_of(app, b"o1")
            assert reports[0].get(150) == b"0"
            assert reports[0].get(58) is None  # an ack has nothing to explain (was "reason 0")
            fills = [r for r in reports if r.get(150) == b"F"]
            assert fills, reports
            assert sum(dec(f, 32) for f in fills) == dec(reports[-1], 14)
            assert all(dec(f, 31) <= ask + 1 for f in fills)
            assert all(f.get(58) is None for f in fills)
            # Rejects and cancels say why, in words.
            session.send(new_order("o2", "ESZ6", "1", "1", "6000.10"))
            rej = await app.next(b"8")
            assert (rej.get(11), rej.get(150), rej.get(39)) == (b"o2", b"8", b"8")
            assert rej.get(58) == b"price 6000.10 is not a multiple of the tick size 0.25 of ESZ6"
            session.send(new_order("o2q", "ESZ6", "1", "1.5", "6000.25"))
            rej = await app.next(b"8")
            assert rej.get(58) == b"quantity 1.5 is not a multiple of the lot size 1 of ESZ6"
            session.send(new_order("o3", "IBM", "1", "1", "100"))
            rej = await app.next(b"8")
            assert rej.get(58) == b"unknown symbol 'IBM' (listed here: ESZ6, NQZ6, CLF7)"
            session.send(new_order("o4", "ESZ6", "2", "1", str(ask + 100)))  # rests far away
            assert (await app.next(b"8")).get(150) == b"0"
            cancel = [(11, "o5"), (41, "o4"), (54, "2"), (55, "ESZ6"), (60, now_text())]
            session.send(OutMessage("F", cancel))
            canceled = await app.next(b"8")
            assert (canceled.get(150), canceled.get(58)) == (b"4", b"canceled on request")
            cancel = [(11, "o6"), (41, "nope"), (54, "2"), (55, "ESZ6"), (60, now_text())]
            session.send(OutMessage("F", cancel))
            refused = await app.next(b"9")
            assert refused.get(58) == b"unknown order: no order with ClOrdID 'nope'"
    finally:
        out = await sim.stop()
        session.close()
    assert out.strip() == "sim: stopped"
    assert app.logouts == [""]  # the simulator answered our Logout


@pytest.mark.parametrize("begin", ["FIX.4.2", "FIX.4.3"])
async def test_older_versions_get_reports_their_dictionary_accepts(
    tmp_path: Path, begin: str
) -> None:
    """Fills on FIX.4.2 (ExecType 1/2, ExecTransType) and 4.3 (no LastLiquidityInd)."""
    sim = await start_sim(shipped_cfg_in(tmp_path), "--port", "0")
    app = Client()
    session = client_session(tmp_path, app, begin)  # validates with the shipped dictionary
    try:
        async with connected(session, sim.port):
            session.send(new_order("v1", "NQZ6", "1", "2", None))  # a market order
            reports = await fills_of(app, b"v1")
            assert reports[0].get(150) == b"0"
            assert [r for r in reports if r.get(32)]
            assert reports[-1].get(39) == b"2"
            assert reports[-1].get(150) == (b"2" if begin == "FIX.4.2" else b"F")
            assert all(r.get(851) is None for r in reports)
    finally:
        await sim.stop()
        session.close()
    prefix = f"{begin}-EXECUTOR-CLIENT1"
    incoming = (tmp_path / "sim-log" / f"{prefix}.incoming.log").read_bytes()
    assert b"\x0135=3\x01" not in incoming  # our validating client rejected nothing


async def test_restarted_sim_resumes_sequence_numbers_and_resends(tmp_path: Path) -> None:
    cfg = write_cfg(tmp_path)
    sim = await start_sim(cfg, "--port", "0")
    port = sim.port
    app = Client()
    session = client_session(tmp_path, app)
    try:
        async with connected(session, port):
            ask = await best_ask(session, app, "NQZ6")
            session.send(new_order("r1", "NQZ6", "1", "1", str(ask + 1)))
            first = await fills_of(app, b"r1")
            assert any(r.get(150) == b"F" for r in first)
        # The client logged out; the simulator keeps running, then is stopped with SIGTERM.
        await sim.stop()
        seq_out, seq_in = session.next_sender_seq_num, session.next_target_seq_num
        assert app.logon_seqs == [1]
        # Forget the last three messages the simulator sent: after its restart it must
        # resend them from its FileStore.
        session.set_next_target_seq_num(seq_in - 3)
        sim = await start_sim(cfg, "--port", str(port))  # the same FileStorePath and port
        assert sim.port == port
        async with connected(session, port):
            # The simulator's Logon continues its numbering (no reset to 1) ...
            assert app.logon_seqs == [1, seq_in]
            # ... and it resent what it sent before the restart, as possible duplicates.
            resent = await app.next(b"8")
            assert resent.get(43) == b"Y"
            assert resent.get(17) in {r.get(17) for r in first}
            assert resent.seq_num is not None
            assert seq_in - 3 <= resent.seq_num < seq_in
            assert session.next_sender_seq_num > seq_out  # our Logon was accepted as is
            # Trading goes on in the same session.
            ask = await best_ask(session, app, "NQZ6")
            session.send(new_order("r2", "NQZ6", "1", "1", str(ask + 1)))
            second = await fills_of(app, b"r2")
            assert any(r.get(150) == b"F" for r in second)
            assert session.is_logged_on
        assert app.logouts[-1] == ""  # a normal logout at the end, not "MsgSeqNum too low"
    finally:
        await sim.stop()
        session.close()
    exec_ids = [r.get(17) for r in first + second]
    assert len(set(exec_ids)) == len(exec_ids)  # each run its own ExecID epoch
    events = b"".join(p.read_bytes() for p in (tmp_path / "sim-log").glob("*.event.log"))
    assert b"MsgSeqNum too low" not in events
    assert b"Received ResendRequest" in events
    incoming = (tmp_path / "sim-log" / "FIX.4.4-EXECUTOR-CLIENT1.incoming.log").read_bytes()
    assert b"\x0135=2\x01" in incoming  # the ResendRequest


async def test_cancel_on_disconnect_reaches_the_client_after_its_next_logon(
    tmp_path: Path,
) -> None:
    sim = await start_sim(write_cfg(tmp_path), "--port", "0")
    app = Client()
    session = client_session(tmp_path, app)
    try:
        async with connected(session, sim.port):
            ask = await best_ask(session, app, "CLF7")
            session.send(new_order("k1", "CLF7", "2", "1", str(ask + 5)))  # rests
            ack = await app.next(b"8")
            assert (ack.get(11), ack.get(150)) == (b"k1", b"0")
        # Logged out: the simulator cancels k1 and keeps the report for the next logon.
        async with connected(session, sim.port):
            resent = await app.next(b"8")
            assert (resent.get(11), resent.get(150), resent.get(43)) == (b"k1", b"4", b"Y")
            assert resent.get(58) == (
                b"canceled: the client's session disconnected (cancel on disconnect)"
            )
            # A status request for the finished order answers its final state.
            session.send(OutMessage("H", [(11, "k1"), (54, "2"), (55, "CLF7")]))
            status = await app.next(b"8")
            assert (status.get(11), status.get(150), status.get(39)) == (b"k1", b"I", b"4")
            # Orders do not outlive the simulator: stopping it cancels them, saying so.
            session.send(new_order("k2", "CLF7", "2", "1", str(ask + 5)))
            assert (await app.next(b"8")).get(150) == b"0"
            await sim.stop()
            closed = await app.next(b"8")
            assert (closed.get(11), closed.get(150), closed.get(58)) == (
                b"k2",
                b"4",
                b"canceled: the exchange simulator stopped",
            )
    finally:
        if sim.proc.returncode is None:
            await sim.stop()
        session.close()


@pytest.mark.parametrize(
    ("cfg_text", "extra", "message"),
    [
        (None, (), "missing.cfg: no such file"),
        (
            "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=A\nTargetCompID=B\n"
            "ConnectionType=acceptor\nSocketAcceptPort=5001\nHeartBtInt=abc\nNonStopSession=Y\n",
            (),
            "bad.cfg:7: HeartBtInt: 'abc' is not an integer",
        ),
        (
            "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=A\nTargetCompID=B\n"
            "ConnectionType=initiator\nSocketConnectHost=127.0.0.1\nSocketConnectPort=5001\n"
            "HeartBtInt=30\nNonStopSession=Y\n",
            (),
            "bad.cfg: no acceptor session (1 initiator sessions; the simulator needs "
            "ConnectionType=acceptor)",
        ),
        (
            "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=A\nTargetCompID=B\n"
            "ConnectionType=acceptor\nSocketAcceptPort=0\nNonStopSession=Y\n"
            "DataDictionary=nowhere.xml\n",
            (),
            "bad.cfg:1: session FIX.4.4:A->B: ",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, cfg_text: str | None, extra: tuple[str, ...], message: str
) -> None:
    cfg = tmp_path / ("missing.cfg" if cfg_text is None else "bad.cfg")
    if cfg_text is not None:
        cfg.write_text(cfg_text)
    proc = subprocess.run(
        [str(QWCONSOLE), "sim", "--cfg", str(cfg), *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"qwconsole sim: error: {tmp_path}/{message}"), lines[0]
    assert proc.stdout == ""


def test_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [str(QWCONSOLE), "sim", "--cfg", str(write_cfg(tmp_path)), "--port", str(port)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"qwconsole sim: error: cannot listen on 127.0.0.1:{port}: address already in use"
    ]
    assert proc.stdout == ""


def test_socket_accept_port_0_picks_free_ports_and_seconds_stops(tmp_path: Path) -> None:
    cfg = tmp_path / "zero.cfg"
    cfg.write_text(
        "[DEFAULT]\nConnectionType=acceptor\nNonStopSession=Y\nSocketAcceptPort=0\n"
        "ResetOnLogon=Y\n\n"
        "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=S\nTargetCompID=A\n\n"
        "[SESSION]\nBeginString=FIX.4.2\nSenderCompID=S\nTargetCompID=B\n"
    )
    proc = subprocess.run(
        [str(QWCONSOLE), "sim", "--cfg", str(cfg), "--seconds", "0.5"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    first, last = proc.stdout.splitlines()
    m = LISTENING.match(first)
    assert m is not None, proc.stdout
    assert int(m.group(1)) > 0
    assert m.group(2) == "FIX.4.4:S->A, FIX.4.2:S->B"  # one socket for both
    assert last == "sim: stopped"
    assert proc.stderr == ""  # ResetOnLogon=Y: no warning about the memory stores


def test_shipped_example_cfg_serves_quickfix_example_clients(tmp_path: Path) -> None:
    """The shipped resources/sim/sim.cfg listens for tradeclient and Banzai; SIGINT stops it."""
    proc = subprocess.Popen(
        [str(QWCONSOLE), "sim", "--cfg", str(SHIPPED_CFG), "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().rstrip("\n")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    m = LISTENING.match(line)
    assert m is not None, (line, err)
    assert m.group(2).split(", ") == [
        "FIX.4.2:EXECUTOR->CLIENT1", "FIX.4.3:EXECUTOR->CLIENT1", "FIX.4.4:EXECUTOR->CLIENT1",
        "FIX.4.2:TW->CLIENT1",
        "FIX.4.2:EXEC->BANZAI", "FIX.4.3:EXEC->BANZAI", "FIX.4.4:EXEC->BANZAI",
    ]  # fmt: skip
    assert out == "sim: stopped\n"
    # Relative FileStorePath/FileLogPath are taken from the working directory (as QuickFIX).
    assert (tmp_path / "sim-store").is_dir()
    assert (tmp_path / "sim-log").is_dir()


MARKET_MAKER = """
[[strategies]]
id = 7
class = "MarketMaker"
symbols = ["ESZ6"]
[strategies.parameters]
qty_lots = 1
half_spread_ticks = 1
"""


def test_headless_engine_trades_against_a_separate_sim_process(tmp_path: Path) -> None:
    """``qwconsole engine --config`` with a sessions .cfg pointing at ``qwconsole sim``."""
    sim_dir = tmp_path / "sim"
    sim_dir.mkdir()
    sim = subprocess.Popen(
        [str(QWCONSOLE), "sim", "--cfg", str(write_cfg(sim_dir)), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    engine = None
    try:
        assert sim.stdout is not None
        m = LISTENING.match(sim.stdout.readline().rstrip("\n"))
        assert m is not None, "the simulator did not start"
        write_engine(
            tmp_path,
            port=int(m.group(1)),
            sender="CLIENT1",
            target="EXECUTOR",
            engine_id="against-sim",
            strategies=MARKET_MAKER,
        )
        engine = subprocess.Popen(
            [
                str(QWCONSOLE),
                "engine",
                "--config",
                str(tmp_path / "engine.toml"),
                "--interval",
                "0.5",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        fills = wait_for_fills(engine)
        assert fills > 0, "no fills" if engine.poll() is None else engine.communicate()[1]
        engine.send_signal(signal.SIGTERM)
        out, err = engine.communicate(timeout=30)
        assert engine.returncode == 0, err
        assert "engine stopped cleanly" in out
    finally:
        for p in (engine, sim):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.communicate(timeout=30)
    assert sim.returncode == 0
    events = b"".join(p.read_bytes() for p in (sim_dir / "sim-log").glob("*.event.log"))
    assert b"Received logon request" in events


#: The versions QuickFIX's tradeclient trades on against the shipped configuration.
VERSIONS = ("FIX.4.2", "FIX.4.3", "FIX.4.4")

QUICKFIX_CLIENT_CFG = """\
[DEFAULT]
ConnectionType=initiator
HeartBtInt=30
ReconnectInterval=1
FileStorePath={tmp}/qf-store
FileLogPath={tmp}/qf-log
StartTime=00:00:00
EndTime=00:00:00
UseDataDictionary=Y
SocketConnectHost=127.0.0.1
SocketConnectPort={port}

[SESSION]
BeginString=FIX.4.2
SenderCompID=CLIENT1
TargetCompID=EXECUTOR
DataDictionary={spec}/FIX42.xml

[SESSION]
BeginString=FIX.4.3
SenderCompID=CLIENT1
TargetCompID=EXECUTOR
DataDictionary={spec}/FIX43.xml

[SESSION]
BeginString=FIX.4.4
SenderCompID=CLIENT1
TargetCompID=EXECUTOR
DataDictionary={spec}/FIX44.xml
"""


class QuickFixRecorder:
    """What a QuickFIX application saw (its callbacks run on QuickFIX's threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.logged_on: list[str] = []
        self.reports: list[dict[int, str]] = []
        self.rejects: list[str] = []

    def wait_for(self, check: Callable[[], bool], within: float = 20.0) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.lock:
                if check():
                    return True
            time.sleep(0.05)
        return False


def quickfix_application(fix: Any, seen: QuickFixRecorder) -> Any:
    """Return a ``quickfix.Application`` recording into ``seen`` (QuickFIX's method names)."""

    class Recorder(fix.Application):  # type: ignore[misc]
        def onCreate(self, session_id: Any) -> None:
            pass

        def onLogon(self, session_id: Any) -> None:
            with seen.lock:
                seen.logged_on.append(str(session_id))

        def onLogout(self, session_id: Any) -> None:
            pass

        def toAdmin(self, message: Any, session_id: Any) -> None:
            pass

        def fromAdmin(self, message: Any, session_id: Any) -> None:
            if message.getHeader().getField(35) == "3":
                with seen.lock:
                    seen.rejects.append(message.toString())

        def toApp(self, message: Any, session_id: Any) -> None:
            pass

        def fromApp(self, message: Any, session_id: Any) -> None:
            tags = (11, 14, 31, 32, 39, 58, 150)
            fields = {t: message.getField(t) for t in tags if message.isSetField(t)}
            fields[8] = message.getHeader().getField(8)
            with seen.lock:
                seen.reports.append(fields)

    return Recorder()


def quickfix_order(fix: Any, begin: str, clordid: str, ord_type: str, price: str | None) -> Any:
    msg = fix.Message()
    header = msg.getHeader()
    for tag, value in ((8, begin), (35, "D"), (49, "CLIENT1"), (56, "EXECUTOR")):
        header.setField(tag, value)
    for tag, value in (
        (11, clordid),
        (21, "1"),
        (38, "1"),
        (40, ord_type),
        (54, "1"),
        (55, "ESZ6"),
        (59, "0"),
        (60, now_text()),
    ):
        msg.setField(tag, value)
    if price is not None:
        msg.setField(44, price)
    return msg


def test_quickfix_initiator_trades_against_the_shipped_cfg(tmp_path: Path) -> None:
    """QuickFIX (its Python binding) as tradeclient, validating with the dictionaries."""
    fix = pytest.importorskip("quickfix")
    sim = subprocess.Popen(
        [str(QWCONSOLE), "sim", "--cfg", str(SHIPPED_CFG), "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    initiator = None
    seen = QuickFixRecorder()
    try:
        assert sim.stdout is not None
        m = LISTENING.match(sim.stdout.readline().rstrip("\n"))
        assert m is not None, "the simulator did not start"
        cfg = tmp_path / "tradeclient.cfg"
        cfg.write_text(
            QUICKFIX_CLIENT_CFG.format(tmp=tmp_path, port=m.group(1), spec=ROOT / "resources/fix")
        )
        settings = fix.SessionSettings(str(cfg))
        initiator = fix.SocketInitiator(
            quickfix_application(fix, seen),
            fix.FileStoreFactory(settings),
            settings,
            fix.FileLogFactory(settings),
        )
        initiator.start()
        assert seen.wait_for(lambda: len(seen.logged_on) == len(VERSIONS)), seen.logged_on
        for begin in VERSIONS:
            v = begin[-1]
            assert fix.Session.sendToTarget(quickfix_order(fix, begin, f"m{v}", "1", None))
            assert fix.Session.sendToTarget(quickfix_order(fix, begin, f"b{v}", "2", "6000.10"))
        # Each market order is acked and filled; each off-grid limit rejected with the reason.
        assert seen.wait_for(
            lambda: (
                sum(r.get(39) == "2" for r in seen.reports) == len(VERSIONS)
                and sum(r.get(150) == "8" for r in seen.reports) == len(VERSIONS)
            )
        ), seen.reports
    finally:
        if initiator is not None:
            initiator.stop()
        sim.send_signal(signal.SIGTERM)
        sim.communicate(timeout=30)
    assert sim.returncode == 0
    assert seen.rejects == []  # QuickFIX found nothing wrong with any report
    for begin in VERSIONS:
        v = begin[-1]
        mine = [r for r in seen.reports if r[8] == begin]
        fills = [r for r in mine if r.get(11) == f"m{v}" and r.get(32)]
        assert sum(Decimal(r[32]) for r in fills) == 1
        (rejected,) = [r for r in mine if r.get(11) == f"b{v}"]
        assert rejected[58] == "price 6000.10 is not a multiple of the tick size 0.25 of ESZ6"
