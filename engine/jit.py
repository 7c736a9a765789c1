# SPDX-License-Identifier: MIT
"""The one place numba is imported and configured.

Every kernel in the project is decorated with :func:`kernel`, which compiles it in nopython
mode with ``cache=True`` (compiled code is kept on disk; a warm start loads it in well under a
second) and ``nogil=True`` (a kernel running in a worker thread never freezes the GUI).

Where the compiled code is kept
-------------------------------
From a source checkout numba's default applies: ``__pycache__`` next to each ``_kernels.py``
(the test suite's warm-up fills it once), or ``NUMBA_CACHE_DIR`` if the user set it.

In a frozen bundle (PyInstaller) that default fails. Module file names there are relative
(``engine/book/_kernels.py``), so numba ignores ``NUMBA_CACHE_DIR`` and names a cache folder
after the *current directory*: a full recompile for every folder the console is started from
(platform-facts.md 7.2). So, before numba is imported, :func:`configure_cache` points numba at
the user's cache folder (``$XDG_CACHE_HOME/qwconsole/numba-<version>``, ``~/.cache`` when
unset) and installs :class:`BundleCacheLocator`. That locator names each cache folder after the
module's path *inside* the bundle, never after where the bundle sits, so a moved or copied
bundle reuses the cache. Its entries are stamped with the content hash of the bundle's
executable, which carries the bytecode of every module: a bundle rebuilt with changed kernels
(or changed constants they freeze) recompiles them once, on its first start.

Every compilation that does happen is logged (``compiled <kernel> in <s> s``) and counted by
:func:`compiled_count`; a start that only loads cached code logs none.
"""

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

from engine.fastlog import get_log

log = get_log(__name__)

APP_NAME = "qwconsole"

#: The locators numba tries in a bundle, in order (``NUMBA_CACHE_LOCATOR_CLASSES``).
BUNDLE_LOCATORS = "engine.jit.BundleCacheLocator,UserWideCacheLocator"


def is_frozen() -> bool:
    """Return whether this is a bundled (PyInstaller) build."""
    return bool(getattr(sys, "frozen", False))


def _app_version() -> str:
    from importlib import metadata

    try:
        return metadata.version(APP_NAME)
    except metadata.PackageNotFoundError:
        return "0"


def bundle_cache_dir() -> Path:
    """Return the bundle's numba cache folder: ``$XDG_CACHE_HOME/qwconsole/numba-<version>``.

    ``~/.cache`` stands in for ``XDG_CACHE_HOME`` when it is unset or not an absolute path
    (the XDG rule). One folder per console version, so two installed versions started in
    turn do not keep replacing each other's compiled code.
    """
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / APP_NAME / f"numba-{_app_version()}"


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


#: Folder inside the bundle (``sys._MEIPASS``) with the kernels compiled when it was built.
SHIPPED_CACHE = "numba-cache"


def seed_from_bundle(folder: Path) -> bool:
    """Copy the kernels the bundle was built with into the user's cache ``folder``.

    ``packaging/bundle.py`` compiles every kernel into ``_internal/numba-cache`` at build time,
    stamped with the bundle executable's hash, so a first start loads them instead of
    compiling for minutes. They are copied (a few MB, once per executable: a marker file holds
    its size and time) rather than used in place, because the bundle's folder may be read-only
    and numba writes what it compiles next to what it reads. A machine whose CPU differs from
    the build machine's finds no entry for its CPU and compiles as before. Returns whether
    anything was copied; a failure is logged, never raised.
    """
    shipped = Path(getattr(sys, "_MEIPASS", "")) / SHIPPED_CACHE
    if not getattr(sys, "_MEIPASS", "") or not shipped.is_dir():
        return False
    try:
        st = os.stat(sys.executable)
        mark, stamp = folder / ".shipped", f"{st.st_size} {st.st_mtime_ns}"
        if mark.is_file() and mark.read_text() == stamp:
            return False
        shutil.copytree(shipped, folder, dirs_exist_ok=True)
        mark.write_text(stamp)
    except OSError as e:
        log.warning("could not copy the bundle's compiled kernels into %s: %s", folder, e)
        return False
    return True


