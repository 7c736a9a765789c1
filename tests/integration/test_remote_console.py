# SPDX-License-Identifier: MIT
"""The console with two remote engines: combined views, the selector, the connect dialog.

Both engines run the demo (simulated exchange, market maker) on their own threads behind real
remote servers on 127.0.0.1; the console attaches to them through ``MultiEngineClient``.
Screenshots go to ``$QWC_SCREENSHOTS`` when set (``docs/screenshots`` for the docs).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import QApplication, QMenu

from app.controller import Controller
from app.engines import EngineConnections
from app.main_window import MainWindow
from app.multi_client import ID_STRIDE, MultiEngineClient
from app.settings import AppSettings
from app.theme import apply_theme, load_theme
from engine.client import ClientState
from engine.commands import CancelOrder, CommandAck, Ping
from engine.demo import build_demo
from engine.events import OrderChanged, PositionChanged
from engine.remote.client import Backoff, RemoteEngineClient
from engine.remote.tls import PinStore
from tests.unit.engine.remote.conftest import ServedEngine
from widgets.connect_dialog import ConnectDialog

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow]


def _out(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def two_engines(tmp_path: Path) -> Iterator[list[ServedEngine]]:
    engines = []
    for name, seed in (("ny4-1", 7), ("ld4-2", 11)):
        (tmp_path / name).mkdir()
        s = ServedEngine(
            tmp_path / name,
            tls=True,
            engine_id=name,
            configure=functools.partial(build_demo, seed=seed, transport="inprocess"),
        )
        s.start()
        engines.append(s)
    yield engines
    for s in engines:
        s.stop()


def _pump(qtbot: object, seconds: float) -> None:
    qtbot.wait(int(seconds * 1000))  # type: ignore[attr-defined]


def test_two_engines_combined_with_selector(
    qtbot: object,
    qapp: QApplication,
    tmp_path: Path,
    two_engines: list[ServedEngine],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QWCONSOLE_CONFIG_DIR", str(tmp_path / "console"))
    pins = PinStore(tmp_path / "console" / "known-engines.json")
    clients = []
    for s in two_engines:
        assert s.server is not None
        c = RemoteEngineClient(
            "127.0.0.1",
            s.server.port,
            s.token("alice", "trader"),
            tls=True,
            pins=pins,
            name=s.engine_id,
            backoff=Backoff(0.1, 0.5),
        )
        c.start()
        clients.append(c)
    multi = MultiEngineClient(clients)
    controller = Controller(multi)
    window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini", read_only=True))
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    window.resize(1500, 900)
    window.show()
    seen: list[object] = []
    controller.bridge.events_received.connect(lambda b: seen.extend(r.event for r in b))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        _pump(qtbot, 0.2)
        syms = {e.symbol for e in seen if isinstance(e, PositionChanged)}
        if any(s.startswith("ld4-2:") for s in syms) and any(":" not in s for s in syms):
            break
    engines: EngineConnections = window.engines
    engines.refresh()
    assert "2 engines: running" in window.status.engine_label.text()
    combo = engines.selector.combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["ny4-1", "ld4-2", "All engines"]
    labels = [lbl.text() for lbl in engines.selector._labels]
    assert labels == ["● ny4-1  connected", "● ld4-2  connected"]
    # Ids of the second engine are qualified; a cancel on one goes to that engine.
    second = [e for e in seen if isinstance(e, OrderChanged) and e.order.order_id >= ID_STRIDE]
    first = [e for e in seen if isinstance(e, OrderChanged) and e.order.order_id < ID_STRIDE]
    assert second, "no order of the second engine arrived"
    assert first, "no order of the first engine arrived"
    assert all(e.order.symbol.startswith("ld4-2:") for e in second)
    assert all(e.order.client_order_id.startswith("ld4-2:") for e in second)
    assert not any(e.order.client_order_id.startswith("ld4-2:") for e in first)
    res = multi.send(CancelOrder(order_id=second[-1].order.order_id)).result(5)
    assert res.command == CancelOrder(order_id=second[-1].order.order_id)
    combo.setCurrentIndex(2)
    assert multi.selected == -1
    ping = multi.send(Ping(payload="x")).result(5)
    assert isinstance(ping, CommandAck)
    assert "ny4-1: x" in ping.detail
    assert "ld4-2: x" in ping.detail
    combo.setCurrentIndex(0)
    _pump(qtbot, 0.5)
    window.grab().save(str(_out(tmp_path) / "connect-two-engines.png"))
    # One engine goes away: its link shows disconnected, the other stays up.
    two_engines[1].stop()
    deadline = time.monotonic() + 10
    while clients[1].state is ClientState.CONNECTED and time.monotonic() < deadline:
        _pump(qtbot, 0.1)
    engines.refresh()
    labels = [lbl.text() for lbl in engines.selector._labels]
    assert labels[0] == "● ny4-1  connected"
    assert labels[1] == "● ld4-2  disconnected"
    assert engines.selector._labels[1].property("state") == "bad"
    assert "retrying in" in clients[1].last_error
    window.engines.selector.grab().save(str(_out(tmp_path) / "connect-selector-disconnected.png"))
    window.shutdown()


def test_connect_dialog_validates_and_shows_pin(
    qtbot: object, qapp: QApplication, tmp_path: Path
) -> None:
    pinned = {
        "10.0.4.21:7341": "3F:FE:6D:AF:15:6A:65:91:9B:EF:CD:AA:9D:0E:2C:27:A5:8F:3F:08:"
        "3D:51:91:33:C2:03:EE:27:2A:93:AE:06"
    }
    palette, sheet = QPalette(qapp.palette()), qapp.styleSheet()
    apply_theme(qapp, load_theme("dark"))
    dialog = ConnectDialog(
        pinned=lambda h, p: pinned.get(f"{h}:{p}"),
        taken=lambda n: n == "ny4-1",
        profiles=[("ny4-2", "10.0.4.21", 7341, True), ("lab", "127.0.0.1", 7400, False)],
    )
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    dialog.show()
    assert not dialog.ok_button.isEnabled()  # no token yet
    assert "Token: paste" in dialog.problem.text()
    dialog.token.setText("not-a-token")
    assert "qw1.<id>.<secret>" in dialog.problem.text()
    dialog.name.setText("ny4-1")
    assert "already attached" in dialog.problem.text()
    dialog.recent.setCurrentIndex(1)  # a remembered engine fills the form
    assert (dialog.host.text(), dialog.port.value(), dialog.name.text()) == (
        "10.0.4.21",
        7341,
        "ny4-2",
    )
    dialog.token.setText("qw1.97d7c77daa7a.ZYtAQfrg3hO7PzKFENRFHWpYFhZNYnDtcyzHpMW2gOY")
    assert dialog.ok_button.isEnabled()
    assert "Certificate pinned for 10.0.4.21:7341" in dialog.trust.text()
    assert "3F:FE:6D" in dialog.trust.text()
    dialog.grab().save(str(_out(tmp_path) / "connect-dialog.png"))
    dialog.tls.setChecked(False)
    assert "TLS: engines on other hosts" in dialog.problem.text()
    assert not dialog.ok_button.isEnabled()
    dialog.tls.setChecked(True)
    got: list[object] = []
    dialog.connect_requested.connect(got.append)
    dialog.ok_button.click()
    (req,) = got
    assert req.host == "10.0.4.21"  # type: ignore[attr-defined]
    assert req.tls  # type: ignore[attr-defined]
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)


def test_engine_menu_connects_a_remote_engine_without_blocking(
    qtbot: object, qapp: QApplication, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QWCONSOLE_CONFIG_DIR", str(tmp_path / "console"))
    (tmp_path / "far").mkdir()
    far = ServedEngine(tmp_path / "far", tls=True, engine_id="far")
    far.start()
    token = far.token("bob", "viewer")
    (tmp_path / "near").mkdir()
    near = ServedEngine(tmp_path / "near", engine_id="near")
    near.start()
    try:
        assert near.server is not None
        assert far.server is not None
        first = RemoteEngineClient(
            "127.0.0.1", near.server.port, near.token("a", "admin"), tls=False, name="near"
        )
        first.start()
        controller = Controller(MultiEngineClient([first]))
        window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini", read_only=True))
        qtbot.addWidget(window)  # type: ignore[attr-defined]
        messages: list[str] = []
        window.engines.message.connect(messages.append)
        action = window.findChild(QAction, "action_connect_engine")
        assert action is not None
        assert action.isEnabled()
        action.trigger()
        dialog = window.engines.dialog
        assert dialog is not None
        dialog.recent.setCurrentIndex(0)
        dialog.host.setText("127.0.0.1")
        dialog.port.setValue(far.server.port)
        dialog.name.setText("far")
        dialog.token.setText(token)
        assert "First connection" in dialog.trust.text()
        t0 = time.perf_counter()
        dialog.ok_button.click()
        assert time.perf_counter() - t0 < 0.2  # the link comes up in the background
        multi = controller.client
        assert isinstance(multi, MultiEngineClient)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            _pump(qtbot, 0.1)
            if all(m.client.state is ClientState.CONNECTED for m in multi.members()):
                break
        assert [m.client.name for m in multi.members()] == ["near", "far"]
        assert multi.state is ClientState.CONNECTED
        window.engines.refresh()
        assert [lbl.text() for lbl in window.engines.selector._labels] == [
            "● near  connected",
            "● far  connected",
        ]
        # Pinned on first use, remembered without the token.
        pins = (tmp_path / "console" / "known-engines.json").read_text()
        assert far.fingerprint in pins
        remembered = (tmp_path / "console" / "engines.json").read_text()
        assert '"far"' in remembered
        assert token not in remembered
        # Detach it again from the Engine menu: the link closes off the GUI thread, the
        # engine runs on, the selector drops it.
        menu = window.findChild(QMenu, "menu_detach_engine")
        assert menu is not None
        menu.aboutToShow.emit()
        assert [a.text() for a in menu.actions()] == ["far"]  # the first engine stays
        far_client = multi.members()[1].client
        t0 = time.perf_counter()
        assert window.confirm_detach("far", ask=False)
        assert time.perf_counter() - t0 < 0.2
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(multi.members()) > 1:
            _pump(qtbot, 0.05)
        _pump(qtbot, 0.1)
        assert [m.client.name for m in multi.members()] == ["near"]
        assert far_client.state is not ClientState.CONNECTED
        assert [lbl.text() for lbl in window.engines.selector._labels] == ["● near  connected"]
        assert "far: detached" in window.statusBar().currentMessage() or any(
            "far: detached" in m for m in messages
        )
        assert far.server.consoles == 0  # the console left; the engine itself runs on
        menu.aboutToShow.emit()
        assert [a.isEnabled() for a in menu.actions()] == [False]  # "No remote engine attached"
        assert not window.confirm_detach("near", ask=False)  # the first engine cannot go
        window.shutdown()
    finally:
        far.stop()
        near.stop()
