# SPDX-License-Identifier: MIT
"""Editing an engine TOML in place (``update_config_text``): comments and untouched lines stay."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config.inplace import update_config_text
from engine.config.model import EngineConfig, StrategyConfig
from engine.config.reader import parse_config
from engine.config.writer import dump_config

TEXT = """\
# Engine of the NY desk.
[engine]
id = "ny-1"   # shown in the console
heartbeat_interval_ms = 500

# Where things go
[files]
journal_dir = "journal"

[simulator]
enabled = true

[risk]
# hard limit agreed with the desk head
max_order_qty_lots = 50  # lots

[[strategies]]
id = 1
class = "engine.strategy.examples:MarketMaker"
symbols = [
  "ESZ6",  # front month
]

[strategies.parameters]
qty_lots = 1   # keep small

# The taker only runs on Fridays.
[[strategies]]
id = 2
class = "engine.strategy.examples:Taker"

[remote]
enabled = false
"""


@pytest.fixture
def cfg() -> EngineConfig:
    return parse_config(TEXT)


def test_an_unchanged_configuration_keeps_the_text(cfg: EngineConfig) -> None:
    assert update_config_text(TEXT, cfg) == TEXT


def test_changed_values_keep_their_comments_and_nothing_else_moves(cfg: EngineConfig) -> None:
    edited = dataclasses.replace(
        cfg,
        engine_id="ny-2",
        risk=dataclasses.replace(cfg.risk, max_order_qty_lots=20, max_open_orders=40),
    )
    out = update_config_text(TEXT, edited)
    assert out == TEXT.replace('id = "ny-1"   #', 'id = "ny-2"   #').replace(
        "max_order_qty_lots = 50  # lots", "max_order_qty_lots = 20  # lots\nmax_open_orders = 40"
    )
    assert dump_config(parse_config(out)) == dump_config(edited)


def test_strategies_are_matched_by_id(cfg: EngineConfig) -> None:
    # Removing the first strategy takes its lines and comments; the second keeps its own.
    taker = dataclasses.replace(cfg.strategies[1], parameters=(("qty_lots", 3),))
    added = StrategyConfig(
        strategy_id=3, class_path="engine.strategy.examples:Taker", symbols=("NQZ6",)
    )
    edited = dataclasses.replace(cfg, strategies=(taker, added))
    out = update_config_text(TEXT, edited)
    assert "front month" not in out
    assert "keep small" not in out
    assert (
        "# The taker only runs on Fridays.\n[[strategies]]\nid = 2\n"
        'class = "engine.strategy.examples:Taker"\n\n[strategies.parameters]\nqty_lots = 3\n\n'
        '[[strategies]]\nid = 3\nclass = "engine.strategy.examples:Taker"\n'
        'symbols = ["NQZ6"]\nautostart = true\n\n[remote]\nenabled = false\n'
    ) in out
    assert dump_config(parse_config(out)) == dump_config(edited)


def test_a_table_left_to_its_defaults_gets_only_the_changed_key(cfg: EngineConfig) -> None:
    text = TEXT.replace("[remote]\nenabled = false\n", "")
    base = parse_config(text)
    edited = dataclasses.replace(base, remote=dataclasses.replace(base.remote, port=7400))
    out = update_config_text(text, edited)
    assert out == text.rstrip("\n") + "\n\n[remote]\nport = 7400\n"


@pytest.mark.parametrize(
    "text",
    [
        'engine = { id = "inline" }\n',  # inline table: rewritten
        '[engine]\nid = "x"\n[risk]\nmax_order_qty_lots = 5\nmax_order_qty_lots = 6\n',  # invalid
    ],
)
def test_text_it_cannot_edit_safely_gives_the_full_dump(text: str) -> None:
    edited = dataclasses.replace(parse_config(TEXT), engine_id="other")
    assert update_config_text(text, edited) == dump_config(edited)


limits = st.one_of(st.none(), st.integers(1, 10_000))


@settings(max_examples=60, deadline=None)
@given(
    engine_id=st.sampled_from(["ny-1", "ny-2", "ny.3"]),
    note=st.sampled_from(["plain", "a # b", 'say "hi" # 2']),
    qty=limits,
    opens=limits,
    keep=st.sets(st.sampled_from([1, 2])),
    qty_lots=st.integers(1, 9),
    port=st.integers(1024, 65535),
)
def test_any_edit_reads_back_as_the_configuration_and_keeps_the_file_comment(
    engine_id: str,
    note: str,
    qty: int | None,
    opens: int | None,
    keep: set[int],
    qty_lots: int,
    port: int,
) -> None:
    base = parse_config(TEXT)
    strategies = tuple(
        dataclasses.replace(s, parameters=(("qty_lots", qty_lots), ("note", note)))
        for s in base.strategies
        if s.strategy_id in keep
    )
    edited = dataclasses.replace(
        base,
        engine_id=engine_id,
        risk=dataclasses.replace(base.risk, max_order_qty_lots=qty, max_open_orders=opens),
        strategies=strategies,
        remote=dataclasses.replace(base.remote, port=port),
    )
    out = update_config_text(TEXT, edited)
    assert dump_config(parse_config(out)) == dump_config(edited)
    assert out.startswith("# Engine of the NY desk.\n[engine]\n")
    assert "# hard limit agreed with the desk head" in out
    assert ("# The taker only runs on Fridays." in out) == (2 in keep)
