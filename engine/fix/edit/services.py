# SPDX-License-Identifier: MIT
"""The services the Manager workspace is given: editors, previews, test logons, log scans.

``widgets/manager`` imports this package (``engine.fix.edit``) and nothing else of
``engine.fix``; the app hands the workspace an :class:`EditorServices`, whose clock and zone
tests replace.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from engine.clock import Clock, LiveClock
from engine.fix.dictionary import default_dictionary_path
from engine.fix.edit.cfgeditor import CfgEditor
from engine.fix.edit.dicteditor import FIELD_TYPES, DictionaryEditor
from engine.fix.edit.keys import KEY_GROUPS, KeyInfo, key_info
from engine.fix.edit.logon import LogonOutcome, try_logon
from engine.fix.edit.logscan import LogScan, scan_log
from engine.fix.edit.preview import reset_explanation, schedule_preview
from engine.fix.settings import DIALECTS, SessionSettings

__all__ = ["EditorServices"]


class EditorServices:
    """Engine-side services of the Manager workspace.

    Parameters
    ----------
    clock : Clock, optional
        Time source for schedule previews (default: the wall clock).
    local_zone : tzinfo, optional
        The user's zone in previews (default: the machine's).
    """

    def __init__(self, clock: Clock | None = None, local_zone: dt.tzinfo | None = None) -> None:
        self.clock = clock or LiveClock()
        self.local_zone = local_zone

    def key_groups(self) -> Sequence[tuple[str, Sequence[str]]]:
        """Return ``(group title, key names)`` covering every known key."""
        return KEY_GROUPS

    def key_info(self, name: str) -> KeyInfo | None:
        """Return how key ``name`` is edited, or None for an unknown key."""
        return key_info(name)

    def field_types(self) -> Sequence[str]:
        """Return the FIX field types a dictionary field may have."""
        return FIELD_TYPES

    def dialects(self) -> Mapping[str, str]:
        """Return the ``.cfg`` dialects a file may be written in: name -> display name."""
        return DIALECTS

    def open_cfg(self, path: str | Path) -> CfgEditor:
        """Open a ``.cfg`` file."""
        return CfgEditor.load(path)

    def new_cfg(self, text: str, source: str) -> CfgEditor:
        """Return an editor over ``text`` that saves to ``source``."""
        return CfgEditor(text, source)

    def schedule_preview(self, settings: SessionSettings, now_ns: int) -> list[str]:
        """Describe a session's schedule in plain words (``CfgEditor.session_settings``)."""
        return schedule_preview(settings, now_ns, self.local_zone)

    def reset_explanation(self, settings: SessionSettings) -> list[str]:
        """Say what the sequence-number settings will do."""
        return reset_explanation(settings)

    def test_logon(
        self, settings: SessionSettings, base_dir: Path, timeout_s: float
    ) -> LogonOutcome:
        """Connect, log on and log out on a private event loop (call it off the GUI thread)."""
        return asyncio.run(try_logon(settings, base_dir, timeout_s))

    def default_dictionary(self, version: str) -> str:
        """Return the path of the dictionary shipped for ``version`` (``"FIXT.1.1"`` …)."""
        return str(default_dictionary_path(version))

    def open_dictionary(self, path: str | Path) -> DictionaryEditor:
        """Open a QuickFIX XML dictionary."""
        return DictionaryEditor.load(path)

    def scan_log(
        self,
        path: str | Path,
        editor: DictionaryEditor,
        progress: Callable[[int], None],
        cancelled: Callable[[], bool],
    ) -> LogScan:
        """Scan a FIX log for tags the edited dictionary lacks (blocking: off the GUI thread)."""
        return scan_log(path, editor.dictionary(), progress=progress, cancelled=cancelled)

    def now_ns(self) -> int:
        """Return the current time."""
        return self.clock.now_ns()
