# SPDX-License-Identifier: MIT
"""Every ``python`` example of ``docs/fix-api.md`` runs, in order, each in a fresh folder.

Each block is a complete program, run with this interpreter as a child process (real sockets on
127.0.0.1, real files in the test's folder); it must exit 0, print no traceback and print what
it announces.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[4]
DOC = ROOT / "docs" / "fix-api.md"
BLOCK = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[str]:
    """Return the code of every fenced ``python`` block, in order."""
    text = DOC.read_text(encoding="utf-8")
    return [textwrap.dedent(m["body"]) for m in BLOCK.finditer(text) if m["lang"] == "python"]


def test_the_doc_covers_the_public_api() -> None:
    code = "\n".join(python_blocks())
    for name in (
        "SocketAcceptor",
        "SocketInitiator",
        "load_settings",
        "resend_app",
        "to_admin",
        "from_admin",
        "RejectLogon",
        "UnsupportedMessageType",
        "FileStore",
        "set_write_barrier",
        "annotate",
        "DataDictionary",
        "validate(",
        "send_template",
        "get_many(",
    ):
        assert name in code, f"no example uses {name}"
    assert len(python_blocks()) >= 6


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_example_runs(index: int, tmp_path: Path) -> None:
    code = python_blocks()[index]
    script = tmp_path / f"example_{index}.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"example {index} failed:\n{code}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    printed = re.findall(r'^\s*print\("([^"]+)"', code, re.MULTILINE)
    for text in printed:
        assert text in proc.stdout, f"example {index} did not print {text!r}:\n{proc.stdout}"
