# SPDX-License-Identifier: MIT
"""A test logon from the session editor: connect, log on, log out, report (Qt-free).

:func:`try_logon` runs one initiator session against the counterparty with a fresh in-memory
store and no file log, so the real session's sequence numbers and logs are untouched, and
returns a :class:`LogonOutcome` with every message sent and received.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.fix.settings import SessionSettings

__all__ = ["LogonOutcome", "try_logon"]


@dataclass(frozen=True, slots=True)
class LogonOutcome:
    """What a test logon did.

    Parameters
    ----------
    ok : bool
        Whether the counterparty answered our Logon with a Logon.
    summary : str
        One line for the user (``"Logged on to 127.0.0.1:5001 in 12 ms; logged out"``).
    sent : tuple[str, ...]
        Messages we sent, SOH shown as ``|``.
    received : tuple[str, ...]
        Messages we received, SOH shown as ``|``.
    events : tuple[str, ...]
        Session events (connect, logon, logout, errors).
    """

    ok: bool
    summary: str
    sent: tuple[str, ...]
    received: tuple[str, ...]
    events: tuple[str, ...]


class _RecordingLog:
    # A SessionLog that keeps everything, for the test logon's report.

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.received: list[str] = []
        self.events: list[str] = []

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        self.received.append(message.decode("latin-1").replace("\x01", "|"))

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        self.sent.append(message.decode("latin-1").replace("\x01", "|"))

    def on_event(self, text: str, now_ns: int) -> None:
        self.events.append(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


async def try_logon(
    settings: SessionSettings, base_dir: Path, timeout_s: float = 5.0
) -> LogonOutcome:
    """Connect an initiator session, log on, log out, and report what happened.

    The test uses a fresh in-memory store (sequence numbers start at 1) and no file log, so the
    real session's store and logs are not touched, and it ignores the schedule. A counterparty
    that expects higher sequence numbers may answer with a Logout; that is shown as the outcome.

    Parameters
    ----------
    settings : SessionSettings
        An initiator session.
    base_dir : Path
        Directory relative dictionary paths are resolved against.
    timeout_s : float
        Seconds to wait for the connection and the Logon answer.
    """
    import asyncio
    from dataclasses import replace as dc_replace

    from engine.clock import LiveClock
    from engine.fix.application import Application
    from engine.fix.session import FixSession
    from engine.fix.store import MemoryStore
    from engine.fix.transport import SocketInitiator

    if settings.connection_type != "initiator":
        return LogonOutcome(
            False, "Only initiator sessions can test a connection (this one accepts).", (), (), ()
        )

    def resolve(p: str | None) -> str | None:
        if p is None:
            return None
        path = Path(p)
        return str(path if path.is_absolute() or path.exists() else base_dir / path)

    config = dc_replace(
        settings,
        data_dictionary=resolve(settings.data_dictionary),
        transport_data_dictionary=resolve(settings.transport_data_dictionary),
        app_data_dictionary=resolve(settings.app_data_dictionary),
        app_data_dictionaries={
            k: resolve(v) or v for k, v in settings.app_data_dictionaries.items()
        },
    )
    clock = LiveClock()
    log = _RecordingLog()
    try:
        session = FixSession(config, MemoryStore(clock.now_ns()), Application(), log, clock, None)
    except (OSError, ValueError) as e:
        return LogonOutcome(False, f"Cannot create the session: {e}", (), (), ())
    hosts = settings.connect_addresses()
    initiator = SocketInitiator(session, hosts, reconnect_interval=timeout_s, clock=clock)
    where = ", ".join(f"{h}:{p}" for h, p in hosts)
    t0 = clock.now_ns()
    await initiator.start()
    try:
        await initiator.wait_logged_on(timeout_s)
    except TimeoutError:
        await initiator.stop(logout=False)
        session.close()
        why = log.events[-1] if log.events else "no answer"
        if initiator.connects == 0:
            why = "connection refused or unreachable"
        summary = f"No logon with {where} within {timeout_s:g} s: {why}"
        return LogonOutcome(False, summary, tuple(log.sent), tuple(log.received), tuple(log.events))
    took_ms = (clock.now_ns() - t0) / 1e6
    await initiator.stop(logout=True)
    await asyncio.sleep(0)
    session.close()
    summary = f"Logged on to {where} in {took_ms:.0f} ms, then logged out."
    return LogonOutcome(True, summary, tuple(log.sent), tuple(log.received), tuple(log.events))
