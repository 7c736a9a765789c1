# SPDX-License-Identifier: MIT
"""Commit subjects of 72 characters at most, from the rule's date on (issue 23)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_commits", ROOT / "packaging/check_commits.py")
assert _spec is not None
assert _spec.loader is not None
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def _commit(repo: Path, subject: str, when: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    (repo / "f").write_text(subject, encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "f"], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "-m", subject + "\n\nbody"], check=True, env=env
    )


def test_long_subjects_since_the_rule_are_named(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, "x" * 90, "2026-12-01T10:00:00Z")  # before the rule: history stays
    _commit(tmp_path, "y" * 72, "2026-12-06T10:00:00Z")
    _commit(tmp_path, "z" * 73, "2026-12-06T11:00:00Z")
    found = check.long_subjects(tmp_path)
    assert len(found) == 1
    assert found[0].endswith("(73 characters): " + "z" * 73)
    done = subprocess.run(
        [sys.executable, str(ROOT / "packaging/check_commits.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "commit subject over 72 characters" in done.stdout


def test_outside_a_checkout_nothing_is_checked(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="git"):
        check.long_subjects(tmp_path)
    assert check.main([str(tmp_path)]) == 0


def test_this_repository_keeps_the_rule() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no commits to check")
    assert check.long_subjects(ROOT) == []
