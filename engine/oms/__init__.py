# SPDX-License-Identifier: MIT
"""Order management: the universal order, its state machine, the order manager, risk."""
