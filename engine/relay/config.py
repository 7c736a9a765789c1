# SPDX-License-Identifier: MIT
"""``relay.toml``: what a relay serves, where from, and to whom (``docs/relay.md``).

Every error is one line naming the file, the key and why (:class:`RelayConfigError`); an
unknown key is an error. Relative paths are relative to the file.
"""

from __future__ import annotations

import ipaddress
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from engine.feeds.multicast import Group


class RelayConfigError(ValueError):
    """The configuration is wrong; the message names the file, the key and why."""


@dataclass(frozen=True)
class InstrumentSpec:
    """One instrument the relay carries."""

    symbol: str
    tick_size: str
    lot_size: str = "1"


@dataclass(frozen=True)
class SourceSpec:
    """One source: ``kind`` is ``tickstore``, ``relay``, ``itch``, ``fix`` or ``engine``."""

    kind: str
    name: str
    symbols: list[str]
    path: Path | None = None  # tickstore
    day: str = ""
    speed: float = 1.0
    host: str = ""  # relay
    port: int = 0
    token_env: str = "QWCONSOLE_RELAY_TOKEN"
    tls: bool = False
    pins: Path | None = None
    group_a: Group | None = None  # itch
    group_b: Group | None = None
    session: bytes = b""
    recovery: tuple[str, int] | None = None
    sessions: Path | None = None  # fix
    session_id: str = ""


@dataclass(frozen=True)
class RelayConfig:
    """The whole file."""

    path: Path
    relay_id: str
    bind: str
    port: int
    tls_cert: Path | None
    tls_key: Path | None
    token_store: Path
    audit_log: Path | None
    cache_rows: int
    max_lag_rows: int
    n_levels: int
    instruments: list[InstrumentSpec]
    sources: list[SourceSpec]
    persist_path: Path | None = None
    persist_flush_ms: int = 250
    stats_interval_s: float = 0.0
    status_role: str = "viewer"
    extra: dict[str, Any] = field(default_factory=dict)


class _Table:
    """Reads keys of one table, remembering which were read (the rest are unknown keys)."""

    def __init__(self, file: Path, where: str, data: Any) -> None:
        self.file = file
        self.where = where
        if not isinstance(data, dict):
            self.fail("", f"must be a table, got {data!r}")
        self.data: dict[str, Any] = data
        self.seen: set[str] = set()

    def key(self, k: str) -> str:
        return f"{self.where}.{k}" if self.where else k

    def fail(self, k: str, why: str) -> None:
        raise RelayConfigError(f"{self.file}: {self.key(k) if k else self.where}: {why}")

    def get(self, k: str, default: Any = None, *, required: bool = False) -> Any:
        self.seen.add(k)
        if k not in self.data:
            if required:
                self.fail(k, "is required")
            return default
        return self.data[k]

    def str_(self, k: str, default: str = "", *, required: bool = False) -> str:
        v = self.get(k, default, required=required)
        if not isinstance(v, str) or (required and not v):
            self.fail(k, f"must be a non-empty string, got {v!r}")
        return str(v)

    def int_(self, k: str, default: int, lo: int, hi: int) -> int:
        v = self.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            self.fail(k, f"must be an integer in {lo}..{hi}, got {v!r}")
        return int(v)

    def float_(self, k: str, default: float, lo: float) -> float:
        v = self.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int | float) or v < lo:
            self.fail(k, f"must be a number >= {lo:g}, got {v!r}")
        return float(v)

    def bool_(self, k: str, default: bool) -> bool:
        v = self.get(k, default)
        if not isinstance(v, bool):
            self.fail(k, f"must be true or false, got {v!r}")
        return bool(v)

    def path(self, k: str, *, required: bool = False) -> Path | None:
        v = self.get(k, None, required=required)
        if v is None:
            return None
        if not isinstance(v, str) or not v:
            self.fail(k, f"must be a file path, got {v!r}")
        p = Path(v).expanduser()
        return p if p.is_absolute() else self.file.parent / p

    def endpoint(self, k: str, *, required: bool = False) -> tuple[str, int] | None:
        v = self.get(k, None, required=required)
        if v is None:
            return None
        host, _, port = str(v).rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            self.fail(k, f'must be "host:port", got {v!r}')
        return host, int(port)

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            self.fail(unknown[0], "unknown key")


