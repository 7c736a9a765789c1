# SPDX-License-Identifier: MIT
"""Build the desktop bundle into ``dist/qwconsole`` and prove that it starts.

    packaging/bootstrap.sh bundle [--dist DIR] [--work DIR] [--no-smoke] [--no-kernels]

(or ``.venv/bin/python packaging/bundle.py ...``). The steps:

1. PyInstaller runs ``packaging/qwconsole.spec`` (one folder: ``qwconsole`` + ``_internal/``).
2. Debug sections are removed from the few libraries that carry them (``strip --strip-debug``:
   libpython, uvloop, zstandard, the Blosc filter; 50 MB). Never a full strip: that breaks
   numpy's OpenBLAS (platform-facts.md 7.2).
3. The desktop entry, the icons and ``install-desktop-entry.sh`` go into ``share/``.
4. The bundle compiles every numba kernel into ``_internal/numba-cache`` (``qwconsole
   warmup``, one to two minutes on 2 cores); a user's first start copies them into the user's
   cache folder and loads them instead of compiling (``engine.jit.seed_from_bundle``).
   ``--no-kernels`` leaves that out.
5. The bundle runs once with ``--smoke`` offscreen, as a user's first start.

The figures (build time, size, start to window) are printed. ``tests/packaging/test_bundle.py``
uses the same functions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NAME = "qwconsole"
SPEC = HERE / "qwconsole.spec"
ICONS = ROOT / "resources" / "icons"

#: Targets from the packaging issue (printed next to the figures).
SIZE_TARGET_MB = 450
WARM_START_TARGET_S = 2.0
#: A fresh user's first start of a bundle with its kernels shipped, to the first fill.
FIRST_FILL_TARGET_S = 10.0

#: Environment variables that would make the bundle behave unlike on a user's machine.
_LEAKY_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "DISPLAY", "WAYLAND_DISPLAY")
_ELF_MAGIC = b"\x7fELF"
#: The log line engine/jit.py writes for every numba compilation.
_COMPILED = "engine.jit: compiled "


@dataclass(frozen=True, slots=True)
class StartFigures:
    """One start of the bundle, timed from the moment the process was spawned."""

    returncode: int
    #: Seconds until the console logged ``window shown`` (None: never).
    to_window_s: float | None
    #: Seconds until the warm-up logged ``kernels ready`` (None: never).
    to_kernels_s: float | None
    #: Seconds until the console logged its first fill (``first fill``; None: never).
    to_fill_s: float | None
    #: Seconds until the process exited.
    total_s: float
    #: numba compilations the run logged (``engine.jit: compiled ...``); 0 for a cached start.
    compiled: int
    output: str
    log: str


def build(dist: Path, work: Path) -> float:
    """Run PyInstaller on the spec; return the seconds it took. The bundle is ``dist/qwconsole``."""
    t0 = time.perf_counter()
    cmd = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(dist),
        "--workpath",
        str(work),
        str(SPEC),
    ]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - t0


def _has_debug_info(path: Path) -> bool:
    with path.open("rb") as f:
        if f.read(4) != _ELF_MAGIC:
            return False
    out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True)
    return ".debug_info" in out.stdout


def strip_debug(bundle: Path) -> tuple[int, int]:
    """Remove debug sections from the bundle's ELF files; return (files, bytes saved).

    Libraries that auditwheel rewrote (``*.libs`` folders) are left alone, and nothing else
    than ``.debug_*`` sections is removed. Without ``strip``/``readelf`` (binutils) it does
    nothing.
    """
    if not (shutil.which("strip") and shutil.which("readelf")):
        print("bundle: binutils not found; debug sections stay in (about 50 MB)")
        return 0, 0
    files, saved = 0, 0
    for path in sorted(bundle.rglob("*.so*")):
        if path.is_symlink() or not path.is_file() or path.parent.name.endswith(".libs"):
            continue
        if not _has_debug_info(path):
            continue
        before = path.stat().st_size
        subprocess.run(["strip", "--strip-debug", str(path)], check=True)
        files, saved = files + 1, saved + before - path.stat().st_size
    return files, saved


def add_desktop_files(bundle: Path) -> None:
    """Put the desktop entry, the icon theme folders and the installer script in the bundle."""
    share = bundle / "share"
    apps = share / "applications"
    apps.mkdir(parents=True, exist_ok=True)
    shutil.copy2(HERE / f"{NAME}.desktop", apps / f"{NAME}.desktop")
    hicolor = share / "icons" / "hicolor"
    for png in sorted((ICONS / "hicolor").glob(f"*/apps/{NAME}.png")):
        target = hicolor / png.relative_to(ICONS / "hicolor")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, target)
    scalable = hicolor / "scalable" / "apps"
    scalable.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ICONS / f"{NAME}.svg", scalable / f"{NAME}.svg")
    shutil.copy2(HERE / "install-desktop-entry.sh", bundle / "install-desktop-entry.sh")


def size_bytes(folder: Path) -> int:
    """Return the unpacked size of ``folder``: the sum of its files (symlinks not followed)."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_dir() or p.is_symlink())


