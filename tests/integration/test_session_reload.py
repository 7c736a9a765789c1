# SPDX-License-Identifier: MIT
"""Reloading a running FIX session from its ``.cfg`` (``ReloadSession``), over real FIX on loopback.

The engine runs from an engine TOML whose ``[sessions] file`` names the ``.cfg``; its initiator
logs on to an acceptor in this process. Editing HeartBtInt in the file and reloading shows the
new value in the next Logon the engine sends; a broken file is refused with its file, line and
key while the session keeps running. Over the remote server only an admin may reload.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.commands import CommandAck, CommandError, ReloadSession
from engine.config.reader import load_config
from engine.core import Engine
from engine.embedded import EmbeddedEngineClient
from engine.enums import SessionState
from engine.events import SessionStatusChanged
from engine.fix.acceptance_app import AcceptanceApplication
from engine.fix.cli import build_session
from engine.fix.dictionary import default_dictionary_path
from engine.fix.settings import load_settings
from engine.fix.transport import SocketAcceptor
from engine.headless import build_from_config
from engine.remote.client import RemoteEngineClient
from engine.remote.tokens import TokenStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SID = "FIX.4.4:QW->EXCH"

ACCEPTOR_CFG = """\
[DEFAULT]
ConnectionType=acceptor
NonStopSession=Y
SocketAcceptPort=1

[SESSION]
BeginString=FIX.4.4
SenderCompID=EXCH
TargetCompID=QW
"""

SESSIONS_CFG = """\
# The engine's venue session.
[DEFAULT]
ConnectionType=initiator
NonStopSession=Y
ReconnectInterval=1
FileLogPath={logs}
{store}SocketConnectHost=127.0.0.1
SocketConnectPort={port}

[SESSION]
BeginString=FIX.4.4
SenderCompID=QW
TargetCompID=EXCH
HeartBtInt=30
"""

ENGINE_TOML = """\
[engine]
id = "reload-test"

[sessions]
file = "sessions.cfg"

[[instruments]]
symbol = "ESZ6"
tick_size = "0.25"
multiplier = "50"
session = "FIX.4.4:QW->EXCH"
"""


class Acceptor:
    """The counterparty: the engine's own acceptor on 127.0.0.1, in a thread with its loop."""

    def __init__(self, folder: Path) -> None:
        cfg = folder / "acceptor.cfg"
        cfg.write_text(ACCEPTOR_CFG)
        self.loop = asyncio.new_event_loop()
        sessions = [
            build_session(s, AcceptanceApplication(), folder) for s in load_settings(cfg).sessions
        ]
        self.acceptor = SocketAcceptor(sessions, host="127.0.0.1", port=0)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.acceptor.start(), self.loop).result(5)

    @property
    def port(self) -> int:
        return self.acceptor.port

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.acceptor.stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def sent(folder: Path, msg_type: str) -> list[str]:
    """Return the messages of ``msg_type`` the engine sent, from its FIX log, SOH as ``|``."""
    path = folder / "logs" / "FIX.4.4-QW-EXCH.outgoing.log"
    if not path.exists():
        return []
    lines = path.read_bytes().decode("latin-1").replace("\x01", "|").splitlines()
    return [line for line in lines if f"|35={msg_type}|" in line]


