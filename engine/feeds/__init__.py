# SPDX-License-Identifier: MIT
"""Binary market data (issue 20): capture files, the exchanges' own feed protocols, live feeds.

* :mod:`engine.feeds.pcap` — UDP datagrams out of pcap/pcapng captures (dpkt).
* :mod:`engine.feeds.sbe` — schema-driven SBE decoding, CME MDP 3.0 framing and MBP books.
* :mod:`engine.feeds.itch` — Nasdaq TotalView-ITCH 5.0 over MoldUDP64: decoding, sequence
  tracking, order-level books, a synthetic day generator.
* :mod:`engine.feeds.fast` — template-driven FAST 1.1 decoding (CQG's templates).
* :mod:`engine.feeds.arbiter` — A/B arbitration and gap tracking of sequenced packets.
* :mod:`engine.feeds.multicast` — the live receiver (A/B groups, re-requests) and a MoldUDP64
  publisher with a retransmission server.
* :mod:`engine.feeds.cli` — ``qwconsole gen itch`` and ``qwconsole replay``.

Captures go into the tick store through ``qwconsole import pcap`` (:mod:`engine.tickstore`);
the simulator publishes ITCH (:mod:`engine.sim.itch_feed`); the engine takes ITCH market data
through :mod:`engine.venues.itch`. See ``docs/feeds.md``.
"""
