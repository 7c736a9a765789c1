# SPDX-License-Identifier: MIT
"""The generic backtest's venue (``adapter``)."""
