# SPDX-License-Identifier: MIT
"""The remote client and server over real loopback sockets: stream, commands, auth, resume."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engine.client import ClientState, EngineStartError
from engine.commands import CommandAck, CommandError, Ping, SetRiskLimits, SubmitOrder
from engine.enums import Side
from engine.events import Alert, EventRecord
from engine.remote.client import Backoff, RemoteEngineClient
from engine.remote.tls import PinStore
from tests.unit.engine.remote.conftest import ServedEngine


def _client(served: ServedEngine, token: str, **kw: object) -> RemoteEngineClient:
    assert served.server is not None
    return RemoteEngineClient(
        "127.0.0.1", served.server.port, token, tls=False, backoff=Backoff(0.05, 0.5), **kw
    )  # type: ignore[arg-type]


def _collect(client: RemoteEngineClient, until: int, timeout: float = 10.0) -> list[EventRecord]:
    """Drain until an alert with text ``f"a{until - 1}"`` arrived (or time out)."""
    out: list[EventRecord] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out += client.drain()
        if any(isinstance(r.event, Alert) and r.event.text == f"a{until - 1}" for r in out):
            return out
        time.sleep(0.01)
    raise AssertionError(f"only {len(out)} records arrived")


def _contiguous(records: list[EventRecord]) -> None:
    seqs = [r.seq for r in records]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "gap or duplicate in the stream"


def test_stream_arrives_in_order_without_gaps(served: ServedEngine) -> None:
    client = _client(served, served.token("v", "viewer"))
    client.start()
    try:
        assert client.state is ClientState.CONNECTED
        assert (client.user, client.role, client.engine_id) == ("v", "viewer", "test-engine")
        served.publish_alerts(5000)
        got = _collect(client, 5000)
        _contiguous(got)
        texts = [r.event.text for r in got if isinstance(r.event, Alert)]
        assert texts == [f"a{i}" for i in range(5000)]
    finally:
        client.close()
    assert client.state.name == "DISCONNECTED"


def test_ping_is_acknowledged_and_snapshot_matches_stream(served: ServedEngine) -> None:
    client = _client(served, served.token("v", "viewer"))
    client.start()
    try:
        ack = client.send(Ping(payload="hi")).result(5)
        assert isinstance(ack, CommandAck)
        assert ack.detail == "hi"
        served.publish_alerts(10)
        got = _collect(client, 10)
        snap = client.snapshot()
        assert snap.engine_id == "test-engine"
        assert snap.seq >= got[-1].seq  # snapshot numbering is the client's own
    finally:
        client.close()


@pytest.mark.parametrize("token", ["", "qw1.nope.nope", "garbage"])
def test_missing_or_wrong_token_is_refused(served: ServedEngine, token: str) -> None:
    served.token("v", "viewer")
    client = _client(served, token)
    with pytest.raises(EngineStartError, match="login refused: token refused"):
        client.start(timeout_s=10)
    assert client.state is ClientState.DISCONNECTED
    lines = [json.loads(x) for x in served.audit_path.read_text().splitlines()]
    assert any(x["event"] == "login-refused" for x in lines)


def test_expired_token_is_refused(served: ServedEngine) -> None:
    token = served.token("old", "admin", expires_ns=served.clock.now_ns() - 1)
    client = _client(served, token)
    with pytest.raises(EngineStartError, match="token 'old' expired"):
        client.start(timeout_s=10)


def test_a_token_with_a_wrong_secret_is_refused(served: ServedEngine) -> None:
    good = served.token("t", "trader")
    bad = good[:-3] + ("AAA" if not good.endswith("AAA") else "BBB")
    with pytest.raises(EngineStartError, match="token refused"):
        _client(served, bad).start(timeout_s=10)


def test_viewer_cannot_send_an_order(served: ServedEngine) -> None:
    client = _client(served, served.token("v", "viewer"))
    client.start()
    try:
        cmd = SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=1, px_ticks=24000)
        res = client.send(cmd).result(5)
        assert isinstance(res, CommandError)
        assert res.reason == "forbidden: role viewer may not send SubmitOrder"
        assert res.command is cmd
    finally:
        client.close()
    audit = [json.loads(x) for x in served.audit_path.read_text().splitlines()]
    (entry,) = [x for x in audit if x.get("kind") == "SubmitOrder"]
    assert entry["user"] == "v"
    assert entry["result"] == "forbidden"
    assert entry["args"]["qty_lots"] == 1


def test_trader_cannot_change_risk_limits_admin_can_ask(served: ServedEngine) -> None:
    trader = _client(served, served.token("t", "trader"))
    admin = _client(served, served.token("root", "admin"))
    trader.start()
    admin.start()
    try:
        res = trader.send(SetRiskLimits(max_order_qty_lots=1_000_000)).result(5)
        assert isinstance(res, CommandError)
        assert res.reason.startswith("forbidden: role trader may not send SetRiskLimits")
        # The admin passes the role check; this bare engine has no trading desk to apply it.
        res = admin.send(SetRiskLimits(max_order_qty_lots=5)).result(5)
        assert isinstance(res, CommandError)
        assert res.reason == "unsupported command SetRiskLimits"
    finally:
        trader.close()
        admin.close()
    audit = [json.loads(x) for x in served.audit_path.read_text().splitlines()]
    who = [(x["user"], x["result"]) for x in audit if x.get("kind") == "SetRiskLimits"]
    assert who == [("t", "forbidden"), ("root", "refused")]


def test_reconnect_resumes_after_last_event_without_gap_or_duplicate(tmp_path: Path) -> None:
    served = ServedEngine(tmp_path)
    port = served.start()
    client = _client(served, served.token("v", "viewer"))
    client.start()
    try:
        served.publish_alerts(100, "a")
        first = _collect(client, 100)
        # Drop the link under the client's feet: close the server side of every console.
        assert served.server is not None
        server = served.server

        def kick() -> None:
            for c in list(server._consoles):
                c.ws.transport.abort()

        served.call(kick)
        deadline = time.monotonic() + 5
        while client.state is ClientState.CONNECTED and time.monotonic() < deadline:
            time.sleep(0.005)
        served.publish_alerts(200, "b")  # while the console is away
        deadline = time.monotonic() + 10
        while client.connects < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert client.connects == 2
        assert client.resyncs == 0  # resumed, no snapshot
        served.publish_alerts(50, "a")
        rest = _collect(client, 50)
        every = first + rest
        _contiguous(every)
        texts = [r.event.text for r in every if isinstance(r.event, Alert)]
        assert texts == [f"a{i}" for i in range(100)] + [f"b{i}" for i in range(200)] + [
            f"a{i}" for i in range(50)
        ]
        assert port == server.port
    finally:
        client.close()
        served.stop()


def test_lagging_console_is_resynchronised_and_engine_not_slowed(tmp_path: Path) -> None:
    served = ServedEngine(tmp_path, client_queue=500, history=1000)
    served.start()
    client = _client(served, served.token("v", "viewer"))
    client.start()
    try:
        assert served.server is not None
        # Freeze the client's loop so its socket fills; the engine publishes on regardless.
        assert client._loop is not None
        blocker = client._loop.call_soon_threadsafe
        import threading

        hold = threading.Event()
        blocker(hold.wait)
        t0 = time.perf_counter()
        served.publish_alerts(20_000, "x")
        publish_s = time.perf_counter() - t0
        hold.set()
        deadline = time.monotonic() + 20
        while client.resyncs == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert served.server.resyncs >= 1
        assert client.resyncs >= 1
        served.publish_alerts(10, "a")  # after the resynchronisation: delivered as events
        got = _collect(client, 10, timeout=20)
        _contiguous(got)
        assert client.dropped == 0
        assert publish_s < 5.0
    finally:
        client.close()
        served.stop()


def test_tls_pins_fingerprint_on_first_use_and_refuses_a_changed_one(tmp_path: Path) -> None:
    (tmp_path / "e1").mkdir()
    served = ServedEngine(tmp_path / "e1", tls=True)
    port = served.start()
    pins = PinStore(tmp_path / "console" / "known-engines.json")
    token = served.token("v", "viewer")
    client = RemoteEngineClient("127.0.0.1", port, token, tls=True, pins=pins)
    client.start()
    client.close()
    assert pins.get(f"127.0.0.1:{port}") == served.fingerprint
    served.stop()
    # Another engine (another certificate) answers on the same port: refused before login.
    (tmp_path / "e2").mkdir()
    other = ServedEngine(tmp_path / "e2", tls=True)
    other.start(port)
    try:
        other.token("v", "viewer")
        client = RemoteEngineClient("127.0.0.1", port, token, tls=True, pins=pins)
        with pytest.raises(EngineStartError, match=r"certificate of 127\.0\.0\.1:\d+ changed"):
            client.start()
        audit = other.audit_path.read_text() if other.audit_path.exists() else ""
        assert "login" not in audit  # the token never reached the impostor
    finally:
        other.stop()


def test_repeated_failed_logins_are_slowed_down(served: ServedEngine) -> None:
    served.token("v", "viewer")
    waits = []
    for _ in range(4):
        t0 = time.perf_counter()
        with pytest.raises(EngineStartError):
            _client(served, "qw1.x.y").start(timeout_s=20)
        waits.append(time.perf_counter() - t0)
    # base 0.05 s doubling: 0.05, 0.1, 0.2, 0.4
    assert waits[3] > waits[0] + 0.2
