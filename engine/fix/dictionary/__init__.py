# SPDX-License-Identifier: MIT
"""QuickFIX-format FIX data dictionaries: loading, lookup, overlays and saving.

One concept per module, as QuickFIX keeps ``DataDictionary`` apart from its parser:

* :mod:`~engine.fix.dictionary.spec` — the raw structure of a file (:class:`DictionarySpec`:
  messages, components and groups exactly as written, component references kept) and
  :class:`DictionaryError` (file, line, element, reason);
* :mod:`~engine.fix.dictionary.reader` — the XML reader (expat, with line numbers) and
  :func:`default_dictionary_path`, the dictionaries the project ships;
* :mod:`~engine.fix.dictionary.flat` — the flattened view the codec and the validator use:
  :class:`MessageDef` and :class:`GroupDef` with components expanded and effective required
  flags;
* :mod:`~engine.fix.dictionary.data_dictionary` — :class:`DataDictionary`, a loaded dictionary
  and its lookups (all dict hits);
* :mod:`~engine.fix.dictionary.writer` — a whole dictionary as XML (:func:`spec_to_xml`);
* :mod:`~engine.fix.dictionary.rewrite` — an edited dictionary written back into its own file,
  byte for byte where nothing changed (the Manager saves with it);
* :mod:`~engine.fix.dictionary.overlay` — :class:`Overlay`, partial dictionaries rooted at
  ``<fixoverlay>`` (``docs/fix-dictionary-overlay.md``): read, applied, diffed and written.

``engine.fix.dictionary`` is the import path of the public names below; the modules import each
other by their own names.
"""

from engine.fix.dictionary.data_dictionary import DataDictionary
from engine.fix.dictionary.flat import HEADER_KEY, TRAILER_KEY, FieldRef, GroupDef, MessageDef
from engine.fix.dictionary.overlay import Overlay, OverlayMember, OverlayMessage
from engine.fix.dictionary.reader import default_dictionary_path
from engine.fix.dictionary.spec import (
    APPL_VER_IDS,
    MULTI_VALUE_TYPES,
    ComponentDef,
    ComponentMember,
    DictionaryError,
    DictionarySpec,
    FieldDef,
    FieldMember,
    GroupMember,
    Member,
    MessageSpec,
)
from engine.fix.dictionary.writer import spec_to_xml

__all__ = [
    "APPL_VER_IDS",
    "HEADER_KEY",
    "MULTI_VALUE_TYPES",
    "TRAILER_KEY",
    "ComponentDef",
    "ComponentMember",
    "DataDictionary",
    "DictionaryError",
    "DictionarySpec",
    "FieldDef",
    "FieldMember",
    "FieldRef",
    "GroupDef",
    "GroupMember",
    "Member",
    "MessageDef",
    "MessageSpec",
    "Overlay",
    "OverlayMember",
    "OverlayMessage",
    "default_dictionary_path",
    "spec_to_xml",
]
