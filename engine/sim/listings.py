# SPDX-License-Identifier: MIT
"""The simulator's listings from configuration (``[[instruments]]`` of the engine TOML).

Both ``[simulator] enabled = true`` in an engine and ``qwconsole sim --config engine.toml``
list what the configuration's ``[[instruments]]`` say: tick size, lot size, multiplier,
``initial_price`` and the participants' activity (``participant_events_per_second``,
``participant_volatility_ticks``; 0 events per second is a book nobody trades in but us).
An instrument without ``initial_price`` names one of the demo's listings (ESZ6, NQZ6, CLF7);
no instruments at all are the demo's three.
"""

from collections.abc import Sequence
from decimal import Decimal

from engine.config.model import InstrumentConfig
from engine.demo import DEMO_LISTINGS
from engine.sim.exchange import FlowConfig, SimInstrument

#: Price range of a listing, ticks (start ± half of it), when its price allows.
DEFAULT_RANGE_TICKS = 4000
#: Least room below the initial price, ticks.
MIN_START_TICKS = 20


def sim_listings(instruments: Sequence[InstrumentConfig]) -> tuple[SimInstrument, ...]:
    """Return the simulator's listings for ``instruments``; ``ValueError`` naming the entry."""
    if not instruments:
        return DEMO_LISTINGS
    demo = {x.instrument.symbol: x for x in DEMO_LISTINGS}
    out: list[SimInstrument] = []
    for i, ins in enumerate(instruments):
        if not ins.initial_price:
            listing = demo.get(ins.symbol)
            if listing is None:
                raise ValueError(
                    f"instruments[{i}]: {ins.symbol} is not traded by this engine: give it "
                    f"initial_price to list it on the simulator (the demo lists "
                    f"{', '.join(demo)} without one)"
                )
            out.append(listing)
            continue
        instrument = ins.instrument()
        start = int(Decimal(ins.initial_price) / instrument.tick_size)
        if start < MIN_START_TICKS:
            raise ValueError(
                f"instruments[{i}].initial_price: {ins.initial_price} is {start} ticks of "
                f"{ins.tick_size}; the simulator needs at least {MIN_START_TICKS}"
            )
        n_levels = min(DEFAULT_RANGE_TICKS, 2 * (start - 1))
        flow = FlowConfig(
            events_per_second=ins.participant_events_per_second,
            volatility_ticks=ins.participant_volatility_ticks,
        )
        out.append(
            SimInstrument(instrument=instrument, start_px_ticks=start, n_levels=n_levels, flow=flow)
        )
    return tuple(out)
