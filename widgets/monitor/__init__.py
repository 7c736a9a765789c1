# SPDX-License-Identifier: MIT
"""The Trade Monitor workspace."""
