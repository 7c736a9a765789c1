# SPDX-License-Identifier: MIT
"""A real headless engine process (``qwconsole engine --config``) and consoles over TLS.

Covers the issue's acceptance list: refused logins (none, wrong, expired), roles (a viewer
cannot order, a trader cannot change risk limits), the audit log, and killing the engine:
the console shows it disconnected, and after a restart it resumes with an unbroken stream.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.client import ClientState, EngineStartError
from engine.commands import CommandAck, CommandError, SetRiskLimits, SubmitOrder
from engine.enums import Side
from engine.events import EngineHeartbeat, EventRecord, InstrumentAdded, OrderChanged
from engine.remote.client import Backoff, RemoteEngineClient
from engine.remote.tls import PinStore
from engine.remote.tokens import TokenStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
[engine]
id = "remote-test"
heartbeat_interval_ms = 200

[files]
journal_dir = "journal"
store_dir = "fix"
logs_dir = "logs"

[simulator]
enabled = true

[risk]
max_order_qty_lots = 50

[remote]
enabled = true
port = {port}
tls_cert = "engine.crt"
tls_key = "engine.key"
token_store = "tokens.toml"
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EngineProcess:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = _free_port()
        (folder / "engine.toml").write_text(CONFIG.format(port=self.port))
        self.tokens = TokenStore(folder / "tokens.toml")
        self._cli("cert", "--config", str(folder / "engine.toml"))
        self.proc: subprocess.Popen[str] | None = None

    def _cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "app", "engine", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout

    def token(self, name: str, role: str, expires_ns: int = 0) -> str:
        if expires_ns:
            return self.tokens.add(name, role, 1, expires_ns)
        out = self._cli(
            "token", "--config", str(self.folder / "engine.toml"), "add", name, "--role", role
        )
        return out.strip()

    def start(self) -> None:
        n = len(list(self.folder.glob("stdout-*.txt")))
        out = self.folder / f"stdout-{n}.txt"
        with out.open("w") as o, (self.folder / f"stderr-{n}.txt").open("w") as e:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app",
                    "engine",
                    "--config",
                    str(self.folder / "engine.toml"),
                    "--interval",
                    "0.5",
                ],
                cwd=ROOT,
                stdout=o,
                stderr=e,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.stderr = self.folder / f"stderr-{n}.txt"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "remote server on wss://127.0.0.1:" in out.read_text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"engine did not start: {self.stderr.read_text()}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> tuple[int, str]:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        return self.proc.returncode, self.stderr.read_text()

    def client(self, token: str, **kw: object) -> RemoteEngineClient:
        pins = PinStore(self.folder / "console" / "known-engines.json")
        return RemoteEngineClient(
            "127.0.0.1", self.port, token, tls=True, pins=pins, backoff=Backoff(0.1, 1.0), **kw
        )  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def engine_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineProcess]:
    ep = EngineProcess(tmp_path_factory.mktemp("engine"))
    ep.start()
    yield ep
    if ep.proc is not None and ep.proc.poll() is None:
        code, err = ep.stop()
        assert code == 0, err
        assert "Traceback" not in err
    # Logs went to files: the engine's own log and the audit log.
    log_text = (ep.folder / "logs" / "engine.log").read_text()
    assert "remote server listening on 127.0.0.1" in log_text
    assert "engine stopped cleanly" in log_text
    assert (ep.folder / "logs" / "audit.log").stat().st_size > 0


def _wait(pred: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def test_no_token_wrong_token_and_expired_token_are_refused(engine_proc: EngineProcess) -> None:
    expired = engine_proc.token("gone", "admin", expires_ns=2)
    good = engine_proc.token("v1", "viewer")
    cases = [
        ("", "token refused"),
        (good[:-4] + "AAAA", "token refused"),
        (expired, "token 'gone' expired"),
    ]
    for token, why in cases:
        client = engine_proc.client(token)
        with pytest.raises(EngineStartError, match=why):
            client.start(timeout_s=30)
        assert client.state is ClientState.DISCONNECTED


def test_viewer_cannot_order_trader_can(engine_proc: EngineProcess) -> None:
    viewer = engine_proc.client(engine_proc.token("v2", "viewer"))
    trader = engine_proc.client(engine_proc.token("t2", "trader"))
    viewer.start(timeout_s=30)
    trader.start(timeout_s=30)
    try:
        order = SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=1, px_ticks=23_000)
        res = viewer.send(order).result(10)
        assert isinstance(res, CommandError)
        assert "role viewer may not send SubmitOrder" in res.reason
        res = trader.send(order).result(10)
        assert isinstance(res, CommandAck), res
        seen: list[EventRecord] = []

        def order_seen() -> bool:
            seen.extend(viewer.drain())
            return any(
                isinstance(r.event, OrderChanged)
                and r.event.order.strategy_id == 0
                and r.event.order.px_ticks == 23_000
                for r in seen
            )

        _wait(order_seen)  # the viewer watches the trader's order
    finally:
        viewer.close()
        trader.close()
    audit = [
        json.loads(x) for x in (engine_proc.folder / "logs/audit.log").read_text().splitlines()
    ]
    orders = [(a["user"], a["result"]) for a in audit if a.get("kind") == "SubmitOrder"]
    assert ("v2", "forbidden") in orders
    assert ("t2", "ack") in orders


def test_trader_cannot_change_risk_limits_admin_can(engine_proc: EngineProcess) -> None:
    trader = engine_proc.client(engine_proc.token("t3", "trader"))
    admin = engine_proc.client(engine_proc.token("a3", "admin"))
    trader.start(timeout_s=30)
    admin.start(timeout_s=30)
    try:
        res = trader.send(SetRiskLimits(max_order_qty_lots=10_000)).result(10)
        assert isinstance(res, CommandError)
        assert "role trader may not send SetRiskLimits" in res.reason
        big = SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=60, px_ticks=23_000)
        res = trader.send(big).result(10)
        assert isinstance(res, CommandError)
        assert "max_order_qty" in res.reason
        res = admin.send(SetRiskLimits(max_order_qty_lots=100)).result(10)
        assert isinstance(res, CommandAck), res
        res = trader.send(big).result(10)
        assert isinstance(res, CommandAck), res  # the new limit is in force
        admin.send(SetRiskLimits(max_order_qty_lots=50)).result(10)
    finally:
        trader.close()
        admin.close()


def test_killed_engine_shows_disconnected_and_restart_resumes_without_gap(
    engine_proc: EngineProcess,
) -> None:
    client = engine_proc.client(engine_proc.token("v4", "viewer"))
    client.start(timeout_s=30)
    records: list[EventRecord] = []
    try:

        def some() -> bool:
            records.extend(client.drain())
            return len(records) > 50

        _wait(some)
        engine_proc.kill()
        _wait(lambda: client.state is ClientState.DISCONNECTED, 20)
        assert client.last_error
        records.extend(client.drain())
        before = len(records)
        engine_proc.start()
        _wait(lambda: client.state is ClientState.CONNECTED and client.connects >= 2, 60)

        def beats_after_restart() -> bool:
            records.extend(client.drain())
            return sum(isinstance(r.event, EngineHeartbeat) for r in records[before:]) >= 3

        _wait(beats_after_restart, 20)
    finally:
        client.close()
    seqs = [r.seq for r in records]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "gap or duplicate"
    after = [r.event for r in records[before:]]
    # The fresh snapshot of the new run comes first: the instruments are known again.
    assert any(isinstance(e, InstrumentAdded) for e in after[:50])
    assert client.resyncs == 1


def test_frozen_engine_is_noticed_and_the_stream_resumes_without_snapshot(
    engine_proc: EngineProcess,
) -> None:
    client = engine_proc.client(engine_proc.token("v5", "viewer"), stall_timeout_s=2.0)
    client.start(timeout_s=30)
    records: list[EventRecord] = []

    def some(n: int) -> Callable[[], bool]:
        def enough() -> bool:
            records.extend(client.drain())
            return len(records) > n

        return enough

    assert engine_proc.proc is not None
    try:
        _wait(some(20))
        engine_proc.proc.send_signal(signal.SIGSTOP)  # alive but silent: no close, no RST
        _wait(lambda: client.state is not ClientState.CONNECTED, 10)
        assert "silent" in client.last_error
        engine_proc.proc.send_signal(signal.SIGCONT)
        _wait(lambda: client.state is ClientState.CONNECTED and client.connects >= 2, 30)
        n = len(records)
        _wait(some(n + 20))
    finally:
        engine_proc.proc.send_signal(signal.SIGCONT)
        client.close()
    seqs = [r.seq for r in records]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "gap or duplicate"
    assert client.resyncs == 0  # same engine run: resumed after the last event it had
