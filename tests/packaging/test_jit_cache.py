# SPDX-License-Identifier: MIT
"""engine.jit's numba cache policy, from a source checkout and as a frozen bundle sees it.

The frozen case runs in a child interpreter that sets ``sys.frozen`` (what PyInstaller's
bootloader does) before importing ``engine.jit``; the full bundle is built in test_bundle.py.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

_PROBE = """
import json, os, sys
sys.frozen = True
import engine.jit as jit
from numba.core import config

def f():
    return 1

def locate(name):
    loc = jit.BundleCacheLocator.from_function(f, name)
    return None if loc is None else loc.get_cache_path()

print(json.dumps({
    "env": os.environ.get("NUMBA_CACHE_DIR"),
    "config": config.CACHE_DIR,
    "locators": config.CACHE_LOCATOR_CLASSES,
    "relative": locate("engine/book/_kernels.py"),
    "absolute": locate(os.path.abspath("kernels.py")),
    "escaping": locate("../elsewhere/k.py"),
}))
"""


def run_probe(env: dict[str, str], cwd: Path) -> dict[str, str | None]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env={**base, "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, str | None] = json.loads(out.stdout.splitlines()[-1])
    return result


def test_frozen_cache_goes_to_the_xdg_cache_folder_whatever_the_working_directory(
    tmp_path: Path,
) -> None:
    xdg = tmp_path / "xdg-cache"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_probe({"XDG_CACHE_HOME": str(xdg)}, tmp_path / "a")
    second = run_probe({"XDG_CACHE_HOME": str(xdg)}, tmp_path / "b")

    folder = first["env"]
    assert folder is not None
    assert Path(folder).parent == xdg / "qwconsole"
    assert Path(folder).name.startswith("numba-")
    assert first["config"] == folder
    assert first["locators"] == "engine.jit.BundleCacheLocator,UserWideCacheLocator"
    assert first["relative"] == str(Path(folder) / "engine" / "book")
    assert Path(folder, "engine", "book").is_dir()
    assert second["relative"] == first["relative"]
    # Not a bundle module, or a name outside the bundle: numba's next locator decides.
    assert first["absolute"] is None
    assert first["escaping"] is None


def test_frozen_cache_falls_back_to_home_and_respects_a_users_numba_cache_dir(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    relative_xdg = run_probe({"HOME": str(home), "XDG_CACHE_HOME": "relative/path"}, tmp_path)
    assert relative_xdg["env"] is not None
    assert Path(relative_xdg["env"]).parent == home / ".cache" / "qwconsole"

    own = tmp_path / "own-cache"
    chosen = run_probe({"NUMBA_CACHE_DIR": str(own)}, tmp_path)
    assert chosen["config"] == str(own)
    assert chosen["relative"] == str(own / "engine" / "book")


def test_from_source_numba_keeps_its_default_cache(tmp_path: Path) -> None:
    probe = _PROBE.replace("sys.frozen = True", "")
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**base, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["env"] is None
    assert result["config"] == ""
    assert result["locators"] == ""
    assert result["relative"] is None


def test_frozen_cache_in_an_unusable_folder_falls_back_to_the_temporary_folder(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = run_probe({"XDG_CACHE_HOME": str(blocker), "TMPDIR": str(temp)}, tmp_path)
    assert result["env"] is not None
    assert Path(result["env"]).parent == temp / f"qwconsole-{os.getuid()}"
    assert result["relative"] == str(Path(result["env"]) / "engine" / "book")


_KERNEL_MODULE = """
from engine.jit import kernel


@kernel
def twice(x):
    return x * 2
