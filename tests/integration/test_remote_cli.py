# SPDX-License-Identifier: MIT
"""``qwconsole engine --config / cert / token`` as real processes: outputs and one-line errors."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.client import ClientState
from engine.enums import SessionState
from engine.events import InstrumentAdded, SessionStatusChanged
from engine.remote.client import RemoteEngineClient
from engine.remote.tls import file_fingerprint
from engine.remote.tokens import TokenStore

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "engine", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_bad_config_is_a_one_line_error_with_file_line_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "engine.toml"
    cfg.write_text('[engine]\nid = "x"\n\n[remote]\nport = 99999\n')
    done = _run("--config", str(cfg))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"qwconsole engine: error: {cfg}:5: remote.port: 99999: must be <= 65535 "
        "(see 'qwconsole engine --help')"
    ]


def test_config_that_cannot_be_built_is_a_one_line_error(tmp_path: Path) -> None:
    cfg = tmp_path / "engine.toml"
    cfg.write_text(
        "[simulator]\nenabled = true\n[[strategies]]\nid = 3\n"
        'class = "engine.strategy.examples:Nope"\n'
    )
    done = _run("--config", str(cfg), "--seconds", "1")
    assert done.returncode == 2
    assert "engine.strategy.examples has no class Nope (strategies there: " in done.stderr
    assert "Traceback" not in done.stderr


def test_cert_writes_a_pair_and_prints_its_fingerprint(tmp_path: Path) -> None:
    done = _run(
        "cert",
        "--cert",
        str(tmp_path / "e.crt"),
        "--key",
        str(tmp_path / "e.key"),
        "--host",
        "ny4-1.example",
    )
    assert done.returncode == 0, done.stderr
    fp = file_fingerprint(tmp_path / "e.crt")
    assert f"SHA-256 fingerprint: {fp}" in done.stdout
    assert (tmp_path / "e.key").stat().st_mode & 0o077 == 0
    again = _run("cert", "--cert", str(tmp_path / "e.crt"), "--key", str(tmp_path / "e.key"))
    assert again.returncode == 2
    assert "exists; remove it first" in again.stderr


def test_token_add_list_remove(tmp_path: Path) -> None:
    store = tmp_path / "tokens.toml"
    done = _run("token", "--store", str(store), "add", "alice", "--role", "trader")
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("qw1.")
    assert token.split(".")[2] not in store.read_text()  # only the hash is stored
    assert store.stat().st_mode & 0o077 == 0
    listed = _run("token", "--store", str(store), "list")
    assert listed.stdout.split()[:2] == ["alice", "trader"]
    ident = TokenStore(store).verify(token, 0)
    assert not isinstance(ident, str)
    assert ident.role == "trader"
    assert _run("token", "--store", str(store), "add", "alice", "--role", "admin").returncode == 2
    assert _run("token", "--store", str(store), "remove", "alice").returncode == 0
    assert TokenStore(store).verify(token, 0) == "token refused"
    bad = _run("token", "--store", str(store), "add", "bob", "--role", "god")
    assert bad.returncode == 2
    assert "invalid choice: 'god'" in bad.stderr


def test_token_takes_config_before_or_after_the_action(tmp_path: Path) -> None:
    cfg = tmp_path / "engine.toml"
    cfg.write_text('[remote]\ntoken_store = "tokens.toml"\n')
    after = _run("token", "add", "alice", "--role", "trader", "--config", str(cfg))
    assert after.returncode == 0, after.stderr
    ident = TokenStore(tmp_path / "tokens.toml").verify(after.stdout.strip(), 0)
    assert not isinstance(ident, str)
    assert ident.role == "trader"
    before = _run("token", "--config", str(cfg), "list")
    assert before.returncode == 0, before.stderr
    assert before.stdout.split()[:2] == ["alice", "trader"]
    assert (
        _run("token", "remove", "alice", "--store", str(tmp_path / "tokens.toml")).returncode == 0
    )
    assert _run("token", "list", "--config", str(cfg)).stdout == ""


ACCEPTOR_CFG = """\
[DEFAULT]
ConnectionType=acceptor
NonStopSession=Y
SocketAcceptHost=127.0.0.1
SocketAcceptPort={port}

[SESSION]
BeginString=FIX.4.4
SenderCompID=EXCH
TargetCompID=QW
"""

SESSIONS_CFG = """\
[DEFAULT]
ConnectionType=initiator
NonStopSession=Y
HeartBtInt=5
ReconnectInterval=1
SocketConnectHost=127.0.0.1
SocketConnectPort={port}

[SESSION]
BeginString=FIX.4.4
SenderCompID=QW
TargetCompID=EXCH
"""

ENGINE_TOML = """\
[engine]
id = "fix-engine"

[files]
logs_dir = "logs"

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


@pytest.mark.slow
def test_config_with_a_sessions_file_logs_on_to_the_venue(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    (tmp_path / "acc.cfg").write_text(ACCEPTOR_CFG.format(port=free))
    acc = subprocess.Popen(
        [sys.executable, "-m", "app", "fix", "acceptor", "--cfg", str(tmp_path / "acc.cfg")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    eng = None
    try:
        assert acc.stdout is not None
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", acc.stdout.readline())
        assert m, "the acceptor did not start"
        (tmp_path / "sessions.cfg").write_text(SESSIONS_CFG.format(port=m.group(1)))
        (tmp_path / "engine.toml").write_text(ENGINE_TOML)
        token = TokenStore(tmp_path / "tokens.toml").add("v", "viewer", now_ns=1)
        out = tmp_path / "out.txt"
        with out.open("w") as o:
            eng = subprocess.Popen(
                [sys.executable, "-m", "app", "engine", "--config", str(tmp_path / "engine.toml")],
                cwd=ROOT,
                stdout=o,
                stderr=subprocess.STDOUT,
                text=True,
            )
        deadline = time.monotonic() + 60
        port = 0
        while time.monotonic() < deadline and not port:
            found = re.search(r"remote server on ws://127\.0\.0\.1:(\d+)", out.read_text())
            port = int(found.group(1)) if found else 0
            time.sleep(0.05)
        assert port, out.read_text()
        client = RemoteEngineClient("127.0.0.1", port, token, tls=False)
        client.start(timeout_s=30)
        try:
            seen: list[object] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                seen += [r.event for r in client.drain()]
                if any(
                    isinstance(e, SessionStatusChanged) and e.state is SessionState.LOGGED_ON
                    for e in seen
                ):
                    break
                time.sleep(0.05)
            sessions = [e for e in seen if isinstance(e, SessionStatusChanged)]
            assert sessions[-1].session_id == "FIX.4.4:QW->EXCH"
            assert sessions[-1].state is SessionState.LOGGED_ON
            assert any(isinstance(e, InstrumentAdded) and e.symbol == "ESZ6" for e in seen)
            assert client.state is ClientState.CONNECTED
        finally:
            client.close()
        eng.send_signal(signal.SIGTERM)
        assert eng.wait(30) == 0, out.read_text()
        assert "engine stopped cleanly" in out.read_text()
    finally:
        for p in (eng, acc):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(10)
        if acc.stdout is not None:
            acc.stdout.close()
