# SPDX-License-Identifier: MIT
"""Reading a time range of a dataset: chunk bounds, raw chunk reads, parallel decompression.

:class:`ChunkReader` finds a range's rows from the chunk index (or by bisecting the stored
``ts`` column, :func:`bisect_ts`), reads the stored chunks raw and decompresses them into the
result, in several threads (the module's pool) while cores are idle.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

import h5py
import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log
from engine.tickstore.days import TickStoreError
from engine.tickstore.hdf5 import BLOSC_FILTER, Blosc, blosc_codec

#: Threads that decompress the chunks of one large read (the calling thread is one of them).
READ_THREADS: Final[int] = max(1, min(4, os.cpu_count() or 1))
#: Whole chunks a read needs before it is shared between threads.
PARALLEL_MIN_CHUNKS: Final[int] = 8

log = get_log(__name__)
Rows = npt.NDArray[np.void]


def idle_cores() -> int:
    """Return the cores the 1-minute load average leaves idle.

    Helper threads only pay off on an idle core: on a busy machine they were measured
    slower than one thread (a helper preempted while it holds the GIL stalls the others).
    """
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 0
    return max(0, int((os.cpu_count() or 1) - load))


@functools.cache
def read_pool() -> ThreadPoolExecutor:
    """Return the process's pool of chunk-decompressing threads (made on first use)."""
    return ThreadPoolExecutor(max(1, READ_THREADS - 1), thread_name_prefix="tickstore-read")


class SharedChunks:
    """Chunks to decompress, taken one at a time by whichever thread is free.

    The calling thread works too; at the end it waits only for chunks a helper has taken,
    never for a helper that has not started (on a busy machine it may start late and then
    find nothing left).
    """

    def __init__(self, chunks: range) -> None:
        self._chunks = chunks
        self._next = 0
        self._busy = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._error: BaseException | None = None

    def run(self, decode: Callable[[int, int], None], base: int, step: int) -> None:
        """Decompress chunks until none is left (``decode(c, address)``)."""
        while True:
            with self._lock:
                if self._next >= len(self._chunks) or self._error is not None:
                    return
                c = self._chunks[self._next]
                self._next += 1
                self._busy += 1
            try:
                decode(c, base + c * step)
            except BaseException as e:  # handed to the calling thread by wait()
                with self._lock:
                    self._error = e
            finally:
                with self._lock:
                    self._busy -= 1
                    if self._busy == 0:
                        self._idle.notify_all()

    def wait(self) -> None:
        """Return once no chunk is being decompressed; raise what a thread raised."""
        with self._lock:
            while self._busy:
                self._idle.wait()
            self._next = len(self._chunks)  # a helper starting late finds nothing
            if self._error is not None:
                raise self._error


