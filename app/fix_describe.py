# SPDX-License-Identifier: MIT
"""Names and value meanings of FIX fields for the Monitor's FIX inspector.

The inspector lives in ``widgets/`` and may not import the FIX engine; the app gives it a
:class:`FieldDescriber`, which looks tags up in the shipped QuickFIX dictionaries (FIX 4.4 first,
then the newer and older versions, so custom and session-level tags are found too).
"""

import logging
import threading

from engine.fix.dictionary import DataDictionary, DictionaryError, default_dictionary_path

log = logging.getLogger(__name__)

#: Dictionaries consulted, in order, for a tag's name and enum descriptions.
VERSIONS = ("FIX.4.4", "FIX.5.0SP2", "FIXT.1.1", "FIX.4.2")


class FieldDescriber:
    """``(tag, value) -> (field name, meaning of the value)`` from the shipped dictionaries.

    The dictionaries (a few hundred ms to parse) load in a background thread started with the
    describer, so the GUI thread does not wait for them when the first message is inspected.
    """

    def __init__(self, versions: tuple[str, ...] = VERSIONS, *, preload: bool = True) -> None:
        self.versions = versions
        self._dds: list[DataDictionary] | None = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, bytes], tuple[str, str]] = {}
        if preload:
            threading.Thread(
                target=self._dictionaries, name="fix-dictionaries", daemon=True
            ).start()

    def _dictionaries(self) -> list[DataDictionary]:
        with self._lock:
            if self._dds is None:
                dds = []
                for version in self.versions:
                    try:
                        dds.append(DataDictionary.load(default_dictionary_path(version)))
                    except (DictionaryError, OSError, KeyError) as e:
                        log.warning(
                            "FIX dictionary %s unavailable to the inspector: %s", version, e
                        )
                self._dds = dds
            return self._dds

    def __call__(self, tag: int, value: bytes) -> tuple[str, str]:
        """Return the field name and the meaning of ``value`` (``""`` where unknown)."""
        key = (tag, value)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        name = meaning = ""
        text = value.decode("latin-1")
        for dd in self._dictionaries():
            field = dd.field(tag)
            if field is None:
                continue
            name = name or field.name
            meaning = field.enums.get(text, "")
            if meaning:
                break
        result = (name, humanize(meaning))
        if len(self._cache) < 100_000:
            self._cache[key] = result
        return result


def humanize(description: str) -> str:
    """Turn ``NEW_ORDER_SINGLE`` into ``New order single``; keep tokens like ``FIX50SP2``."""
    words = [w if any(c.isdigit() for c in w) else w.lower() for w in description.split("_") if w]
    if not words:
        return ""
    return " ".join([words[0][:1].upper() + words[0][1:], *words[1:]])
