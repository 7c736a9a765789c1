# SPDX-License-Identifier: MIT
"""engine.native: which build is loaded, when a build is stale, and the hook in a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import native


def _fake_build(tmp: Path) -> tuple[Path, Path]:
    # A project root with the listed modules' sources and a build directory whose manifest
    # has their hashes (the extension files are empty: check() only looks that they exist).
    root, build = tmp / "root", tmp / "build"
    modules = {}
    for m in native.MODULES:
        src = root.joinpath(*m.split(".")).with_suffix(".py")
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(f"# {m}\n")
        rel = Path(*m.split(".")).with_suffix(".so")
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(b"")
        modules[m] = {"file": str(rel), "sha256": native._digest(src)}
    group = native.GROUP + "__mypyc.so"
    (build / group).write_bytes(b"")
    manifest = {"python": native._python(), "group_file": group, "modules": modules}
    (build / native.MANIFEST).write_text(json.dumps(manifest))
    return root, build


def test_a_current_build_is_loaded_module_by_module(tmp_path: Path) -> None:
    root, build = _fake_build(tmp_path)
    files, why = native.check(build, root)
    assert why.startswith("compiled:")
    assert set(files) == {*native.MODULES, native.GROUP + "__mypyc"}
    assert files["engine.fix.session"] == build / "engine" / "fix" / "session.so"


def test_an_edited_source_runs_every_module_interpreted(tmp_path: Path) -> None:
    root, build = _fake_build(tmp_path)
    (root / "engine" / "fix" / "codec.py").write_text("# edited\n")
    files, why = native.check(build, root)
    assert files == {}
    assert why == "interpreted: engine/fix/codec.py changed since the native build (rebuild it)"


def test_a_build_of_another_python_or_list_or_missing_file_is_not_loaded(tmp_path: Path) -> None:
    root, build = _fake_build(tmp_path)
    manifest = json.loads((build / native.MANIFEST).read_text())
    (build / native.MANIFEST).write_text(json.dumps({**manifest, "python": "cpython-399 x"}))
    files, why = native.check(build, root)
    assert files == {}
    assert why == "interpreted: the native build is for another Python (cpython-399 x)"
    del manifest["modules"]["engine.fix.codec"]
    (build / native.MANIFEST).write_text(json.dumps(manifest))
    assert native.check(build, root)[1].startswith("interpreted: the native build has another")
    root, build = _fake_build(tmp_path / "again")
    (build / "engine" / "fix" / "message.so").unlink()
    files, why = native.check(build, root)
    assert files == {}
    assert why.endswith("message.so is missing (rebuild it)")
    assert native.check(tmp_path / "nowhere", root)[1].startswith("interpreted: no native build")
    shapeless = {"python": native._python(), "modules": dict.fromkeys(native.MODULES, 1)}
    for bad in ("[1, 2]", json.dumps(shapeless), "{"):
        (build / native.MANIFEST).write_text(bad)
        files, why = native.check(build, root)
        assert files == {}
        assert why.startswith("interpreted: ")
        assert str(build / native.MANIFEST) in why


def _in_child(env: dict[str, str]) -> list[str]:
    code = (
        "import engine.fix.session as s, engine.native as n;"
        "print(n.status()); print(n.is_compiled(s)); print(s.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=native.ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.splitlines()


def test_a_process_loads_the_compiled_modules_unless_told_not_to() -> None:
    status, compiled, file = _in_child({native.ENV: "0"})
    assert (status, compiled) == ("interpreted: QW_NATIVE=0", "False")
    assert file.endswith("engine/fix/session.py")
    if not native.check(native.build_dir())[0]:
        pytest.skip(f"no current native build here ({native.status()})")
    status, compiled, file = _in_child({native.ENV: "1"})
    assert status.startswith("compiled: ")
    assert compiled == "True"
    assert file.startswith(str(native.build_dir()))


def test_this_run_uses_the_form_its_status_names() -> None:
    import engine.fix.codec
    import engine.fix.message
    import engine.fix.session

    compiled = native.status().startswith("compiled")
    for m in (engine.fix.session, engine.fix.codec, engine.fix.message):
        assert native.is_compiled(m) is compiled
