# SPDX-License-Identifier: MIT
"""Variable-length bytes kept packed, for tables that keep a blob per row (raw messages, texts).

A ``bytes`` object per row costs its header (33 bytes), pymalloc rounding and a reference
wherever it is kept; thousands of them a second, kept for hours, also pin pymalloc's arenas
(a long-lived object keeps a whole 1 MB arena resident however many short-lived ones around
it were freed). :class:`ByteArena` appends blobs to 1 MB numpy chunks and hands back each
blob's *global offset*: a row keeps that offset and the length (12 bytes). Offsets only grow,
so releasing the oldest rows frees whole chunks from the front (:meth:`ByteArena.release_below`)
and nothing is ever moved.
"""

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]

#: Bytes of a chunk; a blob longer than this gets a chunk of its own.
CHUNK_BYTES = 1 << 20


class ByteArena:
    """Blobs appended in order, read by ``(offset, length)``, released oldest first.

    Parameters
    ----------
    chunk_bytes : int
        Size of a chunk. A blob never straddles two chunks: one that does not fit in what is
        left of the current chunk starts the next (the rest of the current one stays unused).
    """

    __slots__ = ("_chunk_bytes", "_chunks", "_end", "_fill", "_starts")

    def __init__(self, chunk_bytes: int = CHUNK_BYTES) -> None:
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be positive, not {chunk_bytes}")
        self._chunk_bytes = chunk_bytes
        # Chunk n holds global offsets [_starts[n], _starts[n] + _fill of the last / its size).
        self._chunks: list[npt.NDArray[np.uint8]] = []
        self._starts: list[int] = []
        self._fill = 0  # bytes used in the last chunk
        self._end = 0  # global offset of the next byte appended

    @property
    def end(self) -> int:
        """Return the global offset the next blob would start at (if it fits the chunk)."""
        return self._end

    @property
    def nbytes(self) -> int:
        """Return the bytes of the chunks held (the last one counted as far as it is filled)."""
        if not self._chunks:
            return 0
        return sum(int(c.shape[0]) for c in self._chunks[:-1]) + self._fill

    @property
    def chunks(self) -> int:
        """Return how many chunks are held."""
        return len(self._chunks)

    def chunk_starts(self) -> list[int]:
        """Return the global offset each chunk held starts at, oldest first.

        A blob stored at exactly one of these is the first of its chunk.
        """
        return list(self._starts)

    def _new_chunk(self, size: int) -> None:
        # np.empty maps the pages; memory is used as blobs are written into them.
        self._chunks.append(np.empty(max(size, self._chunk_bytes), np.uint8))
        self._starts.append(self._end)
        self._fill = 0

    def append(self, blob: bytes) -> int:
        """Store ``blob``; return its global offset."""
        return int(self.extend([blob])[0])

    def extend(self, blobs: Sequence[bytes]) -> Ints:
        """Store ``blobs`` in order; return the global offset of each."""
        out = np.empty(len(blobs), np.int64)
        i, n = 0, len(blobs)
        while i < n:
            if not self._chunks:
                self._new_chunk(len(blobs[i]))
            room = int(self._chunks[-1].shape[0]) - self._fill
            # As many of the next blobs as fit the current chunk, written with one copy.
            j, used = i, 0
            while j < n and used + len(blobs[j]) <= room:
                used += len(blobs[j])
                j += 1
            if j == i:  # the next blob does not fit: start a chunk for it
                self._end += room
                self._new_chunk(len(blobs[i]))
                continue
            chunk, at = self._chunks[-1], self._fill
            part = blobs[i:j]
            sizes = np.fromiter(map(len, part), np.int64, j - i)
            out[i] = self._end
            np.cumsum(sizes[:-1], out=out[i + 1 : j])
            out[i + 1 : j] += self._end
            chunk[at : at + used] = np.frombuffer(b"".join(part), np.uint8)
            self._fill += used
            self._end += used
            i = j
        return out

    def get(self, offset: int, length: int) -> bytes:
        """Return the blob of ``length`` bytes stored at global ``offset``."""
        if length == 0:
            return b""
        n = bisect_right(self._starts, offset) - 1
        if n < 0:
            raise KeyError(f"offset {offset} was released (or never stored)")
        at = offset - self._starts[n]
        chunk = self._chunks[n]
        if at + length > (self._fill if n == len(self._chunks) - 1 else chunk.shape[0]):
            raise KeyError(f"no blob of {length} bytes at offset {offset}")
        return chunk[at : at + length].tobytes()

    def release_below(self, offset: int) -> None:
        """Free every chunk that holds only blobs starting below global ``offset``.

        The blobs at ``offset`` and after stay readable; the current chunk is kept.
        """
        starts = self._starts
        # Chunk n ends where chunk n + 1 starts; the last chunk always stays.
        k = bisect_right(starts, offset) - 1
        if k > 0:
            del self._chunks[:k]
            del starts[:k]

    def clear(self) -> None:
        """Free every chunk (offsets keep growing: an old offset never names a new blob)."""
        if self._chunks:
            self._end = self._starts[-1] + self._fill
        self._chunks.clear()
        self._starts.clear()
        self._fill = 0
