# SPDX-License-Identifier: MIT
"""The headless engine's configuration: one TOML file, typed, checked and written back.

``qwconsole engine --config FILE`` reads it; the Enterprise Manager edits it. Example::

    [engine]
    id = "ny4-1"                      # name shown in consoles
    heartbeat_interval_ms = 1000
    answer_timeout_ms = 10000         # a request unanswered this long: alert, status request

    [files]                           # relative paths are relative to this file's folder
    journal_dir = "journal"
    store_dir = "fix-store"
    logs_dir = "logs"

    [sessions]
    file = "sessions.cfg"             # QuickFIX-style session settings (initiators are used)

    [simulator]
    enabled = false                   # true: the built-in exchange simulator is the venue
    demo_strategy = false             # true: also the demo's market maker (id 20170101)

    [[instruments]]
    symbol = "ESZ6"
    tick_size = "0.25"
    multiplier = "50"
    session = "FIX.4.4:QWCONSOLE->EXCH"   # the session orders go through
    initial_price = "6000.00"         # the simulator lists it here (participant_* keys: its
                                      # participants' events per second and volatility)

    [risk]                            # engine-wide limits (engine.oms.risk.RiskLimits)
    max_order_qty_lots = 50
    max_position_lots = 25
    price_band_pct = 5                # the default; "off" switches a limit off

    [[strategies]]
    id = 20170101
    class = "engine.strategy.examples:MarketMaker"   # or "strategies/tiny.py:TinyBuy"
    symbols = ["ESZ6"]
    autostart = true
    [strategies.parameters]
    qty_lots = 1
    [strategies.risk]                 # limits of this strategy only
    max_order_qty_lots = 5

    [[ouch]]                          # an OUCH 5.0 account (engine.venues.ouch.config)
    name = "NASDAQ"
    host = "10.1.2.3"
    port = 15000
    username = "QWC1"
    password_env = "OUCH_PASSWORD"    # instruments[].venue = "NASDAQ" trade over it
    busy_poll_us = 0                  # > 0: poll the socket, not sleep, after traffic

    [stp]                             # self-trade prevention between our own strategies
    mode = "cancel_newest"            # cancel_oldest, cancel_both, allow; [[strategies]] stp
                                      # and stp_group set a strategy's own mode and group

    [remote]
    enabled = true
    bind = "127.0.0.1"
    port = 7341
    tls_cert = "engine.crt"
    tls_key = "engine.key"
    token_store = "tokens.toml"

Every table and key is optional except ``strategies[].id`` / ``class`` and
``instruments[].symbol`` / ``tick_size``. An unknown key is an error (a typo must not silently
disable a risk limit). :func:`load_config` raises :class:`ConfigError`, whose ``problems`` each
name the file, the line, the key path (``strategies[1].parameters.qty_lots``) and the value.
:func:`dump_config` writes a :class:`EngineConfig` back as TOML, deterministically: the same
configuration always gives the same text, and loading that text gives the same configuration.
:func:`update_config_text` writes it into an existing file's text instead, keeping the file's
comments, blank lines, order and the spelling of every value that did not change.

The value types of the tables are exported here with the configuration (``RiskLimits`` of
``[risk]``, ``OuchAccountConfig`` of ``[[ouch]]``), so that an editor of the file (the Manager)
needs no other engine module.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from engine.busypoll import MAX_BUSY_POLL_US
from engine.instruments import Instrument
from engine.oms.risk import DEFAULT_LIMITS, RiskLimits
from engine.oms.stp import STP_MODES
from engine.venues.ouch.config import USERNAME, OuchAccountConfig

__all__ = [
    "DEFAULT_REMOTE_PORT",
    "LOOPBACK",
    "ConfigError",
    "ConfigProblem",
    "EngineConfig",
    "FilesConfig",
    "InstrumentConfig",
    "OuchAccountConfig",
    "RemoteConfig",
    "RiskLimits",
    "SimulatorConfig",
    "StrategyConfig",
    "check_config",
    "dump_config",
    "load_config",
    "parse_config",
    "save_config",
    "update_config_text",
]

#: Port of the remote server when the file names none.
DEFAULT_REMOTE_PORT = 7341

#: Addresses the remote server may listen on without TLS.
LOOPBACK: tuple[str, ...] = ("127.0.0.1", "::1", "localhost")

#: Parameter values a strategy may take from a file (TOML scalars).
ParamValue = bool | int | float | str

_RISK_KEYS: tuple[str, ...] = tuple(f.name for f in fields(RiskLimits))
_SYMBOL = re.compile(r"^[A-Za-z0-9._/:-]{1,32}$")
#: ``package.module:Class``, ``path/to/file.py:Class`` (relative to the file) or ``Class``.
_CLASS_PATH = re.compile(r"^([A-Za-z_][\w.]*:|[^:\n]*\.py:)?[A-Za-z_]\w*$")


# ----------------------------------------------------------------------------- problems


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One thing wrong in a configuration file.

    ``line`` is 1-based, 0 when unknown (a key missing altogether); ``key`` is the dotted key
    path, ``""`` for a syntax error.
    """

    file: str
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(ValueError):
    """The configuration cannot be used; :attr:`problems` lists every reason found."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = problems
        first = str(problems[0]) if problems else "invalid configuration"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first + more)


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True, slots=True, kw_only=True)
class FilesConfig:
    """Where the engine keeps its files; ``None`` keeps nothing of that kind on disk.

    Relative paths are relative to the configuration file's folder
    (:meth:`EngineConfig.resolve`).
    """

    journal_dir: Path | None = None
    store_dir: Path | None = None
    logs_dir: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulatorConfig:
    """The built-in exchange simulator as the venue (no FIX counterparty needed)."""

    enabled: bool = False
    seed: int = 7
    #: Also run the demo's market maker (strategy 20170101) on the simulator's listings.
    demo_strategy: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class InstrumentConfig:
    """An instrument the engine trades and the venue its orders go through.

    ``tick_size``, ``lot_size`` and ``multiplier`` are decimal text (exact); ``session`` is a
    QuickFIX session id (``FIX.4.4:SENDER->TARGET``), ``""`` for the simulator; ``venue`` the
    name of an ``[[ouch]]`` account instead (``""``: a FIX session).
    ``price_band_ticks`` / ``price_band_pct`` give the instrument a price band of its own,
    which replaces the engine-wide band for it.
    """

    symbol: str
    tick_size: str
    lot_size: str = "1"
    multiplier: str = "1"
    currency: str = "USD"
    session: str = ""
    venue: str = ""
    price_band_ticks: int | None = None
    price_band_pct: float | None = None
    #: The simulator (``[simulator]``, ``qwconsole sim --config``): where the price starts
    #: (decimal text; ``""``: a demo listing of that symbol) and its participants' activity.
    initial_price: str = ""
    participant_events_per_second: float = 200.0
    participant_volatility_ticks: float = 2.0

    def instrument(self) -> Instrument:
        """Return the instrument's static data (exact decimals)."""
        return Instrument(symbol=self.symbol, tick_size=Decimal(self.tick_size),
                          lot_size=Decimal(self.lot_size), multiplier=Decimal(self.multiplier),
                          currency=self.currency)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyConfig:
    """A strategy to run: its class, integer id, instruments, parameters and own limits.

    ``class_path`` is ``"path/to/file.py:ClassName"`` (relative to the configuration file's
    folder, which the file's own folder joins on ``sys.path``), ``"package.module:ClassName"``
    (``class`` in the file), or a bare name of
    a built-in strategy (``"MarketMaker"``, from ``engine.strategy.examples``); ``parameters``
    are (name, value) pairs in file order, checked against the class's declared parameters
    when the engine builds the strategy.
    """

    strategy_id: int
    class_path: str
    symbols: tuple[str, ...] = ()
    parameters: tuple[tuple[str, ParamValue], ...] = ()
    autostart: bool = True
    risk: RiskLimits | None = None
    #: Self-trade prevention mode of its orders (``""``: the engine's ``[stp] mode``) and group.
    stp: str = ""
    stp_group: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteConfig:
    """The remote monitor/control server (``docs/remote-protocol.md``).

    Parameters
    ----------
    enabled : bool
        Serve consoles at all.
    bind : str
        Address to listen on; loopback unless configured otherwise.
    port : int
        TCP port (0: any free port, written to the log).
    tls_cert, tls_key : Path | None
        PEM certificate and key (``qwconsole engine cert`` makes a self-signed pair). Without
        them the server speaks plain WebSocket and refuses to bind anywhere but loopback.
    token_store : Path | None
        File of hashed tokens (``qwconsole engine token add``); required when enabled.
    audit_log : Path | None
        Where every command is written with who sent it (default ``<logs_dir>/audit.log``).
    client_queue : int
        Events buffered per console; a console further behind is resynchronised.
    history : int
        Events kept for consoles that reconnect and resume.
    """

    enabled: bool = False
    bind: str = "127.0.0.1"
    port: int = DEFAULT_REMOTE_PORT
    tls_cert: Path | None = None
    tls_key: Path | None = None
    token_store: Path | None = None
    audit_log: Path | None = None
    client_queue: int = 50_000
    history: int = 200_000


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """Everything ``qwconsole engine --config FILE`` needs.

    ``source`` is the file the configuration was read from (``None`` when built in code); its
    folder anchors relative paths.
    """

    engine_id: str = "engine"
    heartbeat_interval_ms: int = 1000
    answer_timeout_ms: int = 10_000
    sessions_file: Path | None = None
    files: FilesConfig = field(default_factory=FilesConfig)
    simulator: SimulatorConfig = field(default_factory=SimulatorConfig)
    instruments: tuple[InstrumentConfig, ...] = ()
    risk: RiskLimits = field(default_factory=lambda: DEFAULT_LIMITS)
    strategies: tuple[StrategyConfig, ...] = ()
    remote: RemoteConfig = field(default_factory=RemoteConfig)
    #: OUCH 5.0 accounts (``engine.venues.ouch.config``).
    ouch: tuple[OuchAccountConfig, ...] = ()
    #: Self-trade prevention of strategies that set none (``engine.oms.stp``).
    stp_mode: str = "cancel_newest"
    source: Path | None = None

    @property
    def base_dir(self) -> Path:
        """Return the folder relative paths are resolved against."""
        return self.source.parent if self.source is not None else Path.cwd()

    def resolve(self, path: Path | None) -> Path | None:
        """Return ``path`` made absolute against :attr:`base_dir` (``None`` stays ``None``)."""
        if path is None:
            return None
        p = path.expanduser()
        return p if p.is_absolute() else self.base_dir / p


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
    key_line = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
                          r"(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")  # fmt: skip
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
    r.unknown(data, _RISK_KEYS, path)
    values: dict[str, Any] = {}
    for name in _RISK_KEYS:
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
        r.problem(f"{path}.venue", f"{venue!r}: an instrument trades over a FIX session or an "
                  f"OUCH account, not both (session = {session!r})")  # fmt: skip
    return InstrumentConfig(symbol=symbol, tick_size=tick, lot_size=lot, multiplier=mult,
                            currency=ccy, session=session, venue=venue,
                            price_band_ticks=band_ticks,
                            price_band_pct=band_pct, initial_price=initial,
                            participant_events_per_second=rate,
                            participant_volatility_ticks=vol)  # fmt: skip


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
    return OuchAccountConfig(name=name, host=host, port=port, username=username,
                             password=password, password_env=password_env, session=session,
                             firm=firm, busy_poll_us=busy_poll_us)  # fmt: skip


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
        r.problem("remote.tls_key" if rem.tls_key is None else "remote.tls_cert",
                  "tls_cert and tls_key go together (both or neither)")  # fmt: skip
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
    top = ("engine", "files", "sessions", "simulator", "instruments", "risk", "strategies",
           "remote", "stp", "ouch")  # fmt: skip
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


