# SPDX-License-Identifier: MIT
"""Positions and P&L per strategy and instrument."""

from engine.portfolio.positions import Position, PositionBook

__all__ = ["Position", "PositionBook"]
