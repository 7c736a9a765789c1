# SPDX-License-Identifier: MIT
"""The HDF5 tick store: one file, a group per instrument and UTC day, a dataset per kind.

Layout (schema version :data:`engine.tickstore.schema.SCHEMA_VERSION`, ``docs/tickstore.md``)::

    /                         attrs: format, schema_version
    /<symbol key>/            attrs: symbol (the real name; "/" and "%" are %-escaped in the key)
    /<symbol key>/<YYYYMMDD>/ attrs: symbol, day, tick_size, lot_size, venue
        trades | bbo | l2 | mbo | l2_snap   1-D chunked datasets of the schema's row types

Every dataset is sorted by ``ts`` and compressed with Blosc-lz4 + shuffle; next to it,
``<kind>.chunk_ts`` holds the first ``ts`` of each chunk (the chunk index). A
:class:`TickStore` opened for reading finds the bounds of a time range in that index (one
chunk decompressed per bound), or, in a file without it, by bisecting the on-disk ``ts``
column (no full column load). It reads the stored chunks raw and decompresses them straight
into the result, in several threads while cores are idle, and iterates in chunks of bounded
size. A :class:`DayWriter` appends in batches, keeps the chunk index, and checks every batch
(row type, ``ts`` order, day) before anything reaches the file. A store opened with
``swmr=True`` for writing is readable by other processes while it grows (HDF5
single-writer/multiple-reader): readers open it with ``TickStore(path)`` (SWMR reading,
without the file lock, so that a writer may open the file while it is read) and call
:meth:`refresh` to see rows appended since; instrument-days created since appear after
reopening.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, Final, Literal, ParamSpec, TypeVar

import h5py
import hdf5plugin
import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log
from engine.tickstore.schema import KINDS, L2_SNAPSHOT_KIND, SCHEMA_VERSION, l2_snapshot_dtype
from engine.tickstore.summaries import DaySummary, day_summaries

#: Value of the root attribute ``format``.
FORMAT_NAME: Final[str] = "qwconsole-tickstore"
#: Rows per HDF5 chunk (about 1.5 MiB of 48-byte rows): the unit of compression and I/O.
CHUNK_ROWS: Final[int] = 32768
#: Chunk cache of an open file, bytes (holds the chunks a bisection probes twice).
CHUNK_CACHE_BYTES: Final[int] = 64 << 20
#: Every kind a day group may hold.
ALL_KINDS: Final[tuple[str, ...]] = (*KINDS, L2_SNAPSHOT_KIND)
#: Nanoseconds per day.
DAY_NS: Final[int] = 86_400_000_000_000
#: Name suffix of the chunk index next to each dataset (``bbo`` -> ``bbo.chunk_ts``).
INDEX_SUFFIX: Final[str] = ".chunk_ts"
#: Threads that decompress the chunks of one large read (the calling thread is one of them).
READ_THREADS: Final[int] = max(1, min(4, os.cpu_count() or 1))
#: Whole chunks a read needs before it is shared between threads.
PARALLEL_MIN_CHUNKS: Final[int] = 8
#: HDF5 filter id of Blosc (hdf5plugin).
_BLOSC_FILTER: Final[int] = 32001
#: Times a SWMR reader reads one metadata block whose checksum fails before it gives up.
#: HDF5 retries (a writer may be rewriting the block) with sleeps doubling from 1 ns; its
#: default of 100 attempts sleeps for days on a truncated file (measured: ``import ls`` still
#: asleep after 900 s). 28 attempts give a writer about 0.27 s in all.
SWMR_READ_ATTEMPTS: Final[int] = 28
#: The HDF5 superblock signature (at offset 0, 512, 1024, 2048, ... after a userblock).
_HDF5_SIGNATURE: Final[bytes] = b"\x89HDF\r\n\x1a\n"

log = get_log(__name__)
Rows = npt.NDArray[np.void]
_P = ParamSpec("_P")
_R = TypeVar("_R")


class TickStoreError(OSError):
    """A tick store cannot be opened, read or written as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class DayInfo:
    """What one instrument-day group holds.

    ``rows`` maps each stored kind to its row count; ``first_ts``/``last_ts`` span every kind
    (0 when the day is empty); ``n_levels`` is the depth of ``l2_snap`` (0 when absent).
    """

    symbol: str
    day: str
    tick_size: str
    lot_size: str
    venue: str
    rows: dict[str, int]
    first_ts: int
    last_ts: int
    n_levels: int