# ----------------------------------------------------------------------------- writing


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

    return _pairs((name, value(name)) for name in _RISK_KEYS)


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
    table("[files]", _pairs([("journal_dir", f.journal_dir), ("store_dir", f.store_dir),
                             ("logs_dir", f.logs_dir)]))  # fmt: skip
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
        table("[[ouch]]", _pairs([(k, getattr(acc, k)) for k in acc.keys
                                  if getattr(acc, k) != "" or k in ("session",)]))  # fmt: skip
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


# ----------------------------------------------------------------------------- editing in place

_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9_-]+|\"(?:[^\"\\\\]|\\\\.)*\")(\s*=\s*)(.*)$")


@dataclass
class _Block:
    """One table of a TOML text: its header line (None before the first) and its body lines."""

    header: int | None
    name: str  # "[engine]", "[[strategies]]", "" before the first header
    #: Which element of its array of tables: ``("id", 7)`` by its identity key, else the
    #: position (0 for plain tables).
    ordinal: object
    parent: _Block | None = None  # the [[x]] element a [x.sub] table belongs to
    lead: list[int] = field(default_factory=list)  # the comment lines just above the header
    lines: list[int] = field(default_factory=list)  # line indices of the body
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (first, last line)


def _toml_scalar(text: str) -> tuple[bool, object]:
    try:
        return True, tomllib.loads(f"x = {text}")["x"]
    except tomllib.TOMLDecodeError:
        return False, None


