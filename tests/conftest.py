# SPDX-License-Identifier: MIT
"""Shared fixtures: offscreen Qt, async tests on qasync or plain asyncio, an injected clock.

``async def`` tests run on a qasync ``QEventLoop`` when they request the ``qloop`` fixture
(GUI-side async code, platform-facts.md 4.1) and on a fresh plain asyncio loop otherwise
(engine code, which never runs on Qt). Never call ``qtbot.wait*`` inside a coroutine.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Before pytest-qt creates the QApplication.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyside6")

import pytest

from engine.clock import TestClock

#: Where the read-only shared material lives (real data, FIX dictionaries, acceptance suite).
SHARED = Path(__file__).resolve().parents[2] / "shared"

ASYNC_TEST_TIMEOUT_S = 60.0


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile every numba kernel into the on-disk cache once, before any test.

    Tests that start the console or the engine in a child process then load the kernels from
    the cache instead of each compiling them (tens of seconds on a fresh clone).
    """
    from engine.warmup import warm_up

    warm_up()


def pytest_report_header() -> str:
    """Say whether the FIX hot path runs compiled (engine.native) or interpreted."""
    from engine import native

    return f"engine.native: {native.status()}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the tests that replace methods of compiled modules (marker ``interpreted``)."""
    from engine import native

    if not native.status().startswith("compiled"):
        return
    skip = pytest.mark.skip(
        reason="replaces methods of a module engine.native compiled: runs with QW_NATIVE=0"
    )
    for item in items:
        if item.get_closest_marker("interpreted") is not None:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Run the cyclic garbage collector only in the main (GUI) thread during GUI tests.

    An automatic collection runs in whichever thread allocates; one in an engine or worker
    thread that frees a cycle holding a Qt object destroys it in the wrong thread, whose
    timers then stay registered with the GUI thread (a segfault in ``activateTimers`` in a
    later test). The console does the same with ``app.bridge.GcPacer``.
    """
    if item.get_closest_marker("gui") is not None and gc.isenabled():
        gc.disable()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Delete the GUI test's closed widgets and collect its cyclic garbage, in the main thread.

    pytest-qt closes the widgets a test added and calls ``deleteLater`` on them, which only
    takes effect when an event loop at that level runs: without the flush here they piled up
    (19,500 hidden widgets after the Manager's tests), and every later style change re-polished
    them all (8-10 s per test of set-up and teardown).
    """
    if item.get_closest_marker("gui") is not None:
        from PySide6.QtCore import QCoreApplication, QEvent

        if QCoreApplication.instance() is not None:
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()


@pytest.fixture
def test_clock() -> TestClock:
    """Return a clock that moves only when the test advances it."""
    return TestClock()


@pytest.fixture
def qloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """Yield a fresh qasync loop on pytest-qt's QApplication; fail on unhandled loop errors."""
    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _lp, ctx: errors.append(ctx))
    yield loop
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    if errors:
        raise AssertionError(f"asyncio errors during test: {errors!r}")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests: on ``qloop`` if requested, else on a fresh asyncio loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    kwargs = {n: pyfuncitem.funcargs[n] for n in pyfuncitem._fixtureinfo.argnames}
    loop = pyfuncitem.funcargs.get("qloop")
    coro = asyncio.wait_for(pyfuncitem.obj(**kwargs), ASYNC_TEST_TIMEOUT_S)
    if loop is not None:
        loop.run_until_complete(coro)
    else:
        asyncio.run(coro)
    return True


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Give the skipped FIX acceptance tests a section of their own, one line per reason.

    ``-ra`` lists every skip among the others; a conformance suite that did not run (no
    ``../shared``, no copy of QuickFIX's repository) is said in its own yellow section, just
    before the short summary (issue 23).
    """
    skipped = [
        r
        for r in terminalreporter.stats.get("skipped", [])
        # a test's report has keywords; a module skipped at collection only its node id
        if "acceptance" in getattr(r, "keywords", ()) or r.nodeid.startswith("tests/acceptance/")
    ]
    if not skipped:
        return
    reasons: Counter[str] = Counter()
    for r in skipped:
        text = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
        reasons[text.removeprefix("Skipped: ")] += 1
    terminalreporter.write_sep("=", f"FIX acceptance: {len(skipped)} test(s) NOT RUN", yellow=True)
    for text, n in reasons.items():
        terminalreporter.write_line(f"NOT RUN ({n}): {text}", yellow=True)
