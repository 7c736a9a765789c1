# SPDX-License-Identifier: MIT
"""kill -9 a real writer process in the middle of a burst of appends, then read the journal.

Nothing that the child saw flushed is lost, records are a gap-free prefix of what it
appended, a torn tail is dropped, and a new writer resumes appending after it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.clock import TestClock
from engine.events import Alert
from engine.journal import (
    FixMessageRecord,
    Journal,
    JournalEvent,
    JournalOpened,
    JournalReader,
    LogEntry,
)
from engine.journal import format as fmt

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

#: The child appends records numbered 0, 1, 2 ... (cycling through event, FIX and log
#: records), flushes every 300 and prints how many it has flushed; it never stops by itself.
CHILD = r"""
import sys
from engine.clock import LiveClock
from engine.enums import AlertLevel
from engine.events import Alert
from engine.journal import Journal

j = Journal(sys.argv[1], LiveClock(), flush_interval_ms=2, batch_records=97, sync="none")
log = j.logger("child")
i = 0
while True:
    for _ in range(300):
        k = i % 3
        if k == 0:
            text = "x" * (i % 50)
            j.on_event(Alert(ts_event=i, level=AlertLevel.INFO, source="child", text=text))
        elif k == 1:
            j.record_fix("FIX.4.4:A->B", 2, b"8=FIX.4.4\x0134=%d\x01" % i, i, i + 1, i + 2)
        else:
            log.info("n %d", i)
        i += 1
    j.flush()
    print(i, flush=True)
"""


def _numbers(path: Path) -> list[int]:
    out: list[int] = []
    reader = JournalReader(path)
    for rec in reader.records():
        if isinstance(rec, JournalEvent):
            assert isinstance(rec.event, Alert)
            out.append(rec.event.ts_event)
        elif isinstance(rec, FixMessageRecord):
            assert rec.raw == b"8=FIX.4.4\x0134=%d\x01" % rec.ts_created
            assert (rec.ts_wire, rec.ts_handled) == (rec.ts_created + 1, rec.ts_created + 2)
            out.append(rec.ts_created)
        elif isinstance(rec, LogEntry):
            out.append(int(rec.message.removeprefix("n ")))
    return out


def _run_and_kill(path: Path, reports: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    flushed = 0
    try:
        assert proc.stdout is not None
        for _ in range(reports):
            line = proc.stdout.readline()
            if not line:
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"child died before reporting: {err}")
            flushed = int(line)
        os.kill(proc.pid, signal.SIGKILL)  # while it is inside the next burst
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return flushed


@pytest.mark.parametrize("reports", [1, 4])
def test_killed_writer_loses_nothing_flushed_and_a_new_writer_resumes(
    tmp_path: Path, reports: int
) -> None:
    path = tmp_path / "crash.qwj"
    flushed = _run_and_kill(path, reports)
    assert flushed == 300 * reports

    numbers = _numbers(path)
    assert len(numbers) >= flushed  # everything flushed survived the kill
    assert numbers == list(range(len(numbers)))  # a gap-free prefix, in order
    size_after_kill = path.stat().st_size
    intact_end = JournalReader(path).end_offset  # < size if the kill itself tore a write
    assert size_after_kill - intact_end < 64 * 1024

    # Tear the tail as a crash in the middle of a write would: half of a copy of a record.
    reader = JournalReader(path)
    last = list(reader.raw())[-1]
    data = path.read_bytes()
    torn = data[last.offset : last.offset + fmt.RECORD_HEADER_SIZE + len(last.payload) // 2]
    with path.open("ab") as f:
        f.write(torn)
    reader = JournalReader(path)
    assert _numbers(path) == numbers
    assert reader.torn_tail is not None
    assert reader.torn_tail.offset == reader.end_offset == intact_end

    # A restarted writer drops the torn tail and appends after the last intact record.
    with Journal(path, TestClock(), engine_id="restarted", sync="flush") as j:
        assert j.dropped_tail_bytes == size_after_kill - intact_end + len(torn)
        log = j.logger("child")
        for i in range(len(numbers), len(numbers) + 5):
            log.info("n %d", i)
    assert _numbers(path) == list(range(len(numbers) + 5))
    reader = JournalReader(path)
    assert reader.torn_tail is None
    opens = [r for r in reader.records() if isinstance(r, JournalOpened)]
    assert [o.engine_id for o in opens] == ["", "restarted"]
    assert opens[1].offset == intact_end
