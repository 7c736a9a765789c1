# SPDX-License-Identifier: MIT
"""Precompile OUCH: every OUCH kernel run once (``engine.warmup`` calls this), before any order.

The codec's kernel path (a message encoded and decoded each way, with an appendage), the
SoupBinTCP framer and the stores' record walk and CRC (on files in a temporary folder, removed
after).
"""

import tempfile

from engine.venues.ouch.messages import (
    INBOUND,
    OUTBOUND,
    Decoder,
    Encoder,
    EnterOrder,
    OrderAccepted,
    OuchMessage,
    TagValue,
)
from engine.venues.ouch.soupbin import UNSEQUENCED_DATA, FrameReader, packet
from engine.venues.ouch.store import FileClientState, FileSequencedStore


def warm_up() -> None:
    """Call each kernel on a small input; raise ``RuntimeError`` if a round trip differs."""
    firm = (TagValue.of("Firm", "WARM"),)
    enter = EnterOrder(
        user_ref_num=1,
        side="B",
        quantity=100,
        symbol="WARM",
        price=10_000,
        cl_ord_id="W1",
        appendage=firm,
    )
    accepted = OrderAccepted(
        timestamp=1,
        user_ref_num=1,
        side="B",
        quantity=100,
        symbol="WARM",
        price=10_000,
        time_in_force="0",
        display="Y",
        order_reference_number=1,
        capacity="A",
        inter_market_sweep_eligibility="N",
        cross_type="N",
        order_state="L",
        cl_ord_id="W1",
        appendage=firm,
    )
    encoder = Encoder()
    pairs: tuple[tuple[OuchMessage, int], ...] = ((enter, INBOUND), (accepted, OUTBOUND))
    for message, direction in pairs:
        # The kernel paths (the struct paths need no warming): encode_fields, decode_fields.
        raw = encoder.encode_by_kernel(message)
        if Decoder(direction).decode_by_kernel(raw) != message:
            raise RuntimeError(f"OUCH warm-up: {message.NAME} did not round-trip")
    frame = packet(UNSEQUENCED_DATA, encoder.encode(enter))
    if len(FrameReader().feed(frame + frame[:3])) != 1:
        raise RuntimeError("OUCH warm-up: the framer did not find the one whole packet")
    with tempfile.TemporaryDirectory(prefix="qw-ouch-warm-") as folder:
        store = FileSequencedStore(folder, "warm")
        store.append(encoder.encode(accepted))
        store.close()
        again = FileSequencedStore(folder, "warm")
        replayed = again.get_range(1, 2)
        again.close()
        state = FileClientState(folder, "warm")
        state.take_user_ref_num()
        state.close()
        FileClientState(folder, "warm").close()
    if len(replayed) != 1:
        raise RuntimeError("OUCH warm-up: the store did not give back the message it took")
