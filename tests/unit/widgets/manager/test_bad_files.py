# SPDX-License-Identifier: MIT
"""Bad files opened in the Enterprise Manager: the file, the line and the reason, on screen.

A file that cannot be opened at all gets a warning box naming it; a file that opens but has
errors lists them (file:line, key, reason) in the editor's problems list, first error first.
The rows of ``docs/bad-input.md`` for the Manager are these cases (issue 16).
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QListWidget, QMessageBox

from engine.clock import TestClock
from engine.fix.edit.services import EditorServices
from widgets.manager.workspace import ManagerWorkspace

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[4]
DOC = ROOT / "docs" / "bad-input.md"
SPEC = Path("/work/shared/fix-spec/FIX44.xml")
FIX44 = SPEC if SPEC.exists() else ROOT / "resources" / "fix" / "FIX44.xml"
SESSIONS = ROOT / "resources" / "fix" / "sessions.cfg"
TABS = {"sessions": 0, "dictionaries": 1, "engine": 2}

ENGINE = """\
[engine]
id = "desk-1"

[simulator]
enabled = true
"""


def _cfg(change: Callable[[str], str]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        p = tmp / "sessions.cfg"
        p.write_text(change(SESSIONS.read_text()))
        return p

    return make


def _xml(change: Callable[[str], str]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        p = tmp / "FIX44.xml"
        p.write_text(change(FIX44.read_text()))
        return p

    return make


def _toml(text: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        p = tmp / "engine.toml"
        p.write_text(text)
        return p

    return make


def _first_key_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("SenderCompID="))


@dataclass(frozen=True)
class Opened:
    """One bad file opened in one of the Manager's editors."""

    id: str
    tab: str
    bad: str  # what is wrong, as the table shows it
    make: Callable[[Path], Path]
    message: str  # the box's text or the first problem, "{tmp}" for the folder
    boxed: bool  # refused with a box (else opened, the problem listed)


OPENED: list[Opened] = [
    Opened("cfg-no-equals", "sessions", "a line without '='",
           _cfg(lambda t: t.replace(_first_key_line(t), _first_key_line(t).replace("=", " "))),
           "sessions.cfg:{line}  '{key}' is not key=value, a [section] or a # comment (no '=')",
           False),
    Opened("cfg-typo", "sessions", "ResetOnLogout misspelt",
           _cfg(lambda t: t + "ResetOnLogut=Y\n"),
           "sessions.cfg:{last}  ResetOnLogut: unknown key; did you mean ResetOnLogout?", False),
    Opened("cfg-missing", "sessions", "no such file", lambda tmp: tmp / "nope.cfg",
           "[Errno 2] No such file or directory: '{tmp}/nope.cfg'", True),
    Opened("xml-truncated", "dictionaries", "FIX44.xml cut at 300,000 characters",
           _xml(lambda t: t[:300_000]), "{tmp}/FIX44.xml:6293: XML: unclosed token", True),
    Opened("xml-undefined", "dictionaries", "a message names an undefined field",
           _xml(lambda t: t.replace("<field name='ClOrdID' required='Y' />",
                                    "<field name='NoSuchField' required='Y' />", 1)),
           "{tmp}/FIX44.xml:259: <field name='NoSuchField'> in <message "
           "name='OrderCancelReject'>: field 'NoSuchField' is not defined in <fields>", True),
    Opened("toml-syntax", "engine", "engine TOML syntax error", _toml(ENGINE + "[risk\n"),
           "{tmp}/engine.toml:6: not valid TOML: Expected ']' at the end of a table "
           "declaration (at line 6, column 6)", False),
    Opened("toml-typo", "engine", "engine TOML key misspelt",
           _toml(ENGINE.replace("enabled", "enabeld")),
           "{tmp}/engine.toml:5: simulator.enabeld: unknown key (known here: demo_strategy, "
           "enabled, seed)",
           False),
]  # fmt: skip


def _expected(case: Opened, tmp: Path, path: Path) -> str:
    text = path.read_text() if path.exists() else ""
    lines = text.splitlines()
    bad = next((i for i, x in enumerate(lines) if x.startswith("SenderCompID ")), -1)
    return case.message.format(
        tmp=tmp, line=bad + 1, key=lines[bad] if bad >= 0 else "", last=len(lines)
    )


@pytest.fixture
def ws(qtbot, qapp: QApplication) -> ManagerWorkspace:  # type: ignore[no-untyped-def]
    services = EditorServices(TestClock(0), dt.UTC)
    w = ManagerWorkspace(services)
    w.ask_on_close = False
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitExposed(w)
    return w


def _shown(qtbot, ws: ManagerWorkspace, case: Opened, path: Path) -> str:  # type: ignore[no-untyped-def]
    ws.tabs.setCurrentIndex(TABS[case.tab])
    opened = ws.open_path(path)
    if case.boxed:
        assert not opened
        qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox)
        text = box.text()
        box.close()
        return text
    assert opened
    name = "engineProblems" if case.tab == "engine" else "problemsList"
    problems = ws.findChild(QListWidget, name)
    assert problems is not None
    qtbot.waitUntil(lambda: problems.count() > 0)
    return problems.item(0).text()


@pytest.mark.parametrize("case", OPENED, ids=[c.id for c in OPENED])
def test_bad_file_opened_in_the_manager_says_where_and_why(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, tmp_path: Path, case: Opened
) -> None:
    path = case.make(tmp_path)
    assert _shown(qtbot, ws, case, path) == _expected(case, tmp_path, path)


def test_the_docs_table_shows_every_manager_case(tmp_path: Path) -> None:
    doc = DOC.read_text(encoding="utf-8")
    for case in OPENED:
        path = case.make(tmp_path)
        line = _expected(case, tmp_path, path).replace(str(tmp_path), "<tmp>")
        assert f"`{line}`" in doc, case.id


def test_sample_files_are_real(tmp_path: Path) -> None:
    # the bad files start from the shipped session file and the QuickFIX dictionary
    assert "SenderCompID=" in SESSIONS.read_text()
    assert shutil.copy(FIX44, tmp_path / "x.xml")
