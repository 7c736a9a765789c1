# SPDX-License-Identifier: MIT
"""The engine configuration's typed model: a frozen dataclass per TOML table, and its problems.

:class:`EngineConfig` is what :mod:`engine.config.reader` reads and :mod:`engine.config.writer`
writes. The value types of the tables that live elsewhere in the engine are exported here with
the configuration (``RiskLimits`` of ``[risk]``, ``OuchAccountConfig`` of ``[[ouch]]``), so that
an editor of the file (the Manager) needs no other engine module.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal
from pathlib import Path

from engine.instruments import Instrument
from engine.oms.risk import DEFAULT_LIMITS, RiskLimits
from engine.venues.ouch.config import OuchAccountConfig

__all__ = [
    "DEFAULT_REMOTE_PORT",
    "LOOPBACK",
    "RISK_KEYS",
    "ConfigError",
    "ConfigProblem",
    "EngineConfig",
    "FilesConfig",
    "InstrumentConfig",
    "OuchAccountConfig",
    "ParamValue",
    "RemoteConfig",
    "RiskLimits",
    "SimulatorConfig",
    "StrategyConfig",
]

#: Port of the remote server when the file names none.
DEFAULT_REMOTE_PORT = 7341

#: Addresses the remote server may listen on without TLS.
LOOPBACK: tuple[str, ...] = ("127.0.0.1", "::1", "localhost")

#: Parameter values a strategy may take from a file (TOML scalars).
ParamValue = bool | int | float | str

#: The keys of a ``[risk]`` table, in :class:`RiskLimits` field order.
RISK_KEYS: tuple[str, ...] = tuple(f.name for f in fields(RiskLimits))


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
        return Instrument(
            symbol=self.symbol,
            tick_size=Decimal(self.tick_size),
            lot_size=Decimal(self.lot_size),
            multiplier=Decimal(self.multiplier),
            currency=self.currency,
        )


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
