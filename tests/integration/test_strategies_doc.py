# SPDX-License-Identifier: MIT
"""Every example of ``docs/strategies.md`` runs, in order, in a fresh folder outside the project.

Blocks after ``<!-- file: NAME -->`` are written to ``NAME``; other ``python`` blocks run with
the interpreter, ``sh`` blocks with bash (the ``qwconsole`` of this environment first on the
PATH, Qt offscreen, state under the test's folder). The example port 5199 becomes a free one.
"""

import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "strategies.md"
BLOCK = re.compile(
    r"(?:<!-- file: (?P<file>[\w.-]+) -->\n)?"
    r"^(?P<indent> *)```(?P<lang>\w+)\n(?P<body>.*?)^(?P=indent)```",
    re.MULTILINE | re.DOTALL,
)
EXAMPLE_PORT = "5199"


def blocks() -> list[tuple[str | None, str, str]]:
    """Return (file name or None, language, code) of every fenced block, in order."""
    text = DOC.read_text(encoding="utf-8")
    return [(m["file"], m["lang"], textwrap.dedent(m["body"])) for m in BLOCK.finditer(text)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_doc_has_the_examples_it_promises() -> None:
    found = blocks()
    files = {f for f, _l, _c in found if f}
    assert {
        "tinybuy.py",
        "tinyquote.py",
        "sim.cfg",
        "qa-sessions.cfg",
        "qa.toml",
        "engine.toml",
    } <= files
    commands = "\n".join(c for f, lang, c in found if lang == "sh" and not f)
    for what in (
        "qwconsole backtest",
        "--fast",
        "qwconsole sim --cfg",
        "qwconsole engine --config",
        "qwconsole --strategy",
    ):
        assert what in commands
    assert sum(1 for f, lang, _c in found if lang == "python" and not f) >= 3


def test_every_example_runs(tmp_path: Path) -> None:
    port = str(free_port())
    env = dict(os.environ)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        QT_QPA_PLATFORM="offscreen",
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    env.pop("PYTHONPATH", None)  # the strategy's folder is found without it
    ran = 0
    for i, (name, lang, code) in enumerate(blocks()):
        code = code.replace(EXAMPLE_PORT, port)
        if name is not None:
            (tmp_path / name).write_text(code, encoding="utf-8")
            continue
        if lang == "python":
            script = tmp_path / f"example_{i}.py"
            script.write_text(code, encoding="utf-8")
            cmd = [sys.executable, str(script)]
        elif lang == "sh":
            cmd = ["bash", "-e", "-c", code]
        else:
            continue
        proc = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False
        )
        assert proc.returncode == 0, f"example {i} ({lang}) failed:\n{code}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        ran += 1
    assert ran >= 7
    # The QA run against `qwconsole sim` traded: the last summary line counts fills.
    summary = [ln for ln in (tmp_path / "qa.out").read_text().splitlines() if "fills" in ln]
    fills = re.search(r"fills\s+(\d+)", summary[-1])
    assert fills is not None, summary
    assert int(fills.group(1)) > 0, summary
    assert "ESZ6:+" in summary[-1] or "ESZ6:-" in summary[-1]
