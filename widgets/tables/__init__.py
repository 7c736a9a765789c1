# SPDX-License-Identifier: MIT
"""Generic tables: columns declared as data, keyed batch-updated models, views with CSV export."""

from widgets.tables.columns import Column
from widgets.tables.model import KeyedTableModel
from widgets.tables.view import DataTableView, write_csv

__all__ = ["Column", "DataTableView", "KeyedTableModel", "write_csv"]
