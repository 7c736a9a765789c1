# SPDX-License-Identifier: MIT
"""Chaos: the demo engine killed with SIGKILL at random moments while it trades.

After every kill the engine restarts on the same state directory. At the end, the positions the
engine rebuilds from its journal must equal the positions summed from the ExecutionReports the
venue sent (the simulator's own message store: every message it sent on the session, the
strongest record of what was traded), fill by fill, ExecID by ExecID, and the same for the
instrument the demo trades over OUCH (the simulator's OUCH port's own store of the Order
Executed messages it sent).
"""

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from engine.fix.codec import decode_one
from engine.fix.store import FileStore
from engine.journal import recover
from engine.venues.ouch.messages import OrderAccepted, OrderExecuted, OrderReplaced, decode_outbound
from engine.venues.ouch.store import read_sequenced
from engine.warmup import warm_up
from tests.integration.headless_files import write_engine

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VENUE_PREFIX = "FIX.4.4-QWSIM-QWCONSOLE"  # the simulator's side of the demo session
ENGINE_PREFIX = "FIX.4.4-QWCONSOLE-QWSIM"


def _engine(state: Path, seconds: float | None = None) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "app", "engine", "--demo", "--state-dir", str(state)]
    if seconds is not None:
        cmd += ["--seconds", str(seconds)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_trading(proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """Read the engine's summary lines until it reports fills (it is trading)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    seen: list[bytes] = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            text = b"".join(seen[-40:]).decode(errors="replace")
            raise AssertionError(f"engine exited with {proc.wait()} before trading:\n{text}")
        seen.append(line)
        if b" fills " in line and b"fills      0" not in line:
            return
    raise AssertionError("engine did not trade in time")


def _kill_while_replaying(state: Path) -> bytes:
    """Start the engine and kill it as soon as it says it replays its journal; return that line."""
    proc = _engine(state)
    assert proc.stdout is not None
    seen: list[bytes] = []
    while True:
        line = proc.stdout.readline()
        assert line, b"".join(seen).decode(errors="replace")
        seen.append(line)
        if line.startswith((b"starting: reading journal", b"starting: replaying journal")):
            _kill(proc)
            return line
        assert b" fills " not in line, "the engine traded before it said it replayed its journal"


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.stdout is not None
    proc.stdout.close()


def venue_fills(fix_dir: Path) -> dict[str, tuple[str, int, int]]:
    """ExecID -> (symbol, signed lots, ClOrdID) of every fill the venue sent (its store)."""
    store = FileStore(fix_dir, VENUE_PREFIX)
    try:
        sent = store.get_range(1, store.next_sender_seq_num)
    finally:
        store.close()
    fills: dict[str, tuple[str, int, int]] = {}
    for _seq, raw in sent:
        msg = decode_one(raw)
        assert msg is not None
        if msg.msg_type != b"8" or msg.get(150) != b"F":
            continue
        exec_id = (msg.get(17) or b"").decode()
        side = 1 if msg.get(54) == b"1" else -1
        qty = int(msg.get(32) or b"0")
        fills[exec_id] = ((msg.get(55) or b"").decode(), side * qty, 0)
    return fills


def ouch_venue_fills(fix_dir: Path) -> dict[str, tuple[str, int, int]]:
    """ExecID (``M<MatchNumber>``) -> (symbol, signed lots, 0) of the OUCH port's executions."""
    fills: dict[str, tuple[str, int, int]] = {}
    for path in sorted(fix_dir.glob("ouch-QWC1-*.soupseq")):
        sent, _torn = read_sequenced(path)
        orders: dict[int, tuple[str, int]] = {}  # UserRefNum -> (symbol, sign)
        for payload in sent:
            msg = decode_outbound(payload)
            if isinstance(msg, OrderAccepted | OrderReplaced):
                orders[msg.user_ref_num] = (msg.symbol, 1 if msg.side == "B" else -1)
            elif isinstance(msg, OrderExecuted):
                symbol, sign = orders[msg.user_ref_num]
                fills[f"M{msg.match_number}"] = (symbol, sign * msg.quantity, 0)  # lot: 1 share
    return fills


def venue_positions(fills: dict[str, tuple[str, int, int]]) -> Counter[str]:
    pos: Counter[str] = Counter()
    for symbol, lots, _ in fills.values():
        pos[symbol] += lots
    return pos


def _reconcile(state: Path) -> str:
    """Run ``qwconsole reconcile`` on ``state``; it must find no difference (exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "app", "reconcile", str(state)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    out = done.stdout.decode(errors="replace")
    assert done.returncode == 0, out + done.stderr.decode(errors="replace")
    assert "Reconciled" in out
    return out


def _check_agree(state: Path) -> None:
    _reconcile(state)
    journals = sorted((state / "journal").glob("*.qwj"))
    recovered = recover(journals)
    sent = venue_fills(state / "fix") | ouch_venue_fills(state / "fix")
    assert any(exec_id.startswith("M") for exec_id in sent), "no OUCH execution to compare"
    journaled = {f.exec_id: f for f in recovered.fills}
    missing = sorted(set(sent) - set(journaled))
    extra = sorted(set(journaled) - set(sent))
    assert not missing, f"fills the venue sent that the journal lacks: {missing[:10]}"
    assert not extra, f"fills in the journal the venue never sent: {extra[:10]}"
    for exec_id, (symbol, lots, _) in sent.items():
        f = journaled[exec_id]
        assert (f.symbol, int(f.side) * f.last_qty_lots) == (symbol, lots), exec_id
    rebuilt = Counter({s: q for s, q in recovered.position_lots().items() if q})
    assert rebuilt == Counter({s: q for s, q in venue_positions(sent).items() if q})


def test_kill_9_at_random_moments_loses_no_fill_and_applies_none_twice(tmp_path: Path) -> None:
    warm_up()  # compile the kernels once, so that every run trades within a second
    rng = random.Random(20261203)
    state = tmp_path / "state"
    # Five times while trading, then once while it replays today's journal (a few MB by then).
    for _ in range(5):
        proc = _engine(state)
        _wait_trading(proc)
        time.sleep(rng.uniform(0.0, 1.5))
        _kill(proc)
    said = _kill_while_replaying(state)
    assert b" bytes" in said
    # A last run lets the venue resend what the engine had not journaled, then stops cleanly.
    last = _engine(state, seconds=4)
    out, _ = last.communicate(timeout=120)
    assert last.returncode == 0, out.decode(errors="replace")[-2000:]
    assert b"engine stopped cleanly" in out
    _check_agree(state)
    # The engine's own store never counted a message past what the journal holds, and the two
    # stores agree after the clean stop (nothing was reset on the way).
    engine_store = FileStore(state / "fix", ENGINE_PREFIX)
    venue_store = FileStore(state / "fix", VENUE_PREFIX)
    try:
        assert engine_store.next_target_seq_num == venue_store.next_sender_seq_num
        assert venue_store.next_target_seq_num == engine_store.next_sender_seq_num
    finally:
        engine_store.close()
        venue_store.close()


def test_clean_restarts_agree_with_the_venue(tmp_path: Path) -> None:
    warm_up()
    state = tmp_path / "state"
    for _ in range(3):
        proc = _engine(state, seconds=2)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
    _check_agree(state)
    assert sum(1 for _ in venue_fills(state / "fix")) > 0


# ------------------------------------------------------- against a separate simulator process

SIM_CFG = """\
[DEFAULT]
ConnectionType=acceptor
SocketAcceptHost=127.0.0.1
SocketAcceptPort=0
StartTime=00:00:00
EndTime=00:00:00
FileStorePath={store}
ResetOnLogon=N
HeartBtInt=5

[SESSION]
BeginString=FIX.4.4
SenderCompID=EXECUTOR
TargetCompID=QWENGINE
"""

MARKET_MAKER = """
[[strategies]]
id = 20170101
class = "engine.strategy.examples:MarketMaker"
symbols = ["ESZ6", "CLF7"]
autostart = true
[strategies.parameters]
qty_lots = 1
half_spread_ticks = 1
max_position_lots = 10
"""


def _start_sim(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    cfg = tmp / "sim.cfg"
    cfg.write_text(SIM_CFG.format(store=tmp / "sim-store"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "sim", "--cfg", str(cfg), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert line.startswith("sim: listening on 127.0.0.1:"), line + proc.stderr.read().decode()
    return proc, int(line.split(":")[2].split()[0])


def _config_engine(state: Path, seconds: float | None = None) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "app", "engine", "--config", str(state / "engine.toml")]
    if seconds is not None:
        cmd += ["--seconds", str(seconds)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_kill_9_against_a_separate_venue_process(tmp_path: Path) -> None:
    warm_up()
    rng = random.Random(3)
    sim, port = _start_sim(tmp_path)
    state = tmp_path / "engine"
    write_engine(
        state,
        port=port,
        sender="QWENGINE",
        target="EXECUTOR",
        engine_id="chaos",
        symbols=("ESZ6", "CLF7"),
        strategies=MARKET_MAKER,
    )
    try:
        for _ in range(5):
            proc = _config_engine(state)
            _wait_trading(proc)
            time.sleep(rng.uniform(0.0, 1.5))
            _kill(proc)
        last = _config_engine(state, seconds=4)
        out, _ = last.communicate(timeout=120)
        assert last.returncode == 0, out.decode(errors="replace")[-2000:]
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.communicate(timeout=30)
    assert sim.returncode == 0
    # One store rule: the .cfg set no FileStorePath, the engine kept it in fix-store.
    engine_store = FileStore(state / "fix-store", "FIX.4.4-QWENGINE-EXECUTOR")
    venue_store = FileStore(tmp_path / "sim-store", "FIX.4.4-EXECUTOR-QWENGINE")
    try:
        assert engine_store.next_sender_seq_num > 50  # never reset to 1 on the way
        assert engine_store.next_sender_seq_num == venue_store.next_target_seq_num
        assert engine_store.next_target_seq_num == venue_store.next_sender_seq_num
        sent: dict[str, tuple[str, int]] = {}
        for _seq, raw in venue_store.get_range(1, venue_store.next_sender_seq_num):
            msg = decode_one(raw)
            assert msg is not None
            if msg.msg_type == b"8" and msg.get(150) == b"F":
                side = 1 if msg.get(54) == b"1" else -1
                sent[(msg.get(17) or b"").decode()] = (
                    (msg.get(55) or b"").decode(),
                    side * int(msg.get(32) or b"0"),
                )
    finally:
        engine_store.close()
        venue_store.close()
    recovered = recover(sorted((state / "journal").glob("*.qwj")))
    journaled = {f.exec_id: (f.symbol, int(f.side) * f.last_qty_lots) for f in recovered.fills}
    assert sent, "the venue sent no fills"
    assert journaled == sent
    logs = (state / "logs" / "engine.log").read_text()
    assert "MsgSeqNum too low" not in logs
    _reconcile(state)