def configure_cache() -> None:
    """Send numba's cache to the user's cache folder when running from a bundle.

    Runs when this module is imported, before numba is. Does nothing from a source checkout.
    A ``NUMBA_CACHE_DIR`` set by the user wins; an unwritable cache folder (read-only home)
    falls back to a per-user folder under the system's temporary folder rather than failing.
    """
    if not is_frozen():
        return
    if not os.environ.get("NUMBA_CACHE_DIR"):
        folder = bundle_cache_dir()
        if not _writable(folder):
            fallback = Path(tempfile.gettempdir()) / f"{APP_NAME}-{os.getuid()}" / folder.name
            log.warning("numba cache folder %s is not writable; using %s", folder, fallback)
            folder = fallback
        seed_from_bundle(folder)
        os.environ["NUMBA_CACHE_DIR"] = str(folder)
    os.environ.setdefault("NUMBA_CACHE_LOCATOR_CLASSES", BUNDLE_LOCATORS)


configure_cache()

import numba  # noqa: E402  (configure_cache must set numba's environment first)
import numba.core.caching  # noqa: E402
import numba.core.config  # noqa: E402
import numba.core.event  # noqa: E402

# numba's internals are untyped: reach them through Any.
_caching: Any = numba.core.caching
_config: Any = numba.core.config
_event: Any = numba.core.event

if os.environ.get("NUMBA_CACHE_DIR", "") != _config.CACHE_DIR:
    # Something imported numba before this module: make it read the environment again.
    _config.reload_config()

F = TypeVar("F", bound=Callable[..., Any])


#: Every kernel defined so far (numba dispatchers), in definition order.
_kernels: list[Any] = []


class GuardedCache(_caching.FunctionCache):  # type: ignore[misc]
    """numba's per-function disk cache, which never lets a damaged cache file crash a start.

    numba checks an index file's numba version and its source stamp (the SHA-256 of the source
    file; of the executable in a bundle) and keys entries on the CPU, so a stale entry or one
    from another checkout or machine is simply not used and is overwritten. But a damaged
    index or data file (a disk filled up while it was written, a half-copied cache folder)
    raises from ``pickle`` on load *and* on save. Here such an entry is logged, its index file
    deleted and the kernel compiled again, which writes a fresh entry.
    """

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """Return the cached compilation of ``sig``, or None (compile it) if unreadable."""
        try:
            return super().load_overload(sig, target_context)
        except Exception as e:  # any unpickling or rebuild error: the entry is unusable
            self._discard(e)
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save a compilation; an unreadable index is replaced by a fresh one."""
        try:
            super().save_overload(sig, data)
        except Exception as e:
            self._discard(e)
            with contextlib.suppress(Exception):
                super().save_overload(sig, data)  # into a fresh index

    def _discard(self, error: Exception) -> None:
        index = Path(self._cache_file._index_path)
        log.warning(
            "numba cache entry %s is unreadable (%s: %s); compiling the kernel again",
            index,
            type(error).__name__,
            error,
        )
        with contextlib.suppress(OSError):
            index.unlink()


def _register(dispatcher: Any) -> Any:
    if not hasattr(dispatcher, "py_func"):  # NUMBA_DISABLE_JIT=1: a plain Python function
        return dispatcher
    dispatcher._cache = GuardedCache(dispatcher.py_func)
    _kernels.append(dispatcher)
    return dispatcher


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with the project's standard flags."""
    return cast(F, _register(numba.njit(cache=True, nogil=True)(fn)))


def kernel_keep_gil(fn: F) -> F:
    """Compile a kernel of a few microseconds called per message on the trading thread.

    As :func:`kernel`, but the kernel keeps the interpreter lock (``nogil=False``). Releasing
    it costs ~400 instructions per call (measured under callgrind on the FIX read kernel, a
    tenth of its call), and a thread waiting for the lock (the console's GUI thread) takes it
    meanwhile: the trading thread then waits for it to be handed back, up to the interpreter's
    switch interval (5 ms). A kernel that short gains nothing from running without it.
    """
    return cast(F, _register(numba.njit(cache=True, nogil=False)(fn)))


