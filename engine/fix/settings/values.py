# SPDX-License-Identifier: MIT
"""The values of ``.cfg`` keys: :class:`TimeOfDay` and the converters of raw strings.

Each converter takes the raw text of a value and returns it typed, or raises ``ValueError``
whose text is the reason a :class:`~engine.fix.settings.problems.SettingsProblem` shows
(``'25:00:00' is not a valid time of day``). Days follow QuickFIX's ``DayConvertor``
(1 = Sunday … 7 = Saturday, any unambiguous prefix), booleans are ``Y``/``N``.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass

from engine.fix.dictionary import APPL_VER_IDS

_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")


@dataclass(frozen=True, slots=True)
class TimeOfDay:
    """A StartTime/EndTime/LogonTime/LogoutTime value.

    Parameters
    ----------
    time : datetime.time
        Clock time.
    zone : str or None
        Zone given after the time (``"17:30:00 America/New_York"``, QuickFIX/J style), or None.
    """

    time: dt.time
    zone: str | None = None

    def __str__(self) -> str:
        s = self.time.strftime("%H:%M:%S")
        return f"{s} {self.zone}" if self.zone else s


_TIME_RE = re.compile(r"([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\s+(\S+))?\Z")


def conv_time(raw: str) -> TimeOfDay:
    """Return a StartTime-style value: ``HH:MM:SS``, optionally a time zone after it."""
    m = _TIME_RE.match(raw)
    if m is None:
        raise ValueError(f"'{raw}' is not a time (HH:MM:SS, optionally followed by a time zone)")
    h, mi, s = int(m[1]), int(m[2]), int(m[3])
    if h > 23 or mi > 59 or s > 59:
        raise ValueError(f"'{raw}' is not a valid time of day")
    zone = m[4]
    if zone is not None:
        conv_zone(zone)
    return TimeOfDay(dt.time(h, mi, s), zone)


def conv_day(raw: str) -> int:
    """Return 1 = Sunday … 7 = Saturday (QuickFIX's DayConvertor: any unambiguous prefix)."""
    s = raw.strip().lower()
    if len(s) >= 2:
        hits = [i for i, d in enumerate(_DAYS) if d.startswith(s)]
        if len(hits) == 1:
            return hits[0] + 1
    raise ValueError(f"'{raw}' is not a day of the week (Sunday … Saturday, any abbreviation)")


def conv_days(raw: str) -> tuple[int, ...]:
    """Return a comma-separated list of days (``Mon,Tue``), each once."""
    parts = [p for p in (x.strip() for x in raw.split(",")) if p]
    if not parts:
        raise ValueError("empty list of days")
    days = [conv_day(p) for p in parts]
    if len(set(days)) != len(days):
        raise ValueError(f"'{raw}' lists a day twice")
    return tuple(days)


def conv_bool(raw: str) -> bool:
    """Return ``Y`` as True and ``N`` as False."""
    if raw in ("Y", "y"):
        return True
    if raw in ("N", "n"):
        return False
    raise ValueError(f"'{raw}' is not Y or N")


def int_in(lo: int, hi: int | None) -> Callable[[str], int]:
    """Return a converter of integers from ``lo`` to ``hi`` (None: no upper bound)."""

    def conv(raw: str) -> int:
        if not re.fullmatch(r"-?[0-9]+", raw):
            raise ValueError(f"'{raw}' is not an integer")
        v = int(raw)
        if v < lo or (hi is not None and v > hi):
            bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"{v} is out of range (must be {bound})")
        return v

    return conv


def conv_zone(raw: str) -> str:
    """Return a time zone name the zone database knows (``America/New_York``)."""
    try:
        zoneinfo.ZoneInfo(raw)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"'{raw}' is not a known time zone") from None
    return raw


def choice(*choices: str, upper: bool = False) -> Callable[[str], str]:
    """Return a converter that accepts one of ``choices`` (``upper``: any case)."""

    def conv(raw: str) -> str:
        v = raw.upper() if upper else raw
        if v not in choices:
            raise ValueError(f"'{raw}' is not one of {', '.join(choices)}")
        return v

    return conv


def conv_appl_ver_id(raw: str) -> str:
    """Return an ApplVerID given as a code (``9``) or a version name (``FIX.5.0SP2``)."""
    if raw in APPL_VER_IDS or raw in APPL_VER_IDS.values():
        return raw
    raise ValueError(f"'{raw}' is not an ApplVerID (FIX.5.0SP2, 9, FIX.4.4, 6 …)")


def conv_str(raw: str) -> str:
    """Return the text as it is."""
    return raw


def conv_list(raw: str) -> tuple[str, ...]:
    """Return the non-blank items of a comma-separated list, stripped."""
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def conv_nonempty(raw: str) -> str:
    """Return the text, which must not be empty."""
    if not raw:
        raise ValueError("must not be empty")
    return raw


#: A TCP port, 1 to 65535.
conv_port = int_in(1, 65535)
