# SPDX-License-Identifier: MIT
"""``python -m engine.native build [--if-stale] | status``: compile the FIX hot path with mypyc.

See :mod:`engine.native`. The build runs mypyc and the C compiler in a child process (setuptools'
``setup()`` prints, and exits on errors) into a temporary directory, then copies the
extensions and writes the manifest of the sources' hashes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from engine.native import (
    GROUP,
    MANIFEST,
    MODULES,
    ROOT,
    _digest,
    _python,
    _source,
    _suffix,
    build_dir,
    check,
)


# ----------------------------------------------------------------------------- the build
def _say(line: str, stream: TextIO = sys.stdout) -> None:
    stream.write(line + "\n")
    stream.flush()


def build(out: Path | None = None, *, quiet: bool = False) -> Path:
    """Compile :data:`MODULES` into ``out`` (this interpreter's build directory); return it.

    Raises
    ------
    RuntimeError
        When mypyc or the C compiler fails (its log's last lines in the message).
    """
    out = build_dir() if out is None else out
    sources = {m: _source(m) for m in MODULES}
    digests = {m: _digest(p) for m, p in sources.items()}
    t0 = time.monotonic()
    if not quiet:
        _say(f"native: compiling {len(MODULES)} modules with mypyc (about a minute)")
    with tempfile.TemporaryDirectory(prefix="qw-native-") as tmp:
        work = Path(tmp)
        cmd = [sys.executable, "-m", "engine.native", "_compile", str(work)]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"the native build failed:\n{tail}")
        lib = work / "lib"
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        entries = {}
        for m in MODULES:
            rel = Path(*m.split(".")).with_suffix(_suffix())
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(lib / rel, out / rel)
            entries[m] = {"file": str(rel), "sha256": digests[m]}
        group = GROUP + "__mypyc" + _suffix()
        shutil.copy2(lib / group, out / group)
    # Sources edited while compiling: the build is of the old text (check() will say so).
    manifest = {"python": _python(), "group_file": group, "modules": entries}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    if not quiet:
        _say(f"native: built {out} in {time.monotonic() - t0:.0f} s")
    return out


def _compile(work: Path) -> None:
    # In a child process (setuptools' setup() exits on errors, and prints): mypyc over the
    # modules, then the C compiler, into ``work``/lib.
    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    paths = [str(_source(m).relative_to(ROOT)) for m in MODULES]
    exts = mypycify(paths, opt_level="3", group_name=GROUP, target_dir=str(work / "c"))
    setup(
        name="qwconsole-native",
        ext_modules=exts,
        script_args=[
            "build_ext",
            "--build-lib",
            str(work / "lib"),
            "--build-temp",
            str(work / "t"),
        ],
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.native build [--if-stale] | status``."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["_compile"] and len(args) == 2:
        _compile(Path(args[1]))
        return 0
    if args[:1] == ["status"]:
        _say(check(build_dir())[1])
        return 0
    if args[:1] == ["build"] and set(args[1:]) <= {"--if-stale"}:
        if "--if-stale" in args and check(build_dir())[0]:
            _say(f"native: {build_dir()} is current")
            return 0
        try:
            build()
        except RuntimeError as e:
            _say(f"native: {e}", sys.stderr)
            _say("native: the FIX engine will run interpreted (same results, slower)", sys.stderr)
            return 1
        return 0
    _say("usage: python -m engine.native build [--if-stale] | status", sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
