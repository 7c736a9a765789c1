# SPDX-License-Identifier: MIT
"""``qwconsole sim --itch-feed``: the simulator's market over MoldUDP64 multicast, as a process.

A receiver joins feeds A and B on loopback late, after the market has been moving: it asks
the retransmission server for everything from message 1, and the books it builds from the
ITCH messages are whole (every order event finds its order), never crossed, and hold the
instruments' symbols. After SIGTERM the feed's End of Session arrives.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.feeds.arbiter import Arbiter, MoldUdp64
from engine.feeds.itch.book import ItchBooks
from engine.feeds.multicast import FeedReceiver, Group, open_receiver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QWCONSOLE = Path(sys.executable).with_name("qwconsole")
CFG = (
    "[DEFAULT]\nConnectionType=acceptor\nNonStopSession=Y\nSocketAcceptPort=0\n"
    "ResetOnLogon=Y\n\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=S\nTargetCompID=A\n"
)
ITCH_LINE = re.compile(
    r"^sim: ITCH 5\.0 over MoldUDP64 on .*; re-requests on 127\.0\.0\.1:(\d+) "
    r"\(session (\w+)\s*\)$"
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _multicast_works() -> bool:
    try:
        open_receiver(Group("239.255.40.9", _free_port())).close()
    except OSError:
        return False
    return True


def test_a_late_receiver_rebuilds_every_book_from_the_simulators_feed(tmp_path: Path) -> None:
    if not _multicast_works():
        pytest.skip("no multicast on loopback here")
    a, b = Group("239.255.40.1", _free_port()), Group("239.255.40.2", _free_port())
    cfg = tmp_path / "sim.cfg"
    cfg.write_text(CFG)
    proc = subprocess.Popen(
        [
            str(QWCONSOLE),
            "sim",
            "--cfg",
            str(cfg),
            "--itch-feed",
            f"{a.address}:{a.port},{b.address}:{b.port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().rstrip("\n") for _ in range(2)]
        m = ITCH_LINE.match(lines[1])
        assert m is not None, lines
        port, session = int(m.group(1)), m.group(2).encode().ljust(10)
        time.sleep(1.5)  # the market moves before we join
        books = ItchBooks()
        received: list[bytes] = []

        def on_packets(packets: list[bytes], now_ns: int) -> None:
            for p in packets:
                received.extend(MoldUdp64.messages(p))

        async def listen() -> FeedReceiver:
            arb = Arbiter(MoldUdp64(), next_seq=1, gap_timeout_ns=1_000_000)
            rx = FeedReceiver(
                a, b, on_packets, session=session, recovery=("127.0.0.1", port), arbiter=arb
            )
            await rx.start()
            await asyncio.sleep(2.0)
            rx.close()
            return rx

        rx = asyncio.run(listen())
        st = rx.arbiter.stats
        assert st.recovered_messages > 0  # what came before we joined, re-requested
        assert st.lost_messages == 0
        assert rx.requests_sent >= 1
        books.apply_raw(b"".join(len(x).to_bytes(2, "big") + x for x in received))
        counts = books.counts()
        assert counts["S"] >= 1
        assert counts["R"] == 3  # the demo's three instruments
        assert counts["A"] > 50
        assert {books.symbol(i) for i in (1, 2, 3)} == {"ESZ6", "NQZ6", "CLF7"}
        c = books.counters()
        assert not any(c.unknown.values()), c.unknown  # every order event found its order
        assert (c.duplicate_adds, c.over_executions, c.over_cancels) == (0, 0, 0)
        assert not books.check()
        assert books.crossed_stocks().shape[0] == 0
        for loc in (1, 2, 3):
            assert books.best_bid(loc) is not None
            assert books.best_ask(loc) is not None
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
