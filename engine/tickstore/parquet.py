# SPDX-License-Identifier: MIT
"""Import Parquet files with the CSV importer's column mapping (``qwconsole import parquet``).

The mapped columns of each file are read with pyarrow in row batches and written as CSV text
to a temporary file next to the store, which :class:`engine.tickstore.csv_import.CsvImporter`
then parses with the same mapping, conversions and checks as a CSV file: a row's number in
an error is its CSV line (the Parquet row + 1, after the header). Timestamp columns come out
as ISO-8601 text (map them with ``:iso``); integer columns as integers; float columns in
their shortest text, so ``--round-to-tick`` reads their artifacts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from engine.tickstore.csv_import import CsvImporter, CsvMapping, FieldMap
from engine.tickstore.importing import (
    FORMATS,
    ImportResult,
    Progress,
    Staging,
    sniff,
)

#: Rows converted per batch.
BATCH_ROWS = 1 << 20


def _columns(path: Path, schema: Any, mapping: CsvMapping) -> list[str]:
    """Return the file's columns the mapping reads (``#N`` is the N-th column)."""
    names = list(schema.names)
    out: list[str] = []
    for f in mapping.fields:
        col = f.column
        if col is None:
            continue
        if col.startswith("#") and col[1:].isdigit():
            i = int(col[1:])
            if i >= len(names):
                raise ValueError(f"{path}: column {col}: the file has {len(names)} columns")
            col = names[i]
        elif col not in names:
            raise ValueError(f"{path}: column {col!r}: no such column ({', '.join(names)[:120]})")
        if col not in out:
            out.append(col)
    return out


def _to_csv(path: Path, mapping: CsvMapping, out: Path) -> CsvMapping:
    """Write the mapped columns of Parquet ``path`` as CSV text to ``out``.

    Returns the mapping that reads it (columns by name, comma-separated, with a header).
    """
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises many types for a bad file
        raise ValueError(f"{path}: not a readable Parquet file ({e})") from None
    cols = _columns(path, pf.schema_arrow, mapping)
    names = list(pf.schema_arrow.names)
    fields = []
    for f in mapping.fields:
        col = f.column
        if col is not None and col.startswith("#") and col[1:].isdigit():
            col = names[int(col[1:])]
        fields.append(FieldMap(f.field, col, f.conv, f.const))
    opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
    writer = None
    try:
        with out.open("wb") as fh:
            fh.write((",".join(cols) + "\n").encode())  # the header, unquoted
            for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=cols):
                if writer is None:
                    writer = pacsv.CSVWriter(fh, batch.schema, write_options=opts)
                writer.write_batch(batch)
            if writer is not None:
                writer.close()
    except Exception as e:
        raise ValueError(f"{path}: cannot be read as rows ({e})") from None
    return CsvMapping(mapping.kind, tuple(fields), ",", True)


def import_parquet(
    files: list[Path],
    store: Path,
    symbol: str,
    mapping: CsvMapping,
    *,
    tick_size: str,
    lot_size: str,
    venue: str = "",
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
    round_to_tick: bool = False,
) -> ImportResult:
    """Import Parquet files into ``store``, all or nothing (see :class:`Staging`)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ValueError("parquet: needs the pyarrow package (pip install pyarrow)") from None
    for f in files:
        kind = sniff(f)
        if kind != "parquet":
            what = FORMATS[kind] if kind is not None else "not a Parquet file (no PAR1 magic)"
            raise ValueError(f"{f}: this is {what}")
    store = Path(store)
    with Staging(store, replace=replace) as staging:
        imp: CsvImporter | None = None
        with tempfile.TemporaryDirectory(prefix=f".{store.name}.parquet-", dir=store.parent) as d:
            for f in files:
                text = Path(d) / "rows.csv"
                csv_mapping = _to_csv(f, mapping, text)
                if imp is None:
                    imp = CsvImporter(
                        staging,
                        symbol,
                        csv_mapping,
                        tick_size=tick_size,
                        lot_size=lot_size,
                        venue=venue,
                        skip_bad_rows=skip_bad_rows,
                        round_to_tick=round_to_tick,
                    )
                imp.import_file(text, progress, name=f)
                text.unlink()
        assert imp is not None
        return imp.finish()
