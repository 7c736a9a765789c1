# SPDX-License-Identifier: MIT
"""Read the engine's TOML configuration into a checked :class:`~engine.config.model.EngineConfig`.

:func:`load_config` and :func:`parse_config` check every table and key and raise
:class:`~engine.config.model.ConfigError` listing every problem found, each with the file, the
line (from a light scanner of the text, :func:`_line_index`), the key path and the value.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from engine.busypoll import MAX_BUSY_POLL_US
from engine.config.model import (
    LOOPBACK,
    RISK_KEYS,
    ConfigError,
    ConfigProblem,
    EngineConfig,
    FilesConfig,
    InstrumentConfig,
    ParamValue,
    RemoteConfig,
    SimulatorConfig,
    StrategyConfig,
)
from engine.oms.risk import DEFAULT_LIMITS, RiskLimits
from engine.oms.stp import STP_MODES
from engine.venues.ouch.config import USERNAME, OuchAccountConfig

_SYMBOL = re.compile(r"^[A-Za-z0-9._/:-]{1,32}$")
#: ``package.module:Class``, ``path/to/file.py:Class`` (relative to the file) or ``Class``.
_CLASS_PATH = re.compile(r"^([A-Za-z_][\w.]*:|[^:\n]*\.py:)?[A-Za-z_]\w*$")


# ----------------------------------------------------------------------------- line index


def _line_index(text: str) -> dict[str, int]:
    """Map key paths (``remote.port``, ``strategies[0].parameters.x``) to their 1-based line.

    A light scanner, enough to point at a line: table headers, ``[[array]]`` headers with
    their running index, and ``key = value`` lines (bare or quoted keys, dotted keys).
    """
    index: dict[str, int] = {}
    counts: dict[str, int] = {}
    prefix = ""
    header = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    key_line = re.compile(
        r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
        r"(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
    )
    for no, line in enumerate(text.splitlines(), 1):
        m = header.match(line)
        if m:
            name = _dotted(m.group(2))
            if m.group(1) == "[[":
                i = counts.get(name, -1) + 1
                counts[name] = i
                # Tables below an array element ("strategies.risk") belong to its last element.
                for arr in [a for a in counts if a.startswith(name + ".")]:
                    counts[arr] = -1
            prefix = _indexed(name, counts)
            index.setdefault(prefix, no)
            continue
        k = key_line.match(line)
        if k:
            path = _dotted(k.group(1))
            index.setdefault(f"{prefix}.{path}" if prefix else path, no)
    return index


def _dotted(raw: str) -> str:
    """Return a TOML key (``a."b.c".d``) as a dotted path with the quotes removed."""
    parts: list[str] = []
    cur: list[str] = []
    quote = ""
    for ch in raw:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "\"'":
            quote = ch
        elif ch == ".":
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return ".".join(parts)


def _indexed(name: str, counts: Mapping[str, int]) -> str:
    """Spell ``strategies.risk`` as ``strategies[2].risk`` using the running array indices."""
    parts = name.split(".")
    out: list[str] = []
    for i, part in enumerate(parts):
        out.append(part)
        so_far = ".".join(parts[: i + 1])
        n = counts.get(so_far, -1)
        if n >= 0:
            out[-1] = f"{part}[{n}]"
    return ".".join(out)


# ----------------------------------------------------------------------------- reading


class _Reader:
    """Collect problems while converting the parsed TOML into the typed model."""

    def __init__(self, file: str, lines: Mapping[str, int]) -> None:
        self.file = file
        self.lines = lines
        self.problems: list[ConfigProblem] = []

    def problem(self, key: str, message: str) -> None:
        line = self.lines.get(key, 0)
        probe = key
        while not line and ("." in probe or "[" in probe):  # fall back to the enclosing table
            probe = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", probe)
            line = self.lines.get(probe, 0)
        self.problems.append(ConfigProblem(self.file, line, key, message))

    def table(self, data: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            self.problem(_join(path, key), f"must be a table, got {_show(value)}")
            return {}
        return value

    def unknown(self, data: Mapping[str, Any], allowed: Iterable[str], path: str) -> None:
        known = set(allowed)
        for k in data:
            if k not in known:
                self.problem(
                    _join(path, k), f"unknown key (known here: {', '.join(sorted(known))})"
                )

    def get(
        self,
        data: Mapping[str, Any],
        key: str,
        path: str,
        conv: Callable[[Any], Any],
        default: Any,
    ) -> Any:
        if key not in data:
            return default
        value = data[key]
        try:
            return conv(value)
        except (TypeError, ValueError) as e:
            self.problem(_join(path, key), f"{_show(value)}: {e}")
            return default

    def require(
        self, data: Mapping[str, Any], key: str, path: str, conv: Callable[[Any], Any]
    ) -> Any:
        if key not in data:
            self.problem(_join(path, key), "is required")
            return None
        return self.get(data, key, path, conv, None)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: object) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


# Converters: each raises ValueError/TypeError with a message that completes "key: value: ...".


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def conv(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("must be an integer")
        if lo is not None and v < lo:
            raise ValueError(f"must be >= {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi}")
        return v

    return conv


def _nonneg_number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("must be a number")
    if not math.isfinite(v) or v < 0:
        raise ValueError("must be a finite number >= 0")
    return float(v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("must be true or false")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("must be a string")
    return v


def _nonempty(v: Any) -> str:
    s = _str(v).strip()
    if not s:
        raise ValueError("must not be empty")
    return s


def _path(v: Any) -> Path | None:
    s = _str(v)
    return Path(s) if s.strip() else None


def _decimal(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        raise TypeError('must be a decimal number, preferably as text ("0.25")')
    try:
        d = Decimal(str(v))
    except InvalidOperation:
        raise ValueError("is not a number") from None
    if not d.is_finite() or d <= 0:
        raise ValueError("must be a number > 0")
    return str(v)


def _symbol(v: Any) -> str:
    s = _str(v)
    if not _SYMBOL.match(s):
        raise ValueError("must be 1-32 letters, digits or ._/:-")
    return s


def _class_path(v: Any) -> str:
    s = _str(v)
    if not _CLASS_PATH.match(s):
        raise ValueError(
            'must look like "path/to/file.py:ClassName", "package.module:ClassName" '
            '(or a built-in "ClassName")'
        )
    return s


def _stp_mode(v: Any) -> str:
    s = _str(v)
    if s not in STP_MODES:
        raise ValueError(f"must be one of {', '.join(STP_MODES)}")
    return s


def _bind(v: Any) -> str:
    s = _nonempty(v)
    if any(c.isspace() for c in s):
        raise ValueError("must be a host name or address")
    return s


#: Risk limits whose value is a number, not a whole number.
_RISK_FLOATS = ("max_order_notional", "price_band_pct")


def _off_or(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Return ``conv`` that also reads ``"off"`` as ``None`` (a limit switched off)."""

    def read(v: Any) -> Any:
        return None if v == "off" else conv(v)

    return read


