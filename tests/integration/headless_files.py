# SPDX-License-Identifier: MIT
"""The files of a headless engine (``qwconsole engine --config``) trading over one FIX session.

Shared by the tests that run such an engine against a separate counterparty process (the
simulator, QuickFIX). The sessions ``.cfg`` sets no FileStorePath: by the one store rule the
engine keeps its store in ``fix-store`` next to ``engine.toml``.
"""

import re
import subprocess
import time
from pathlib import Path

SESSIONS_CFG = """\
[DEFAULT]
ConnectionType=initiator
SocketConnectHost=127.0.0.1
SocketConnectPort={port}
StartTime=00:00:00
EndTime=00:00:00
HeartBtInt=5
ReconnectInterval=1
ResetOnLogon=N

[SESSION]
BeginString=FIX.4.4
SenderCompID={sender}
TargetCompID={target}
"""

ENGINE_TOML = """\
[engine]
id = "{engine_id}"

[files]
journal_dir = "journal"
logs_dir = "logs"

[sessions]
file = "sessions.cfg"
"""

INSTRUMENT = """
[[instruments]]
symbol = "{symbol}"
tick_size = "{tick}"
multiplier = "{multiplier}"
session = "{session}"
"""

#: The demo's listings the simulator trades: symbol -> (tick size, multiplier).
LISTINGS = {"ESZ6": ("0.25", "50"), "NQZ6": ("0.25", "20"), "CLF7": ("0.01", "1000")}


def write_engine(
    state: Path,
    *,
    port: int,
    sender: str,
    target: str,
    engine_id: str,
    symbols: tuple[str, ...] = ("ESZ6",),
    strategies: str = "",
) -> Path:
    """Write ``sessions.cfg`` and ``engine.toml`` into ``state``; return the TOML's path.

    ``strategies`` is TOML appended as it is (``[[strategies]]`` tables).
    """
    state.mkdir(parents=True, exist_ok=True)
    (state / "sessions.cfg").write_text(
        SESSIONS_CFG.format(port=port, sender=sender, target=target)
    )
    session = f"FIX.4.4:{sender}->{target}"
    toml = ENGINE_TOML.format(engine_id=engine_id)
    for symbol in symbols:
        tick, multiplier = LISTINGS[symbol]
        toml += INSTRUMENT.format(symbol=symbol, tick=tick, multiplier=multiplier, session=session)
    path = state / "engine.toml"
    path.write_text(toml + strategies)
    return path


def wait_for_fills(engine: subprocess.Popen[str], within_s: float = 60.0) -> int:
    """Read ``qwconsole engine``'s summary lines until it reports fills; return how many.

    Returns 0 if none came within ``within_s`` or the engine's output ended first.
    """
    assert engine.stdout is not None
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        line = engine.stdout.readline()
        if not line:
            return 0
        found = re.search(r"fills\s+(\d+)", line)
        if found and int(found.group(1)):
            return int(found.group(1))
    return 0
