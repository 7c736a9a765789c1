# SPDX-License-Identifier: MIT
"""Benchmarks that judge: figures with targets, a verdict per run, and docs/performance.md.

A benchmark measures each figure in several runs (``Figure.runs``) and judges every run against
its target, not the median only: one slow run is a miss. It prints :func:`table`, returns
:func:`exit_code` from its ``main`` (1 on any miss) and asserts :func:`misses` is empty in its
pytest form. :func:`write_section` puts the table, the command and the machine's load into
its own section of ``docs/performance.md`` (sections of other benchmarks are kept), so the
document always holds the figures of the last run of each benchmark.
"""

import datetime as dt
import os
import platform
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine import native

DOC = Path(__file__).resolve().parents[2] / "docs" / "performance.md"

_HEAD = """# Performance

Every figure here is written by the benchmark that measures it, at its last run on this
machine (2 cores, shared, noisy: compare the ratios measured in the same run, not figures of
different runs). Each section names its command; `packaging/bootstrap.sh bench` runs them all
at the issues' sizes and rewrites every section, the FIX tables (`qwconsole bench fix`) included.
A figure is judged in **every** run of the benchmark (`worst` is the run furthest from the
target); a benchmark exits 1 (its pytest form fails) when any run of any figure misses.
"""


@dataclass
class Figure:
    """One measured figure: its runs, its unit and, if it has one, its target."""

    name: str
    unit: str
    runs: list[float] = field(default_factory=list)
    #: The target; ``None``: reported, not judged.
    target: float | None = None
    #: Whether a lower value is better (latencies) or a higher one (throughputs).
    lower_is_better: bool = True
    #: What it is compared with in the same run (a ratio or a reference), shown as is.
    note: str = ""
    #: A verdict the benchmark reached itself (a target on another quantity than ``runs``,
    #: such as a row of events/s whose target is its memory); ``None``: judged here.
    verdict: bool | None = None
    #: The target as the benchmark writes it, when ``verdict`` is given.
    target_label: str = ""

    @property
    def median(self) -> float:
        """Return the median of the runs."""
        return statistics.median(self.runs)

    @property
    def worst(self) -> float:
        """Return the run furthest from the target (the slowest, or the least throughput)."""
        return max(self.runs) if self.lower_is_better else min(self.runs)

    def met(self) -> bool | None:
        """Return whether every run met the target (``None``: no target)."""
        if self.verdict is not None:
            return self.verdict
        if self.target is None:
            return None
        if self.lower_is_better:
            return self.worst <= self.target
        return self.worst >= self.target

    def target_text(self) -> str:
        """Return the target as written in the table."""
        if self.target_label:
            return self.target_label
        if self.target is None:
            return ""
        return f"{'<=' if self.lower_is_better else '>='} {_num(self.target)} {self.unit}"


def from_spread(
    name: str,
    median: float,
    lo: float,
    hi: float,
    unit: str,
    target: str,
    ok: bool | None,
    note: str = "",
) -> Figure:
    """Return a figure from a row of an older table: median and spread, target as text, and the
    verdict the benchmark reached (``None``: not judged).

    The runs become the slowest, the median and the fastest (``lo == 0``: one run); the verdict
    is the benchmark's own (its targets may be on another quantity than the row's figure).
    """
    runs = [lo, median, hi] if lo else [median]
    lower = target.lstrip().startswith("<") if target else unit in ("s", "ms", "µs", "ns")
    return Figure(
        name, unit, runs, lower_is_better=lower, note=note, verdict=ok, target_label=target
    )


def _num(x: float) -> str:
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def misses(figures: Sequence[Figure]) -> list[str]:
    """Return one line per figure that missed its target in some run."""
    return [
        f"{f.name}: worst run {_num(f.worst)} {f.unit}, target {f.target_text()}"
        for f in figures
        if f.met() is False
    ]


def exit_code(figures: Sequence[Figure]) -> int:
    """Return 1 if any run of any figure missed its target, else 0."""
    return 1 if misses(figures) else 0


