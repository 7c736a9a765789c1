# SPDX-License-Identifier: MIT
"""``--market-data relay``: the address, bad input in one line (exit 2), link alerts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.core import Engine
from engine.enums import AlertLevel
from engine.events import Alert, BookUpdated
from engine.headless import main
from engine.marketdata import MarketData
from engine.relay.feed import RelayAddress, RelayFeed, parse_relay_address
from engine.relay.server import Relay
from engine.remote.server import AuditLog
from engine.remote.tls import PinStore, make_self_signed, server_context
from engine.remote.tokens import TokenStore
from tests.unit.engine.relay.synth import l2_rows


def test_relay_addresses() -> None:
    assert parse_relay_address("wss://10.0.4.30:7350") == RelayAddress("10.0.4.30", 7350)
    assert parse_relay_address("ws://127.0.0.1:7350/") == RelayAddress("127.0.0.1", 7350, False)
    assert parse_relay_address("wss://relay.ny4:7350#ab:cd") == RelayAddress(
        "relay.ny4", 7350, True, "AB:CD"
    )
    assert parse_relay_address("wss://[::1]:7350").host == "::1"
    for bad in ("10.0.4.30:7350", "https://h:1", "wss://h", "wss://h:0", "wss://:1", "ws://h:1#AB"):
        with pytest.raises(ValueError, match="relay address"):
            parse_relay_address(bad)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--market-data", "relay"], {}, "--market-data relay needs --relay wss://host:port"),
        (["--relay", "wss://h:1"], {}, "--relay and --relay-pins go with --market-data relay"),
        (
            ["--market-data", "relay", "--relay", "h:1"],
            {},
            "--relay: relay address 'h:1': must be wss://host:port[#fingerprint]",
        ),
        (
            ["--market-data", "relay", "--relay", "wss://h:1"],
            {},
            "--market-data relay: the relay's token is read from $QWCONSOLE_RELAY_TOKEN, "
            "which is not set",
        ),
    ],
)
def test_bad_relay_options_are_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    monkeypatch.delenv("QWCONSOLE_RELAY_TOKEN", raising=False)
    config = tmp_path / "engine.toml"
    config.write_text("")
    with pytest.raises(SystemExit) as e:
        main(["--config", str(config), *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"qwconsole engine: error: {message}"), err
    with pytest.raises(SystemExit):
        main(["--demo", "--market-data", "relay", "--relay", "wss://h:1"])
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "qwconsole engine: error: --market-data relay goes with --config (the demo's market is "
        "its own) (see 'qwconsole engine --help')"
    )


def test_the_built_in_simulator_is_its_own_market(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QWCONSOLE_RELAY_TOKEN", "qw1.x.y")
    config = tmp_path / "engine.toml"
    config.write_text('[simulator]\nenabled = true\n[files]\njournal_dir = ""\n')
    with pytest.raises(SystemExit) as e:
        main(["--config", str(config), "--market-data", "relay", "--relay", "wss://h:1"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"qwconsole engine: error: {config}: --market-data relay: the built-in simulator "
        "([simulator] enabled) is the market; trade on a venue instead (see 'qwconsole engine "
        "--help')"
    )


def test_an_engine_is_told_when_its_relay_link_drops_and_comes_back(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("engine", "viewer", LiveClock().now_ns())
    rows = l2_rows(3000, 2, seed=5)

    async def main() -> None:
        clock = LiveClock()
        relay_market = MarketData(["AAA", "BBB"], MessageBus(), clock, n_levels=200)
        relay = Relay("r1", relay_market, clock, tokens, audit=AuditLog(tmp_path / "a.log", clock))
        await relay.open()
        relay_market.apply(rows[:1000])
        engine = Engine(clock, engine_id="e1")
        alerts: list[Alert] = []
        books: list[BookUpdated] = []
        engine.bus.subscribe(Alert, alerts.append)
        engine.bus.subscribe(BookUpdated, books.append)
        market = MarketData(["AAA", "BBB"], engine.bus, clock, n_levels=200)
        feed = RelayFeed(
            market,
            parse_relay_address(f"ws://127.0.0.1:{relay.port}"),
            token,
            watch_interval_s=0.02,
        )
        feed.start(engine)
        await asyncio.wait_for(feed.ready.wait(), 10)
        assert books  # the snapshot reached the engine's bus as BookUpdated
        feed.client.drop()
        relay_market.apply(rows[1000:2000])  # while it is away
        loop = asyncio.get_running_loop()
        end = loop.time() + 10
        while len(alerts) < 2 or market.books.top(0, 200)[0].tolist() != (
            relay_market.books.top(0, 200)[0].tolist()
        ):
            assert loop.time() < end, alerts
            await asyncio.sleep(0.02)
        lost, back = alerts[:2]
        assert lost.level is AlertLevel.WARNING
        assert lost.text.startswith(f"market-data relay 127.0.0.1:{relay.port}: link lost (")
        assert back.level is AlertLevel.INFO
        assert back.text.startswith(f"market-data relay 127.0.0.1:{relay.port}: link back")
        assert feed.client.resumed == 2  # both books resumed where they stopped: no gap
        assert feed.client.gaps == 0
        assert feed.failure == ""
        await feed.stop()
        await relay.close()

    asyncio.run(main())


def test_a_fingerprint_in_the_address_is_the_only_certificate_accepted(tmp_path: Path) -> None:
    good = make_self_signed(tmp_path / "r.crt", tmp_path / "r.key")
    other = make_self_signed(tmp_path / "o.crt", tmp_path / "o.key")
    assert good != other
    tokens = TokenStore(tmp_path / "tokens.toml")
    token = tokens.add("engine", "viewer", LiveClock().now_ns())

    async def main() -> None:
        clock = LiveClock()
        relay_market = MarketData(["AAA"], MessageBus(), clock, n_levels=200)
        tls = server_context(tmp_path / "r.crt", tmp_path / "r.key")
        relay = Relay(
            "r1",
            relay_market,
            clock,
            tokens,
            audit=AuditLog(tmp_path / "a.log", clock),
            ssl_context=tls,
        )
        await relay.open()
        engine = Engine(clock, engine_id="e1")
        url = f"wss://127.0.0.1:{relay.port}"
        wrong = RelayFeed(
            MarketData(["AAA"], engine.bus, clock),
            parse_relay_address(f"{url}#{other}"),
            token,
            pins=PinStore(tmp_path / "p1.json"),
        )
        wrong.start(engine)
        loop = asyncio.get_running_loop()
        end = loop.time() + 10
        while not wrong.failure:
            assert loop.time() < end
            await asyncio.sleep(0.02)
        assert wrong.failure.startswith(
            f"market-data relay 127.0.0.1:{relay.port}: the certificate of"
        )
        right = RelayFeed(
            MarketData(["AAA"], engine.bus, clock),
            parse_relay_address(f"{url}#{good.lower()}"),
            token,
            pins=PinStore(tmp_path / "p2.json"),
        )
        right.start(engine)
        await asyncio.wait_for(right.ready.wait(), 10)
        await right.stop()
        with pytest.raises(ValueError, match="pins another certificate"):
            RelayFeed(
                MarketData(["AAA"], engine.bus, clock),
                parse_relay_address(f"{url}#{other}"),
                token,
                pins=PinStore(tmp_path / "p2.json"),
            )
        await relay.close()

    asyncio.run(main())
