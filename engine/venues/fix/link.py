# SPDX-License-Identifier: MIT
"""FIX sessions as an engine component: lifecycle, status events, every message as an event.

:class:`FixLink` starts and stops the engine's acceptors and initiators on the engine loop,
publishes :class:`engine.events.SessionStatusChanged` whenever a session's state or sequence
numbers change, and — through :class:`BusLog` — one :class:`engine.events.FixMessageSeen` per
message in either direction, so the console can show every field of every message.

Sessions built from a QuickFIX-style ``.cfg`` (``track(session, settings=..., settings_file=...)``)
can be reloaded while the engine runs (:class:`engine.commands.ReloadSession`): the file is read
and checked again, and the session restarts with the new settings — or, on any problem, keeps
running as it is while the answer names the file, the line and the key.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from engine.bus import MessageBus
from engine.clock import Clock
from engine.commands import (
    Command,
    CommandAck,
    CommandError,
    CommandResult,
    ControlSession,
    ReloadSession,
)
from engine.core import Engine
from engine.enums import SessionState
from engine.events import Event, FixMessageSeen, SessionStatusChanged, VenueLinkChanged
from engine.fastlog import get_log
from engine.fix.codec import parse_timestamp
from engine.fix.log import NullLog, SessionLog
from engine.fix.schedule import SessionSchedule
from engine.fix.session import FixSession, load_dictionary
from engine.fix.settings import KEYS, SessionSettings, SettingsError, SettingsFile, load_settings
from engine.fix.store import FileStore, MemoryStore, WriteBarrier
from engine.fix.transport import SocketAcceptor, SocketInitiator

log = get_log(__name__)

#: How often session states are polled for changes, seconds.
STATUS_INTERVAL_S = 0.2


def _field(raw: bytes, tag: bytes) -> bytes:
    start = raw.find(b"\x01" + tag + b"=")
    if start < 0:
        return b""
    start += len(tag) + 2
    end = raw.find(b"\x01", start)
    return raw[start : end if end >= 0 else len(raw)]


def _absolute(path: str | None) -> str:
    return str(Path(path).resolve()) if path else ""


class BusLog:
    """A session log that publishes every message on the bus (and passes it to ``inner``)."""

    def __init__(
        self, bus: MessageBus, clock: Clock, session_id: str, inner: SessionLog | None = None
    ) -> None:
        self.bus = bus
        self.clock = clock
        self.session_id = session_id
        self.inner: SessionLog = inner or NullLog(session_id)

    def _publish(self, raw: bytes, now_ns: int, outbound: bool) -> None:
        seq = _field(raw, b"34")
        created = now_ns
        if not outbound:  # the peer's SendingTime <52>: its send, on its clock
            created = parse_timestamp(_field(raw, b"52")) or now_ns
        self.bus.publish(
            FixMessageSeen(
                ts_event=self.clock.now_ns(),
                session_id=self.session_id,
                outbound=outbound,
                msg_type=_field(raw, b"35").decode("latin-1"),
                seq_num=int(seq) if seq.isdigit() else 0,
                raw=raw,
                ts_created=created,
                ts_wire=now_ns,
            )
        )

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        """Publish and log an inbound message."""
        self.inner.on_incoming(message, now_ns)
        self._publish(message, now_ns, outbound=False)

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        """Publish and log an outbound message."""
        self.inner.on_outgoing(message, now_ns)
        self._publish(message, now_ns, outbound=True)

    def on_event(self, text: str, now_ns: int) -> None:
        """Log a session event."""
        self.inner.on_event(text, now_ns)

    def flush(self) -> None:
        """Flush the inner log."""
        self.inner.flush()

    def close(self) -> None:
        """Close the inner log."""
        self.inner.close()


def _set_seq(session: FixSession, command: ControlSession) -> str:
    out_seq, in_seq = command.next_sender_seq_num, command.next_target_seq_num
    if out_seq is None and in_seq is None:
        raise ValueError("set_seq needs next_sender_seq_num and/or next_target_seq_num")
    for name, value in (("next_sender_seq_num", out_seq), ("next_target_seq_num", in_seq)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if out_seq is not None:
        session.set_next_sender_seq_num(out_seq)
    if in_seq is not None:
        session.set_next_target_seq_num(in_seq)
    return f"next out {session.next_sender_seq_num}, next in {session.next_target_seq_num}"


@dataclass
class _Sender:
    """Write bytes a session produced outside an entry point to its live connection."""

    endpoint: SocketAcceptor | SocketInitiator

    def send_for(self, session: FixSession, data: list[bytes]) -> None:
        conn = self.endpoint.active.get(session)
        if conn is not None and data:
            conn._write(data)


@dataclass
class _Tracked:
    session: FixSession
    last: tuple[SessionState, int, int] | None = None
    #: The ``[SESSION]`` it was built from and its file (None: built in code, not reloadable).
    settings: SessionSettings | None = None
    settings_file: Path | None = None
    reloading: bool = False


class FixLink:
    """The engine's FIX acceptors and initiators.

    Parameters
    ----------
    bus : MessageBus
        Where status and message events go.
    clock : Clock
        Time source.
    store_dir : Path | None
        Store folder of sessions whose ``.cfg`` sets no ``FileStorePath`` (the engine's state
        directory; used when a session is rebuilt by a reload).
    write_barrier : WriteBarrier | None
        The journal's ``after_written``: every tracked session's file store then counts an
        inbound message received on disk only after the journal holds what it caused.
    """

    name = "fix"

    def __init__(
        self,
        bus: MessageBus,
        clock: Clock,
        *,
        store_dir: Path | None = None,
        write_barrier: WriteBarrier | None = None,
    ) -> None:
        self.bus = bus
        self.clock = clock
        self.store_dir = store_dir
        self.write_barrier = write_barrier
        self.acceptors: list[SocketAcceptor] = []
        self.initiators: list[SocketInitiator] = []
        self._tracked: list[_Tracked] = []
        self._startup: list[Callable[[], Awaitable[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        # A FIX venue's logon or logout: every session's status at once, not at the next tick.
        bus.subscribe(VenueLinkChanged, self._on_link)

    def _on_link(self, ev: VenueLinkChanged) -> None:
        if ev.protocol == "FIX":
            self.publish_status()

    def track(
        self,
        session: FixSession,
        *,
        settings: SessionSettings | None = None,
        settings_file: Path | None = None,
    ) -> None:
        """Publish status changes of ``session``.

        With ``settings`` (the ``[SESSION]`` it was built from) and ``settings_file`` (that
        ``.cfg``), the session can be reloaded from the file (:class:`ReloadSession`).
        """
        self._guard(session)
        self._tracked.append(_Tracked(session, settings=settings, settings_file=settings_file))

    def _guard(self, session: FixSession) -> None:
        """Put ``session``'s file store behind the journal's write barrier (if there is one)."""
        if self.write_barrier is not None and isinstance(session.store, FileStore):
            session.store.set_write_barrier(self.write_barrier)

    def add_acceptor(self, acceptor: SocketAcceptor, *, track: bool = True) -> None:
        """Serve ``acceptor``'s sessions (started with the engine).

        ``track=False`` keeps its sessions out of the status events (the built-in simulator's
        side of the demo session is the exchange's business, not the trader's).
        """
        self.acceptors.append(acceptor)
        if track:
            for session in acceptor.sessions.values():
                self.track(session)
        self._startup.append(acceptor.start)

    def add_initiator(self, initiator: SocketInitiator) -> None:
        """Connect ``initiator`` (started with the engine, after the acceptors)."""
        self.initiators.append(initiator)
        self.track(initiator.session)
        self._startup.append(initiator.start)

    def add_startup(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run ``step`` at start, in order with the acceptors and initiators."""
        self._startup.append(step)

    # ------------------------------------------------------------------ Component
    def start(self, engine: Engine) -> None:
        """Start the endpoints in order and begin publishing session status."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._start_all(), name="fix-start"),
            loop.create_task(self._watch(), name="fix-status"),
        ]

    async def prepare_stop(self) -> None:
        """Cancel the start-up steps still under way (an engine stopped right after it started).

        The engine calls every component's ``prepare_stop`` before it stops any: a step left
        running would open what a component already stopped then never closes (the demo's
        OUCH listener, started after its port's stop under a slow disk: a server left open,
        the loop's close then stalled for seconds).
        """
        start = self._tasks[0] if self._tasks else None
        if start is not None and not start.done():
            start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await start

    async def _start_all(self) -> None:
        for step in self._startup:
            try:
                await step()
            except Exception:
                log.exception("FIX start-up step %r failed", step)

    async def _watch(self) -> None:
        while True:
            self.publish_status()
            await asyncio.sleep(STATUS_INTERVAL_S)

    def publish_status(self, *, force: bool = False) -> None:
        """Publish a SessionStatusChanged for every session whose state moved."""
        for t in self._tracked:
            state = self._state(t.session)
            now = (state, t.session.next_sender_seq_num, t.session.next_target_seq_num)
            if force or now != t.last:
                t.last = now
                self.bus.publish(self._status_event(t.session, state, t.settings_file))

    def _state(self, s: FixSession) -> SessionState:
        st = s.state
        if s.is_logged_on:
            return SessionState.LOGOUT_SENT if st.sent_logout else SessionState.LOGGED_ON
        if st.sent_logon:
            return SessionState.LOGON_SENT
        if st.connected:
            return SessionState.CONNECTING
        return SessionState.DISCONNECTED

    def _status_event(
        self, s: FixSession, state: SessionState, settings_file: Path | None = None
    ) -> SessionStatusChanged:
        cfg = s.config
        dictionary = app_dictionary = ""
        if cfg.use_data_dictionary:
            chosen = cfg.data_dictionary
            if cfg.begin_string == "FIXT.1.1":
                chosen = cfg.transport_data_dictionary
                app_dictionary = _absolute(cfg.app_data_dictionary)
            dictionary = _absolute(chosen)
        return SessionStatusChanged(
            ts_event=self.clock.now_ns(),
            session_id=str(s.session_id),
            state=state,
            next_sender_seq_num=s.next_sender_seq_num,
            next_target_seq_num=s.next_target_seq_num,
            dictionary=dictionary,
            app_dictionary=app_dictionary,
            settings_file=str(settings_file.absolute()) if settings_file is not None else "",
        )

    async def stop(self) -> None:
        """Log out the initiators, stop the acceptors, close the stores and logs."""
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for initiator in self.initiators:
            await initiator.stop()
        for acceptor in self.acceptors:
            await acceptor.stop()
        self.publish_status()
        for t in self._tracked:
            t.session.close()
        for acceptor in self.acceptors:
            for session in acceptor.sessions.values():
                session.close()

    def handle(self, command: Command) -> CommandResult | None:
        """Answer :class:`ControlSession` and :class:`ReloadSession` for the tracked sessions."""
        if not isinstance(command, ControlSession | ReloadSession):
            return None
        now = self.clock.now_ns()
        tracked = next(
            (t for t in self._tracked if str(t.session.session_id) == command.session_id), None
        )
        if tracked is None:
            known = ", ".join(str(t.session.session_id) for t in self._tracked) or "none"
            return CommandError(
                command=command,
                ts_handled=now,
                reason=f"no FIX session {command.session_id!r}; sessions: {known}",
            )
        session = tracked.session
        try:
            if isinstance(command, ReloadSession):
                detail = self._reload(tracked)
            else:
                detail = self._control(session, command)
        except ValueError as e:
            return CommandError(command=command, ts_handled=now, reason=str(e))
        self.publish_status(force=True)
        return CommandAck(command=command, ts_handled=now, detail=detail)

    def _control(self, session: FixSession, command: ControlSession) -> str:
        endpoint = self._endpoint_of(session)
        match command.action:
            case "logout":
                if not session.is_logged_on:
                    raise ValueError(f"{session.session_id} is not logged on")
                session.enabled = False
                if endpoint is not None:
                    endpoint.send_for(session, session.logout("logout requested by the console"))
                return "Logout sent"
            case "logon":
                session.enabled = True
                return "logon enabled: the initiator connects at its next attempt"
            case "reset":
                out = session.reset(self.clock.now_ns())
                if endpoint is not None:
                    endpoint.send_for(session, out)
                return "session reset: sequence numbers are 1"
            case "set_seq":
                return _set_seq(session, command)
        raise ValueError(
            f"unknown session action {command.action!r}; use logon, logout, reset or set_seq"
        )

    # ------------------------------------------------------------------ reload
    def _reload(self, t: _Tracked) -> str:
        """Check the session's file again and start the restart; return what will happen.

        Everything that can fail is checked here, before the running session is touched: the
        file parses, the session is still in it with the same role, its dictionaries load and
        its store and log folders can be created. Raises ValueError naming file, line and key.
        """
        old = t.session
        sid = str(old.session_id)
        if t.settings is None or t.settings_file is None:
            raise ValueError(
                f"{sid} was built by the engine itself, not from a settings file: "
                "there is nothing to reload it from"
            )
        if t.reloading:
            raise ValueError(f"{sid} is being reloaded already; wait for it to log on again")
        initiator = next((i for i in self.initiators if i.session is old), None)
        if initiator is None:
            raise ValueError(
                f"{sid} is an acceptor session: only initiators can be reloaded; "
                "restart the engine to apply its settings"
            )
        path = t.settings_file
        file = _read_settings(path, sid)
        new = _find_session(file, old, path)
        if not new.is_initiator:
            raise ValueError(
                f"{path}:{_key_line(file, new, 'ConnectionType')}: ConnectionType: "
                f"{new.connection_type}: a reload cannot change a session's role; {sid} keeps "
                "running unchanged"
            )
        schedule = _check_buildable(file, new, path)
        changes = _changes(t.settings, new)
        t.reloading = True
        task = asyncio.get_running_loop().create_task(
            self._restart(t, initiator, new, path), name=f"fix-reload {sid}"
        )
        self._tasks = [*(x for x in self._tasks if not x.done()), task]
        host, port = new.connect_addresses()[0]
        more = f"; and {len(changes) - 8} more" if len(changes) > 8 else ""
        shown = "; ".join(changes[:8]) + more
        what = "logging out, then on again" if old.is_logged_on else "connecting again"
        when = ""
        if schedule is not None and not schedule.is_in_session(self.clock.now_ns()):
            when = " when its schedule opens (out of session now)"
        return (
            f"reloaded from {path} ([SESSION] at line {new.section_line}): "
            f"{shown or 'no setting changed'}; {what} to {host}:{port}{when}"
        )

    async def _restart(
        self, t: _Tracked, initiator: SocketInitiator, new: SessionSettings, path: Path
    ) -> None:
        """Log out, replace the session with one built from ``new`` and connect again."""
        from engine.fix.cli import build_session
        from engine.venues.fix.adapter import FixVenue

        old = t.session
        sid = str(old.session_id)
        try:
            await initiator.stop(logout=True)
            old.close()
            used = new
            try:
                session = build_session(new, old.app, path.parent, self.store_dir)
            except Exception:  # checked before; if it still fails, run the previous settings
                log.exception("%s: cannot build the reloaded session; keeping its settings", sid)
                assert t.settings is not None
                used = t.settings
                session = build_session(used, old.app, path.parent, self.store_dir)
            if not used.file_store_path and isinstance(old.store, MemoryStore):
                # No FileStorePath: memory is the only copy of the sequence numbers.
                session.store = old.store
            self._guard(session)
            if isinstance(old.log, BusLog):
                session.log = BusLog(self.bus, self.clock, sid, inner=session.log)
            if isinstance(old.app, FixVenue):
                old.app.bind(session)
            initiator.session = session
            initiator.hosts = used.connect_addresses()
            initiator.reconnect_interval = float(used.reconnect_interval)
            initiator.logon_timeout = session.config.logon_timeout
            t.session, t.settings, t.last = session, used, None
            log.info("%s: restarted with the settings of %s", sid, path)
            await initiator.start()
        except Exception:  # the engine keeps running; the log says what went wrong
            log.exception("%s: reload from %s failed", sid, path)
        finally:
            t.reloading = False
            self.publish_status()

    def _endpoint_of(self, session: FixSession) -> _Sender | None:
        endpoints: list[SocketAcceptor | SocketInitiator] = [*self.initiators, *self.acceptors]
        for endpoint in endpoints:
            if session in endpoint.active:
                return _Sender(endpoint)
        return None

    def state_events(self) -> list[Event]:
        """Describe every session's status."""
        return [
            self._status_event(t.session, self._state(t.session), t.settings_file)
            for t in self._tracked
        ]


# ----------------------------------------------------------------------------- reload helpers

#: Dictionary keys of SessionSettings and how the file spells them.
_DICTIONARY_KEYS = (
    ("data_dictionary", "DataDictionary"),
    ("transport_data_dictionary", "TransportDataDictionary"),
    ("app_data_dictionary", "AppDataDictionary"),
)


def _read_settings(path: Path, sid: str) -> SettingsFile:
    try:
        return load_settings(path)
    except SettingsError as e:
        shown = "; ".join(str(p) for p in e.problems[:5])
        more = f" (and {len(e.problems) - 5} more)" if len(e.problems) > 5 else ""
        raise ValueError(f"{shown}{more}; {sid} keeps running unchanged") from None
    except OSError as e:
        raise ValueError(
            f"cannot read {path}: {e.strerror or e}; {sid} keeps running unchanged"
        ) from None


def _find_session(file: SettingsFile, old: FixSession, path: Path) -> SessionSettings:
    for s in file.sessions:
        if s.session_id == old.session_id:
            return s
    there = ", ".join(str(s.session_id) for s in file.sessions) or "none"
    raise ValueError(
        f"{path} has no [SESSION] {old.session_id} any more (sessions there: {there}); a "
        f"reload cannot change a session's identity; {old.session_id} keeps running unchanged"
    )


def _key_line(file: SettingsFile, s: SessionSettings, key: str) -> int:
    """Return the 1-based line setting ``key`` for session ``s`` (its section, else DEFAULT)."""
    lines = file.document.lines
    sections = file.document.section_lines()
    spans = [
        (name, idx, sections[i + 1][1] if i + 1 < len(sections) else len(lines))
        for i, (name, idx) in enumerate(sections)
    ]
    own = [sp for sp in spans if sp[1] + 1 == s.section_line]
    default = [sp for sp in spans if sp[0].upper() == "DEFAULT"]
    for _name, start, end in own + default:
        for i in range(start, end):
            if lines[i].kind == "key" and lines[i].name.upper() == key.upper():
                return i + 1
    return s.section_line


def _check_buildable(file: SettingsFile, s: SessionSettings, path: Path) -> SessionSchedule | None:
    """Check what building the session needs; return its schedule (None: always in session)."""
    sid = s.session_id

    def fail(key: str, reason: str) -> ValueError:
        return ValueError(
            f"{path}:{_key_line(file, s, key)}: {key}: {reason}; {sid} keeps running unchanged"
        )

    config = s
    if config.use_data_dictionary:
        named = [(key, getattr(config, attr)) for attr, key in _DICTIONARY_KEYS]
        named += [(f"AppDataDictionary.{v}", p) for v, p in config.app_data_dictionaries.items()]
        for key, value in named:
            if not value:
                continue
            p = Path(value)
            found = p if p.is_absolute() or p.exists() else path.parent / p
            try:
                load_dictionary(found)
            except (OSError, ValueError) as e:
                raise fail(key, f"{value}: cannot load: {e}") from None
    for key, folder in (("FileStorePath", s.file_store_path), ("FileLogPath", s.file_log_path)):
        if folder:
            try:
                Path(folder).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise fail(key, f"{folder}: {e.strerror or e}") from None
    if not (s.non_stop_session or s.start_time):
        return None
    try:
        return SessionSchedule.from_settings(s)
    except ValueError as e:
        raise fail("StartTime", str(e)) from None


def _show(value: object) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "Y" if value else "N"
    if isinstance(value, tuple | list):
        return ", ".join(_show(v) for v in value) or "(none)"
    return str(value)


def _changes(old: SessionSettings, new: SessionSettings) -> list[str]:
    """Return ``"HeartBtInt 30 → 5"`` for every setting that differs."""
    out = []
    for spec in KEYS.values():
        a, b = getattr(old, spec.attr, None), getattr(new, spec.attr, None)
        if a != b:
            out.append(f"{spec.name} {_show(a)} → {_show(b)}")
    for name, attr in (
        ("fail-over hosts", "socket_connect_failover"),
        ("AppDataDictionary.<version>", "app_data_dictionaries"),
        ("custom keys", "extra"),
    ):
        a, b = getattr(old, attr), getattr(new, attr)
        if a != b:
            out.append(f"{name} {_show(a)} → {_show(b)}")
    return out
