# SPDX-License-Identifier: MIT
"""The engine's TOML configuration: reading, checking with located errors, writing back."""

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config.model import (
    ConfigError,
    EngineConfig,
    FilesConfig,
    InstrumentConfig,
    RemoteConfig,
    SimulatorConfig,
    StrategyConfig,
)
from engine.config.reader import load_config, parse_config
from engine.config.writer import check_config, dump_config, save_config
from engine.oms.risk import RiskLimits

FULL = """\
[engine]
id = "ny4-1"
heartbeat_interval_ms = 500
answer_timeout_ms = 2500

[files]
journal_dir = "journal"
store_dir = "/var/lib/qw/fix"
logs_dir = "logs"

[sessions]
file = "sessions.cfg"

[simulator]
enabled = true
seed = 11

[[instruments]]
symbol = "ESZ6"
tick_size = "0.25"
multiplier = "50"
session = "FIX.4.4:QW->EX"

[[instruments]]
symbol = "CLF7"
tick_size = "0.01"
multiplier = "1000"

[risk]
max_order_qty_lots = 50
max_order_notional = 1500000.5

[[strategies]]
id = 20170101
class = "engine.strategy.examples:MarketMaker"
symbols = ["ESZ6", "CLF7"]
[strategies.parameters]
qty_lots = 2
skew_ticks_per_lot = 0.5
[strategies.risk]
max_order_qty_lots = 5

[[strategies]]
id = 7
class = "engine.strategy.examples:Taker"
symbols = ["CLF7"]
autostart = false

[remote]
enabled = true
port = 7400
tls_cert = "engine.crt"
tls_key = "engine.key"
token_store = "tokens.toml"
"""


def test_parse_full_file_gives_typed_model(tmp_path: Path) -> None:
    path = tmp_path / "engine.toml"
    path.write_text(FULL)
    cfg = load_config(path)
    assert cfg.engine_id == "ny4-1"
    assert cfg.heartbeat_interval_ms == 500
    assert cfg.answer_timeout_ms == 2500
    assert cfg.files.journal_dir == Path("journal")
    assert cfg.resolve(cfg.files.journal_dir) == tmp_path / "journal"
    assert cfg.resolve(cfg.files.store_dir) == Path("/var/lib/qw/fix")
    assert cfg.resolve(cfg.sessions_file) == tmp_path / "sessions.cfg"
    assert cfg.simulator == SimulatorConfig(enabled=True, seed=11)
    assert [i.symbol for i in cfg.instruments] == ["ESZ6", "CLF7"]
    assert cfg.instruments[0].session == "FIX.4.4:QW->EX"
    assert cfg.instruments[1].lot_size == "1"
    # The engine-wide band is 5% unless the file says otherwise.
    assert cfg.risk == RiskLimits(
        max_order_qty_lots=50, max_order_notional=1500000.5, price_band_pct=5.0
    )
    mm, taker = cfg.strategies
    assert mm.strategy_id == 20170101
    assert mm.class_path == "engine.strategy.examples:MarketMaker"
    assert mm.parameters == (("qty_lots", 2), ("skew_ticks_per_lot", 0.5))
    assert mm.risk == RiskLimits(max_order_qty_lots=5)
    assert mm.autostart is True
    assert taker.autostart is False
    assert taker.risk is None
    assert cfg.remote.bind == "127.0.0.1"  # loopback unless configured
    assert cfg.remote.port == 7400


