# SPDX-License-Identifier: MIT
"""The market-data relay (``qwconsole relay``, ``docs/relay.md``): received once, served to many.

:mod:`engine.relay.server` (the relay), :mod:`engine.relay.client` (a subscriber that keeps
books), :mod:`engine.relay.sources` (tick store, another relay, ITCH multicast),
:mod:`engine.relay.protocol` (its messages), :mod:`engine.relay.config` (``relay.toml``).
"""
