# SPDX-License-Identifier: MIT
"""The framing kernel, compiled and as plain Python (``.py_func``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import simplefix

from engine.fix import _kernels as k
from engine.fix.codec import data_tag_table


def _msg(*pairs: tuple[int, str]) -> bytes:
    m = simplefix.FixMessage()
    for tag, value in pairs:
        m.append_pair(tag, value)
    return bytes(m.encode())


HB = _msg((8, "FIX.4.4"), (35, "0"), (34, "2"), (49, "A"), (52, "20240101-00:00:00"), (56, "B"))

SCAN = [k.scan_frames, k.scan_frames.py_func]  # type: ignore[attr-defined]


def _scan(fn: Callable[..., Any], data: bytes) -> tuple[int, int, int, np.ndarray, np.ndarray]:
    msgs = np.zeros((64, k.MSG_COLUMNS), dtype=np.int64)
    fields = np.zeros((3, len(data) + 8), dtype=np.int64)
    nm, nf, used = fn(data, len(data), msgs, fields, data_tag_table(), np.zeros(0, np.uint8))
    return nm, nf, used, msgs[:nm], fields[0, :nf]


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_two_messages_returns_both_with_fields(fn: Callable[..., Any]) -> None:
    nm, nf, used, msgs, tags = _scan(fn, HB + HB)
    assert (nm, used) == (2, 2 * len(HB))
    assert list(msgs[:, k.MSG_STATUS]) == [k.FRAME_OK, k.FRAME_OK]
    assert list(tags[:8]) == [8, 9, 35, 34, 49, 52, 56, 10]
    assert nf == 16


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_partial_message_consumes_nothing(fn: Callable[..., Any]) -> None:
    for cut in range(1, len(HB)):
        nm, _, used, _, _ = _scan(fn, HB[:cut])
        assert (nm, used) == (0, 0), cut


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_bad_checksum_reports_frame_and_continues(fn: Callable[..., Any]) -> None:
    bad = HB[:-4] + (b"%03d\x01" % ((int(HB[-4:-1]) + 1) % 256))
    nm, _, used, msgs, _ = _scan(fn, bad + HB)
    assert nm == 2
    assert list(msgs[:, k.MSG_STATUS]) == [k.FRAME_BAD_CHECKSUM, k.FRAME_OK]
    assert used == len(bad) + len(HB)


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_long_body_length_swallows_next_message(fn: Callable[..., Any]) -> None:
    # QuickFIX frames from the declared end to the next "<SOH>10=": the next message goes too.
    n = int(HB.split(b"\x019=")[1].split(b"\x01")[0])
    bad = HB.replace(b"\x019=%d\x01" % n, b"\x019=%d\x01" % (n + 10))
    _, _, used, msgs, _ = _scan(fn, bad + HB + HB)
    assert list(msgs[:, k.MSG_STATUS]) == [k.FRAME_BAD_LENGTH, k.FRAME_OK]
    assert used == len(bad) + 2 * len(HB)


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_msgtype_not_third_is_bad_order(fn: Callable[..., Any]) -> None:
    body = b"34=3\x0135=0\x01"
    raw = b"8=FIX.4.4\x019=%d\x01" % len(body) + body
    raw += b"10=%03d\x01" % (sum(raw) % 256)
    nm, _, _, msgs, _ = _scan(fn, raw)
    assert nm == 1
    assert msgs[0, k.MSG_STATUS] == k.FRAME_BAD_ORDER


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_leading_junk_reports_junk_then_message(fn: Callable[..., Any]) -> None:
    _, _, _, msgs, _ = _scan(fn, b"35=0\x01" + HB)
    assert list(msgs[:, k.MSG_STATUS]) == [k.FRAME_JUNK, k.FRAME_OK]
    assert msgs[1, k.MSG_START] == 5


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_negative_and_zero_tags_keeps_them(fn: Callable[..., Any]) -> None:
    # "-1=HI" and "0=HI" are session-rejected ("Invalid tag number"), not garbled.
    raw = _msg((8, "FIX.4.4"), (35, "0"), (34, "2"))
    body = raw[raw.index(b"35=") : raw.index(b"\x0110=") + 1] + b"-1=HI\x010=X\x01"
    msg = b"8=FIX.4.4\x019=%d\x01" % len(body) + body
    msg += b"10=%03d\x01" % (sum(msg) % 256)
    _, _, _, msgs, tags = _scan(fn, msg)
    assert msgs[0, k.MSG_STATUS] == k.FRAME_OK
    assert list(tags) == [8, 9, 35, 34, -1, 0, 10]


@pytest.mark.parametrize("fn", [k.checksum, k.checksum.py_func])  # type: ignore[attr-defined]
def test_checksum_matches_simplefix(fn: Callable[..., Any]) -> None:
    arr = np.frombuffer(HB, dtype=np.uint8)
    end = HB.index(b"10=")
    assert fn(arr, 0, end) == int(HB[end + 3 : end + 6])


@pytest.mark.parametrize("fn", SCAN)
def test_scan_frames_with_raw_data_reads_announced_length_including_soh(
    fn: Callable[..., Any],
) -> None:
    body = b"35=0\x0134=2\x0195=7\x0196=a\x01b=c\x01d\x01112=x\x01"
    raw = b"8=FIX.4.4\x019=%d\x01" % len(body) + body
    raw += b"10=%03d\x01" % (sum(raw) % 256)
    _, _, _, msgs, tags = _scan(fn, raw)
    assert msgs[0, k.MSG_STATUS] == k.FRAME_OK
    assert list(tags) == [8, 9, 35, 34, 95, 96, 112, 10]