def test_empty_file_gives_defaults() -> None:
    cfg = parse_config("")
    assert cfg == EngineConfig()
    assert cfg.answer_timeout_ms == 10_000
    assert cfg.remote.bind == "127.0.0.1"
    assert cfg.remote.enabled is False


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[engine]\nid = "x"\nheartbeat_interval_ms = = 3\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (p,) = info.value.problems
    assert p.file == str(path)
    assert p.line == 3
    assert str(info.value).startswith(f"{path}:3: not valid TOML")


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("text", "key", "line", "fragment"),
    [
        ("[remote]\nport = 70000\n", "remote.port", 2, "70000: must be <= 65535"),
        ("[remote]\nprot = 1\n", "remote.prot", 2, "unknown key"),
        ("[risk]\nmax_order_qty_lots = -1\n", "risk.max_order_qty_lots", 2, "-1: must be >= 0"),
        ("[risk]\nmax_position_lots = 2.5\n", "risk.max_position_lots", 2, "must be an integer"),
        ("[engine]\nheartbeat_interval_ms = true\n", "engine.heartbeat_interval_ms", 2, "True"),
        ("[engine]\nanswer_timeout_ms = 50\n", "engine.answer_timeout_ms", 2, "must be >= 100"),
        (
            '[[strategies]]\nid = 1\nclass = "x:Y"\n\n[[strategies]]\nid = 2\nclass = "no colon"\n',
            "strategies[1].class",
            7,
            "'no colon': must look like",
        ),
        (
            '[[strategies]]\nid = 1\nclass = "x:Y"\n[strategies.parameters]\nq = [1, 2]\n',
            "strategies[0].parameters.q",
            5,
            "an array: must be a number",
        ),
        (
            '[[strategies]]\nclass = "x:Y"\n',
            "strategies[0].id",
            1,  # missing: points at the table
            "is required",
        ),
        (
            '[[strategies]]\nid = 1\nclass = "x:Y"\n[strategies.risk]\nmax_open_orders = "5"\n',
            "strategies[0].risk.max_open_orders",
            5,
            "'5': must be an integer",
        ),
        ('[[instruments]]\nsymbol = "ES"\ntick_size = "0"\n', "instruments[0].tick_size", 3, "> 0"),
        ('[remote]\nbind = "0.0.0.0"\n', "remote.bind", 2, "needs TLS"),
        ("[remote]\nenabled = true\n", "remote.token_store", 1, "is required"),
        ('[remote]\ntls_cert = "a.crt"\n', "remote.tls_key", 1, "go together"),
        ("risk = 3\n", "risk", 1, "must be a table"),
    ],
)
def test_semantic_error_names_key_line_and_value(
    text: str, key: str, line: int, fragment: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, Path("e.toml"))
    problems = {p.key: p for p in info.value.problems}
    assert key in problems, info.value.problems
    assert problems[key].line == line
    assert fragment in problems[key].message
    assert str(problems[key]).startswith(f"e.toml:{line}: {key}: ")


def test_every_problem_is_reported_at_once() -> None:
    text = '[remote]\nport = -1\n[risk]\nmax_open_orders = "x"\n[engine]\nid = ""\n'
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert {p.key for p in info.value.problems} == {
        "remote.port",
        "risk.max_open_orders",
        "engine.id",
    }
    assert "(and 2 more)" in str(info.value)


def test_cross_table_rules() -> None:
    text = (
        '[[instruments]]\nsymbol = "ES"\ntick_size = "0.25"\n'
        '[[strategies]]\nid = 5\nclass = "a:B"\nsymbols = ["NQ"]\n'
        '[[strategies]]\nid = 5\nclass = "a:C"\n'
    )
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    msgs = {p.key: p.message for p in info.value.problems}
    assert "'NQ' is not in [[instruments]]" in msgs["strategies[0].symbols[0]"]
    assert "already the id of strategies[0]" in msgs["strategies[1].id"]


def test_dump_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    cfg = parse_config(FULL, tmp_path / "engine.toml")
    text = dump_config(cfg)
    assert dump_config(cfg) == text
    again = parse_config(text, tmp_path / "engine.toml")
    assert again == cfg
    assert dump_config(again) == text


def test_save_writes_a_file_load_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    cfg = EngineConfig(
        engine_id="lab",
        files=FilesConfig(logs_dir=Path("logs")),
        instruments=(InstrumentConfig(symbol="ES", tick_size="0.25"),),
        strategies=(
            StrategyConfig(
                strategy_id=3,
                class_path="m:C",
                symbols=("ES",),
                parameters=(("name with space", 'quote " and \\ back'), ("flag", True)),
                risk=RiskLimits(),
            ),
        ),
        remote=RemoteConfig(enabled=True, token_store=Path("t.toml")),
        source=path,
    )
    save_config(cfg, path)
    assert load_config(path) == cfg
    assert not (tmp_path / "e.toml.tmp").exists()


_scalar = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)


@settings(max_examples=150, deadline=None)
@given(
    params=st.lists(
        st.tuples(st.text(min_size=1, max_size=12), _scalar), max_size=6, unique_by=lambda x: x[0]
    ),
    limits=st.builds(
        RiskLimits,
        max_order_qty_lots=st.none() | st.integers(0, 10**9),
        max_order_notional=st.none() | st.floats(0, 1e12),
        max_open_orders=st.none() | st.integers(0, 10**6),
    ),
    engine_id=st.from_regex(r"[A-Za-z0-9._-]{1,32}", fullmatch=True),
)
def test_dump_parse_round_trip_property(
    params: list[tuple[str, object]], limits: RiskLimits, engine_id: str
) -> None:
    cfg = EngineConfig(
        engine_id=engine_id,
        risk=limits,
        strategies=(
            StrategyConfig(strategy_id=1, class_path="a.b:C", parameters=tuple(params)),  # type: ignore[arg-type]
        ),
    )
    assert parse_config(dump_config(cfg)) == cfg


