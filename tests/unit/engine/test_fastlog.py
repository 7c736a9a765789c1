# SPDX-License-Identifier: MIT
"""Engine logging through the queue: values of the call, records on the writer thread."""

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from engine import fastlog
from engine.fastlog import get_log


class Collect(logging.Handler):
    """Keep every record with the thread that handled it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[logging.LogRecord, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record, threading.current_thread().name))


@pytest.fixture
def collect() -> Iterator[Collect]:
    logger = logging.getLogger("tests.fastlog")
    handler = Collect()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        fastlog.stop()
        logger.removeHandler(handler)
        logger.setLevel(old)


def test_without_start_a_call_is_the_standard_one(collect: Collect) -> None:
    log = get_log("tests.fastlog")
    log.info("order %s qty %d", "A1", 5)
    ((record, handled_on),) = collect.records  # there at once: same thread, no queue
    assert handled_on == threading.current_thread().name
    assert record.getMessage() == "order A1 qty 5"
    assert record.funcName == "test_without_start_a_call_is_the_standard_one"  # the caller


def test_queued_records_reach_the_handlers_on_the_writer_thread(collect: Collect) -> None:
    fastlog.start()
    log = get_log("tests.fastlog")
    before = time.time()
    log.warning("venue %s down", "X")
    time.sleep(0.2)
    assert fastlog.flush()
    ((record, handled_on),) = collect.records
    assert handled_on == "log writer"
    assert record.getMessage() == "venue X down"
    assert record.levelno == logging.WARNING
    # Stamped with the time and the thread of the call, not of the writer.
    assert before <= record.created < before + 0.15
    assert record.threadName == threading.current_thread().name
    assert record.thread == threading.get_ident()


def test_mutable_arguments_are_captured_at_the_call(collect: Collect) -> None:
    fastlog.start()
    log = get_log("tests.fastlog")
    order = {"qty": 1}
    prices = [100, 101]
    log.info("order %s at %s", order, prices)
    log.info("number %d, state %s", 7, ("new", 1))  # immutable: formatted later, same text
    order["qty"] = 999
    prices.append(102)
    fastlog.flush()
    texts = [r.getMessage() for r, _ in collect.records]
    assert texts == ["order {'qty': 1} at [100, 101]", "number 7, state ('new', 1)"]


def test_an_exception_is_the_one_of_the_call(collect: Collect) -> None:
    fastlog.start()
    log = get_log("tests.fastlog")
    try:
        raise ValueError("bad price 0")
    except ValueError:
        log.exception("order refused")
    try:
        raise KeyError("other")  # handled before the writer gets to the first record
    except KeyError:
        pass
    fastlog.flush()
    ((record, _),) = collect.records
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)
    assert "bad price 0" in logging.Formatter().format(record)


def test_extra_attributes_and_disabled_levels(collect: Collect) -> None:
    fastlog.start()
    logging.getLogger("tests.fastlog").setLevel(logging.INFO)
    log = get_log("tests.fastlog")
    log.debug("not logged %s", "x")
    log.warning("alerted", extra={"qw_alerted": True})
    fastlog.flush()
    ((record, _),) = collect.records
    assert record.getMessage() == "alerted"
    assert getattr(record, "qw_alerted", False) is True


def test_stop_hands_over_everything_in_order(collect: Collect) -> None:
    fastlog.start()
    log = get_log("tests.fastlog")
    for i in range(2_000):
        log.info("n %d", i)
    fastlog.stop()
    assert [r.args for r, _ in collect.records] == [(i,) for i in range(2_000)]
    assert not fastlog.running()
    log.info("after")  # direct again
    assert collect.records[-1][0].getMessage() == "after"


def test_a_failing_handler_does_not_end_the_writer(collect: Collect) -> None:
    class Broken(logging.Handler):
        def handle(self, record: logging.LogRecord) -> bool:
            raise RuntimeError("disk on fire")

    broken = Broken()
    logger = logging.getLogger("tests.fastlog.broken")
    logger.addHandler(broken)
    try:
        fastlog.start()
        get_log("tests.fastlog.broken").error("first")
        get_log("tests.fastlog").info("second")
        assert fastlog.flush()
    finally:
        logger.removeHandler(broken)
    # "first" died in the broken handler (before it would propagate); the writer lives on.
    assert [r.getMessage() for r, _ in collect.records] == ["second"]
