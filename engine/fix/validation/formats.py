# SPDX-License-Identifier: MIT
"""QuickFIX's value formats as predicates over a field's bytes, shared by the walk and the plans.

:func:`format_ok` is the check the full walk (:mod:`engine.fix.validation.walk`) makes; the
single-type predicates (:func:`int_ok`, :func:`timestamp_ok` …) are what the precompiled plans
(:mod:`engine.fix.validation.plans`) call per field, and what :mod:`engine.fix.layouts`
programs stand for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from engine.fix.fields import FLOAT_TYPES, INT_TYPES, check_format


def num_in_group(value: bytes) -> int:
    """Return a NumInGroup value as the count it states (-1 when it is not a number)."""
    try:
        return int(value)
    except ValueError:
        return -1


#: XML types QuickFIX checks as another type (``DataDictionary::XMLTypeToType``): FIX.4.0/4.1's
#: ``TIME`` (SendingTime <52>, ExpireTime <126> …) is a UTCTimestamp.
TYPE_ALIASES: Mapping[str, str] = {"TIME": "UTCTIMESTAMP"}
#: Sequence-number fields typed INT before FIX.4.3 (SEQNUM from FIX.4.4 on): MsgSeqNum <34>,
#: BeginSeqNo <7>, EndSeqNo <16>, NewSeqNo <36>, RefSeqNum <45>, LastMsgSeqNumProcessed <369>,
#: NextExpectedMsgSeqNum <789>. Checked for 64 bits in every version.
SEQNUM_TAGS = frozenset({7, 16, 34, 36, 45, 369, 789})
SEQNUM_MAX = (1 << 64) - 1


def seqnum_ok(v: bytes) -> bool:
    """Check as QuickFIX's SEQNUM_CONVERTOR (UInt64Convertor): digits only, at most 2**64 - 1."""
    return v.isdigit() and (len(v) < 20 or int(v) <= SEQNUM_MAX)


def old_seqnum_ok(v: bytes) -> bool:
    """Check an INT-typed sequence number (FIX.4.0-4.2): an integer that fits 64 bits."""
    return int_ok(v) and (len(v) < 20 or int(v) <= SEQNUM_MAX)


def format_ok(tag: int, type_: str, value: bytes, char_is_string: bool) -> bool:
    """Whether a non-empty ``value`` has the format QuickFIX accepts for a field of ``type_``."""
    if type_ == "SEQNUM":
        return seqnum_ok(value)
    if type_ == "INT" and tag in SEQNUM_TAGS:
        return old_seqnum_ok(value)
    return check_format(TYPE_ALIASES.get(type_, type_), value, char_is_string=char_is_string)


#: Types check_format() looks at; every other type (STRING, MONTHYEAR, ...) passes any value.
FORMAT_TYPES = INT_TYPES | FLOAT_TYPES | {"CHAR", "BOOLEAN", "UTCTIMESTAMP"}
FORMAT_TYPES |= {"UTCTIMEONLY", "UTCDATEONLY", "UTCDATE"}
#: Values already found valid (bounded: cleared when full).
_GOOD_DATES: dict[bytes, bool] = {}
_GOOD_TIMESTAMPS: dict[bytes, bool] = {}


def int_ok(v: bytes) -> bool:
    """Check ``-?[0-9]+`` (``bytes.isdigit()`` is ASCII only, like the regex)."""
    return v.isdigit() or (v[:1] == b"-" and v[1:].isdigit())


def float_ok(v: bytes) -> bool:
    r"""Check ``-?([0-9]+\.?[0-9]*|\.[0-9]+)``: digits with at most one dot, at least one digit."""
    return v.replace(b".", b"", 1).isdigit() or (
        v[:1] == b"-" and v[1:].replace(b".", b"", 1).isdigit()
    )


def char_ok(v: bytes) -> bool:
    """Check a CHAR: exactly one byte."""
    return len(v) == 1


def timestamp_ok(v: bytes) -> bool:
    """Check ``parse_utc_timestamp(v) is not None`` without the regex: YYYYMMDD-HH:MM:SS[.f{1,9}].

    Senders stamp many messages alike (SendingTime, TransactTime): good values are remembered.
    """
    if v in _GOOD_TIMESTAMPS:
        return True
    n = len(v)
    if n != 17 and not 19 <= n <= 27:
        return False
    if v[8] != 45 or v[11] != 58 or v[14] != 58 or (n > 17 and v[17] != 46):
        return False
    hh, mm, ss = v[9:11], v[12:14], v[15:17]
    if not (hh.isdigit() and mm.isdigit() and ss.isdigit()):
        return False
    if hh > b"23" or mm > b"59" or ss > b"60" or (n > 17 and not v[18:].isdigit()):
        return False
    day = v[:8]
    if day not in _GOOD_DATES:
        if not day.isdigit():
            return False
        try:
            dt.date(int(day[:4]), int(day[4:6]), int(day[6:]))
        except ValueError:
            return False
        if len(_GOOD_DATES) >= 1024:
            _GOOD_DATES.clear()
        _GOOD_DATES[day] = True
    if len(_GOOD_TIMESTAMPS) >= 4096:
        _GOOD_TIMESTAMPS.clear()
    _GOOD_TIMESTAMPS[v] = True
    return True
