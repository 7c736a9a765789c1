# SPDX-License-Identifier: MIT
"""Structured, typed access to a decoded FIX message, using a data dictionary.

Input is what the codec produces: ``(tag, value)`` pairs in wire order, header first, ``8``,
``9``, ``35`` … ``10`` included. :func:`parse_message` splits them into header, body and trailer
:class:`FieldMap` s and builds repeating groups as nested lists of entries, following QuickFIX's
``Message::setString`` / ``setGroup`` rules:

* a header field after the body started, or a body field after a trailer field, makes the
  structure invalid (``ParsedMessage.out_of_order_tag`` is the first such tag);
* inside a group, the delimiter starts a new entry, and so does a group field already present in
  the current entry; the first field that is not a member of the group ends it;
* group members out of dictionary order (or an entry not starting with the delimiter) are
  recorded in ``ParsedMessage.unordered_group_tag``.

Values are converted by type with :func:`convert_value` (also used by :meth:`FieldMap.get`):

=================================================  ===========================================
type                                               Python value
=================================================  ===========================================
INT, LENGTH, NUMINGROUP, SEQNUM, TAGNUM,           ``int``
DAYOFMONTH
FLOAT, PRICE, QTY, AMT, PRICEOFFSET, PERCENTAGE    ``decimal.Decimal`` (exact; scale to ticks
                                                   with the instrument)
CHAR                                               ``str`` of length 1 (any string before 4.2)
BOOLEAN                                            ``bool``
UTCTIMESTAMP                                       ``int`` ns since the epoch, UTC
UTCTIMEONLY, TIME                                  ``int`` ns since midnight
UTCDATEONLY, UTCDATE, DATE, LOCALMKTDATE           ``datetime.date``
MONTHYEAR                                          ``str`` checked as YYYYMM, YYYYMMDD or YYYYMMwN
MULTIPLEVALUESTRING, MULTIPLECHARVALUE,            ``tuple[str, ...]``
MULTIPLESTRINGVALUE
DATA, XMLDATA                                      ``bytes`` (length from its LENGTH field)
anything else (STRING, CURRENCY, EXCHANGE …)       ``str`` (latin-1)
=================================================  ===========================================

A value that does not convert raises :class:`FieldConversionError` naming tag, field name, value
and reason.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from engine.fix.dictionary import DataDictionary, GroupDef

__all__ = [
    "FieldConversionError",
    "FieldMap",
    "FieldValue",
    "ParsedMessage",
    "check_format",
    "convert_value",
    "parse_message",
    "parse_utc_timestamp",
    "select_body_dictionary",
]

#: Python values produced by :func:`convert_value`.
FieldValue = int | Decimal | str | bool | dt.date | tuple[str, ...] | bytes

INT_TYPES: frozenset[str] = frozenset(
    {"INT", "LENGTH", "NUMINGROUP", "SEQNUM", "TAGNUM", "DAYOFMONTH"}
)
FLOAT_TYPES: frozenset[str] = frozenset(
    {"FLOAT", "PRICE", "QTY", "AMT", "PRICEOFFSET", "PERCENTAGE"}
)
DATE_TYPES: frozenset[str] = frozenset({"UTCDATEONLY", "UTCDATE", "DATE", "LOCALMKTDATE"})
MULTI_TYPES: frozenset[str] = frozenset(
    {"MULTIPLEVALUESTRING", "MULTIPLECHARVALUE", "MULTIPLESTRINGVALUE"}
)

_INT_RE = re.compile(rb"-?[0-9]+\Z")
_FLOAT_RE = re.compile(rb"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)\Z")
_TS_RE = re.compile(
    rb"([0-9]{4})([0-9]{2})([0-9]{2})-([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?\Z"
)
_TIME_RE = re.compile(rb"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?\Z")
_DATE_RE = re.compile(rb"([0-9]{4})([0-9]{2})([0-9]{2})\Z")
_MONTHYEAR_RE = re.compile(rb"[0-9]{4}(?:0[1-9]|1[0-2])(?:[0-9]{2}|w[1-5])?\Z")
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_NS_PER_S = 1_000_000_000


class FieldConversionError(ValueError):
    """A field value does not match its dictionary type.

    Parameters
    ----------
    tag : int
        Tag number.
    name : str
        Field name (``"?"`` if the dictionary does not know the tag).
    value : bytes
        The raw value.
    reason : str
        What is wrong, e.g. ``"not a PRICE"``.
    """

    def __init__(self, tag: int, name: str, value: bytes, reason: str) -> None:
        self.tag = tag
        self.name = name
        self.value = value
        self.reason = reason
        super().__init__(f"{name} <{tag}> = {value!r}: {reason}")


def _clock(h: bytes, m: bytes, s: bytes, frac: bytes | None) -> int | None:
    hh, mm, ss = int(h), int(m), int(s)
    if hh > 23 or mm > 59 or ss > 60:
        return None
    ns = int(frac.ljust(9, b"0")) if frac else 0
    return ((hh * 60 + mm) * 60 + ss) * _NS_PER_S + ns


def _date(y: bytes, m: bytes, d: bytes) -> dt.date | None:
    try:
        return dt.date(int(y), int(m), int(d))
    except ValueError:
        return None


def parse_utc_timestamp(value: bytes) -> int | None:
    """Return a UTCTIMESTAMP (``YYYYMMDD-HH:MM:SS[.f…]``) as ns since the epoch, or None."""
    mt = _TS_RE.match(value)
    if mt is None:
        return None
    day = _date(mt[1], mt[2], mt[3])
    clock = _clock(mt[4], mt[5], mt[6], mt[7])
    if day is None or clock is None:
        return None
    return (day.toordinal() - _EPOCH_ORDINAL) * 86_400 * _NS_PER_S + clock


def check_format(type_: str, value: bytes, *, char_is_string: bool = False) -> bool:
    """Whether ``value`` has the wire format of ``type_`` (QuickFIX's checked types only).

    Types QuickFIX treats as strings (STRING, LOCALMKTDATE, MONTHYEAR, CURRENCY …) always pass.
    """
    if type_ in INT_TYPES:
        return _INT_RE.match(value) is not None
    if type_ in FLOAT_TYPES:
        return _FLOAT_RE.match(value) is not None
    if type_ == "CHAR":
        return char_is_string or len(value) == 1
    if type_ == "BOOLEAN":
        return value in (b"Y", b"N")
    if type_ == "UTCTIMESTAMP":
        return parse_utc_timestamp(value) is not None
    if type_ == "UTCTIMEONLY":
        mt = _TIME_RE.match(value)
        return mt is not None and _clock(mt[1], mt[2], mt[3], mt[4]) is not None
    if type_ in ("UTCDATEONLY", "UTCDATE"):
        md = _DATE_RE.match(value)
        return md is not None and _date(md[1], md[2], md[3]) is not None
    return True


def convert_value(  # noqa: C901 - one branch per FIX type is the clearest form
    tag: int, value: bytes, dictionary: DataDictionary
) -> FieldValue:
    """Convert a raw value to Python by the type ``dictionary`` gives ``tag``.

    Parameters
    ----------
    tag : int
        Tag number.
    value : bytes
        Raw value.
    dictionary : DataDictionary
        Dictionary defining the tag; unknown tags convert to ``str``.

    Returns
    -------
    FieldValue
        See the module docstring for the mapping.

    Raises
    ------
    FieldConversionError
        If the value does not match the type.
    """
    fd = dictionary.field(tag)
    if fd is None:
        return value.decode("latin-1")
    t = fd.type

    def fail(reason: str) -> FieldConversionError:
        return FieldConversionError(tag, fd.name, value, reason)

    if t in INT_TYPES:
        if _INT_RE.match(value) is None:
            raise fail(f"not an integer ({t})")
        return int(value)
    if t in FLOAT_TYPES:
        if _FLOAT_RE.match(value) is None:
            raise fail(f"not a decimal number ({t})")
        try:
            return Decimal(value.decode("ascii"))
        except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
            raise fail(f"not a decimal number ({t})") from None
    if t == "CHAR":
        if (
            len(value) != 1
            and dictionary.spec.major >= 4
            and (dictionary.spec.major > 4 or dictionary.spec.minor >= 2)
        ):
            raise fail("CHAR must be exactly one character")
        return value.decode("latin-1")
    if t == "BOOLEAN":
        if value not in (b"Y", b"N"):
            raise fail("BOOLEAN must be Y or N")
        return value == b"Y"
    if t == "UTCTIMESTAMP":
        ns = parse_utc_timestamp(value)
        if ns is None:
            raise fail("not a UTCTIMESTAMP (YYYYMMDD-HH:MM:SS[.fff])")
        return ns
    if t in ("UTCTIMEONLY", "TIME"):
        mt = _TIME_RE.match(value)
        clock = _clock(mt[1], mt[2], mt[3], mt[4]) if mt is not None else None
        if clock is None:
            raise fail(f"not a {t} (HH:MM:SS[.fff])")
        return clock
    if t in DATE_TYPES:
        md = _DATE_RE.match(value)
        day = _date(md[1], md[2], md[3]) if md is not None else None
        if day is None:
            raise fail(f"not a {t} (YYYYMMDD)")
        return day
    if t == "MONTHYEAR":
        if _MONTHYEAR_RE.match(value) is None:
            raise fail("not a MONTHYEAR (YYYYMM, YYYYMMDD or YYYYMMwN)")
        return value.decode("ascii")
    if t in MULTI_TYPES:
        return tuple(value.decode("latin-1").split(" "))
    if t in ("DATA", "XMLDATA"):
        return value
    return value.decode("latin-1")


# ----------------------------------------------------------------------------- structure


class FieldMap:
    """One level of a message: header, body, trailer or one group entry.

    Attributes
    ----------
    fields : list[tuple[int, bytes]]
        Fields of this level in wire order (group count fields included, members not).
    groups : dict[int, list[FieldMap]]
        Entries of each repeating group, by count tag.
    """

    __slots__ = ("_dd", "fields", "groups")

    def __init__(self, dictionary: DataDictionary) -> None:
        self._dd = dictionary
        self.fields: list[tuple[int, bytes]] = []
        self.groups: dict[int, list[FieldMap]] = {}

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __contains__(self, tag: object) -> bool:
        return any(t == tag for t, _ in self.fields)

    def get_raw(self, tag: int) -> bytes | None:
        """Return the raw value of the first ``tag`` at this level, or None."""
        for t, v in self.fields:
            if t == tag:
                return v
        return None

    def get(self, tag: int) -> FieldValue | None:
        """Return the typed value of the first ``tag`` at this level, or None if absent.

        Raises
        ------
        FieldConversionError
            If the value does not match the dictionary type.
        """
        raw = self.get_raw(tag)
        return None if raw is None else convert_value(tag, raw, self._dd)

    def group(self, count_tag: int) -> list[FieldMap]:
        """Return the entries of the group started by ``count_tag`` (empty if none)."""
        return self.groups.get(count_tag, [])

    def to_dict(self) -> dict[str, object]:
        """Return ``{field name: typed value or [entry dicts]}`` for display and debugging."""
        out: dict[str, object] = {}
        for tag, raw in self.fields:
            name = self._dd.field_name(tag) or str(tag)
            try:
                out[name] = convert_value(tag, raw, self._dd)
            except FieldConversionError:
                out[name] = raw
            if tag in self.groups:
                out[name + "[]"] = [e.to_dict() for e in self.groups[tag]]
        return out


@dataclass(slots=True)
class ParsedMessage:
    """A message split into header, body and trailer with groups built.

    Attributes
    ----------
    header, body, trailer : FieldMap
        The three parts.
    msg_type : str
        MsgType <35> (empty if missing).
    begin_string : str
        BeginString <8> (empty if missing).
    out_of_order_tag : int or None
        First field found in the wrong part (header field after the body, body field after the
        trailer).
    unordered_group_tag : int or None
        First group member found out of dictionary order.
    """

    header: FieldMap
    body: FieldMap
    trailer: FieldMap
    msg_type: str
    begin_string: str
    out_of_order_tag: int | None = None
    unordered_group_tag: int | None = None


#: Header fields by QuickFIX's fixed list (``Message::isHeaderField(int)``): a message puts them
#: in its header whatever the dictionary says, so FIX.4.0's undefined OnBehalfOfLocationID <144>
#: is an unknown header field (checked before any body field), not a body field.
QUICKFIX_HEADER_TAGS: frozenset[int] = frozenset(
    {
        8,
        9,
        35,
        49,
        56,
        115,
        128,
        90,
        34,
        50,
        142,
        57,
        143,
        116,
        144,
        129,
        145,
        43,
        97,
        52,
        122,
        212,
        213,
        347,
        369,
        370,
        1128,
        1129,
        627,
    }
)
#: Trailer fields by QuickFIX's fixed list (``Message::isTrailerField(int)``).
QUICKFIX_TRAILER_TAGS: frozenset[int] = frozenset({93, 89, 10})


class _Parser:
    __slots__ = ("app_dd", "pairs", "pos", "session_dd", "unordered")

    def __init__(
        self,
        pairs: Sequence[tuple[int, bytes]],
        session_dd: DataDictionary,
        app_dd: DataDictionary,
    ) -> None:
        self.pairs = pairs
        self.session_dd = session_dd
        self.app_dd = app_dd
        self.pos = 0
        self.unordered: int | None = None

    def group(self, owner: FieldMap, gdef: GroupDef, dd: DataDictionary) -> None:
        entries = owner.groups.setdefault(gdef.count_tag, [])
        cur: FieldMap | None = None
        seen: set[int] = set()
        last = -1
        pairs = self.pairs
        while self.pos < len(pairs):
            tag, value = pairs[self.pos]
            if tag not in gdef.tags:
                break
            if tag == gdef.delimiter or cur is None or tag in seen:
                if tag != gdef.delimiter and self.unordered is None:
                    self.unordered = tag
                cur = FieldMap(dd)
                entries.append(cur)
                seen = set()
                last = -1
            position = gdef.order[tag]
            if position <= last and self.unordered is None:
                self.unordered = tag
            last = position
            seen.add(tag)
            cur.fields.append((tag, value))
            self.pos += 1
            nested = gdef.groups.get(tag)
            if nested is not None:
                self.group(cur, nested, dd)

    def run(self) -> ParsedMessage:
        sdd, add = self.session_dd, self.app_dd
        header, body, trailer = FieldMap(sdd), FieldMap(add), FieldMap(sdd)
        header_tags = sdd.header.tags | QUICKFIX_HEADER_TAGS
        trailer_tags = sdd.trailer.tags | QUICKFIX_TRAILER_TAGS
        header_groups, trailer_groups = sdd.header.groups, sdd.trailer.groups
        body_groups: Mapping[int, GroupDef] = {}
        section = 0  # 0 header, 1 body, 2 trailer
        out_of_order: int | None = None
        msg_type = begin = ""
        pairs = self.pairs
        while self.pos < len(pairs):
            tag, value = pairs[self.pos]
            self.pos += 1
            if tag in header_tags:
                if section != 0 and out_of_order is None:
                    out_of_order = tag
                if tag == 35 and not msg_type:
                    msg_type = value.decode("latin-1")
                    mdef = add.message(msg_type)
                    body_groups = mdef.groups if mdef is not None else {}
                elif tag == 8 and not begin:
                    begin = value.decode("latin-1")
                header.fields.append((tag, value))
                g = header_groups.get(tag)
                if g is not None:
                    self.group(header, g, sdd)
            elif tag in trailer_tags:
                section = 2
                trailer.fields.append((tag, value))
                g = trailer_groups.get(tag)
                if g is not None:
                    self.group(trailer, g, sdd)
            else:
                if section == 2 and out_of_order is None:
                    out_of_order = tag
                section = 1
                body.fields.append((tag, value))
                g = body_groups.get(tag)
                if g is not None:
                    self.group(body, g, add)
        return ParsedMessage(header, body, trailer, msg_type, begin, out_of_order, self.unordered)


def parse_message(
    pairs: Sequence[tuple[int, bytes]],
    dictionary: DataDictionary,
    app_dictionary: DataDictionary | None = None,
) -> ParsedMessage:
    """Split decoded pairs into header, body and trailer, with repeating groups built.

    Parameters
    ----------
    pairs : sequence of (int, bytes)
        Fields in wire order, ``8``, ``9``, ``35`` … ``10`` included.
    dictionary : DataDictionary
        Session dictionary (FIX 4.x, or FIXT.1.1): header and trailer.
    app_dictionary : DataDictionary, optional
        Application dictionary for the body (FIX 5.x); defaults to ``dictionary``. Admin messages
        the session dictionary defines use the session dictionary, as in QuickFIX.

    Returns
    -------
    ParsedMessage
        Never raises for bad structure; see its ``out_of_order_tag`` and
        ``unordered_group_tag``.
    """
    app = select_body_dictionary(pairs, dictionary, app_dictionary)
    return _Parser(pairs, dictionary, app).run()


def select_body_dictionary(
    pairs: Sequence[tuple[int, bytes]],
    dictionary: DataDictionary,
    app_dictionary: DataDictionary | None,
) -> DataDictionary:
    """Return the dictionary for the body: ``app_dictionary`` unless the message is admin.

    Admin messages (those the session dictionary defines) use the session dictionary, as in
    QuickFIX; without ``app_dictionary`` the session dictionary serves both.
    """
    if app_dictionary is None:
        return dictionary
    for tag, value in pairs:
        if tag == 35:
            if dictionary.is_msg_type(value.decode("latin-1")):
                return dictionary
            break
    return app_dictionary
