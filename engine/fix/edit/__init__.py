# SPDX-License-Identifier: MIT
"""The Qt-free editing layer of the FIX engine: the one part of ``engine.fix`` widgets may import.

The Manager workspace (``widgets/manager``) and the FIX inspector edit and explain FIX files
through these classes directly; import-linter allows ``widgets -> engine.fix.edit`` and forbids
every other module of ``engine.fix``. Import from the modules (this package re-exports nothing,
so that importing one editor does not load them all):

``engine.fix.edit.services``
    :class:`~engine.fix.edit.services.EditorServices` — what the app hands the Manager: opens
    the editors below, previews schedules, runs test logons and log scans, tells the time.
``engine.fix.edit.document``
    :class:`~engine.fix.edit.document.CfgDocument`, :class:`~engine.fix.edit.document.CfgLine`
    — a ``.cfg`` file as lines, written back byte for byte.
``engine.fix.edit.cfgeditor``
    :class:`~engine.fix.edit.cfgeditor.CfgEditor` (tolerant ``.cfg`` editing),
    :class:`~engine.fix.edit.cfgeditor.CfgProblem`, :class:`~engine.fix.edit.cfgeditor.Section`,
    and the typed :class:`~engine.fix.settings.SessionSettings` it produces.
``engine.fix.edit.keys``
    :data:`~engine.fix.edit.keys.KEY_GROUPS`, :class:`~engine.fix.edit.keys.KeyInfo`,
    :func:`~engine.fix.edit.keys.key_info` — how each key is edited.
``engine.fix.edit.preview``
    :func:`~engine.fix.edit.preview.schedule_preview`,
    :func:`~engine.fix.edit.preview.reset_explanation` — settings in plain words.
``engine.fix.edit.logon``
    :func:`~engine.fix.edit.logon.try_logon`, :class:`~engine.fix.edit.logon.LogonOutcome` — a
    test logon.
``engine.fix.edit.dicteditor``
    :class:`~engine.fix.edit.dicteditor.DictionaryEditor` (edits, diff, full and overlay saving,
    pasted-message checks), :class:`~engine.fix.edit.dicteditor.Node`,
    :class:`~engine.fix.edit.dicteditor.FieldCheck`, ``FieldDef``,
    :data:`~engine.fix.edit.dicteditor.FIELD_TYPES`.
``engine.fix.edit.logscan``
    :func:`~engine.fix.edit.logscan.scan_log`, :class:`~engine.fix.edit.logscan.LogScan`,
    :class:`~engine.fix.edit.logscan.UnknownTag` — tags of a FIX log a dictionary lacks.
``engine.fix.edit.describe``
    :class:`~engine.fix.edit.describe.FieldDescriber`,
    :class:`~engine.fix.edit.describe.FieldNode` — field names, value meanings and whole
    messages explained and checked, for the FIX inspector.

Every error these raise for bad input is a ``ValueError`` (``OSError`` for files) whose
message names the file, the line and the key or element.
"""
