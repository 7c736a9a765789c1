# SPDX-License-Identifier: MIT
"""Check the subjects of the project's commits: 72 characters at most (issue 23).

A commit's first line is what ``git log --oneline``, GitHub and every review tool show; the
detail goes into the body. Commits made before the rule (:data:`RULE_FROM`, UTC) are not
checked: history is not rewritten. Run by ``packaging/bootstrap.sh test``; outside a git
checkout (an unpacked archive) there is nothing to check and it says so.

Usage: ``python packaging/check_commits.py [REPO]``; exit 1 with one line per long subject.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: Subjects longer than this are refused.
MAX_SUBJECT = 72
#: Commits from this time on (commit date, UTC, ISO 8601) are checked.
RULE_FROM = "2026-12-05T09:12:00Z"


def long_subjects(repo: Path, since: str = RULE_FROM, limit: int = MAX_SUBJECT) -> list[str]:
    """Return ``"<hash> (<n> characters): <subject>"`` for every commit since ``since`` whose
    subject is longer than ``limit``; raise ``OSError`` when ``repo`` is not a git checkout."""
    done = subprocess.run(
        ["git", "-C", str(repo), "log", f"--since={since}", "--format=%h%x00%s"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise OSError(done.stderr.strip() or f"{repo}: not a git checkout")
    out = []
    for line in done.stdout.splitlines():
        sha, _, subject = line.partition("\0")
        if len(subject) > limit:
            out.append(f"{sha} ({len(subject)} characters): {subject}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the long subjects; return 1 if there are any."""
    args = sys.argv[1:] if argv is None else argv
    repo = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    try:
        found = long_subjects(repo)
    except OSError as e:
        print(f"commit subjects: not checked ({e})")
        return 0
    for line in found:
        print(f"commit subject over {MAX_SUBJECT} characters: {line}")
    if not found:
        print(f"commit subjects: every one since {RULE_FROM} is {MAX_SUBJECT} characters or less")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
