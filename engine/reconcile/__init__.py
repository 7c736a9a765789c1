# SPDX-License-Identifier: MIT
"""Reconcile a trading day: the journal, the engine's recovery and the venue's reports.

:func:`reconcile` reads a state directory (journals, FIX stores, FIX message logs) and returns a
:class:`ReconcileReport`: fills and positions per (session, instrument, strategy) in each
source, and every fill missing in a source or not the same in all of them. ``qwconsole
reconcile STATE_DIR`` prints it (``engine.reconcile.cli``); the console shows it in a dialog.
Documented in ``docs/reconcile.md``.
"""

from engine.reconcile.report import (
    LIVE_SETTLE_NS,
    SOURCES,
    FillDifference,
    ReconcileError,
    ReconcileReport,
    ReconcileRow,
    SourceCount,
    reconcile,
    report_dict,
)

__all__ = [
    "LIVE_SETTLE_NS",
    "SOURCES",
    "FillDifference",
    "ReconcileError",
    "ReconcileReport",
    "ReconcileRow",
    "SourceCount",
    "reconcile",
    "report_dict",
]
