# SPDX-License-Identifier: MIT
"""NASDAQ TotalView-ITCH 5.0 over MoldUDP64 (issue 20).

* :mod:`~engine.feeds.itch.messages` — every message type as a structured dtype.
* :mod:`~engine.feeds.itch.decode` — buffers and raw day files into per-type arrays.
* :mod:`~engine.feeds.itch.moldudp64` — MoldUDP64 framing and sequence tracking.
* :mod:`~engine.feeds.itch.book` — the order-level books of every stock.
* :mod:`~engine.feeds.itch.generate` — a synthetic ITCH day of any size.
"""