def _header_name(line: str) -> str | None:
    """Return ``[name]`` / ``[[name]]`` of a header line (spaces and comment removed), or None."""
    m = re.match(r"^\s*(\[\[?)\s*([^\]#]+?)\s*(\]\]?)\s*(#.*)?$", line)
    if m is None or len(m.group(1)) != len(m.group(3)):
        return None
    return f"{m.group(1)}{m.group(2)}{m.group(3)}"


def _key_name(raw: str) -> str:
    return str(next(iter(tomllib.loads(f"{raw} = 0"))))


def _blocks(lines: list[str]) -> list[_Block] | None:
    """Split ``lines`` into tables; None if the text uses shapes this editor does not keep."""
    blocks = [_Block(None, "", 0)]
    counts: dict[str, int] = {}
    parent = ""  # the array of tables a "[x.sub]" table belongs to
    element: _Block | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        name = _header_name(line)
        if name is not None:
            owner = None
            if name.startswith("[["):
                parent = name[2:-2]
                counts[name] = counts.get(name, 0) + 1
                ordinal = counts[name] - 1
            else:
                sub = bool(parent) and name[1:-1].startswith(parent + ".")
                ordinal = counts.get(f"[[{parent}]]", 0) - 1 if sub else 0
                owner = element if sub else None
                if not sub:
                    parent = ""
            blocks.append(_Block(i, name, max(ordinal, 0), owner))
            if name.startswith("[["):
                element = blocks[-1]
            i += 1
            continue
        block = blocks[-1]
        m = _KEY_LINE.match(line)
        if m is None:
            if line.strip() and not line.strip().startswith("#"):
                return None
            block.lines.append(i)
            i += 1
            continue
        first = i
        i = _value_end(lines, i, m.group(4))
        if i < 0:
            return None
        key = _key_name(m.group(2))
        if key in block.keys:
            return None
        block.keys[key] = (first, i)
        block.lines.extend(range(first, i + 1))
        i += 1
    _finish(lines, blocks)
    return blocks


