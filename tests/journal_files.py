# SPDX-License-Identifier: MIT
"""Real journal files of a chosen size, written with ``engine.journal.Journal``."""

from __future__ import annotations

from pathlib import Path

from engine.clock import Clock
from engine.events import BookUpdated, EventRecord, FixMessageSeen
from engine.journal import Journal
from engine.journal.component import journal_path

#: An ExecutionReport as the simulator sends it (the journal's bulk on a trading day).
_REPORT = (
    b"8=FIX.4.4\x019=171\x0135=8\x0134=%d\x0149=QWSIM\x0156=QWCONSOLE\x01"
    b"52=20261203-07:00:00.000\x0111=C%d\x0137=O%d\x0117=X%d\x01150=0\x0139=0\x01"
    b"55=ESZ6\x0154=1\x0138=1\x0144=6000.00\x01151=1\x0114=0\x016=0\x0110=000\x01"
)


def write_day_journal(directory: Path, engine_id: str, clock: Clock, size_bytes: int) -> Path:
    """Write today's journal of ``engine_id`` in ``directory``, at least ``size_bytes`` long.

    It holds what most of a busy day's journal is: book updates and the FIX messages of the
    session, no orders (a restart restores nothing from it, it only has to replay it).
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = journal_path(directory, engine_id, clock.now_ns())
    journal = Journal(path, clock, engine_id=engine_id)
    seq = n = 0
    try:
        while True:
            for _ in range(2_000):
                n += 1
                ts = clock.now_ns()
                seq += 1
                journal.on_event_record(
                    EventRecord(
                        seq,
                        BookUpdated(
                            ts_event=ts,
                            symbol="ESZ6",
                            bid_px_ticks=24_000,
                            bid_qty_lots=n % 9 + 1,
                            ask_px_ticks=24_001,
                            ask_qty_lots=n % 7 + 1,
                        ),
                    )
                )
                seq += 1
                journal.on_event_record(
                    EventRecord(
                        seq,
                        FixMessageSeen(
                            ts_event=ts,
                            session_id="FIX.4.4:QWCONSOLE->QWSIM",
                            outbound=False,
                            msg_type="8",
                            seq_num=n,
                            raw=_REPORT % (n, n, n, n),
                            ts_created=ts,
                            ts_wire=ts,
                        ),
                    )
                )
            journal.flush()
            if path.stat().st_size >= size_bytes:
                return path
    finally:
        journal.close()
