# SPDX-License-Identifier: MIT
"""Message layouts a session has found valid, checked again by the decoder's kernel.

Validation against a data dictionary (:mod:`engine.fix.validation`) walks a message's fields in
Python; for a *layout* it has already found valid (the same tags in the same order, the same
MsgType <35>) only the value checks of that layout remain, and those are simple: a number, a
price, a timestamp, one of the enum values. A :class:`LayoutTable` keeps such layouts with their
checks as a small program per layout, in one flat int64 array the decoder's kernel
(:func:`engine.fix._kernels.check_layouts`) runs for every frame it decodes. A message it proves
valid reaches the session marked so (:attr:`FixMessage.checked` equals :attr:`LayoutTable.valid`)
and is not validated again in Python; anything else (a new layout, a value the program cannot
prove, a layout with a check no program expresses) is validated in Python as before. The
kernel's checks are never looser than Python's: a failed check proves nothing, so a message
the program refuses is simply validated in Python, which finds the reject or accepts it.

A table belongs to one session and to the dictionaries it validates with: the session clears it
(a new :attr:`generation`, so marks made before mean nothing) when they change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from engine.fix import _kernels as k

if TYPE_CHECKING:
    from engine.fix.message import Block

#: A layout's program: per field ``(kind, argument)``; the argument of CHECK_ENUM is the set of
#: values (bytes of at most 8), of CHECK_COUNT the number of entries, else 0.
Program = Sequence[tuple[int, int | frozenset[bytes]]]

#: Layouts kept per table; when full it starts again (its oldest layouts are validated in Python
#: until they are found valid again).
MAX_LAYOUTS = 512
_SLOTS = 4 * MAX_LAYOUTS  # a power of two: at most a quarter full


def pack(value: bytes) -> int:
    """Return ``value`` (at most 8 bytes) as the int the kernel compares with.

    Little-endian, as an int64 holds it (an eighth byte of 0x80 or more makes it negative,
    as the kernel's packing of the same bytes does).
    """
    v = int.from_bytes(value, "little")
    return v - (1 << 64) if v >= 1 << 63 else v


class LayoutTable:
    """The layouts one session found valid, as the kernel reads them (see the module).

    Attributes
    ----------
    table : int64[:]
        What :func:`~engine.fix._kernels.check_layouts` reads; replaced as layouts are added.
    generation : int
        Starts at 1, incremented by :meth:`clear`.
    base, valid : int
        ``generation * 4``: what the kernel adds to its LAYOUT_* results; ``base +
        LAYOUT_VALID``, the mark of a message proven valid by this generation.
    """

    __slots__ = ("_code", "_enums", "_keys", "_progs", "base", "generation", "table", "valid")

    def __init__(self) -> None:
        self.generation = 0
        self.clear()

    def __len__(self) -> int:
        return self._progs

    def clear(self) -> None:
        """Forget every layout; marks of earlier generations no longer mean valid."""
        self.generation += 1
        self.base = self.generation * 4
        self.valid = self.base + k.LAYOUT_VALID
        self._keys: set[tuple[int, ...]] = set()
        self._progs = 0
        self._code = 0  # code rows used
        self._enums = 0  # enum values used
        self.table = self._allocate(1024, 256)

    def _allocate(self, code_rows: int, enum_values: int) -> npt.NDArray[np.int64]:
        slots = k.TABLE_HEADER
        progs = slots + _SLOTS
        code = progs + k.PROG_COLUMNS * MAX_LAYOUTS
        enums = code + 3 * code_rows
        table = np.zeros(enums + 2 * enum_values, dtype=np.int64)
        table[k.TABLE_MASK] = _SLOTS - 1
        table[k.TABLE_SLOTS] = slots
        table[k.TABLE_PROGS] = progs
        table[k.TABLE_CODE] = code
        table[k.TABLE_ENUMS] = enums
        return table

    def _grow(self, code_rows: int, enum_values: int) -> None:
        old = self.table
        code_cap = (old[k.TABLE_ENUMS] - old[k.TABLE_CODE]) // 3
        enum_cap = (len(old) - old[k.TABLE_ENUMS]) // 2
        if self._code + code_rows <= code_cap and self._enums + enum_values <= enum_cap:
            return
        new = self._allocate(
            max(2 * code_cap, self._code + code_rows), max(2 * enum_cap, self._enums + enum_values)
        )
        e_old, e_new = int(old[k.TABLE_ENUMS]), int(new[k.TABLE_ENUMS])
        # Slots, programs and code stay where they were; the enum values move up.
        new[k.TABLE_HEADER : e_old] = old[k.TABLE_HEADER : e_old]
        new[e_new : e_new + 2 * self._enums] = old[e_old : e_old + 2 * self._enums]
        self.table = new

    def add(self, tags: Sequence[int], msg_type: bytes, program: Program | None) -> bool:
        """Keep a layout found valid: ``tags`` in wire order, its MsgType <35>, its program.

        ``program`` None keeps the layout as one the kernel cannot prove (its messages are
        marked LAYOUT_UNPROVEN and validated in Python, without being offered again); so does
        a program with an enum value longer than 8 bytes. The field at MsgType's position is
        checked to equal ``msg_type`` whatever ``program`` says. Returns False when the layout
        was already kept or cannot be (MsgType not third or longer than 8 bytes).
        """
        n = len(tags)
        if n < 3 or tags[2] != 35 or not 0 < len(msg_type) <= 8:
            return False
        key = (*tags, pack(msg_type), len(msg_type))
        if key in self._keys:
            return False
        if self._progs >= MAX_LAYOUTS:
            self.clear()
        steps = _steps(program, n, msg_type)
        values = 0 if steps is None else sum(len(a) for _, a in steps if isinstance(a, list))
        self._grow(n, values)
        t = self.table
        code = int(t[k.TABLE_CODE]) + 3 * self._code
        t[code : code + 3 * n : 3] = tags
        for j, (kind, arg) in enumerate(steps or ()):
            t[code + 3 * j + 1] = kind
            t[code + 3 * j + 2] = self._enum(arg) if isinstance(arg, list) else arg
        h = int(k.layout_hash(np.asarray(tags, np.int64), 0, n, pack(msg_type), len(msg_type)))
        po = int(t[k.TABLE_PROGS]) + k.PROG_COLUMNS * self._progs
        t[po : po + k.PROG_COLUMNS] = (h, self._code, n, int(steps is not None))
        mask, slots = int(t[k.TABLE_MASK]), int(t[k.TABLE_SLOTS])
        slot = h & mask
        while t[slots + slot]:
            slot = (slot + 1) & mask
        self._progs += 1
        t[slots + slot] = self._progs  # program number + 1
        self._code += n
        self._keys.add(key)
        return True

    def _enum(self, values: list[bytes]) -> int:
        # Store an enum's values; return CHECK_ENUM's argument (first value << 16 | count).
        t = self.table
        at = int(t[k.TABLE_ENUMS]) + 2 * self._enums
        for i, v in enumerate(values):
            t[at + 2 * i] = pack(v)
            t[at + 2 * i + 1] = len(v)
        first = self._enums
        self._enums += len(values)
        return (first << 16) | len(values)

    def recheck(self, block: Block, first: int) -> int:
        """Mark again, in place, the messages of ``block`` from ``first`` on that it left unknown.

        A read decoded before the session kept a layout carries LAYOUT_UNKNOWN marks for every
        message of that layout (the first read of a session holds hundreds of orders). Once the
        layout is kept, one kernel call proves the rest of the block, rather than each message
        being validated in Python (~14 µs a NewOrderSingle). Marks of this generation other
        than LAYOUT_UNKNOWN, and every mark of another generation, stay as they are. Returns
        the mark of message ``first`` afterwards.
        """
        checked = block.checked
        if checked is None or not self._progs:
            return 0 if checked is None else checked[first]
        starts = block.first
        nm = len(starts) - 1 - first
        f0, f1 = starts[first], starts[-1]
        msgs = np.zeros((nm, k.MSG_COLUMNS), dtype=np.int64)  # status 0: FRAME_OK
        msgs[:, 0] = block.cuts[first:-1]
        at = np.asarray(starts[first:], dtype=np.int64)
        msgs[:, 2] = at[:-1] - f0
        msgs[:, 3] = np.diff(at)
        fields = np.empty((3, f1 - f0), dtype=np.int64)
        fields[0] = block.tags[f0:f1]
        fields[1] = block.starts[f0:f1]
        fields[2] = block.ends[f0:f1]
        out = np.empty(nm, dtype=np.int64)
        buf = block.buf if type(block.buf) is bytes else bytes(block.buf)  # (one compiled type)
        k.check_layouts(buf, msgs, nm, fields, self.table, out, self.base)
        unknown = self.base + k.LAYOUT_UNKNOWN
        for i, mark in enumerate(out.tolist(), first):
            if checked[i] == unknown:
                checked[i] = mark
        return checked[first]

    def check(
        self,
        buf: bytes,
        msgs: npt.NDArray[np.int64],
        nm: int,
        fields: npt.NDArray[np.int64],
        out: npt.NDArray[np.int64],
    ) -> None:
        """Mark the first ``nm`` frames of a decoded batch (see the module) into ``out``."""
        k.check_layouts(buf, msgs, nm, fields, self.table, out, self.base)


def _steps(
    program: Program | None, n: int, msg_type: bytes
) -> list[tuple[int, int | list[bytes]]] | None:
    # The program as stored: enum values sorted, MsgType's field checked for ``msg_type``;
    # None when there is none or it cannot be stored.
    if program is None or len(program) != n:
        return None
    out: list[tuple[int, int | list[bytes]]] = []
    for j, (kind, arg) in enumerate(program):
        if j == 2:
            kind, arg = k.CHECK_ENUM, frozenset((msg_type,))
        if isinstance(arg, frozenset):
            values = sorted(arg)
            if kind != k.CHECK_ENUM or len(values) > 0xFFFF or any(len(v) > 8 for v in values):
                return None
            out.append((kind, values))
        else:
            out.append((kind, arg))
    return out
