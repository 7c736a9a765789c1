# SPDX-License-Identifier: MIT
"""Validate decoded FIX messages against a data dictionary, with QuickFIX's rules and texts.

Interface with the codec and the session: a decoded message is a sequence of
``(tag: int, value: bytes)`` pairs in wire order, header first, ``8``, ``9``, ``35`` … ``10``
included (``FixMessage.pairs``). :func:`~engine.fix.validation.validator.validate` returns
the first :class:`~engine.fix.validation.issues.ValidationIssue` (or None),
:func:`~engine.fix.validation.walk.find_issues` all of them in the same precedence order.
Neither raises on garbage input.

Order of checks (QuickFIX ``DataDictionary::validate`` and ``iterate``):

1. BeginString <8> equals the session dictionary's → otherwise ``INCORRECT_BEGIN_STRING``
   (QuickFIX: Logout "Incorrect BeginString", then disconnect).
2. Structure (``ValidateFieldsOutOfOrder``): a header field after the body, or a body field
   after the trailer → 373=14 "Tag specified out of required order", RefTagID the first such
   field.
3. MsgType <35> defined → 373=11 "Invalid MsgType" (no RefTagID).
4. Repeating-group members in dictionary order (``ValidateUnorderedGroupFields``, QuickFIX/J)
   → 373=15 "Repeating group fields out of order".
5. Required fields (QuickFIX ``checkHasRequired``, by the body's dictionary): header
   (ascending tag) and trailer as that dictionary defines them (a FIX 5.x application
   dictionary defines none), body, then every body group entry → 373=1 "Required tag missing".
6. Header, trailer, then body, each in ascending tag order (8, 9, 35 first in the header),
   then group entries; for each field: appears twice → 373=13 "Tag appears more than once";
   empty (``ValidateFieldsHaveValues``) → 373=4 "Tag specified without a value"; bad format
   for its type → 373=6 "Incorrect data format for value"; not one of its enums → 373=5
   "Value is incorrect (out of range) for this tag"; unknown tag → 373=0 "Invalid tag
   number"; not defined for the message/group → 373=2 "Tag not defined for this message type";
   NumInGroup differs from the entries found → 373=16 "Incorrect NumInGroup count for
   repeating group". Tags >= 5000 skip the last three when ``ValidateUserDefinedFields=N``;
   tags < 5000 skip them when ``AllowUnknownMsgFields=Y``.

The header is what QuickFIX's fixed list (``fields.QUICKFIX_HEADER_TAGS``) and the dictionary
make it, so an undefined header tag (FIX.4.0's OnBehalfOfLocationID <144>) is reported before any
body value. Formats are QuickFIX's: ``TIME`` (FIX.4.0/4.1) is a UTCTimestamp; ``SEQNUM`` is an
unsigned 64-bit number, and so are the INT-typed sequence numbers of FIX.4.0–4.2 (34, 7, 16, 36,
45, 369, 789), so a MsgSeqNum past 64 bits is "Incorrect data format for value".

"Unsupported message type" is the application's verdict, not the dictionary's: build it with
:func:`~engine.fix.validation.issues.unsupported_message_type` (BusinessMessageReject 380=3
"Unsupported Message Type" on FIX.4.2 and later, Reject "Unsupported message type" on
FIX.4.0/4.1). On FIX.4.0/4.1, which have no RefTagID, use
:meth:`~engine.fix.validation.issues.ValidationIssue.text_for` to get "Invalid tag number (999)",
and :meth:`~engine.fix.validation.issues.ValidationIssue.reject_reason_for` for the
SessionRejectReason <373> to send (None on FIX.4.0/4.1, and on FIX.4.2 for codes above 11, which
QuickFIX leaves out there).

Cost: a well-formed message of a known type takes a plan precompiled per (dictionaries, MsgType)
and, once its tag layout has been seen valid, only the value checks of that layout: about 3 µs
for a 25-field ExecutionReport against FIX 4.4 on this machine (the full walk, which every other
message takes and which alone decides issues, texts and precedence: about 27 µs).

One module per part: :mod:`~engine.fix.validation.issues` (reject reasons, texts,
:class:`~engine.fix.validation.issues.ValidationIssue`, the options),
:mod:`~engine.fix.validation.formats` (QuickFIX's value formats as predicates),
:mod:`~engine.fix.validation.walk` (the full walk: every issue, in precedence order),
:mod:`~engine.fix.validation.plans` (the fast path: plans precompiled per MsgType, and the
layout programs of :mod:`engine.fix.layouts`) and :mod:`~engine.fix.validation.validator`
(:func:`~engine.fix.validation.validator.validate`: the fast path, else the full walk).
"""
