# SPDX-License-Identifier: MIT
"""The backtester (offline simulator): strategies replayed over recorded market data.

Two paths over the same book kernels, queue models and latency models (``docs/backtest.md``):

* the **generic** path (:mod:`engine.backtest.generic`) runs any
  :class:`engine.strategy.base.Strategy` through the production ``OrderManager`` and a
  backtest venue on a simulated clock (own orders' queue positions in
  :mod:`engine.backtest.own_queue`, the strategy's book in :mod:`engine.backtest.views`);
* the **fast** path (:mod:`engine.backtest.fast`) runs a compiled quoting strategy
  (:class:`engine.strategy.quoting.QuotingStrategy`) whose rule the replay loop calls.

Both write a journal in the engine's format, byte-identical for identical inputs.
"""