def _rows(figures: Sequence[Figure]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for f in figures:
        met = f.met()
        verdict = "" if met is None else "met" if met else "MISSED"
        rows.append((
            f.name, f"{_num(f.median)} {f.unit}", f"{_num(f.worst)} {f.unit}", f.target_text(),
            verdict, f.note,
        ))  # fmt: skip
    return rows


_COLUMNS = ("figure", "median", "worst run", "target", "verdict", "same-run reference")


def table(figures: Sequence[Figure]) -> str:
    """Return the figures as an aligned text table for the terminal."""
    rows = [_COLUMNS, *_rows(figures)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = []
    for r in rows:
        cells = [
            r[i].ljust(widths[i]) if i in (0, 5) else r[i].rjust(widths[i])
            for i in range(len(_COLUMNS))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def load_text(start: float, end: float) -> str:
    """Return the machine-load sentence every benchmark prints."""
    return (
        f"machine load (1-min average, {os.cpu_count()} CPUs): {start:.1f} at the start, "
        f"{end:.1f} at the end"
    )


def write_section(
    name: str,
    title: str,
    command: str,
    figures: Sequence[Figure],
    *,
    load: tuple[float, float],
    runs: str,
    doc: Path = DOC,
) -> None:
    """Replace (or add) section ``name`` of ``doc`` with this run's figures."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"<!-- bench:{name} -->",
        f"## {title}",
        "",
        f"`{command}` — {runs}; {when}, CPython {platform.python_version()} (FIX modules "
        f"{native.form()}), {load_text(*load)}.",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "|".join("---" for _ in _COLUMNS) + "|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in _rows(figures)]
    lines.append(f"<!-- /bench:{name} -->")
    section = "\n".join(lines)
    text = doc.read_text(encoding="utf-8") if doc.exists() else _HEAD
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(with_summary(_put_section(text, name, section)), encoding="utf-8")


def _put_section(text: str, name: str, section: str) -> str:
    pattern = re.compile(
        rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S
    )
    if pattern.search(text):
        return pattern.sub(lambda _m: section, text)
    return text.rstrip("\n") + "\n\n" + section + "\n"


_SECTION = re.compile(r"<!-- bench:([\w-]+) -->\n(.*?)<!-- /bench:\1 -->", re.S)
_LOAD = re.compile(
    r"machine load \(1-min average, \d+ CPUs\):? ([\d.]+) at the start, ([\d.]+) at the end"
)
_HEADER = "| " + " | ".join(_COLUMNS) + " |"
_SUMMARY_COLUMNS = (
    "figure",
    "median",
    "worst run",
    "target",
    "verdict",
    "same-run reference",
    "command",
    "load",
)


def summary_rows(text: str) -> list[tuple[str, ...]]:
    """Return every judged figure of ``text``'s sections: the table rows with a target.

    A section's judged figures are the rows of its tables in the judges' format (the columns of
    :func:`write_section`; ``qwconsole bench fix`` writes its verdicts in it too), each with the
    section's command (its first code span) and the machine's load while it ran.
    """
    out: list[tuple[str, ...]] = []
    for name, body in _SECTION.findall(text):
        if name == "summary":
            continue
        command = re.search(r"`([^`]+)`", body)
        load = _LOAD.search(body)
        load_cell = f"{load[1]}–{load[2]}" if load else ""
        in_table = False
        parent = ""
        for line in body.splitlines():
            if line.strip() == _HEADER:
                in_table = True
                continue
            if not in_table or not line.startswith("|"):
                in_table = False
                continue
            raw = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            cells = [c.strip() for c in raw]
            if len(cells) != len(_COLUMNS) or set(cells[0]) <= {"-"}:
                continue
            if raw[0].startswith("   "):  # a sub-row ("  p99") of the row above it
                cells[0] = f"{parent}: {cells[0]}"
            else:
                parent = cells[0]
            if cells[3]:
                out.append((*cells, f"`{command[1]}`" if command else "", load_cell))
    return out


def with_summary(text: str) -> str:
    """Return ``text`` with its summary section (every judged figure in one table) rewritten.

    The summary goes right after the document's opening paragraphs, before the first section.
    """
    rows = summary_rows(text)
    missed = sum(1 for r in rows if r[4] == "MISSED")
    lines = [
        "<!-- bench:summary -->",
        "## Every judged figure",
        "",
        f"{len(rows)} figures with a target, {len(rows) - missed} met and {missed} missed at the "
        "last run of their benchmark (each section below has the details; a figure's load is "
        "the 1-minute load average at the start and end of its run).",
        "",
        "| " + " | ".join(_SUMMARY_COLUMNS) + " |",
        "|" + "|".join("---" for _ in _SUMMARY_COLUMNS) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "<!-- /bench:summary -->",
    ]
    section = "\n".join(lines)
    pattern = re.compile(r"<!-- bench:summary -->.*?<!-- /bench:summary -->", re.S)
    if pattern.search(text):
        return pattern.sub(lambda _m: section, text)
    first = text.find("<!-- bench:")
    if first < 0:
        return text.rstrip("\n") + "\n\n" + section + "\n"
    return text[:first] + section + "\n\n" + text[first:]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.benchmarks.judge [--doc FILE]``: rewrite the summary of FILE."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--doc", type=Path, default=DOC)
    opts = ap.parse_args(argv)
    doc: Path = opts.doc
    doc.write_text(with_summary(doc.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"{doc}: {len(summary_rows(doc.read_text(encoding='utf-8')))} judged figures")
    return 0


def conclude(figures: Sequence[Figure], load: tuple[float, float]) -> int:
    """Print the table, the load and one MISSED line per miss; return the exit code."""
    print(table(figures))
    print(load_text(*load))
    for line in misses(figures):
        print(f"MISSED: {line}")
    return exit_code(figures)


if __name__ == "__main__":
    raise SystemExit(main())
