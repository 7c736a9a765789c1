# SPDX-License-Identifier: MIT
"""Queue-position models for own orders in an L2 book, as small frozen parameter records.

In an L2 (market-by-price) feed a cancel at the own order's price may come from in front of
it or from behind. The models split each level decrease that trades do not explain:

* :class:`ConservativeQueue` puts every cancel behind the own order, so it advances only on
  trades at its price (and when the level shrinks below the estimated quantity ahead);
* :class:`PowerProbQueue` and :class:`LogProbQueue` are the probabilistic families of the
  queue-position literature: with ``front`` lots ahead and ``back`` behind, the share of a
  decrease taken from behind is ``f(back) / (f(back) + f(front))``, with ``f(x) = x**n`` or
  ``f(x) = log(1 + x)``.
"""

from dataclasses import dataclass

from engine.types import QM_CONSERVATIVE, QM_LOG, QM_POWER


@dataclass(frozen=True, slots=True)
class ConservativeQueue:
    """Advance only on trades at the price (and on the level shrinking below the front)."""

    @property
    def code(self) -> tuple[int, float]:
        """Kernel model code and parameter."""
        return QM_CONSERVATIVE, 0.0


@dataclass(frozen=True, slots=True)
class PowerProbQueue:
    """Probabilistic queue model with ``f(x) = x**n``.

    Parameters
    ----------
    n : float
        Exponent, > 0; larger values put cancels more often at the longer side.
    """

    n: float = 3.0

    def __post_init__(self) -> None:
        if not self.n > 0:
            raise ValueError(f"PowerProbQueue.n: must be > 0, got {self.n!r}")

    @property
    def code(self) -> tuple[int, float]:
        """Kernel model code and parameter."""
        return QM_POWER, float(self.n)


@dataclass(frozen=True, slots=True)
class LogProbQueue:
    """Probabilistic queue model with ``f(x) = log(1 + x)``."""

    @property
    def code(self) -> tuple[int, float]:
        """Kernel model code and parameter."""
        return QM_LOG, 0.0


QueueModel = ConservativeQueue | PowerProbQueue | LogProbQueue
