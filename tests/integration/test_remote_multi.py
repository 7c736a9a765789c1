# SPDX-License-Identifier: MIT
"""``MultiEngineClient`` over two real remote engines: one stream, qualified ids, routing."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.multi_client import ALL, ID_STRIDE, MultiEngineClient
from engine.commands import CancelOrder, CommandAck, CommandError, ControlSession, Ping
from engine.events import Alert, EventRecord
from engine.remote.client import RemoteEngineClient
from tests.unit.engine.remote.conftest import ServedEngine

pytestmark = pytest.mark.integration


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[list[ServedEngine], list[RemoteEngineClient]]]:
    served, clients = [], []
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        s = ServedEngine(tmp_path / name, engine_id=name)
        s.start()
        assert s.server is not None
        c = RemoteEngineClient(
            "127.0.0.1", s.server.port, s.token("u", "admin"), tls=False, name=name, max_queue=200
        )
        c.start()
        served.append(s)
        clients.append(c)
    yield served, clients
    for c in clients:
        c.close()
    for s in served:
        s.stop()


def _audit(s: ServedEngine) -> list[dict[str, object]]:
    return [json.loads(x) for x in s.audit_path.read_text().splitlines()]


def _drain_until(multi: MultiEngineClient, pred: object, timeout: float = 10) -> list[EventRecord]:
    out: list[EventRecord] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out += multi.drain()
        if pred(out):  # type: ignore[operator]
            return out
        time.sleep(0.01)
    raise AssertionError(f"condition not met; {len(out)} records")


def test_one_contiguous_stream_from_both_engines(
    pair: tuple[list[ServedEngine], list[RemoteEngineClient]],
) -> None:
    served, clients = pair
    multi = MultiEngineClient(clients)
    served[0].publish_alerts(50, "a")
    served[1].publish_alerts(50, "b")
    got = _drain_until(multi, lambda rs: sum(isinstance(r.event, Alert) for r in rs) >= 100)
    seqs = [r.seq for r in got]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    texts = {r.event.text for r in got if isinstance(r.event, Alert)}
    assert {f"a{i}" for i in range(50)} | {f"b{i}" for i in range(50)} <= texts
    assert multi.name == "2 engines"


def test_commands_are_routed_by_qualified_ids(
    pair: tuple[list[ServedEngine], list[RemoteEngineClient]],
) -> None:
    served, clients = pair
    multi = MultiEngineClient(clients)
    cmd = CancelOrder(order_id=ID_STRIDE + 5)
    res = multi.send(cmd).result(5)
    assert isinstance(res, CommandError)
    assert res.command is cmd  # the caller sees its own command back
    beta = [a for a in _audit(served[1]) if a.get("kind") == "CancelOrder"]
    assert [a["args"] for a in beta] == [{"order_id": 5}]
    assert not [a for a in _audit(served[0]) if a.get("kind") == "CancelOrder"]
    multi.send(ControlSession(session_id="beta:FIX.4.4:A->B", action="logon")).result(5)
    (sess,) = [a for a in _audit(served[1]) if a.get("kind") == "ControlSession"]
    assert sess["args"]["session_id"] == "FIX.4.4:A->B"  # type: ignore[index]


def test_selection_sends_idless_commands_to_one_or_all(
    pair: tuple[list[ServedEngine], list[RemoteEngineClient]],
) -> None:
    served, clients = pair
    multi = MultiEngineClient(clients)
    multi.selected = 1
    res = multi.send(Ping(payload="p")).result(5)
    assert isinstance(res, CommandAck)
    assert [a["user"] for a in _audit(served[1]) if a.get("kind") == "Ping"] == ["u"]
    assert not [a for a in _audit(served[0]) if a.get("kind") == "Ping"]
    multi.selected = ALL
    res = multi.send(Ping(payload="q")).result(5)
    assert isinstance(res, CommandAck)
    assert res.detail == "alpha: q; beta: q"


def test_member_loss_leaves_a_hole_so_the_gui_resynchronises(
    pair: tuple[list[ServedEngine], list[RemoteEngineClient]],
) -> None:
    served, clients = pair
    multi = MultiEngineClient(clients)
    multi.drain()
    served[1].publish_alerts(1000, "x")  # beta's client keeps 200: it drops the oldest
    time.sleep(0.5)
    got = multi.drain()
    seqs = [r.seq for r in got]
    assert clients[1].dropped > 0
    assert seqs[-1] - seqs[0] + 1 > len(seqs), "the lost events must show as a gap"
    snap = multi.snapshot()
    assert snap.seq == seqs[-1]
