# SPDX-License-Identifier: MIT
"""What the columnar tables find rows and values with: key indexes, integer sets, string pools.

:class:`KeyIndex` maps an integer key to a row's global position (direct-mapped while the keys
are dense, a dict otherwise), :class:`SortedIndex` does it for scattered keys in 16 bytes a key,
:class:`IntSet` keeps a set of 64-bit values at 8 bytes each, and :class:`StringPool` interns
the strings rows store as small integers (:mod:`widgets.tables.columnar`).
"""

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]

#: Keys the direct-mapped index may cover beyond 8 per stored key before it falls back to a dict.
DENSE_SLACK = 1 << 16


class KeyIndex:
    """Map integer keys to integer positions: an array for dense keys, a dict for the rest.

    Order ids grow from a counter, so ``positions[key - lo]`` covers them at 8 bytes a key
    (a dict costs ~100). Keys far outside the covered range go to a dict. ``-1`` means absent.
    """

    __slots__ = ("_count", "_extra", "_lo", "_map")

    def __init__(self) -> None:
        self._lo = 0
        self._map: Ints = np.empty(0, np.int64)
        self._extra: dict[int, int] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Return the bytes of the array part (the dict part is usually empty)."""
        return int(self._map.nbytes)

    @property
    def span(self) -> int:
        """Return how many keys the array part covers."""
        return int(self._map.shape[0])

    def get(self, key: int) -> int:
        """Return the position of ``key``, or -1."""
        i = key - self._lo
        if 0 <= i < self._map.shape[0]:
            p: int = self._map.item(i)
            return p
        return self._extra.get(key, -1)

    def _cover(self, lo: int, hi: int, adding: int) -> bool:
        """Widen the array to cover keys ``lo..hi`` if that stays dense; return whether it does.

        ``adding``: how many keys are about to be stored in that range. Dense means at most 8
        array slots per key (with some slack): two engines' id ranges far apart (a console
        attached to several) stay one array and a dict, not a terabyte of slots.
        """
        m = self._map
        cur_lo, cur_hi = self._lo, self._lo + m.shape[0] - 1
        if m.shape[0] and cur_lo <= lo and hi <= cur_hi:
            return True
        new_lo = min(lo, cur_lo) if m.shape[0] else lo - 1024
        new_hi = max(hi, cur_hi) if m.shape[0] else hi
        need = new_hi - new_lo + 1
        if need > 8 * (self._count + adding) + DENSE_SLACK:
            return False
        size = max(need, 2 * m.shape[0]) if new_hi > cur_hi else need
        grown = np.full(size, -1, np.int64)
        off = cur_lo - new_lo
        grown[off : off + m.shape[0]] = m
        self._map, self._lo = grown, new_lo
        if self._extra:  # keys the array now covers move into it
            for k in [k for k in self._extra if 0 <= k - new_lo < size]:
                grown[k - new_lo] = self._extra.pop(k)
        return True

    def set(self, key: int, pos: int) -> None:
        """Map ``key`` (new or known) to ``pos``."""
        i = key - self._lo
        m = self._map
        if not 0 <= i < m.shape[0]:
            if key not in self._extra and self._cover(key, key, 1):
                self.set(key, pos)
                return
            self._count += key not in self._extra
            self._extra[key] = pos
            return
        self._count += int(m[i]) < 0
        m[i] = pos

    def pop(self, key: int) -> None:
        """Forget ``key`` (if known)."""
        i = key - self._lo
        if 0 <= i < self._map.shape[0]:
            self._count -= int(self._map[i]) >= 0
            self._map[i] = -1
        elif self._extra.pop(key, None) is not None:
            self._count -= 1

    def get_many(self, keys: Ints) -> Ints:
        """Return the position of each key (-1 where absent)."""
        out = np.full(keys.shape[0], -1, np.int64)
        if not keys.shape[0]:
            return out
        i = keys - self._lo
        inside = (i >= 0) & (i < self._map.shape[0])
        out[inside] = self._map[i[inside]]
        if self._extra and not inside.all():
            extra = self._extra
            for n in np.flatnonzero(~inside).tolist():
                out[n] = extra.get(int(keys[n]), -1)
        return out

    def set_many(self, keys: Ints, pos: Ints) -> None:
        """Map each key to the position beside it (keys distinct)."""
        if not keys.shape[0]:
            return
        self._cover(int(keys.min()), int(keys.max()), int(keys.shape[0]))
        i = keys - self._lo
        inside = (i >= 0) & (i < self._map.shape[0])
        ii = i[inside]
        self._count += int(np.count_nonzero(self._map[ii] < 0))
        self._map[ii] = pos[inside]
        if not inside.all():
            for k, p in zip(keys[~inside].tolist(), pos[~inside].tolist(), strict=True):
                self._count += k not in self._extra
                self._extra[k] = p

    def pop_many(self, keys: Ints) -> None:
        """Forget every key in ``keys``."""
        if not keys.shape[0]:
            return
        i = keys - self._lo
        inside = (i >= 0) & (i < self._map.shape[0])
        ii = i[inside]
        self._count -= int(np.count_nonzero(self._map[ii] >= 0))
        self._map[ii] = -1
        if self._extra and not inside.all():
            for k in keys[~inside].tolist():
                self._count -= self._extra.pop(k, None) is not None

    def trim_below(self, lowest: int) -> None:
        """Release the array's part below key ``lowest`` (no key below it is stored)."""
        cut = lowest - self._lo
        if cut > self._map.shape[0] // 2:
            self._map = self._map[cut:].copy()
            self._lo = lowest

    def clear(self) -> None:
        """Forget every key."""
        self._lo = 0
        self._map = np.empty(0, np.int64)
        self._extra = {}
        self._count = 0


