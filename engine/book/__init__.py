# SPDX-License-Identifier: MIT
"""Order books: many L2 (market-by-price) books and the L3 (market-by-order) book."""

from engine.book.l2 import L2Books
from engine.book.l3 import L3Arrays, L3Book

__all__ = ["L2Books", "L3Arrays", "L3Book"]