def symbol_key(symbol: str) -> str:
    """Return the HDF5 group name of ``symbol`` ("/" and "%" %-escaped, "." alone refused)."""
    if not symbol or symbol in {".", ".."} or not symbol.isprintable():
        raise ValueError(f"symbol: {symbol!r} is not a usable instrument name")
    return symbol.replace("%", "%25").replace("/", "%2F")


def day_of(ts_ns: int) -> str:
    """Return the UTC day ``YYYYMMDD`` of a time in ns since the epoch."""
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ts_ns // 1000)).strftime(
        "%Y%m%d"
    )


def day_start_ns(day: str) -> int:
    """Return the first ns of UTC day ``YYYYMMDD``; ``ValueError`` for anything else."""
    try:
        if len(day) != 8 or not day.isdigit():
            raise ValueError
        d = datetime.strptime(day, "%Y%m%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"day: {day!r} is not a date YYYYMMDD") from None
    return int(d.timestamp()) * 1_000_000_000


def _check_decimal(name: str, text: str) -> str:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{name}: {text!r} is not a decimal number") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"{name}: {text!r} must be a positive number")
    return text


def _kind_dtype(kind: str, n_levels: int) -> np.dtype[np.void]:
    if kind in KINDS:
        return KINDS[kind]
    if kind == L2_SNAPSHOT_KIND:
        if n_levels < 1:
            raise ValueError("l2_snap: give the writer n_levels (depth of the snapshots)")
        return l2_snapshot_dtype(n_levels)
    raise ValueError(f"kind: {kind!r} is not one of {', '.join(ALL_KINDS)}")


def _compression() -> dict[str, Any]:
    return dict(hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))


class _Blosc:
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
def _blosc() -> _Blosc | None:
    """Return the Blosc decompressor, or ``None`` (reads then go through HDF5's filter)."""
    try:
        lib = ctypes.CDLL(hdf5plugin.get_config().registered_filters["blosc"])
        return _Blosc(lib)
    except (OSError, KeyError, AttributeError):
        return None


@functools.cache
def _hdf5_lib() -> ctypes.CDLL | None:
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


def _swmr_read_fapl(cache: dict[str, Any]) -> h5py.h5p.PropFAID | None:
    """Return a file-access list for SWMR reading with bounded metadata retries.

    ``None`` if the HDF5 library cannot be reached (h5py's defaults then apply).
    """
    lib = _hdf5_lib()
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


def _open_swmr_read(path: Path, cache: dict[str, Any]) -> h5py.File:
    """Open ``path`` for SWMR reading without the file lock, metadata retries bounded."""
    fapl = _swmr_read_fapl(cache)
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
                if head[:8] == _HDF5_SIGNATURE:
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


def _idle_cores() -> int:
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
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max(1, READ_THREADS - 1), thread_name_prefix="tickstore-read")


class _Shared:
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


class _RawFile:
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