def wait_for(condition: object, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


class States:
    """The session states the engine published, in order."""

    def __init__(self, client: EmbeddedEngineClient | RemoteEngineClient) -> None:
        self.client = client
        self.seen: list[SessionState] = []
        self.dictionaries: list[str] = []
        self.files: set[str] = set()

    def poll(self) -> SessionState | None:
        for r in self.client.drain():
            if isinstance(r.event, SessionStatusChanged) and r.event.session_id == SID:
                self.seen.append(r.event.state)
                self.dictionaries.append(r.event.dictionary)
                self.files.add(r.event.settings_file)
        return self.seen[-1] if self.seen else None


@pytest.mark.parametrize("store", ["memory", "file"])
def test_reload_applies_the_new_heartbeat_and_refuses_a_broken_file(
    tmp_path: Path, store: str
) -> None:
    acceptor = Acceptor(tmp_path)
    cfg_path = tmp_path / "sessions.cfg"
    store_line = f"FileStorePath={tmp_path / 'store'}\n" if store == "file" else ""
    cfg_path.write_text(
        SESSIONS_CFG.format(port=acceptor.port, logs=tmp_path / "logs", store=store_line)
    )
    line = 10 + (store == "file")
    (tmp_path / "engine.toml").write_text(ENGINE_TOML)
    cfg = load_config(tmp_path / "engine.toml")

    def configure(engine: Engine) -> None:
        build_from_config(engine, cfg)

    client = EmbeddedEngineClient(configure=configure)
    client.start()
    try:
        states = States(client)
        wait_for(lambda: states.poll() is SessionState.LOGGED_ON)
        wait_for(lambda: len(sent(tmp_path, "A")) == 1)
        assert "|108=30|" in sent(tmp_path, "A")[0]
        assert states.files == {str(cfg_path.absolute())}  # the Manager opens it by default

        # Edit the file as the Manager does (the key's line only) and reload.
        cfg_path.write_text(cfg_path.read_text().replace("HeartBtInt=30", "HeartBtInt=7"))
        answer = client.send(ReloadSession(session_id=SID)).result(5)
        assert isinstance(answer, CommandAck), answer
        assert answer.detail == (
            f"reloaded from {cfg_path} ([SESSION] at line {line}): HeartBtInt 30 → 7; "
            f"logging out, then on again to 127.0.0.1:{acceptor.port}"
        )
        wait_for(lambda: len(sent(tmp_path, "A")) == 2)
        logons = sent(tmp_path, "A")
        assert "|108=7|" in logons[1]
        assert len(sent(tmp_path, "5")) == 1  # it logged out before logging on again
        wait_for(
            lambda: (
                states.poll() is SessionState.LOGGED_ON
                and states.seen.count(SessionState.LOGGED_ON) >= 2
            )
        )
        # The sequence numbers carried on: the second Logon follows the Logout.
        seq = [int(re.search(r"\|34=(\d+)\|", m).group(1)) for m in logons]  # type: ignore[union-attr]
        assert seq[1] > seq[0] + 1

        # A broken file is refused with file, line and key; the session keeps running.
        good = cfg_path.read_text()
        cfg_path.write_text(good.replace("HeartBtInt=7", "HeartBtInt=often"))
        refused = client.send(ReloadSession(session_id=SID)).result(5)
        assert isinstance(refused, CommandError)
        assert refused.reason.startswith(f"{cfg_path}:{line + 4}: HeartBtInt: ")
        assert refused.reason.endswith(f"; {SID} keeps running unchanged")
        # A session whose identity changed in the file is not the running one.
        cfg_path.write_text(good.replace("TargetCompID=EXCH", "TargetCompID=OTHER"))
        gone = client.send(ReloadSession(session_id=SID)).result(5)
        assert isinstance(gone, CommandError)
        assert gone.reason.startswith(
            f"{cfg_path} has no [SESSION] {SID} any more (sessions there: FIX.4.4:QW->OTHER)"
        )
        # A dictionary that does not load is named with its line.
        cfg_path.write_text(good.replace("HeartBtInt=7", "HeartBtInt=7\nDataDictionary=no.xml"))
        bad_dd = client.send(ReloadSession(session_id=SID)).result(5)
        assert isinstance(bad_dd, CommandError)
        assert bad_dd.reason.startswith(
            f"{cfg_path}:{line + 5}: DataDictionary: no.xml: cannot load"
        )
        # A dictionary that loads is applied, and the session's status names its file (the
        # console checks the session's messages against it).
        venue = tmp_path / "FIX44-venue.xml"
        venue.write_text(default_dictionary_path("FIX.4.4").read_text())
        cfg_path.write_text(good.replace("HeartBtInt=7", f"HeartBtInt=7\nDataDictionary={venue}"))
        applied = client.send(ReloadSession(session_id=SID)).result(5)
        assert isinstance(applied, CommandAck), applied
        wait_for(lambda: states.poll() is not None and str(venue.resolve()) in states.dictionaries)
        cfg_path.write_text(good)
        back = client.send(ReloadSession(session_id=SID)).result(5)
        assert isinstance(back, CommandAck), back
        wait_for(lambda: states.poll() is SessionState.LOGGED_ON and states.dictionaries[-1] == "")
        wait_for(lambda: len(sent(tmp_path, "A")) == 4)  # each reload logged on again
        logons_before = 4
        unknown = client.send(ReloadSession(session_id="FIX.4.2:A->B")).result(5)
        assert isinstance(unknown, CommandError)
        assert unknown.reason == f"no FIX session 'FIX.4.2:A->B'; sessions: {SID}"
        time.sleep(0.5)
        states.poll()
        assert states.seen[-1] is SessionState.LOGGED_ON
        assert len(sent(tmp_path, "A")) == logons_before
    finally:
        client.close()
        acceptor.close()


REMOTE_TOML = """\
[engine]
id = "reload-remote"

[sessions]
file = "sessions.cfg"

[[instruments]]
symbol = "ESZ6"
tick_size = "0.25"
multiplier = "50"
session = "FIX.4.4:QW->EXCH"

[remote]
enabled = true
port = 0
token_store = "tokens.toml"
"""


def test_only_an_admin_may_reload_over_the_remote_server(tmp_path: Path) -> None:
    acceptor = Acceptor(tmp_path)
    eng = None
    try:
        cfg_path = tmp_path / "sessions.cfg"
        cfg_path.write_text(
            SESSIONS_CFG.format(port=acceptor.port, logs=tmp_path / "logs", store="")
        )
        (tmp_path / "engine.toml").write_text(REMOTE_TOML)
        tokens = TokenStore(tmp_path / "tokens.toml")
        trader = tokens.add("tess", "trader", now_ns=1)
        admin = tokens.add("ada", "admin", now_ns=1)
        out = tmp_path / "out.txt"
        with out.open("w") as o:
            eng = subprocess.Popen(
                [sys.executable, "-m", "app", "engine", "--config", str(tmp_path / "engine.toml")],
                cwd=ROOT,
                stdout=o,
                stderr=subprocess.STDOUT,
                text=True,
            )
        port = 0

        def listening() -> bool:
            nonlocal port
            found = re.search(r"remote server on ws://127\.0\.0\.1:(\d+)", out.read_text())
            port = int(found.group(1)) if found else 0
            return bool(port)

        wait_for(listening, within=60)
        wait_for(lambda: len(sent(tmp_path, "A")) == 1, within=30)
        cfg_path.write_text(cfg_path.read_text().replace("HeartBtInt=30", "HeartBtInt=9"))
        for token, allowed in ((trader, False), (admin, True)):
            client = RemoteEngineClient("127.0.0.1", port, token, tls=False)
            client.start(timeout_s=30)
            try:
                answer = client.send(ReloadSession(session_id=SID)).result(10)
            finally:
                client.close()
            if allowed:
                assert isinstance(answer, CommandAck), answer
                assert "HeartBtInt 30 → 9" in answer.detail
            else:
                assert isinstance(answer, CommandError)
                assert answer.reason == "forbidden: role trader may not send ReloadSession"
        wait_for(lambda: len(sent(tmp_path, "A")) == 2)
        assert "|108=9|" in sent(tmp_path, "A")[1]
        eng.send_signal(signal.SIGTERM)
        assert eng.wait(30) == 0, out.read_text()
    finally:
        if eng is not None and eng.poll() is None:
            eng.kill()
            eng.wait(10)
        acceptor.close()
