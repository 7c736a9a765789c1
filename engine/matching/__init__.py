# SPDX-License-Identifier: MIT
"""Matching engine, queue-position models and replays over the book kernels."""

from engine.matching.matcher import Matcher, make_cmds, validate_cmds
from engine.matching.models import ConservativeQueue, LogProbQueue, PowerProbQueue, QueueModel
from engine.matching.queue import L2QueuePositions, L3QueuePositions

__all__ = [
    "ConservativeQueue",
    "L2QueuePositions",
    "L3QueuePositions",
    "LogProbQueue",
    "Matcher",
    "PowerProbQueue",
    "QueueModel",
    "make_cmds",
    "validate_cmds",
]
