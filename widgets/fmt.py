# SPDX-License-Identifier: MIT
"""Display formatting shared by the views: timestamps, durations, counts."""

from datetime import UTC, datetime


def fmt_ts_utc(ts_ns: int, *, date: bool = False, precision: int = 3) -> str:
    """Format ns since the epoch as UTC ``HH:MM:SS.fff`` (``precision`` fraction digits)."""
    secs, frac_ns = divmod(ts_ns, 1_000_000_000)
    dt = datetime.fromtimestamp(secs, tz=UTC)
    text = dt.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    if precision > 0:
        text += "." + f"{frac_ns:09d}"[:precision]
    return text


def fmt_duration_ns(ns: int) -> str:
    """Format a duration compactly: ``850 ns``, ``12.5 µs``, ``3.20 ms``, ``4.1 s``, ``2 h 05 m``.

    Negative durations get a leading minus sign.
    """
    a = abs(ns)
    sign = "-" if ns < 0 else ""
    if a < 1_000:
        return f"{sign}{a} ns"
    if a < 1_000_000:
        return f"{sign}{a / 1e3:.1f} µs"
    if a < 1_000_000_000:
        return f"{sign}{a / 1e6:.2f} ms"
    if a < 60 * 1_000_000_000:
        return f"{sign}{a / 1e9:.1f} s"
    minutes = a // (60 * 1_000_000_000)
    if minutes < 60:
        return f"{sign}{minutes} m {a // 1_000_000_000 % 60:02d} s"
    return f"{sign}{minutes // 60} h {minutes % 60:02d} m"