def _read_risk(
    r: _Reader, data: Mapping[str, Any], path: str, defaults: RiskLimits | None = None
) -> RiskLimits:
    # A key not written takes the default (engine-wide: a 5% price band); "off" switches off.
    r.unknown(data, RISK_KEYS, path)
    values: dict[str, Any] = {}
    for name in RISK_KEYS:
        conv = _nonneg_number if name in _RISK_FLOATS else _int(0)
        default = getattr(defaults, name) if defaults is not None else None
        values[name] = r.get(data, name, path, _off_or(conv), default)
    return RiskLimits(**values)


def _read_strategy(r: _Reader, data: Any, path: str) -> StrategyConfig | None:
    if not isinstance(data, dict):
        r.problem(path, f"must be a table, got {_show(data)}")
        return None
    allowed = ("id", "class", "symbols", "parameters", "autostart", "risk", "stp", "stp_group")
    r.unknown(data, allowed, path)
    sid = r.require(data, "id", path, _int(1, 2**63 - 1))
    cls = r.require(data, "class", path, _class_path)
    symbols: tuple[str, ...] = ()
    raw_symbols = data.get("symbols", [])
    if not isinstance(raw_symbols, list):
        r.problem(_join(path, "symbols"), f"{_show(raw_symbols)}: must be an array of symbols")
    else:
        ok = []
        for i, s in enumerate(raw_symbols):
            try:
                ok.append(_symbol(s))
            except (TypeError, ValueError) as e:
                r.problem(f"{path}.symbols[{i}]", f"{_show(s)}: {e}")
        symbols = tuple(ok)
    params: list[tuple[str, ParamValue]] = []
    for name, value in r.table(data, "parameters", path).items():
        if isinstance(value, bool | int | float | str):
            params.append((name, value))
        else:
            r.problem(
                f"{path}.parameters.{name}", f"{_show(value)}: must be a number, bool or string"
            )
    autostart = r.get(data, "autostart", path, _bool, True)
    stp = r.get(data, "stp", path, _stp_mode, "")
    stp_group = r.get(data, "stp_group", path, _str, "")
    risk = (
        _read_risk(r, r.table(data, "risk", path), _join(path, "risk")) if "risk" in data else None
    )
    if sid is None or cls is None:
        return None
    return StrategyConfig(
        strategy_id=sid,
        class_path=cls,
        symbols=symbols,
        parameters=tuple(params),
        autostart=autostart,
        risk=risk,
        stp=stp,
        stp_group=stp_group,
    )


