# SPDX-License-Identifier: MIT
"""The OUCH 5.0 venue protocol over SoupBinTCP 4.x.

* :mod:`~engine.venues.ouch.messages`: OUCH 5.0 message types, layouts, appendage options,
  price mapping, encoder and decoders (compiled: :mod:`~engine.venues.ouch._kernels`);
* :mod:`~engine.venues.ouch.soupbin`: sans-IO SoupBinTCP client and server sessions;
* :mod:`~engine.venues.ouch.store`: the files that survive a restart (the server's sequenced
  messages, the client's next expected sequence number and UserRefNum);
* :mod:`~engine.venues.ouch.client`: :class:`OuchClient`, the order-entry side an adapter
  drives (UserRefNum management, orders to bytes, decoded messages to a handler), and
  :class:`OuchServerSession`, the exchange side;
* :mod:`~engine.venues.ouch.link`: asyncio transport, a reconnecting client link and a listener.
"""
