# SPDX-License-Identifier: MIT
"""The full validation walk: every issue of a message, in QuickFIX's precedence order.

:func:`find_issues` parses the message into header, body, trailer and group entries and checks
them in the order the package docstring (:mod:`engine.fix.validation`) lists; its first issue is
what :func:`engine.fix.validation.validator.validate` returns for any message the fast path
does not prove valid.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from engine.fix.dictionary import MULTI_VALUE_TYPES, DataDictionary, FieldDef, GroupDef, MessageDef
from engine.fix.fields import FieldMap, ParsedMessage, _Parser, select_body_dictionary
from engine.fix.validation.formats import format_ok, num_in_group
from engine.fix.validation.issues import (
    DEFAULT_OPTIONS,
    REJECT_TEXTS,
    IssueKind,
    SessionRejectReason,
    ValidationIssue,
    ValidationOptions,
)

#: Tags from here on are user-defined (``ValidateUserDefinedFields``).
_USER_MIN = 5000


def _validate_reference(
    pairs: Sequence[tuple[int, bytes]],
    dictionary: DataDictionary,
    app_dictionary: DataDictionary | None = None,
    options: ValidationOptions = DEFAULT_OPTIONS,
) -> ValidationIssue | None:
    # The straightforward walk, without the fast path: what validate() must always agree with.
    return next(iter_issues(pairs, dictionary, app_dictionary, options), None)


def find_issues(
    pairs: Sequence[tuple[int, bytes]],
    dictionary: DataDictionary,
    app_dictionary: DataDictionary | None = None,
    options: ValidationOptions = DEFAULT_OPTIONS,
) -> list[ValidationIssue]:
    """Return every problem found, first the one :func:`validate` returns (for inspectors)."""
    return list(iter_issues(pairs, dictionary, app_dictionary, options))


def _issue(reason: int, tag: int | None, msg_type: str | None) -> ValidationIssue:
    return ValidationIssue(reason, tag, REJECT_TEXTS[reason], msg_type)


def iter_issues(
    pairs: Sequence[tuple[int, bytes]],
    sdd: DataDictionary,
    app_dd: DataDictionary | None,
    opts: ValidationOptions,
) -> Iterator[ValidationIssue]:
    """Yield every issue of ``pairs``, in precedence order (the first is the reject)."""
    add = select_body_dictionary(pairs, sdd, app_dd)
    msg = _Parser(pairs, sdd, add).run()
    mt = msg.msg_type or None
    if 8 not in msg.header:
        yield _issue(SessionRejectReason.REQUIRED_TAG_MISSING, 8, mt)
        return
    if 35 not in msg.header:
        yield _issue(SessionRejectReason.REQUIRED_TAG_MISSING, 35, None)
        return
    if msg.begin_string != sdd.begin_string:
        yield ValidationIssue(
            SessionRejectReason.OTHER,
            8,
            "Incorrect BeginString",
            mt,
            IssueKind.INCORRECT_BEGIN_STRING,
        )
        return
    if opts.validate_fields_out_of_order and msg.out_of_order_tag is not None:
        yield _issue(
            SessionRejectReason.TAG_SPECIFIED_OUT_OF_REQUIRED_ORDER, msg.out_of_order_tag, mt
        )
    mdef = add.message(msg.msg_type)
    if mdef is None:
        yield _issue(SessionRejectReason.INVALID_MSGTYPE, None, mt)
        return
    if opts.validate_unordered_group_fields and msg.unordered_group_tag is not None:
        yield _issue(
            SessionRejectReason.REPEATING_GROUP_FIELDS_OUT_OF_ORDER, msg.unordered_group_tag, mt
        )
    yield from _required(msg, add, mdef)
    check = _Checker(opts, msg.msg_type)
    yield from check.level(msg.header, sdd, sdd.header, header=True)
    yield from check.level(msg.trailer, sdd, sdd.trailer, trailer=True)
    yield from check.level(msg.body, add, mdef)


def _required(
    msg: ParsedMessage, add: DataDictionary, mdef: MessageDef
) -> Iterator[ValidationIssue]:
    # QuickFIX's checkHasRequired, run by the body's dictionary: the header's and trailer's
    # required fields as *that* dictionary defines them (none in a FIX 5.x application
    # dictionary: a FIXT application message missing SendingTime <52> is the session's
    # FieldNotFound, not a Reject 373=1), then the body's, then those of the body's group
    # entries (header and trailer groups are not looked into).
    mt = msg.msg_type
    for part, tags in (
        (msg.header, add.header.required_tags),
        (msg.trailer, add.trailer.required_tags),
        (msg.body, mdef.required_tags),
    ):
        present = {t for t, _ in part.fields}
        for tag in sorted(tags):
            if tag not in present:
                yield _issue(SessionRejectReason.REQUIRED_TAG_MISSING, tag, mt)
    yield from _required_groups(msg.body, mdef.groups, mt)


def _required_groups(
    part: FieldMap, groups: Mapping[int, GroupDef], mt: str
) -> Iterator[ValidationIssue]:
    for count_tag in sorted(part.groups):
        gdef = groups.get(count_tag)
        if gdef is None:
            continue
        for entry in part.groups[count_tag]:
            present = {t for t, _ in entry.fields}
            for tag in sorted(gdef.required_tags):
                if tag not in present:
                    yield _issue(SessionRejectReason.REQUIRED_TAG_MISSING, tag, mt)
            yield from _required_groups(entry, gdef.groups, mt)


def _sort_key(pair: tuple[int, bytes]) -> tuple[int, int]:
    tag = pair[0]
    return (0, (8, 9, 35).index(tag)) if tag in (8, 9, 35) else (1, tag)


class _Checker:
    __slots__ = ("msg_type", "opts")

    def __init__(self, opts: ValidationOptions, msg_type: str) -> None:
        self.opts = opts
        self.msg_type = msg_type

    def should_check_tag(self, tag: int) -> bool:
        if tag <= 0:
            return True
        if tag < _USER_MIN:
            return not self.opts.allow_unknown_msg_fields
        return self.opts.validate_user_defined_fields

    def value(
        self, tag: int, value: bytes, fields: Mapping[int, FieldDef], char_is_string: bool
    ) -> ValidationIssue | None:
        mt = self.msg_type
        if not value:
            if self.opts.validate_fields_have_values:
                return _issue(SessionRejectReason.TAG_SPECIFIED_WITHOUT_A_VALUE, tag, mt)
            return None
        fd = fields.get(tag)
        if fd is None:
            return None
        if not format_ok(tag, fd.type, value, char_is_string):
            return _issue(SessionRejectReason.INCORRECT_DATA_FORMAT, tag, mt)
        if fd.enums and not fd.allow_other_values:
            text = value.decode("latin-1")
            if fd.type in MULTI_VALUE_TYPES:
                ok = all(v in fd.enums for v in text.split(" "))
            else:
                ok = text in fd.enums
            if not ok:
                return _issue(SessionRejectReason.VALUE_IS_INCORRECT, tag, mt)
        return None

    def level(
        self,
        part: FieldMap,
        dd: DataDictionary,
        defn: MessageDef | GroupDef,
        *,
        header: bool = False,
        trailer: bool = False,
    ) -> Iterator[ValidationIssue]:
        mt = self.msg_type
        last: int | None = None
        fields = dd.fields
        char_is_string = dd.spec.major == 4 and dd.spec.minor < 2
        for tag, value in sorted(part.fields, key=_sort_key):
            if tag == last:
                yield _issue(SessionRejectReason.TAG_APPEARS_MORE_THAN_ONCE, tag, mt)
                continue
            last = tag
            bad = self.value(tag, value, fields, char_is_string)
            if bad is not None:
                yield bad
                continue
            if not self.should_check_tag(tag):
                continue
            if tag not in fields:
                yield _issue(SessionRejectReason.INVALID_TAG_NUMBER, tag, mt)
                continue
            if not (header or trailer) and tag not in defn.tags:
                yield _issue(SessionRejectReason.TAG_NOT_DEFINED_FOR_MESSAGE_TYPE, tag, mt)
                continue
            gdef = defn.groups.get(tag)
            if gdef is not None and num_in_group(value) != len(part.group(tag)):
                yield _issue(SessionRejectReason.INCORRECT_NUMINGROUP_COUNT, tag, mt)
        for count_tag in sorted(part.groups):
            gdef = defn.groups.get(count_tag)
            if gdef is None:
                continue
            for entry in part.groups[count_tag]:
                yield from self.level(entry, dd, gdef)