class _ChunkReader:
    """Reads whole chunks of one Blosc-compressed 1-D dataset, decompressing them in place.

    :meth:`chunk` keeps the last few chunks it decompressed: the chunk that a range bound was
    found in is the chunk the range starts or ends in, so a read decompresses it once. With a
    :class:`_RawFile` the stored bytes are read outside HDF5 (and outside the GIL); a chunk
    that then does not decompress (a SWMR writer moved it meanwhile) is read again by HDF5.
    """

    def __init__(self, ds: h5py.Dataset, blosc: _Blosc, raw: _RawFile | None = None) -> None:
        self.ds = ds
        self.rows: int = ds.chunks[0]
        self.nbytes: int = self.rows * ds.dtype.itemsize
        self._blosc = blosc
        self._raw = raw
        self._decoded: dict[int, Rows] = {}

    @staticmethod
    def of(ds: h5py.Dataset, raw: _RawFile | None = None) -> _ChunkReader | None:
        """Return a reader for ``ds``, or ``None`` if its storage is not one Blosc filter."""
        blosc = _blosc()
        if blosc is None or ds.chunks is None or len(ds.chunks) != 1:
            return None
        plist = ds.id.get_create_plist()
        if plist.get_nfilters() != 1 or plist.get_filter(0)[0] != _BLOSC_FILTER:
            return None
        return _ChunkReader(ds, blosc, raw)

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
            threads = min(READ_THREADS, len(chunks) // PARALLEL_MIN_CHUNKS + 1, _idle_cores() + 1)
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

        work = _Shared(chunks)
        for _ in range(helpers):
            _pool().submit(work.run, unpack, base, self.nbytes)
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
            return _bisect(self.ds, value, lo, n)
        hi = min(n, j * self.rows)
        ts = self.chunk(j - 1)["ts"][: hi - lo]
        return lo + int(np.searchsorted(ts, value, side="left"))


def _bisect(ds: h5py.Dataset, value: int, lo: int, hi: int) -> int:
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


class DayWriter:
    """Append rows to one instrument-day group, in batches.

    Rows are buffered per kind and written ``batch_rows`` at a time (and on :meth:`flush`).
    Every :meth:`append` checks the row type, that ``ts`` never decreases (within the batch and
    against what was already appended) and that every ``ts`` falls on the writer's UTC day; a
    bad batch raises ``ValueError`` and nothing of it is kept.
    """

    def __init__(self, store: TickStore, group: h5py.Group, n_levels: int, batch_rows: int):
        self._store = store
        self._group = group
        self.symbol: str = str(group.attrs["symbol"])
        self.day: str = str(group.attrs["day"])
        self._t0 = day_start_ns(self.day)
        self._n_levels = n_levels
        self._batch_rows = batch_rows
        self._pending: dict[str, list[Rows]] = {}
        self._pending_rows: dict[str, int] = {}
        self._last_ts: dict[str, int] = {}
        self._closed = False
        stored: dict[str, int] = {}
        for kind in ALL_KINDS:
            if kind in group:
                ds = group[kind]
                stored[kind] = int(ds.shape[0])
                if ds.shape[0]:
                    self._last_ts[kind] = int(ds.fields("ts")[ds.shape[0] - 1])
        self._summaries: list[DaySummary] = []
        for factory in day_summaries():
            summary = factory(store.path, self.symbol, self.day, str(group.attrs["tick_size"]),
                              str(group.attrs["lot_size"]), stored)  # fmt: skip
            if summary is not None:
                self._summaries.append(summary)

    def __enter__(self) -> DayWriter:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def dtype(self, kind: str) -> np.dtype[np.void]:
        """Return the row type of ``kind`` in this day."""
        return _kind_dtype(kind, self._n_levels)

    def last_ts(self, kind: str) -> int | None:
        """Return the ``ts`` of the last row appended to ``kind`` (``None`` if none yet)."""
        return self._last_ts.get(kind)

    def append(self, kind: str, rows: Rows) -> None:
        """Queue ``rows`` (1-D array of ``kind``'s row type) for writing.

        Raises
        ------
        ValueError
            If the dtype is not the kind's, ``ts`` goes backwards, or a row is off the day;
            the message names the row and the value.
        """
        if self._closed:
            raise TickStoreError(f"{self.symbol}/{self.day}: the writer is closed")
        want = self.dtype(kind)
        if rows.dtype != want:
            raise ValueError(f"{kind}: rows must have dtype {want}, got {rows.dtype}")
        if rows.ndim != 1:
            raise ValueError(f"{kind}: rows must be 1-D, got shape {rows.shape}")
        n = rows.shape[0]
        if n == 0:
            return
        ts = rows["ts"]
        prev = self._last_ts.get(kind)
        if prev is not None and ts[0] < prev:
            raise ValueError(
                f"{self.symbol}/{self.day}/{kind}: row 0 ts {int(ts[0])} is before the last "
                f"stored ts {prev} (rows must be sorted by ts)"
            )
        if n > 1:
            back = np.flatnonzero(ts[1:] < ts[:-1])
            if back.size:
                i = int(back[0]) + 1
                raise ValueError(
                    f"{self.symbol}/{self.day}/{kind}: row {i} ts {int(ts[i])} is before row "
                    f"{i - 1} ts {int(ts[i - 1])} (rows must be sorted by ts)"
                )
        off = np.flatnonzero((ts < self._t0) | (ts >= self._t0 + DAY_NS))
        if off.size:
            i = int(off[0])
            raise ValueError(
                f"{self.symbol}/{self.day}/{kind}: row {i} ts {int(ts[i])} is on day "
                f"{day_of(int(ts[i]))}, not {self.day}"
            )
        self._pending.setdefault(kind, []).append(np.array(rows, copy=True))
        self._pending_rows[kind] = self._pending_rows.get(kind, 0) + n
        self._last_ts[kind] = int(ts[-1])
        if self._pending_rows[kind] >= self._batch_rows:
            self._write(kind)

    def _dataset(self, kind: str) -> h5py.Dataset:
        if kind in self._group:
            ds: h5py.Dataset = self._group[kind]
            return ds
        ds = self._group.create_dataset(
            kind,
            shape=(0,),
            maxshape=(None,),
            dtype=self.dtype(kind),
            chunks=(self._store.chunk_rows,),
            **_compression(),
        )
        if kind == L2_SNAPSHOT_KIND:
            ds.attrs["n_levels"] = self._n_levels
        return ds

    def _write(self, kind: str) -> None:
        parts = self._pending.pop(kind, [])
        self._pending_rows.pop(kind, None)
        if not parts:
            return
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        ds = self._dataset(kind)
        n0 = ds.shape[0]
        ds.resize((n0 + rows.shape[0],))
        ds.write_direct(np.ascontiguousarray(rows), dest_sel=np.s_[n0 : n0 + rows.shape[0]])
        self._write_index(kind, ds, n0, rows["ts"])
        for summary in list(self._summaries):
            try:
                summary.append(kind, rows)
            except Exception:  # a cache: the rows are written, the summary is dropped
                log.warning("%s/%s: summary dropped", self.symbol, self.day, exc_info=True)
                self._summaries.remove(summary)

    def _write_index(self, kind: str, ds: h5py.Dataset, n0: int, ts: npt.NDArray[np.int64]) -> None:
        """Append the first ``ts`` of every chunk that rows ``n0 ..`` started to the index.

        The index (``<kind>.chunk_ts``, int64, attribute ``chunk_rows``) lets a range read
        find its bounds without reading chunks. Rows are only ever appended, so an entry never
        changes once written. Entries missing from before (a file written by an older version)
        are read back from the dataset first.
        """
        rows = int(ds.chunks[0])
        name = kind + INDEX_SUFFIX
        idx: h5py.Dataset | None = self._group.get(name)
        if idx is None:
            idx = self._group.create_dataset(
                name, shape=(0,), maxshape=(None,), dtype=np.int64, chunks=(4096,)
            )
            idx.attrs["chunk_rows"] = rows
        elif int(idx.attrs.get("chunk_rows", 0)) != rows:
            return
        have, want = int(idx.shape[0]), -(-(n0 + ts.shape[0]) // rows)
        if want <= have:
            return
        starts = np.arange(have, want, dtype=np.int64) * rows
        first = np.empty(want - have, np.int64)
        mine = starts >= n0
        first[mine] = ts[starts[mine] - n0]
        column = ds.fields("ts")
        for j in np.flatnonzero(~mine):
            first[j] = int(column[int(starts[j])])
        idx.resize((want,))
        idx[have:want] = first

    def flush(self, *, to_disk: bool = True) -> None:
        """Write every queued row; with ``to_disk``, flush the file (readers then see it).

        Several writers of one store may write with ``to_disk=False`` and leave one
        :meth:`TickStore.flush` to the caller.
        """
        for kind in list(self._pending):
            self._write(kind)
        if to_disk:
            self._store.flush()

    def close(self) -> None:
        """Flush and stop accepting rows (the store stays open)."""
        if not self._closed:
            self.flush()
            self._closed = True
            for summary in self._summaries:
                try:
                    summary.close()
                except Exception:  # a cache: the next open builds it from the rows
                    log.warning("%s/%s: summary not kept", self.symbol, self.day, exc_info=True)
            self._summaries.clear()


def _reads(
    method: Callable[Concatenate[TickStore, _P], _R],
) -> Callable[Concatenate[TickStore, _P], _R]:
    """Turn HDF5's errors in a read of a damaged file into :class:`TickStoreError`."""

    @functools.wraps(method)
    def wrapper(self: TickStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (OSError, RuntimeError) as e:
            raise self._damaged(e) from e
        except KeyError as e:  # h5py's, when an object's header cannot be read
            if str(e.args[0] if e.args else "").startswith("Unable to") or truncation(self.path):
                raise self._damaged(e) from e
            raise

    return wrapper


class TickStore:
    """An HDF5 tick-store file.

    Parameters
    ----------
    path : str | Path
        The file.
    mode : "r" | "a"
        ``"r"`` reads (also a file another process is writing with SWMR); ``"a"`` reads and
        writes, creating the file if needed.
    swmr : bool
        With ``mode="a"``: switch the file to SWMR writing once opened, so that readers in
        other processes can follow it while it grows (and a killed writer leaves a readable
        file). New instrument-days are created before the switch or through :meth:`writer`.
    chunk_rows : int
        Rows per chunk of datasets created through this store.
    """

    def __init__(
        self,
        path: str | Path,
        mode: Literal["r", "a"] = "r",
        *,
        swmr: bool = False,
        chunk_rows: int = CHUNK_ROWS,
    ) -> None:
        if mode not in ("r", "a"):
            raise ValueError(f"mode: must be 'r' or 'a', got {mode!r}")
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows: must be >= 1, got {chunk_rows}")
        self.path = Path(path)
        self.mode = mode
        self.chunk_rows = chunk_rows
        self._swmr_read = False
        self._writers: list[DayWriter] = []
        self._indexes: dict[str, npt.NDArray[np.int64]] = {}
        self._blosc_datasets: dict[str, bool] = {}
        self.file = self._open(swmr)
        self._raw: _RawFile | None = None
        if mode == "r":
            try:
                userblock = int(self.file.id.get_create_plist().get_userblock())
                self._raw = _RawFile(self.path, userblock)
            except OSError:  # HDF5 has it open: its own reads still work
                self._raw = None

    def _open(self, swmr: bool) -> h5py.File:
        cache: dict[str, Any] = {"rdcc_nbytes": CHUNK_CACHE_BYTES, "rdcc_nslots": 10007}
        if self.mode == "r":
            return self._open_read(cache)
        new = not self.path.exists() or self.path.stat().st_size == 0
        try:
            f = h5py.File(self.path, "a", libver="latest", **cache)
        except OSError as e:
            hint = ""
            if "already open for write" in str(e):
                hint = (
                    " (a writer was killed: run TickStore.recover(path) or "
                    "'qwconsole import recover PATH')"
                )
            elif "unable to lock file" in str(e):
                hint = " (another process is writing it)"
            elif (cut := truncation(self.path)) is not None:
                raise TickStoreError(f"{self.path}: damaged file ({cut})") from e
            raise TickStoreError(f"{self.path}: cannot open for writing ({e}){hint}") from e
        if new:
            f.attrs["format"] = FORMAT_NAME
            f.attrs["schema_version"] = SCHEMA_VERSION
        else:
            self._check_format(f)
        if swmr:
            f.swmr_mode = True
        return f

    def _open_read(self, cache: dict[str, Any]) -> h5py.File:
        if not self.path.exists():
            raise TickStoreError(f"{self.path}: no such tick store")
        try:
            # SWMR reading without the file lock: a recorder or an import may open the file
            # for writing while it is read (they write SWMR-safely).
            f = _open_swmr_read(self.path, cache)
            self._swmr_read = True
        except OSError:
            try:
                f = h5py.File(self.path, "r", **cache)  # an older-format HDF5 file
            except OSError as e:
                if "unable to lock file" in str(e):
                    raise TickStoreError(
                        f"{self.path}: another process is writing it (not in SWMR mode); "
                        "open it when that is done"
                    ) from e
                raise self._damaged(e, "not a readable HDF5 file") from e
        try:
            self._check_format(f)
        except (OSError, RuntimeError, KeyError) as e:
            f.close()
            raise self._damaged(e) from e
        return f

    def _damaged(self, error: BaseException, what: str = "damaged file") -> TickStoreError:
        """Return the error for a store HDF5 failed to read: truncated, or HDF5's reason."""
        cut = truncation(self.path)
        if cut is not None:
            return TickStoreError(f"{self.path}: damaged file ({cut})")
        if isinstance(error, TickStoreError):
            return error
        text = str(error)
        reason = text[text.find("(") + 1 : text.rfind(")")] if text.endswith(")") else text
        return TickStoreError(f"{self.path}: {what} (HDF5: {reason})")

    def _check_format(self, f: h5py.File) -> None:
        if f.attrs.get("format") != FORMAT_NAME:
            f.close()
            raise TickStoreError(f"{self.path}: not a tick store (no format={FORMAT_NAME!r})")
        version = int(f.attrs.get("schema_version", -1))
        if version != SCHEMA_VERSION:
            f.close()
            raise TickStoreError(
                f"{self.path}: schema version {version}, this build reads {SCHEMA_VERSION}"
            )

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> TickStore:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Flush open writers and close the file."""
        if self.file.id.valid:
            for w in self._writers:
                w.close()
            self.file.close()
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    def flush(self) -> None:
        """Push everything written so far to disk (readers see it after :meth:`refresh`)."""
        if self.mode == "a":
            self.file.flush()

    @_reads
    def refresh(self) -> None:
        """See rows a SWMR writer appended since the file was opened.

        Instrument-days created after the file was opened appear after reopening it.
        """
        self._indexes.clear()
        if self._swmr_read:
            for sym in self.file.values():
                for day in sym.values():
                    for ds in day.values():
                        ds.refresh()

    @staticmethod
    def recover(path: str | Path) -> int:
        """Make the file of a killed SWMR writer writable again; return its instrument-days.

        HDF5 marks a file open for SWMR writing in its superblock; a killed writer leaves the
        mark, which refuses further writers. The file is read (it is consistent) and copied
        into a fresh file that replaces it atomically.
        """
        src_path = Path(path)
        tmp = src_path.with_name(src_path.name + ".recover.tmp")
        tmp.unlink(missing_ok=True)
        copied = 0
        cache: dict[str, Any] = {"rdcc_nbytes": CHUNK_CACHE_BYTES, "rdcc_nslots": 10007}
        cut = truncation(src_path)
        if cut is not None:  # HDF5 would copy the missing chunks as zeros, without a word
            raise TickStoreError(f"{src_path}: cannot be recovered ({cut})")
        try:
            with (
                _open_swmr_read(src_path, cache) as src,
                h5py.File(tmp, "w", libver="latest") as dst,
            ):
                for k, v in src.attrs.items():
                    dst.attrs[k] = v
                for name in src:
                    src.copy(src[name], dst, name=name)
                    copied += len(src[name])
        except (OSError, RuntimeError, KeyError) as e:
            tmp.unlink(missing_ok=True)
            if not src_path.exists():
                raise TickStoreError(f"{src_path}: no such tick store") from e
            cut = truncation(src_path)
            text = str(e.args[0] if isinstance(e, KeyError) and e.args else e)
            reason = cut or f"HDF5: {text[text.find('(') + 1 : text.rfind(')')] or text}"
            raise TickStoreError(f"{src_path}: cannot be recovered ({reason})") from e
        tmp.replace(src_path)
        return copied

    # ------------------------------------------------------------------ catalogue
    @_reads
    def instruments(self) -> list[str]:
        """Return the symbols with at least one stored day, sorted."""
        return sorted(
            str(g.attrs.get("symbol", k))
            for k, g in self.file.items()
            if any(len(d) == 8 and d.isdigit() for d in g)
        )

    @_reads
    def days(self, symbol: str) -> list[str]:
        """Return the days (``YYYYMMDD``, ascending) stored for ``symbol`` ([] if none)."""
        key = symbol_key(symbol)
        if key not in self.file:
            return []
        return sorted(k for k in self.file[key] if len(k) == 8 and k.isdigit())

    def _day(self, symbol: str, day: str) -> h5py.Group:
        key = symbol_key(symbol)
        if key not in self.file or day not in self.file[key]:
            raise KeyError(f"{symbol}/{day}: not in {self.path}")
        g: h5py.Group = self.file[key][day]
        return g

    @_reads
    def kinds(self, symbol: str, day: str) -> list[str]:
        """Return the kinds stored for one instrument-day."""
        return [k for k in ALL_KINDS if k in self._day(symbol, day)]

    @_reads
    def increments(self, symbol: str, day: str) -> tuple[str, str]:
        """Return the ``(tick_size, lot_size)`` an instrument-day was stored with (no rows read)."""
        g = self._day(symbol, day)
        return str(g.attrs["tick_size"]), str(g.attrs["lot_size"])

    @_reads
    def info(self, symbol: str, day: str) -> DayInfo:
        """Describe one instrument-day; ``KeyError`` if it is not stored."""
        g = self._day(symbol, day)
        rows: dict[str, int] = {}
        first, last = math.inf, -math.inf
        n_levels = 0
        for kind in ALL_KINDS:
            if kind not in g:
                continue
            ds = g[kind]
            n = int(ds.shape[0])
            rows[kind] = n
            if kind == L2_SNAPSHOT_KIND:
                n_levels = int(ds.attrs["n_levels"])
            if n:
                # the first time from the chunk index when there is one (no chunk to inflate)
                idx = g.get(kind + INDEX_SUFFIX)
                ts = ds.fields("ts")
                first = min(first, int(idx[0]) if idx is not None and idx.shape[0] else int(ts[0]))
                last = max(last, int(ts[n - 1]))
        return DayInfo(
            symbol=symbol,
            day=day,
            tick_size=str(g.attrs["tick_size"]),
            lot_size=str(g.attrs["lot_size"]),
            venue=str(g.attrs["venue"]),
            rows=rows,
            first_ts=0 if first == math.inf else int(first),
            last_ts=0 if last == -math.inf else int(last),
            n_levels=n_levels,
        )

    # ---------------------------------------------------------------------- reads
    def _dataset(self, symbol: str, day: str, kind: str) -> h5py.Dataset | None:
        if kind not in ALL_KINDS:
            raise ValueError(f"kind: {kind!r} is not one of {', '.join(ALL_KINDS)}")
        g = self._day(symbol, day)
        ds: h5py.Dataset | None = g.get(kind)
        return ds

    @_reads
    def dtype(self, symbol: str, day: str, kind: str) -> np.dtype[np.void]:
        """Return the row type of ``kind`` in one instrument-day."""
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return _kind_dtype(kind, 1)
        dt: np.dtype[np.void] = np.dtype(ds.dtype)
        return dt

    def _index(self, ds: h5py.Dataset, n: int) -> npt.NDArray[np.int64]:
        """Return the first ``ts`` of each chunk of ``ds`` that holds rows of the first ``n``.

        Empty when the file has no usable index for ``ds`` (written before it existed). It
        may cover fewer chunks: a writer of an older version appended. A store opened for
        reading keeps each index it loaded (entries never change; a longer one is loaded
        when the dataset has grown past it, and :meth:`refresh` drops them).
        """
        rows = ds.chunks[0] if ds.chunks else 0
        need = -(-n // rows) if rows else 0
        got = self._indexes.get(ds.name)
        if got is None or got.shape[0] < need:
            got = np.empty(0, np.int64)
            idx = ds.parent.get(ds.name.rsplit("/", 1)[-1] + INDEX_SUFFIX)
            usable = isinstance(idx, h5py.Dataset) and idx.dtype == np.int64 and rows > 0
            if usable and int(idx.attrs.get("chunk_rows", 0)) == rows:
                got = idx[:]
            if self.mode == "r":
                self._indexes[ds.name] = got
        return got[:need]

    def _reader(self, ds: h5py.Dataset) -> _ChunkReader | None:
        blosc = self._blosc_datasets.get(ds.name)
        reader = _ChunkReader.of(ds, self._raw) if blosc is None or blosc else None
        if self.mode == "r":
            self._blosc_datasets[ds.name] = reader is not None
        return reader

    def _locate(
        self, ds: h5py.Dataset, t0: int | None, t1: int | None
    ) -> tuple[int, int, _ChunkReader | None]:
        n = int(ds.shape[0])
        reader = self._reader(ds)
        index = self._index(ds, n) if reader is not None else np.empty(0, np.int64)
        if reader is None or index.shape[0] == 0:
            i0 = 0 if t0 is None else _bisect(ds, t0, 0, n)
            i1 = n if t1 is None else _bisect(ds, t1, i0, n)
        else:
            i0 = 0 if t0 is None else reader.find(t0, index, n)
            i1 = n if t1 is None else reader.find(t1, index, n)
        return i0, max(i0, i1), reader

    @_reads
    def row_range(
        self, symbol: str, day: str, kind: str, t0: int | None = None, t1: int | None = None
    ) -> tuple[int, int]:
        """Return the rows ``[i0, i1)`` of ``kind`` with ``t0 <= ts < t1``.

        The bounds come from the chunk index (one chunk decompressed per bound), or by
        bisecting the ``ts`` column on disk in a file without one.
        """
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return 0, 0
        i0, i1, _ = self._locate(ds, t0, t1)
        return i0, i1

    @_reads
    def read(
        self,
        symbol: str,
        day: str,
        kind: str,
        t0: int | None = None,
        t1: int | None = None,
        *,
        out: Rows | None = None,
    ) -> Rows:
        """Return the rows of ``kind`` with ``t0 <= ts < t1`` (all rows by default).

        A kind the day does not hold gives an empty array of its row type. ``out`` (a 1-D
        C-contiguous array of the row type, long enough) receives the rows instead of a new
        array, and the filled part of it is returned: a caller reading many ranges saves the
        page faults of a fresh array each time.
        """
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return np.empty(0, _kind_dtype(kind, 1)) if out is None else out[:0]
        i0, i1, reader = self._locate(ds, t0, t1)
        if out is not None:
            if out.dtype != ds.dtype or out.ndim != 1 or not out.flags.c_contiguous:
                raise ValueError(f"out: must be a 1-D C-contiguous {ds.dtype} array")
            if out.shape[0] < i1 - i0:
                raise ValueError(f"out: holds {out.shape[0]} rows, the range has {i1 - i0}")
        return self._read_rows(ds, i0, i1, out, reader)

    @_reads
    def read_rows(self, symbol: str, day: str, kind: str, i0: int, i1: int) -> Rows:
        """Return rows ``[i0, i1)`` of ``kind`` by position (clipped to the rows there are).

        The bisection of times that :meth:`read` does is skipped: for callers that number
        rows themselves (the Analyzer's pyramid buckets).
        """
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return np.empty(0, _kind_dtype(kind, 1))
        n = int(ds.shape[0])
        i0, i1 = min(max(i0, 0), n), min(max(i1, 0), n)
        return self._read_rows(ds, i0, max(i0, i1), None, self._reader(ds))

    @staticmethod
    def _read_rows(
        ds: h5py.Dataset,
        i0: int,
        i1: int,
        out: Rows | None = None,
        reader: _ChunkReader | None = None,
    ) -> Rows:
        dest = np.empty(i1 - i0, ds.dtype) if out is None else out[: i1 - i0]
        if i1 > i0:
            if reader is not None:
                reader.read(i0, i1, dest)
            else:
                ds.read_direct(dest, np.s_[i0:i1])
        return dest

    def iter_chunks(
        self,
        symbol: str,
        day: str,
        kind: str,
        t0: int | None = None,
        t1: int | None = None,
        rows: int = 1 << 20,
    ) -> Iterator[Rows]:
        """Yield the rows of :meth:`read` as arrays of at most ``rows`` rows, in order."""
        if rows < 1:
            raise ValueError(f"rows: must be >= 1, got {rows}")
        try:
            ds = self._dataset(symbol, day, kind)
            if ds is None:
                return
            i0, i1, reader = self._locate(ds, t0, t1)
            for a in range(i0, i1, rows):
                part = self._read_rows(ds, a, min(a + rows, i1), None, reader)
                yield part
        except (OSError, RuntimeError) as e:
            raise self._damaged(e) from e

    # --------------------------------------------------------------------- writes
    def writer(
        self,
        symbol: str,
        day: str,
        *,
        tick_size: str,
        lot_size: str,
        venue: str = "",
        n_levels: int = 0,
        batch_rows: int | None = None,
    ) -> DayWriter:
        """Return a writer appending to ``symbol``'s ``day`` (created if missing).

        ``tick_size`` and ``lot_size`` are decimal text (price = px * tick_size); an existing
        day must have the same ones. ``n_levels`` is the depth of ``l2_snap`` rows, if any.
        """
        if self.mode != "a":
            raise TickStoreError(f"{self.path}: opened read-only")
        _check_decimal("tick_size", tick_size)
        _check_decimal("lot_size", lot_size)
        day_start_ns(day)
        key = symbol_key(symbol)
        sym = self.file.require_group(key)
        sym.attrs["symbol"] = symbol
        if day in sym:
            g = sym[day]
            for name, want in (("tick_size", tick_size), ("lot_size", lot_size)):
                have = str(g.attrs[name])
                if Decimal(have) != Decimal(want):
                    raise ValueError(f"{symbol}/{day}: {name} is {have} in the store, not {want}")
            if L2_SNAPSHOT_KIND in g:
                stored = int(g[L2_SNAPSHOT_KIND].attrs["n_levels"])
                if n_levels and n_levels != stored:
                    raise ValueError(f"{symbol}/{day}: l2_snap has {stored} levels, not {n_levels}")
                n_levels = stored
        else:
            g = sym.create_group(day)
            g.attrs.update(
                {
                    "symbol": symbol,
                    "day": day,
                    "tick_size": tick_size,
                    "lot_size": lot_size,
                    "venue": venue,
                }
            )
        w = DayWriter(self, g, n_levels, batch_rows or self.chunk_rows)
        self._writers.append(w)
        return w

    def delete_day(self, symbol: str, day: str) -> None:
        """Remove one instrument-day (its space is reused by later writes, not returned)."""
        g = self._day(symbol, day)
        parent = g.parent
        del parent[day]
        if len(parent) == 0:
            del self.file[symbol_key(symbol)]


__all__ = [
    "ALL_KINDS",
    "CHUNK_ROWS",
    "DayInfo",
    "DayWriter",
    "TickStore",
    "TickStoreError",
    "day_of",
    "day_start_ns",
    "symbol_key",
]
