# SPDX-License-Identifier: MIT
"""The exchange simulator: matching, synthetic order flow and market data, venue-neutral."""
