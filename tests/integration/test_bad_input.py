# SPDX-License-Identifier: MIT
"""Bad input at every command-line entry point: one line on stderr, exit 2, never a hang.

Each row of ``docs/bad-input.md`` for ``qwconsole …`` is one case here, run as a real
``.venv/bin/qwconsole`` process with a time limit. The bad files are made from real good ones
in a temporary folder: a tick store written by :class:`TickStore`, a journal written by
:class:`engine.journal.Journal`, the QuickFIX FIX 4.4 dictionary of ``/work/shared/fix-spec``
(else the one the project ships), a session ``.cfg`` and an engine TOML. The test asserts the
exact line, the exit status, and that the table in the docs shows the same line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import pytest

from engine.clock import TestClock
from engine.journal import FixDirection, Journal
from engine.journal.component import journal_path
from engine.tickstore.days import day_of
from engine.tickstore.schema import KINDS
from engine.tickstore.store import TickStore

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QWCONSOLE = ROOT / ".venv" / "bin" / "qwconsole"
DOC = ROOT / "docs" / "bad-input.md"
SPEC = Path("/work/shared/fix-spec/FIX44.xml")
FIX44 = SPEC if SPEC.exists() else ROOT / "resources" / "fix" / "FIX44.xml"
#: Seconds a bad-input run may take before it counts as a hang.
LIMIT_S = 60.0
DAY_TS = 1_700_006_400_000_000_000  # 2023-11-15 00:00 UTC
ROWS = 300_000  # ten 32,768-row chunks

ENGINE_SIM = """\
[engine]
id = "badin"

[files]
journal_dir = "journal"

[simulator]
enabled = true
"""

ENGINE_FIX = """\
[engine]
id = "badin"

[sessions]
file = "sessions.cfg"

[[instruments]]
symbol = "ESZ6"
tick_size = "0.25"
multiplier = "50"
"""

SESSIONS = """\
[DEFAULT]
ConnectionType=initiator
NonStopSession=Y
ReconnectInterval=1
SocketConnectHost=127.0.0.1
SocketConnectPort=1

[SESSION]
BeginString=FIX.4.4
SenderCompID=QW
TargetCompID=EXCH
HeartBtInt=30
ResetOnLogout=Y
DataDictionary=FIX44.xml
"""

ACCEPTOR = """\
[DEFAULT]
ConnectionType=acceptor
NonStopSession=Y
SocketAcceptPort=65000

