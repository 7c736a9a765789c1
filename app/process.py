# SPDX-License-Identifier: MIT
"""Facts about this process for the console's modules: its age, and the versions it runs.

Here rather than in ``app.cli`` or ``app.main_window`` so that the GUI modules that report
start-up times and versions need not import the command line (or each other).
"""

import os
import platform
import time
from importlib import metadata

#: ``perf_counter`` when this module was imported: the fallback start of the process.
_IMPORTED_AT = time.perf_counter()


def seconds_since_process_start() -> float:
    """Return the seconds since this process started, interpreter start-up included.

    Linux: from the start time in ``/proc/self/stat`` (10 ms resolution) against the boot-time
    clock. Elsewhere (or if that cannot be read): since this module was imported.
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, counted from 1
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - _IMPORTED_AT


_VERSION_PACKAGES = (
    "qwconsole",
    "PySide6-Essentials",
    "pyqtgraph",
    "qasync",
    "numpy",
    "numba",
    "h5py",
    "simplefix",
)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> list[tuple[str, str]]:
    """Return ``(component, version)`` pairs for the About box and ``--version``."""
    from PySide6 import QtCore

    pairs = [(p, _version(p)) for p in _VERSION_PACKAGES]
    pairs.insert(1, ("Python", platform.python_version()))
    pairs.insert(2, ("Qt", QtCore.qVersion()))
    return pairs
