# SPDX-License-Identifier: MIT
"""A user strategy file loaded from the console: Strategies -> Load strategy… on the demo.

The file is written outside the project (the TinyBuy of ``docs/strategies.md``); the dialog
is driven as a user would (file, class, id, symbols, a parameter, Load); the engine loads it,
it trades, and its declared parameters are editable in the Strategies panel. The screenshots
in docs/screenshots come from ``QWC_SCREENSHOTS=docs/screenshots``. A file that
fails to import comes back as one line naming the file, the line and the exception.
"""

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from app.controller import Controller
from app.main_window import MainWindow
from app.settings import AppSettings
from engine.commands import AddStrategy
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import StrategyState
from engine.warmup import warm_up
from tests.integration.test_strategies_doc import blocks
from widgets.monitor.load_strategy import LoadStrategyDialog, read_strategy_file
from widgets.monitor.workspace import MonitorWorkspace

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow]

WAIT_MS = 20_000


def shots(tmp_path: Path) -> Path:
    """Where the screenshots go: ``$QWC_SCREENSHOTS`` (``docs/screenshots`` for the docs), else
    the test's folder."""
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


def tinybuy_file(folder: Path) -> Path:
    """Write the guide's TinyBuy into ``folder``; return its path."""
    code = next(c for name, _lang, c in blocks() if name == "tinybuy.py")
    path = folder / "tinybuy_console.py"
    path.write_text(code, encoding="utf-8")
    return path


@pytest.fixture
def monitor(qtbot: object, tmp_path: Path) -> Iterator[MonitorWorkspace]:
    warm_up()
    demo = functools.partial(
        build_demo, journal_dir=tmp_path / "journal", store_dir=tmp_path / "fix"
    )
    controller = Controller(EmbeddedEngineClient(configure=demo, warm_up=warm_up))
    controller.start()
    window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    window.resize(1600, 1000)
    window.show()
    qtbot.waitExposed(window)  # type: ignore[attr-defined]
    yield window.monitor
    window.shutdown()


def wait(qtbot: object, pred: Callable[[], object], what: str) -> None:
    try:
        qtbot.waitUntil(lambda: bool(pred()), timeout=WAIT_MS)  # type: ignore[attr-defined]
    except AssertionError as e:
        raise AssertionError(f"timed out waiting for {what}") from e


def test_the_dialog_reads_classes_and_parameters_without_running_the_file(
    qtbot: object, tmp_path: Path
) -> None:
    path = tinybuy_file(tmp_path)
    found = read_strategy_file(path)
    assert [(c.name, c.params) for c in found] == [
        ("TinyBuy", (("qty_lots", "1"), ("spread_ticks", "1"), ("max_age_ms", "1000")))
    ]
    dialog = LoadStrategyDialog(["ESZ6", "NQZ6"], next_id=3)
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    dialog.set_file(str(path))
    dialog.set_symbols([])
    dialog.accept()
    assert dialog.command is None
    assert dialog.error_label.text() == "check at least one symbol"
    dialog.set_symbols(["NQZ6"])
    dialog.id_edit.setText("seven")
    dialog.accept()
    assert dialog.error_label.text() == "strategy id 'seven' is not a whole number"
    dialog.id_edit.setText("3000000000")
    dialog.set_parameter("qty_lots", "2")
    dialog.accept()
    assert dialog.command == AddStrategy(
        class_path=f"{path.resolve()}:TinyBuy",
        strategy_id=3_000_000_000,
        symbols=("NQZ6",),
        parameters=(("qty_lots", "2"), ("spread_ticks", "1"), ("max_age_ms", "1000")),
        autostart=True,
    )
    (tmp_path / "syntax.py").write_text("class A(:\n")
    dialog.set_file(str(tmp_path / "syntax.py"))
    assert dialog.error_label.text().startswith(f"{tmp_path / 'syntax.py'}, line 1: SyntaxError")


def test_a_strategy_file_loaded_from_the_console_runs(
    qtbot: object, monitor: MonitorWorkspace, tmp_path: Path
) -> None:
    ws = monitor
    sv = ws.strategies_view
    ws.strategies_dock.show()
    ws.strategies_dock.raise_()
    wait(qtbot, lambda: "ESZ6" in ws.ctx.formats.symbols() and sv.model.rowCount() > 0, "the demo")
    path = tinybuy_file(tmp_path)

    sv.buttons["load"].click()
    dialog = sv.load_dialog
    assert dialog is not None
    assert dialog.isVisible()
    dialog.set_file(str(path))
    assert dialog.class_combo.currentText() == "TinyBuy"
    dialog.id_edit.setText("7")
    dialog.set_symbols(["ESZ6"])
    dialog.set_parameter("max_age_ms", "500")
    out = shots(tmp_path)
    dialog.grab().save(str(out / "strategies-load-dialog.png"))
    load = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    qtbot.mouseClick(load, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert not dialog.isVisible()

    def tiny() -> object:
        return next((s for s in sv.model.records() if s.strategy_id == 7), None)

    wait(qtbot, lambda: (s := tiny()) and s.state is StrategyState.RUNNING, "TinyBuy running")
    assert sv.message.startswith("Done: strategy tiny buy (7) added")
    sv.select(7)
    assert sv.params_model.rowCount() == 3
    values = {
        sv.params_model.index(r, 0).data(): sv.params_model.index(r, 1).data()
        for r in range(sv.params_model.rowCount())
    }
    assert values == {"qty_lots": "1", "spread_ticks": "1", "max_age_ms": "500"}
    # An editable field like the market maker's: the engine takes the new value.
    assert sv.params_model.setData(sv.params_model.index(0, 1), "2") is False
    wait(qtbot, lambda: dict(tiny().parameters)["qty_lots"] == 2, "qty_lots = 2")  # type: ignore[attr-defined]
    wait(
        qtbot,
        lambda: any(o.strategy_id == 7 for o in ws.orders_view.all_model.records()),
        "TinyBuy's bids in the blotter",
    )
    ws.resizeDocks([ws.strategies_dock], [760], Qt.Orientation.Horizontal)
    ws.resizeDocks([ws.strategies_dock], [560], Qt.Orientation.Vertical)
    qtbot.wait(100)  # type: ignore[attr-defined]
    sv.grab().save(str(out / "strategies-loaded.png"))

    # A file that does not import: one line, the file and the line, nothing added.
    broken = tmp_path / "broken_console.py"
    broken.write_text("import logging\n\nx = 1 / 0\n")
    dialog = sv.open_load_dialog()
    dialog.set_file(str(broken))
    dialog.class_combo.setEditText("TinyBuy")
    dialog.id_edit.setText("8")
    dialog.set_symbols(["ESZ6"])
    dialog.accept()
    wait(qtbot, lambda: sv.message.startswith("Refused"), "the refusal")
    assert sv.message == (
        f"Refused: strategy {broken}:TinyBuy: {broken}, line 3: ZeroDivisionError: division by zero"
    )
    assert all(s.strategy_id != 8 for s in sv.model.records())
