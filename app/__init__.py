# SPDX-License-Identifier: MIT
"""The console application: entry point, main window, engine bridge, settings."""
