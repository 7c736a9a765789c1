# SPDX-License-Identifier: MIT
"""Venue adapters: one package per protocol or venue, each behind ``engine.oms.venue.Venue``.

``fix/`` (FIX order entry and its links), ``sim/`` (the in-process simulator), ``backtest/``
(the generic backtest's simulated venue). The order manager sees only the protocol and report
types of ``engine.oms.venue``; ``engine.oms`` never imports a venue (an import contract), and
no venue imports another.
"""
