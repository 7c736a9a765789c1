# SPDX-License-Identifier: MIT
"""``--market-data relay``: the relay address, and bad input said in one line (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.headless import main
from engine.relay.feed import RelayAddress, parse_relay_address


def test_relay_addresses() -> None:
    assert parse_relay_address("wss://10.0.4.30:7350") == RelayAddress("10.0.4.30", 7350)
    assert parse_relay_address("ws://127.0.0.1:7350/") == RelayAddress("127.0.0.1", 7350, False)
    assert parse_relay_address("wss://relay.ny4:7350#ab:cd") == RelayAddress(
        "relay.ny4", 7350, True, "AB:CD"
    )
    assert parse_relay_address("wss://[::1]:7350").host == "::1"
    for bad in ("10.0.4.30:7350", "https://h:1", "wss://h", "wss://h:0", "wss://:1",
                "ws://h:1#AB"):  # fmt: skip
        with pytest.raises(ValueError, match="relay address"):
            parse_relay_address(bad)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--market-data", "relay"], {},
         "--market-data relay needs --relay wss://host:port"),
        (["--relay", "wss://h:1"], {}, "--relay and --relay-pins go with --market-data relay"),
        (["--market-data", "relay", "--relay", "h:1"], {},
         "--relay: relay address 'h:1': must be wss://host:port[#fingerprint]"),
        (["--market-data", "relay", "--relay", "wss://h:1"], {},
         "--market-data relay: the relay's token is read from $QWCONSOLE_RELAY_TOKEN, "
         "which is not set"),
    ],
)  # fmt: skip
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
