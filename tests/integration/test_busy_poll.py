# SPDX-License-Identifier: MIT
"""Busy polling: a session with BusyPollMicroseconds keeps its loop polling after traffic,
then lets it sleep; without it the loop never spins. Real sessions on 127.0.0.1."""

from __future__ import annotations

import asyncio
import resource
import time
from pathlib import Path

import pytest

from engine.busypoll import busy_poll_for
from engine.fix.message import OutMessage
from engine.fix.settings import SettingsError, load_settings
from tests.factories import AckingVenue, ReportQueue, socket_pair

pytestmark = pytest.mark.integration


def _sleeps() -> int:
    """Return how often this thread has blocked so far (voluntary context switches).

    A polling loop does not block between messages; a sleeping one blocks in ``epoll_wait`` at
    every gap. Unlike a CPU share, the count does not depend on how busy the machine is (a
    polling loop that offers its core with ``sched_yield`` is switched out involuntarily).
    """
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw


async def _trade(spin_us: int) -> tuple[int, bool, int, float]:
    """Trade 50 orders; return the loop's poll iterations, whether it still spins 300 ms after
    the last message, how often the thread blocked while trading, and the process CPU share
    while quiet."""
    app = ReportQueue()
    async with socket_pair(
        AckingVenue(), app, use_data_dictionary=False, busy_poll_microseconds=spin_us
    ) as pair:
        blocked = _sleeps()
        for i in range(50):
            clordid = b"c%d" % i
            pair.client.send(OutMessage(b"D", [(11, clordid), (54, b"1"), (55, b"X")]))
            assert await asyncio.wait_for(app.got.get(), 5) == clordid
            await asyncio.sleep(0.002)  # a gap shorter than the window: polled, not slept
        blocked = _sleeps() - blocked
        await asyncio.sleep(0.3)  # longer than the window: the loop must sleep again
        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.sleep(0.3)
        quiet_share = (time.process_time() - cpu) / (time.perf_counter() - wall)
        bp = busy_poll_for(asyncio.get_running_loop())
        return bp.iterations, bp.spinning, blocked, quiet_share


def test_busy_poll_spins_while_trading_and_sleeps_when_quiet() -> None:
    iterations, spinning, blocked, quiet_share = asyncio.run(_trade(spin_us=50_000))
    # Both ends share this loop: 50 orders with 2 ms gaps inside a 50 ms window are polled
    # (tens of thousands of iterations on a free core; each one offers the core to any other
    # runnable process, so a loaded machine gets far fewer: at least one per gap).
    assert iterations > 50
    assert blocked < 25, f"the loop slept {blocked} times in 50 gaps while trading"
    assert not spinning
    assert quiet_share < 0.3, f"the loop kept polling when quiet ({quiet_share:.0%} CPU)"


def test_no_busy_poll_by_default() -> None:
    iterations, spinning, blocked, _ = asyncio.run(_trade(spin_us=0))
    assert iterations == 0
    assert not spinning
    assert blocked >= 50, f"the loop blocked {blocked} times in 50 gaps of 2 ms"


def test_busy_poll_setting_in_a_cfg(tmp_path: Path) -> None:
    cfg = tmp_path / "s.cfg"
    base = (
        "[DEFAULT]\nConnectionType=initiator\nHeartBtInt=30\nSocketConnectHost=127.0.0.1\n"
        "SocketConnectPort=9000\nUseDataDictionary=N\nStartTime=00:00:00\nEndTime=00:00:00\n"
        "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=ME\nTargetCompID=EXCH\n"
    )
    cfg.write_text(base + "BusyPollMicroseconds=250\n")
    (settings,) = load_settings(cfg).sessions
    assert settings.busy_poll_microseconds == 250
    cfg.write_text(base + "BusyPollMicroseconds=fast\n")
    with pytest.raises(SettingsError) as err:
        load_settings(cfg)
    text = str(err.value)
    for part in ("BusyPollMicroseconds", "fast", "s.cfg"):
        assert part in text


def test_a_window_asked_while_spinning_counts_from_the_next_iteration() -> None:
    # What a transport's read does while the loop spins: ``touched`` instead of touch().
    async def run() -> tuple[bool, int, bool, bool]:
        bp = busy_poll_for(asyncio.get_running_loop())
        bp.touch(20_000_000)  # 20 ms
        await asyncio.sleep(0.001)
        assert bp.spinning
        bp.touched = 200_000_000  # 200 ms, from the next iteration on
        await asyncio.sleep(0.1)  # past the first window
        still, left = bp.spinning, bp.touched
        bp.touched = 1_000_000  # shorter than what is left: changes nothing
        await asyncio.sleep(0.25)  # past the second
        return still, left, bp.spinning, bp.touched == 0

    still, left, after, cleared = asyncio.run(run())
    assert still, "a window asked while spinning was not applied"
    assert left == 0
    assert not after, "the loop kept polling after the window asked for"
    assert cleared
