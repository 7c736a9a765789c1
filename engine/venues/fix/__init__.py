# SPDX-License-Identifier: MIT
"""The FIX venue: order entry (``adapter``), code tables (``codes``), session links (``link``).

The links come from a QuickFIX settings file; the adapter trades through one initiator session.
"""
