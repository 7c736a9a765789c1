# SPDX-License-Identifier: MIT
"""relay.toml: what is read, and one-line errors naming the file, the key and why."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.cli import _sources, main
from engine.relay.config import RelayConfigError, load
from engine.relay.sources import EngineSource, FixSource

GOOD = """
[relay]
id = "r"
port = 0
token_store = "tokens.toml"
cache_rows = 5000

[[instruments]]
symbol = "AAA"
tick_size = "0.01"

[[instruments]]
symbol = "BBB"
tick_size = "0.25"
lot_size = "10"

[[sources]]
type = "tickstore"
path = "day.h5"
day = "20261204"
speed = 0

[[sources]]
type = "relay"
connect = "127.0.0.1:7350"
tls = false
symbols = ["BBB"]

[[sources]]
type = "itch"
group_a = "239.1.1.1:30001"
group_b = "239.1.1.2:30001"
session = "SESSION001"
recovery = "127.0.0.1:30005"

[persist]
path = "out.h5"
"""


def test_a_full_file_is_read(tmp_path: Path) -> None:
    f = tmp_path / "relay.toml"
    f.write_text(GOOD)
    cfg = load(f)
    assert [i.symbol for i in cfg.instruments] == ["AAA", "BBB"]
    assert cfg.instruments[1].lot_size == "10"
    assert cfg.max_lag_rows == 5000  # min(20,000, cache_rows)
    assert cfg.token_store == tmp_path / "tokens.toml"
    assert cfg.persist_path == tmp_path / "out.h5"
    assert cfg.status_role == "viewer"  # the default: any subscriber may see the status
    f.write_text(GOOD.replace("cache_rows = 5000", 'cache_rows = 5000\nstatus_role = "admin"'))
    assert load(f).status_role == "admin"
    tick, relay, itch = cfg.sources
    assert (tick.kind, tick.speed, tick.symbols, tick.path) == (
        "tickstore",
        0.0,
        ["AAA", "BBB"],
        tmp_path / "day.h5",
    )
    assert (relay.host, relay.port, relay.tls, relay.symbols) == ("127.0.0.1", 7350, False, ["BBB"])
    assert itch.group_b is not None
    assert itch.group_b.address == "239.1.1.2"
    assert itch.session == b"SESSION001"
    assert itch.recovery == ("127.0.0.1", 30005)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("port = 0", "port = 70000", "relay.port: must be an integer in 0..65535, got 70000"),
        (
            'id = "r"',
            'id = "r"\nbind = "10.1.1.1"',
            "relay.bind: 10.1.1.1 is not a loopback address: tls_cert and tls_key are required",
        ),
        (
            "cache_rows = 5000",
            "cache_rows = 5000\nmax_lag_rows = 9000",
            "relay.max_lag_rows: must be an integer in 1..5000, got 9000",
        ),
        (
            'tick_size = "0.25"',
            "tick_size = 0.25",
            "instruments[1].tick_size: must be a non-empty string, got 0.25",
        ),
        (
            'symbols = ["BBB"]',
            'symbols = ["CCC"]',
            "sources[1].symbols: 'CCC' is not one of [[instruments]] (AAA, BBB)",
        ),
        ("speed = 0", "speed = -1", "sources[0].speed: must be a number >= 0, got -1"),
        (
            'day = "20261204"',
            'day = "2026-12-04"',
            "sources[0].day: must be YYYYMMDD, got '2026-12-04'",
        ),
        ("tls = false", "tls = true", "sources[1].pins: is required with tls = true"),
        (
            'group_a = "239.1.1.1:30001"',
            'group_a = "10.0.0.1:30001"',
            "sources[2].group_a: 10.0.0.1 is not a multicast address",
        ),
        (
            'session = "SESSION001"',
            'session = "S1"',
            "sources[2].session: must be 10 characters (MoldUDP64), got 'S1'",
        ),
        (
            'type = "itch"',
            'type = "sbe"',
            "sources[2].type: must be tickstore, relay, itch, fix or engine, got 'sbe'",
        ),
        ('path = "out.h5"', 'path = "out.h5"\nspeed = 2', "persist.speed: unknown key"),
        ('token_store = "tokens.toml"', "", "relay.token_store: is required"),
        (
            "cache_rows = 5000",
            'cache_rows = 5000\nstatus_role = "root"',
            "relay.status_role: must be viewer, trader or admin, got 'root'",
        ),
    ],
)
def test_errors_name_the_file_the_key_and_why(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    f = tmp_path / "relay.toml"
    assert old in GOOD
    f.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(RelayConfigError) as e:
        load(f)
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith(f"{f}: {message}"), text


def test_the_command_says_it_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "relay.toml"
    f.write_text("[relay\n")
    assert main(["--config", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"qwconsole relay: error: {f}: not valid TOML")
    assert main(["--config", str(tmp_path / "nope.toml")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"qwconsole relay: error: {tmp_path / 'nope.toml'}: no such file"
    )


FIX_SOURCE = """
[[sources]]
type = "fix"
name = "venue-md"
sessions = "md.cfg"
symbols = ["AAA"]
"""

MD_CFG = """\
[DEFAULT]
ConnectionType=initiator
SocketConnectHost=127.0.0.1
SocketConnectPort=5001
HeartBtInt=5
NonStopSession=Y

