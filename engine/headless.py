# SPDX-License-Identifier: MIT
"""``qwconsole engine``: run the engine without a window, and manage its remote access.

* ``qwconsole engine --demo`` runs the demo the console embeds (simulated exchange, market
  maker on three instruments) and prints a live one-line summary.
* ``qwconsole engine --config FILE`` runs what a TOML configuration describes
  (:mod:`engine.config`): FIX sessions from a QuickFIX-style ``.cfg`` (or the built-in
  simulator), strategies with parameters, risk limits, and the remote server consoles attach
  to. It logs to ``<logs_dir>/engine.log`` and audits to ``<logs_dir>/audit.log``.
* ``qwconsole engine cert`` makes a self-signed TLS certificate and prints its fingerprint.
* ``qwconsole engine token add|list|remove`` manages the hashed access tokens.

Every mode stops cleanly on SIGINT and SIGTERM; bad input gets one line on stderr and exit 2.
"""

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from engine import fastlog
from engine.bad_input import bad_file_errors, one_line
from engine.cli_parser import OneLineErrorParser
from engine.clock import LiveClock
from engine.config.model import ConfigError, EngineConfig
from engine.config.reader import load_config
from engine.core import Component, Engine
from engine.demo import build_demo
from engine.desk import TradingDesk
from engine.events import (
    Alert,
    EngineStartProgress,
    Event,
    OrderChanged,
    OrderFilled,
    PositionChanged,
)
from engine.fastlog import get_log
from engine.fix.store import WriteBarrier
from engine.fix.transport import install_uvloop
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.oms.risk import DEFAULT_LIMITS, RiskLimits
from engine.oms.stp import StpMode
from engine.oms.venue import Venue
from engine.sim.listings import sim_listings
from engine.strategy.base import Strategy
from engine.strategy.loader import StrategyLoadError, build_strategy
from engine.strategy.loader import load_strategy_class as _load_class
from engine.warmup import warm_up

if TYPE_CHECKING:
    from engine.relay.feed import RelayFeed

log = get_log(__name__)

#: Makes the component that brings an engine's market data into its books.
MarketFeed = Callable[[MarketData], Component]


@dataclass(frozen=True)
class RelayOptions:
    """``--market-data relay --relay URL [--relay-pins FILE]``: the relay an engine reads.

    The token is read from ``$QWCONSOLE_RELAY_TOKEN`` (never from the command line).
    """

    address: str
    token: str
    pins: Path

    def feed(self, market: MarketData, engine_id: str) -> "RelayFeed":
        """Return the component that follows every book of ``market`` on the relay."""
        from engine.relay.feed import RelayFeed, parse_relay_address
        from engine.remote.tls import PinStore

        try:
            address = parse_relay_address(self.address)
            return RelayFeed(
                market,
                address,
                self.token,
                pins=PinStore(self.pins),
                client_name=f"engine {engine_id}",
            )
        except ValueError as e:
            raise BuildError(f"--relay: {e}") from None


#: Where sessions without FileStorePath keep their stores, relative to the configuration file.
DEFAULT_STORE_DIR = "fix-store"


class Summary:
    """Count what happens on the bus and render it as one line."""

    def __init__(self) -> None:
        self.orders: set[int] = set()
        self.order_events = 0
        self.fills = 0
        self.alerts = 0
        self.positions: dict[tuple[int, str], PositionChanged] = {}

    def on_event(self, event: Event) -> None:
        """Account for one event."""
        if isinstance(event, OrderChanged):
            self.orders.add(event.order.order_id)
            self.order_events += 1
        elif isinstance(event, OrderFilled):
            self.fills += 1
        elif isinstance(event, PositionChanged):
            self.positions[(event.strategy_id, event.symbol)] = event
        elif isinstance(event, Alert):
            self.alerts += 1

    def line(self, uptime_s: float) -> str:
        """Return the summary line."""
        pos = " ".join(f"{sym}:{p.qty_lots:+d}" for (_s, sym), p in sorted(self.positions.items()))
        pnl = sum(p.realized_pnl + p.unrealized_pnl - p.fees for p in self.positions.values())
        return (
            f"{uptime_s:7.1f}s  orders {len(self.orders):6d}  fills {self.fills:6d}  "
            f"alerts {self.alerts:4d}  pos {pos or '-'}  P&L {pnl:+,.2f}"
        )


