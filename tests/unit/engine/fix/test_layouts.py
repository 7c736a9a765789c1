# SPDX-License-Identifier: MIT
"""engine.fix.layouts: the decoder's kernel proves a message valid only when validation would.

A layout found valid is kept in a :class:`LayoutTable` with its value checks; the decoder then
marks every frame of that layout. The property: a frame marked LAYOUT_VALID is one the full
validation walk accepts (the kernel is never looser), and a well-formed message of a kept
layout is marked valid (so the property is not won by never proving anything). Messages come
from the same generator as the fast-path tests: every shipped dictionary, random optional
fields and groups, and damaged copies (values emptied or garbage, counts off by one, fields
moved, dropped or repeated).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from engine.fix import _kernels as k
from engine.fix.application import Application, SessionID
from engine.fix.benchtables import er_fields, nos_fields
from engine.fix.codec import FixDecoder
from engine.fix.layouts import MAX_LAYOUTS, LayoutTable
from engine.fix.message import FixMessage
from engine.fix.session import AppTemplate, FixSession, lookup_session
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from engine.fix.validation.plans import layout_program
from engine.fix.validation.validator import validate_message
from engine.fix.validation.walk import _validate_reference
from tests.factories import socket_pair
from tests.unit.engine.fix.test_validation_fast import SETUPS, Pairs, dd, messages


def frame(pairs: Pairs) -> bytes | None:
    """The wire bytes of ``pairs`` (8, 9 … 10) with true BodyLength and CheckSum; None when
    BeginString, BodyLength and CheckSum are not where a frame needs them."""
    if len(pairs) < 4 or pairs[0][0] != 8 or pairs[1][0] != 9 or pairs[-1][0] != 10:
        return None
    body = b"".join(b"%d=%s\x01" % (t, v) for t, v in pairs[2:-1])
    head = b"8=%s\x019=%d\x01" % (pairs[0][1], len(body))
    return head + body + b"10=%03d\x01" % (sum(head + body) % 256)


def mark(table: LayoutTable, raw: bytes) -> tuple[int, FixMessage | None]:
    """Decode ``raw`` with ``table``: (its LAYOUT_* result, the message) or (-1, None)."""
    dec = FixDecoder()
    dec.layouts = table
    batch = dec.decode_batch(raw)
    if len(batch) != 1 or batch.rows[0][4] != k.FRAME_OK or batch.checked is None:
        return -1, None
    return batch.checked[0] - table.base, batch.message(0)


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: "+".join(filter(None, s)))
def test_the_kernel_proves_valid_only_what_validation_accepts(
    setup: tuple[str, str | None],
) -> None:
    sdd = dd(setup[0])
    app = dd(setup[1]) if setup[1] else None
    proven = 0

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(case=messages(setup))
    def check(case: tuple[Pairs, Pairs, bool]) -> None:
        nonlocal proven
        base, pairs, _ = case
        raw_base, raw = frame(base), frame(pairs)
        if raw_base is None:
            return
        table = LayoutTable()
        msg = FixDecoder().feed(raw_base)
        if len(msg) != 1:
            return  # a generated data field the framing reads otherwise: nothing to learn
        if validate_message(msg[0], sdd, app) is not None:
            return
        program = layout_program(msg[0], sdd, app)
        assert table.add(msg[0].tags, msg[0].get(35) or b"", program)
        got, decoded = mark(table, raw_base)
        assert decoded is not None
        assert decoded.tags == msg[0].tags
        # A program is kept when its enum values fit the kernel's 8 bytes (MsgType's own
        # check is replaced by the MsgType seen).
        short = program is not None and all(
            len(v) <= 8
            for j, (_, arg) in enumerate(program)
            if j != 2 and isinstance(arg, frozenset)
            for v in arg
        )
        assert got == (k.LAYOUT_VALID if short else k.LAYOUT_UNPROVEN)
        proven += got == k.LAYOUT_VALID
        if raw is not None:
            got, decoded = mark(table, raw)
            if got == k.LAYOUT_VALID:
                assert decoded is not None
                assert decoded.tags == msg[0].tags
                # What was sent (BodyLength and CheckSum as framed) is valid.
                assert _validate_reference(decoded.pairs, sdd, app) is None, decoded.pairs

    check()
    assert proven > 10  # layouts with a program: the kernel proves their messages


def _er(clordid: bytes, price: bytes = b"0") -> Pairs:
    body = [(t, v if v is not None else clordid) for t, v in er_fields("4.4")]
    body = [(31, price) if t == 31 else (t, v) for t, v in body]
    head = [(35, b"8"), (34, b"2"), (49, b"S"), (52, b"20261205-10:00:00.000"), (56, b"C")]
    return [(8, b"FIX.4.4"), (9, b"0"), *head, *body, (10, b"000")]


def test_values_of_a_kept_layout_are_each_checked() -> None:
    d = dd("FIX44")
    table = LayoutTable()
    msg = FixDecoder().feed(frame(_er(b"A1")) or b"")[0]
    assert validate_message(msg, d) is None
    program = layout_program(msg, d)
    assert program is not None
    assert table.add(msg.tags, b"8", program)
    assert not table.add(msg.tags, b"8", program)  # kept once
    assert len(table) == 1
    assert mark(table, frame(_er(b"B2", b"101.25")) or b"")[0] == k.LAYOUT_VALID
    for bad in (b"1.2.3", b"-", b"x", b"", b"1e5"):  # LastPx <31> is a price
        raw = frame(_er(b"B2", bad)) or b""
        assert mark(table, raw)[0] in (k.LAYOUT_UNPROVEN, -1), bad
    # Another MsgType with the same tags is another layout.
    other = _er(b"C3")
    other[2] = (35, b"9")
    assert mark(table, frame(other) or b"")[0] == k.LAYOUT_UNKNOWN


@pytest.mark.parametrize(
    ("stamp", "ok"),
    [
        (b"20240229-23:59:60.123", True),
        (b"20000229-00:00:00", True),
        (b"19000229-00:00:00", False),
        (b"20230229-00:00:00", False),
        (b"20240431-00:00:00", False),
        (b"20241301-00:00:00", False),
        (b"00000101-00:00:00", False),
        (b"20240102-24:00:00", False),
        (b"20240102-10:00:00.", False),
        (b"20240102-10:00:00.1234567890", False),
        (b"20240102-10:00:00.123456789", True),
    ],
)
def test_timestamps_the_kernel_accepts_are_real(stamp: bytes, ok: bool) -> None:
    d = dd("FIX44")
    table = LayoutTable()
    msg = FixDecoder().feed(frame(_er(b"A1")) or b"")[0]
    assert validate_message(msg, d) is None
    table.add(msg.tags, b"8", layout_program(msg, d))
    pairs = _er(b"A1")
    pairs[5] = (52, stamp)  # SendingTime <52>
    got = mark(table, frame(pairs) or b"")[0]
    assert got == (k.LAYOUT_VALID if ok else k.LAYOUT_UNPROVEN)
    assert (_validate_reference(pairs, d) is None) == ok


_KINDS = [
    (k.CHECK_INT, 0, b"0", True), (k.CHECK_INT, 0, b"-5", True), (k.CHECK_INT, 0, b"00012", True),
    (k.CHECK_INT, 0, b"-", False), (k.CHECK_INT, 0, b"5-", False), (k.CHECK_INT, 0, b"1.0", False),
    (k.CHECK_FLOAT, 0, b"1.5", True), (k.CHECK_FLOAT, 0, b"-1.5", True),
    (k.CHECK_FLOAT, 0, b".5", True), (k.CHECK_FLOAT, 0, b"5.", True),
    (k.CHECK_FLOAT, 0, b"-", False), (k.CHECK_FLOAT, 0, b".", False),
    (k.CHECK_FLOAT, 0, b"1.2.3", False), (k.CHECK_FLOAT, 0, b"1e5", False),
    (k.CHECK_FLOAT, 0, b"--1", False),
    (k.CHECK_CHAR, 0, b"Y", True), (k.CHECK_CHAR, 0, b"YN", False),
    (k.CHECK_SEQNUM, 0, b"1", True), (k.CHECK_SEQNUM, 0, b"18446744073709551615", True),
    (k.CHECK_SEQNUM, 0, b"0000018446744073709551615", True),
    (k.CHECK_SEQNUM, 0, b"18446744073709551616", False),
    (k.CHECK_SEQNUM, 0, b"99999999999999999999", False),
    (k.CHECK_SEQNUM, 0, b"100000000000000000000", False),
    (k.CHECK_SEQNUM, 0, b"17999999999999999999", True),
    (k.CHECK_SEQNUM, 0, b"-1", False), (k.CHECK_SEQNUM, 0, b"1x", False),
    (k.CHECK_INT_SEQNUM, 0, b"-99999999999999999999999", True),
    (k.CHECK_INT_SEQNUM, 0, b"18446744073709551616", False),
    (k.CHECK_INT_SEQNUM, 0, b"-", False), (k.CHECK_INT_SEQNUM, 0, b"42", True),
    (k.CHECK_COUNT, 3, b"3", True), (k.CHECK_COUNT, 3, b"03", True),
    (k.CHECK_COUNT, 3, b"4", False), (k.CHECK_COUNT, 3, b"-3", False),
    (k.CHECK_COUNT, 3, b"0000000000000000003", False),  # over 18 digits
    (k.CHECK_ANY, 0, b"anything", True),
    (k.CHECK_ENUM, 0, b"A", True), (k.CHECK_ENUM, 0, b"BC", True), (k.CHECK_ENUM, 0, b"B", False),
    (k.CHECK_ENUM, 0, b"ABCDEFGHI", False), (k.CHECK_ENUM, 0, b"BCD", False),
    (99, 0, b"1", False),  # a kind the kernel does not know proves nothing
]  # fmt: skip


@pytest.mark.parametrize(("kind", "arg", "value", "ok"), _KINDS)
def test_each_value_check_proves_exactly_its_values(
    kind: int, arg: int, value: bytes, ok: bool
) -> None:
    table = LayoutTable()
    check: int | frozenset[bytes] = frozenset((b"A", b"BC")) if kind == k.CHECK_ENUM else arg
    program: list[tuple[int, int | frozenset[bytes]]] = [
        (k.CHECK_ANY, 0), (k.CHECK_INT, 0), (k.CHECK_ENUM, frozenset()), (kind, check),
        (k.CHECK_INT, 0),
    ]  # fmt: skip
    assert table.add([8, 9, 35, 5001, 10], b"Z", program)
    raw = frame([(8, b"FIX.4.4"), (9, b"0"), (35, b"Z"), (5001, value), (10, b"0")])
    assert mark(table, raw or b"")[0] == (k.LAYOUT_VALID if ok else k.LAYOUT_UNPROVEN)


def test_a_full_table_starts_again_and_grows_its_code() -> None:
    table = LayoutTable()
    tags = [8, 9, 35, *range(100, 140), 10]  # 44 fields: the code area grows past 1,024 rows
    for i in range(MAX_LAYOUTS):
        assert table.add([*tags[:-1], 1000 + i, 10], b"Z", None)
    assert len(table) == MAX_LAYOUTS
    assert table.generation == 1
    raw = frame([(t, b"1" if t != 35 else b"Z") for t in [*tags[:-1], 1000 + 7, 10]])
    assert raw is not None
    assert mark(table, raw)[0] == k.LAYOUT_UNPROVEN  # kept, without a program
    valid_before = table.valid
    assert table.add([*tags[:-1], 5000, 10], b"Z", None)
    assert (table.generation, len(table)) == (2, 1)
    assert table.valid != valid_before  # marks of the old generation prove nothing now
    assert mark(table, raw)[0] == k.LAYOUT_UNKNOWN


def test_long_enum_values_keep_the_layout_unproven() -> None:
    table = LayoutTable()
    tags = [8, 9, 35, 34, 10]
    program: list[tuple[int, int | frozenset[bytes]]] = [
        (k.CHECK_ANY, 0),
        (k.CHECK_INT, 0),
        (k.CHECK_ENUM, frozenset()),
        (k.CHECK_ENUM, frozenset((b"123456789",))),
        (k.CHECK_INT, 0),
    ]
    assert table.add(tags, b"Z", program)
    raw = frame([(8, b"FIX.4.4"), (9, b"0"), (35, b"Z"), (34, b"123456789"), (10, b"0")])
    assert mark(table, raw or b"")[0] == k.LAYOUT_UNPROVEN
    assert np.count_nonzero(table.table) > 0


# ----------------------------------------------------------------------------- in a session


class _Venue(Application):
    def __init__(self) -> None:
        self.marks: list[int] = []
        self.er: AppTemplate | None = None

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        assert s.layouts is not None
        self.marks.append(message.checked - s.layouts.base)
        if self.er is None:
            self.er = s.template(b"8", er_fields("4.4"))
        clordid = message.get(11) or b""
        s.send_template(self.er, (clordid, b"E" + clordid, b"O" + clordid))


class _Client(Application):
    def __init__(self) -> None:
        self.got: asyncio.Queue[FixMessage] = asyncio.Queue()
        self.rejects: list[FixMessage] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.put_nowait(message)

    def from_admin(self, message: FixMessage, session_id: SessionID) -> None:
        if message.get(35) == b"3":
            self.rejects.append(message)


def _good_and_bad(client: FixSession) -> tuple[AppTemplate, AppTemplate]:
    # NewOrderSingle templates of one layout: a good one, and one whose price is no number.
    good = client.template(b"D", nos_fields("4.4"))
    bad = client.template(b"D", [(t, b"1O1.25" if t == 44 else v) for t, v in nos_fields("4.4")])
    return good, bad


async def _orders() -> tuple[list[int], list[FixMessage], int]:
    app = _Venue()
    client_app = _Client()
    async with socket_pair(app, client_app, use_data_dictionary=True) as pair:
        client = pair.client
        good, bad = _good_and_bad(client)
        for i in range(5):
            client.send_template(good, (b"g%d" % i,))
            await asyncio.wait_for(client_app.got.get(), 5)
        client.send_template(bad, (b"bad",))  # a price that is not a number, same layout
        for _ in range(100):
            if client_app.rejects:
                break
            await asyncio.sleep(0.02)
        client.send_template(good, (b"after",))
        await asyncio.wait_for(client_app.got.get(), 5)
        return app.marks, client_app.rejects, len(pair.venue.layouts or ())


def test_a_session_learns_a_layout_and_still_rejects_a_bad_value() -> None:
    marks, rejects, layouts = asyncio.run(_orders())
    # The first order's layout was validated in Python and kept; the next ones were proven
    # valid by the kernel, and the one after the reject too.
    assert marks == [k.LAYOUT_UNKNOWN, *[k.LAYOUT_VALID] * 5]
    assert layouts == 1
    # The bad price was not proven, validated in Python and rejected as QuickFIX does.
    assert len(rejects) == 1
    assert rejects[0].get(373) == b"6"  # Incorrect data format for value
    assert rejects[0].get(371) == b"44"


def test_recheck_proves_what_was_decoded_before_its_layout_was_kept() -> None:
    # A read decoded while the table was empty: every mark unknown. Once the layout is kept,
    # recheck marks the rest of the block as the decoder would now, in place: a good value
    # valid, a bad one unproven (left to validation), another MsgType still unknown; marks
    # before ``first`` and marks another generation made are left alone.
    d = dd("FIX44")
    table = LayoutTable()
    other = _er(b"O5")
    other[2] = (35, b"9")
    pairs = [_er(b"A1"), _er(b"B2", b"101.25"), _er(b"C3", b"1.2.3"), _er(b"D4"), other]
    dec = FixDecoder()
    dec.layouts = table
    msgs = dec.decode_batch(b"".join(frame(p) or b"" for p in pairs)).messages()
    block = msgs[0]._b  # type: ignore[union-attr]
    assert all(m is not None and m._b is block for m in msgs)
    assert block.checked == [table.base + k.LAYOUT_UNKNOWN] * 5
    assert table.recheck(block, 1) == table.base + k.LAYOUT_UNKNOWN  # nothing kept yet
    first = msgs[0]
    assert first is not None
    assert validate_message(first, d) is None
    assert table.add(first.tags, b"8", layout_program(first, d))
    assert table.recheck(block, 1) == table.valid
    assert [m - table.base for m in block.checked] == [
        k.LAYOUT_UNKNOWN, k.LAYOUT_VALID, k.LAYOUT_UNPROVEN, k.LAYOUT_VALID, k.LAYOUT_UNKNOWN
    ]  # fmt: skip
    assert [m.checked for m in msgs if m is not None] == block.checked
    block.checked[3] = 1  # a mark of an earlier generation (base 0): not this table's to change
    table.recheck(block, 0)
    assert block.checked[3] == 1
    assert block.checked[0] == table.valid


@pytest.mark.interpreted
def test_recheck_of_a_block_read_from_a_bytearray_compiles_nothing_new() -> None:
    d = dd("FIX44")
    table = LayoutTable()
    dec = FixDecoder()
    dec.layouts = table
    raw = b"".join(frame(_er(b"A%d" % i)) or b"" for i in range(3))
    msgs = dec.decode_batch(raw).messages()  # bytes: the type the kernel is compiled for
    first = msgs[0]
    assert first is not None
    assert validate_message(first, d) is None
    assert table.add(first.tags, b"8", layout_program(first, d))
    assert table.recheck(first._b, 1) == table.valid
    signatures = len(cast(Any, k.check_layouts).signatures)
    again = FixDecoder()
    block = again.decode_batch(bytearray(raw)).messages()[0]._b  # type: ignore[arg-type,union-attr]
    assert type(block.buf) is bytearray
    block.checked = [table.base + k.LAYOUT_UNKNOWN] * 3
    assert table.recheck(block, 0) == table.valid
    assert block.checked == [table.valid] * 3
    assert len(cast(Any, k.check_layouts).signatures) == signatures


class _Burst(Application):
    def __init__(self) -> None:
        self.marks: list[int] = []
        self.clordids: list[bytes] = []

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        assert s.layouts is not None
        self.marks.append(message.checked - s.layouts.base)
        self.clordids.append(message.get(11) or b"")


async def _burst() -> tuple[_Burst, list[FixMessage]]:
    app = _Burst()
    client_app = _Client()
    async with socket_pair(app, client_app, use_data_dictionary=True) as pair:
        client = pair.client
        good, bad = _good_and_bad(client)
        # One write (sends outside a read are gathered): 40 orders of a layout the venue has
        # not seen, over three of the decoder's blocks, a bad price among them.
        for i in range(40):
            client.send_template(bad if i == 20 else good, (b"o%d" % i,))
        for _ in range(250):
            if len(app.marks) == 39 and client_app.rejects:
                break
            await asyncio.sleep(0.02)
        return app, client_app.rejects


def test_a_burst_before_its_layout_is_known_is_proven_by_the_kernel_after_the_first() -> None:
    app, rejects = asyncio.run(_burst())
    assert app.clordids == [b"o%d" % i for i in range(40) if i != 20]
    # The first order was validated in Python and its layout kept; every later one of the
    # same read was proven by the kernel (so not validated again), the bad price was not.
    assert app.marks == [k.LAYOUT_UNKNOWN, *[k.LAYOUT_VALID] * 38]
    assert len(rejects) == 1
    assert rejects[0].get(45) == b"22"  # RefSeqNum: the bad order (Logon was 1)
    assert rejects[0].get(373) == b"6"  # Incorrect data format for value
    assert rejects[0].get(371) == b"44"


def test_programs_survive_the_table_growing() -> None:
    table = LayoutTable()
    n_layouts, n_values = 60, 10  # 2,640 code rows and 600 enum values: both areas grow
    tags = [8, 9, 35, 34, *range(100, 139), 10]
    for i in range(n_layouts):
        values = frozenset(b"v%d.%d" % (i, j) for j in range(n_values))
        program = [(k.CHECK_ANY, 0)] * 3 + [(k.CHECK_ENUM, values)] + [(k.CHECK_INT, 0)] * 41
        assert table.add([*tags[:-1], 1000 + i, 10], b"Z", program)
    assert len(table.table) > 10_000
    for i in (0, 31, 59):
        for value, want in (
            (b"v%d.7" % i, k.LAYOUT_VALID),
            (b"v%d.7" % (i + 1), k.LAYOUT_UNPROVEN),
        ):
            pairs = [(8, b"FIX.4.4"), (9, b"0"), (35, b"Z"), (34, value)]
            pairs += [(t, b"5") for t in [*range(100, 139), 1000 + i]] + [(10, b"0")]
            assert mark(table, frame(pairs) or b"")[0] == want, (i, value)


async def _fixt_marks() -> list[list[int]]:
    app = _Venue()

    def settings(me: str, them: str, initiator: bool, appl: str) -> SessionSettings:
        return SessionSettings(
            begin_string="FIXT.1.1",
            sender_comp_id=me,
            target_comp_id=them,
            connection_type="initiator" if initiator else "acceptor",
            heart_bt_int=30,
            use_data_dictionary=True,
            default_appl_ver_id=appl,
            reset_on_logon=True,
        )

    venue = FixSession(settings("EXCH", "ME", False, "FIX.5.0SP2"), MemoryStore(), app)
    acceptor = SocketAcceptor([venue], port=0, timer_interval=0.5)
    await acceptor.start()
    marks = []
    try:
        # The client's DefaultApplVerID changes between connections: the venue's layouts
        # without ApplVerID <1128> meant the other version, and are forgotten.
        for appl in ("FIX.5.0SP2", "FIX.5.0", "FIX.5.0"):
            client_app = _Client()
            client = FixSession(settings("ME", "EXCH", True, appl), MemoryStore(), client_app)
            initiator = SocketInitiator(client, [("127.0.0.1", acceptor.port)])
            await initiator.start()
            try:
                await initiator.wait_logged_on(10)
                nos = client.template(b"D", nos_fields("5.0"))
                app.marks.clear()
                for i in range(3):
                    client.send_template(nos, (b"%s-%d" % (appl.encode(), i),))
                    await asyncio.wait_for(client_app.got.get(), 5)
                marks.append(list(app.marks))
            finally:
                await initiator.stop()
                client.close()
    finally:
        await acceptor.stop()
        venue.close()
    return marks


def test_a_new_default_appl_ver_id_forgets_the_layouts() -> None:
    unknown, valid = k.LAYOUT_UNKNOWN, k.LAYOUT_VALID
    assert asyncio.run(_fixt_marks()) == [
        [unknown, valid, valid],
        [unknown, valid, valid],  # FIX.5.0 now: learnt again, not taken from FIX.5.0SP2's
        [valid, valid, valid],  # the same version again: still known
    ]


def test_every_frame_of_a_big_read_is_marked() -> None:
    # More frames than the decoder's rows in one read (further passes), and 64 KB chunks.
    d = dd("FIX44")
    table = LayoutTable()
    msg = FixDecoder().feed(frame(_er(b"A1")) or b"")[0]
    assert validate_message(msg, d) is None
    table.add(msg.tags, b"8", layout_program(msg, d))
    good, bad = frame(_er(b"B2", b"101.25")) or b"", frame(_er(b"B2", b"1.2.3")) or b""
    stream = good * 2000 + bad + good * 2000
    for chunk in (len(stream), 65536):
        dec = FixDecoder()
        dec.layouts = table
        marks: list[int] = []
        for i in range(0, len(stream), chunk):
            batch = dec.decode_batch(stream[i : i + chunk])
            assert batch.checked is not None
            marks += [m - table.base for m in batch.checked]
            assert [m.checked for m in batch.messages() if m] == batch.checked
        assert marks == [k.LAYOUT_VALID] * 2000 + [k.LAYOUT_UNPROVEN] + [k.LAYOUT_VALID] * 2000


def test_tiny_frames_past_the_rows_of_one_pass_are_marked() -> None:
    d = dd("FIX44")
    hb = [
        (8, b"FIX.4.4"),
        (9, b"0"),
        (35, b"0"),
        (34, b"1"),
        (49, b"A"),
        (52, b"20240102-10:00:00"),
        (56, b"B"),
        (10, b"0"),
    ]
    raw = frame(hb) or b""
    assert len(raw) < 64  # more frames than rows (one per 64 bytes read): a second pass
    msg = FixDecoder().feed(raw)[0]
    assert validate_message(msg, d) is None
    table = LayoutTable()
    table.add(msg.tags, b"0", layout_program(msg, d))
    dec = FixDecoder()
    dec.layouts = table
    batch = dec.decode_batch(raw * 5000)
    assert len(batch) == 5000
    assert batch.checked == [table.valid] * 5000


def test_eight_byte_values_with_the_high_bit_pack_as_the_kernel_packs_them() -> None:
    # Latin-1 enum values (and MsgTypes) of 8 bytes whose last byte is 0x80 or more fill an
    # int64's sign bit: kept and compared like any other.
    table = LayoutTable()
    high = b"ABCDEFG\xe9"
    program: list[tuple[int, int | frozenset[bytes]]] = [
        (k.CHECK_ANY, 0), (k.CHECK_INT, 0), (k.CHECK_ENUM, frozenset()),
        (k.CHECK_ENUM, frozenset((high, b"X"))), (k.CHECK_INT, 0),
    ]  # fmt: skip
    assert table.add([8, 9, 35, 5001, 10], high, program)
    msg = [(8, b"FIX.4.4"), (9, b"0"), (35, high), (5001, high), (10, b"0")]
    assert mark(table, frame(msg) or b"")[0] == k.LAYOUT_VALID
    msg[3] = (5001, b"ABCDEFG\xea")
    assert mark(table, frame(msg) or b"")[0] == k.LAYOUT_UNPROVEN


def test_a_layout_with_appl_ver_id_proves_only_its_own_version() -> None:
    # ApplVerID <1128> chooses the application dictionary: a layout found valid under one
    # version is no proof for the same tags under another.
    sdd, sp2 = dd("FIXT11"), dd("FIX50SP2")
    body = [(t, v) for t, v in _er(b"A1")[7:-1] if t not in (20,)]

    def er(appl: bytes) -> Pairs:
        head = [
            (35, b"8"),
            (1128, appl),
            (34, b"2"),
            (49, b"S"),
            (52, b"20261205-10:00:00.000"),
            (56, b"C"),
        ]
        return [(8, b"FIXT.1.1"), (9, b"0"), *head, *body, (10, b"000")]

    msg = FixDecoder().feed(frame(er(b"9")) or b"")[0]
    assert validate_message(msg, sdd, sp2) is None
    table = LayoutTable()
    program = layout_program(msg, sdd, sp2)
    assert program is not None
    assert table.add(msg.tags, b"8", program)
    assert mark(table, frame(er(b"9")) or b"")[0] == k.LAYOUT_VALID
    assert mark(table, frame(er(b"7")) or b"")[0] == k.LAYOUT_UNPROVEN


def test_after_the_warm_up_a_first_read_and_its_recheck_compile_nothing() -> None:
    # The per-message stages are inlined into the kernels that call them, so each kernel the
    # decoder and the layout table call from Python is a compilation of its own: the warm-up
    # must have made every one of them, for the types a session's reads hand them (a fresh
    # user's first session would otherwise compile on its trading thread).
    from engine.fix import precompile

    precompile.warm_up()
    kernels = [k.scan_frames, k.check_layouts, k.scan_and_check_ws]
    before = [len(cast(Any, f).signatures) for f in kernels]
    assert all(before)
    d = dd("FIX44")
    table = LayoutTable()
    dec = FixDecoder()
    dec.expect_header(b"FIX.4.4", b"S", b"C")
    raw = b"".join(frame(_er(b"W%d" % i)) or b"" for i in range(3))
    (first, *_) = dec.decode_batch(raw).messages()  # no layouts yet: the framing kernel alone
    dec.layouts = table
    msgs = dec.decode_batch(raw).messages()  # layouts, none kept: every mark unknown
    assert first is not None
    assert msgs[0] is not None
    assert validate_message(first, d) is None
    assert table.add(first.tags, b"8", layout_program(first, d))
    assert table.recheck(msgs[0]._b, 0) == table.valid  # the layout check from Python
    assert dec.decode_batch(raw).checked == [table.valid] * 3  # both kernels in one call
    assert [len(cast(Any, f).signatures) for f in kernels] == before
