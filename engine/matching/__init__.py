# SPDX-License-Identifier: MIT
"""Matching engine, queue-position models and replays over the book kernels."""
