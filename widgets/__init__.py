# SPDX-License-Identifier: MIT
"""Qt views and models of the Trade Monitor and Enterprise Manager, and shared widgets."""
