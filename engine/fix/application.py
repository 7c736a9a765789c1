# SPDX-License-Identifier: MIT
"""The application interface of the FIX engine, in QuickFIX's shape.

An application (the order manager, the exchange simulator, the acceptance-test app) subclasses
:class:`Application` and overrides the callbacks it needs. Callbacks may raise the exceptions
below; the session turns them into the answer QuickFIX gives (session Reject,
BusinessMessageReject, Logout, or not sending).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.fix.message import FixMessage, OutMessage


class _HashSlot:
    # Where SessionID keeps its hash: a slot outside the dataclass's fields (so not in
    # fields(), asdict(), repr, comparisons or pickles; made again when missing).
    __slots__ = ("_hash",)
    _hash: int


@dataclass(frozen=True, slots=True)
class SessionID(_HashSlot):
    """Identity of a session, seen from our side: the one session id of the engine.

    The settings file (``engine.fix.settings.SessionSettings.session_id``), the running
    session (``engine.fix.session.FixSession.session_id``), the events and the commands all
    use this class and its string form.

    Parameters
    ----------
    begin_string : str
        BeginString <8> (``"FIX.4.4"``, ``"FIXT.1.1"``).
    sender_comp_id : str
        Our CompID (SenderCompID <49> on what we send).
    target_comp_id : str
        The counterparty's CompID.
    qualifier : str
        SessionQualifier, to tell otherwise identical sessions apart.
    sender_sub_id, sender_location_id, target_sub_id, target_location_id : str
        SenderSubID <50>, SenderLocationID <142>, TargetSubID <57>, TargetLocationID <143>
        when the session sets them (QuickFIX/J counts them in a session's identity).
    """

    begin_string: str
    sender_comp_id: str
    target_comp_id: str
    qualifier: str = ""
    sender_sub_id: str = ""
    sender_location_id: str = ""
    target_sub_id: str = ""
    target_location_id: str = ""

    def __hash__(self) -> int:
        # The dataclass's hash (of the fields' tuple), made once: sessions are looked up by
        # their id per message (an application's dict of sessions, the registry).
        try:
            return self._hash
        except AttributeError:
            h = hash(
                (
                    self.begin_string,
                    self.sender_comp_id,
                    self.target_comp_id,
                    self.qualifier,
                    self.sender_sub_id,
                    self.sender_location_id,
                    self.target_sub_id,
                    self.target_location_id,
                )
            )
            object.__setattr__(self, "_hash", h)
            return h

    def __str__(self) -> str:
        """Return ``FIX.4.4:ME->EXCH``, with ``/SUB/LOC`` parts and ``:QUALIFIER`` when set."""

        def side(comp: str, sub: str, loc: str) -> str:
            return "/".join(p for p in (comp, sub, loc) if p) if (sub or loc) else comp

        s = (
            f"{self.begin_string}:"
            f"{side(self.sender_comp_id, self.sender_sub_id, self.sender_location_id)}->"
            f"{side(self.target_comp_id, self.target_sub_id, self.target_location_id)}"
        )
        return f"{s}:{self.qualifier}" if self.qualifier else s

    @property
    def file_prefix(self) -> str:
        """Return the base name QuickFIX uses for this session's store and log files."""
        q = f"-{self.qualifier}" if self.qualifier else ""
        return f"{self.begin_string}-{self.sender_comp_id}-{self.target_comp_id}{q}"

    @property
    def is_fixt(self) -> bool:
        """Return True for FIXT.1.1 sessions."""
        return self.begin_string.startswith("FIXT")


class DoNotSend(Exception):
    """Raised in ``to_app`` to drop an outbound (or resent) application message."""


class RejectLogon(Exception):
    """Raised in ``from_admin`` on a Logon to refuse it: Logout with this text, then disconnect."""


class UnsupportedMessageType(Exception):
    """Raised in ``from_app``: answered with BusinessMessageReject 380=3 (Reject on FIX.4.0/4.1)."""


class FieldNotFound(Exception):
    """Raised in a callback when a field it needs is missing.

    Parameters
    ----------
    tag : int
        The missing tag.
    """

    def __init__(self, tag: int) -> None:
        super().__init__(f"field not found: {tag}")
        self.tag = tag


class IncorrectTagValue(Exception):
    """Raised in a callback for a value out of range; answered with Reject 373=5."""

    def __init__(self, tag: int) -> None:
        super().__init__(f"incorrect tag value: {tag}")
        self.tag = tag


class IncorrectDataFormat(Exception):
    """Raised in a callback for a malformed value; answered with Reject 373=6."""

    def __init__(self, tag: int) -> None:
        super().__init__(f"incorrect data format: {tag}")
        self.tag = tag


class Application:
    """Callbacks from the FIX sessions; every method is a no-op by default.

    ``message`` arguments of ``from_*`` callbacks are decoded :class:`FixMessage` s;
    ``to_*`` callbacks get the :class:`OutMessage` about to be encoded and may change it.
    To send, call :meth:`engine.fix.session.FixSession.send` (or
    :func:`engine.fix.session.send_to_target`).
    """

    def on_create(self, session_id: SessionID) -> None:
        """Call when a session is created."""

    def on_logon(self, session_id: SessionID) -> None:
        """Call when the session is logged on (Logon sent and received)."""

    def on_logout(self, session_id: SessionID) -> None:
        """Call when a logged-on (or logging-on) session is disconnected."""

    def to_admin(self, message: OutMessage, session_id: SessionID) -> None:
        """Inspect or change an outbound session-level message."""

    def from_admin(self, message: FixMessage, session_id: SessionID) -> None:
        """Receive a verified session-level message; may raise :class:`RejectLogon`."""

    def to_app(self, message: OutMessage, session_id: SessionID) -> None:
        """Inspect or change an outbound application message; may raise :class:`DoNotSend`."""

    def resend_app(self, message: OutMessage, session_id: SessionID) -> None:
        """Inspect an application message about to be resent (PossDupFlag <43> = Y).

        Called instead of :meth:`to_app` when the counterparty asks for a resend; raising
        :class:`DoNotSend` replaces the message with a SequenceReset-GapFill (QuickFIX
        applications do this in ``toApp`` when PossDupFlag is set, e.g. for stale orders).
        By default the same as :meth:`to_app`.
        """
        self.to_app(message, session_id)

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        """Receive a verified application message; may raise :class:`UnsupportedMessageType`."""
