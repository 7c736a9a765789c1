# SPDX-License-Identifier: MIT
"""User settings of the console: theme, workspace, window geometry and dock layouts.

Stored with ``QSettings`` in INI format at ``<config dir>/qwconsole.ini`` so a user can read
and edit it; unreadable values fall back to defaults with a warning, never an exception.
"""

import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.paths import config_dir
from app.theme import DEFAULT_THEME, THEMES

log = logging.getLogger(__name__)

#: Bumped when the meaning of stored layouts changes; older layouts are then ignored.
LAYOUT_VERSION = 1


class AppSettings:
    """Typed access to the console's persisted settings.

    Parameters
    ----------
    path : Path | None
        INI file; ``<config dir>/qwconsole.ini`` by default.
    read_only : bool
        Read the stored values but never write (``--smoke`` and ``--screenshot`` runs).
    """

    def __init__(self, path: Path | None = None, *, read_only: bool = False) -> None:
        self.path = path or config_dir() / "qwconsole.ini"
        self.read_only = read_only
        self._qs = QSettings(str(self.path), QSettings.Format.IniFormat)

    # ---------------------------------------------------------------- values
    @property
    def theme(self) -> str:
        """Return the theme name (``dark`` unless the user chose otherwise)."""
        value = str(self._qs.value("ui/theme", DEFAULT_THEME))
        if value not in THEMES:
            log.warning("%s: ui/theme=%r is not a theme; using %s", self.path, value, DEFAULT_THEME)
            return DEFAULT_THEME
        return value

    @theme.setter
    def theme(self, name: str) -> None:
        self._set("ui/theme", name)

    @property
    def workspace(self) -> str:
        """Return the key of the last shown workspace (``""`` if none was stored)."""
        return str(self._qs.value("ui/workspace", ""))

    @workspace.setter
    def workspace(self, key: str) -> None:
        self._set("ui/workspace", key)

    @property
    def sound(self) -> bool:
        """Return whether fills and rejects make a sound (off unless the user chose it)."""
        return str(self._qs.value("ui/sound", "false")).lower() in ("true", "1", "yes")

    @sound.setter
    def sound(self, on: bool) -> None:
        self._set("ui/sound", "true" if on else "false")

    @property
    def relays(self) -> list[str]:
        """Return the relays the Monitor watches (``relays/watch``): ``[name=]wss://host:port``.

        An entry may end in ``#AB:CD:…``, the certificate's SHA-256 fingerprint (otherwise the
        first one seen is pinned in ``known-relays.json``). The token is never stored here:
        see :attr:`relay_token_env` and :attr:`relay_token_file`.
        """
        value = self._qs.value("relays/watch", [])
        if isinstance(value, str):  # QSettings gives one value as a plain string
            value = [value] if value.strip() else []
        return [str(v).strip() for v in value if str(v).strip()] if isinstance(value, list) else []

    @relays.setter
    def relays(self, entries: list[str]) -> None:
        self._set("relays/watch", list(entries))

    @property
    def relay_token_env(self) -> str:
        """Return the environment variable holding the relays' token (``relays/token_env``)."""
        return str(self._qs.value("relays/token_env", "QWCONSOLE_RELAY_TOKEN")).strip()

    @property
    def relay_token_file(self) -> str:
        """Return the file holding the relays' token, or ``""`` (``relays/token_file``)."""
        return str(self._qs.value("relays/token_file", "")).strip()

    def recent(self, kind: str) -> list[str]:
        """Return the files of ``kind`` (``stores``, ``journals``) opened before, oldest first."""
        value = self._qs.value(f"recent/{kind}", [])
        if isinstance(value, str):  # QSettings gives one value as a plain string
            value = [value] if value else []
        return [str(v) for v in value] if isinstance(value, list) else []

    def remember(self, kind: str, path: str, keep: int = 8) -> None:
        """Add ``path`` to the files of ``kind`` to open again (the newest ``keep``)."""
        paths = [p for p in self.recent(kind) if p != path] + [path]
        self._set(f"recent/{kind}", paths[-keep:])

    def forget(self, kind: str, path: str) -> None:
        """Drop ``path`` from the files of ``kind`` to open again."""
        self._set(f"recent/{kind}", [p for p in self.recent(kind) if p != path])

    def geometry(self, name: str) -> QByteArray | None:
        """Return a stored ``saveGeometry``/``saveState`` blob, or ``None``."""
        if self._qs.value("layout/version", 0, type=int) != LAYOUT_VERSION:
            return None
        value = self._qs.value(f"layout/{name}")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_geometry(self, name: str, blob: QByteArray) -> None:
        """Store a ``saveGeometry``/``saveState`` blob under ``name``."""
        self._set("layout/version", LAYOUT_VERSION)
        self._set(f"layout/{name}", blob)

    def sync(self) -> None:
        """Write pending changes to disk; log (not raise) when that fails."""
        if self.read_only:
            return
        self._qs.sync()
        if self._qs.status() != QSettings.Status.NoError:
            log.error("cannot write settings to %s (%s)", self.path, self._qs.status().name)

    def _set(self, key: str, value: object) -> None:
        if not self.read_only:
            self._qs.setValue(key, value)
