# SPDX-License-Identifier: MIT
"""Generic tables: columns declared as data, keyed batch-updated models, views with CSV export.

``KeyedTableModel`` keeps a record object per row; ``ColumnarTableModel`` keeps rows in a numpy
structured array (for a million rows); both subclass ``RowTableModel``, which views paint.
"""

from widgets.tables.columnar import ColumnarTableModel
from widgets.tables.columns import Column
from widgets.tables.model import KeyedTableModel, RowTableModel
from widgets.tables.view import DataTableView, write_csv

__all__ = [
    "Column",
    "ColumnarTableModel",
    "DataTableView",
    "KeyedTableModel",
    "RowTableModel",
    "write_csv",
]
