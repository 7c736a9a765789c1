# SPDX-License-Identifier: MIT
"""Per-session state that is not persisted: logon flags, timers, resend range, queue.

Sequence numbers live in the :class:`~engine.fix.store.MessageStore`; everything here is
rebuilt on every connection. Timer rules follow QuickFIX's ``SessionState``: a Heartbeat when
nothing was sent for HeartBtInt, a TestRequest when nothing was received for
1.2 x HeartBtInt (then 2.4 x ...), a disconnect after 2.4 x HeartBtInt of silence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.fix.message import FixMessage

_NS = 1_000_000_000


@dataclass(slots=True)
class SessionState:
    """Volatile state of one FIX session.

    Parameters
    ----------
    initiate : bool
        True for an initiator (it sends the first Logon).
    heart_bt_int : int
        HeartBtInt <108> in seconds (an acceptor takes the counterparty's).
    logon_timeout : float
        Seconds to wait for the Logon answer.
    logout_timeout : float
        Seconds to wait for the Logout answer.
    """

    initiate: bool
    heart_bt_int: int = 30
    logon_timeout: float = 10.0
    logout_timeout: float = 2.0
    connected: bool = False
    received_logon: bool = False
    sent_logon: bool = False
    sent_logout: bool = False
    received_reset: bool = False
    sent_reset: bool = False
    #: TestRequests sent since the last message was received.
    test_request: int = 0
    last_sent_ns: int = 0
    last_received_ns: int = 0
    #: Requested resend range ``(begin, end)``; ``(0, 0)`` when none is outstanding.
    resend_range: tuple[int, int] = (0, 0)
    #: Messages received with a too-high MsgSeqNum, by MsgSeqNum, until the gap is filled.
    queue: dict[int, FixMessage] = field(default_factory=dict)
    logout_reason: str = ""

    @property
    def logged_on(self) -> bool:
        """Return True once Logon was both sent and received."""
        return self.received_logon and self.sent_logon

    @property
    def resend_requested(self) -> bool:
        """Return True while a ResendRequest is outstanding."""
        return self.resend_range != (0, 0)

    @property
    def should_send_logon(self) -> bool:
        """Return True for an initiator that has not sent its Logon yet."""
        return self.initiate and not self.sent_logon

    def logon_timed_out(self, now_ns: int) -> bool:
        """Return True when the Logon answer is overdue."""
        return now_ns - self.last_received_ns >= self.logon_timeout * _NS

    def logout_timed_out(self, now_ns: int) -> bool:
        """Return True when our Logout has gone unanswered for LogoutTimeout."""
        return self.sent_logout and now_ns - self.last_sent_ns >= self.logout_timeout * _NS

    def within_heartbeat(self, now_ns: int) -> bool:
        """Return True when something was both sent and received within HeartBtInt."""
        hb = self.heart_bt_int * _NS
        return now_ns - self.last_sent_ns < hb and now_ns - self.last_received_ns < hb

    def timed_out(self, now_ns: int) -> bool:
        """Return True after 2.4 x HeartBtInt without receiving anything."""
        return now_ns - self.last_received_ns >= 2.4 * self.heart_bt_int * _NS

    def need_test_request(self, now_ns: int) -> bool:
        """Return True when the next TestRequest is due."""
        due = 1.2 * (self.test_request + 1) * self.heart_bt_int * _NS
        return now_ns - self.last_received_ns >= due

    def need_heartbeat(self, now_ns: int) -> bool:
        """Return True when nothing was sent for HeartBtInt and no TestRequest is pending."""
        return now_ns - self.last_sent_ns >= self.heart_bt_int * _NS and self.test_request == 0

    def clear_connection(self) -> None:
        """Forget everything that belongs to one connection."""
        self.received_logon = False
        self.sent_logon = False
        self.sent_logout = False
        self.received_reset = False
        self.sent_reset = False
        self.test_request = 0
        self.queue.clear()
        self.logout_reason = ""
        self.resend_range = (0, 0)
