# SPDX-License-Identifier: MIT
"""Nasdaq TotalView-ITCH 5.0 as a market-data feed of the engine (:mod:`.feed`)."""