def _symbols(t: _Table, known: list[str]) -> list[str]:
    v = t.get("symbols", known)
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v) or not v:
        t.fail("symbols", f"must be a non-empty list of symbols, got {v!r}")
    bad = [s for s in v if s not in known]
    if bad:
        t.fail("symbols", f"{bad[0]!r} is not one of [[instruments]] ({', '.join(known)})")
    return list(v)


def _source(t: _Table, i: int, known: list[str]) -> SourceSpec:
    kind = t.str_("type", required=True)
    name = t.str_("name", f"{kind}-{i}")
    symbols = _symbols(t, known)
    if kind == "tickstore":
        day = t.str_("day", required=True)
        if len(day) != 8 or not day.isdigit():
            t.fail("day", f"must be YYYYMMDD, got {day!r}")
        spec = SourceSpec(
            kind,
            name,
            symbols,
            path=t.path("path", required=True),
            day=day,
            speed=t.float_("speed", 1.0, 0.0),
        )
    elif kind in ("relay", "engine"):
        ep = t.endpoint("connect", required=True)
        assert ep is not None
        env = "QWCONSOLE_RELAY_TOKEN" if kind == "relay" else "QWCONSOLE_ENGINE_TOKEN"
        spec = SourceSpec(
            kind,
            name,
            symbols,
            host=ep[0],
            port=ep[1],
            token_env=t.str_("token_env", env),
            tls=t.bool_("tls", True),
            pins=t.path("pins"),
        )
        if spec.tls and spec.pins is None:
            t.fail("pins", "is required with tls = true (the pinned certificate fingerprints)")
    elif kind == "itch":
        a = t.endpoint("group_a", required=True)
        b = t.endpoint("group_b")
        iface = t.str_("interface", "127.0.0.1")
        session = t.str_("session", "")
        if session and len(session.encode()) != 10:
            t.fail("session", f"must be 10 characters (MoldUDP64), got {session!r}")
        assert a is not None
        for k, g in (("group_a", a), ("group_b", b)):
            if g is not None and not ipaddress.ip_address(g[0]).is_multicast:
                t.fail(k, f"{g[0]} is not a multicast address")
        spec = SourceSpec(
            kind,
            name,
            symbols,
            group_a=Group(a[0], a[1], iface),
            group_b=Group(b[0], b[1], iface) if b else None,
            session=session.encode(),
            recovery=t.endpoint("recovery"),
        )
    elif kind == "fix":
        sessions = t.path("sessions", required=True)
        assert sessions is not None
        session_id = t.str_("session", "")
        _check_fix(t, sessions, session_id)
        spec = SourceSpec(kind, name, symbols, sessions=sessions, session_id=session_id)
    else:
        t.fail("type", f"must be tickstore, relay, itch, fix or engine, got {kind!r}")
        raise AssertionError
    t.done()
    return spec


def _check_fix(t: _Table, sessions: Path, session_id: str) -> None:
    """Fail unless ``sessions`` is a settings file with initiator ``session_id``."""
    from engine.fix.settings import SettingsError
    from engine.relay.sources import pick_fix_session

    try:
        pick_fix_session(sessions, session_id)
    except FileNotFoundError:
        t.fail("sessions", f"{sessions}: no such file")
    except (SettingsError, ValueError, OSError) as e:
        t.fail(
            "session" if session_id and "no initiator session " in str(e) else "sessions",
            str(e).splitlines()[0],
        )


