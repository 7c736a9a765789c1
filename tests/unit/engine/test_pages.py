# SPDX-License-Identifier: MIT
"""engine.pages: a latency-bound process maps its arrays with 4 KB pages, not huge ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

# A child writes a fresh 64 MB numpy array and reports the huge pages mapped under it.
CHILD = """
import ctypes, json, sys
import numpy as np
from engine import pages

def anon_huge_kb():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0

# A clean start: the flag is inherited from the parent (a test process that ran an engine).
ctypes.CDLL(None).prctl(41, 0, 0, 0, 0)  # PR_SET_THP_DISABLE, off
if sys.argv[1] == "small":
    ok = pages.small_pages()
else:
    ok = None
before = anon_huge_kb()
a = np.empty(64 << 20, np.uint8)
a[:] = 1
print(json.dumps({
    "ok": ok,
    "huge_kb": anon_huge_kb() - before,
    "thp_disabled": pages.thp_disabled(),
    "numpy_asks": pages.huge_pages_requested(),
}))
"""


def _child(mode: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    result: dict[str, object] = json.loads(out.splitlines()[-1])
    return result


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux only")
def test_small_pages_maps_new_arrays_without_huge_pages() -> None:
    small = _child("small")
    assert small["ok"] is True
    assert small["thp_disabled"] is True
    assert small["numpy_asks"] is False
    assert small["huge_kb"] == 0
    default = _child("default")
    assert default["thp_disabled"] is False
    mode = THP.read_text() if THP.exists() else "[never]"
    if "[never]" in mode or default["huge_kb"] == 0:
        pytest.skip(f"this machine maps no huge pages for numpy ({mode.strip()}): no contrast")
    assert int(str(default["huge_kb"])) >= 2048  # the contrast: numpy's default got some


ENGINE_CHILD = """
import asyncio, ctypes
from engine import pages
ctypes.CDLL(None).prctl(41, 0, 0, 0, 0)  # inherited from the test process: start clean
from engine.clock import LiveClock
from engine.core import Engine

async def main():
    before = pages.thp_disabled()
    engine = Engine(LiveClock(), heartbeat_interval_ms=10)
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0.05)
    engine.request_stop()
    await task
    print(before, pages.thp_disabled())

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_an_engine_run_turns_huge_pages_off_for_its_process() -> None:
    """The headless engine (and the console's, whose GUI does it first) runs on small pages."""
    out = subprocess.run(
        [sys.executable, "-c", ENGINE_CHILD], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.split() == ["False", "True"]
