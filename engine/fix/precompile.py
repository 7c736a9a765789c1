# SPDX-License-Identifier: MIT
"""Compile (or load) the FIX decoder's kernels before the first message (``engine.warmup``).

A module of its own: the warm-up needs the codec and the layout table together, and the codec
imports the layouts, so neither of them can hold it without an import cycle.
"""

from engine.fix import _kernels as k
from engine.fix.codec import FixDecoder, encode
from engine.fix.layouts import LayoutTable


def warm_up() -> None:
    """Decode a Heartbeat (framing kernels), then keep its layout and prove it valid."""
    frame = encode(b"FIX.4.4", b"0", [(34, b"1"), (49, b"A"), (56, b"B")], [])
    dec = FixDecoder()
    (msg,) = dec.feed(frame)
    table = LayoutTable()
    table.add(msg.tags, b"0", [(k.CHECK_ANY, 0)] * len(msg.tags))
    dec.layouts = table
    batch = dec.decode_batch(frame)
    if batch.checked != [table.valid]:
        raise RuntimeError("FIX layout warm-up: a kept Heartbeat layout was not proven valid")