[SESSION]
BeginString=FIX.4.4
SenderCompID=EXCH
TargetCompID=QW
ResetOnLogout=Y
DataDictionary=FIX44.xml
"""


# ----------------------------------------------------------------------------- good files


@dataclass(frozen=True)
class Good:
    """Real files the project wrote or reads, from which the bad ones are made."""

    store: Path
    journal: Path
    csv: Path


def _write_store(path: Path) -> None:
    rows = np.zeros(ROWS, KINDS["trades"])
    rows["ts"] = DAY_TS + np.arange(ROWS, dtype=np.int64) * 100_000
    rows["ts_recv"] = rows["ts"] + 50_000
    rows["px"] = 18_000 + np.arange(ROWS) % 40
    rows["qty"] = 1 + np.arange(ROWS) % 7
    rows["trade_id"] = np.arange(ROWS)
    rows["side"] = np.arange(ROWS) % 2
    with (
        TickStore(path, "a") as s,
        s.writer("ES", day_of(DAY_TS), tick_size="0.25", lot_size="1") as w,
    ):
        w.append("trades", rows)


def _write_journal(path: Path) -> None:
    clock = TestClock(DAY_TS)
    with Journal(path, clock, engine_id="badin") as j:
        for i in range(40):
            clock.advance(1_000_000)
            j.log(20, "badin", "quote %d at %d", i, 18_000 + i)
            raw = f"8=FIX.4.4\x019=5\x0135=0\x0134={i + 1}\x0110=000\x01".encode()
            j.record_fix(
                "FIX.4.4:QW->EXCH",
                FixDirection.OUTBOUND,
                raw,
                clock.now_ns(),
                clock.now_ns(),
                clock.now_ns(),
            )


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Good:
    folder = tmp_path_factory.mktemp("good")
    _write_store(folder / "store.h5")
    _write_journal(folder / "journal.qwj")
    csv = folder / "trades.csv"
    # the day after the store's: an import into a damaged store must read the store first
    csv.write_text("time,price,size\n1700092800.0,4500.25,3\n1700092801.5,4500.50,1\n")
    return Good(folder / "store.h5", folder / "journal.qwj", csv)


# ----------------------------------------------------------------------------- damage


def truncate(path: Path, size: int) -> None:
    """Keep the first ``size`` bytes of ``path``."""
    with path.open("r+b") as f:
        f.truncate(size)


def flip(path: Path, at: int, n: int) -> None:
    """Invert ``n`` bytes of ``path`` from offset ``at``."""
    data = bytearray(path.read_bytes())
    data[at : at + n] = bytes(b ^ 0xFF for b in data[at : at + n])
    path.write_bytes(bytes(data))


def records(path: Path) -> list[tuple[int, int, int]]:
    """Return ``(offset, payload length, kind)`` of each journal record (docs/journal.md)."""
    data = path.read_bytes()
    out, at = [], 32
    while at + 12 <= len(data):
        length = int.from_bytes(data[at : at + 4], "little")
        out.append((at, length, data[at + 8]))
        at += 12 + length
    return out


def first_chunk_offset(path: Path) -> int:
    """Return the file offset of the first stored chunk of ES trades."""
    with h5py.File(path, "r") as f:
        info = f[f"ES/{day_of(DAY_TS)}/trades"].id.get_chunk_info(0)
        return int(info.byte_offset)


def today_journal(folder: Path, engine_id: str) -> Path:
    """Return where an engine started now looks for today's journal (folder created)."""
    folder.mkdir(parents=True, exist_ok=True)
    return journal_path(folder, engine_id, time.time_ns())


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One bad input: how to make it, the ``qwconsole`` arguments, the line expected."""

    id: str
    entry: str  # the entry point, as the table shows it
    bad: str  # what is wrong, as the table shows it
    make: Callable[[Path, Good], list[str]]  # -> arguments after "qwconsole"
    message: str | Callable[[Path, Good], str]  # "{tmp}" is the case's folder
    code: int = 2
    env: dict[str, str] = field(default_factory=dict)


def _store_copy(tmp: Path, good: Good, name: str = "store.h5") -> Path:
    p = tmp / name
    shutil.copy(good.store, p)
    return p


def _half_store(tmp: Path, good: Good) -> Path:
    p = _store_copy(tmp, good)
    truncate(p, p.stat().st_size // 2)
    return p


def _store_sizes(good: Good) -> tuple[int, int]:
    size = good.store.stat().st_size
    return size // 2, size


def _mk_ls(make: Callable[[Path, Good], Path]) -> Callable[[Path, Good], list[str]]:
    return lambda tmp, good: ["import", "ls", str(make(tmp, good))]


def _mk_backtest(make: Callable[[Path, Good], Path]) -> Callable[[Path, Good], list[str]]:
    return lambda tmp, good: [
        "backtest", str(make(tmp, good)), "--symbol", "ES", "--quiet", "--out", str(tmp / "o.qwj")
    ]  # fmt: skip


def _tiny_store(tmp: Path, good: Good) -> Path:
    p = _store_copy(tmp, good)
    truncate(p, 100)
    return p


def _empty(tmp: Path, _good: Good, name: str = "store.h5") -> Path:
    p = tmp / name
    p.write_bytes(b"")
    return p


def _text_store(tmp: Path, _good: Good) -> Path:
    p = tmp / "store.h5"
    p.write_text("time,price\n1,2\n")
    return p


def _plain_h5(tmp: Path, _good: Good) -> Path:
    p = tmp / "store.h5"
    with h5py.File(p, "w") as f:
        f["x"] = [1, 2, 3]
    return p


def _future_schema(tmp: Path, good: Good) -> Path:
    p = _store_copy(tmp, good)
    with h5py.File(p, "r+") as f:
        f.attrs["schema_version"] = 99
    return p


def _bad_chunk(tmp: Path, good: Good) -> Path:
    p = _store_copy(tmp, good)
    flip(p, first_chunk_offset(p) + 4, 64)
    return p


def _npy_truncated(tmp: Path, _good: Good) -> Path:
    from engine.backtest.synthetic import random_walk_l2

    p = tmp / "day.npy"
    np.save(p, random_walk_l2(2000, seed=1))
    truncate(p, p.stat().st_size // 2)
    return p


def _npy_text(tmp: Path, _good: Good) -> Path:
    p = tmp / "day.npy"
    p.write_text("not numpy\n")
    return p


def _engine_dir(tmp: Path, toml: str) -> Path:
    (tmp / "engine.toml").write_text(toml)
    return tmp / "engine.toml"


def _with_journal(damage: Callable[[Path], None]) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, good: Good) -> list[str]:
        cfg = _engine_dir(tmp, ENGINE_SIM)
        j = today_journal(tmp / "journal", "badin")
        shutil.copy(good.journal, j)
        damage(j)
        return ["engine", "--config", str(cfg), "--seconds", "1"]

    return make


def _crc_damage(j: Path) -> None:
    at, _length, _kind = records(j)[20]
    flip(j, at + 12, 4)


def _crc_message(tmp: Path, good: Good) -> str:
    recs = records(good.journal)
    at, length, kind = recs[20]
    name = today_journal(tmp / "journal", "badin").name
    return (
        f"qwconsole engine: error: {tmp}/engine.toml: {tmp}/journal/{name}: record 20 at offset "
        f"{at}: CRC mismatch (length {length}, kind {kind}); an intact record follows at "
        f"offset {recs[21][0]}, so this is not a torn tail (see 'qwconsole engine --help')"
    )


def _header(offset: int, data: bytes) -> Callable[[Path], None]:
    def damage(j: Path) -> None:
        raw = bytearray(j.read_bytes())
        raw[offset : offset + len(data)] = data
        j.write_bytes(bytes(raw))

    return damage


def _journal_line(reason: str) -> Callable[[Path, Good], str]:
    def message(tmp: Path, _good: Good) -> str:
        name = today_journal(tmp / "journal", "badin").name
        return (
            f"qwconsole engine: error: {tmp}/engine.toml: {tmp}/journal/{name}: "
            f"{reason} (see 'qwconsole engine --help')"
        )

    return message


def _with_sessions(
    cfg_text: str, xml: Callable[[Path], None] | None = None
) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, _good: Good) -> list[str]:
        cfg = _engine_dir(tmp, ENGINE_FIX)
        (tmp / "sessions.cfg").write_text(cfg_text)
        shutil.copy(FIX44, tmp / "FIX44.xml")
        if xml is not None:
            xml(tmp / "FIX44.xml")
        return ["engine", "--config", str(cfg), "--seconds", "1"]

    return make


def _acceptor(
    cfg_text: str, xml: Callable[[Path], None] | None = None
) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, _good: Good) -> list[str]:
        (tmp / "acceptor.cfg").write_text(cfg_text)
        shutil.copy(FIX44, tmp / "FIX44.xml")
        if xml is not None:
            xml(tmp / "FIX44.xml")
        return ["fix", "acceptor", "--cfg", str(tmp / "acceptor.cfg")]

    return make


def _half_xml(p: Path) -> None:
    truncate(p, 300_000)


def _wrong_root(p: Path) -> None:
    p.write_text('<?xml version="1.0"?>\n<dictionary>\n  <field number="1"/>\n</dictionary>\n')


def _undefined_field(p: Path) -> None:
    text = p.read_text()
    p.write_text(
        text.replace(
            "<field name='ClOrdID' required='Y' />", "<field name='NoSuchField' required='Y' />", 1
        )
    )


def _bad_number(p: Path) -> None:
    text = p.read_text()
    p.write_text(
        text.replace("<field number='54' name='Side'", "<field number='abc' name='Side'", 1)
    )


def _console(damage: Callable[[Path], None]) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, good: Good) -> list[str]:
        j = today_journal(tmp / "state" / "journal", "embedded")
        shutil.copy(good.journal, j)
        damage(j)
        return ["--smoke", "1"]

    return make


def _console_env(tmp: Path) -> dict[str, str]:
    return {
        "QWCONSOLE_STATE_DIR": str(tmp / "state"),
        "QWCONSOLE_CONFIG_DIR": str(tmp / "config"),
        "QT_QPA_PLATFORM": "offscreen",
    }


def _console_line(reason: str) -> Callable[[Path, Good], str]:
    def message(tmp: Path, _good: Good) -> str:
        name = today_journal(tmp / "state" / "journal", "embedded").name
        path = tmp / "state" / "journal" / name
        return f"qwconsole: error: the embedded engine did not start: {path}: {reason}"

    return message


def _csv_into(make_store: Callable[[Path, Good], Path]) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, good: Good) -> list[str]:
        return [
            "import", "csv", str(good.csv), "--store", str(make_store(tmp, good)), "--symbol",
            "ES", "--kind", "trades", "--mapping", "ts=time:s,px=price,qty=size",
            "--tick-size", "0.25", "--lot-size", "1", "--quiet",
        ]  # fmt: skip

    return make


def _csv_bad_row(tmp: Path, good: Good) -> list[str]:
    bad = tmp / "trades.csv"
    bad.write_text(good.csv.read_text() + "1700092802.0,4500.7x,2\n")
    return [
        "import", "csv", str(bad), "--store", str(tmp / "new.h5"), "--symbol", "ES",
        "--kind", "trades", "--mapping", "ts=time:s,px=price,qty=size", "--tick-size", "0.25",
        "--lot-size", "1", "--quiet",
    ]  # fmt: skip


BINANCE = Path("/work/shared/data/binance_spot_btcusdt_2024-08-08/btcusdt_20240808.gz")

REMOTE = (
    ENGINE_SIM
    + """