class SortedIndex:
    """Map sparse integer keys to positions: sorted arrays, 16 bytes a key.

    For keys a :class:`KeyIndex` would cover too thinly (engine sequence numbers of the few
    events a table shows: a dict entry per key costs ~100 bytes). Keys arriving in increasing
    order are appended; others are inserted (a copy of the arrays, as is a removal). Same
    interface as :class:`KeyIndex`; ``-1`` means absent.
    """

    __slots__ = ("_keys", "_n", "_pos")

    def __init__(self) -> None:
        self._keys: Ints = np.empty(0, np.int64)
        self._pos: Ints = np.empty(0, np.int64)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Return the bytes of the keys and positions in use."""
        return 16 * self._n

    @property
    def span(self) -> int:
        """Return how many keys are stored (the arrays hold no gaps)."""
        return self._n

    def _find(self, keys: Ints) -> tuple[Ints, npt.NDArray[np.bool_]]:
        k = self._keys[: self._n]
        at = np.searchsorted(k, keys)
        found = np.zeros(keys.shape[0], bool)
        if self._n:
            inside = at < self._n
            found[inside] = k[at[inside]] == keys[inside]
        return at, found

    def get(self, key: int) -> int:
        """Return the position of ``key``, or -1."""
        return int(self.get_many(np.array([key], np.int64))[0])

    def get_many(self, keys: Ints) -> Ints:
        """Return the position of each key (-1 where absent)."""
        at, found = self._find(keys)
        out = np.full(keys.shape[0], -1, np.int64)
        out[found] = self._pos[at[found]]
        return out

    def set(self, key: int, pos: int) -> None:
        """Map ``key`` (new or known) to ``pos``."""
        self.set_many(np.array([key], np.int64), np.array([pos], np.int64))

    def set_many(self, keys: Ints, pos: Ints) -> None:
        """Map each key to the position beside it (keys distinct)."""
        if not keys.shape[0]:
            return
        at, found = self._find(keys)
        self._pos[at[found]] = pos[found]
        new_keys, new_pos = keys[~found], pos[~found]
        if not new_keys.shape[0]:
            return
        order = np.argsort(new_keys, kind="stable")
        new_keys, new_pos = new_keys[order], new_pos[order]
        n, m = self._n, new_keys.shape[0]
        if n + m > self._keys.shape[0]:
            size = max(2 * (n + m), 1024)
            keys_, pos_ = np.empty(size, np.int64), np.empty(size, np.int64)
            keys_[:n], pos_[:n] = self._keys[:n], self._pos[:n]
            self._keys, self._pos = keys_, pos_
        if not n or new_keys[0] > self._keys[n - 1]:  # the usual case: newer keys
            self._keys[n : n + m] = new_keys
            self._pos[n : n + m] = new_pos
        else:
            where = np.searchsorted(self._keys[:n], new_keys)
            self._keys[: n + m] = np.insert(self._keys[:n], where, new_keys)
            self._pos[: n + m] = np.insert(self._pos[:n], where, new_pos)
        self._n = n + m

    def pop(self, key: int) -> None:
        """Forget ``key`` (if known)."""
        self.pop_many(np.array([key], np.int64))

    def pop_many(self, keys: Ints) -> None:
        """Forget every key in ``keys``."""
        if not keys.shape[0] or not self._n:
            return
        at, found = self._find(keys)
        if not found.any():
            return
        keep = np.ones(self._n, bool)
        keep[at[found]] = False
        m = int(keep.sum())
        self._keys[:m] = self._keys[: self._n][keep]
        self._pos[:m] = self._pos[: self._n][keep]
        self._n = m

    def trim_below(self, lowest: int) -> None:
        """Do nothing: only the keys stored take room."""

    def clear(self) -> None:
        """Forget every key."""
        self._keys = np.empty(0, np.int64)
        self._pos = np.empty(0, np.int64)
        self._n = 0


class StringPool:
    """Interned strings: each distinct one stored once, referred to by its index.

    A row keeps the index in a ``u4`` field (symbols, texts): a few bytes instead of a
    reference and, for each distinct string, one object for the whole table.
    """

    __slots__ = ("_index", "_values")

    def __init__(self) -> None:
        self._values: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def __getitem__(self, i: int) -> str:
        return self._values[i]

    def intern(self, value: str) -> int:
        """Return the index of ``value``, stored now if it is new."""
        i = self._index.get(value)
        if i is None:
            i = self._index[value] = len(self._values)
            self._values.append(value)
        return i

    def remap(self, values: Sequence[str]) -> npt.NDArray[np.uint32]:
        """Return this pool's index of each of ``values`` (another table's strings)."""
        return np.array([self.intern(v) for v in values] or [0], np.uint32)

    def values(self) -> tuple[str, ...]:
        """Return every string, by index."""
        return tuple(self._values)


class IntSet:
    """A set of int64 values (hashes of keys) at 8 bytes each: a sorted array plus the newest.

    A Python ``set`` of ints costs ~75 bytes a member (the int object and the table's slot).
    Here members live in a sorted int64 array; new ones wait in a small ``set`` until there
    are ``merge_at`` of them, then are merged in with one sort of a nearly sorted array.
    """

    __slots__ = ("_merge_at", "_recent", "_sorted")

    def __init__(self, merge_at: int = 4096) -> None:
        self._sorted: Ints = np.empty(0, np.int64)
        self._recent: set[int] = set()
        self._merge_at = merge_at

    def __len__(self) -> int:
        return int(self._sorted.shape[0]) + len(self._recent)

    def __contains__(self, value: object) -> bool:
        if value in self._recent:
            return True
        if not isinstance(value, int):
            return False
        s = self._sorted
        i = int(np.searchsorted(s, value))
        return i < s.shape[0] and int(s[i]) == value

    @property
    def nbytes(self) -> int:
        """Return the bytes of the sorted array."""
        return int(self._sorted.nbytes)

    def contains_many(self, values: Ints) -> npt.NDArray[np.bool_]:
        """Return whether each of ``values`` is a member."""
        s = self._sorted
        at = np.minimum(np.searchsorted(s, values), max(0, s.shape[0] - 1))
        found = s[at] == values if s.shape[0] else np.zeros(values.shape[0], bool)
        if self._recent:
            recent = self._recent
            found |= np.fromiter((v in recent for v in values.tolist()), bool, values.shape[0])
        return found

    def add_many(self, values: Iterable[int]) -> None:
        """Add ``values`` (members already in are left as they are)."""
        vals = np.fromiter(values, np.int64)
        s = self._sorted
        if s.shape[0] and vals.shape[0]:
            at = np.minimum(np.searchsorted(s, vals), s.shape[0] - 1)
            vals = vals[s[at] != vals]
        self._recent.update(vals.tolist())
        if len(self._recent) >= self._merge_at:
            # The newest are not in the array (checked above): one insert, no sort of it all.
            new = np.sort(np.fromiter(self._recent, np.int64, len(self._recent)))
            self._recent = set()
            self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, new), new)

    def discard_many(self, values: Ints) -> None:
        """Remove ``values`` (those not members are ignored)."""
        if not values.shape[0]:
            return
        recent = self._recent
        if recent:
            recent.difference_update(values.tolist())
        s = self._sorted
        if s.shape[0]:
            # Binary searches in the sorted array (np.isin would sort both).
            at = np.searchsorted(s, values)
            inside = at < s.shape[0]
            hit = at[inside][s[at[inside]] == values[inside]]
            if hit.shape[0]:
                keep = np.ones(s.shape[0], bool)
                keep[hit] = False
                self._sorted = s[keep]

    def clear(self) -> None:
        """Remove every member."""
        self._sorted = np.empty(0, np.int64)
        self._recent = set()