def _read_instrument(r: _Reader, data: Any, path: str) -> InstrumentConfig | None:
    if not isinstance(data, dict):
        r.problem(path, f"must be a table, got {_show(data)}")
        return None
    allowed = ("symbol", "tick_size", "lot_size", "multiplier", "currency", "session", "venue",
               "price_band_ticks", "price_band_pct", "initial_price",
               "participant_events_per_second", "participant_volatility_ticks")  # fmt: skip
    r.unknown(data, allowed, path)
    symbol = r.require(data, "symbol", path, _symbol)
    tick = r.require(data, "tick_size", path, _decimal)
    lot = r.get(data, "lot_size", path, _decimal, "1")
    mult = r.get(data, "multiplier", path, _decimal, "1")
    ccy = r.get(data, "currency", path, _nonempty, "USD")
    session = r.get(data, "session", path, _str, "")
    venue = r.get(data, "venue", path, _str, "")
    band_ticks = r.get(data, "price_band_ticks", path, _int(0), None)
    band_pct = r.get(data, "price_band_pct", path, _nonneg_number, None)
    initial = r.get(data, "initial_price", path, _decimal, "")
    rate = r.get(data, "participant_events_per_second", path, _nonneg_number, 200.0)
    vol = r.get(data, "participant_volatility_ticks", path, _nonneg_number, 2.0)
    if symbol is None or tick is None:
        return None
    if initial and Decimal(initial) % Decimal(tick):
        r.problem(f"{path}.initial_price", f"{initial!r}: not a multiple of tick_size {tick}")
    if session and venue:
        r.problem(
            f"{path}.venue",
            f"{venue!r}: an instrument trades over a FIX session or an "
            f"OUCH account, not both (session = {session!r})",
        )
    return InstrumentConfig(
        symbol=symbol,
        tick_size=tick,
        lot_size=lot,
        multiplier=mult,
        currency=ccy,
        session=session,
        venue=venue,
        price_band_ticks=band_ticks,
        price_band_pct=band_pct,
        initial_price=initial,
        participant_events_per_second=rate,
        participant_volatility_ticks=vol,
    )


def _read_ouch(r: _Reader, data: Any, path: str) -> OuchAccountConfig | None:
    if not isinstance(data, dict):
        r.problem(path, f"must be a table, got {_show(data)}")
        return None
    keys = OuchAccountConfig(name="", host="", port=0, username="").keys
    r.unknown(data, keys, path)
    name = r.require(data, "name", path, _symbol)
    host = r.require(data, "host", path, _nonempty)
    port = r.require(data, "port", path, _int(1, 65535))
    username = r.require(data, "username", path, _username)
    password = r.get(data, "password", path, _bounded(10), "")
    password_env = r.get(data, "password_env", path, _str, "")
    session = r.get(data, "session", path, _bounded(10), "")
    firm = r.get(data, "firm", path, _bounded(4), "")
    busy_poll_us = r.get(data, "busy_poll_us", path, _int(0, MAX_BUSY_POLL_US), 0)
    if password and password_env:
        r.problem(f"{path}.password", "give password or password_env, not both")
    if None in (name, host, port, username):
        return None
    return OuchAccountConfig(
        name=name,
        host=host,
        port=port,
        username=username,
        password=password,
        password_env=password_env,
        session=session,
        firm=firm,
        busy_poll_us=busy_poll_us,
    )


