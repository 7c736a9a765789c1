# SPDX-License-Identifier: MIT
"""A synchronous, deterministic writer of the engine's journal format for backtests.

The engine's :class:`engine.journal.Journal` writes on a thread and stamps its open marker
with the process id, so two runs of the same backtest would differ by a few bytes. This
writer produces the same file format (``docs/journal.md``: header, ``OPEN``, ``SCHEMA``,
``EVENT`` and ``LOG`` records, encoded by the same :mod:`engine.journal.format` functions)
with simulated time only and ``pid`` 0, on the calling thread, so the same backtest gives a
byte-identical file. ``engine.posttrade.load_day`` and the Trade Analyzer read it like any
other journal.

Records are buffered and written in whole records; a run stopped half-way (Ctrl+C) leaves a
valid journal of everything written so far (:meth:`BacktestJournal.close`).
"""

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec

from engine.events import Event
from engine.journal import format as fmt
from engine.journal.format import KIND_EVENT, KIND_LOG, KIND_OPEN, KIND_SCHEMA, WriteSchema

#: Buffered bytes that trigger a write.
_WRITE_AT = 1 << 20


class BacktestJournal:
    """Write engine events to a new journal file, deterministically.

    Parameters
    ----------
    path : str | Path
        The journal to create; an existing file is replaced (the backtest owns it).
    created_ns : int
        Simulated time of the run's start, stamped in the header and the open marker.
    engine_id : str
        Recorded in the open marker (e.g. ``"backtest"``).
    """

    def __init__(self, path: str | Path, created_ns: int, *, engine_id: str = "backtest") -> None:
        self.path = Path(path)
        self._enc = msgspec.msgpack.Encoder()
        self._schemas: dict[type, WriteSchema] = {}
        self._next_type_id = 1
        self._buf: list[bytes] = []
        self._size = 0
        self._seq = 0
        #: Records written (events and log records), open marker and schemas excluded.
        self.records = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._closed = False
        self._put(fmt.pack_file_header(created_ns))
        opened = {"ts": created_ns, "pid": 0, "engine_id": engine_id, "offset": 32}
        self._put(fmt.frame(KIND_OPEN, 0, self._enc.encode(opened)))

    # ------------------------------------------------------------------ appending
    def on_event(self, event: Event) -> None:
        """Append an event, numbered in order from 1 (usable as a bus subscriber)."""
        schema = self._schemas.get(type(event))
        if schema is None:
            schema = self._schema_for(type(event))
        self._seq += 1
        payload = self._enc.encode((self._seq, *schema.flatten(event)))
        self._put(fmt.frame(KIND_EVENT, schema.type_id, payload))
        self.records += 1

    def on_fields(self, cls: type[Event], values: Sequence[Any]) -> None:
        """Append an event of class ``cls`` given as its field values, already flattened.

        ``values`` follow the class's field order (as :meth:`on_event` would flatten it:
        nested dataclasses as lists of their values, enums as their ints). This skips building
        the event objects, for writers of many events of a few classes.
        """
        schema = self._schemas.get(cls)
        if schema is None:
            schema = self._schema_for(cls)
        self._seq += 1
        payload = self._enc.encode((self._seq, *values))
        self._put(fmt.frame(KIND_EVENT, schema.type_id, payload))
        self.records += 1

    def log(self, ts: int, level: int, source: str, message: str) -> None:
        """Append a log record stamped ``ts`` (simulated time)."""
        payload = self._enc.encode((ts, level, source, message, ""))
        self._put(fmt.frame(KIND_LOG, 0, payload))
        self.records += 1

    def info(self, ts: int, message: str) -> None:
        """Append an INFO record from the backtester."""
        self.log(ts, logging.INFO, "backtest", message)

    def flush(self) -> None:
        """Write the buffered records to the file."""
        if self._buf:
            data = b"".join(self._buf)
            self._buf.clear()
            self._size = 0
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Write the rest and close the file (idempotent)."""
        if self._closed:
            return
        self.flush()
        os.close(self._fd)
        self._closed = True

    def __enter__(self) -> "BacktestJournal":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _put(self, data: bytes) -> None:
        self._buf.append(data)
        self._size += len(data)
        if self._size >= _WRITE_AT:
            self.flush()

    def _schema_for(self, cls: type) -> WriteSchema:
        known = self._schemas.get(cls)
        if known is not None:
            return known
        fmt.register_type(cls)
        fields, nested_types = fmt.field_codes(cls, lambda t: self._schema_for(t).type_id)
        nested = {i: _or_none(self._schema_for(t).flatten) for i, t in nested_types.items()}
        type_id = self._next_type_id
        self._next_type_id += 1
        name = fmt.qualified_name(cls)
        payload = self._enc.encode((name, [list(f) for f in fields]))
        self._put(fmt.frame(KIND_SCHEMA, type_id, payload))
        schema = WriteSchema(
            type_id, name, fields, fmt.make_flattener([n for n, _c in fields], nested)
        )
        self._schemas[cls] = schema
        return schema


def _or_none(flatten: fmt.Flattener) -> fmt.Flattener:
    def run(v: Any) -> Any:
        return None if v is None else flatten(v)

    return run
