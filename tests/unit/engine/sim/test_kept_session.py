# SPDX-License-Identifier: MIT
"""A restarted simulator goes on with the OUCH session it kept (across midnight too)."""

import os
from pathlib import Path

from engine.sim.ouch_app import kept_ouch_session

ACCOUNTS = [("QWC1", "qwdemo")]


def _kept(path: Path, mtime: float) -> None:
    path.write_bytes(b"")
    os.utime(path, (mtime, mtime))


def test_the_newest_session_of_the_accounts_is_kept(tmp_path: Path) -> None:
    assert kept_ouch_session(None, ACCOUNTS) is None
    assert kept_ouch_session(tmp_path / "none yet", ACCOUNTS) is None
    assert kept_ouch_session(tmp_path, ACCOUNTS) is None  # an empty store: today's session
    _kept(tmp_path / "ouch-QWC1-20261203.soupseq", 1_000)
    _kept(tmp_path / "ouch-QWC1-20261204.soupseq", 2_000)  # served until 23:59:59 ...
    _kept(tmp_path / "ouch-OTHER-20261206.soupseq", 3_000)  # another account's
    _kept(tmp_path / "ouch-QWC1.ouchstate", 4_000)  # the engine's side, not a session
    _kept(tmp_path / "FIX.4.4-QWSIM-QWCONSOLE.body", 5_000)
    # ... and restarted after midnight: the same session, whose messages a client may miss.
    assert kept_ouch_session(tmp_path, ACCOUNTS) == "20261204"
    assert kept_ouch_session(tmp_path, [("qwc1", "x")]) == "20261204"  # users: any case
    assert kept_ouch_session(tmp_path, [("OTHER", "x")]) == "20261206"