def _finish(lines: list[str], blocks: list[_Block]) -> None:
    """Give each table the comments right above its header, and its identity."""
    for before, b in itertools.pairwise(blocks):
        # Comment lines right above a header (no blank line between) describe that table.
        while before.lines and lines[before.lines[-1]].strip().startswith("#"):
            b.lead.insert(0, before.lines.pop())
    for b in blocks:
        identity = _identity(lines, b.parent or b)
        if identity is not None:
            b.ordinal = identity


def _value_end(lines: list[str], first: int, value: str) -> int:
    """Return the last line of a value starting on line ``first`` (-1 if it never parses)."""
    i = first
    while not _value_part(value)[0] and i + 1 < len(lines) and i - first < 100:
        i += 1
        value += "\n" + lines[i]
    return i if _value_part(value)[0] is not None else -1


#: The key that tells the elements of an array of tables apart (matched by it, not position).
_IDENTITY = {"[[strategies]]": "id", "[[instruments]]": "symbol", "[[ouch]]": "name"}


def _identity(lines: list[str], b: _Block) -> tuple[str, object] | None:
    key = _IDENTITY.get(b.name)
    if key is None or key not in b.keys:
        return None
    a, z = b.keys[key]
    m = _KEY_LINE.match(lines[a])
    assert m is not None
    value = _value_part("\n".join([m.group(4), *lines[a + 1 : z + 1]]))[0]
    ok, v = _toml_scalar(value or "")
    return (key, v) if ok else None


def _value_part(rest: str) -> tuple[str | None, str]:
    """Split what follows ``=`` into the value and a trailing ``# comment`` (None: no value)."""
    for m in re.finditer("#", rest):
        if _toml_scalar(rest[: m.start()])[0]:
            return rest[: m.start()], rest[m.start() :]
    return (rest, "") if _toml_scalar(rest)[0] else (None, "")


_Pairs = dict[tuple[str, object], dict[str, str]]


def _dumped(cfg: EngineConfig) -> tuple[list[tuple[str, object]], _Pairs]:
    """Return the tables of :func:`dump_config`'s text in order, and their ``key = value`` lines."""
    lines = dump_config(cfg).splitlines()
    blocks = _blocks(lines)
    assert blocks is not None  # dump_config writes nothing else
    order = [(b.name, b.ordinal) for b in blocks[1:]]
    pairs = {
        (b.name, b.ordinal): {k: "\n".join(lines[a : z + 1]) for k, (a, z) in b.keys.items()}
        for b in blocks[1:]
    }
    return order, pairs


