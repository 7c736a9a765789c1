# SPDX-License-Identifier: MIT
"""``qwconsole import``: progress, one-line errors, skip reports, and nothing half-written."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.tickstore.cli import main
from engine.tickstore.csv_import import CsvMapping, import_csv
from engine.tickstore.store import TickStore

REPO = Path(__file__).resolve().parents[4]
TRUEFX = REPO.parent / "shared" / "data" / "truefx_usdjpy_2013-01-01" / "usdjpy-ticks.csv"


def big_csv(path: Path, n: int, start_s: int = 0) -> Path:
    """Write ``n`` trades ``time,price,size`` (ns times) in one go."""
    ts = (start_s * 10**9 + np.arange(n, dtype=np.int64) * 1000).astype(str)
    px = (1000 + np.arange(n) % 100).astype(str)
    body = np.char.add(np.char.add(np.char.add(ts, ","), np.char.add(px, ".25,")), "3\n")
    with path.open("w") as fh:
        fh.write("time,price,size\n")
        fh.write("".join(body.tolist()))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_csv_import_prints_progress_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not TRUEFX.exists():
        pytest.skip(f"real data not available: {TRUEFX}")
    store = tmp_path / "s.h5"
    argv = ["csv", str(TRUEFX), "--store", str(store), "--symbol", "USD/JPY", "--kind", "bbo",
            "--mapping", "ts=timestamp:iso,bid_px=bid,ask_px=ask", "--tick-size", "0.001",
            "--lot-size", "1", "--venue", "TRUEFX"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "imported 1,000 rows" in out
    assert "USD/JPY/20130101" in out
    assert "100.0%" in err
    assert main(["ls", str(store)]) == 0
    out, _ = capsys.readouterr()
    assert out.strip() == "USD/JPY 20130101 tick=0.001 lot=1 bbo=1,000"


def test_bad_row_is_one_line_exit_2_and_skips_go_to_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.csv"
    src.write_text("time,price,size\n1,1.25,3\n2,1.3x,4\n3,1.50,4\n")
    store = tmp_path / "s.h5"
    argv = ["csv", str(src), "--store", str(store), "--symbol", "X", "--kind", "trades",
            "--mapping", "ts=time:s,px=price,qty=size", "--tick-size", "0.25", "--lot-size", "1",
            "--quiet"]  # fmt: skip
    assert main(argv) == 2
    _, err = capsys.readouterr()
    assert err == (
        f"qwconsole import: error: {src}:3: column price: '1.3x' is not a number; "
        "nothing imported\n"
    )
    assert not store.exists()
    report = tmp_path / "bad.csv"
    assert main([*argv, "--skip-bad-rows", "--report", str(report)]) == 0
    _, err = capsys.readouterr()
    assert "skipped 1 bad rows" in err
    assert report.read_text().splitlines() == [
        "file,line,column,value,reason",
        f"{src},3,price,1.3x,is not a number",
    ]
    with TickStore(store) as s:
        assert s.read("X", "19700101", "trades")["qty"].tolist() == [3, 4]


def test_argument_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["csv", "x.csv", "--store", "s.h5"])
    assert e.value.code == 2
    _, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1
    argv = ["csv", str(tmp_path / "none.csv"), "--store", str(tmp_path / "s.h5"), "--symbol",
            "X", "--kind", "trades", "--mapping", "ts,px,qty", "--tick-size", "0.25",
            "--lot-size", "1"]  # fmt: skip
    assert main(argv) == 2
    _, err = capsys.readouterr()
    assert err.strip().endswith("none.csv: no such file; nothing imported")
    assert main(["ls", str(tmp_path / "none.h5")]) == 2


def test_interrupted_import_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    store = tmp_path / "s.h5"
    m = CsvMapping.parse("trades", "ts=time,px=price,qty=size")
    first = big_csv(tmp_path / "a.csv", 1000)
    import_csv([first], store, "X", m, tick_size="0.25", lot_size="1")
    before = digest(store)
    big = big_csv(tmp_path / "b.csv", 300_000, start_s=86_400)

    def stop(done: int, total: int, rows: int) -> None:
        if rows:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_csv([big], store, "Y", m, tick_size="0.25", lot_size="1", progress=stop)
    assert digest(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv", "s.h5"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_of_the_real_command(tmp_path: Path) -> None:
    store = tmp_path / "s.h5"
    files: list[Path] = []
    # Interrupted once it shows progress. On a quick machine (or a slow reader of its output)
    # the import can finish first, which proves nothing: then again with twice the data.
    for attempt in range(3):
        files += [
            big_csv(tmp_path / f"{i}.csv", 400_000, start_s=i * 86_400)
            for i in range(len(files), 6 << attempt)
        ]
        argv = [sys.executable, "-m", "engine.tickstore.cli", "csv", *map(str, files),
                "--store", str(store), "--symbol", "X", "--kind", "trades", "--mapping",
                "ts=time,px=price,qty=size", "--tick-size", "0.25", "--lot-size", "1"]  # fmt: skip
        # A shell that starts a job in the background (CI runners, `cmd &`) hands it SIGINT
        # ignored, and Python then installs no KeyboardInterrupt: give the child the default.
        child = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.PIPE, preexec_fn=_default_sigint)
        assert child.stderr is not None
        seen = b""
        deadline = time.monotonic() + 60
        while b"%" not in seen and time.monotonic() < deadline:
            seen += os.read(child.stderr.fileno(), 4096)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        if child.returncode == 0 and b"100.0%" in seen + err:
            store.unlink()  # finished before the signal arrived: not a test of Ctrl+C
            continue
        break
    assert child.returncode == 130, err
    assert b"interrupted; the store is unchanged" in err
    assert b"Traceback" not in err
    assert not store.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_qwconsole_import_subcommand_and_recover(tmp_path: Path) -> None:
    store = tmp_path / "s.h5"
    m = CsvMapping.parse("trades", "ts=time,px=price,qty=size")
    import_csv([big_csv(tmp_path / "a.csv", 10)], store, "X", m, tick_size="0.25", lot_size="1")
    code = "import sys; from app.cli import main; raise SystemExit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "import", "ls", str(store)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "X 19700101 tick=0.25 lot=1 trades=10"
    done = subprocess.run(
        [sys.executable, "-c", code, "import", "recover", str(store)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"{store}: recovered (1 instrument-days)")
    with TickStore(store) as s:
        assert s.read("X", "19700101", "trades").shape == (10,)


def test_a_slow_first_step_is_explained_and_a_quick_one_is_silent() -> None:
    """The parser's first-run compilation is announced only when it takes time."""
    import io

    from engine.tickstore.cli import notice_if_slow

    out = io.StringIO()
    with notice_if_slow("compiling the parser", after=0.05, stream=out):
        time.sleep(0.3)
    assert out.getvalue().startswith("compiling the parser… ")
    assert out.getvalue().endswith(" s\n")
    quiet = io.StringIO()
    with notice_if_slow("compiling the parser", after=0.5, stream=quiet):
        pass
    time.sleep(0.6)  # the timer was canceled: nothing comes later either
    assert quiet.getvalue() == ""