def _username(v: Any) -> str:
    s = _str(v)
    if not USERNAME.match(s):
        raise ValueError(f"{v!r}: 1 to 6 letters or digits (SoupBinTCP)")
    return s


def _bounded(size: int) -> Callable[[Any], str]:
    def conv(v: Any) -> str:
        s = _str(v)
        if len(s) > size or not s.isascii():
            raise ValueError(f"{v!r}: at most {size} ASCII characters")
        return s

    return conv


def _read_remote(r: _Reader, data: Mapping[str, Any]) -> RemoteConfig:
    p = "remote"
    names = [f.name for f in fields(RemoteConfig)]
    r.unknown(data, names, p)
    d = RemoteConfig()
    return RemoteConfig(
        enabled=r.get(data, "enabled", p, _bool, d.enabled),
        bind=r.get(data, "bind", p, _bind, d.bind),
        port=r.get(data, "port", p, _int(0, 65535), d.port),
        tls_cert=r.get(data, "tls_cert", p, _path, None),
        tls_key=r.get(data, "tls_key", p, _path, None),
        token_store=r.get(data, "token_store", p, _path, None),
        audit_log=r.get(data, "audit_log", p, _path, None),
        client_queue=r.get(data, "client_queue", p, _int(100, 10_000_000), d.client_queue),
        history=r.get(data, "history", p, _int(0, 100_000_000), d.history),
    )


def _check_whole(r: _Reader, cfg: EngineConfig) -> None:
    """Rules across tables: unique ids and symbols, known symbols, TLS and bind address."""
    seen: dict[int, int] = {}
    for i, s in enumerate(cfg.strategies):
        if s.strategy_id in seen:
            r.problem(
                f"strategies[{i}].id",
                f"{s.strategy_id} is already the id of strategies[{seen[s.strategy_id]}]",
            )
        seen.setdefault(s.strategy_id, i)
    symbols: dict[str, int] = {}
    for i, ins in enumerate(cfg.instruments):
        if ins.symbol in symbols:
            r.problem(f"instruments[{i}].symbol", f"{ins.symbol!r} is listed twice")
        symbols.setdefault(ins.symbol, i)
    _check_venues(r, cfg)
    if symbols:
        for i, s in enumerate(cfg.strategies):
            for j, sym in enumerate(s.symbols):
                if sym not in symbols:
                    r.problem(f"strategies[{i}].symbols[{j}]", f"{sym!r} is not in [[instruments]]")
    _check_remote(r, cfg.remote)


def _check_venues(r: _Reader, cfg: EngineConfig) -> None:
    """Check ``[[ouch]]`` names are unique and every instrument's ``venue`` is one of them."""
    accounts: dict[str, int] = {}
    for i, acc in enumerate(cfg.ouch):
        if acc.name in accounts:
            r.problem(f"ouch[{i}].name", f"{acc.name!r} is already ouch[{accounts[acc.name]}]")
        accounts.setdefault(acc.name, i)
    there = ", ".join(accounts) or "none"
    for i, ins in enumerate(cfg.instruments):
        if ins.venue and ins.venue not in accounts:
            why = f"{ins.venue!r} is not an [[ouch]] account's name (there: {there})"
            r.problem(f"instruments[{i}].venue", why)


def _check_remote(r: _Reader, rem: RemoteConfig) -> None:
    if (rem.tls_cert is None) != (rem.tls_key is None):
        r.problem(
            "remote.tls_key" if rem.tls_key is None else "remote.tls_cert",
            "tls_cert and tls_key go together (both or neither)",
        )
    if rem.enabled and rem.token_store is None:
        r.problem("remote.token_store", "is required when remote.enabled = true")
    if rem.tls_cert is None and rem.bind not in LOOPBACK:
        r.problem(
            "remote.bind",
            f"{rem.bind!r}: a non-loopback address needs TLS (set tls_cert and tls_key)",
        )


