# SPDX-License-Identifier: MIT
"""The embedded demo: within five seconds there are orders, fills, positions and P&L."""

import functools
import time

import pytest

from engine.commands import (
    CancelAll,
    CommandAck,
    CommandError,
    ControlStrategy,
    SetKillSwitch,
    SetStrategyParameters,
    SubmitOrder,
)
from engine.demo import DEMO_STRATEGY_ID, build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import KillLevel, OrdStatus, SessionState, Side, StrategyState
from engine.events import (
    DepthChanged,
    EventRecord,
    FixMessageSeen,
    InstrumentAdded,
    OrderChanged,
    OrderFilled,
    PositionChanged,
    SessionStatusChanged,
    StrategyStatusChanged,
    VenueLinkChanged,
)
from engine.fix.codec import parse_timestamp
from engine.warmup import warm_up

pytestmark = pytest.mark.integration


def collect_until(
    client: EmbeddedEngineClient, pred: object, timeout_s: float
) -> list[EventRecord]:
    assert callable(pred)
    got: list[EventRecord] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got += client.drain()
        if pred(got):
            return got
        time.sleep(0.02)
    raise AssertionError(f"condition not met in {timeout_s} s; {len(got)} events")


def kinds(records: list[EventRecord], kind: type) -> list:
    return [r.event for r in records if isinstance(r.event, kind)]


