# SPDX-License-Identifier: MIT
"""``qwconsole relay --config relay.toml``: run a market-data relay until SIGTERM / Ctrl+C.

Prints ``relay <id> listening on <host>:<port> run <run_id>`` once it serves, and, with
``[relay] stats_interval_s``, one JSON line of counters per interval. Certificates and tokens
are made with ``qwconsole engine cert --cert F --key F`` and ``qwconsole engine token --store
F add NAME --role viewer`` (the same files and formats as the remote server's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from engine.cli_parser import OneLineErrorParser
from engine.clock import LiveClock
from engine.embedded import new_event_loop
from engine.events import BookUpdated
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayError
from engine.relay.config import RelayConfig, RelayConfigError, load
from engine.relay.server import Relay
from engine.relay.sources import (
    EngineSource,
    FixSource,
    ItchSource,
    RelaySource,
    Source,
    TickStoreSource,
)
from engine.remote.server import AuditLog
from engine.remote.tls import PinStore, TlsError, server_context
from engine.remote.tokens import TokenError, TokenStore

log = get_log(__name__)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


async def serve(cfg: RelayConfig, stop: asyncio.Event) -> int:
    """Run the relay of ``cfg`` until ``stop`` is set; return the exit status."""
    from engine.bus import MessageBus

    clock = LiveClock()
    bus = MessageBus()
    symbols = [i.symbol for i in cfg.instruments]
    market = MarketData(symbols, bus, clock, n_levels=cfg.n_levels)
    instruments = [
        Instrument(symbol=i.symbol, tick_size=Decimal(i.tick_size), lot_size=Decimal(i.lot_size))
        for i in cfg.instruments
    ]
    recorder = None
    if cfg.persist_path is not None:
        from engine.tickstore.recorder import Recorder

        recorder = Recorder(
            cfg.persist_path, clock, instruments, flush_interval_ms=cfg.persist_flush_ms
        )
        recorder.open()
        recorder.attach(market)  # before the relay takes market.apply: recorded, then served
        bus.subscribe(BookUpdated, recorder.on_book)
    ssl_ctx = None
    if cfg.tls_cert is not None and cfg.tls_key is not None:
        ssl_ctx = server_context(cfg.tls_cert, cfg.tls_key)
    audit_path = cfg.audit_log or cfg.path.parent / "relay-audit.log"
    relay = Relay(
        cfg.relay_id,
        market,
        clock,
        TokenStore(cfg.token_store),
        host=cfg.bind,
        port=cfg.port,
        ssl_context=ssl_ctx,
        audit=AuditLog(audit_path, clock),
        cache_rows=cfg.cache_rows,
        max_lag_rows=cfg.max_lag_rows,
        status_role=cfg.status_role,
        sizes={i.symbol: (i.tick_size, i.lot_size) for i in cfg.instruments},
    )
    sources = _sources(cfg, market, clock, instruments)
    for src in sources:
        relay.add_source(src)
    await relay.open()
    print(
        f"relay {cfg.relay_id} listening on {cfg.bind}:{relay.port} run {relay.run_id}", flush=True
    )
    tasks: list[asyncio.Task[None]] = []
    try:
        for src in sources:
            await src.start()
        if recorder is not None:
            tasks.append(asyncio.get_running_loop().create_task(_flush(recorder)))
        if cfg.stats_interval_s > 0:
            tasks.append(
                asyncio.get_running_loop().create_task(_stats(relay, cfg.stats_interval_s))
            )
        await stop.wait()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for src in sources:
            with contextlib.suppress(Exception):
                await src.stop()
        await relay.close()
        if recorder is not None:
            recorder.close()
    return 0


def _sources(
    cfg: RelayConfig, market: MarketData, clock: LiveClock, instruments: list[Instrument]
) -> list[Source]:
    sources: list[Source] = []
    for s in cfg.sources:
        if s.kind == "tickstore":
            assert s.path is not None
            sources.append(
                TickStoreSource(market, s.path, s.day, s.symbols, speed=s.speed, name=s.name)
            )
        elif s.kind in ("relay", "engine"):
            token = os.environ.get(s.token_env, "")
            if not token:
                raise RelayConfigError(
                    f"{cfg.path}: sources ({s.name}): the token is read from "
                    f"${s.token_env}, which is not set"
                )
            pins = PinStore(s.pins) if s.pins else None
            if s.kind == "relay":
                sources.append(
                    RelaySource(
                        market, s.host, s.port, token, s.symbols, tls=s.tls, pins=pins, name=s.name
                    )
                )
            else:
                sources.append(
                    EngineSource(
                        market,
                        [i for i in instruments if i.symbol in s.symbols],
                        s.host,
                        s.port,
                        token,
                        tls=s.tls,
                        pins=pins,
                        name=s.name,
                    )
                )
        elif s.kind == "fix":
            assert s.sessions is not None
            sources.append(
                FixSource(
                    market,
                    clock,
                    [i for i in instruments if i.symbol in s.symbols],
                    s.sessions,
                    session_id=s.session_id,
                    name=s.name,
                )
            )
        else:
            assert s.group_a is not None
            sources.append(
                ItchSource(
                    market,
                    clock,
                    [i for i in instruments if i.symbol in s.symbols],
                    s.group_a,
                    s.group_b,
                    session=s.session,
                    recovery=s.recovery,
                    name=s.name,
                )
            )
    return sources


async def _flush(recorder: object) -> None:
    from engine.tickstore.recorder import Recorder

    assert isinstance(recorder, Recorder)
    while True:
        await asyncio.sleep(recorder.flush_interval_s)
        try:
            recorder.flush()
        except Exception:
            log.exception("recording to %s failed", recorder.path)


async def _stats(relay: Relay, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        print(
            json.dumps(
                {**relay.stats(), "rss_bytes": _rss_bytes(), "cached_bytes": relay.cached_bytes()}
            ),
            flush=True,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole relay``; return the exit status."""
    parser = OneLineErrorParser(
        prog="qwconsole relay",
        description="Serve market data to remote consoles and engines (docs/relay.md).",
    )
    parser.add_argument("--config", type=Path, required=True, help="relay.toml")
    parser.add_argument("--port", type=int, default=None, help="override [relay] port")
    opts = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        cfg = load(opts.config)
    except RelayConfigError as e:
        sys.stderr.write(f"qwconsole relay: error: {e}\n")
        return 2
    if opts.port is not None:
        from dataclasses import replace

        cfg = replace(cfg, port=opts.port)
    loop = new_event_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        return loop.run_until_complete(serve(cfg, stop))
    except (RelayConfigError, RelayError, TlsError, TokenError, OSError, ValueError) as e:
        sys.stderr.write(f"qwconsole relay: error: {e}\n")
        return 2
    finally:
        loop.close()


if __name__ == "__main__":
    raise SystemExit(main())
