# SPDX-License-Identifier: MIT
"""Find the tags a dictionary does not know in a FIX log file (Qt-free).

A FIX log is read line by line: each line holding ``8=FIX`` is taken as one message from there
on (a QuickFIX or qwconsole timestamp prefix is skipped), with SOH, ``|`` or ``^A``
separators. For every tag the dictionary lacks, :func:`scan_log` collects how often it occurs,
in which message types, a few distinct sample values and the line it was first seen on, and
guesses a FIX type from the values, so that the dictionary editor can offer to add it.

The scan reports progress and can be cancelled (it runs off the GUI thread); it never reads
the whole file into memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from engine.fix.edit.splitting import split_fields

__all__ = ["LogScan", "UnknownTag", "guess_type", "scan_lines", "scan_log"]

_MAX_SAMPLES = 5
_INT_RE = re.compile(r"-?[0-9]+\Z")
_FLOAT_RE = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+)\Z")
_TS_RE = re.compile(r"[0-9]{8}-[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?\Z")
_DATE_RE = re.compile(r"[0-9]{8}\Z")
_TIME_RE = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?\Z")


class _KnowsTags(Protocol):
    def field_name(self, tag: int) -> str | None: ...


@dataclass(slots=True)
class UnknownTag:
    """A tag the dictionary does not define.

    Attributes
    ----------
    tag : int
        Tag number.
    count : int
        Occurrences.
    samples : list[str]
        Up to five distinct values, in the order seen.
    msg_types : list[str]
        MsgType <35> values of the messages it appeared in.
    first_line : int
        1-based line of its first occurrence.
    values : set[str]
        Distinct values seen (capped), used by :func:`guess_type`.
    """

    tag: int
    count: int = 0
    samples: list[str] = field(default_factory=list)
    msg_types: list[str] = field(default_factory=list)
    first_line: int = 0
    values: set[str] = field(default_factory=set)

    @property
    def guessed_type(self) -> str:
        """Return a FIX type that fits every value seen (``STRING`` when nothing narrower)."""
        return guess_type(self.values)

    @property
    def suggested_name(self) -> str:
        """Return a placeholder name (``Custom5001``) for the field."""
        return f"Custom{self.tag}"


@dataclass(slots=True)
class LogScan:
    """Result of a scan.

    Attributes
    ----------
    unknown : list[UnknownTag]
        By tag number.
    messages : int
        FIX messages read.
    lines : int
        Lines read.
    skipped : int
        Lines without a FIX message.
    cancelled : bool
        Whether the scan stopped early.
    """

    unknown: list[UnknownTag]
    messages: int
    lines: int
    skipped: int
    cancelled: bool = False


def guess_type(values: Iterable[str]) -> str:
    """Return the narrowest FIX type that fits every value (``STRING`` by default)."""
    vals = [v for v in values if v != ""]
    if not vals:
        return "STRING"
    for type_, pattern in (
        ("UTCTIMESTAMP", _TS_RE),
        ("UTCDATEONLY", _DATE_RE),
        ("UTCTIMEONLY", _TIME_RE),
        ("INT", _INT_RE),
    ):
        if all(pattern.match(v) for v in vals):
            return type_
    if all(_INT_RE.match(v) or _FLOAT_RE.match(v) for v in vals):
        return "FLOAT"
    if all(v in ("Y", "N") for v in vals):
        return "BOOLEAN"
    if all(len(v) == 1 for v in vals):
        return "CHAR"
    return "STRING"


def _message_of(line: str) -> str | None:
    i = line.find("8=FIX")
    if i < 0:
        return None
    return line[i:].rstrip("\r\n")


def scan_lines(
    lines: Iterable[str],
    dictionary: _KnowsTags,
    *,
    progress: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LogScan:
    """Scan log lines for tags ``dictionary`` does not know.

    Parameters
    ----------
    lines : iterable of str
        Log lines.
    dictionary : DataDictionary
        Anything with ``field_name(tag) -> str | None``.
    progress : callable, optional
        Called with the number of lines read every 5000 lines.
    cancelled : callable, optional
        Polled every 5000 lines; the scan stops when it returns True.
    """
    found: dict[int, UnknownTag] = {}
    known: dict[int, bool] = {}
    n_lines = n_msgs = skipped = 0
    stopped = False
    for n_lines, line in enumerate(lines, start=1):
        if n_lines % 5000 == 0:
            if progress is not None:
                progress(n_lines)
            if cancelled is not None and cancelled():
                stopped = True
                break
        msg = _message_of(line)
        if msg is None:
            skipped += 1
            continue
        n_msgs += 1
        _collect(split_fields(msg), n_lines, dictionary, known, found)
    return LogScan(sorted(found.values(), key=lambda u: u.tag), n_msgs, n_lines, skipped, stopped)


def _collect(
    pairs: list[tuple[int, bytes]],
    line_no: int,
    dictionary: _KnowsTags,
    known: dict[int, bool],
    found: dict[int, UnknownTag],
) -> None:
    msg_type = next((v.decode("latin-1") for t, v in pairs if t == 35), "?")
    for tag, raw in pairs:
        if tag < 0:
            continue
        k = known.get(tag)
        if k is None:
            k = known[tag] = dictionary.field_name(tag) is not None
        if k:
            continue
        value = raw.decode("latin-1")
        u = found.get(tag)
        if u is None:
            u = found[tag] = UnknownTag(tag, first_line=line_no)
        u.count += 1
        if value not in u.values and len(u.values) < 200:
            u.values.add(value)
            if len(u.samples) < _MAX_SAMPLES:
                u.samples.append(value)
        if msg_type not in u.msg_types:
            u.msg_types.append(msg_type)


def scan_log(
    path: str | Path,
    dictionary: _KnowsTags,
    *,
    progress: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LogScan:
    """Scan a log file (see :func:`scan_lines`); bytes that are not UTF-8 are read as latin-1.

    Raises
    ------
    OSError
        If the file cannot be read.
    """
    with Path(path).open(encoding="latin-1", newline="") as f:
        return scan_lines(f, dictionary, progress=progress, cancelled=cancelled)
