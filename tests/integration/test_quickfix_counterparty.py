# SPDX-License-Identifier: MIT
"""A headless engine's sequence numbers resume against a real QuickFIX acceptor.

The engine's ``.cfg`` sets no FileStorePath: by the one store rule the session keeps its store
in the engine's ``fix-store``. QuickFIX (its Python binding, C++ engine) is the counterparty
with a file store of its own. After a clean stop and after a ``kill -9``, the engine logs on
again with its next sequence number, and QuickFIX accepts it (no "MsgSeqNum too low", no
reset). Skipped where the ``quickfix`` package is not installed (it compiles for minutes).
"""

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.headless_files import write_engine

pytestmark = [pytest.mark.integration, pytest.mark.slow]

fix = pytest.importorskip("quickfix")

ACCEPTOR_CFG = """\
[DEFAULT]
ConnectionType=acceptor
SocketAcceptPort={port}
StartTime=00:00:00
EndTime=00:00:00
FileStorePath={tmp}/qf-store
FileLogPath={tmp}/qf-log
UseDataDictionary=N
ResetOnLogon=N
HeartBtInt=5

[SESSION]
BeginString=FIX.4.4
SenderCompID=VENUE
TargetCompID=QWENGINE
"""


class Venue:
    """QuickFIX acceptor callbacks: the MsgSeqNum of every Logon received."""

    def __init__(self) -> None:
        self.logons: list[int] = []
        self.lock = threading.Lock()

    def application(self) -> Any:
        venue = self

        class App(fix.Application):  # type: ignore[misc]
            def onCreate(self, session_id: Any) -> None: ...
            def onLogon(self, session_id: Any) -> None: ...
            def onLogout(self, session_id: Any) -> None: ...
            def toAdmin(self, message: Any, session_id: Any) -> None: ...
            def toApp(self, message: Any, session_id: Any) -> None: ...
            def fromApp(self, message: Any, session_id: Any) -> None: ...

            def fromAdmin(self, message: Any, session_id: Any) -> None:
                msg_type = fix.MsgType()
                message.getHeader().getField(msg_type)
                if msg_type.getValue() == "A":
                    seq = fix.MsgSeqNum()
                    message.getHeader().getField(seq)
                    with venue.lock:
                        venue.logons.append(int(seq.getValue()))

        return App()

    def wait_logons(self, n: int, within_s: float = 30.0) -> list[int]:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.logons) >= n:
                    return list(self.logons)
            time.sleep(0.05)
        raise AssertionError(f"{n} logons expected, got {self.logons}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _engine(state: Path, seconds: float | None = None) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "app", "engine", "--config", str(state / "engine.toml")]
    if seconds is not None:
        cmd += ["--seconds", str(seconds)]
    with (state / "stderr.txt").open("ab") as err:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)


def test_sequence_numbers_resume_against_quickfix_after_a_clean_stop_and_a_kill(
    tmp_path: Path,
) -> None:
    port = _free_port()
    cfg = tmp_path / "acceptor.cfg"
    cfg.write_text(ACCEPTOR_CFG.format(port=port, tmp=tmp_path))
    settings = fix.SessionSettings(str(cfg))
    venue = Venue()
    acceptor = fix.SocketAcceptor(
        venue.application(), fix.FileStoreFactory(settings), settings, fix.FileLogFactory(settings)
    )
    state = tmp_path / "engine"
    write_engine(state, port=port, sender="QWENGINE", target="VENUE", engine_id="qfpeer")
    acceptor.start()
    try:
        first = _engine(state, seconds=3)
        assert first.wait(60) == 0, (state / "stderr.txt").read_text()
        second = _engine(state)  # clean restart, then killed while logged on
        venue.wait_logons(2)
        time.sleep(0.5)
        second.send_signal(signal.SIGKILL)
        second.wait(10)
        third = _engine(state, seconds=3)
        assert third.wait(60) == 0, (state / "stderr.txt").read_text()
        logons = venue.wait_logons(3)
    finally:
        acceptor.stop()
    assert logons[0] == 1
    # Each logon carries the engine's next number: never 1 again, always ahead.
    assert logons[1] > logons[0]
    assert logons[2] > logons[1]
    assert (state / "fix-store" / "FIX.4.4-QWENGINE-VENUE.seqnums").exists()
    events = "".join(p.read_text() for p in (tmp_path / "qf-log").glob("*event*"))
    assert "MsgSeqNum too low" not in events
    assert "too low" not in (state / "logs" / "engine.log").read_text()
