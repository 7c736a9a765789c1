# SPDX-License-Identifier: MIT
"""FIX session-level acceptance suite run against our acceptor."""
