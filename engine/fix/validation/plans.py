# SPDX-License-Identifier: MIT
"""The validator's fast path: a plan precompiled per (dictionaries, MsgType), and layout programs.

A plan holds, per tag, its section and value check (the value-check table of a dictionary,
built once per dictionary and kept in ``DataDictionary._derived``); :func:`plan_accepts` runs a
message through it and only ever answers "valid". Layouts found valid are remembered with their
checks, and :func:`layout_program` gives one as a program for :mod:`engine.fix.layouts`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

from engine.fix._kernels import (
    CHECK_ANY,
    CHECK_CHAR,
    CHECK_COUNT,
    CHECK_ENUM,
    CHECK_FLOAT,
    CHECK_INT,
    CHECK_INT_SEQNUM,
    CHECK_SEQNUM,
    CHECK_TIMESTAMP,
)
from engine.fix.dictionary import MULTI_VALUE_TYPES, DataDictionary, FieldDef, GroupDef, MessageDef
from engine.fix.fields import FLOAT_TYPES, INT_TYPES, check_format
from engine.fix.message import FixMessage
from engine.fix.validation.formats import (
    FORMAT_TYPES,
    SEQNUM_TAGS,
    TYPE_ALIASES,
    char_ok,
    float_ok,
    format_ok,
    int_ok,
    num_in_group,
    old_seqnum_ok,
    seqnum_ok,
    timestamp_ok,
)

# validate() first runs the message through a plan precompiled per (dictionaries, MsgType): one
# pass over the pairs that follows the parser's rules (sections, group entries) and checks every
# condition under which the full walk (walk.py) finds nothing, with the strictest options. It only
# ever answers "valid"; on the first doubt it gives up and the full walk decides, so issues,
# texts and precedence are the full walk's by construction.

#: A value check: True when a non-empty value passes format and enum checks. None: any value.
_Check = Callable[[bytes], bool] | None
#: Per tag of one level: (section 0/1/2 or position in the group entry, check, group plan).
_Entry = tuple[int, _Check, "_GroupPlan | None"]

_CHECKS_KEY = "engine.fix.validation.checks"
#: Valid tag layouts remembered per plan (the oldest forgotten first): at most this many
#: layouts, and at most this many tags in all of them (market data messages with a different
#: number of entries each are a layout each: 256 of 500 tags kept ~15 MB in a day's soak).
_MAX_SHAPES = 256
_MAX_SHAPE_TAGS = 65_536


def _never(v: bytes) -> bool:
    return False


def _make_check(fd: FieldDef, char_is_string: bool) -> _Check:
    t = TYPE_ALIASES.get(fd.type, fd.type)
    if fd.enums and not fd.allow_other_values:
        allowed = {e.encode("latin-1") for e in fd.enums if e.isascii() or _latin1(e)}
        if t in MULTI_VALUE_TYPES:  # no format check for these: only the enum of every item
            items = frozenset(allowed)
            return lambda v: all(x in items for x in v.split(b" "))
        ok = frozenset(v for v in allowed if v and format_ok(fd.tag, t, v, char_is_string))
        return ok.__contains__
    if t == "SEQNUM":
        return seqnum_ok
    if t == "INT" and fd.tag in SEQNUM_TAGS:
        return old_seqnum_ok
    if t not in FORMAT_TYPES:
        return None
    if t in INT_TYPES:
        return int_ok
    if t in FLOAT_TYPES:
        return float_ok
    if t == "CHAR":
        return None if char_is_string else char_ok
    if t == "BOOLEAN":
        return frozenset((b"Y", b"N")).__contains__
    if t == "UTCTIMESTAMP":
        return timestamp_ok
    return functools.partial(check_format, t)


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False  # no latin-1 decoded value can equal it
    return True


def _checks(dd: DataDictionary) -> Mapping[int, _Check]:
    table: dict[int, _Check] | None = dd._derived.get(_CHECKS_KEY)
    if table is None:
        cis = dd.spec.major == 4 and dd.spec.minor < 2
        table = {tag: _make_check(fd, cis) for tag, fd in dd.fields.items()}
        dd._derived[_CHECKS_KEY] = table
    return table


class _GroupPlan:
    __slots__ = ("delimiter", "members", "required")

    def __init__(self, gdef: GroupDef, checks: Mapping[int, _Check]) -> None:
        self.delimiter = gdef.delimiter
        self.required = frozenset(gdef.required_tags)
        members: dict[int, _Entry] = {}
        for tag, pos in gdef.order.items():
            nested = gdef.groups.get(tag)
            # A member the dictionary does not define still belongs to the entry: never valid.
            check = checks.get(tag, _never)
            members[tag] = (pos, check, None if nested is None else _GroupPlan(nested, checks))
        self.members = members


class _Plan:
    __slots__ = ("checked", "required", "shapes", "tags_kept", "top")

    def __init__(
        self, sdd: DataDictionary, add: DataDictionary, mdef: MessageDef, begin: bytes
    ) -> None:
        s_checks, b_checks = _checks(sdd), _checks(add)
        header = sdd.header.tags | {8, 9, 35}
        trailer = (sdd.trailer.tags | {10}) - header
        top: dict[int, _Entry] = {}
        # Section 0: header, 1: body, 2: trailer, as the parser splits them; a tag the level's
        # dictionary does not define is left out (the walk gives up on it).
        levels = (
            (0, header, sdd.header.groups, s_checks),
            (2, trailer, sdd.trailer.groups, s_checks),
            (1, mdef.tags - header - trailer, mdef.groups, b_checks),
        )
        for section, tags, groups, checks in levels:
            for tag in tags:
                if tag in checks:
                    g = groups.get(tag)
                    top[tag] = (section, checks[tag], None if g is None else _GroupPlan(g, checks))
        required_by_level = (  # as _required() reads them: the body dictionary's
            (0, add.header.required_tags),
            (1, mdef.required_tags),
            (2, add.trailer.required_tags),
        )
        if (
            any(t not in top or top[t][2] is not None for t in (8, 9, 35))
            or any(t not in top or top[t][0] != s for s, tags in required_by_level for t in tags)
            or (top[8][1] is not None and not top[8][1](begin))
        ):
            # 8, 9 or 35 undefined or starting a group, a required field that cannot be at its
            # level, a BeginString its own check refuses: leave it all to the full walk.
            top.clear()
        else:
            top[8] = (0, frozenset((begin,)).__contains__, None)  # BeginString <8> as well
        self.top = top
        #: Every level's required fields: a top-level tag belongs to one level only.
        self.required = frozenset(t for _, tags in required_by_level for t in tags)
        #: Tag sequences found valid, with the value check of each position.
        self.shapes: dict[tuple[int, ...], list[_Check]] = {}
        #: The same layouts with only the positions that have a value check.
        self.checked: dict[tuple[int, ...], list[tuple[int, Callable[[bytes], bool]]]] = {}
        self.tags_kept = 0  # tags in ``shapes``

    def remember(self, shape: tuple[int, ...], checks: list[_Check]) -> None:
        shapes, checked = self.shapes, self.checked
        # Oldest first out (insertion order), never the whole cache at once: a flush sent
        # every layout back through the full check together (a saw-tooth in latency).
        while shapes and (
            len(shapes) >= _MAX_SHAPES or self.tags_kept + len(shape) > _MAX_SHAPE_TAGS
        ):
            old = next(iter(shapes))
            del shapes[old], checked[old]
            self.tags_kept -= len(old)
        self.tags_kept += len(shape)
        self.shapes[shape] = checks
        self.checked[shape] = [(i, c) for i, c in enumerate(checks) if c is not None]


def plan_for(sdd: DataDictionary, app_dd: DataDictionary | None, mt: bytes) -> _Plan | None:
    """Build and keep the plan of MsgType ``mt``; None for a MsgType the dictionary lacks."""
    msg_type = mt.decode("latin-1")
    add = sdd if app_dd is None or sdd.is_msg_type(msg_type) else app_dd
    mdef = add.message(msg_type)
    if mdef is None:
        return None  # Invalid MsgType: not cached, so that garbage cannot grow the cache
    plans: dict[bytes, _Plan] | None = sdd._derived.get(app_dd)
    if plans is None:
        plans = sdd._derived[app_dd] = {}
    plan = plans[mt] = _Plan(sdd, add, mdef, sdd.begin_string.encode("latin-1"))
    return plan


class _OpenGroup:
    __slots__ = ("count", "entries", "entry", "index", "last", "plan")

    def __init__(self, plan: _GroupPlan, count: int, index: int) -> None:
        self.plan = plan
        self.count = count  # NumInGroup as the full walk reads it (-1 if not a number)
        self.index = index  # position of the NumInGroup field in the message
        self.entries = 0
        self.entry: list[int] | None = None
        self.last = -1

    def close(self, checks: list[_Check]) -> bool:
        entry = self.entry
        if entry is not None and not self.plan.required.issubset(entry):
            return False
        if self.entries != self.count:
            return False
        checks[self.index] = _count_check(checks[self.index], self.entries)
        return True


class _CountCheck:
    # The value check of a NumInGroup field in a known layout: its format, and the count.
    __slots__ = ("check", "entries")

    def __init__(self, check: _Check, entries: int) -> None:
        self.check = check
        self.entries = entries

    def __call__(self, v: bytes) -> bool:
        check = self.check
        return (check is None or check(v)) and num_in_group(v) == self.entries


def _count_check(check: _Check, entries: int) -> Callable[[bytes], bool]:
    return _CountCheck(check, entries)


#: The value checks a layout program expresses (engine.fix.layouts), by check function.
_KINDS: dict[object, int] = {
    None: CHECK_ANY,
    int_ok: CHECK_INT,
    float_ok: CHECK_FLOAT,
    char_ok: CHECK_CHAR,
    timestamp_ok: CHECK_TIMESTAMP,
    seqnum_ok: CHECK_SEQNUM,
    old_seqnum_ok: CHECK_INT_SEQNUM,
}


def _program_step(check: _Check) -> tuple[int, int | frozenset[bytes]] | None:
    kind = _KINDS.get(check)
    if kind is not None:
        return kind, 0
    if isinstance(check, _CountCheck):
        # Digits equal to the count: never looser than the format check it replaces.
        return (CHECK_COUNT, check.entries) if check.check in (None, int_ok) else None
    values = getattr(check, "__self__", None)
    if isinstance(values, frozenset) and getattr(check, "__name__", "") == "__contains__":
        return CHECK_ENUM, values
    return None  # a check no program expresses (other formats, multi-value enums, ...)


def layout_program(
    msg: FixMessage, dictionary: DataDictionary, app_dictionary: DataDictionary | None = None
) -> list[tuple[int, int | frozenset[bytes]]] | None:
    """Return the value checks of ``msg``'s layout as a program for :mod:`engine.fix.layouts`.

    Per field ``(kind, argument)`` (the ``CHECK_*`` kinds of :mod:`engine.fix._kernels`), for a
    layout :func:`validate_message` has found valid with these dictionaries; None when it has
    not (or no longer keeps it) or when one of its checks has no kernel form.
    """
    plans = dictionary._derived.get(app_dictionary)
    plan = plans.get(msg.get(35) or b"") if plans is not None else None
    tags = msg.tags
    checks = plan.shapes.get(tuple(tags)) if plan is not None else None
    if checks is None:
        return None
    program: list[tuple[int, int | frozenset[bytes]]] = []
    for tag, check in zip(tags, checks, strict=True):
        step = _program_step(check)
        if step is None:
            return None
        if tag == 1128:
            # ApplVerID chose the application dictionary these checks come from: the layout
            # proves nothing for another version's messages.
            step = (CHECK_ENUM, frozenset((msg.get(1128) or b"",)))
        program.append(step)
    return program


def values_ok(checks: list[_Check], pairs: Sequence[tuple[int, bytes]]) -> bool:
    """Whether every value of a layout found valid before passes its check."""
    for (_, value), check in zip(pairs, checks, strict=True):
        if not value or (check is not None and not check(value)):
            return False
    return True


def plan_accepts(plan: _Plan, pairs: Sequence[tuple[int, bytes]], checks: list[_Check]) -> bool:
    """Return True only if the full walk finds no issue; False means "not sure".

    Fills ``checks`` with the value check of every position, for :func:`values_ok` on the next
    message of this layout.
    """
    top = plan.top
    tags: list[int] = []  # top level (header, body, trailer): one tag is in one level only
    append = tags.append
    record = checks.append
    section = 0
    stack: list[_OpenGroup] = []
    for tag, value in pairs:
        if not value:
            return False
        if stack:
            step = _group_step(stack, tag, value, checks)
            if step > 0:
                continue
            if step < 0:
                return False
        entry = top.get(tag)
        if entry is None:
            return False
        sec, check, nested = entry
        if sec < section:  # header, body, trailer: a header field after the body, and so on
            return False
        section = sec
        append(tag)
        if check is not None and not check(value):
            return False
        record(check)
        if nested is not None:
            stack.append(_OpenGroup(nested, num_in_group(value), len(checks) - 1))
    while stack:
        if not stack.pop().close(checks):
            return False
    present = set(tags)
    return len(present) == len(tags) and plan.required <= present


def _group_step(stack: list[_OpenGroup], tag: int, value: bytes, checks: list[_Check]) -> int:
    # 1: the field belongs to the open group; 0: it ended every open group; -1: not sure.
    while stack:
        g = stack[-1]
        member = g.plan.members.get(tag)
        if member is None:  # the first non-member ends the group (the parser's rule)
            if not g.close(checks):
                return -1
            stack.pop()
            continue
        pos, check, nested = member
        entry = g.entry
        if tag == g.plan.delimiter:
            if entry is not None and not g.plan.required.issubset(entry):
                return -1
            g.entry = [tag]
            g.entries += 1
        elif entry is None or pos <= g.last:
            return -1  # out of order, repeated, or an entry not led by the delimiter
        else:
            entry.append(tag)
        g.last = pos
        if check is not None and not check(value):
            return -1
        checks.append(check)
        if nested is not None:
            stack.append(_OpenGroup(nested, num_in_group(value), len(checks) - 1))
        return 1
    return 0
