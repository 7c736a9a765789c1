# SPDX-License-Identifier: MIT
"""A read of one message (or of a few) made into the message alone (or the list of them)
gives what the batch gives (#18).

Covered: :meth:`FixDecoder.decode_message` against :meth:`FixDecoder.decode_batch` (its
``single_message`` and ``messages``) of a second decoder fed the same reads, with and without
layouts, across reads cut anywhere, garbled frames included: the same messages (bytes, fields,
values, layout mark, receive time), the same rows for the session (:attr:`FixDecoder.head`,
:attr:`FixDecoder.heads`), the same batch for every other read, the same pending tail and
garbled count; and a transport over real sockets that answers one order per read through it.
"""

from __future__ import annotations

import asyncio

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.codec import DecodedBatch
from engine.fix.message import MESSAGES_PER_BLOCK, FixMessage
from engine.fix.session import FixSession
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from tests.benchmarks.bench_fix import NOS_FIELDS, _Client, _config, _TemplateVenue
from tests.unit.engine.fix.test_few_frames import _decoder, _reads, _seen
from tests.unit.engine.fix.test_read_path import T0, _nos, _raw


def _same_batch(mine: DecodedBatch, theirs: DecodedBatch) -> None:
    assert mine.rows == theirs.rows
    assert np.array_equal(mine.msgs, theirs.msgs)
    assert [list(a) for a in mine.field_lists()] == [list(a) for a in theirs.field_lists()]
    assert mine.checked == theirs.checked
    assert [_seen(m) for m in mine.messages(7)] == [_seen(m) for m in theirs.messages(7)]


@settings(max_examples=300, deadline=None)
@given(reads=_reads(), layouts=st.booleans(), ts=st.integers(min_value=0, max_value=2**62))
def test_decode_message_equals_the_batch_path(reads: list[bytes], layouts: bool, ts: int) -> None:
    mine, s1 = _decoder(layouts)
    theirs, s2 = _decoder(layouts)
    try:
        for raw in reads:
            got = mine.decode_message(raw, ts)
            batch = theirs.decode_batch(raw)
            rows = batch.rows
            good = not theirs.pending and all(not r[4] for r in rows)
            one = good and len(rows) == 1
            few = good and 1 < len(rows) <= MESSAGES_PER_BLOCK and rows[0][0] == rows[0][2] == 0
            assert isinstance(got, FixMessage) == one
            assert isinstance(got, list) == few
            if isinstance(got, FixMessage):
                assert _seen(got) == _seen(batch.single_message(ts))
                assert got.ts_recv == ts
                assert mine.head == rows[0]
            elif isinstance(got, list):
                assert [_seen(m) for m in got] == [_seen(m) for m in batch.messages(ts)]
                assert all(m.ts_recv == ts for m in got)
                assert mine.heads == rows
            else:
                _same_batch(got, batch)
            assert mine.pending == theirs.pending
            assert mine.garbled == theirs.garbled
    finally:
        s1.close()  # type: ignore[attr-defined]
        s2.close()  # type: ignore[attr-defined]


def test_a_message_stays_valid_after_the_next_reads() -> None:
    dec, s = _decoder(True)
    try:
        first = dec.decode_message(_raw(b"D", 2, T0, _nos(b"first")), 1)
        assert isinstance(first, FixMessage)
        seen = _seen(first)
        for i in range(3):
            other = dec.decode_message(_raw(b"D", 3 + i, T0, [*_nos(b"o%d" % i), (58, b"x")]), 2)
            assert isinstance(other, FixMessage)
            assert other.get(11) == b"o%d" % i
        assert _seen(first) == seen
        assert first.get(11) == b"first"
        assert s.layouts is not None  # type: ignore[attr-defined]
        assert first.checked == s.layouts.valid  # type: ignore[attr-defined]
    finally:
        s.close()  # type: ignore[attr-defined]


def test_a_negative_receive_time_returns_the_batch() -> None:
    dec, s = _decoder(True)
    try:
        raw = _raw(b"D", 2, T0, _nos(b"c1"))
        got = dec.decode_message(raw, -1)
        assert isinstance(got, DecodedBatch)
        assert got.single_message(4).get(11) == b"c1"
    finally:
        s.close()  # type: ignore[attr-defined]


def test_a_transport_answers_reads_of_one_message() -> None:
    # Over real sockets: every order arrives alone (the client waits for each report), so the
    # venue's reads take decode_message's path; each is answered, in sequence.
    async def run() -> int:
        venue = FixSession(
            _config("EXCH", "CLIENT", initiator=False, dictionary=True),
            MemoryStore(),
            _TemplateVenue(),
        )
        acceptor = SocketAcceptor([venue], port=0, timer_interval=1.0)
        await acceptor.start()
        app = _Client()
        client = FixSession(
            _config("CLIENT", "EXCH", initiator=True, dictionary=True), MemoryStore(), app
        )
        initiator = SocketInitiator(client, [("127.0.0.1", acceptor.port)], reconnect_interval=0.2)
        await initiator.start()
        try:
            await initiator.wait_logged_on(10)
            nos = client.template(b"D", NOS_FIELDS)
            for i in range(50):
                app.target = i + 1
                app.waiter = asyncio.get_running_loop().create_future()
                client.send_template(nos, (b"c%d" % i,))
                await asyncio.wait_for(app.waiter, 10)
            return app.received
        finally:
            await initiator.stop()
            await acceptor.stop()
            client.close()
            venue.close()

    assert asyncio.run(run()) == 50
