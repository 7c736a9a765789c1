# SPDX-License-Identifier: MIT
"""The FIX venue: order entry (``adapter``), market data (``feed``), codes, session links.

The links come from a QuickFIX settings file; the adapter trades through one initiator session.
"""
