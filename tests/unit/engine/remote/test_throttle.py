# SPDX-License-Identifier: MIT
"""Failed-login throttling and audit folding over a real RemoteServer on 127.0.0.1 (issue 16).

Wrong tokens from one address slow that address down but never lock a valid token out, a
valid login does not reset the count of someone else's failures, and a flood of refused
commands folds into a few audit lines with counts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect

from engine.clock import TestClock
from engine.commands import SubmitOrder
from engine.enums import Side
from engine.remote.protocol import (
    PROTOCOL_VERSION,
    Auth,
    AuthOk,
    Error,
    Hello,
    Nak,
    decode_server,
    encode,
    encode_command,
)
from engine.remote.server import AuditLog, LoginThrottle
from tests.unit.engine.remote.conftest import ServedEngine

WRONG = "qw1.nobody.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


class Throttled(ServedEngine):
    """A served engine whose login throttle the test can read."""

    throttle: LoginThrottle


@pytest.fixture
def throttled(tmp_path: Path) -> Iterator[Throttled]:
    # The production policy with its delays scaled down (0.25 s -> 1 ms, a busy address's
    # short wait 0.5 -> 0.2 s), the busy threshold as in production.
    s = Throttled(tmp_path)
    s.throttle = LoginThrottle(
        s.clock, base_s=0.001, max_delay_s=0.032, busy_after=20, busy_delay_s=0.2
    )
    s._server_kw["throttle"] = s.throttle
    s.start()
    yield s
    s.stop()


async def _open(port: int, token: str) -> tuple[ClientConnection, object]:
    ws = await connect(f"ws://127.0.0.1:{port}/", compression=None, proxy=None, max_size=None)
    await ws.send(encode(Hello(version=PROTOCOL_VERSION, client="throttle-test")))
    await ws.recv()  # welcome
    await ws.send(encode(Auth(token=token)))
    reply = await ws.recv()
    assert isinstance(reply, bytes)
    return ws, decode_server(reply)


async def _login(port: int, token: str) -> tuple[object, float]:
    t0 = time.perf_counter()
    ws, answer = await _open(port, token)
    took = time.perf_counter() - t0
    await ws.close()
    return answer, took


def test_fifty_wrong_tokens_do_not_lock_the_admin_out(throttled: Throttled) -> None:
    admin = throttled.token("root", "admin")
    assert throttled.server is not None
    port = throttled.server.port

    async def run() -> tuple[list[object], object, float]:
        wrong = [(await _login(port, WRONG))[0] for _ in range(50)]
        answer, took = await _login(port, admin)
        return wrong, answer, took

    wrong, answer, took = asyncio.run(run())
    assert all(isinstance(w, Error) and w.code == "auth" for w in wrong)
    assert isinstance(answer, AuthOk)
    assert answer.user == "root"
    assert took < 1.0  # the busy address's short wait (0.2 s here), not a 5-minute lockout
    assert throttled.throttle.failures("127.0.0.1") == 50


def test_a_valid_login_does_not_reset_another_tokens_failures(throttled: Throttled) -> None:
    viewer = throttled.token("v", "viewer")
    assert throttled.server is not None
    port = throttled.server.port

    async def run() -> list[float]:
        waits = []
        for i in range(24):
            _, took = await _login(port, WRONG)
            waits.append(took)
            if i % 2:  # a valid login between guesses used to clear the count
                answer, _ = await _login(port, viewer)
                assert isinstance(answer, AuthOk)
        return waits

    waits = asyncio.run(run())
    assert throttled.throttle.failures("127.0.0.1") == 24
    # the delays kept doubling to their cap (32 ms), and from 20 failures on every login
    # from the address waits (0.2 s here) first
    assert min(waits[6:19]) >= 0.032
    assert min(waits[20:]) >= 0.2


def test_refused_orders_fold_into_counted_audit_lines(throttled: Throttled) -> None:
    trader = throttled.token("t", "trader")
    assert throttled.server is not None
    port = throttled.server.port
    n = 3000

    async def run() -> list[object]:
        ws, ok = await _open(port, trader)
        assert isinstance(ok, AuthOk)
        order = SubmitOrder(symbol="NOPE", side=Side.BUY, qty_lots=1, px_ticks=100)
        for rid in range(1, n + 1):
            await ws.send(encode_command(rid, order))
        naks: list[object] = []
        while len(naks) < n:
            reply = await asyncio.wait_for(ws.recv(), 10)
            assert isinstance(reply, bytes)
            msg = decode_server(reply)
            if isinstance(msg, Nak):
                naks.append(msg)
        await ws.close()
        return naks

    naks = asyncio.run(run())
    assert {type(x) for x in naks} == {Nak}
    reason = naks[0].reason  # type: ignore[attr-defined]
    throttled.stop()  # closing the server writes the open window's folded line
    lines = [json.loads(x) for x in throttled.audit_path.read_text().splitlines()]
    orders = [x for x in lines if x.get("kind") == "SubmitOrder"]
    first, folded = orders[0], orders[-1]
    assert len(orders) == 2
    assert (first["event"], first["result"], first["rid"]) == ("command", "refused", 1)
    assert (folded["event"], folded["of"]) == ("repeated", "command")
    assert (folded["user"], folded["peer"], folded["count"]) == ("t", "127.0.0.1", n - 1)
    assert folded["reasons"] == {reason: n - 1}
    assert len(throttled.audit_path.read_bytes()) < 4096


def test_audit_folding_starts_a_new_window_after_the_old_one(tmp_path: Path) -> None:
    clock = TestClock()
    audit = AuditLog(tmp_path / "audit.log", clock, repeat_window_s=10)
    for i in range(5):
        audit.write(event="login-refused", peer=f"10.0.0.9:{5000 + i}", reason="token refused")
    audit.write(event="login", user="root", peer="10.0.0.9:6000")  # always written
    clock.advance(11 * 10**9)
    audit.write(event="login-refused", peer="10.0.0.9:7000", reason="token refused")
    audit.close()
    lines = [json.loads(x) for x in (tmp_path / "audit.log").read_text().splitlines()]
    assert [(x["event"], x.get("count")) for x in lines] == [
        ("login-refused", None), ("login", None), ("repeated", 4), ("login-refused", None),
    ]  # fmt: skip
    assert (lines[2]["of"], lines[2]["peer"]) == ("login-refused", "10.0.0.9")
    assert lines[2]["reasons"] == {"token refused": 4}