@pytest.mark.parametrize("transport", ["fix", "inprocess"])
def test_demo_trades_within_five_seconds_and_obeys_commands(transport: str) -> None:
    warm_up()  # kernels compiled (or loaded from the cache) before the clock starts
    client = EmbeddedEngineClient(configure=functools.partial(build_demo, transport=transport))
    client.start()
    try:
        # A fill and its position; over FIX also an incremental market-data message, which
        # may come after the first fill (the first quotes can trade on the snapshot alone).
        def ready(ev: list[EventRecord]) -> bool:
            if not (kinds(ev, OrderFilled) and kinds(ev, PositionChanged)):
                return False
            seen = kinds(ev, FixMessageSeen)
            return transport != "fix" or any(m.msg_type == "X" and not m.outbound for m in seen)

        events = collect_until(client, ready, timeout_s=5.0)
        assert {e.symbol for e in kinds(events, InstrumentAdded)} == {"ESZ6", "NQZ6", "CLF7"}
        orders = kinds(events, OrderChanged)
        assert {o.order.symbol for o in orders} == {"ESZ6", "NQZ6", "CLF7"}
        assert all(o.order.strategy_id == DEMO_STRATEGY_ID for o in orders)
        if transport == "fix":
            sessions = kinds(events, SessionStatusChanged)
            assert sessions[-1].session_id == "FIX.4.4:QWCONSOLE->QWSIM"
            assert any(s.state is SessionState.LOGGED_ON for s in sessions)
            seen = kinds(events, FixMessageSeen)
            types = {(m.msg_type, m.outbound) for m in seen}
            assert {("A", True), ("A", False), ("D", True), ("8", False), ("V", True)} <= types
            assert {("W", False), ("X", False)} <= types  # market data arrives over FIX
            assert all(m.raw.startswith(b"8=FIX.4.4\x01") for m in seen)

            # CLF7's orders go over OUCH 5.0: acknowledged by the simulator's OUCH port.
            def ouch_acked(ev: list[EventRecord]) -> bool:
                return any(
                    o.order.symbol == "CLF7"
                    and o.order.venue_order_id
                    and o.order.status is not OrdStatus.REJECTED
                    for o in kinds(events + ev, OrderChanged)
                )

            events += collect_until(client, ouch_acked, timeout_s=5.0)
            links = [e for e in kinds(events, VenueLinkChanged) if e.protocol == "OUCH"]
            assert links[0].up
            assert links[0].detail.startswith("QWC1@127.0.0.1:")
            clf7 = [o.order for o in kinds(events, OrderChanged) if o.order.symbol == "CLF7"]
            assert all(o.client_order_id.startswith("O") for o in clf7)
            others = [o.order for o in kinds(events, OrderChanged) if o.order.symbol != "CLF7"]
            assert all(not o.client_order_id.startswith("O") for o in others)
            # Inbound: created is the peer's SendingTime <52> (millisecond stamps here), read
            # after it; outbound: built and written at once.
            for m in seen:
                if m.outbound:
                    assert m.ts_created == m.ts_wire
                else:
                    stamp = parse_timestamp(m.raw.split(b"\x0152=")[1].split(b"\x01")[0])
                    assert m.ts_created == stamp
                    assert m.ts_created % 1_000_000 == 0
                    # Same machine, same clock: sent before read (to the stamp's ms), and
                    # well under a second before.
                    assert m.ts_wire - 1_000_000_000 < m.ts_created <= m.ts_wire + 1_000_000
        depth = collect_until(
            client,
            lambda ev: any(d.own and d.bids and d.asks for d in kinds(ev, DepthChanged)),
            timeout_s=3.0,
        )
        ladder = next(d for d in kinds(depth, DepthChanged) if d.own and d.bids and d.asks)
        assert ladder.bids[0][0] < ladder.asks[0][0]
        assert [p for p, _q in ladder.bids] == sorted((p for p, _q in ladder.bids), reverse=True)
        for quote in ladder.own:
            if quote.status is OrdStatus.PENDING_NEW:  # not at the venue yet: no queue place
                assert quote.ahead_lots is None
                continue
            assert quote.ahead_lots is not None
            assert quote.ahead_lots >= 0
        # Some acknowledged quote had its queue estimate shown.
        assert any(q.ahead_lots is not None for d in kinds(depth, DepthChanged) for q in d.own)
        fill = kinds(events, OrderFilled)[0]
        assert fill.last_qty_lots >= 1
        assert kinds(events, PositionChanged)[-1].strategy_id == DEMO_STRATEGY_ID
        # The snapshot describes the same state.
        snap = client.snapshot()
        state_kinds = {type(e) for e in snap.state_events}
        assert {InstrumentAdded, OrderChanged, StrategyStatusChanged} <= state_kinds

        # Strategy control and validated parameters.
        bad = client.send(
            SetStrategyParameters(strategy_id=DEMO_STRATEGY_ID, values=(("qty_lots", 0),))
        ).result(2)
        assert isinstance(bad, CommandError)
        assert bad.reason == "parameter 'qty_lots': 0 is below the minimum 1"
        good = client.send(
            SetStrategyParameters(strategy_id=DEMO_STRATEGY_ID, values=(("qty_lots", 2),))
        ).result(2)
        assert isinstance(good, CommandAck)
        assert good.detail == "qty_lots=2"
        paused = client.send(ControlStrategy(strategy_id=DEMO_STRATEGY_ID, action="pause"))
        assert isinstance(paused.result(2), CommandAck)
        status = collect_until(
            client,
            lambda ev: any(
                e.state is StrategyState.PAUSED for e in kinds(ev, StrategyStatusChanged)
            ),
            timeout_s=2.0,
        )
        assert status

        # A manual order, then the kill switch blocks the next one and cancels it.
        manual = client.send(
            SubmitOrder(symbol="CLF7", side=Side.BUY, qty_lots=1, px_ticks=6_700)
        ).result(2)
        assert isinstance(manual, CommandAck)
        killed = client.send(SetKillSwitch(level=KillLevel.CANCEL_ALL, reason="test")).result(2)
        assert isinstance(killed, CommandAck)
        refused = client.send(
            SubmitOrder(symbol="CLF7", side=Side.BUY, qty_lots=1, px_ticks=6_700)
        ).result(2)
        assert isinstance(refused, CommandError)
        assert "kill switch is at CANCEL_ALL" in refused.reason
        after = collect_until(
            client,
            lambda ev: any(
                e.order.strategy_id == 0 and e.order.status is OrdStatus.CANCELED
                for e in kinds(ev, OrderChanged)
            ),
            timeout_s=2.0,
        )
        assert after
        assert isinstance(client.send(CancelAll()).result(2), CommandAck)
    finally:
        client.close()
    assert client.thread is not None
    assert not client.thread.is_alive()
