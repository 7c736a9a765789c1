# SPDX-License-Identifier: MIT
"""A callback that sends many messages hands them to the transport as it goes (issue 18).

Inside an entry point (an application callback) ``send_template`` gathers its output for the
entry point's result; with a responder set (a transport), every
:data:`~engine.fix.session.STREAM_EVERY` gathered messages go to it at once, so the peer works
on the first orders of a batch while the rest are made. The bytes, their order and the
sequence numbers must be what the gathered path gives: compared here with a session that has
no responder (everything in the entry point's result).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.application import Application, SessionID
from engine.fix.codec import FixDecoder
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import STREAM_EVERY, AppTemplate, FixSession
from tests.factories import fix_pair

T0 = 1_700_000_000 * 1_000_000_000


class _Batcher(Application):
    """Answers each application message with ``n`` NewOrderSingles from a template."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.session: FixSession | None = None
        self.template: AppTemplate | None = None
        self.responder_out: list[bytes] = []
        #: Bytes the responder had received after each send, during the callback.
        self.handed: list[int] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        assert self.session is not None
        assert self.template is not None
        for i in range(self.n):
            assert self.session.send_template(self.template, (b"c%d" % i,))
            self.handed.append(len(self.responder_out))


def _run(n: int, streaming: bool) -> tuple[_Batcher, list[bytes], list[bytes]]:
    # Our session gets one ExecutionReport from the counterparty and answers it with n
    # orders; returns the app, what the responder got and what the entry point returned.
    clock = TestClock(T0)
    app = _Batcher(n)
    ours, theirs, out = fix_pair(app, clock, validate=False)
    app.session, app.responder_out = ours, out
    app.template = ours.template(
        b"D", [(11, None), (21, b"1"), (38, b"5"), (40, b"1"), (54, b"1"), (55, b"ES")]
    )
    if not streaming:
        ours.set_responder(None)
    theirs.send(OutMessage(b"8", [(6, b"0"), (11, b"x"), (14, b"0"), (17, b"e"), (37, b"o")]))
    decoder = FixDecoder()
    msgs = [m for raw in theirs.drain() for m in decoder.feed(raw)]
    assert len(msgs) == 1
    returned = ours.on_messages(msgs, clock.now_ns())
    return app, list(out), returned


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 3 * STREAM_EVERY + 3))
def test_a_batch_sent_from_a_callback_goes_out_by_stream_every(n: int) -> None:
    app, handed, returned = _run(n, streaming=True)
    # During the callback, the responder got every STREAM_EVERY-th send's gathered output.
    assert app.handed == [(k + 1) // STREAM_EVERY * STREAM_EVERY for k in range(n)]
    assert len(handed) == n // STREAM_EVERY * STREAM_EVERY
    # Together, the same bytes in the same order as a session that gathers them all.
    gathered_app, gathered_handed, gathered = _run(n, streaming=False)
    assert gathered_handed == []
    assert gathered_app.handed == [0] * n
    assert handed + returned == gathered
    # One order each, MsgSeqNum consecutive, ClOrdIDs in the order they were sent.
    decoder = FixDecoder()
    orders = [m for raw in handed + returned for m in decoder.feed(raw)]
    assert [m.get(11) for m in orders] == [b"c%d" % i for i in range(n)]
    seqs = [int(m.get(34) or 0) for m in orders]
    assert seqs == list(range(seqs[0], seqs[0] + n)) if n else seqs == []
