# SPDX-License-Identifier: MIT
"""The Enterprise Manager workspace."""