def default_state_dir() -> Path:
    """Return ``$XDG_STATE_HOME/qwconsole`` (``~/.local/state/qwconsole``)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local/state"
    return root / "qwconsole"


def print_start_stages(engine: Engine, out: TextIO) -> None:
    """Print one line per start stage (``starting: replaying journal 0 of 2,345,678 bytes``).

    An operator sees why a start takes long (a big journal, kernels compiling); each stage is
    printed once, when it begins.
    """
    last = [""]

    def on_progress(p: EngineStartProgress) -> None:
        if p.stage == last[0]:
            return
        last[0] = p.stage
        size = f" {p.done:,} of {p.total:,} {p.unit}".rstrip() if p.total else ""
        out.write(f"starting: {p.stage}{size}\n")
        out.flush()

    engine.bus.subscribe(EngineStartProgress, on_progress)


async def _run_until_stopped(
    engine: Engine, seconds: float | None, interval_s: float, out: TextIO
) -> None:
    """Run ``engine`` until SIGINT/SIGTERM (or ``seconds``), printing a summary line."""
    summary = Summary()
    engine.bus.subscribe(Event, summary.on_event)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner = loop.create_task(engine.run(warm_up))
    start = engine.clock.monotonic_ns()
    try:
        while not stop.is_set() and not runner.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval_s)
            uptime = (engine.clock.monotonic_ns() - start) / 1e9
            out.write(summary.line(uptime) + ("\r" if out.isatty() else "\n"))
            out.flush()
            if seconds is not None and uptime >= seconds:
                break
    finally:
        engine.request_stop()
        await runner
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def run_demo(
    seconds: float | None,
    interval_s: float,
    out: TextIO,
    state_dir: Path | None = None,
    market_data: str = "fix",
) -> int:
    """Run the demo engine until a signal (or ``seconds``); print a summary every interval.

    With ``state_dir`` the engine journals to ``state_dir/journal`` and keeps its FIX stores in
    ``state_dir/fix``: a restart the same day rebuilds orders and positions and resumes the
    sequence numbers. ``market_data="itch"`` takes the market from the simulator's ITCH feed
    over loopback multicast (``engine.demo.DemoItchFeed``), orders still over FIX.
    """
    engine = Engine(LiveClock(), engine_id="headless")
    print_start_stages(engine, out)
    try:
        if state_dir is None:
            build_demo(engine, market_data=market_data)
        else:
            build_demo(
                engine,
                journal_dir=state_dir / "journal",
                store_dir=state_dir / "fix",
                market_data=market_data,
            )
    except bad_file_errors() as e:  # a bad file the engine reads at start: one line, exit 2
        raise BuildError(one_line(e)) from e
    await _run_until_stopped(engine, seconds, interval_s, out)
    out.write("\nengine stopped cleanly\n")
    return 0


# ----------------------------------------------------------------------------- --config


class BuildError(ValueError):
    """The configuration is valid TOML but cannot be built (a class, a session, a file)."""


def load_strategy_class(path: str, base_dir: Path | None = None) -> type[Strategy]:
    """Return the :class:`Strategy` ``path`` names (``file.py:Class``, ``module:Class``, ``Name``).

    Relative files are relative to ``base_dir`` (:mod:`engine.strategy.loader`).
    """
    try:
        return _load_class(path, base_dir)
    except StrategyLoadError as e:
        raise BuildError(str(e)) from None


def _add_strategies(desk: TradingDesk, cfg: EngineConfig, default_symbols: list[str]) -> None:
    desk.router.stp.mode = StpMode(cfg.stp_mode)
    for i, s in enumerate(cfg.strategies):
        symbols = list(s.symbols) or default_symbols
        unknown = [sym for sym in symbols if sym not in desk.router.managers]
        if unknown:
            raise BuildError(
                f"strategies[{i}].symbols: {', '.join(unknown)} not traded by this "
                f"engine (traded: {', '.join(desk.router.managers)})"
            )
        try:
            strategy = build_strategy(
                s.class_path, s.strategy_id, symbols, s.parameters, cfg.base_dir
            )
            desk.add_strategy(strategy, autostart=s.autostart)
        except StrategyLoadError as e:
            raise BuildError(f"strategies[{i}]: {e}") from None
        except (TypeError, ValueError) as e:
            raise BuildError(f"strategies[{i}] ({s.class_path}, id {s.strategy_id}): {e}") from None
        if s.risk is not None:
            desk.router.risk.set_strategy_limits(s.strategy_id, s.risk)
        desk.router.stp.set_strategy(s.strategy_id, StpMode(s.stp) if s.stp else None, s.stp_group)


def _instrument_bands(desk: TradingDesk, cfg: EngineConfig) -> None:
    """Give each instrument with ``price_band_ticks`` / ``price_band_pct`` its own band."""
    for i, ins in enumerate(cfg.instruments):
        if ins.price_band_ticks is None and ins.price_band_pct is None:
            continue
        if ins.symbol not in desk.router.managers:
            raise BuildError(
                f"instruments[{i}]: {ins.symbol} is not traded by this engine "
                f"(traded: {', '.join(desk.router.managers)})"
            )
        band = RiskLimits(price_band_ticks=ins.price_band_ticks, price_band_pct=ins.price_band_pct)
        desk.router.risk.set_limits(band, symbol=ins.symbol)


def _venues(
    engine: Engine,
    cfg: EngineConfig,
    desk: TradingDesk,
    store_dir: Path | None = None,
    barrier: WriteBarrier | None = None,
    market_feed: MarketFeed | None = None,
) -> list[Component]:
    """Route each instrument to its venue: a session of ``[sessions] file`` or an ``[[ouch]]``.

    The FIX wing builds its sessions (``engine.venues.fix.wiring``), the OUCH wing its
    accounts' sessions (``engine.venues.ouch.wiring``); market data comes over the first FIX
    session, for every instrument, unless ``market_feed`` makes the component that brings it
    (a relay: ``engine.relay.feed``); the sessions then carry orders only.
    """
    from engine.fix.settings import SettingsError
    from engine.marketdata import MarketData
    from engine.venues.fix.wiring import FixWiringError, build_fix_venues
    from engine.venues.ouch.wiring import OuchWiringError, build_ouch_venues

    symbols = [i.symbol for i in cfg.instruments]
    market = MarketData(symbols, engine.bus, engine.clock) if symbols else None
    fix = [
        (f"instruments[{i}]", ins.instrument(), ins.session)
        for i, ins in enumerate(cfg.instruments)
        if not ins.venue
    ]
    ouch = [(ins.instrument(), ins.venue) for ins in cfg.instruments if ins.venue]
    routes: list[tuple[Instrument, Venue]] = []
    parts: list[Component] = []
    try:
        if cfg.sessions_file is not None:
            path = cfg.resolve(cfg.sessions_file)
            assert path is not None
            fix_routes, fix_parts = build_fix_venues(
                engine,
                path,
                fix,
                market if market_feed is None else None,
                store_dir=store_dir,
                barrier=barrier,
                market_data_for=[instrument for instrument, _name in ouch],
            )
            routes += fix_routes
            parts += fix_parts
        elif fix:
            where = fix[0][0]
            raise BuildError(
                f"{where}: no venue: set [sessions] file (a FIX session) or its "
                "venue (an [[ouch]] account)"
            )
        ouch_routes, ouch_parts = build_ouch_venues(
            engine, cfg.ouch, ouch, store_dir=store_dir, barrier=barrier
        )
        routes += ouch_routes
        parts += ouch_parts
    except (SettingsError, FixWiringError, OuchWiringError) as e:
        raise BuildError(str(e)) from None
    if market is not None:
        desk.set_market_data(market)
        if market_feed is not None:
            parts.insert(0, market_feed(market))
    for instrument, venue in routes:
        desk.add_instrument(instrument, venue)
    return parts


def build_from_config(
    engine: Engine, cfg: EngineConfig, market_feed: MarketFeed | None = None
) -> TradingDesk:
    """Add what ``cfg`` describes to ``engine``; return the trading desk.

    ``market_feed`` makes the component that brings the market data (a relay,
    ``--market-data relay``) instead of the FIX sessions.

    With ``[simulator] enabled`` the venue is the built-in simulator listing the configuration's
    instruments (``engine.sim.listings``; the demo's three if none), with the demo's market
    maker only if ``demo_strategy``; the configuration's risk limits and strategies come on top.
    Otherwise the initiator sessions of ``[sessions] file`` are the venues of the listed
    instruments.
    """
    from engine.journal.component import JournalComponent, recover_day
    from engine.logfeed import LogFeed

    journal = cfg.resolve(cfg.files.journal_dir)
    # One store rule: every session keeps its sequence numbers on disk, in [files] store_dir
    # (default "fix-store" next to the configuration) unless its .cfg sets FileStorePath.
    store = cfg.resolve(cfg.files.store_dir or Path(DEFAULT_STORE_DIR))
    if cfg.simulator.enabled:
        if market_feed is not None:
            raise BuildError(
                "--market-data relay: the built-in simulator ([simulator] "
                "enabled) is the market; trade on a venue instead"
            )
        if cfg.sessions_file is not None:
            raise BuildError(
                "[sessions] file and [simulator] enabled exclude each other: the built-in "
                "simulator is the venue (or use qwconsole sim --cfg)"
            )
        try:
            listings = sim_listings(cfg.instruments)
        except ValueError as e:
            raise BuildError(str(e)) from None
        desk = build_demo(
            engine,
            seed=cfg.simulator.seed,
            journal_dir=journal,
            store_dir=store,
            listings=listings,
            demo_strategy=cfg.simulator.demo_strategy,
        )
        desk.answer_timeout_s = cfg.answer_timeout_ms / 1000
        if cfg.risk not in (RiskLimits(), DEFAULT_LIMITS):  # the file sets limits: they apply
            desk.router.risk.global_limits = cfg.risk
        _add_strategies(desk, cfg, [x.instrument.symbol for x in listings])
        _instrument_bands(desk, cfg)
        return desk
    if cfg.sessions_file is None and not cfg.ouch:
        raise BuildError(
            "nothing to trade on: set [sessions] file, an [[ouch]] account or "
            "[simulator] enabled = true"
        )
    desk = TradingDesk(engine.bus, engine.clock, cfg.risk)
    desk.answer_timeout_s = cfg.answer_timeout_ms / 1000
    parts: list[Component] = [LogFeed()]
    barrier = None
    if journal is not None:
        recovered = recover_day(
            journal, engine.engine_id, engine.clock.now_ns(), engine.report_progress
        )
        journaling = JournalComponent(engine, journal, recovered=recovered)
        barrier = journaling.journal.after_written
        parts.append(journaling)
    else:
        recovered = None
    fix_parts = _venues(engine, cfg, desk, store, barrier, market_feed)
    if recovered is not None:
        desk.restore(recovered)
        desk.adopt_unjournaled(recovered)
    _add_strategies(desk, cfg, [i.symbol for i in cfg.instruments])
    _instrument_bands(desk, cfg)
    for component in [*parts, desk, *fix_parts]:
        engine.add_component(component)
    return desk


def _log_to_files(logs_dir: Path | None) -> None:
    if logs_dir is None:
        return
    logs_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(logs_dir / "engine.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


async def run_config(
    cfg: EngineConfig,
    seconds: float | None,
    interval_s: float,
    out: TextIO,
    relay: RelayOptions | None = None,
) -> int:
    """Run the engine ``cfg`` describes, with its remote server, until a signal.

    With ``relay`` the market data comes from that relay (``engine.relay.feed``); a relay that
    refuses or does not answer stops the engine with :class:`BuildError` saying why.
    """
    from engine.remote.server import AuditLog, RemoteServer
    from engine.remote.tls import server_context
    from engine.remote.tokens import TokenStore

    fastlog.start()  # log calls return at once: the handlers run on the log writer thread
    engine = Engine(
        LiveClock(), engine_id=cfg.engine_id, heartbeat_interval_ms=cfg.heartbeat_interval_ms
    )
    print_start_stages(engine, out)
    server = None
    rem = cfg.remote
    feeds: list[RelayFeed] = []

    def relay_feed(market: MarketData) -> Component:
        assert relay is not None
        feed = relay.feed(market, cfg.engine_id)
        feeds.append(feed)
        return feed

    try:
        build_from_config(engine, cfg, relay_feed if relay is not None else None)
        if rem.enabled:
            store = cfg.resolve(rem.token_store)
            assert store is not None  # checked by the configuration
            cert, key = cfg.resolve(rem.tls_cert), cfg.resolve(rem.tls_key)
            ssl_ctx = server_context(cert, key) if cert is not None and key is not None else None
            tokens = TokenStore(store)
    except bad_file_errors() as e:
        raise BuildError(one_line(e)) from e
    if rem.enabled:
        logs = cfg.resolve(cfg.files.logs_dir)
        audit_path = cfg.resolve(rem.audit_log) or (logs / "audit.log" if logs else None)
        server = RemoteServer(
            engine,
            tokens,
            host=rem.bind,
            port=rem.port,
            ssl_context=ssl_ctx,
            audit=AuditLog(audit_path, engine.clock),
            client_queue=rem.client_queue,
            history=rem.history,
        )
        await server.open()
        scheme = "wss" if ssl_ctx else "ws"
        out.write(f"remote server on {scheme}://{rem.bind}:{server.port}\n")
        out.flush()
    try:
        await _run_until_stopped(engine, seconds, interval_s, out)
    finally:
        if server is not None:
            await server.close()
    failures = [f.failure for f in feeds if f.failure]
    if failures:
        raise BuildError(failures[0])
    out.write("\nengine stopped cleanly\n")
    log.info("engine stopped cleanly")
    return 0


# ----------------------------------------------------------------------------- cert / token


def _cert_main(argv: Sequence[str]) -> int:
    from engine.remote.tls import TlsError, file_fingerprint, make_self_signed

    parser = OneLineErrorParser(
        prog="qwconsole engine cert",
        description="Make a self-signed TLS certificate for the remote server and print its "
        "SHA-256 fingerprint.",
    )
    parser.add_argument("--config", type=Path, help="take tls_cert/tls_key from this file")
    parser.add_argument("--cert", type=Path, help="certificate file to write (PEM)")
    parser.add_argument("--key", type=Path, help="private key file to write (PEM)")
    parser.add_argument("--host", default="localhost", help="name the certificate is for")
    parser.add_argument("--days", type=int, default=825, help="validity, days")
    parser.add_argument("--show", action="store_true", help="only print the fingerprint")
    opts = parser.parse_args(argv)
    cert, key = opts.cert, opts.key
    if opts.config is not None:
        cfg = _load_or_exit(parser, opts.config)
        cert = cert or cfg.resolve(cfg.remote.tls_cert)
        key = key or cfg.resolve(cfg.remote.tls_key)
    if cert is None or (key is None and not opts.show):
        parser.error("say where: --cert FILE --key FILE, or --config FILE with [remote] tls_*")
    try:
        if opts.show:
            _say(f"SHA-256 fingerprint: {file_fingerprint(cert)}")
            return 0
        if cert.exists() or key.exists():
            parser.error(
                f"{cert if cert.exists() else key} exists; remove it first (consoles "
                "that pinned the old certificate will refuse the new one)"
            )
        fp = make_self_signed(cert, key, opts.host, opts.days)
    except TlsError as e:
        parser.error(str(e))
    _say(f"certificate {cert}\nkey         {key}\nSHA-256 fingerprint: {fp}")
    _say("Compare it with what the console shows on its first connection.")
    return 0


def _token_main(argv: Sequence[str]) -> int:
    from engine.remote.tokens import ROLES, TokenError, TokenStore

    parser = OneLineErrorParser(
        prog="qwconsole engine token",
        description="Manage the remote server's access tokens (stored hashed).",
    )
    # --config/--store go before or after the action (``token add --config X`` too): each
    # sub-command repeats them, without defaults of its own that would hide the earlier value.
    where = OneLineErrorParser(add_help=False)
    for suppress, target in ((False, parser), (True, where)):
        default = argparse.SUPPRESS if suppress else None
        target.add_argument(
            "--config", type=Path, default=default, help="take [remote] token_store from this file"
        )
        target.add_argument("--store", type=Path, default=default, help="token store file")
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", parents=[where], help="create a token and print it once")
    add.add_argument("name", help="who the token is for (one word)")
    add.add_argument("--role", choices=ROLES, required=True)
    add.add_argument("--expires-days", type=float, default=0.0, help="0: never")
    sub.add_parser("list", parents=[where], help="list tokens (never the secrets)")
    rm = sub.add_parser("remove", parents=[where], help="revoke a token")
    rm.add_argument("name")
    opts = parser.parse_args(argv)
    path = opts.store
    if path is None and opts.config is not None:
        cfg = _load_or_exit(parser, opts.config)
        path = cfg.resolve(cfg.remote.token_store)
    if path is None:
        parser.error("say where: --store FILE, or --config FILE with [remote] token_store")
    clock = LiveClock()
    try:
        store = TokenStore(path)
        if opts.action == "add":
            if opts.expires_days < 0:
                parser.error("--expires-days must be >= 0")
            now = clock.now_ns()
            expires = now + int(opts.expires_days * 86_400e9) if opts.expires_days else 0
            token = store.add(opts.name, opts.role, now, expires)
            _say(token)
            _say(
                f"(token for {opts.name}, role {opts.role}; it is not stored and will not be "
                "shown again)",
                file=sys.stderr,
            )
        elif opts.action == "list":
            for e in store.entries():
                exp = (
                    "never"
                    if not e.expires_ns
                    else f"{(e.expires_ns - clock.now_ns()) / 86_400e9:+.1f} days"
                )
                _say(f"{e.name:<20} {e.role:<7} id {e.id}  expires {exp}")
        elif not store.remove(opts.name):
            parser.error(f"no token named {opts.name!r} in {path}")
    except TokenError as e:
        parser.error(str(e))
    return 0


def _say(*parts: object, file: TextIO | None = None) -> None:
    (file or sys.stdout).write(" ".join(str(p) for p in parts) + "\n")


def _load_or_exit(parser: OneLineErrorParser, path: Path) -> EngineConfig:
    try:
        return load_config(path)
    except ConfigError as e:
        for p in e.problems[1:]:
            _say(f"  {p}", file=sys.stderr)
        parser.error(
            str(e.problems[0])
            + (f" (and {len(e.problems) - 1} more above)" if len(e.problems) > 1 else "")
        )


def _relay_options(parser: OneLineErrorParser, opts: argparse.Namespace) -> RelayOptions | None:
    """Check ``--market-data relay`` and its options; return them (``None`` without)."""
    if opts.market_data != "relay":
        if opts.relay is not None or opts.relay_pins is not None:
            parser.error("--relay and --relay-pins go with --market-data relay")
        return None
    if opts.config is None:
        parser.error("--market-data relay goes with --config (the demo's market is its own)")
    if not opts.relay:
        parser.error("--market-data relay needs --relay wss://host:port")
    from engine.relay.feed import TOKEN_ENV, parse_relay_address

    try:
        parse_relay_address(opts.relay)
    except ValueError as e:
        parser.error(f"--relay: {e}")
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        parser.error(
            f"--market-data relay: the relay's token is read from ${TOKEN_ENV}, which is not set"
        )
    pins = opts.relay_pins or opts.config.resolve().parent / "known-relays.json"
    return RelayOptions(opts.relay, token, pins)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole engine`` with ``argv``; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "cert":
        return _cert_main(args[1:])
    if args and args[0] == "token":
        return _token_main(args[1:])
    parser = OneLineErrorParser(
        prog="qwconsole engine",
        description="Run the engine without a window. Also: 'qwconsole engine cert ...' and "
        "'qwconsole engine token ...' for remote access.",
    )
    parser.add_argument("--demo", action="store_true", help="run the built-in demo")
    parser.add_argument("--config", type=Path, help="run what this TOML file describes")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    parser.add_argument("--interval", type=float, default=1.0, help="summary period, seconds")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="--demo: journal and FIX stores go here (default $XDG_STATE_HOME/qwconsole)",
    )
    parser.add_argument("--no-journal", action="store_true", help="--demo: keep nothing on disk")
    parser.add_argument(
        "--market-data",
        choices=("fix", "itch", "relay"),
        default="fix",
        help="--demo: the market over the FIX session (fix) or the simulator's ITCH 5.0 feed "
        "over loopback multicast (itch); --config: from a market-data relay (relay, with "
        "--relay; the token in $QWCONSOLE_RELAY_TOKEN), the venues then carry orders only",
    )
    parser.add_argument(
        "--relay",
        metavar="URL",
        default=None,
        help="--market-data relay: wss://host:port[#fingerprint] (ws://host:port without TLS)",
    )
    parser.add_argument(
        "--relay-pins",
        type=Path,
        default=None,
        metavar="FILE",
        help="pinned relay certificates (default: known-relays.json next to the configuration)",
    )
    opts = parser.parse_args(args)
    relay = _relay_options(parser, opts)
    if not opts.demo and opts.config is None:
        parser.error("nothing to run: use --demo or --config FILE")
    if opts.demo and opts.config is not None:
        parser.error("--demo and --config exclude each other")
    if opts.interval <= 0 or (opts.seconds is not None and opts.seconds <= 0):
        parser.error("--seconds and --interval must be > 0")
    install_uvloop()
    if opts.config is not None:
        cfg = _load_or_exit(parser, opts.config)
        _log_to_files(cfg.resolve(cfg.files.logs_dir))
        try:
            return asyncio.run(run_config(cfg, opts.seconds, opts.interval, sys.stdout, relay))
        except (BuildError, OSError) as e:
            parser.error(f"{opts.config}: {one_line(e)}")
        finally:
            fastlog.stop()  # run_config started the log writer: what it queued is written
    state = None if opts.no_journal else (opts.state_dir or default_state_dir())
    try:
        return asyncio.run(
            run_demo(opts.seconds, opts.interval, sys.stdout, state, opts.market_data)
        )
    except (BuildError, OSError) as e:
        parser.error(one_line(e))
