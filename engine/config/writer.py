# SPDX-License-Identifier: MIT
"""Write an :class:`~engine.config.model.EngineConfig` as TOML: deterministic, and read back equal.

:func:`dump_config` gives the text (the same configuration always gives the same text, and
:func:`engine.config.reader.parse_config` reads it back equal), :func:`save_config` writes it
atomically, :func:`check_config` checks a configuration built in code by that round trip.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from engine.config.model import (
    RISK_KEYS,
    ConfigError,
    ConfigProblem,
    EngineConfig,
    InstrumentConfig,
    RemoteConfig,
)
from engine.config.reader import parse_config
from engine.oms.risk import DEFAULT_LIMITS, RiskLimits


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_str(key)


def _toml_str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        text = repr(v)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(v, Path):
        return _toml_str(v.as_posix())
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _pairs(items: Iterable[tuple[str, object]]) -> list[str]:
    """Return ``key = value`` lines, leaving out ``None`` (TOML has no null: absent means None)."""
    return [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in items if v is not None]


def _risk_pairs(limits: RiskLimits, defaults: RiskLimits | None = None) -> list[str]:
    # A limit that is off where the default is on is written "off" (absent means the default).
    def value(name: str) -> object:
        v = getattr(limits, name)
        return "off" if v is None and getattr(defaults, name, None) is not None else v

    return _pairs((name, value(name)) for name in RISK_KEYS)


def _sim_pairs(ins: InstrumentConfig) -> list[tuple[str, Any]]:
    """Return the simulator keys of an instrument that differ from their defaults."""
    d = InstrumentConfig(symbol="X", tick_size="1")
    names = ("initial_price", "participant_events_per_second", "participant_volatility_ticks")
    return [(n, getattr(ins, n)) for n in names if getattr(ins, n) != getattr(d, n)]


def dump_config(cfg: EngineConfig) -> str:
    """Return ``cfg`` as TOML text; deterministic, and :func:`parse_config` reads it back equal.

    Values equal to their default are written too (the file documents the running setup),
    except ``None`` paths and limits, which TOML cannot spell and which mean "absent".
    """
    blocks: list[list[str]] = []

    def table(header: str, lines: list[str], *, always: bool = True) -> None:
        if lines or always:
            blocks.append([header, *lines])

    table("[engine]", _pairs([("id", cfg.engine_id),
                              ("heartbeat_interval_ms", cfg.heartbeat_interval_ms),
                              ("answer_timeout_ms", cfg.answer_timeout_ms)]))  # fmt: skip
    f = cfg.files
    table(
        "[files]",
        _pairs(
            [("journal_dir", f.journal_dir), ("store_dir", f.store_dir), ("logs_dir", f.logs_dir)]
        ),
    )
    table("[sessions]", _pairs([("file", cfg.sessions_file)]))
    table("[simulator]", _pairs([("enabled", cfg.simulator.enabled),
                                 ("seed", cfg.simulator.seed),
                                 ("demo_strategy", cfg.simulator.demo_strategy)]))  # fmt: skip
    for ins in cfg.instruments:
        table("[[instruments]]", _pairs([
            ("symbol", ins.symbol), ("tick_size", ins.tick_size), ("lot_size", ins.lot_size),
            ("multiplier", ins.multiplier), ("currency", ins.currency), ("session", ins.session),
            *([("venue", ins.venue)] if ins.venue else []),
            ("price_band_ticks", ins.price_band_ticks), ("price_band_pct", ins.price_band_pct),
            *_sim_pairs(ins),
        ]))  # fmt: skip
    table("[risk]", _risk_pairs(cfg.risk, DEFAULT_LIMITS))
    table("[stp]", _pairs([("mode", cfg.stp_mode)]))
    for s in cfg.strategies:
        own_stp = [(k, v) for k, v in (("stp", s.stp), ("stp_group", s.stp_group)) if v]
        table("[[strategies]]", _pairs([("id", s.strategy_id), ("class", s.class_path),
                                        ("symbols", list(s.symbols)),
                                        ("autostart", s.autostart), *own_stp]))  # fmt: skip
        table("[strategies.parameters]", _pairs(s.parameters), always=bool(s.parameters))
        if s.risk is not None:
            table("[strategies.risk]", _risk_pairs(s.risk))
    for acc in cfg.ouch:
        table(
            "[[ouch]]",
            _pairs(
                [
                    (k, getattr(acc, k))
                    for k in acc.keys
                    if getattr(acc, k) != "" or k in ("session",)
                ]
            ),
        )
    rem = cfg.remote
    table("[remote]", _pairs([(f.name, getattr(rem, f.name)) for f in fields(RemoteConfig)]))
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"


def check_config(cfg: EngineConfig) -> list[ConfigProblem]:
    """Return what is wrong with a configuration built or edited in code (empty when valid).

    The same rules as :func:`parse_config`; the problems name key paths and values (their line
    numbers refer to :func:`dump_config`'s text). An editor calls this before saving.
    """
    try:
        parse_config(dump_config(cfg), cfg.source)
    except ConfigError as e:
        return e.problems
    return []


def save_config(cfg: EngineConfig, path: Path | str) -> None:
    """Write ``cfg`` to ``path`` as TOML, atomically (a crash leaves the old file intact)."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(dump_config(cfg), encoding="utf-8")
    tmp.replace(p)