def bundle_env(home: Path | None = None) -> dict[str, str]:
    """Return the environment to start the bundle in: offscreen, no Python or numba settings.

    With ``home``, config, state and cache folders all live under it (a fresh user).
    """
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env = {k: v for k, v in env.items() if not k.startswith("NUMBA_")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    if home is not None:
        env["HOME"] = str(home)
        env["XDG_CACHE_HOME"] = str(home / ".cache")
        env["XDG_CONFIG_HOME"] = str(home / ".config")
        env["XDG_STATE_HOME"] = str(home / ".local" / "state")
        for var in ("QWCONSOLE_CONFIG_DIR", "QWCONSOLE_STATE_DIR"):
            env.pop(var, None)
    return env


def ship_kernel_cache(bundle: Path) -> tuple[float, str]:
    """Compile every kernel into ``_internal/numba-cache``, which the bundle's first start copies.

    Runs the bundle itself (``qwconsole warmup``), so the entries carry the stamp of the
    executable that is shipped: this must come after every change to it (``strip_debug``).
    Returns the seconds it took and the warm-up's last line.
    """
    cache = bundle / "_internal" / "numba-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = bundle_env() | {"NUMBA_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(bundle / NAME), "warmup", "--prefix", "bundle"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the kernel warm-up failed: {done.stdout}{done.stderr}")
    return time.perf_counter() - t0, done.stdout.strip().splitlines()[-1]


def start(
    executable: Path,
    env: dict[str, str],
    state_dir: Path,
    args: tuple[str, ...] = ("--smoke", "2"),
    cwd: Path | None = None,
    timeout_s: float = 600.0,
    settle_s: float | None = None,
    stop_after_compiled: int | None = None,
) -> StartFigures:
    """Start the bundle once and time it; ``state_dir`` must be fresh (its log is read).

    Start to window is when ``window shown`` appears in the console's log, polled every 10 ms
    while the process runs. With ``settle_s`` the run is a user's session instead of a fixed
    smoke time: once the kernels are ready and nothing was compiled for ``settle_s`` (the demo's
    traffic has gone through every kernel it uses), the console gets SIGTERM and closes. With
    ``stop_after_compiled`` it gets SIGTERM once it has compiled that many kernels (a user who
    closes the console during its first start).
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / f"{NAME}.log"
    env = {**env, "QWCONSOLE_STATE_DIR": str(state_dir)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(executable), *args],
        env=env,
        cwd=cwd or state_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    to_window = to_kernels = to_fill = None
    deadline = t0 + timeout_s
    compiled, last_change, terminated = 0, t0, False
    while proc.poll() is None and time.perf_counter() < deadline:
        text = log_path.read_text(encoding="utf-8") if log_path.exists() else ""
        now = time.perf_counter()
        if to_window is None and "window shown" in text:
            to_window = now - t0
        if to_kernels is None and "kernels ready" in text:
            to_kernels = now - t0
        if to_fill is None and "first fill" in text:
            to_fill = now - t0
        if text.count(_COMPILED) != compiled:
            compiled, last_change = text.count(_COMPILED), now
        if settle_s is not None and to_kernels is not None and not terminated:
            quiet_s = now - max(last_change, t0 + to_kernels)
            if quiet_s >= settle_s:
                proc.send_signal(signal.SIGTERM)
                terminated = True
        if stop_after_compiled is not None and compiled >= stop_after_compiled and not terminated:
            proc.send_signal(signal.SIGTERM)
            terminated = True
        time.sleep(0.01 if None in (to_window, to_kernels, to_fill) else 0.1)
    if proc.poll() is None:
        proc.kill()
    output, _ = proc.communicate()
    total = time.perf_counter() - t0
    log = log_path.read_text(encoding="utf-8") if log_path.exists() else ""
    return StartFigures(
        returncode=proc.returncode,
        to_window_s=to_window,
        to_kernels_s=to_kernels,
        to_fill_s=to_fill,
        total_s=total,
        compiled=log.count(_COMPILED),
        output=output,
        log=log,
    )


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="packaging/bootstrap.sh bundle",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="PyInstaller work folder")
    parser.add_argument("--no-smoke", action="store_true", help="do not start the bundle")
    parser.add_argument(
        "--no-kernels",
        action="store_true",
        help="ship no compiled kernels (the first start compiles them)",
    )
    opts = parser.parse_args(argv)
    dist, work = opts.dist.resolve(), opts.work.resolve()

    seconds = build(dist, work)
    bundle = dist / NAME
    files, saved = strip_debug(bundle)
    add_desktop_files(bundle)
    print(f"bundle: built {bundle} in {seconds:.0f} s")
    print(f"bundle: debug sections removed from {files} files ({saved / 1e6:.0f} MB)")
    if not opts.no_kernels:
        warm_s, line = ship_kernel_cache(bundle)
        print(f"{line} ({warm_s:.0f} s, shipped in _internal/numba-cache)")
    size_mb = size_bytes(bundle) / 1e6
    print(f"bundle: size {size_mb:.0f} MB unpacked (target <= {SIZE_TARGET_MB} MB)")
    if opts.no_smoke:
        return 0
    state = work / "smoke-state"
    shutil.rmtree(state, ignore_errors=True)
    run = start(bundle / NAME, bundle_env(), state, args=("--smoke", "10"))
    print(f"bundle: {run.output.strip()}")
    print(
        f"bundle: smoke rc={run.returncode}, start to window {_fmt(run.to_window_s)}, "
        f"kernels ready {_fmt(run.to_kernels_s)} ({run.compiled} compiled), first fill "
        f"{_fmt(run.to_fill_s)} (target <= {FIRST_FILL_TARGET_S:.0f} s), exit {run.total_s:.1f} s"
    )
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
