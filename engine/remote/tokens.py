# SPDX-License-Identifier: MIT
"""Access tokens of the remote server: random secrets stored only as hashes, with roles.

A token reads ``qw1.<id>.<secret>``: ``id`` finds the entry, ``secret`` (32 random bytes,
base64url) is checked against its SHA-256. A fast hash is right here because the secret is
random, not a password: nothing is gained by guessing faster than 2**256 (GitHub stores its
tokens the same way). The store is a TOML file, one ``[[token]]`` table per token::

    [[token]]
    id = "b3Jk2w"
    name = "alice"
    role = "trader"
    sha256 = "9f86d08..."
    created_ns = 1764633600000000000
    expires_ns = 0                  # 0: never

Roles nest: a ``viewer`` reads the stream; a ``trader`` also sends, cancels and replaces
orders and runs strategies; an ``admin`` also operates FIX sessions (log on and off, reset,
reload from their settings file), risk limits, the kill switch and engine settings
(:data:`ROLE_COMMANDS`). A trader's own orders are manual orders: only an admin may send an
order under a strategy's id (:func:`refusal`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from engine.commands import (
    CancelAll,
    CancelOrder,
    ControlStrategy,
    Flatten,
    Ping,
    ReplaceOrder,
    SetStrategyParameters,
    SubmitOrder,
)

#: Roles from least to most powerful.
ROLES: tuple[str, ...] = ("viewer", "trader", "admin")

#: Commands each role may send; an admin may send every command (including ones added later).
#: Admin only, on purpose: ControlSession, ReloadSession (restarts a venue session with settings
#: read from the engine host's files), SetRiskLimits, SetKillSwitch, SetHeartbeatInterval.
ROLE_COMMANDS: dict[str, frozenset[str]] = {
    "viewer": frozenset({Ping.__name__}),
    "trader": frozenset(
        c.__name__
        for c in (
            Ping,
            SubmitOrder,
            CancelOrder,
            ReplaceOrder,
            CancelAll,
            Flatten,
            ControlStrategy,
            SetStrategyParameters,
        )
    ),
}

_PREFIX = "qw1"


class TokenError(ValueError):
    """The token store cannot be read or changed; the message names the file and the reason."""


def may_send(role: str, command_kind: str) -> bool:
    """Return whether ``role`` may send commands of class name ``command_kind``."""
    if role == "admin":
        return True
    return command_kind in ROLE_COMMANDS.get(role, frozenset())


def refusal(role: str, command: object) -> str | None:
    """Return why ``role`` may not send this command with these values, or ``None``.

    :func:`may_send` answers by the command's kind; this by its fields: a manual order uses
    strategy id 0 (the console's own), and only an admin may send an order under a strategy's
    id (it would count against that strategy's limits and positions).
    """
    if role != "admin" and isinstance(command, SubmitOrder) and command.strategy_id != 0:
        return (
            f"role {role} may send orders only as manual orders (strategy_id 0), not under "
            f"strategy {command.strategy_id}; that needs an admin token"
        )
    return None


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One stored token (never the secret itself)."""

    id: str
    name: str
    role: str
    sha256: str
    created_ns: int
    expires_ns: int = 0  # 0: never


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a verified token belongs to."""

    name: str
    role: str
    token_id: str


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class TokenStore:
    """The token file: add, remove, list and verify tokens.

    The file is re-read when it changed on disk, so ``qwconsole engine token add`` works on a
    running engine.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, TokenEntry] = {}
        self._mtime: int | None = None
        self.reload()

    def reload(self) -> None:
        """Read the file again if it changed (a missing file is an empty store)."""
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._entries, self._mtime = {}, None
            return
        if mtime == self._mtime:
            return
        try:
            data = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise TokenError(f"{self.path}: cannot read the token store: {e}") from None
        entries: dict[str, TokenEntry] = {}
        for i, raw in enumerate(data.get("token", [])):
            try:
                entry = TokenEntry(
                    id=str(raw["id"]),
                    name=str(raw["name"]),
                    role=str(raw["role"]),
                    sha256=str(raw["sha256"]),
                    created_ns=int(raw.get("created_ns", 0)),
                    expires_ns=int(raw.get("expires_ns", 0)),
                )
            except (KeyError, TypeError, ValueError) as e:
                raise TokenError(f"{self.path}: token[{i}]: missing or bad field {e}") from None
            if entry.role not in ROLES:
                raise TokenError(f"{self.path}: token[{i}].role: {entry.role!r} is not a role")
            entries[entry.id] = entry
        self._entries, self._mtime = entries, mtime

    def entries(self) -> list[TokenEntry]:
        """Return the stored tokens, oldest first."""
        return sorted(self._entries.values(), key=lambda e: (e.created_ns, e.name))

    def add(self, name: str, role: str, now_ns: int, expires_ns: int = 0) -> str:
        """Create a token for ``name`` with ``role``; return it (the only time it is shown)."""
        if role not in ROLES:
            raise TokenError(f"role {role!r} is not one of {', '.join(ROLES)}")
        if not name or any(c.isspace() for c in name):
            raise TokenError(f"token name {name!r} must be one word")
        if any(e.name == name for e in self._entries.values()):
            raise TokenError(f"{self.path}: a token named {name!r} exists; remove it first")
        token_id = secrets.token_hex(6)
        secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
        self._entries[token_id] = TokenEntry(
            token_id, name, role, _hash(secret), now_ns, expires_ns
        )
        self._save()
        return f"{_PREFIX}.{token_id}.{secret}"

    def remove(self, name: str) -> bool:
        """Remove the token named ``name``; return whether there was one."""
        ids = [i for i, e in self._entries.items() if e.name == name]
        for i in ids:
            del self._entries[i]
        if ids:
            self._save()
        return bool(ids)

    def verify(self, token: str, now_ns: int) -> Identity | str:
        """Return who ``token`` belongs to, or why it is refused."""
        self.reload()
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _PREFIX:
            return "token refused"
        entry = self._entries.get(parts[1])
        # Compare a hash even for an unknown id, so timing does not tell ids apart.
        expected = entry.sha256 if entry is not None else "0" * 64
        if not hmac.compare_digest(_hash(parts[2]), expected) or entry is None:
            return "token refused"
        if entry.expires_ns and now_ns >= entry.expires_ns:
            return f"token {entry.name!r} expired"
        return Identity(entry.name, entry.role, entry.id)

    def _save(self) -> None:
        lines = ["# qwconsole engine tokens: hashes only (qwconsole engine token add/remove)"]
        for e in self.entries():
            lines += [
                "",
                "[[token]]",
                f"id = {_toml_str(e.id)}",
                f"name = {_toml_str(e.name)}",
                f"role = {_toml_str(e.role)}",
                f"sha256 = {_toml_str(e.sha256)}",
                f"created_ns = {e.created_ns}",
                f"expires_ns = {e.expires_ns}",
            ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        tmp.replace(self.path)
        self._mtime = self.path.stat().st_mtime_ns
