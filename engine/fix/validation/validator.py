# SPDX-License-Identifier: MIT
"""The validator: :func:`validate` and :func:`validate_message`, the fast path first.

A message the precompiled plan (:mod:`engine.fix.validation.plans`) proves valid is valid;
anything else takes the full walk (:mod:`engine.fix.validation.walk`), which alone decides
issues, texts and precedence.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from engine.fix.dictionary import DataDictionary
from engine.fix.message import FixMessage
from engine.fix.validation.issues import DEFAULT_OPTIONS, ValidationIssue, ValidationOptions
from engine.fix.validation.plans import plan_accepts, plan_for, values_ok
from engine.fix.validation.walk import iter_issues

_first = operator.itemgetter(0)


def validate(
    pairs: Sequence[tuple[int, bytes]],
    dictionary: DataDictionary,
    app_dictionary: DataDictionary | None = None,
    options: ValidationOptions = DEFAULT_OPTIONS,
) -> ValidationIssue | None:
    """Return the first problem QuickFIX would reject ``pairs`` for, or None.

    Parameters
    ----------
    pairs : sequence of (int, bytes)
        Decoded fields in wire order, ``8``, ``9``, ``35`` … ``10`` included.
    dictionary : DataDictionary
        Session dictionary: the FIX 4.x dictionary, or FIXT.1.1 for FIX 5.x sessions.
    app_dictionary : DataDictionary, optional
        FIX 5.x application dictionary (chosen by ApplVerID <1128> / DefaultApplVerID); defaults
        to ``dictionary``.
    options : ValidationOptions
        Which checks run.

    Returns
    -------
    ValidationIssue or None
        None when the message is valid.
    """
    # A message the precompiled plan proves valid is valid under any options (options only
    # switch checks off); anything else takes the full walk, which finds the first issue.
    if len(pairs) > 2:
        tag, mt = pairs[2]
        if tag == 35 and pairs[0][0] == 8 and pairs[1][0] == 9:
            plans = dictionary._derived.get(app_dictionary)
            plan = plans.get(mt) if plans is not None else None
            if plan is None:
                plan = plan_for(dictionary, app_dictionary, mt)
            if plan is not None:
                # Structure depends on the tags alone: a layout seen valid before needs only
                # its value checks (NumInGroup counts included).
                shape = tuple(map(_first, pairs))
                checks = plan.shapes.get(shape)
                if checks is None:
                    checks = []
                    if plan_accepts(plan, pairs, checks):
                        plan.remember(shape, checks)
                        return None
                elif values_ok(checks, pairs):
                    return None
    return next(iter_issues(pairs, dictionary, app_dictionary, options), None)


def validate_message(
    msg: FixMessage,
    dictionary: DataDictionary,
    app_dictionary: DataDictionary | None = None,
    options: ValidationOptions = DEFAULT_OPTIONS,
) -> ValidationIssue | None:
    """Return :func:`validate` of a decoded message's fields, reading only what it must.

    A message in a layout already found valid needs only the value checks of that layout;
    they run on the message's fields in place, without building its ``(tag, value)`` list.
    Anything else is ``validate(msg.pairs, ...)``.
    """
    tags = msg.tags
    if len(tags) > 2 and tags[2] == 35 and tags[0] == 8 and tags[1] == 9:
        plans = dictionary._derived.get(app_dictionary)
        plan = plans.get(msg.get(35) or b"") if plans is not None else None
        if plan is not None:
            checks = plan.checked.get(tuple(tags))
            if checks is not None and msg.values_pass(checks):
                return None
    return validate(msg.pairs, dictionary, app_dictionary, options)
