# SPDX-License-Identifier: MIT
"""Schema-driven SBE decoding (CME MDP 3.0): schema XML, numba decoders, packet framing.

* :mod:`~engine.feeds.sbe.schema`: the schema as frozen dataclasses (:class:`Schema`);
  :mod:`~engine.feeds.sbe.schema_xml`: :func:`load_schema` reads an SBE schema XML file.
* :mod:`~engine.feeds.sbe.decoder`: :class:`SbeDecoder` decodes a buffer of packets into one
  structured array per message type and per repeating group (table-driven numba kernels in
  :mod:`~engine.feeds.sbe._kernels`).
* :mod:`~engine.feeds.sbe.mdp3`: :func:`decode_capture` decodes an MDP 3.0 pcap/pcapng
  capture whole, with per-channel sequence gaps.
* :mod:`~engine.feeds.sbe.book`: MDP 3.0 MBP books into :class:`engine.book.l2.L2Books`, and
  the trade/volume consistency checks.
* :mod:`~engine.feeds.sbe.mbo`: MDP 3.0 market by order (templates 43/47 and the order
  entries of 46, seeded by the 53 snapshots when captured) into ``L3_EVENT_DTYPE`` rows and
  :class:`engine.book.l3.L3Book` s.
* :mod:`~engine.feeds.sbe.encoder`: :class:`SbeEncoder`, any message of a schema from plain
  values, and MDP 3.0 packets (the simulator's feed is encoded with it).
* :mod:`~engine.feeds.sbe.live`: live MDP 3.0 books (``Mdp3Books``) kept in sync through gaps
  by CME's snapshot recovery, ``Mdp3Receiver`` (incremental A/B, the snapshot loop while
  recovering) and ``Mdp3Publisher``.
* :mod:`~engine.feeds.sbe.status`: SecurityStatus (per instrument or per SecurityGroup) as
  an instrument's :class:`engine.backtest.rules.TradingStatus`.
"""

from engine.feeds.sbe.decoder import MDP3_FRAMING, Decoded, Framing, SbeDecoder
from engine.feeds.sbe.encoder import EncodeError, SbeEncoder
from engine.feeds.sbe.mdp3 import DecodedCapture, decode_capture, decode_payloads
from engine.feeds.sbe.schema import Schema, SchemaError
from engine.feeds.sbe.schema_xml import load_schema

__all__ = [
    "MDP3_FRAMING",
    "Decoded",
    "DecodedCapture",
    "EncodeError",
    "Framing",
    "SbeDecoder",
    "SbeEncoder",
    "Schema",
    "SchemaError",
    "decode_capture",
    "decode_payloads",
    "load_schema",
]
