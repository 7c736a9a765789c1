# SPDX-License-Identifier: MIT
"""The FIX hot path compiled to C with mypyc, and the import hook that loads it.

The modules of :data:`MODULES` (the FIX codec, messages, sessions, their state and stores) are
plain typed Python.
``python -m engine.native build`` (:mod:`engine.native.__main__`) compiles them with mypyc
(the mypy project's compiler of type-annotated Python to C extensions; it compiles mypy and
black) into ``build/native/``, next to a manifest of the sources' SHA-256. The same source
then runs 15–20 % less CPU per FIX message: attribute reads at fixed offsets, calls between
compiled functions without the interpreter's frames (``qwconsole bench fix`` prints which
form ran).

:func:`install` (called by ``engine/__init__.py``, before any module of the list is imported)
puts an import hook first on ``sys.meta_path`` that loads the compiled modules, only when
every source still has the hash it was compiled from, for this interpreter: a source edited
since the build runs interpreted, all modules of the list together (compiled modules call
each other's classes natively, so one interpreted module among compiled ones would hand them
objects of another class). ``QW_NATIVE=0`` in the environment runs them interpreted.

``status()`` says which form runs and why. The build needs a C compiler and the Python
headers; ``packaging/bootstrap.sh`` runs it (and installs both where missing), and the
engine runs interpreted, with the same results, where it could not.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: Where builds go: one directory per interpreter (its extension suffix).
BUILD_DIR = ROOT / "build" / "native"
#: The compiled modules, compiled as one group (calls between them stay native).
MODULES: tuple[str, ...] = (
    "engine.fix.message",
    "engine.fix.codec",
    "engine.fix.session",
    "engine.fix.state",
    "engine.fix.store",
)
#: The group's shared library (a top-level module the modules' stubs import).
GROUP = "qwconsole_native"
MANIFEST = "manifest.json"
#: ``QW_NATIVE=0``: run the modules interpreted even when a build is there.
ENV = "QW_NATIVE"

_status = "interpreted: engine.native.install() was not called"


def _suffix() -> str:
    # This interpreter's own extension suffix (.cpython-311-x86_64-linux-gnu.so).
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def build_dir() -> Path:
    """Return this interpreter's build directory."""
    tag = _suffix().strip(".").removesuffix(".so").replace(".", "-") or "so"
    return BUILD_DIR / tag


def _source(module: str, root: Path = ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _python() -> str:
    return f"{sys.implementation.cache_tag} {sys.version}"


def check(directory: Path, root: Path = ROOT) -> tuple[dict[str, Path], str]:
    """Return the compiled modules of the build in ``directory`` to load, and why.

    Nothing to load (an empty dict) when the build is missing, made by another interpreter,
    or made from sources that have changed since; the reason names the first such cause.
    """
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except FileNotFoundError:
        return {}, "interpreted: no native build (python -m engine.native build)"
    except (OSError, ValueError) as e:
        return {}, f"interpreted: unreadable {directory / MANIFEST} ({e})"
    try:
        return _check(manifest, directory, root)
    except (AttributeError, KeyError, TypeError) as e:  # a manifest not of the build's shape
        return {}, f"interpreted: {directory / MANIFEST} is not a native build's ({e!r})"


def _check(manifest: Any, directory: Path, root: Path) -> tuple[dict[str, Path], str]:
    if manifest.get("python") != _python():
        return {}, f"interpreted: the native build is for another Python ({manifest.get('python')})"
    files: dict[str, Path] = {}
    modules = manifest.get("modules", {})
    if sorted(modules) != sorted(MODULES):
        return {}, "interpreted: the native build has another module list (rebuild it)"
    for name, entry in modules.items():
        src = _source(name, root)
        try:
            if _digest(src) != entry["sha256"]:
                rel = src.relative_to(root)
                return {}, f"interpreted: {rel} changed since the native build (rebuild it)"
        except OSError:
            return {}, f"interpreted: {src} is not readable"
        files[name] = directory / entry["file"]
    files[GROUP + "__mypyc"] = directory / manifest["group_file"]
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        return {}, f"interpreted: {missing[0]} is missing (rebuild it)"
    return files, f"compiled: {len(MODULES)} modules from {directory}"


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules of one build before the path's finders do."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def install() -> str:
    """Load the compiled modules from now on, when the build is current; return ``status()``."""
    global _status
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return _status
    if os.environ.get(ENV, "1") == "0":
        _status = f"interpreted: {ENV}=0"
        return _status
    loaded = [m for m in MODULES if m in sys.modules]
    if loaded:
        _status = f"interpreted: {loaded[0]} was imported before engine.native.install()"
        return _status
    files, _status = check(build_dir())
    if files:
        sys.meta_path.insert(0, _Finder(files))
    return _status


def status() -> str:
    """Return which form :data:`MODULES` run in: ``compiled: ...`` or ``interpreted: why``."""
    return _status


def form() -> str:
    """Return ``"compiled with mypyc"`` or ``"interpreted"``, for benchmark headers."""
    return "compiled with mypyc" if _status.startswith("compiled") else "interpreted"


def is_compiled(module: ModuleType) -> bool:
    """Return True when ``module`` was loaded from a compiled extension."""
    spec = module.__spec__
    return spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