def update_config_text(text: str, cfg: EngineConfig) -> str:
    """Return ``text`` changed to say ``cfg``, keeping its comments and untouched lines.

    Only what differs between the configuration ``text`` says and ``cfg`` is edited: a changed
    value is written before the line's comment, a key now absent loses its line, a new key goes
    after the last key of its table, a new table after the last one of its kind, and a table no
    longer there goes. Everything else, comments and blank lines included, stays as written.
    Text this cannot edit safely (inline tables, dotted keys, a key written twice, a file that
    does not parse) and any result that would not read back as ``cfg`` give
    :func:`dump_config`'s text instead.
    """
    fresh = dump_config(cfg)
    try:
        before = parse_config(text, cfg.source)
    except ConfigError:
        return fresh
    if dump_config(before) == fresh:
        return text
    lines = text.splitlines()
    blocks = _blocks(lines)
    if blocks is None or blocks[0].keys:
        return fresh
    merged = _merge(lines, blocks, _dumped(before)[1], *_dumped(cfg))
    out = "\n".join(merged) + "\n"
    try:
        same = dump_config(parse_config(out, cfg.source)) == fresh
    except ConfigError:
        same = False
    return out if same else fresh


def _family(name: str) -> str:
    return name.strip("[]").split(".")[0]


def _merge(
    lines: list[str],
    blocks: list[_Block],
    old: _Pairs,
    order: list[tuple[str, object]],
    new: _Pairs,
) -> list[str]:
    chunks: list[tuple[str, list[str]]] = [("", [lines[i] for i in blocks[0].lines])]
    present = set()
    for b in blocks[1:]:
        bid = (b.name, b.ordinal)
        if bid not in new:
            continue  # the table went (with its comments)
        present.add(bid)
        assert b.header is not None
        body = _merge_body(lines, b, old[bid], new[bid])
        chunks.append((b.name, [*(lines[i] for i in b.lead), lines[b.header], *body]))
    for bid in order:
        was = old.get(bid, {})
        added = [line for k, line in new[bid].items() if line != was.get(k)]
        if bid in present or (bid in old and not added):
            continue  # a table the text leaves to its defaults, still at its defaults
        at = max((i for i, (name, _) in enumerate(chunks) if _family(name) == _family(bid[0])),
                 default=len(chunks) - 1)  # fmt: skip
        prev = chunks[at][1]
        while prev and not prev[-1].strip():
            prev.pop()
        chunks.insert(at + 1, (bid[0], [bid[0], *(added if bid in old else new[bid].values()), ""]))
        prev.append("")
    out = [line for _, body in chunks for line in body]
    while out and not out[-1].strip():
        out.pop()
    return out


def _merge_body(lines: list[str], b: _Block, old: dict[str, str], new: dict[str, str]) -> list[str]:
    body: list[str] = []
    last_key = -1
    starts = {a: k for k, (a, _z) in b.keys.items()}
    inside = {i for a, z in b.keys.values() for i in range(a + 1, z + 1)}
    for i in b.lines:
        if i in inside:
            continue
        key = starts.get(i)
        if key is None:
            body.append(lines[i])
            continue
        a, z = b.keys[key]
        if key in new and new[key] != old.get(key):
            body.append(_rewrite(lines[a : z + 1], new[key]))
        elif key in new or key not in old:
            body.append("\n".join(lines[a : z + 1]))
        else:
            continue  # the key went
        last_key = len(body)
    extra = [line for k, line in new.items() if k not in b.keys and line != old.get(k)]
    at = last_key if last_key >= 0 else len(body) - _trailing_blank(body)
    body[at:at] = extra
    return body


def _trailing_blank(body: list[str]) -> int:
    n = 0
    while n < len(body) and not body[len(body) - 1 - n].strip():
        n += 1
    return n


def _rewrite(old: list[str], new_line: str) -> str:
    """Return the key's old line(s) with the new value, keeping the key's spelling and comment."""
    m = _KEY_LINE.match(old[0])
    n = _KEY_LINE.match(new_line)
    assert m is not None
    assert n is not None
    value, comment = _value_part("\n".join([m.group(4), *old[1:]]))
    assert value is not None
    pad = value[len(value.rstrip()) :] if comment else ""
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{n.group(4)}{pad}{comment}"
