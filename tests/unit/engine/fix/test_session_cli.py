# SPDX-License-Identifier: MIT
"""The FIX command line: argument handling and session building from a settings file."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.fix.application import Application
from engine.fix.cli import build_session, main
from engine.fix.settings import load_settings
from engine.fix.store import FileStore


def test_main_with_missing_cfg_returns_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["acceptor", "--cfg", str(tmp_path / "missing.cfg")]) == 2
    assert "missing.cfg" in capsys.readouterr().err


def test_main_without_command_exits_with_usage() -> None:
    with pytest.raises(SystemExit):
        main([])


def test_build_session_resolves_dictionary_next_to_cfg_and_uses_file_store(tmp_path: Path) -> None:
    cfg = tmp_path / "s.cfg"
    cfg.write_text(
        "[DEFAULT]\nConnectionType=acceptor\nSocketAcceptPort=5001\nSenderCompID=ME\n"
        f"FileStorePath={tmp_path / 'store'}\nStartTime=00:00:00\nEndTime=00:00:00\n"
        "[SESSION]\nBeginString=FIX.4.2\nTargetCompID=YOU\nDataDictionary=FIX42.xml\n"
    )
    (tmp_path / "FIX42.xml").write_bytes(
        (Path(__file__).resolve().parents[4] / "resources" / "fix" / "FIX42.xml").read_bytes()
    )
    (settings,) = load_settings(cfg).sessions
    session = build_session(settings, Application(), tmp_path)
    try:
        assert str(session.session_id) == "FIX.4.2:ME->YOU"
        assert session.config.data_dictionary == str(tmp_path / "FIX42.xml")
        assert isinstance(session.store, FileStore)
        assert session.schedule is not None
        assert (tmp_path / "store" / "FIX.4.2-ME-YOU.seqnums").exists()
    finally:
        session.close()