def parse_config(text: str, source: Path | None = None) -> EngineConfig:
    """Return the configuration in ``text``; raise :class:`ConfigError` listing every problem.

    ``source`` names the file in messages and anchors relative paths.
    """
    name = str(source) if source is not None else "<config>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        line = int(m.group(1)) if m else 0
        raise ConfigError([ConfigProblem(name, line, "", f"not valid TOML: {e}")]) from None
    r = _Reader(name, _line_index(text))
    top = (
        "engine",
        "files",
        "sessions",
        "simulator",
        "instruments",
        "risk",
        "strategies",
        "remote",
        "stp",
        "ouch",
    )
    r.unknown(data, top, "")
    eng = r.table(data, "engine", "")
    r.unknown(eng, ("id", "heartbeat_interval_ms", "answer_timeout_ms"), "engine")
    files = r.table(data, "files", "")
    r.unknown(files, ("journal_dir", "store_dir", "logs_dir"), "files")
    sessions = r.table(data, "sessions", "")
    r.unknown(sessions, ("file",), "sessions")
    stp = r.table(data, "stp", "")
    r.unknown(stp, ("mode",), "stp")
    sim = r.table(data, "simulator", "")
    r.unknown(sim, ("enabled", "seed", "demo_strategy"), "simulator")
    instruments: list[InstrumentConfig] = []
    strategies: list[StrategyConfig] = []
    ouch: list[OuchAccountConfig] = []
    for key, out, read in (
        ("instruments", instruments, _read_instrument),
        ("strategies", strategies, _read_strategy),
        ("ouch", ouch, _read_ouch),
    ):
        items = data.get(key, [])
        if not isinstance(items, list):
            r.problem(key, f"must be an array of tables ([[{key}]]), got {_show(items)}")
            continue
        for i, item in enumerate(items):
            got = read(r, item, f"{key}[{i}]")
            if got is not None:
                out.append(got)  # type: ignore[arg-type]  # each list gets its reader's type
    cfg = EngineConfig(
        engine_id=r.get(eng, "id", "engine", _symbol, "engine"),
        heartbeat_interval_ms=r.get(eng, "heartbeat_interval_ms", "engine", _int(10, 60_000), 1000),
        answer_timeout_ms=r.get(eng, "answer_timeout_ms", "engine", _int(100, 3_600_000), 10_000),
        sessions_file=r.get(sessions, "file", "sessions", _path, None),
        files=FilesConfig(
            journal_dir=r.get(files, "journal_dir", "files", _path, None),
            store_dir=r.get(files, "store_dir", "files", _path, None),
            logs_dir=r.get(files, "logs_dir", "files", _path, None),
        ),
        simulator=SimulatorConfig(
            enabled=r.get(sim, "enabled", "simulator", _bool, False),
            seed=r.get(sim, "seed", "simulator", _int(0, 2**32 - 1), 7),
            demo_strategy=r.get(sim, "demo_strategy", "simulator", _bool, False),
        ),
        instruments=tuple(instruments),
        risk=_read_risk(r, r.table(data, "risk", ""), "risk", DEFAULT_LIMITS),
        strategies=tuple(strategies),
        remote=_read_remote(r, r.table(data, "remote", "")),
        ouch=tuple(ouch),
        stp_mode=r.get(stp, "mode", "stp", _stp_mode, "cancel_newest"),
        source=source,
    )
    _check_whole(r, cfg)
    if r.problems:
        raise ConfigError(r.problems)
    return cfg


def load_config(path: Path | str) -> EngineConfig:
    """Read and check the configuration file at ``path``.

    Raises
    ------
    ConfigError
        When the file cannot be read, is not TOML, or breaks a rule; every problem names the
        file, line, key path and value.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            [ConfigProblem(str(p), 0, "", f"cannot read: {e.strerror or e}")]
        ) from None
    except UnicodeDecodeError as e:
        raise ConfigError([ConfigProblem(str(p), 0, "", f"not UTF-8 text: {e.reason}")]) from None
    return parse_config(text, p)