def test_check_config_reports_problems_of_an_edited_model() -> None:
    import dataclasses

    cfg = parse_config(FULL, Path("/srv/qw/engine.toml"))
    assert check_config(cfg) == []
    bad = dataclasses.replace(
        cfg,
        remote=dataclasses.replace(cfg.remote, bind="0.0.0.0", tls_cert=None, tls_key=None),
        strategies=(*cfg.strategies, dataclasses.replace(cfg.strategies[0], symbols=("XX",))),
    )
    problems = {p.key: p.message for p in check_config(bad)}
    assert problems["remote.bind"].startswith("'0.0.0.0': a non-loopback address needs TLS")
    assert "'XX' is not in [[instruments]]" in problems["strategies[2].symbols[0]"]
    assert "already the id of strategies[0]" in problems["strategies[2].id"]


def test_engine_wide_band_defaults_to_five_percent_and_off_is_spelled_off() -> None:
    assert parse_config("").risk == RiskLimits(price_band_pct=5.0)
    cfg = parse_config('[risk]\nprice_band_pct = "off"\nmax_open_orders = 5\n')
    assert cfg.risk == RiskLimits(max_open_orders=5)
    text = dump_config(cfg)
    assert 'price_band_pct = "off"' in text
    assert parse_config(text).risk == cfg.risk
    # A strategy's limits have no defaults: absent is off, and "off" reads the same.
    strat = parse_config(
        '[[strategies]]\nid = 1\nclass = "x:Y"\n[strategies.risk]\nprice_band_pct = "off"\n'
        "max_open_orders = 2\n"
    )
    assert strat.strategies[0].risk == RiskLimits(max_open_orders=2)
    bad = '[risk]\nprice_band_pct = "of"\n'
    with pytest.raises(ConfigError) as info:
        parse_config(bad)
    assert "risk.price_band_pct" in str(info.value)


OUCH = """
[[instruments]]
symbol = "AAPL"
tick_size = "0.01"
venue = "NASDAQ"

[[ouch]]                  # the desk's OUCH account
name = "NASDAQ"
host = "10.1.2.3"
port = 15000              # the venue's OUCH port
username = "QWC1"
password_env = "OUCH_PASSWORD"
firm = "QWCN"
"""


def test_an_ouch_account_and_an_instrument_on_it_read_write_and_edit_in_place() -> None:
    from engine.config.inplace import update_config_text
    from engine.config.model import OuchAccountConfig

    cfg = parse_config(OUCH, Path("e.toml"))
    assert cfg.ouch == (
        OuchAccountConfig(
            name="NASDAQ",
            host="10.1.2.3",
            port=15000,
            username="QWC1",
            password_env="OUCH_PASSWORD",
            firm="QWCN",
        ),
    )
    assert cfg.instruments[0].venue == "NASDAQ"
    assert parse_config(dump_config(cfg), Path("e.toml")) == cfg
    polled = parse_config(OUCH.replace('firm = "QWCN"', "busy_poll_us = 200"), Path("e.toml"))
    assert polled.ouch[0].busy_poll_us == 200
    assert parse_config(dump_config(polled), Path("e.toml")) == polled
    moved = dataclasses.replace(cfg, ouch=(dataclasses.replace(cfg.ouch[0], port=15001),))
    edited = update_config_text(OUCH, moved)
    assert "port = 15001              # the venue's OUCH port" in edited
    assert "[[ouch]]                  # the desk's OUCH account" in edited


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        (
            OUCH.replace('venue = "NASDAQ"', 'venue = "ARCA"'),
            "instruments[0].venue",
            "'ARCA' is not an [[ouch]] account's name (there: NASDAQ)",
        ),
        (
            OUCH.replace('venue = "NASDAQ"', 'venue = "NASDAQ"\nsession = "FIX.4.4:A->B"'),
            "instruments[0].venue",
            "a FIX session or an OUCH account, not both",
        ),
        (
            OUCH + OUCH.split("\n\n", 1)[1].replace("QWC1", "QWC2"),
            "ouch[1].name",
            "'NASDAQ' is already ouch[0]",
        ),
        (OUCH.replace('"QWC1"', '"TOOLONG7"'), "ouch[0].username", "1 to 6 letters or digits"),
        (
            OUCH.replace('firm = "QWCN"', 'password = "x"'),
            "ouch[0].password",
            "password or password_env, not both",
        ),
        (OUCH.replace("port = 15000", "port = 0"), "ouch[0].port", "must be >= 1"),
        (
            OUCH.replace('firm = "QWCN"', "busy_poll_us = -5"),
            "ouch[0].busy_poll_us",
            "must be >= 0",
        ),
        (OUCH.replace('host = "10.1.2.3"\n', ""), "ouch[0].host", "is required"),
    ],
)
def test_ouch_mistakes_name_the_key_and_why(text: str, key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, Path("e.toml"))
    problems = {p.key: p.message for p in info.value.problems}
    assert key in problems, info.value.problems
    assert fragment in problems[key]
