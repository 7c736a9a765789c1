# SPDX-License-Identifier: MIT
"""The fields of a venue protocol's message as the inspector and reconciliation read them.

A :class:`engine.events.VenueMessageSeen` carries the message's bytes; its fields (spec name,
value, what a coded value means) are decoded from them by whoever shows them, not on the
trading loop. Events journaled before that change carry their fields and keep them.
"""

from engine.events import VenueMessageSeen
from engine.venues.ouch.codes import describe as describe_ouch

Fields = tuple[tuple[str, str, str], ...]


def message_fields(ev: VenueMessageSeen) -> Fields:
    """Return every field of ``ev``'s message as (name, value as text, meaning or "")."""
    if ev.fields:
        return ev.fields
    if ev.protocol == "OUCH":
        return describe_ouch(ev.raw, ev.outbound)
    return ()
