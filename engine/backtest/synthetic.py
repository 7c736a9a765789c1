# SPDX-License-Identifier: MIT
"""Synthetic market data for demos, tests and benchmarks (deterministic in a seed)."""

import numpy as np
import numpy.typing as npt

from engine.backtest import _kernels as bk
from engine.types import L2_EVENT_DTYPE


def random_walk_l2(
    n_steps: int,
    *,
    seed: int = 1,
    levels: int = 5,
    p_move: float = 0.02,
    p_trade: float = 0.1,
    start_px: int = 100_000,
    t0: int = 1_700_000_000_000_000_000,
    gap_ns: float = 100_000.0,
) -> npt.NDArray[np.void]:
    """Return ``L2_EVENT_DTYPE`` rows of a one-tick market whose touch walks at random.

    Each of ``n_steps`` steps moves the touch one tick with probability ``p_move`` (the far
    touch trades out), trades part of a touch level with probability ``p_trade``, or resizes
    one of the ``levels`` levels per side. About 1.3 rows per step.
    """
    if n_steps < 0 or levels < 2:
        raise ValueError(f"n_steps must be >= 0 and levels >= 2, got {n_steps}, {levels}")
    if not (p_move >= 0 and p_trade >= 0 and p_move + p_trade <= 1):
        raise ValueError(
            f"p_move and p_trade must be >= 0 with a sum <= 1, got {p_move}, {p_trade}"
        )
    out = np.zeros(5 * n_steps + 2 * levels, L2_EVENT_DTYPE)
    m = bk.random_walk_l2(out, n_steps, seed, levels, p_move, p_trade, start_px, t0, gap_ns)
    return out[:m].copy()