"""

_CALL = """
import json, logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
import engine.jit as jit
import probe_kernels
assert probe_kernels.twice(21) == 42
print(json.dumps({"compiled": jit.compiled_count()}))
"""


def test_compilations_are_counted_and_logged_and_a_cached_start_has_none(tmp_path: Path) -> None:
    (tmp_path / "probe_kernels.py").write_text(_KERNEL_MODULE)
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env = {**base, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}

    def call() -> tuple[int, str]:
        out = subprocess.run(
            [sys.executable, "-c", _CALL],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return int(json.loads(out.stdout.splitlines()[-1])["compiled"]), out.stderr

    compiled, log = call()
    assert compiled >= 1
    assert "engine.jit: compiled probe_kernels.twice in " in log
    # From a source tree numba keeps its default: __pycache__ next to the module.
    assert list((tmp_path / "__pycache__").glob("probe_kernels.twice-*.nbi"))
    compiled, log = call()
    assert compiled == 0
    assert "compiled" not in log


def _call_in(folder: Path, cache_dir: Path | None = None) -> tuple[int, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env = {**base, "PYTHONPATH": os.pathsep.join([str(ROOT), str(folder)])}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    out = subprocess.run(
        [sys.executable, "-c", _CALL],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr  # never a crash, whatever the cache holds
    return int(json.loads(out.stdout.splitlines()[-1])["compiled"]), out.stderr


@pytest.mark.parametrize("damaged", ["index", "data", "both"])
def test_a_damaged_cache_is_compiled_again_and_repaired(tmp_path: Path, damaged: str) -> None:
    (tmp_path / "probe_kernels.py").write_text(_KERNEL_MODULE)
    assert _call_in(tmp_path)[0] >= 1
    cache = tmp_path / "__pycache__"
    (index,) = cache.glob("probe_kernels.twice-*.nbi")
    if damaged in ("index", "both"):
        index.write_bytes(index.read_bytes()[:40] + b"\x00garbage")  # cut off mid-pickle
    if damaged in ("data", "both"):
        for data in cache.glob("probe_kernels.twice-*.nbc"):
            data.write_bytes(b"not a pickle")

    compiled, log = _call_in(tmp_path)
    assert compiled >= 1
    assert "is unreadable" in log or damaged == "data"
    # The repaired entry is used by the next start.
    assert _call_in(tmp_path) == (0, "")


def test_a_cache_from_another_checkout_is_not_used_and_is_rebuilt(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    (first / "probe_kernels.py").write_text(_KERNEL_MODULE)
    assert _call_in(first)[0] >= 1
    # A copied checkout keeps the cache files, but a changed source has another content
    # hash: numba's stamp no longer matches.
    second.mkdir()
    (second / "__pycache__").mkdir()
    for f in (first / "__pycache__").iterdir():
        (second / "__pycache__" / f.name).write_bytes(f.read_bytes())
    (second / "probe_kernels.py").write_text(_KERNEL_MODULE.replace("x * 2", "x + x"))
    assert _call_in(second)[0] >= 1
    assert _call_in(second)[0] == 0
    # A shared NUMBA_CACHE_DIR filled by one checkout: the other keeps its own entries.
    shared = tmp_path / "numba-cache"
    assert _call_in(first, shared)[0] >= 1
    assert _call_in(second, shared)[0] >= 1
    assert _call_in(first, shared)[0] == 0


_SEED_PROBE = """
import json, os, sys
sys.frozen = True
sys._MEIPASS = os.environ["PROBE_MEIPASS"]
import engine.jit as jit
print(json.dumps({"env": os.environ.get("NUMBA_CACHE_DIR")}))
"""


def test_a_bundles_shipped_kernels_seed_the_users_cache_once(tmp_path: Path) -> None:
    internal = tmp_path / "bundle" / "_internal"
    shipped = internal / "numba-cache" / "engine" / "book"
    shipped.mkdir(parents=True)
    (shipped / "_kernels.l2_set-10.py311.nbi").write_bytes(b"index")
    (shipped / "_kernels.l2_set-10.py311.1.nbc").write_bytes(b"data")
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env = {
        **base,
        "PYTHONPATH": str(ROOT),
        "PROBE_MEIPASS": str(internal),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }

    def probe() -> Path:
        out = subprocess.run(
            [sys.executable, "-c", _SEED_PROBE],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return Path(json.loads(out.stdout.splitlines()[-1])["env"])

    folder = probe()
    assert folder.parent == tmp_path / "xdg" / "qwconsole"
    copied = folder / "engine" / "book" / "_kernels.l2_set-10.py311.nbi"
    assert copied.read_bytes() == b"index"
    assert (folder / "engine" / "book" / "_kernels.l2_set-10.py311.1.nbc").is_file()
    # Once per executable: what the user's starts compiled later is not overwritten again.
    copied.write_bytes(b"the user's own")
    assert probe() == folder
    assert copied.read_bytes() == b"the user's own"
    (folder / ".shipped").write_text("another executable")
    probe()
    assert copied.read_bytes() == b"index"


def test_kernels_run_as_plain_python_with_numba_disabled() -> None:
    # NUMBA_DISABLE_JIT=1 (for coverage or a debugger): kernels are the plain functions.
    code = (
        "import numpy as np\n"
        "from engine.feeds import _kernels as k\n"
        "from engine.book import _kernels as b\n"
        "data = np.frombuffer(b'\\x00\\x02ab\\x00\\x01c\\x00', np.uint8)\n"
        "print(k.whole_messages_end(data, 0, data.shape[0]), hasattr(b, '__name__'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["7", "True"]
