# SPDX-License-Identifier: MIT
"""The test application the FIX session-level acceptance scripts expect (QuickFIX's ``at``).

* NewOrderSingle (35=D) is echoed back with the same body and a new header, except that one
  with PossResend <97> = Y whose ClOrdID <11> was already seen on the session since the last
  Logon is dropped silently;
* SecurityDefinition (35=d) is echoed back;
* every other application message is refused as unsupported (BusinessMessageReject 380=3,
  or Reject on FIX.4.0/4.1).
"""

from __future__ import annotations

from engine.fix.application import Application, SessionID, UnsupportedMessageType
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import lookup_session


class AcceptanceApplication(Application):
    """Echo NewOrderSingle and SecurityDefinition, de-duplicate resent orders, refuse the rest."""

    def __init__(self) -> None:
        self._clordids: dict[SessionID, set[bytes]] = {}

    def on_logon(self, session_id: SessionID) -> None:
        """Start a fresh ClOrdID memory for the session."""
        self._clordids[session_id] = set()

    def on_logout(self, session_id: SessionID) -> None:
        """Forget the session's ClOrdIDs."""
        self._clordids.pop(session_id, None)

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        """Echo 35=D / 35=d; raise :class:`UnsupportedMessageType` for anything else."""
        mt = message.msg_type
        if mt == b"D":
            seen = self._clordids.setdefault(session_id, set())
            clordid = message.get(11) or b""
            if message.get(97) == b"Y" and clordid in seen:
                return
            seen.add(clordid)
        elif mt != b"d":
            raise UnsupportedMessageType
        session = lookup_session(session_id)
        if session is None:
            return
        appl = message.get(1128)
        layout = session.group_layout(mt, appl.decode("latin-1") if appl else None)
        session.send(OutMessage.from_message(message, layout))
