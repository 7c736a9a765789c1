# SPDX-License-Identifier: MIT
"""QuickFIX-style session settings (``.cfg``): lossless reading and writing, typed sessions.

A settings file has a ``[DEFAULT]`` section whose keys every ``[SESSION]`` inherits, and one
``[SESSION]`` section per session::

    # comment
    [DEFAULT]
    ConnectionType=initiator
    HeartBtInt=30

    [SESSION]
    BeginString=FIX.4.4
    SenderCompID=ME
    TargetCompID=THEM

Two layers:

* :class:`engine.fix.edit.document.CfgDocument` — the lossless document: every line with its
  own line ending. An unchanged document writes back byte for byte;
  :meth:`~engine.fix.edit.document.CfgDocument.set` rewrites only the line of that key (keeping
  its spelling, spacing and line ending).
* :class:`SettingsFile` (from :func:`load_settings` / :func:`parse_settings`) — the document
  plus ``.default`` (raw ``[DEFAULT]`` values), ``.sessions`` (one frozen
  :class:`SessionSettings` per ``[SESSION]``, inheritance resolved, values typed and checked)
  and ``.warnings`` (unknown keys and other tolerable oddities; QuickFIX accepts custom keys).

Errors raise :class:`SettingsError`, whose ``problems`` each name the file, the line, the key and
the reason (``HeartBtInt=abc``, a port out of range, ``StartTime=25:00``, an unknown BeginString,
FIXT.1.1 without TransportDataDictionary/AppDataDictionary/DefaultApplVerID (DataDictionary
is ignored there, with a warning, as QuickFIX ignores it), an initiator without
SocketConnectHost, …).

One concept per module:

* :mod:`~engine.fix.settings.model` — :class:`SessionSettings`, the typed settings of one
  session (what code builds and :class:`engine.fix.session.FixSession` runs with);
* :mod:`~engine.fix.settings.keys` — the key table :data:`KEYS` (every key of QuickFIX C++
  1.16's ``SessionSettings.h`` and the QuickFIX/J and /Go extensions users ask for; see
  ``docs/fix-settings.md``) and :data:`BEGIN_STRINGS`;
* :mod:`~engine.fix.settings.values` — :class:`TimeOfDay` and the converters of raw values;
* :mod:`~engine.fix.settings.dialects` — which engine a file is written for;
* :mod:`~engine.fix.settings.settings_file` — :class:`SettingsFile`: the file read, sessions
  built with the cross-key rules, edits kept in sync;
* :mod:`~engine.fix.settings.problems` — :class:`SettingsProblem`, :class:`SettingsError`.

``engine.fix.settings`` is the import path of the public names below; the modules import each
other by their own names.
"""

from engine.fix.application import SessionID
from engine.fix.settings.dialects import DIALECT_COMMENT, DIALECTS, dialect_of
from engine.fix.settings.keys import BEGIN_STRINGS, KEYS, KeySpec
from engine.fix.settings.model import SessionSettings
from engine.fix.settings.problems import SettingsError, SettingsProblem
from engine.fix.settings.settings_file import SettingsFile, load_settings, parse_settings
from engine.fix.settings.values import TimeOfDay

__all__ = [
    "BEGIN_STRINGS",
    "DIALECTS",
    "DIALECT_COMMENT",
    "KEYS",
    "KeySpec",
    "SessionID",
    "SessionSettings",
    "SettingsError",
    "SettingsFile",
    "SettingsProblem",
    "TimeOfDay",
    "dialect_of",
    "load_settings",
    "parse_settings",
]
