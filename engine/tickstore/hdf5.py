# SPDX-License-Identifier: MIT
"""HDF5 beneath the tick store: Blosc decompression, SWMR reading, damaged-file checks.

What the store needs of HDF5 besides h5py's API: c-blosc's decompressor taken from
hdf5plugin's filter (chunks read raw decompress straight into the caller's array), the file
access properties of a single-writer/multiple-reader reader with a bounded metadata retry,
and the end-of-file a file's superblock records (how a truncated file is told).
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path
from typing import Any, Final

import h5py
import hdf5plugin
import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log

#: HDF5 filter id of Blosc (hdf5plugin).
BLOSC_FILTER: Final[int] = 32001
#: Times a SWMR reader reads one metadata block whose checksum fails before it gives up.
#: HDF5 retries (a writer may be rewriting the block) with sleeps doubling from 1 ns; its
#: default of 100 attempts sleeps for days on a truncated file (measured: ``import ls`` still
#: asleep after 900 s). 28 attempts give a writer about 0.27 s in all.
SWMR_READ_ATTEMPTS: Final[int] = 28
#: The HDF5 superblock signature (at offset 0, 512, 1024, 2048, ... after a userblock).
HDF5_SIGNATURE: Final[bytes] = b"\x89HDF\r\n\x1a\n"

log = get_log(__name__)
Rows = npt.NDArray[np.void]


def compression() -> dict[str, Any]:
    """Return the dataset creation options of the store's compression (Blosc-lz4 + shuffle)."""
    return dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))


class Blosc:
    """c-blosc's decompressor, taken from the Blosc filter that hdf5plugin gives HDF5.

    The filter stores each chunk as one Blosc buffer, so a chunk read raw
    (``read_direct_chunk``) decompresses with ``blosc_decompress_ctx`` straight into the
    caller's array: no intermediate chunk buffer and no second copy. ctypes releases the GIL
    for the call, so several threads decompress at once.
    """

    def __init__(self, lib: ctypes.CDLL) -> None:
        size_p = ctypes.POINTER(ctypes.c_size_t)
        self._decompress = lib.blosc_decompress_ctx
        self._decompress.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
        ]
        self._decompress.restype = ctypes.c_int
        self._sizes = lib.blosc_cbuffer_sizes
        self._sizes.argtypes = [ctypes.c_void_p, size_p, size_p, size_p]
        self._sizes.restype = None

    def decompress(self, src: bytes, src_len: int, dst: int, nbytes: int) -> bool:
        """Decompress the Blosc buffer ``src`` into ``nbytes`` at ``dst``; ``False`` if bad.

        The header is checked first (c-blosc trusts its sizes): it must describe exactly
        ``nbytes`` and fit in ``src_len``.
        """
        if src_len < 16:
            return False
        n, c, b = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
        self._sizes(src, ctypes.byref(n), ctypes.byref(c), ctypes.byref(b))
        if n.value != nbytes or c.value > src_len:
            return False
        return bool(self._decompress(src, dst, nbytes, 1) == nbytes)


@functools.cache
def blosc_codec() -> Blosc | None:
    """Return the Blosc decompressor, or ``None`` (reads then go through HDF5's filter)."""
    try:
        lib = ctypes.CDLL(hdf5plugin.get_config().registered_filters["blosc"])
        return Blosc(lib)
    except (OSError, KeyError, AttributeError):
        return None


@functools.cache
def hdf5_lib() -> ctypes.CDLL | None:
    """Return the HDF5 library h5py uses (the copy loaded in this process), or ``None``.

    Only that copy may be handed h5py's property-list ids: it is found among the libraries
    this process has mapped, else next to h5py (the wheel's ``h5py.libs``).
    """
    candidates: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                name = os.path.basename(path)
                if name.startswith("libhdf5") and not name.startswith("libhdf5_hl"):
                    candidates.append(path)
    except OSError:
        pass
    libs = Path(h5py.__file__).parent.parent / "h5py.libs"
    if libs.is_dir():
        candidates += [str(x) for x in sorted(libs.glob("libhdf5-*.so*"))]
    for path in dict.fromkeys(candidates):
        try:
            lib = ctypes.CDLL(path)
            setter = lib.H5Pset_metadata_read_attempts
        except (OSError, AttributeError):
            continue
        setter.argtypes = [ctypes.c_int64, ctypes.c_uint]
        setter.restype = ctypes.c_int
        return lib
    return None


def swmr_read_fapl(cache: dict[str, Any]) -> h5py.h5p.PropFAID | None:
    """Return a file-access list for SWMR reading with bounded metadata retries.

    ``None`` if the HDF5 library cannot be reached (h5py's defaults then apply).
    """
    lib = hdf5_lib()
    if lib is None:
        return None
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST)
    settings = list(fapl.get_cache())
    settings[1], settings[2] = cache["rdcc_nslots"], cache["rdcc_nbytes"]
    fapl.set_cache(*settings)
    fapl.set_file_locking(False, True)
    if lib.H5Pset_metadata_read_attempts(fapl.id, SWMR_READ_ATTEMPTS) < 0:
        return None
    return fapl


def open_swmr_read(path: Path, cache: dict[str, Any]) -> h5py.File:
    """Open ``path`` for SWMR reading without the file lock, metadata retries bounded."""
    fapl = swmr_read_fapl(cache)
    if fapl is None:
        return h5py.File(path, "r", swmr=True, locking=False, **cache)
    flags = h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ
    return h5py.File(h5py.h5f.open(os.fsencode(path), flags, fapl=fapl))


def stored_eof(path: str | Path) -> int | None:
    """Return the file size an HDF5 file's superblock records (userblock included).

    ``None`` if there is no superblock this reads (versions 0 to 3 are read).
    """
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            at = 0
            while at + 64 <= size:
                f.seek(at)
                head = f.read(96)
                if head[:8] == HDF5_SIGNATURE:
                    break
                at = 512 if at == 0 else at * 2
            else:
                return None
    except OSError:
        return None
    version = head[8]
    if version in (0, 1):
        width, fields = head[13], 24 + (4 if version == 1 else 0)
        index = 2  # base, free-space, end of file
    elif version in (2, 3):
        width, fields, index = head[9], 12, 2  # base, extension, end of file
    else:
        return None
    if width not in (2, 4, 8) or fields + (index + 1) * width > len(head):
        return None
    base = int.from_bytes(head[fields : fields + width], "little")
    eof_at = fields + index * width
    eof = int.from_bytes(head[eof_at : eof_at + width], "little")
    return base + eof


def truncation(path: str | Path) -> str | None:
    """Return ``"truncated to N of M bytes"`` if ``path`` is shorter than its superblock says."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    eof = stored_eof(path)
    if eof is not None and size < eof:
        return f"truncated to {size:,} of {eof:,} bytes"
    return None
