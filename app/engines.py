# SPDX-License-Identifier: MIT
"""The console's remote-engine management: the connect dialog, the selector, link states.

:class:`EngineConnections` lives in the main window. When the console's client is a
:class:`app.multi_client.MultiEngineClient` it opens the connect dialog
(:class:`widgets.connect_dialog.ConnectDialog`), attaches a new
:class:`engine.remote.client.RemoteEngineClient` for each request (connecting in its own thread:
the GUI never waits for the network), and keeps the engine selector, in the menu bar's corner,
in step with every engine's link state twice a second.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from typing import TYPE_CHECKING, TypeGuard

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QMainWindow

from app.multi_client import MultiEngineClient
from engine.client import ClientState, EngineClient, EngineStartError
from widgets.connect_dialog import ConnectDialog, ConnectRequest, EngineLink, EngineSelector
from widgets.relay import thread_relay

if TYPE_CHECKING:
    from engine.remote.client import RemoteEngineClient

log = logging.getLogger(__name__)


def _is_remote(client: EngineClient) -> TypeGuard[RemoteEngineClient]:
    """Return whether ``client`` is a remote engine's, without importing the remote stack.

    The remote client (websockets, msgspec: about 50 ms) is imported when the first remote
    engine is attached; until then no client can be one.
    """
    module = sys.modules.get("engine.remote.client")
    cls = getattr(module, "RemoteEngineClient", None)
    return cls is not None and isinstance(client, cls)


class EngineConnections(QObject):
    """Attach remote engines to the console and show which are connected.

    Signals
    -------
    message(str)
        An outcome for the status bar ("ny4-1: connected as alice (trader)").
    """

    message = Signal(str)

    def __init__(self, window: QMainWindow, client: EngineClient) -> None:
        super().__init__(window)
        self.window = window
        self.multi = client if isinstance(client, MultiEngineClient) else None
        self.selector = EngineSelector()
        # In the menu bar's free corner: no vertical space is taken from the workspaces.
        window.menuBar().setCornerWidget(self.selector, Qt.Corner.TopRightCorner)
        self.selector.setVisible(False)
        self.selector.selection_changed.connect(self._on_selection)
        self._states: dict[str, ClientState] = {}
        self.dialog: ConnectDialog | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(500)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        self.refresh()

    @property
    def enabled(self) -> bool:
        """Return whether engines can be attached (the console runs a multi-engine client)."""
        return self.multi is not None

    def show_connect_dialog(self) -> ConnectDialog | None:
        """Open the connect dialog (non-blocking) and return it."""
        if self.multi is None:
            self.message.emit(
                "This console runs a single engine; start it normally to attach remote engines"
            )
            return None
        multi = self.multi
        from app.remote_client import load_profiles, pin_store

        store = pin_store()
        profiles = [(p.name, p.host, p.port, p.tls) for p in load_profiles()]
        dialog = ConnectDialog(
            pinned=lambda h, p: store.get(f"{h}:{p}"),
            taken=lambda n: any(m.client.name == n for m in multi.members()),
            profiles=profiles,
            parent=self.window,
        )
        dialog.connect_requested.connect(self.connect_engine)
        dialog.open()
        self.dialog = dialog
        return dialog

    def connect_engine(self, request: ConnectRequest) -> RemoteEngineClient | None:
        """Attach the engine of ``request``; the link comes up in the background."""
        if self.multi is None:
            return None
        from app.remote_client import EngineProfile, open_remote, remember

        profile = EngineProfile(request.name, request.host, request.port, request.tls)
        client = open_remote(profile, request.token)
        try:
            self.multi.attach(client)
        except EngineStartError as e:
            self.message.emit(str(e))
            return None
        client.start(wait=False)
        if request.remember:
            remember(profile)
        self.message.emit(f"Connecting to {profile.name} ({profile.endpoint})…")
        self.refresh()
        return client

    def detachable(self) -> list[str]:
        """Return the names of the engines that can be detached (all but the first)."""
        if self.multi is None:
            return []
        return [m.client.name for m in self.multi.members() if m.index > 0]

    def detach_engine(self, name: str) -> bool:
        """Stop following engine ``name`` (its link closes in the background; it runs on).

        Its orders and messages stay in the views as history. Return whether it was attached.
        """
        multi = self.multi
        if multi is None or name not in self.detachable():
            return False
        relay, me = thread_relay(), weakref.ref(self)

        def close() -> None:  # closing waits for the link's thread: not on the GUI thread
            done = multi.detach(name)
            relay.post(me, "_detached", name, done)

        threading.Thread(target=close, name=f"detach-{name}", daemon=True).start()
        self.message.emit(f"Detaching {name}…")
        return True

    def _detached(self, name: str, done: bool) -> None:
        self._states.pop(name, None)
        self.message.emit(f"{name}: detached" if done else f"{name} was not attached")
        self.refresh()

    def refresh(self) -> None:
        """Show every engine's link state; report changes in the status bar."""
        if self.multi is None:
            return
        links = []
        for m in self.multi.members():
            c = m.client
            detail = c.last_error
            if _is_remote(c) and c.state is ClientState.CONNECTED:
                detail = f"{c.endpoint}: logged in as {c.user} ({c.role})"
            links.append(EngineLink(m.index, c.name, c.state, detail))
            before = self._states.get(c.name)
            if before is not None and before is not c.state:
                word = c.state.name.lower()
                if c.state is ClientState.CONNECTING and not _is_remote(c):
                    word = "starting"  # an engine in this process is started, not reached
                text = f"{c.name}: {word}"
                self.message.emit(f"{text} — {detail}" if detail else text)
            self._states[c.name] = c.state
        self.selector.set_links(links)
        # One embedded engine needs no selector; any remote engine or a second one does.
        members = self.multi.members()
        show = len(members) > 1 or any(_is_remote(m.client) for m in members)
        if show != self.selector.isVisible():
            self.selector.setVisible(show)
            self.window.menuBar().adjustSize()

    def _on_selection(self, index: int) -> None:
        if self.multi is not None:
            self.multi.selected = index
