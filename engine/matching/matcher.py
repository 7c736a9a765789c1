# SPDX-License-Identifier: MIT
"""The matching engine of the exchange simulator: price-time priority over an L3 book.

Limit, market, IOC and FOK orders, cancels and replaces (priority kept only on a size
decrease at the same price), optional self-trade prevention. Results come back as
``EXEC_EVENT_DTYPE`` rows: acks, fills (one row per side, maker/taker flagged), cancels,
expiries and rejects with a reason.
"""

import numpy as np
import numpy.typing as npt

from engine.book.l3 import L3Arrays, L3Book
from engine.matching import _kernels as k
from engine.types import (
    BUY,
    CMD_CANCEL,
    CMD_NEW,
    CMD_REPLACE,
    EXEC_EVENT_DTYPE,
    ID_EMPTY,
    ORD_LIMIT,
    ORD_MARKET,
    ORDER_CMD_DTYPE,
    PRIO_DEFAULT,
    SELL,
    STP_CANCEL_BOTH,
    STP_NONE,
    TIF_DAY,
    TIF_FOK,
    TIF_GTC,
    TIF_IOC,
)

I64 = npt.NDArray[np.int64]
_TIFS = (TIF_DAY, TIF_GTC, TIF_IOC, TIF_FOK)

#: Events of :meth:`Matcher.submit_one` are int rows in ``EXEC_EVENT_DTYPE`` field order; these
#: are the positions of the fields in them.
EV_TS, EV_ORDER_ID, EV_OTHER_ID, EV_PX, EV_QTY, EV_LEAVES, EV_CMD = 0, 1, 2, 3, 4, 5, 6
EV_SIDE, EV_KIND, EV_LIQUIDITY, EV_REASON = 7, 8, 9, 10


def _first_bad(
    field: str, mask: npt.NDArray[np.bool_], values: npt.NDArray[np.generic], why: str
) -> None:
    if np.any(mask):
        i = int(np.flatnonzero(mask)[0])
        raise ValueError(f"cmds[{i}].{field}: {why}, got {values[i].item()!r}")


def validate_cmds(cmds: npt.NDArray[np.void]) -> None:
    """Check a batch of ``ORDER_CMD_DTYPE`` rows.

    Raises
    ------
    ValueError
        Naming the first bad row, field and value.
    """
    if cmds.dtype != ORDER_CMD_DTYPE:
        raise ValueError(f"cmds: dtype must be ORDER_CMD_DTYPE, got {cmds.dtype}")
    act = cmds["action"]
    _first_bad(
        "action",
        (act < CMD_NEW) | (act > CMD_REPLACE),
        act,
        "must be CMD_NEW, CMD_CANCEL or CMD_REPLACE",
    )
    oid = cmds["order_id"]
    _first_bad("order_id", oid == ID_EMPTY, oid, "is the reserved empty-bucket marker")
    new = act == CMD_NEW
    side = cmds["side"]
    _first_bad("side", new & (side != BUY) & (side != SELL), side, "must be BUY (1) or SELL (-1)")
    typ = cmds["ord_type"]
    _first_bad(
        "ord_type",
        new & (typ != ORD_LIMIT) & (typ != ORD_MARKET),
        typ,
        "must be ORD_LIMIT or ORD_MARKET",
    )
    tif = cmds["tif"]
    _first_bad(
        "tif", new & ~np.isin(tif, _TIFS), tif, "must be TIF_DAY, TIF_GTC, TIF_IOC or TIF_FOK"
    )
    qty = cmds["qty"]
    _first_bad("qty", (act != CMD_CANCEL) & (qty <= 0), qty, "must be > 0")


def _check_one(action: int, order_id: int, side: int, ord_type: int, tif: int, qty: int) -> None:
    # validate_cmds for one command given as scalars (same rules, same order, same texts).
    new = action == CMD_NEW
    bad: tuple[str, int, str] | None = None
    if not CMD_NEW <= action <= CMD_REPLACE:
        bad = ("action", action, "must be CMD_NEW, CMD_CANCEL or CMD_REPLACE")
    elif order_id == ID_EMPTY:
        bad = ("order_id", order_id, "is the reserved empty-bucket marker")
    elif new and side != BUY and side != SELL:
        bad = ("side", side, "must be BUY (1) or SELL (-1)")
    elif new and ord_type != ORD_LIMIT and ord_type != ORD_MARKET:
        bad = ("ord_type", ord_type, "must be ORD_LIMIT or ORD_MARKET")
    elif new and tif not in _TIFS:
        bad = ("tif", tif, "must be TIF_DAY, TIF_GTC, TIF_IOC or TIF_FOK")
    elif action != CMD_CANCEL and qty <= 0:
        bad = ("qty", qty, "must be > 0")
    if bad is not None:
        raise ValueError(f"cmds[0].{bad[0]}: {bad[2]}, got {bad[1]!r}")


