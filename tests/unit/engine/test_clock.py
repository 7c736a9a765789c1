# SPDX-License-Identifier: MIT
import pytest

from engine.clock import Clock, LiveClock, TestClock


def test_test_clock_advance_moves_wall_and_monotonic_time() -> None:
    clock = TestClock(start_ns=1_000)
    clock.advance(250)
    assert clock.now_ns() == 1_250
    assert clock.monotonic_ns() == 250


def test_test_clock_refuses_to_go_backwards() -> None:
    clock = TestClock(start_ns=1_000)
    with pytest.raises(ValueError, match="delta_ns must be >= 0, got -1"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="got -500"):
        clock.set(500)


def test_live_clock_is_a_clock_with_nanosecond_resolution() -> None:
    clock = LiveClock()
    assert isinstance(clock, Clock)
    a, b = clock.monotonic_ns(), clock.monotonic_ns()
    assert b >= a
    assert clock.now_ns() > 1_600_000_000 * 10**9  # after 2020, in ns not s


def test_live_clock_reads_are_the_time_builtins_themselves() -> None:
    # No Python frame per read: the trading path reads the clock several times a tick.
    import time

    clock = LiveClock()
    assert clock.now_ns is time.time_ns
    assert clock.monotonic_ns is time.monotonic_ns
