# SPDX-License-Identifier: MIT
"""The OUCH wing's part of an engine configuration: ``[[ouch]]``, ``instruments[].venue``.

:func:`build_ouch_venues` makes an :class:`OuchVenue` and its :class:`OuchSession` per account
that an instrument trades on (its state, the next expected sequence number and UserRefNum, in
the engine's store folder: ``ouch-<name>.ouchstate``), and says which venue each instrument
trades on. The engine (``engine.headless``) routes the instruments and starts the sessions.
"""

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from engine.core import Component, Engine
from engine.instruments import Instrument
from engine.venues.ouch.adapter import OuchVenue
from engine.venues.ouch.config import OuchAccountConfig
from engine.venues.ouch.messages import PriceScale
from engine.venues.ouch.session import OuchSession, WriteBarrier, engine_state


class OuchWiringError(ValueError):
    """An ``[[ouch]]`` account cannot be built (which account, which key, why)."""


def password_of(acc: OuchAccountConfig, index: int) -> str:
    """Return the account's password: ``password``, or the variable ``password_env`` names."""
    if not acc.password_env:
        return acc.password
    value = os.environ.get(acc.password_env)
    if value is None:
        raise OuchWiringError(
            f"ouch[{index}].password_env: the environment variable "
            f"{acc.password_env!r} is not set (account {acc.name})"
        )
    return value


def build_ouch_venues(
    engine: Engine,
    accounts: Sequence[OuchAccountConfig],
    instruments: Sequence[tuple[Instrument, str]],
    *,
    store_dir: Path | None = None,
    barrier: WriteBarrier | None = None,
) -> tuple[list[tuple[Instrument, OuchVenue]], list[Component]]:
    """Return each instrument's route to its account's venue, and the accounts' sessions.

    ``instruments`` are (instrument, account name) pairs. Only accounts an instrument trades
    on are connected. With ``barrier`` (the journal's ``after_written``) an account's next
    expected sequence number is written only after the journal (``WriteAheadState``).
    Raises :class:`OuchWiringError` for an instrument the venue cannot trade (its tick is
    finer than OUCH's 0.0001, its lot not whole shares) or a password that is not there.
    """
    loop = asyncio.get_event_loop()
    by_name = {acc.name: (i, acc) for i, acc in enumerate(accounts)}
    venues: dict[str, OuchVenue] = {}
    parts: list[Component] = []
    routes: list[tuple[Instrument, OuchVenue]] = []
    for instrument, name in instruments:
        venue = venues.get(name)
        if venue is None:
            index, acc = by_name[name]  # the configuration checked the name
            venue = venues[name] = OuchVenue(
                engine.clock,
                name=name,
                defer=loop.call_soon,
                firm=acc.firm,
                publish=engine.bus.publish,
            )
            state = engine_state(store_dir, f"ouch-{name}", barrier)
            parts.append(
                OuchSession(
                    venue,
                    username=acc.username,
                    password=password_of(acc, index),
                    host=acc.host,
                    port=acc.port,
                    state=state,
                    clock=engine.clock,
                    session=acc.session,
                    publish=engine.bus.publish,
                    busy_poll_us=acc.busy_poll_us,
                )
            )
        try:
            PriceScale(instrument)  # the venue can price it (the desk routes it afterwards)
        except ValueError as e:
            raise OuchWiringError(f"[[ouch]] {name}: {e}") from None
        routes.append((instrument, venue))
    return routes, parts
