# SPDX-License-Identifier: MIT
"""The qwconsole engine: everything that trades, with no Qt anywhere.

Map of ``engine/`` (how data flows through it, its threads and the checked import rules:
``docs/architecture.md``)::

    running an engine
      core           Engine: bus, clock, numbered event stream, components, command dispatch
      client         EngineClient, the one interface a console uses (embedded or remote)
      embedded       an Engine on its own asyncio loop and thread inside the console
      headless       ``qwconsole engine``: an Engine without a window (--demo, --config FILE)
      config         the headless engine's TOML configuration, typed and checked
      demo           the default engine: simulator, FIX on loopback, a market maker
      desk           TradingDesk, one component: routing, risk, positions, strategies
      marketdata     MarketData: the engine's L2 books; BookUpdated and TradeReported
      logfeed        engine log records as events
      alerts         alerts folded per cause; refusals counted
      warmup         compile (or load from the cache) every kernel before the first event
    packages
      oms            universal order and state table, OrderManager, OrderRouter, risk,
                     self-trade prevention, the Venue protocol and report types
      venues         venue adapters behind engine.oms.venue.Venue: fix, ouch, itch, sim,
                     backtest (independent of each other)
      fix            FIX engine: dictionaries, codec, sessions, stores, logs, transport;
                     fix.edit is its Qt-free editing layer, used by the Manager
      feeds          binary market data: pcap, multicast A/B, ITCH, SBE, FAST
      book           L2 (price level) and L3 (order by order) book kernels and wrappers
      matching       matching engine, queue-position models, own-order replays
      portfolio      positions and P&L kernels, PositionBook
      strategy       the strategy API, compiled quoting rules, runner, examples
      sim            the exchange simulator, in process or as ``qwconsole sim``
      backtest       the backtester: generic path (the real OMS) and compiled fast path
      journal        the journal's file format, writer thread, reader and recovery;
                     journal.component: JournalComponent, the engine's day file
      tickstore      HDF5 tick store, importers and the live recorder
      reconcile      ``qwconsole reconcile``: journal, recovery and venue reports compared
      remote         remote engines: protocol, server, client, tokens, TLS
      relay          the market-data relay, ``qwconsole relay``
    messages and plumbing
      events         frozen facts out of the engine (and the snapshot)
      commands       frozen requests into the engine and their answers
      types, enums   structured dtypes and kernel constants; their IntEnum mirrors
      instruments    tick and lot sizes, conversions to and from display units
      bus, clock     synchronous publish/subscribe; injected time (the one wall-clock reader)
      jit            the one numba import: kernel decorators, cache policy
      fastlog        logging that costs the caller little; files written by a thread
      gcpace         paced garbage collection
      busypoll       an event loop that polls its sockets instead of sleeping
      posttrade      a day's orders and executions from the journal as arrays
      cli_parser     every command's argument parser (a bad argument: one line, exit 2)
      bad_input      the one-line errors for bad files at the entry points
      native         the FIX hot path compiled with mypyc, and the hook that loads it
"""

from engine.native import install as _install_native

# Before any module of engine.native.MODULES is imported: their compiled form when current.
_install_native()
