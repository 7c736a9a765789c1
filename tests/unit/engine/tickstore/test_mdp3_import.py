# SPDX-License-Identifier: MIT
"""CME MDP 3.0 captures into the tick store: the shared v8 capture through real HDF5."""

from pathlib import Path

import numpy as np
import pytest

from engine.feeds.sbe.book import build_mbp_books, first_arrivals
from engine.feeds.sbe.mdp3 import decode_capture
from engine.tickstore.cli import main
from engine.tickstore.importing import ImportRowError
from engine.tickstore.mdp3_import import import_mdp3
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_CLEAR, L2_SET
from tests.conftest import SHARED

CME = SHARED / "data/cme_mdp3_sbe"
CAPTURE = CME / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"
SCHEMA = CME / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"
TICK = "0.0000001"  # the schema's PRICE unit (exponent -7): every price is on it


@pytest.fixture(scope="module")
def shared() -> None:
    if not (CAPTURE.is_file() and SCHEMA.is_file()):
        pytest.skip(f"{CAPTURE} or its schema is absent")


def _levels(rows: np.ndarray) -> dict[tuple[int, int], int]:
    book: dict[tuple[int, int], int] = {}
    cols = (rows["px"].tolist(), rows["qty"].tolist(), rows["side"].tolist(), rows["kind"].tolist())
    for px, qty, side, kind in zip(*cols, strict=True):
        if kind == L2_CLEAR:
            book.clear()
        elif kind == L2_SET:
            if qty:
                book[(side, px)] = qty
            else:
                book.pop((side, px), None)
    return book


def test_the_stored_books_and_trades_are_the_captures(tmp_path: Path, shared: None) -> None:
    store = tmp_path / "s.h5"
    result, stats = import_mdp3(
        [CAPTURE], store, schema=SCHEMA, tick_size=TICK, symbols={174969: "ESZ6"}
    )
    assert not result.skipped
    assert not stats.gaps  # A and B together hold every packet
    cap = decode_capture(CAPTURE, SCHEMA)
    books = build_mbp_books(cap)
    keep = first_arrivals(cap)
    t = cap.template("MDIncrementalRefreshTradeSummary")
    g = t.groups["NoMDEntries"].rows
    trades = g[keep[t.rows["_packet"][g["_msg"]]]]
    with TickStore(store) as s:
        assert "ESZ6" in s.instruments()
        for b, sec in enumerate(books.security_ids.tolist()):
            name = "ESZ6" if sec == 174969 else f"SECID{sec}"
            [day] = s.days(name)
            l2 = s.read(name, day, "l2")
            bids, asks = books.books.top(b, 10)
            scale = int(books.ticks[b])
            want = {(BUY, int(p) * scale): int(q) for p, q in bids.tolist() if q}
            want |= {(-BUY, int(p) * scale): int(q) for p, q in asks.tolist() if q}
            assert _levels(l2) == want, name  # replayed deltas end where the capture's book does
            bbo = s.read(name, day, "bbo")
            assert (np.diff(bbo["ts"]) >= 0).all()
            ours = trades[trades["SecurityID"] == sec]
            stored = s.read(name, day, "trades") if "trades" in s.kinds(name, day) else None
            assert (0 if stored is None else stored.shape[0]) == ours.shape[0], name
            if stored is not None:
                assert stored["qty"].tolist() == ours["MDEntrySize"].tolist()
                assert stored["px"].tolist() == ours["MDEntryPx.mantissa"].tolist()


def test_off_grid_prices_are_named_and_a_lost_packet_is_a_gap(tmp_path: Path, shared: None) -> None:
    with pytest.raises(ImportRowError, match=r"MDEntryPx.*is not a multiple of the tick size 7"):
        import_mdp3([CAPTURE], tmp_path / "a.h5", schema=SCHEMA, tick_size="7")
    assert not (tmp_path / "a.h5").exists() or not TickStore(tmp_path / "a.h5").instruments()


def test_qwconsole_import_pcap_mdp3(
    tmp_path: Path, shared: None, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.h5"
    args = ["pcap", str(CAPTURE), "--protocol", "mdp3", "--store", str(store), "--quiet"]
    assert main(args) == 2
    assert "needs --schema" in capsys.readouterr().err
    assert (
        main([*args, "--schema", str(SCHEMA), "--tick-size", TICK, "--symbol", "174969=ESZ6"]) == 0
    )
    err = capsys.readouterr().err
    assert "10,000 packets" in err
    assert "0 gaps" in err
    assert (
        main([*args, "--schema", str(SCHEMA), "--tick-size", TICK, "--symbol", "x=y", "--replace"])
        == 2
    )
    assert "--symbol 'x=y': give SECURITYID=NAME" in capsys.readouterr().err
