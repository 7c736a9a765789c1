# SPDX-License-Identifier: MIT
"""Remote engines from the console's side: where pins and profiles live, and opening a link.

The protocol client itself is :class:`engine.remote.client.RemoteEngineClient` (Qt-free, on
its own thread). This module adds what belongs to the console: certificate fingerprints pinned
on first use in ``<config dir>/known-engines.json``, and the engines the user connected to in
``<config dir>/engines.json`` (name, host, port, TLS — never the token).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from app.paths import config_dir
from engine.remote.client import RemoteEngineClient
from engine.remote.tls import PinStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """How to reach one engine (the token is typed in, never stored)."""

    name: str
    host: str
    port: int
    tls: bool = True

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"


def pin_store() -> PinStore:
    """Return the console's store of pinned engine certificates."""
    return PinStore(config_dir() / "known-engines.json")


def profiles_path() -> Path:
    """Return the file of remembered engines."""
    return config_dir() / "engines.json"


def load_profiles(path: Path | None = None) -> list[EngineProfile]:
    """Return the remembered engines; an unreadable file gives none and a warning."""
    p = path or profiles_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        return [
            EngineProfile(str(d["name"]), str(d["host"]), int(d["port"]), bool(d["tls"]))
            for d in data
        ]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("%s: cannot read remembered engines (%s); starting with none", p, e)
        return []


def remember(profile: EngineProfile, path: Path | None = None) -> None:
    """Add or update ``profile`` (by name) in the remembered engines."""
    p = path or profiles_path()
    others = [x for x in load_profiles(p) if x.name != profile.name]
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(
        json.dumps([asdict(x) for x in [*others, profile]], indent=2) + "\n", encoding="utf-8"
    )


def open_remote(
    profile: EngineProfile, token: str, pins: PinStore | None = None
) -> RemoteEngineClient:
    """Return a client for ``profile`` (not started: call ``start(wait=False)`` from a GUI)."""
    return RemoteEngineClient(
        profile.host,
        profile.port,
        token,
        tls=profile.tls,
        pins=(pins or pin_store()) if profile.tls else None,
        name=profile.name,
    )
