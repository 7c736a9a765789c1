# SPDX-License-Identifier: MIT
"""The desktop bundle: build it, start it as fresh users, prove a second start compiles nothing.

* Without the kernels shipped (``bundle.py --no-kernels``, or a CPU other than the build
  machine's), a fresh user's first start (empty ``XDG_CACHE_HOME``) compiles the numba kernels
  into ``$XDG_CACHE_HOME/qwconsole/numba-<version>``, never numba's own folder: checked on the
  first few kernels, then the user closes it (SIGTERM), which must exit cleanly.
* With the kernels compiled into the bundle at build time (``bootstrap.sh bundle``: all
  ``EXPECTED_COMPILES`` of them, counted on an empty cache), a fresh user's first start compiles
  nothing and reaches the first fill.
* The bundle is then moved to another folder (without its shipped kernels) and started with
  ``--smoke`` from another working directory by that user: it must load every kernel from the
  user's cache (no ``compiled`` log line from ``engine.jit``, no cache file rewritten).

Prints the issue's figures: bundle size, first and second start to window, and a fresh user's
first start to the first fill with the kernels shipped. Takes 3-4 minutes on 2 cores
(PyInstaller about a minute, compiling the kernels into the bundle one to two).
"""

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine.warmup import EXPECTED_COMPILES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.timeout(1500),
    pytest.mark.skipif(sys.platform != "linux", reason="the bundle recipe is for Linux"),
]

ROOT = Path(__file__).resolve().parents[2]


