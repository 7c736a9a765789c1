# SPDX-License-Identifier: MIT
"""Risk over the wire: SetRiskLimits and RiskLimitsChanged round-trip, and whose orders a role
may send (a trader only manual ones, an admin under a strategy's id too)."""

from __future__ import annotations

import json

from engine.commands import CommandError, ReplaceOrder, SetRiskLimits, SubmitOrder
from engine.enums import Side
from engine.events import RiskLimitsChanged
from engine.remote.client import Backoff, RemoteEngineClient
from engine.remote.protocol import (
    Cmd,
    decode_client,
    decode_command,
    decode_event,
    encode_command,
    encode_event,
)
from engine.remote.tokens import refusal
from tests.unit.engine.remote.conftest import ServedEngine


def _client(served: ServedEngine, token: str) -> RemoteEngineClient:
    assert served.server is not None
    return RemoteEngineClient(
        "127.0.0.1", served.server.port, token, tls=False, backoff=Backoff(0.05, 0.5)
    )


def test_set_risk_limits_with_clear_and_scope_round_trips() -> None:
    cmd = SetRiskLimits(
        strategy_id=None,
        symbol="CLF7",
        price_band_pct=2.5,
        clear=("price_band_ticks",),
        actor="alice@127.0.0.1",
    )
    frame = decode_client(encode_command(7, cmd))
    assert isinstance(frame, Cmd)
    assert decode_command(frame) == cmd
    strategy = SetRiskLimits(strategy_id=20170101, max_open_orders=4, clear=("max_position_lots",))
    frame = decode_client(encode_command(8, strategy))
    assert isinstance(frame, Cmd)
    assert decode_command(frame) == strategy
    order = SubmitOrder(symbol="CLF7", side=Side.BUY, qty_lots=1, px_ticks=8000, band_override=True)
    frame = decode_client(encode_command(9, order))
    assert isinstance(frame, Cmd)
    assert decode_command(frame) == order
    move = ReplaceOrder(order_id=3, px_ticks=8000, band_override=True)
    frame = decode_client(encode_command(10, move))
    assert isinstance(frame, Cmd)
    assert decode_command(frame) == move


def test_risk_limits_changed_round_trips_with_limits_off() -> None:
    ev = RiskLimitsChanged(
        ts_event=1,
        engine_id="ny4-1",
        strategy_id=None,
        symbol="",
        max_order_qty_lots=50,
        max_order_notional=None,
        max_position_lots=25,
        price_band_ticks=None,
        price_band_pct=5.0,
        max_open_orders=None,
        max_orders_per_second=500,
        actor="config",
        change="start",
    )
    assert decode_event(encode_event(ev)) == ev
    strategy = RiskLimitsChanged(**{**_fields(ev), "strategy_id": 0, "change": "snapshot"})
    assert decode_event(encode_event(strategy)) == strategy


def _fields(ev: RiskLimitsChanged) -> dict[str, object]:
    return {name: getattr(ev, name) for name in ev.__dataclass_fields__}


def test_only_an_admin_may_send_an_order_under_a_strategys_id() -> None:
    manual = SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=1, px_ticks=100)
    theirs = SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=1, px_ticks=100, strategy_id=9)
    assert refusal("trader", manual) is None
    assert refusal("admin", theirs) is None
    assert refusal("trader", theirs) == (
        "role trader may send orders only as manual orders (strategy_id 0), not under "
        "strategy 9; that needs an admin token"
    )


def test_trader_order_under_another_strategys_id_is_forbidden_over_the_wire(
    served: ServedEngine,
) -> None:
    trader = _client(served, served.token("t", "trader"))
    admin = _client(served, served.token("root", "admin"))
    trader.start()
    admin.start()
    theirs = SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=1, px_ticks=100, strategy_id=9)
    try:
        res = trader.send(theirs).result(5)
        assert isinstance(res, CommandError)
        assert res.reason == (
            "forbidden: role trader may send orders only as manual orders (strategy_id 0), not "
            "under strategy 9; that needs an admin token"
        )
        # A manual order and the admin's pass the role checks (this bare engine has no desk).
        res = trader.send(SubmitOrder(symbol="ESZ6", side=Side.BUY, qty_lots=1)).result(5)
        assert isinstance(res, CommandError)
        assert res.reason == "unsupported command SubmitOrder"
        res = admin.send(theirs).result(5)
        assert isinstance(res, CommandError)
        assert res.reason == "unsupported command SubmitOrder"
        res = admin.send(SetRiskLimits(max_open_orders=3)).result(5)
        assert isinstance(res, CommandError)
    finally:
        trader.close()
        admin.close()
    audit = [json.loads(x) for x in served.audit_path.read_text().splitlines()]
    orders = [(x["user"], x["result"]) for x in audit if x.get("kind") == "SubmitOrder"]
    assert orders == [("t", "forbidden"), ("t", "refused"), ("root", "refused")]
    (limits,) = [x for x in audit if x.get("kind") == "SetRiskLimits"]
    assert limits["args"]["actor"].startswith("root@")  # the server names who changed them
