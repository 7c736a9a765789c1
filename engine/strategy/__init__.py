# SPDX-License-Identifier: MIT
"""The strategy API: one class runs unchanged live, on the simulator and in the backtester."""
