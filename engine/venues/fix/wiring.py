# SPDX-License-Identifier: MIT
"""The FIX wing's part of an engine configuration: ``[sessions] file``, ``instruments[].session``.

:func:`build_fix_venues` turns the initiator sessions of a QuickFIX-style ``.cfg`` into
venues (a :class:`FixVenue` per session, with its market-data feed, its initiator and its
place in the :class:`FixLink`) and says which venue each configured instrument trades on. The
engine (``engine.headless``) routes the instruments and starts the components; it knows no
FIX.
"""

import asyncio
from collections.abc import Sequence
from pathlib import Path

from engine.core import Component, Engine
from engine.fix.store import WriteBarrier
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.feed import FixMarketData
from engine.venues.fix.link import FixLink


class FixWiringError(ValueError):
    """The FIX part of a configuration cannot be built (which file, session, key and why)."""


def build_fix_venues(
    engine: Engine,
    sessions_file: Path,
    instruments: Sequence[tuple[str, Instrument, str]],
    market: MarketData | None,
    *,
    store_dir: Path | None = None,
    barrier: WriteBarrier | None = None,
    market_data_for: Sequence[Instrument] = (),
) -> tuple[list[tuple[Instrument, FixVenue]], list[Component]]:
    """Build the initiator sessions of ``sessions_file``; return the routes and components.

    ``instruments`` are (where the configuration says it, instrument, session id): each
    trades on the session named (the file's first initiator when none is). Sessions whose
    section sets no ``FileStorePath`` keep their store in ``store_dir``; with a journal,
    ``barrier`` is its ``after_written`` (write-ahead). Market data on the sessions goes into
    ``market``; ``market_data_for`` are instruments that trade elsewhere (another protocol)
    whose market data the file's first initiator session subscribes to.

    Raises
    ------
    FixWiringError
        For a file without initiator sessions or an instrument naming no session of it (and
        ``engine.fix.settings.SettingsError`` for a malformed file).
    """
    from engine.fix.cli import build_session
    from engine.fix.settings import load_settings
    from engine.fix.transport import SocketInitiator

    settings = load_settings(sessions_file)
    initiators = {str(s.session_id): s for s in settings.sessions if s.is_initiator}
    if not initiators:
        raise FixWiringError(
            f"{sessions_file}: no initiator sessions (the engine connects out to venues)"
        )
    link = FixLink(engine.bus, engine.clock, store_dir=store_dir, write_barrier=barrier)
    loop = asyncio.get_event_loop()
    venues: dict[str, FixVenue] = {}
    for sid, s in initiators.items():
        # The desk reconciles the venue's working orders when its link comes up.
        venue = FixVenue(engine.clock, name=sid, defer=loop.call_soon, publish=engine.bus.publish)
        session = build_session(s, venue, sessions_file.parent, link.store_dir)
        venue.bind(session)
        if market is not None:
            venue.set_feed(FixMarketData(market, engine.clock))
        initiator = SocketInitiator(
            session,
            s.connect_addresses(),
            reconnect_interval=float(s.reconnect_interval),
            clock=engine.clock,
        )
        link.initiators.append(initiator)
        link.track(session, settings=s, settings_file=sessions_file)
        link.add_startup(initiator.start)
        venues[sid] = venue
    routes: list[tuple[Instrument, FixVenue]] = []
    for where, instrument, sid in instruments:
        found = venues.get(sid) if sid else next(iter(venues.values()))
        if found is None:
            raise FixWiringError(
                f"{where}.session: {sid!r} is not an "
                f"initiator session of {sessions_file} "
                f"(there: {', '.join(initiators)})"
            )
        routes.append((instrument, found))
    first = next(iter(venues.values()))
    if market is not None and first.feed is not None:
        for instrument in market_data_for:
            first.feed.add_instrument(instrument)
    return routes, [link]