def load_bundle_module() -> ModuleType:
    # packaging/ is not a Python package (the name belongs to PyPI's `packaging`): load by path.
    spec = importlib.util.spec_from_file_location("qw_bundle", ROOT / "packaging" / "bundle.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


def cache_files(folder: Path) -> dict[Path, int]:
    return {p.relative_to(folder): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


@dataclass
class Built:
    module: ModuleType
    folder: Path
    build_s: float
    stripped_files: int
    stripped_bytes: int
    size_mb: float


@dataclass
class FirstStart:
    figures: Any
    home: Path
    cache: Path
    files: dict[Path, int]


#: Kernels a fresh user's first start (without shipped kernels) compiles before closing.
FIRST_KERNELS = 3


# Tests over module fixtures: each step stays under pytest's 240 s faulthandler dump.
@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    pytest.importorskip("PyInstaller")
    bundle = load_bundle_module()
    work = tmp_path_factory.mktemp("bundle")
    build_s = bundle.build(work / "dist", work / "work")
    folder = work / "dist" / "qwconsole"
    stripped_files, stripped_bytes = bundle.strip_debug(folder)
    bundle.add_desktop_files(folder)
    size_mb = bundle.size_bytes(folder) / 1e6
    return Built(bundle, folder, build_s, stripped_files, stripped_bytes, size_mb)


@pytest.fixture(scope="module")
def first_start(built: Built, tmp_path_factory: pytest.TempPathFactory) -> FirstStart:
    """A fresh user's first start of the bundle as built (no kernels shipped), closed early."""
    tmp = tmp_path_factory.mktemp("first")
    home = tmp / "home"
    figures = built.module.start(
        built.folder / "qwconsole",
        built.module.bundle_env(home),
        tmp / "state",
        args=("--smoke", "900"),
        cwd=tmp,
        timeout_s=600,
        stop_after_compiled=FIRST_KERNELS,
    )
    caches = list((home / ".cache" / "qwconsole").glob("numba-*"))
    assert len(caches) == 1, caches
    return FirstStart(figures, home, caches[0], cache_files(caches[0]))


@pytest.fixture(scope="module")
def shipped_start(
    built: Built, tmp_path_factory: pytest.TempPathFactory
) -> tuple[FirstStart, float, str]:
    """Kernels compiled into the bundle, a fresh user's first start; then the bundle as built."""
    tmp = tmp_path_factory.mktemp("shipped")
    warm_s, line = built.module.ship_kernel_cache(built.folder)
    try:
        home = tmp / "home"  # a user who never started it
        # Long enough for the demo to fill an order: the figure is start to first fill.
        fresh = built.module.start(
            built.folder / "qwconsole",
            built.module.bundle_env(home),
            tmp / "state",
            args=("--smoke", "10"),
            cwd=tmp,
        )
    finally:  # the next test starts the bundle as it was built
        shutil.rmtree(built.folder / "_internal" / "numba-cache")
    caches = list((home / ".cache" / "qwconsole").glob("numba-*"))
    assert len(caches) == 1, caches
    return FirstStart(fresh, home, caches[0], cache_files(caches[0])), warm_s, line


def test_bundle_holds_the_console_its_desktop_entry_and_icons(built: Built) -> None:
    assert (built.folder / "qwconsole").is_file()
    assert os.access(built.folder / "qwconsole", os.X_OK)
    assert (built.folder / "_internal" / "resources" / "fix" / "FIX44.xml").is_file()
    desktop = (built.folder / "share" / "applications" / "qwconsole.desktop").read_text()
    assert "Exec=qwconsole" in desktop
    assert "Icon=qwconsole" in desktop
    icons = built.folder / "share" / "icons" / "hicolor"
    for size in (16, 32, 48, 256):
        assert (icons / f"{size}x{size}" / "apps" / "qwconsole.png").is_file()
    assert (icons / "scalable" / "apps" / "qwconsole.svg").is_file()
    assert os.access(built.folder / "install-desktop-entry.sh", os.X_OK)


def test_first_start_shows_the_window_and_fills_the_user_cache(first_start: FirstStart) -> None:
    figures = first_start.figures
    assert figures.returncode == 0, figures.output + figures.log[-3000:]  # closed while compiling
    assert "window shown" in figures.log
    assert figures.compiled >= FIRST_KERNELS, "a fresh user cache must be filled by the first start"
    assert any(p.suffix == ".nbi" for p in first_start.files), sorted(first_start.files)
    assert any(p.suffix == ".nbc" for p in first_start.files), sorted(first_start.files)
    assert not (first_start.home / ".cache" / "numba").exists(), "numba used its own folder"


def test_kernels_shipped_in_the_bundle_make_a_first_start_compile_nothing(
    built: Built, shipped_start: tuple[FirstStart, float, str], capsys: pytest.CaptureFixture[str]
) -> None:
    user, warm_s, line = shipped_start
    fresh = user.figures
    assert line.startswith(f"bundle: {EXPECTED_COMPILES} kernels compiled into the cache"), line
    assert fresh.returncode == 0, fresh.output + fresh.log[-3000:]
    assert "smoke ok" in fresh.output
    assert fresh.compiled == 0, fresh.log[-3000:]
    assert (user.cache / ".shipped").is_file()
    assert fresh.to_kernels_s is not None
    assert fresh.to_fill_s is not None, "no fill reached the window:\n" + fresh.log[-3000:]
    with capsys.disabled():
        print(
            f"\nbundle: kernels shipped ({warm_s:.0f} s at build time): a fresh user's first "
            f"start to window {fmt(fresh.to_window_s)}, kernels ready "
            f"{fmt(fresh.to_kernels_s)} (0 compiled), first fill {fmt(fresh.to_fill_s)} "
            f"(target <= {built.module.FIRST_FILL_TARGET_S:.0f} s)"
        )


def test_second_start_elsewhere_compiles_nothing(
    built: Built,
    first_start: FirstStart,
    shipped_start: tuple[FirstStart, float, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The user of the shipped kernels starts the bundle again, from another folder (without
    # its shipped kernels now) and another working directory: everything from their cache.
    user = shipped_start[0]
    moved = tmp_path / "moved" / "qwconsole"
    moved.parent.mkdir()
    shutil.move(built.folder, moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = built.module.bundle_env(user.home)
    second = built.module.start(moved / "qwconsole", env, tmp_path / "state", cwd=elsewhere)
    assert second.returncode == 0, second.output + second.log[-3000:]
    assert "smoke ok" in second.output

    compiled_lines = [line for line in second.log.splitlines() if "engine.jit: compiled" in line]
    assert compiled_lines == []
    assert cache_files(user.cache) == user.files, "the numba cache was rewritten"
    assert list(user.cache.parent.iterdir()) == [user.cache]
    assert not (user.home / ".cache" / "numba").exists(), "numba used its own folder"
    assert second.to_kernels_s is not None

    first, target = first_start.figures, built.module
    with capsys.disabled():
        print(
            f"\nbundle: build {built.build_s:.0f} s; debug sections stripped from "
            f"{built.stripped_files} files ({built.stripped_bytes / 1e6:.0f} MB)\n"
            f"bundle: size {built.size_mb:.0f} MB unpacked (target <= {target.SIZE_TARGET_MB} MB)\n"
            f"bundle: first start without shipped kernels to window {fmt(first.to_window_s)}, "
            f"closed after {first.compiled} kernels compiled in {first.total_s:.1f} s\n"
            f"bundle: second start to window {fmt(second.to_window_s)} (target <= "
            f"{target.WARM_START_TARGET_S:.0f} s), kernels ready {fmt(second.to_kernels_s)} "
            f"(0 compiled), exit {second.total_s:.1f} s"
        )