class Matcher:
    """A price-time priority matching engine for one instrument.

    Parameters
    ----------
    px_min : int
        Lowest limit price accepted, ticks; orders outside the range are rejected.
    n_levels : int
        Number of price levels (``px_min .. px_min + n_levels - 1``).
    capacity : int
        Initial resting-order capacity (doubles whenever the book is full).
    stp : int
        Self-trade prevention mode, an ``STP_*`` constant; applies between orders of the
        same ``owner`` (``owner < 0`` never self-trades).
    """

    __slots__ = ("_a", "_ev", "_out", "_stp", "_ws")

    def __init__(
        self, px_min: int, n_levels: int, capacity: int = 1 << 16, stp: int = STP_NONE
    ) -> None:
        if not STP_NONE <= stp <= STP_CANCEL_BOTH:
            raise ValueError(f"stp: must be one of the STP_* modes, got {stp}")
        self._a = L3Arrays(px_min, n_levels, capacity, PRIO_DEFAULT)
        self._stp = stp
        self._out = np.zeros(1024, EXEC_EVENT_DTYPE)
        self._ws, self._ev = _workspace(stp, 1024)

    @property
    def book(self) -> L3Book:
        """A read view of the resting book (shares the arrays)."""
        return L3Book.over(self._a)

    @property
    def arrays(self) -> L3Arrays:
        """The underlying book arrays."""
        return self._a

    def _reserve(self, n_cmds: int) -> None:
        # per command at most 2 reports besides fills; fills <= resting + 2 * commands (each
        # ends a maker or its taker), 2 rows each; self-trade cancels <= resting + commands
        need = 8 * n_cmds + 3 * self._a.n_orders + 16
        if self._out.shape[0] < need:
            self._out = np.zeros(max(need, 2 * self._out.shape[0]), EXEC_EVENT_DTYPE)

    def submit(self, cmds: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
        """Process a batch of commands in order; return the events (a fresh array).

        Raises
        ------
        ValueError
            If a command is malformed (see :func:`validate_cmds`); nothing is processed.
        """
        validate_cmds(cmds)
        cm = np.ascontiguousarray(cmds)
        n = cm.shape[0]
        pos = 0
        parts = []
        while True:
            self._reserve(n - pos)
            a = self._a
            done, m = k.match_batch(
                a.o, a.lv, a.st, a.keys, a.vals, a.free, cm[pos:], self._out, self._stp
            )
            part = self._out[:m].copy()
            part["cmd"] += pos
            parts.append(part)
            pos += int(done)
            if pos >= n:
                break
            a.grow()
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def submit_one(
        self,
        ts: int,
        order_id: int,
        px: int,
        qty: int,
        owner: int,
        side: int,
        action: int,
        ord_type: int,
        tif: int,
    ) -> list[list[int]]:
        """Process one command given field by field; return its events as rows of ints.

        The same checks and results as :meth:`submit` of a one-row batch, without building
        arrays per call: the path of a simulator that sees orders one at a time. Each event
        is a list of ints in ``EXEC_EVENT_DTYPE`` field order (index it with the ``EV_*``
        constants); the kernel writes them as int rows, which convert to Python far faster
        than records.

        Raises
        ------
        ValueError
            If the command is malformed (see :func:`validate_cmds`); nothing is processed.
        """
        if not (  # the usual command, checked at once; anything else by _check_one
            action == CMD_NEW
            and side in (BUY, SELL)
            and ord_type in (ORD_LIMIT, ORD_MARKET)
            and tif in _TIFS
            and qty > 0
            and order_id != ID_EMPTY
        ):
            _check_one(action, order_id, side, ord_type, tif, qty)
        a = self._a
        while True:
            m = k.match_one(
                a.o, a.lv, a.st, a.tab, a.free, self._ws,
                ts, order_id, px, qty, owner, side, action, ord_type, tif,
            )  # fmt: skip
            if m >= 0:
                return self._ev[:m].tolist()  # type: ignore[no-any-return]
            if m == -1:
                a.grow()
            else:
                rows = max(8 + 3 * a.n_orders + 16, 2 * self._ev.shape[0])
                self._ws, self._ev = _workspace(self._stp, rows)


def _workspace(stp: int, rows: int) -> tuple[I64, I64]:
    # match_one's workspace (the MW_* layout of the kernels) and its int rows of events
    ws = np.zeros(k.MW_OUT + (k.MW_OUT_WIDTH + k.MW_EV_WIDTH) * rows, np.int64)
    ws[k.MW_STP] = stp
    ws[k.MW_ROWS] = rows
    ev = ws[k.MW_OUT + k.MW_OUT_WIDTH * rows :].reshape(rows, k.MW_EV_WIDTH)
    return ws, ev


def make_cmds(n: int) -> npt.NDArray[np.void]:
    """Return ``n`` zeroed command rows with ``owner = -1``, GTC limit defaults."""
    c = np.zeros(n, ORDER_CMD_DTYPE)
    c["owner"] = -1
    c["ord_type"] = ORD_LIMIT
    c["tif"] = TIF_GTC
    c["action"] = CMD_NEW
    return c
