# SPDX-License-Identifier: MIT
"""Bundled resources: themes, icons, default FIX dictionaries and configuration templates."""
