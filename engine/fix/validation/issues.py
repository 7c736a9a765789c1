# SPDX-License-Identifier: MIT
"""What validation finds: QuickFIX's reject reasons and texts, the issue, the validator's options.

:class:`ValidationIssue` is what :mod:`engine.fix.validation.validator` returns and the session
answers with; :class:`ValidationOptions` are the QuickFIX settings that switch checks off.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "BUSINESS_REJECT_UNSUPPORTED_MSG_TYPE",
    "DEFAULT_OPTIONS",
    "REJECT_TEXTS",
    "IssueKind",
    "SessionRejectReason",
    "ValidationIssue",
    "ValidationOptions",
    "unsupported_message_type",
]


class SessionRejectReason(enum.IntEnum):
    """SessionRejectReason <373> codes."""

    INVALID_TAG_NUMBER = 0
    REQUIRED_TAG_MISSING = 1
    TAG_NOT_DEFINED_FOR_MESSAGE_TYPE = 2
    UNDEFINED_TAG = 3
    TAG_SPECIFIED_WITHOUT_A_VALUE = 4
    VALUE_IS_INCORRECT = 5
    INCORRECT_DATA_FORMAT = 6
    DECRYPTION_PROBLEM = 7
    SIGNATURE_PROBLEM = 8
    COMPID_PROBLEM = 9
    SENDING_TIME_ACCURACY_PROBLEM = 10
    INVALID_MSGTYPE = 11
    XML_VALIDATION_ERROR = 12
    TAG_APPEARS_MORE_THAN_ONCE = 13
    TAG_SPECIFIED_OUT_OF_REQUIRED_ORDER = 14
    REPEATING_GROUP_FIELDS_OUT_OF_ORDER = 15
    INCORRECT_NUMINGROUP_COUNT = 16
    NON_DATA_VALUE_INCLUDES_FIELD_DELIMITER = 17
    INVALID_UNSUPPORTED_APPLICATION_VERSION = 18
    OTHER = 99


#: QuickFIX's Text <58> for each SessionRejectReason (``SessionRejectReason.h``).
REJECT_TEXTS: Mapping[int, str] = {
    0: "Invalid tag number",
    1: "Required tag missing",
    2: "Tag not defined for this message type",
    3: "Undefined Tag",
    4: "Tag specified without a value",
    5: "Value is incorrect (out of range) for this tag",
    6: "Incorrect data format for value",
    7: "Decryption problem",
    8: "Signature problem",
    9: "CompID problem",
    10: "SendingTime accuracy problem",
    11: "Invalid MsgType",
    12: "XML Validation error",
    13: "Tag appears more than once",
    14: "Tag specified out of required order",
    15: "Repeating group fields out of order",
    16: "Incorrect NumInGroup count for repeating group",
    17: "Non Data value includes field delimiter (SOH character)",
    18: "Invalid/Unsupported Application Version",
    99: "Other",
}

#: BusinessRejectReason <380> for an unsupported message type.
BUSINESS_REJECT_UNSUPPORTED_MSG_TYPE = 3


class IssueKind(enum.Enum):
    """How the session must answer an issue."""

    #: Reject <35=3> with SessionRejectReason <373> = ``reason``.
    SESSION_REJECT = "session_reject"
    #: BusinessMessageReject <35=j> with BusinessRejectReason <380> = ``reason``.
    BUSINESS_REJECT = "business_reject"
    #: Logout with Text "Incorrect BeginString", then disconnect (no reject).
    INCORRECT_BEGIN_STRING = "incorrect_begin_string"


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """Why a message fails validation, in the form the reject needs.

    Parameters
    ----------
    reason : int
        SessionRejectReason <373> (BusinessRejectReason <380> for ``BUSINESS_REJECT``).
    ref_tag : int or None
        RefTagID <371>, or None when the reject names no tag (MsgType problems).
    text : str
        QuickFIX's exact Text <58> (without the FIX.4.0/4.1 tag suffix: see :meth:`text_for`).
    ref_msg_type : str or None
        RefMsgType <372>: the MsgType of the rejected message, if it had one.
    kind : IssueKind
        Session reject, business reject or Logout.
    """

    reason: int
    ref_tag: int | None
    text: str
    ref_msg_type: str | None
    kind: IssueKind = IssueKind.SESSION_REJECT

    @property
    def is_business_reject(self) -> bool:
        """Whether the answer is a BusinessMessageReject <35=j>."""
        return self.kind is IssueKind.BUSINESS_REJECT

    def reject_reason_for(self, begin_string: str) -> int | None:
        """Return the SessionRejectReason <373> to send on ``begin_string``, or None to omit it.

        FIX.4.0/4.1 have no 373; FIX.4.2 defines only codes 0–11, so QuickFIX leaves 373 out for
        higher codes (the acceptance scripts expect exactly that); later versions send all.
        """
        if begin_string in ("FIX.4.0", "FIX.4.1"):
            return None
        if begin_string == "FIX.4.2" and self.reason > SessionRejectReason.INVALID_MSGTYPE:
            return None
        return self.reason

    def text_for(self, begin_string: str) -> str:
        """Return Text <58> as QuickFIX sends it on ``begin_string``.

        FIX.4.0 and 4.1 have no RefTagID <371>, so the tag goes into the text:
        ``"Invalid tag number (999)"``.
        """
        if self.ref_tag is not None and begin_string in ("FIX.4.0", "FIX.4.1"):
            return f"{self.text} ({self.ref_tag})"
        return self.text


@dataclass(frozen=True, slots=True)
class ValidationOptions:
    """Which checks run (the QuickFIX session settings of the same names).

    Parameters
    ----------
    validate_fields_out_of_order : bool
        ``ValidateFieldsOutOfOrder`` (QuickFIX/J ``CheckFieldsOutOfOrder``), default Y.
    validate_fields_have_values : bool
        ``ValidateFieldsHaveValues``, default Y.
    validate_user_defined_fields : bool
        ``ValidateUserDefinedFields``, default Y.
    validate_unordered_group_fields : bool
        ``ValidateUnorderedGroupFields`` (QuickFIX/J), default Y.
    allow_unknown_msg_fields : bool
        ``AllowUnknownMsgFields``, default N.
    """

    validate_fields_out_of_order: bool = True
    validate_fields_have_values: bool = True
    validate_user_defined_fields: bool = True
    validate_unordered_group_fields: bool = True
    allow_unknown_msg_fields: bool = False

    @classmethod
    def from_settings(cls, settings: _HasValidationSettings) -> ValidationOptions:
        """Build options from a ``SessionSettings`` (``engine.fix.settings``)."""
        return cls(
            validate_fields_out_of_order=settings.validate_fields_out_of_order
            and settings.check_fields_out_of_order,
            validate_fields_have_values=settings.validate_fields_have_values,
            validate_user_defined_fields=settings.validate_user_defined_fields,
            validate_unordered_group_fields=settings.validate_unordered_group_fields,
            allow_unknown_msg_fields=settings.allow_unknown_msg_fields,
        )


class _HasValidationSettings(Protocol):
    @property
    def validate_fields_out_of_order(self) -> bool: ...
    @property
    def check_fields_out_of_order(self) -> bool: ...
    @property
    def validate_fields_have_values(self) -> bool: ...
    @property
    def validate_user_defined_fields(self) -> bool: ...
    @property
    def validate_unordered_group_fields(self) -> bool: ...
    @property
    def allow_unknown_msg_fields(self) -> bool: ...


DEFAULT_OPTIONS = ValidationOptions()


def unsupported_message_type(begin_string: str, msg_type: str) -> ValidationIssue:
    """Return the issue for a message type the application does not handle.

    FIX.4.2 and later answer with BusinessMessageReject 380=3 "Unsupported Message Type";
    FIX.4.0/4.1 (no BusinessMessageReject) with Reject "Unsupported message type".
    """
    if begin_string in ("FIX.4.0", "FIX.4.1"):
        return ValidationIssue(
            SessionRejectReason.INVALID_MSGTYPE, None, "Unsupported message type", msg_type
        )
    return ValidationIssue(
        BUSINESS_REJECT_UNSUPPORTED_MSG_TYPE,
        None,
        "Unsupported Message Type",
        msg_type,
        IssueKind.BUSINESS_REJECT,
    )
