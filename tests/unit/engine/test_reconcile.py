# SPDX-License-Identifier: MIT
"""``engine.reconcile`` over real journals (engine.journal.Journal) and real FIX file stores
(engine.fix.store.FileStore), with differences planted on purpose."""

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import simplefix

from engine.clock import TestClock
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import (
    FixMessageSeen,
    InstrumentAdded,
    OrderChanged,
    OrderFilled,
    OrderView,
)
from engine.fix.store import FileStore
from engine.journal import Journal
from engine.reconcile import ReconcileError, reconcile
from engine.reconcile.cli import main

#: 2026-12-03 09:00:00 UTC
T0 = 1_796_288_400_000_000_000
DAY = "20261203"
SESSION = "FIX.4.4:QWCONSOLE->QWSIM"
TICK = {"ESZ6": "0.25", "NQZ6": "0.25"}


def fix_time(ns: int) -> str:
    s, frac = divmod(ns, 1_000_000_000)
    hh, mm, ss = (s // 3600) % 24, (s // 60) % 60, s % 60
    return f"{DAY}-{hh:02d}:{mm:02d}:{ss:02d}.{frac // 1_000_000:03d}"


def execution_report(
    seq: int,
    exec_id: str,
    clordid: str,
    symbol: str,
    side: Side,
    qty: int,
    px_ticks: int,
    ts: int,
    *,
    poss_dup: bool = False,
    begin: str = "FIX.4.4",
    exec_type: bytes = b"F",
    exec_trans_type: bytes | None = None,
) -> bytes:
    m = simplefix.FixMessage()
    m.append_pair(8, begin, header=True)
    m.append_pair(35, "8", header=True)
    m.append_pair(34, seq, header=True)
    m.append_pair(49, "QWSIM", header=True)
    m.append_pair(52, fix_time(ts), header=True)
    m.append_pair(56, "QWCONSOLE", header=True)
    if poss_dup:
        m.append_pair(43, "Y", header=True)
        m.append_pair(122, fix_time(ts), header=True)
    m.append_pair(11, clordid)
    m.append_pair(17, exec_id)
    if exec_trans_type is not None:
        m.append_pair(20, exec_trans_type)
    px = f"{px_ticks * 0.25:.2f}"
    m.append_pair(31, px)
    m.append_pair(32, qty)
    m.append_pair(37, f"V-{clordid}")
    m.append_pair(54, "1" if side is Side.BUY else "2")
    m.append_pair(55, symbol)
    m.append_pair(60, fix_time(ts))
    m.append_pair(150, exec_type)
    raw: bytes = m.encode()
    return raw


def logon(begin: str = "FIX.4.4") -> bytes:
    m = simplefix.FixMessage()
    m.append_pair(8, begin, header=True)
    m.append_pair(35, "A", header=True)
    m.append_pair(34, 1, header=True)
    m.append_pair(49, "QWSIM", header=True)
    m.append_pair(52, fix_time(T0), header=True)
    m.append_pair(56, "QWCONSOLE", header=True)
    m.append_pair(98, 0)
    m.append_pair(108, 10)
    raw: bytes = m.encode()
    return raw


def view(order_id: int, clordid: str, strategy_id: int, symbol: str, side: Side) -> OrderView:
    return OrderView(
        order_id=order_id,
        client_order_id=clordid,
        orig_client_order_ids=(),
        venue_order_id=f"V-{clordid}",
        strategy_id=strategy_id,
        symbol=symbol,
        side=side,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=10,
        px_ticks=24000,
        status=OrdStatus.NEW,
        cum_qty_lots=0,
        leaves_qty_lots=10,
        avg_px_ticks=0.0,
        pending="",
        text="",
        ts_created=T0,
        ts_sent=T0,
        ts_acked=T0,
        ts_last=T0,
    )


@dataclass
class Order:
    order_id: int
    clordid: str
    strategy_id: int
    symbol: str
    side: Side


@dataclass
class StateDir:
    """A state directory as the demo leaves it: journal/ and the simulator's FIX store."""

    root: Path
    engine_id: str = "headless"
    clock: TestClock = field(default_factory=lambda: TestClock(T0))
    journal: Journal | None = None
    store: FileStore | None = None
    seq: int = 1
    orders: dict[str, Order] = field(default_factory=dict)

    def open(self) -> "StateDir":
        (self.root / "journal").mkdir(parents=True)
        self.journal = Journal(
            self.root / "journal" / f"{self.engine_id}-{DAY}.qwj",
            self.clock,
            engine_id=self.engine_id,
        )
        self.store = FileStore(self.root / "fix", "FIX.4.4-QWSIM-QWCONSOLE", T0)
        for symbol, tick in TICK.items():
            self.event(
                InstrumentAdded(
                    ts_event=T0,
                    symbol=symbol,
                    tick_size=tick,
                    lot_size="1",
                    multiplier="50",
                    currency="USD",
                    venue="SIM-FIX",
                )
            )
        self.fix_seen(logon())
        return self

    def event(self, ev: object) -> None:
        assert self.journal is not None
        self.journal.on_event(ev)  # type: ignore[arg-type]

    def fix_seen(self, raw: bytes) -> None:
        fields = dict(p.split(b"=", 1) for p in raw.split(b"\x01") if p)
        self.event(
            FixMessageSeen(
                ts_event=T0,
                session_id=SESSION,
                outbound=False,
                msg_type=fields[b"35"].decode(),
                seq_num=int(fields[b"34"]),
                raw=raw,
                ts_created=T0,
                ts_wire=T0,
            )
        )

    def order(
        self, order_id: int, clordid: str, strategy_id: int = 7, symbol: str = "ESZ6"
    ) -> Order:
        o = Order(order_id, clordid, strategy_id, symbol, Side.BUY)
        self.orders[clordid] = o
        self.event(
            OrderChanged(
                ts_event=T0,
                order=view(order_id, clordid, strategy_id, symbol, o.side),
                change="new",
            )
        )
        return o

    def fill(
        self,
        exec_id: str,
        clordid: str,
        qty: int = 1,
        px_ticks: int = 24000,
        *,
        journal: bool = True,
        venue: bool = True,
        seen: bool = True,
        strategy_id: int | None = None,
        journal_qty: int | None = None,
        at_s: float = 1.0,
    ) -> None:
        o = self.orders[clordid]
        ts = T0 + int(at_s * 1e9)
        raw = execution_report(self.seq, exec_id, clordid, o.symbol, o.side, qty, px_ticks, ts)
        if venue:
            assert self.store is not None
            self.store.set(self.seq, raw)
        self.seq += 1
        if seen:
            self.fix_seen(raw)
        if journal:
            self.event(
                OrderFilled(
                    ts_event=ts,
                    order_id=o.order_id,
                    client_order_id=clordid,
                    venue_order_id=f"V-{clordid}",
                    exec_id=exec_id,
                    strategy_id=o.strategy_id if strategy_id is None else strategy_id,
                    symbol=o.symbol,
                    side=o.side,
                    last_px_ticks=px_ticks,
                    last_qty_lots=qty if journal_qty is None else journal_qty,
                    leaves_qty_lots=0,
                    ts_recv=ts,
                )
            )

    def close(self) -> Path:
        assert self.journal is not None
        assert self.store is not None
        self.journal.close()
        self.store.close()
        return self.root


@pytest.fixture
def state(tmp_path: Path) -> StateDir:
    s = StateDir(tmp_path / "state").open()
    s.order(1, "A1")
    s.order(2, "A2")
    s.order(3, "B1", strategy_id=9, symbol="NQZ6")
    return s


def test_reconcile_when_all_sources_agree_reports_positions_and_exits_0(
    state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    state.fill("X1", "A1", qty=2)
    state.fill("X2", "A2", qty=1)
    state.fill("X3", "B1", qty=3)
    root = state.close()

    report = reconcile(root)

    assert report.ok, report.differences
    assert report.day == DAY
    assert report.totals == (3, 3, 3)
    rows = {(r.session, r.symbol, r.strategy_id): r for r in report.rows}
    assert set(rows) == {(SESSION, "ESZ6", 7), (SESSION, "NQZ6", 9)}
    es = rows[SESSION, "ESZ6", 7]
    for count in (es.journal, es.recovery, es.venue):
        assert count is not None
        assert (count.fills, count.position_lots) == (2, 3)
    assert main([str(root)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("Reconciled 2026-12-03: 3 fills agree")
    header = next(ln for ln in out.splitlines() if ln.startswith("SESSION"))
    row = next(ln for ln in out.splitlines() if "NQZ6" in ln)
    assert row.index("1 / +3") == header.index("JOURNAL")  # columns aligned


def test_fill_missing_in_journal_but_sent_by_venue_is_a_difference_and_exits_1(
    state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    state.fill("X1", "A1")
    # The venue stored and sent it; the engine never got it (neither journaled nor seen).
    state.fill("X2", "A1", qty=4, journal=False, seen=False)
    root = state.close()

    report = reconcile(root)

    assert not report.ok
    assert report.difference_count == 1
    (diff,) = report.differences
    assert (diff.session, diff.exec_id, diff.client_order_id) == (SESSION, "X2", "A1")
    assert (diff.qty, diff.px, diff.side) == ("4", "6000.00", Side.BUY)
    assert diff.missing_in == ("journal", "recovery")
    assert diff.found_in == ("venue",)
    (row,) = [r for r in report.rows if r.symbol == "ESZ6"]
    assert row.venue is not None
    assert (row.journal.position_lots, row.venue.position_lots) == (1, 5)
    assert row.difference == (
        "journal -1 fill -4 lots; recovery -1 fill -4 lots (against the venue)"
    )
    assert main([str(root)]) == 1
    out = capsys.readouterr().out
    assert "missing in journal, recovery" in out
    assert out.rstrip().splitlines()[-1].startswith("1 difference on 2026-12-03")


def test_resent_report_is_counted_once(state: StateDir) -> None:
    state.fill("X1", "A1", qty=2)
    assert state.store is not None
    # After a reconnect the venue resends the same report with PossDupFlag=Y; the engine
    # receives and journals the resend too.
    resend = execution_report(
        state.seq, "X1", "A1", "ESZ6", Side.BUY, 2, 24000, T0 + 1_000_000_000, poss_dup=True
    )
    state.fix_seen(resend)
    # A second copy in a message log of the session.
    log = state.root / "fix" / "FIX.4.4-QWCONSOLE-QWSIM.incoming.log"
    log.write_bytes(b"20261203-09:00:01.000000000 : " + resend + b"\n")
    root = state.close()

    report = reconcile(root)

    assert report.ok, report.differences
    assert report.totals == (1, 1, 1)
    assert any("1 resent execution report" in n for n in report.notes)
    assert str(log) in report.fix_files


def test_exec_id_reused_on_another_order_is_another_fill(state: StateDir) -> None:
    # A venue restarted the same day numbers its ExecIDs from X1 again: two real fills.
    state.fill("X1", "A1", qty=1)
    state.fill("X1", "A2", qty=2)
    root = state.close()

    report = reconcile(root)

    (row,) = [r for r in report.rows if r.symbol == "ESZ6"]
    assert row.venue is not None
    assert (row.journal.fills, row.venue.fills) == (2, 2)
    assert (row.journal.position_lots, row.venue.position_lots) == (3, 3)
    assert report.ok, report.differences


def test_strategy_mismatch_between_journal_fill_and_order_is_reported(state: StateDir) -> None:
    # The journaled fill says strategy 8, the order (and so the venue's report) strategy 7.
    state.fill("X1", "A1", strategy_id=8)
    root = state.close()

    report = reconcile(root)

    assert not report.ok
    (diff,) = report.differences
    assert diff.strategy == "8 / 7"
    assert "strategy 8 / 7 (journal / venue)" in diff.detail
    keyed = {r.strategy_id: r for r in report.rows}
    assert keyed[8].journal.fills == 1
    assert keyed[8].venue is not None
    assert keyed[8].venue.fills == 0
    assert keyed[7].venue is not None
    assert keyed[7].venue.fills == 1
    assert not keyed[7].agrees
    assert not keyed[8].agrees


def test_quantity_mismatch_is_one_difference_not_two_missing_fills(state: StateDir) -> None:
    state.fill("X1", "A1", qty=2, journal_qty=3)  # the venue said 2, the journal has 3
    root = state.close()

    report = reconcile(root)

    (diff,) = report.differences
    assert diff.missing_in == ()
    assert diff.detail == "qty 3 / 2 (journal / venue)"
    (row,) = report.rows
    assert row.venue is not None
    assert (row.journal.position_lots, row.venue.position_lots) == (3, 2)


def test_venue_reports_that_disagree_with_each_other_are_reported(state: StateDir) -> None:
    state.fill("X1", "A1", qty=2)
    root = state.root
    state.close()
    # The venue's store holds another version of X1 on A1 than the report the engine received.
    store = FileStore(root / "fix", "FIX.4.4-QWSIM-QWCONSOLE", T0)
    store.reset(T0)
    store.set(2, execution_report(2, "X1", "A1", "ESZ6", Side.BUY, 3, 24000, T0 + 10**9))
    store.close()

    report = reconcile(root)

    (diff,) = report.differences
    assert diff.missing_in == ()
    assert "venue has it 2 times" in diff.detail


def test_damaged_message_in_a_store_is_named_not_counted(state: StateDir) -> None:
    state.fill("X1", "A1")
    assert state.store is not None
    bad = bytearray(
        execution_report(state.seq, "X9", "A1", "ESZ6", Side.BUY, 5, 24000, T0 + 2 * 10**9)
    )
    bad[-3] = ord("9") if bad[-3] != ord("9") else ord("8")  # wrong CheckSum <10>
    state.store.set(state.seq, bytes(bad))
    root = state.close()

    report = reconcile(root)

    assert report.ok
    body = root / "fix" / "FIX.4.4-QWSIM-QWCONSOLE.body"
    assert f"{body}: 1 damaged message(s) (BodyLength or CheckSum) not read" in report.notes


def test_fix42_fills_count_and_trade_busts_do_not(tmp_path: Path) -> None:
    s = StateDir(tmp_path / "s").open()
    s.fix_seen(logon("FIX.4.2"))
    s.order(1, "A1")
    assert s.store is not None
    ts = T0 + 10**9
    for seq, (et, ett) in enumerate([(b"2", b"0"), (b"1", b"1"), (b"0", b"0")], start=1):
        raw = execution_report(
            seq,
            f"E{seq}",
            "A1",
            "ESZ6",
            Side.BUY,
            1,
            24000,
            ts,
            begin="FIX.4.2",
            exec_type=et,
            exec_trans_type=ett,
        )
        s.store.set(seq, raw)
    s.store.set(4, execution_report(4, "E4", "A1", "ESZ6", Side.BUY, 1, 24000, ts, begin="FIX.4.1"))
    root = s.close()

    report = reconcile(root)

    # Only E1 (150=2, 20=0) is a fill: E2 cancels a trade (20=1), E3 is an ack. E4 is of a
    # session the journal does not name: left out, and said so.
    assert report.totals == (0, 0, 1)
    (diff,) = report.differences
    assert (diff.session, diff.exec_id) == ("FIX.4.2:QWCONSOLE->QWSIM", "E1")
    assert any(
        "1 execution report(s) of sessions the journal does not name" in n for n in report.notes
    )


def test_live_engine_leaves_the_newest_fills_out(state: StateDir) -> None:
    state.fill("X1", "A1", at_s=1.0)
    state.fill("X2", "A1", at_s=9.5, journal=False, seen=False)  # sent, not yet received
    root = state.close()

    clock = TestClock(T0 + 10 * 10**9)
    report = reconcile(root, live=True, clock=clock)

    assert report.ok
    assert report.live
    assert any("not compared" in n for n in report.notes)
    assert not reconcile(root, live=False).ok


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err == (
        f"qwconsole reconcile: error: {tmp_path / 'missing'}: no such directory\n"
    )
    assert main([str(tmp_path)]) == 2
    assert "no journal (*.qwj)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path), "--day", "2026-12-03"])
    assert e.value.code == 2
    assert "'2026-12-03' is not a day as YYYYMMDD" in capsys.readouterr().err


def test_damaged_journal_is_an_error_naming_the_file(
    state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(20):
        state.fill(f"X{n}", "A1")
    root = state.close()
    path = root / "journal" / f"headless-{DAY}.qwj"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))

    with pytest.raises(ReconcileError, match=r"headless-20261203\.qwj"):
        reconcile(root)
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "CRC mismatch" in err
    assert str(path) in err


def test_torn_journal_tail_is_a_note_not_an_error(state: StateDir) -> None:
    state.fill("X1", "A1")
    root = state.close()
    path = root / "journal" / f"headless-{DAY}.qwj"
    with path.open("ab") as f:
        f.write(b"\x40\x00\x00\x00garbage")

    report = reconcile(root)

    assert report.ok
    assert any("torn last record" in n for n in report.notes)


def test_json_output_has_rows_differences_and_verdict(
    state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    state.fill("X2", "A1", journal=False, seen=False)
    root = state.close()

    assert main([str(root), "--json", "--day", DAY]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert data["differences"][0]["exec_id"] == "X2"
    assert data["differences"][0]["side"] == "BUY"
    assert data["verdict"].startswith("1 difference")


def test_an_ouch_account_is_reconciled_against_its_ports_store(state: StateDir) -> None:
    """OUCH: the journal's Order Executed messages and the port's own store, by MatchNumber."""
    from engine.venues.ouch.messages import EnterOrder, OrderExecuted
    from engine.venues.ouch.session import message_seen
    from engine.venues.ouch.store import FileSequencedStore

    link = "QWC1@127.0.0.1:5002"
    order = state.order(5, "O5")
    enter = EnterOrder(
        user_ref_num=5, side="B", quantity=3, symbol="ESZ6", price=60_000_000, cl_ord_id="O5"
    )
    state.event(message_seen(enter, enter.encode(), link=link, outbound=True, seq=0, now_ns=T0))
    port = FileSequencedStore(state.root / "fix", "ouch-QWC1-20261203")
    for match, qty, journaled in ((77, 2, True), (78, 1, False)):
        executed = OrderExecuted(
            timestamp=9 * 3600 * 10**9 + match,
            user_ref_num=5,
            quantity=qty,
            price=60_000_000,
            liquidity_flag="R",
            match_number=match,
        )
        port.append(executed.encode())
        if not journaled:
            continue  # the port sent it; the engine never got it
        state.event(
            message_seen(
                executed, executed.encode(), link=link, outbound=False, seq=match, now_ns=T0
            )
        )
        state.event(
            OrderFilled(
                ts_event=T0,
                order_id=order.order_id,
                client_order_id="O5",
                venue_order_id="",
                exec_id=f"M{match}",
                strategy_id=7,
                symbol="ESZ6",
                side=Side.BUY,
                last_px_ticks=24_000,
                last_qty_lots=qty,
                leaves_qty_lots=1,
                ts_recv=T0,
            )
        )
    port.close()
    root = state.close()

    report = reconcile(root)

    rows = {(r.session, r.symbol): r for r in report.rows}
    ouch = rows["OUCH QWC1", "ESZ6"]
    assert ouch.venue is not None
    assert (ouch.journal.fills, ouch.venue.fills, ouch.venue.position_lots) == (1, 2, 3)
    (diff,) = report.differences
    assert (diff.session, diff.exec_id, diff.client_order_id) == ("OUCH QWC1", "M78", "O5")
    assert diff.missing_in == ("journal", "recovery")
    assert any(f.endswith("ouch-QWC1-20261203.soupseq") for f in report.fix_files)