[remote]
enabled = true
bind = "127.0.0.1"
port = 0
token_store = "tokens.toml"
"""
)


def _binance(make_file: Callable[[Path], Path]) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, _good: Good) -> list[str]:
        return [
            "import", "binance", str(make_file(tmp)), "--store", str(tmp / "new.h5"),
            "--symbol", "BTCUSDT", "--tick-size", "0.01", "--lot-size", "0.00000001", "--quiet",
        ]  # fmt: skip

    return make


def _cut_recording(tmp: Path) -> Path:
    if not BINANCE.exists():
        pytest.skip(f"real data not available: {BINANCE}")
    p = tmp / "btcusdt.gz"
    p.write_bytes(BINANCE.read_bytes()[:200_000])
    return p


def _text_gz(tmp: Path) -> Path:
    p = tmp / "btcusdt.gz"
    p.write_text("time price\n")
    return p


def _remote(files: dict[str, str], toml: str = REMOTE) -> Callable[[Path, Good], list[str]]:
    def make(tmp: Path, _good: Good) -> list[str]:
        for name, text in files.items():
            (tmp / name).write_text(text)
        return ["engine", "--config", str(_engine_dir(tmp, toml)), "--seconds", "1"]

    return make


def _demo_journal(tmp: Path, good: Good) -> list[str]:
    j = today_journal(tmp / "state" / "journal", "headless")
    shutil.copy(good.journal, j)
    _crc_damage(j)
    return ["engine", "--demo", "--state-dir", str(tmp / "state"), "--seconds", "1"]


def _demo_seqnums(tmp: Path, _good: Good) -> list[str]:
    fix = tmp / "state" / "fix"
    fix.mkdir(parents=True)
    (fix / "FIX.4.4-QWCONSOLE-QWSIM.seqnums").write_bytes(b"garbage\n")
    return ["engine", "--demo", "--state-dir", str(tmp / "state"), "--seconds", "1"]


def _demo_message(tmp: Path, good: Good) -> str:
    recs = records(good.journal)
    at, length, kind = recs[20]
    path = today_journal(tmp / "state" / "journal", "headless")
    return (
        f"qwconsole engine: error: {path}: record 20 at offset {at}: CRC mismatch (length "
        f"{length}, kind {kind}); an intact record follows at offset {recs[21][0]}, so this is "
        "not a torn tail (see 'qwconsole engine --help')"
    )


def _half(good: Good) -> str:
    half, size = _store_sizes(good)
    return f"{half:,} of {size:,} bytes"


CASES: list[Case] = [
    # --- qwconsole import ls / recover / csv: the tick store
    Case("ls-truncated-half", "qwconsole import ls", "tick store cut to half its size (hung)",
         _mk_ls(_half_store),
         lambda t, g: f"qwconsole import: error: {t}/store.h5: damaged file (truncated to "
                      f"{_half(g)})"),
    Case("ls-truncated-100", "qwconsole import ls", "tick store cut to its first 100 bytes",
         _mk_ls(_tiny_store),
         lambda t, g: f"qwconsole import: error: {t}/store.h5: damaged file (truncated to 100 "
                      f"of {g.store.stat().st_size:,} bytes)"),
    Case("ls-empty", "qwconsole import ls", "empty file", _mk_ls(_empty),
         "qwconsole import: error: {tmp}/store.h5: not a readable HDF5 file (HDF5: file "
         "signature not found)"),
    Case("ls-text", "qwconsole import ls", "a CSV file named .h5", _mk_ls(_text_store),
         "qwconsole import: error: {tmp}/store.h5: not a readable HDF5 file (HDF5: file "
         "signature not found)"),
    Case("ls-plain-hdf5", "qwconsole import ls", "an HDF5 file that is not a tick store",
         _mk_ls(_plain_h5),
         "qwconsole import: error: {tmp}/store.h5: not a tick store (no "
         "format='qwconsole-tickstore')"),
    Case("ls-schema", "qwconsole import ls", "a store of a future schema version",
         _mk_ls(_future_schema),
         "qwconsole import: error: {tmp}/store.h5: schema version 99, this build reads 1"),
    Case("ls-missing", "qwconsole import ls", "no such file",
         lambda t, g: ["import", "ls", str(t / "nope.h5")],
         "qwconsole import: error: {tmp}/nope.h5: no such tick store"),
    Case("recover-truncated", "qwconsole import recover", "tick store cut to half its size",
         lambda t, g: ["import", "recover", str(_half_store(t, g))],
         lambda t, g: f"qwconsole import: error: {t}/store.h5: cannot be recovered (truncated "
                      f"to {_half(g)})"),
    Case("csv-into-truncated", "qwconsole import csv", "target store cut to half its size",
         _csv_into(_half_store),
         lambda t, g: f"qwconsole import: error: {t}/store.h5: damaged file (truncated to "
                      f"{_half(g)}); nothing imported"),
    Case("csv-bad-row", "qwconsole import csv", "a price that is not a number, line 4",
         _csv_bad_row,
         "qwconsole import: error: {tmp}/trades.csv:4: column price: '4500.7x' is not a "
         "number; nothing imported"),
    Case("binance-truncated-gz", "qwconsole import binance", "real recording cut to 200 kB "
         "(was a traceback)", _binance(_cut_recording),
         "qwconsole import: error: {tmp}/btcusdt.gz:6338: the gzip data ends early (truncated "
         "file); nothing imported"),
    Case("binance-not-gzip", "qwconsole import binance", "a text file named .gz",
         _binance(_text_gz),
         "qwconsole import: error: {tmp}/btcusdt.gz:1: not gzip data (Not a gzipped file "
         "(b'ti')); nothing imported"),
    # --- qwconsole backtest: tick store and .npy inputs
    Case("backtest-truncated", "qwconsole backtest", "tick store cut to half its size (hung)",
         _mk_backtest(_half_store),
         lambda t, g: f"qwconsole backtest: error: {t}/store.h5: damaged file (truncated to "
                      f"{_half(g)})"),
    Case("backtest-chunk", "qwconsole backtest", "64 bytes of the first data chunk inverted",
         _mk_backtest(_bad_chunk),
         "qwconsole backtest: error: {tmp}/store.h5: /ES/20231115/trades chunk 0 does not "
         "decompress to 1572864 bytes (damaged file)"),
    Case("backtest-tiny", "qwconsole backtest", "tick store cut to its first 100 bytes",
         _mk_backtest(_tiny_store),
         lambda t, g: f"qwconsole backtest: error: {t}/store.h5: damaged file (truncated to "
                      f"100 of {g.store.stat().st_size:,} bytes)"),
    Case("backtest-npy-truncated", "qwconsole backtest", ".npy events cut to half",
         _mk_backtest(_npy_truncated),
         "qwconsole backtest: error: {tmp}/day.npy: not a readable .npy file (Failed to read "
         "all data for array. Expected (2300,) = 2300 elements, could only read 1146 elements. "
         "(file seems not fully written?))"),
    Case("backtest-npy-text", "qwconsole backtest", "a text file named .npy",
         _mk_backtest(_npy_text),
         "qwconsole backtest: error: {tmp}/day.npy: not a .npy file (no NumPy header)"),
    # --- qwconsole engine --config: the journal
    Case("engine-journal-crc", "qwconsole engine --config", "journal: 4 bytes of record 20 "
         "inverted", _with_journal(_crc_damage), _crc_message),
    Case("engine-journal-magic", "qwconsole engine --config", "journal: header magic overwritten",
         _with_journal(_header(0, b"NOTAJRNL")),
         _journal_line("not a readable journal: bad magic b'NOTAJRNL', expected b'QWJOURNL'")),
    Case("engine-journal-version", "qwconsole engine --config", "journal: major version 9",
         _with_journal(_header(8, (9).to_bytes(2, "little"))),
         _journal_line("not a readable journal: format version 9.0; this reader reads 1.x")),
    Case("engine-journal-header", "qwconsole engine --config", "journal: cut inside its header",
         _with_journal(lambda j: truncate(j, 20)),
         _journal_line("not a readable journal: 20 bytes is shorter than the 32-byte file "
                       "header")),
    # --- qwconsole engine --config: the sessions .cfg and its dictionary
    Case("engine-cfg-no-equals", "qwconsole engine --config", ".cfg line without '='",
         _with_sessions(SESSIONS.replace("BeginString=FIX.4.4", "BeginString FIX.4.4")),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/sessions.cfg:9: 'BeginString "
         "FIX.4.4' is not key=value, a [section] or a # comment (no '=') (see 'qwconsole "
         "engine --help')"),
    Case("engine-cfg-typo", "qwconsole engine --config", ".cfg key misspelt",
         _with_sessions(SESSIONS.replace("ResetOnLogout=Y", "ResetOnLogut=Y")),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/sessions.cfg:13: ResetOnLogut: "
         "unknown key; did you mean ResetOnLogout? (see 'qwconsole engine --help')"),
    Case("engine-cfg-value", "qwconsole engine --config", ".cfg value of the wrong type",
         _with_sessions(SESSIONS.replace("HeartBtInt=30", "HeartBtInt=thirty")),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/sessions.cfg:12: HeartBtInt: "
         "'thirty' is not an integer (see 'qwconsole engine --help')"),
    Case("engine-xml-truncated", "qwconsole engine --config", "FIX44.xml cut at 300,000 bytes",
         _with_sessions(SESSIONS, _half_xml),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/FIX44.xml:6293: XML: unclosed "
         "token (see 'qwconsole engine --help')"),
    Case("engine-xml-root", "qwconsole engine --config", "XML that is not a dictionary",
         _with_sessions(SESSIONS, _wrong_root),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/FIX44.xml:2: <dictionary>: root "
         "element must be <fix> (see 'qwconsole engine --help')"),
    Case("engine-xml-undefined", "qwconsole engine --config", "a message names an undefined "
         "field", _with_sessions(SESSIONS, _undefined_field),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/FIX44.xml:259: <field "
         "name='NoSuchField'> in <message name='OrderCancelReject'>: field 'NoSuchField' is not "
         "defined in <fields> (see 'qwconsole engine --help')"),
    Case("engine-xml-number", "qwconsole engine --config", "a field number that is not a "
         "number", _with_sessions(SESSIONS, _bad_number),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/FIX44.xml:4010: <field "
         "name='Side'>: attribute number='abc' is not an integer (see 'qwconsole engine "
         "--help')"),
    Case("engine-toml-syntax", "qwconsole engine --config", "engine TOML syntax error",
         lambda t, g: ["engine", "--config", str(_engine_dir(t, ENGINE_SIM + "[risk\n"))],
         "qwconsole engine: error: {tmp}/engine.toml:9: not valid TOML: Expected ']' at the end "
         "of a table declaration (at line 9, column 6) (see 'qwconsole engine --help')"),
    Case("engine-toml-key", "qwconsole engine --config", "engine TOML key misspelt",
         lambda t, g: ["engine", "--config",
                       str(_engine_dir(t, ENGINE_SIM.replace("enabled", "enabeld")))],
         "qwconsole engine: error: {tmp}/engine.toml:8: simulator.enabeld: unknown key (known "
         "here: demo_strategy, enabled, seed) (see 'qwconsole engine --help')"),
    Case("engine-tokens", "qwconsole engine --config", "token store that is not TOML",
         _remote({"tokens.toml": "[[token]]\nid = \"x\"\nname = \n"}),
         "qwconsole engine: error: {tmp}/engine.toml: {tmp}/tokens.toml: cannot read the token "
         "store: Invalid value (at line 3, column 8) (see 'qwconsole engine --help')"),
    Case("engine-tls", "qwconsole engine --config", "TLS certificate and key that are not PEM",
         _remote({"engine.crt": "garbage\n", "engine.key": "garbage\n"},
                 REMOTE + 'tls_cert = "engine.crt"\ntls_key = "engine.key"\n'),
         "qwconsole engine: error: {tmp}/engine.toml: cannot load certificate "
         "{tmp}/engine.crt / key {tmp}/engine.key: [SSL] PEM lib (_ssl.c:3905) (see 'qwconsole "
         "engine --help')"),
    Case("engine-demo-journal", "qwconsole engine --demo", "journal: 4 bytes of record 20 "
         "inverted", _demo_journal, _demo_message),
    Case("engine-demo-seqnums", "qwconsole engine --demo", "FIX store sequence numbers that "
         "are not numbers", _demo_seqnums,
         "qwconsole engine: error: {tmp}/state/fix/FIX.4.4-QWCONSOLE-QWSIM.seqnums: sequence "
         "numbers unreadable: b'garbage\\n' (expected '<next sender> : <next target>'); "
         "repair the file or delete the store to start the session at 1 (see 'qwconsole "
         "engine --help')"),
    # --- qwconsole fix acceptor
    Case("acceptor-no-equals", "qwconsole fix acceptor", ".cfg line without '='",
         _acceptor(ACCEPTOR.replace("TargetCompID=QW", "TargetCompID QW")),
         "qwconsole fix: error: {tmp}/acceptor.cfg:9: 'TargetCompID QW' is not key=value, a "
         "[section] or a # comment (no '=')"),
    Case("acceptor-typo", "qwconsole fix acceptor", ".cfg key misspelt",
         _acceptor(ACCEPTOR.replace("ResetOnLogout", "ResetOnLogot")),
         "qwconsole fix: error: {tmp}/acceptor.cfg:10: ResetOnLogot: unknown key; did you mean "
         "ResetOnLogout?"),
    Case("acceptor-xml", "qwconsole fix acceptor", "FIX44.xml cut at 300,000 bytes",
         _acceptor(ACCEPTOR, _half_xml),
         "qwconsole fix: error: {tmp}/FIX44.xml:6293: XML: unclosed token"),
    Case("acceptor-missing", "qwconsole fix acceptor", "no such .cfg",
         lambda t, g: ["fix", "acceptor", "--cfg", str(t / "nope.cfg")],
         "qwconsole fix: error: {tmp}/nope.cfg: No such file or directory"),
    # --- qwconsole (the console's start)
    Case("console-journal-crc", "qwconsole --smoke", "journal: 4 bytes of record 20 inverted",
         _console(_crc_damage),
         lambda t, g: _console_line(
             f"record 20 at offset {records(g.journal)[20][0]}: CRC mismatch (length "
             f"{records(g.journal)[20][1]}, kind {records(g.journal)[20][2]}); an intact record "
             f"follows at offset {records(g.journal)[21][0]}, so this is not a torn tail")(t, g)),
    Case("console-journal-magic", "qwconsole --smoke", "journal: header magic overwritten",
         _console(_header(0, b"NOTAJRNL")),
         _console_line("not a readable journal: bad magic b'NOTAJRNL', expected b'QWJOURNL'")),
]  # fmt: skip


def _message(case: Case, tmp: Path, good: Good) -> str:
    if callable(case.message):
        return case.message(tmp, good)
    return case.message.replace("{tmp}", str(tmp))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_exit_2(case: Case, good: Good, tmp_path: Path) -> None:
    argv = case.make(tmp_path, good)
    env = {**os.environ, **case.env}
    if argv[:1] == ["--smoke"]:
        env |= _console_env(tmp_path)
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(QWCONSOLE), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=LIMIT_S,
        check=False,
    )
    took = time.monotonic() - t0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [_message(case, tmp_path, good)]
    assert proc.returncode == case.code
    assert took < LIMIT_S


def normalized(text: str) -> str:
    """Return ``text`` without what depends on the run, for comparing it with the docs.

    A journal's record offsets move by a byte or two with the writer's pid (msgpack sizes)
    and its name has the day of the run; a tick store's size varies by a few kB between runs
    (Blosc's output).
    """
    text = re.sub(r"offset \d+", "offset N", text)
    text = re.sub(r"-\d{8}\.qwj", "-YYYYMMDD.qwj", text)
    return re.sub(r"truncated to [\d,]+ of [\d,]+ bytes", "truncated to N of M bytes", text)


def test_the_docs_table_shows_every_case(good: Good, tmp_path: Path) -> None:
    doc = normalized(DOC.read_text(encoding="utf-8"))
    for case in CASES:
        folder = tmp_path / case.id
        folder.mkdir()
        case.make(folder, good)
        line = _message(case, folder, good).replace(str(folder), "<tmp>")
        shown = f"`` {line} ``" if "`" in line else f"`{line}`"
        assert normalized(shown) in doc, case.id


if __name__ == "__main__":  # print each case's line (for writing the table)
    sys.exit(pytest.main([__file__, "-q", "-x"]))
