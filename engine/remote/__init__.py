# SPDX-License-Identifier: MIT
"""Remote engines: the monitor/control protocol, its server, its client, and their security.

``docs/remote-protocol.md`` is the specification. The modules:

* :mod:`engine.remote.protocol` — message types and the msgspec (MessagePack) codec;
* :mod:`engine.remote.server` — :class:`RemoteServer`, serving one engine to many consoles;
* :mod:`engine.remote.client` — :class:`RemoteEngineClient`, an ``EngineClient`` over the wire;
* :mod:`engine.remote.tokens` — hashed access tokens with roles and expiry;
* :mod:`engine.remote.tls` — self-signed certificates, fingerprints and pinning.
"""
