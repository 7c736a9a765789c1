# SPDX-License-Identifier: MIT
"""Qt views of the Trade Analyzer workspace."""
