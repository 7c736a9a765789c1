# SPDX-License-Identifier: MIT
"""The import contracts of pyproject.toml cover every module, including the next one written.

import-linter has no allow-list contract, so "widgets import only these engine modules" is a
``forbidden`` contract whose list is the complement of :data:`ALLOWED`, and the Analyzer's
Qt-free contract names its data modules one by one. Both lists go stale silently when a module
is added; these tests walk ``engine/`` and ``analyzer/`` and fail until the new module is put on
one side.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The engine modules widgets may import (with their submodules). Everything else of engine/ is
#: in the forbidden list of the allow-list contract.
ALLOWED = frozenset({
    "engine.types",        # dtypes and integer constants
    "engine.enums",        # IntEnum mirrors
    "engine.events",       # frozen facts out of the engine
    "engine.commands",     # frozen requests into it
    "engine.client",       # the one interface to an engine, embedded or remote
    "engine.config",       # the engine's configuration file and its value types (Manager)
    "engine.fix.edit",     # the FIX editing layer (Manager, FIX inspector)
    "engine.venues.seen",  # a venue message's fields as shown (FIX inspector)
})  # fmt: skip

ALLOW_LIST = "Widgets import only the engine's public modules (an allow-list)"
ANALYZER = "The Analyzer's data modules are Qt-free (only analyzer.views draws)"


def modules(package: str) -> set[str]:
    """Return the dotted name of every module and package under ``ROOT / package``."""
    out = set()
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def contract(name: str) -> dict[str, Any]:
    """Return the import-linter contract called ``name`` from pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for c in config["tool"]["importlinter"]["contracts"]:
        if c["name"] == name:
            return dict(c)
    raise AssertionError(f"no import contract named {name!r} in pyproject.toml")


def within(module: str, packages: frozenset[str] | set[str]) -> bool:
    """Return whether ``module`` is one of ``packages`` or inside one of them."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def parents(names: frozenset[str]) -> set[str]:
    """Return the packages above ``names`` (``engine``, ``engine.fix`` …)."""
    return {n.rsplit(".", k)[0] for n in names for k in range(1, n.count(".") + 1)}


def engine_imports(path: Path) -> list[str]:
    """Return the modules of ``engine`` that the file at ``path`` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return [m for m in found if m == "engine" or m.startswith("engine.")]


# ----------------------------------------------------------------------------- widgets


def test_every_engine_module_is_allowed_or_forbidden_to_widgets() -> None:
    c = contract(ALLOW_LIST)
    assert c["source_modules"] == ["widgets"]
    forbidden = set(c["forbidden_modules"])
    above = parents(ALLOWED)
    loose = sorted(
        m
        for m in modules("engine")
        if not within(m, ALLOWED) and not within(m, forbidden) and m not in above
    )
    assert not loose, (
        f"engine modules on neither list: {loose}. Add each to forbidden_modules of the "
        f"contract {ALLOW_LIST!r} in pyproject.toml, or (a public module widgets need) to "
        "ALLOWED here."
    )


def test_no_engine_module_is_both_allowed_and_forbidden_to_widgets() -> None:
    forbidden = set(contract(ALLOW_LIST)["forbidden_modules"])
    both = sorted(m for m in modules("engine") if within(m, ALLOWED) and within(m, forbidden))
    assert not both
    # A forbidden package containing an allowed module would forbid it too.
    assert not [f for f in forbidden if any(a.startswith(f + ".") for a in ALLOWED)]


def test_allowed_and_forbidden_modules_exist() -> None:
    present = modules("engine")
    assert not sorted(ALLOWED - present)
    assert not sorted(set(contract(ALLOW_LIST)["forbidden_modules"]) - present)


@pytest.mark.parametrize("package", sorted(parents(ALLOWED)))
def test_packages_above_allowed_modules_import_no_engine_code(package: str) -> None:
    # Importing engine.fix.edit runs engine/fix/__init__.py, so those packages are on neither
    # list; that is safe only while they import nothing.
    # engine/__init__.py imports engine.native (the compiled FIX modules' import hook, which
    # must be in place before any of them is imported); it imports the standard library only.
    init = ROOT / package.replace(".", "/") / "__init__.py"
    allowed = ["engine.native"] if package == "engine" else []
    assert engine_imports(init) == allowed
    assert engine_imports(ROOT / "engine" / "native" / "__init__.py") == []


def test_the_allow_list_contract_checks_direct_imports_only() -> None:
    # engine.fix.edit runs FIX sessions for a test logon; the allowed modules' own imports are
    # theirs. The machinery stays out even indirectly by the next contract.
    assert contract(ALLOW_LIST)["allow_indirect_imports"] is True
    deep = contract("Widgets never reach the engine's machinery, even indirectly")
    assert "allow_indirect_imports" not in deep
    assert set(deep["forbidden_modules"]) >= {"engine.core", "engine.embedded", "engine.book"}


def test_widgets_import_only_allowed_engine_modules() -> None:
    # The same rule as lint-imports, read from the source, so that this file fails on its own.
    bad = sorted(
        f"{path.relative_to(ROOT)}: {m}"
        for path in (ROOT / "widgets").rglob("*.py")
        for m in engine_imports(path)
        if not within(m, ALLOWED)
    )
    assert not bad


# ----------------------------------------------------------------------------- analyzer


def test_every_analyzer_data_module_is_in_the_qt_free_contract() -> None:
    listed = set(contract(ANALYZER)["source_modules"])
    data = {m for m in modules("analyzer") if not within(m, {"analyzer.views"})} - {"analyzer"}
    missing = sorted(data - listed)
    assert not missing, (
        f"analyzer modules outside analyzer.views missing from source_modules of the contract "
        f"{ANALYZER!r} in pyproject.toml: {missing}"
    )
    assert not sorted(listed - data), "listed modules that do not exist (or are views)"


def test_the_analyzer_package_itself_imports_nothing() -> None:
    # The package module is not listed (listing it would take in analyzer.views); it stays a
    # docstring.
    tree = ast.parse((ROOT / "analyzer" / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