def _instruments(top: _Table) -> list[InstrumentSpec]:
    path = top.file
    instruments: list[InstrumentSpec] = []
    raw_ins = top.get("instruments", None, required=True)
    if not isinstance(raw_ins, list) or not raw_ins:
        top.fail("instruments", "must be one or more [[instruments]] tables")
    for i, raw in enumerate(raw_ins):
        t = _Table(path, f"instruments[{i}]", raw)
        symbol = t.str_("symbol", required=True)
        tick = t.str_("tick_size", required=True)
        lot = t.str_("lot_size", "1")
        for k, v in (("tick_size", tick), ("lot_size", lot)):
            try:
                ok = Decimal(v) > 0
            except InvalidOperation:
                ok = False
            if not ok:
                t.fail(k, f"must be a positive decimal in quotes, got {v!r}")
        if any(s.symbol == symbol for s in instruments):
            t.fail("symbol", f"{symbol!r} is listed twice")
        t.done()
        instruments.append(InstrumentSpec(symbol, tick, lot))
    return instruments


def _persist(top: _Table) -> tuple[Path | None, int]:
    persist_path, flush_ms = None, 250
    if "persist" in top.data:
        p = _Table(top.file, "persist", top.get("persist"))
        if p.bool_("enabled", True):
            persist_path = p.path("path", required=True)
        else:
            p.get("path")
        flush_ms = p.int_("flush_interval_ms", 250, 1, 60_000)
        p.done()
    return persist_path, flush_ms


def load(path: Path) -> RelayConfig:
    """Read ``path``; raise :class:`RelayConfigError` (one line) if anything is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RelayConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RelayConfigError(f"{path}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise RelayConfigError(f"{path}: not valid TOML: {e}") from None
    top = _Table(path, "", data)
    r = _Table(path, "relay", top.get("relay", {}, required=True))
    relay_id = r.str_("id", "relay")
    bind = r.str_("bind", "127.0.0.1")
    try:
        loopback = ipaddress.ip_address(bind).is_loopback
    except ValueError:
        loopback = bind == "localhost"
    cert, key = r.path("tls_cert"), r.path("tls_key")
    if (cert is None) != (key is None):
        r.fail("tls_key" if key is None else "tls_cert", "tls_cert and tls_key go together")
    if not loopback and cert is None:
        r.fail("bind", f"{bind} is not a loopback address: tls_cert and tls_key are required")
    token_store = r.path("token_store", required=True)
    assert token_store is not None
    cache_rows = r.int_("cache_rows", 100_000, 1, 100_000_000)
    max_lag = r.int_("max_lag_rows", min(20_000, cache_rows), 1, cache_rows)
    cfg_port = r.int_("port", 7350, 0, 65535)
    audit = r.path("audit_log")
    n_levels = r.int_("n_levels", 2000, 8, 100_000)
    stats_s = r.float_("stats_interval_s", 0.0, 0.0)
    status_role = r.str_("status_role", "viewer")
    if status_role not in ("viewer", "trader", "admin"):
        r.fail("status_role", f"must be viewer, trader or admin, got {status_role!r}")
    r.done()
    instruments = _instruments(top)
    known = [s.symbol for s in instruments]
    raw_src = top.get("sources", None, required=True)
    if not isinstance(raw_src, list) or not raw_src:
        top.fail("sources", "must be one or more [[sources]] tables")
    sources = [
        _source(_Table(path, f"sources[{i}]", raw), i, known) for i, raw in enumerate(raw_src)
    ]
    persist_path, flush_ms = _persist(top)
    top.done()
    return RelayConfig(
        path=path,
        relay_id=relay_id,
        bind=bind,
        port=cfg_port,
        tls_cert=cert,
        tls_key=key,
        token_store=token_store,
        audit_log=audit,
        cache_rows=cache_rows,
        max_lag_rows=max_lag,
        n_levels=n_levels,
        instruments=instruments,
        sources=sources,
        persist_path=persist_path,
        persist_flush_ms=flush_ms,
        stats_interval_s=stats_s,
        status_role=status_role,
    )