def kernel_inline(fn: F) -> F:
    """Compile a small helper kernel that numba inlines into its callers."""
    return cast(F, _register(numba.njit(cache=True, nogil=True, inline="always")(fn)))


def function(fn: F) -> F:
    """Compile a user-supplied numba function (callable from Python and from kernels).

    Like :func:`kernel`, but not registered among the project's kernels (the warm-up does
    not compile it): used for compiled strategy rules (:mod:`engine.strategy.quoting`).
    """
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


def cfunc(fn: Callable[..., Any], signature: str) -> Any:
    """Compile ``fn`` as a C callback of ``signature``, cached on disk.

    A kernel that takes a callback as an argument is compiled once for the callback's
    *signature* (numba's first-class function type), not once per callback, and that
    compilation is cached; a jitted function passed instead would be keyed on its identity,
    which changes with every process, so a cached kernel would be compiled again on every run.
    """
    return numba.cfunc(signature, cache=True)(fn)  # always nopython


def defined_kernels() -> list[Any]:
    """Return the numba dispatchers of every kernel defined (imported) so far."""
    return list(_kernels)


class BundleCacheLocator(_caching.UserProvidedCacheLocator):  # type: ignore[misc]
    """numba cache locator for a frozen bundle: one folder per package, wherever it runs.

    Used for functions whose source file name is relative (every module inside a PyInstaller
    bundle). The cache folder is ``NUMBA_CACHE_DIR`` joined with the module's folder inside
    the bundle (``engine/book``). The source stamp is numba's own for frozen programs: the
    content hash of ``sys.executable``, which changes with any Python module in the bundle
    and not with the file's location or modification time.
    """

    def __init__(self, py_func: Callable[..., Any], py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        inside = os.path.dirname(os.path.normpath(py_file))
        self._cache_path = os.path.join(_config.CACHE_DIR, inside or "_top")

    @classmethod
    def from_function(
        cls, py_func: Callable[..., Any], py_file: str
    ) -> "BundleCacheLocator | None":
        """Return a locator for ``py_func``, or None to let numba try the next locator."""
        name = os.path.normpath(py_file)
        if not (is_frozen() and _config.CACHE_DIR) or os.path.isabs(name):
            return None
        if name.startswith(os.pardir) or name.startswith("<"):
            return None
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator


class _CompileLog(_event.Listener):  # type: ignore[misc]
    """Count and log every real compilation (numba fires no event for a cache load)."""

    def __init__(self) -> None:
        self.count = 0
        self._started: list[float] = []
        #: Called after each compilation with the number of compilations so far.
        self.listeners: list[Callable[[int], None]] = []

    def on_start(self, _ev: Any) -> None:
        self._started.append(time.perf_counter())

    def on_end(self, ev: Any) -> None:
        seconds = time.perf_counter() - self._started.pop() if self._started else 0.0
        self.count += 1
        dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        py_func = getattr(dispatcher, "py_func", None)
        name = f"{py_func.__module__}.{py_func.__qualname__}" if py_func else "?"
        log.info("compiled %s in %.2f s", name, seconds)
        for listener in list(self.listeners):
            listener(self.count)


_compile_log = _CompileLog()
_event.register("numba:compile", _compile_log)


def compiled_count() -> int:
    """Return how many kernels this process compiled (loads from the cache not counted)."""
    return _compile_log.count


@contextlib.contextmanager
def on_compiled(listener: Callable[[int], None]) -> Iterator[None]:
    """Call ``listener(compiled_count())`` after each compilation while the block runs.

    The listener runs on the compiling thread, inside numba's compiler lock: keep it short.
    """
    _compile_log.listeners.append(listener)
    try:
        yield
    finally:
        _compile_log.listeners.remove(listener)
