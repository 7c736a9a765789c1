# SPDX-License-Identifier: MIT
"""Paced collection on an asyncio loop: young garbage freed, survivors frozen, state restored."""

import asyncio
import gc
import threading
from typing import ClassVar

from engine.gcpace import GcPacing, freeze_start_up


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_pacing_frees_cycles_freezes_survivors_and_restores_the_collector() -> None:
    assert gc.isenabled()

    async def run() -> None:
        pacing = GcPacing(interval_s=0.01, full_every=2)
        pacing.start()
        try:
            assert not gc.isenabled()  # automatic collections are off while it paces
            frozen0 = gc.get_freeze_count()
            keep = [_Node() for _ in range(1_000)]  # survivors: frozen by the next pass
            for _ in range(2_000):
                _Node()  # garbage cycles: freed by the next pass
            while pacing.passes < 2:  # noqa: ASYNC110  (the pacing task runs on this loop)
                await asyncio.sleep(0.01)
            assert pacing.collected >= 2_000
            assert gc.get_freeze_count() >= frozen0 + 1_000
            assert pacing.longest_ms > 0
            del keep
        finally:
            await pacing.stop()

    asyncio.run(run())
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


class _Noted:
    """A garbage cycle that notes the thread that freed it."""

    freed_in: ClassVar[list[str]] = []

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        _Noted.freed_in.append(threading.current_thread().name)


def test_freeze_start_up_collects_on_the_main_thread_only() -> None:
    # The console's embedded engine starts in its own thread while the GUI thread owns every
    # collection (app.bridge.GcPacer): there start-up's objects are frozen, never collected.
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        _Noted.freed_in.clear()
        _Noted()  # garbage now: only a collection frees it
        worker = threading.Thread(target=freeze_start_up, name="engine")
        worker.start()
        worker.join()
        assert _Noted.freed_in == []
        gc.unfreeze()
        _Noted()
        freeze_start_up()  # here, on the main thread: collected, then frozen
        assert _Noted.freed_in == ["MainThread", "MainThread"]
    finally:
        gc.unfreeze()
        if was:
            gc.enable()