class RawFile:
    """The store file opened a second time, read with ``os.pread`` (which releases the GIL).

    HDF5 reads hold the GIL for their whole length, so a reader thread stalls the GUI thread
    meanwhile; reading a chunk's stored bytes at the address HDF5 gives for it
    (``H5Dget_chunk_info``) holds it only for that lookup. Read-only stores only: a writer's
    chunks may still sit in HDF5's cache.
    """

    def __init__(self, path: Path, base: int) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self.base = base  # the userblock: HDF5 addresses are relative to it
        self._lock = threading.Lock()
        self._reading = 0
        self._closed = False

    def read(self, address: int, size: int) -> bytes:
        """Return ``size`` bytes at HDF5 address ``address`` (fewer at the end of the file).

        Raises
        ------
        TickStoreError
            The store was closed (a reader thread outlived it).
        """
        with self._lock:
            if self._closed:
                raise TickStoreError(f"{self.path}: the tick store was closed")
            self._reading += 1
        try:
            return os.pread(self.fd, size, self.base + address)
        finally:
            self._done_reading()

    def _done_reading(self) -> None:
        with self._lock:
            self._reading -= 1
            last = self._closed and self._reading == 0
        if last:
            os.close(self.fd)

    def close(self) -> None:
        """Close the descriptor (once no thread reads from it any more)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            now = self._reading == 0
        if now:  # else the last read closes it: its number must not be reused meanwhile
            os.close(self.fd)


class ChunkReader:
    """Reads whole chunks of one Blosc-compressed 1-D dataset, decompressing them in place.

    :meth:`chunk` keeps the last few chunks it decompressed: the chunk that a range bound was
    found in is the chunk the range starts or ends in, so a read decompresses it once. With a
    :class:`RawFile` the stored bytes are read outside HDF5 (and outside the GIL); a chunk
    that then does not decompress (a SWMR writer moved it meanwhile) is read again by HDF5.
    """

    def __init__(self, ds: h5py.Dataset, blosc: Blosc, raw: RawFile | None = None) -> None:
        self.ds = ds
        self.rows: int = ds.chunks[0]
        self.nbytes: int = self.rows * ds.dtype.itemsize
        self._blosc = blosc
        self._raw = raw
        self._decoded: dict[int, Rows] = {}

    @staticmethod
    def of(ds: h5py.Dataset, raw: RawFile | None = None) -> ChunkReader | None:
        """Return a reader for ``ds``, or ``None`` if its storage is not one Blosc filter."""
        blosc = blosc_codec()
        if blosc is None or ds.chunks is None or len(ds.chunks) != 1:
            return None
        plist = ds.id.get_create_plist()
        if plist.get_nfilters() != 1 or plist.get_filter(0)[0] != BLOSC_FILTER:
            return None
        return ChunkReader(ds, blosc, raw)

    def fetch(self, c: int, *, by_hdf5: bool = False) -> tuple[int, bytes]:
        """Return chunk ``c`` as stored: the HDF5 filter mask and the bytes."""
        if self._raw is not None and not by_hdf5:
            info = self.ds.id.get_chunk_info_by_coord((c * self.rows,))
            if info.byte_offset is not None:
                return int(info.filter_mask), self._raw.read(info.byte_offset, info.size)
        mask, raw = self.ds.id.read_direct_chunk((c * self.rows,))
        return int(mask), bytes(raw)

    def _unpack(self, mask: int, raw: bytes, dst: int) -> bool:
        if mask & 1:  # the filter was skipped (data that does not compress): stored as is
            if len(raw) != self.nbytes:
                return False
            ctypes.memmove(dst, raw, self.nbytes)
            return True
        return self._blosc.decompress(raw, len(raw), dst, self.nbytes)

    def unpack(self, c: int, mask: int, raw: bytes, dst: int) -> None:
        """Decompress stored chunk ``c`` (all ``rows`` of it) to the address ``dst``."""
        ok = self._unpack(mask, raw, dst)
        if not ok and self._raw is not None:
            ok = self._unpack(*self.fetch(c, by_hdf5=True), dst)
        if not ok:
            raise TickStoreError(
                f"{self.ds.file.filename}: {self.ds.name} chunk {c} does not decompress "
                f"to {self.nbytes} bytes (damaged file)"
            )

    def decode_into(self, c: int, dst: int) -> None:
        """Read chunk ``c`` and decompress it to the address ``dst``."""
        self.unpack(c, *self.fetch(c), dst)

    def chunk(self, c: int) -> Rows:
        """Return chunk ``c`` decompressed (kept for the next call)."""
        got = self._decoded.get(c)
        if got is None:
            got = np.empty(self.rows, self.ds.dtype)
            self.decode_into(c, got.ctypes.data)
            if len(self._decoded) >= 4:
                del self._decoded[next(iter(self._decoded))]
            self._decoded[c] = got
        return got

    def read(self, i0: int, i1: int, dest: Rows, threads: int | None = None) -> None:
        """Fill ``dest[: i1 - i0]`` with rows ``[i0, i1)``: whole chunks in place, in threads.

        ``threads`` caps the threads (default: up to :data:`READ_THREADS` while cores are
        idle, and one per :data:`PARALLEL_MIN_CHUNKS` chunks).
        """
        rows = self.rows
        full0, full1 = -(-i0 // rows), i1 // rows  # the whole chunks [full0, full1)
        if i0 % rows:
            c = i0 // rows
            n = min(i1, (c + 1) * rows) - i0
            dest[:n] = self.chunk(c)[i0 - c * rows : i0 - c * rows + n]
        if i1 % rows and i1 // rows >= full0:
            c = i1 // rows
            dest[c * rows - i0 : i1 - i0] = self.chunk(c)[: i1 - c * rows]
        if full1 <= full0:
            return
        base = dest.ctypes.data - i0 * dest.dtype.itemsize
        chunks = range(full0, full1)
        if threads is None:
            threads = min(READ_THREADS, len(chunks) // PARALLEL_MIN_CHUNKS + 1, idle_cores() + 1)
        helpers = min(threads, len(chunks)) - 1
        if helpers <= 0:
            for c in chunks:
                self.decode_into(c, base + c * self.nbytes)
            return
        # HDF5 reads the stored chunks here; the threads then only decompress, holding the
        # GIL for a few microseconds per chunk.
        stored = [self.fetch(c) for c in chunks]

        def unpack(c: int, dst: int) -> None:
            self.unpack(c, *stored[c - full0], dst)

        work = SharedChunks(chunks)
        for _ in range(helpers):
            read_pool().submit(work.run, unpack, base, self.nbytes)
        work.run(unpack, base, self.nbytes)
        work.wait()

    def find(self, value: int, index: npt.NDArray[np.int64], n: int) -> int:
        """Return the first row of ``[0, n)`` with ``ts >= value`` (``n`` if none).

        ``index`` holds the first ``ts`` of chunks ``0 .. len(index) - 1``; when it covers
        every chunk of the ``n`` rows, one chunk is decompressed, the one the answer is in.
        Rows past the index are bisected on disk.
        """
        if n == 0:
            return 0
        j = int(np.searchsorted(index, value, side="left"))  # index[j-1] < value <= index[j]
        if j == 0:
            return 0
        lo = (j - 1) * self.rows
        if j == index.shape[0] and j * self.rows < n:  # past the indexed chunks
            return bisect_ts(self.ds, value, lo, n)
        hi = min(n, j * self.rows)
        ts = self.chunk(j - 1)["ts"][: hi - lo]
        return lo + int(np.searchsorted(ts, value, side="left"))


def bisect_ts(ds: h5py.Dataset, value: int, lo: int, hi: int) -> int:
    """Return the first row in ``[lo, hi)`` of ``ds`` with ``ts >= value`` (``hi`` if none).

    Searches the on-disk ``ts`` column without loading it, by single-row probes: one placed
    by interpolation between the times known at both ends of the window (ticks are roughly
    evenly spread, so it lands near the answer), then one half a chunk past it on the other
    side, which usually closes the window to less than a chunk; when the pair did not shrink
    the window fourfold, a halving step follows (so the worst case stays logarithmic). Each
    probe decompresses one chunk, kept by the chunk cache for the next nearby probe; the last
    window (at most one chunk) is searched in memory.
    """
    if lo >= hi:
        return lo
    chunk = ds.chunks[0] if ds.chunks else hi - lo
    ts = ds.fields("ts")
    t_lo, t_hi = int(ts[lo]), int(ts[hi - 1])
    if value <= t_lo:
        return lo
    if value > t_hi:
        return hi
    # Invariant: ts[lo] < value <= ts[hi]; the answer is in (lo, hi].
    hi -= 1
    step = 0  # 0 interpolate, 1 guard the other side of the estimate, 2 halve
    moved_lo = False
    start = hi - lo
    while hi - lo > chunk:
        width = hi - lo
        if step == 0 and t_hi > t_lo:
            mid = lo + (value - t_lo) * width // (t_hi - t_lo)
            start = width
        elif step == 1:  # half a chunk past the estimate, on the side not yet moved
            mid = lo + chunk // 2 if moved_lo else hi - chunk // 2
        else:
            mid = lo + width // 2
        mid = min(max(mid, lo + 1), hi - 1)
        t = int(ts[mid])
        moved_lo = t < value
        if moved_lo:
            lo, t_lo = mid, t
        else:
            hi, t_hi = mid, t
        step = 1 if step == 0 else 0 if step == 2 or hi - lo <= start // 4 else 2
    block = ts[lo + 1 : hi + 1]
    return lo + 1 + int(np.searchsorted(block, value, side="left"))
