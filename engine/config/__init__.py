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
disable a risk limit). One module per job:

* :mod:`engine.config.model`: the typed configuration (:class:`~engine.config.model.EngineConfig`
  and a class per table) and :class:`~engine.config.model.ConfigError`, whose ``problems`` each
  name the file, the line, the key path (``strategies[1].parameters.qty_lots``) and the value;
* :mod:`engine.config.reader`: TOML text to a checked configuration
  (:func:`~engine.config.reader.load_config`, :func:`~engine.config.reader.parse_config`);
* :mod:`engine.config.writer`: a configuration back to TOML, deterministically: the same
  configuration always gives the same text, and loading that text gives the same configuration
  (:func:`~engine.config.writer.dump_config`, ``save_config``, ``check_config``);
* :mod:`engine.config.inplace`: :func:`~engine.config.inplace.update_config_text` writes it
  into an existing file's text instead, keeping the file's comments, blank lines, order and
  the spelling of every value that did not change.
"""
