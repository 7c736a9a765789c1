# SPDX-License-Identifier: MIT
"""HDF5 tick store: schema, store, importers and the live recorder (docs/tickstore.md)."""
