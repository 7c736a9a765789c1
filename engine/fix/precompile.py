# SPDX-License-Identifier: MIT
"""Compile (or load) the FIX decoder's kernels before the first message (``engine.warmup``).

A module of its own: the warm-up needs the codec and the layout table together, and the codec
imports the layouts, so neither of them can hold it without an import cycle.
"""

from engine.fix import _kernels as k
from engine.fix.codec import FixDecoder, encode
from engine.fix.layouts import LayoutTable


def warm_up() -> None:
    """Decode a Heartbeat (framing kernels), keep its layout, prove it valid (layout kernels).

    Every kernel the decoder and the layout table call from Python is compiled here, each for
    the argument types it gets at run time: the framing kernel alone (no layouts), the layout
    check alone (a block read before its layout was kept, marked again: ``recheck``), and the
    framing and layout kernel in one (``scan_and_check_ws``). The per-message stages inside
    them are inlined, so a stage called from Python is a compilation of its own.
    """
    frame = encode(b"FIX.4.4", b"0", [(34, b"1"), (49, b"A"), (56, b"B")], [])
    dec = FixDecoder()
    (msg,) = dec.feed(frame)
    table = LayoutTable()
    dec.layouts = table
    (unknown,) = dec.feed(frame)
    table.add(msg.tags, b"0", [(k.CHECK_ANY, 0)] * len(msg.tags))
    if table.recheck(unknown._b, unknown._k) != table.valid:
        raise RuntimeError(
            "FIX layout warm-up: a Heartbeat read before its layout was kept "
            "was not proven valid once kept"
        )
    batch = dec.decode_batch(frame)
    if batch.checked != [table.valid]:
        raise RuntimeError("FIX layout warm-up: a kept Heartbeat layout was not proven valid")