[SESSION]
BeginString=FIX.4.4
SenderCompID=RELAY
TargetCompID=VENUE

[SESSION]
BeginString=FIX.4.2
SenderCompID=RELAY
TargetCompID=OTHER
"""


def test_a_fix_source_names_a_settings_file_and_an_initiator_session(tmp_path: Path) -> None:
    f = tmp_path / "relay.toml"
    (tmp_path / "md.cfg").write_text(MD_CFG)
    f.write_text(GOOD.replace("[persist]", FIX_SOURCE + "\n[persist]"))
    fix = load(f).sources[3]
    assert (fix.kind, fix.name, fix.symbols) == ("fix", "venue-md", ["AAA"])
    assert (fix.sessions, fix.session_id) == (tmp_path / "md.cfg", "")
    good = FIX_SOURCE + 'session = "FIX.4.2:RELAY->OTHER"\n'
    f.write_text(GOOD.replace("[persist]", good + "\n[persist]"))
    assert load(f).sources[3].session_id == "FIX.4.2:RELAY->OTHER"
    for extra, message in [
        (
            'session = "FIX.4.4:RELAY->NOBODY"\n',
            f"sources[3].session: {tmp_path / 'md.cfg'}: no initiator session "
            "'FIX.4.4:RELAY->NOBODY' (there: FIX.4.4:RELAY->VENUE, FIX.4.2:RELAY->OTHER)",
        ),
        ("depth = 5\n", "sources[3].depth: unknown key"),
    ]:
        f.write_text(GOOD.replace("[persist]", FIX_SOURCE + extra + "\n[persist]"))
        with pytest.raises(RelayConfigError) as e:
            load(f)
        assert str(e.value) == f"{f}: {message}"
    (tmp_path / "md.cfg").write_text(
        MD_CFG.replace("initiator", "acceptor").replace("SocketConnect", "SocketAccept")
    )
    f.write_text(GOOD.replace("[persist]", FIX_SOURCE + "\n[persist]"))
    with pytest.raises(RelayConfigError) as e:
        load(f)
    assert str(e.value) == (
        f"{f}: sources[3].sessions: {tmp_path / 'md.cfg'}: no initiator "
        "sessions (the relay connects out to the venue)"
    )
    (tmp_path / "md.cfg").unlink()
    with pytest.raises(RelayConfigError) as e:
        load(f)
    assert str(e.value).startswith(f"{f}: sources[3].sessions: {tmp_path / 'md.cfg'}: ")
    assert "\n" not in str(e.value)


def test_an_engine_source_connects_to_an_engines_remote_server(tmp_path: Path) -> None:
    f = tmp_path / "relay.toml"
    engine = '[[sources]]\ntype = "engine"\nconnect = "10.0.4.7:7340"\npins = "engines.json"\n'
    f.write_text(GOOD.replace("[persist]", engine + "\n[persist]"))
    src = load(f).sources[3]
    assert (src.kind, src.host, src.port, src.tls) == ("engine", "10.0.4.7", 7340, True)
    assert (src.token_env, src.pins) == ("QWCONSOLE_ENGINE_TOKEN", tmp_path / "engines.json")
    f.write_text(
        GOOD.replace("[persist]", engine.replace('pins = "engines.json"\n', "") + "\n[persist]")
    )
    with pytest.raises(RelayConfigError, match=r"sources\[3\]\.pins: is required with tls"):
        load(f)


def test_the_command_builds_engine_and_fix_sources_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "md.cfg").write_text(MD_CFG)
    f = tmp_path / "relay.toml"
    extra = (
        '[[sources]]\ntype = "engine"\nname = "ny4"\nconnect = "127.0.0.1:7340"\n'
        'tls = false\nsymbols = ["BBB"]\n' + FIX_SOURCE
    )
    f.write_text(GOOD.replace("[persist]", extra + "\n[persist]"))
    cfg = load(f)
    clock = LiveClock()
    market = MarketData(["AAA", "BBB"], MessageBus(), clock)
    instruments = [
        Instrument(symbol="AAA", tick_size=Decimal("0.01")),
        Instrument(symbol="BBB", tick_size=Decimal("0.25")),
    ]
    monkeypatch.delenv("QWCONSOLE_ENGINE_TOKEN", raising=False)
    monkeypatch.setenv("QWCONSOLE_RELAY_TOKEN", "qw1.a.b")
    with pytest.raises(RelayConfigError) as e:
        _sources(cfg, market, clock, instruments)
    assert str(e.value) == (
        f"{f}: sources (ny4): the token is read from $QWCONSOLE_ENGINE_TOKEN, which is not set"
    )
    monkeypatch.setenv("QWCONSOLE_ENGINE_TOKEN", "qw1.c.d")
    sources = _sources(cfg, market, clock, instruments)
    engine, fix = sources[3], sources[4]
    assert isinstance(engine, EngineSource)
    assert (engine.kind, engine.symbols, engine.client.endpoint) == (
        "engine",
        ["BBB"],
        "127.0.0.1:7340",
    )
    assert engine.state() == "down: connecting"
    assert isinstance(fix, FixSource)
    assert (fix.kind, fix.name, fix.symbols, fix.session_id) == (
        "fix",
        "venue-md",
        ["AAA"],
        "FIX.4.4:RELAY->VENUE",
    )
    assert fix.state() == "not started"
    fix.session.close()
