# SPDX-License-Identifier: MIT
"""Tokens, roles, the failed-login throttle and certificate pinning, on real files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.clock import TestClock
from engine.remote.server import LoginThrottle
from engine.remote.tls import PinStore, TlsError, file_fingerprint, make_self_signed
from engine.remote.tokens import Identity, TokenError, TokenStore, may_send


def test_token_verifies_and_only_its_hash_is_stored(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "t.toml")
    token = store.add("alice", "trader", now_ns=1)
    assert store.verify(token, 2) == Identity("alice", "trader", token.split(".")[1])
    text = (tmp_path / "t.toml").read_text()
    assert token.split(".")[2] not in text
    assert oct((tmp_path / "t.toml").stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1],
        lambda t: "qw2" + t[3:],
        lambda t: t + ".x",
        lambda t: "",
        lambda t: t.replace(".", "", 1),
    ],
)
def test_mangled_tokens_are_refused(tmp_path: Path, mangle: object) -> None:
    store = TokenStore(tmp_path / "t.toml")
    token = store.add("alice", "viewer", now_ns=1)
    assert store.verify(mangle(token), 2) == "token refused"  # type: ignore[operator]


def test_expiry_and_removal(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "t.toml")
    token = store.add("bob", "admin", now_ns=100, expires_ns=200)
    assert isinstance(store.verify(token, 199), Identity)
    assert store.verify(token, 200) == "token 'bob' expired"
    assert store.remove("bob")
    assert store.verify(token, 150) == "token refused"


def test_store_is_reread_when_another_process_changes_it(tmp_path: Path) -> None:
    running = TokenStore(tmp_path / "t.toml")
    token = TokenStore(tmp_path / "t.toml").add("carol", "viewer", now_ns=1)  # the CLI's copy
    os.utime(tmp_path / "t.toml", ns=(10**18, 10**18))  # a distinct mtime on coarse clocks
    assert isinstance(running.verify(token, 2), Identity)


def test_bad_store_and_bad_input_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(
        '[[token]]\nid = "a"\nname = "x"\nrole = "god"\nsha256 = "00"\n'
    )
    with pytest.raises(TokenError, match=r"token\[0\]\.role: 'god' is not a role"):
        TokenStore(tmp_path / "t.toml")
    store = TokenStore(tmp_path / "new.toml")
    with pytest.raises(TokenError, match="one word"):
        store.add("two words", "viewer", now_ns=1)
    with pytest.raises(TokenError, match="not one of viewer, trader, admin"):
        store.add("x", "root", now_ns=1)


@pytest.mark.parametrize(
    ("role", "kind", "allowed"),
    [
        ("viewer", "Ping", True),
        ("viewer", "SubmitOrder", False),
        ("trader", "SubmitOrder", True),
        ("trader", "ControlStrategy", True),
        ("trader", "SetRiskLimits", False),
        ("trader", "SetKillSwitch", False),
        ("trader", "ControlSession", False),
        ("admin", "SetRiskLimits", True),
        ("admin", "SomethingNew", True),
        ("nobody", "Ping", False),
    ],
)
def test_roles(role: str, kind: str, allowed: bool) -> None:
    assert may_send(role, kind) is allowed


def test_throttle_doubles_delays_per_address_and_never_locks_out(test_clock: TestClock) -> None:
    t = LoginThrottle(
        test_clock, base_s=0.25, max_delay_s=2.0, window_s=60, busy_after=6, busy_delay_s=0.5
    )
    assert [t.fail("10.0.0.1") for _ in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert t.pause("10.0.0.1") == 0.0
    t.fail("10.0.0.1")
    assert t.pause("10.0.0.1") == 0.5  # busy: a short wait for every login, then the check
    assert t.pause("10.0.0.2") == 0.0  # per address
    test_clock.advance(61 * 10**9)
    assert (t.failures("10.0.0.1"), t.pause("10.0.0.1")) == (0, 0.0)  # the window passed


def test_pins_trust_on_first_use_then_insist(tmp_path: Path) -> None:
    pins = PinStore(tmp_path / "console" / "known.json")
    assert pins.check("h:1", "AA:BB")
    assert pins.check("h:1", "AA:BB")
    assert not pins.check("h:1", "CC:DD")
    assert pins.check("h:2", "CC:DD")  # per endpoint
    assert pins.forget("h:1")
    assert pins.check("h:1", "CC:DD")


def test_self_signed_certificate_fingerprint(tmp_path: Path) -> None:
    fp = make_self_signed(tmp_path / "c.pem", tmp_path / "k.pem", "ny4-1")
    assert fp == file_fingerprint(tmp_path / "c.pem")
    assert len(fp.split(":")) == 32
    with pytest.raises(TlsError, match="not a readable PEM certificate"):
        file_fingerprint(tmp_path / "k.pem")
