# SPDX-License-Identifier: MIT
"""Unit tests of the FIX engine."""
