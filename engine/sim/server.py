# SPDX-License-Identifier: MIT
"""``qwconsole sim --cfg FILE.cfg``: the exchange simulator as a standalone FIX acceptor.

Outside FIX clients (QuickFIX's tradeclient or Banzai, another ``qwconsole engine``, any FIX
initiator) log on to the acceptor sessions of a QuickFIX-style settings file and trade against
the simulated exchange: the instruments of an engine configuration (``--config engine.toml``,
:mod:`engine.sim.listings`) or the demo's three futures (:data:`engine.demo.DEMO_LISTINGS`),
with their simulated participants moving prices and trading, market data on request
(MarketDataRequest <V>), and ExecutionReports that say in words why an order was rejected or
canceled.

Sessions are built as the engine builds them (:func:`engine.fix.cli.build_session`): a session
with ``FileStorePath`` keeps its sequence numbers and sent messages in files, so a restarted
simulator resumes the sequence numbers and can resend; ``FileLogPath`` logs every message.
Sessions are grouped by ``SocketAcceptPort`` (one listening socket per port; ``--port``
puts them all on one). ``0`` picks a free port.

As soon as it listens, the process prints one line per port on stdout (flushed)::

    sim: listening on 127.0.0.1:5001 (sessions: FIX.4.4:EXECUTOR->CLIENT1, ...)

and nothing else until it stops (``sim: stopped``), so a caller can read the port and then
leave stdout unread. SIGINT and SIGTERM stop it cleanly: client orders are canceled (and told),
connected clients get a Logout, the stores and logs are closed. Bad input (a missing or
malformed file, no acceptor session, a port in use) is one line on stderr and exit status 2.

One module for the command: its options, the sessions it builds and the process's life
(start, signals, shutdown) read best in one place; the exchange with its participants and the
FIX application it serves are modules of :mod:`engine.sim`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from engine.busypoll import MAX_BUSY_POLL_US
from engine.cli_parser import OneLineErrorParser
from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import DEMO_LISTINGS, DEMO_OUCH_ACCOUNT, SimPump
from engine.fastlog import get_log
from engine.feeds.multicast import Group, MoldPublisher
from engine.fix.application import SessionID
from engine.fix.dictionary import DictionaryError
from engine.fix.edit.document import CfgDocument
from engine.fix.log import SessionLog
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings, SettingsError, SettingsFile
from engine.fix.transport import SocketAcceptor, install_uvloop
from engine.gcpace import GcPacing
from engine.oms.venue import ExecutionReport
from engine.pages import small_pages
from engine.sim.exchange import SimExchange, SimInstrument, id_epoch
from engine.sim.fix_app import SimFixApplication
from engine.sim.itch_feed import SimItchFeed
from engine.sim.mdp3_feed import Mdp3FeedOptions, Mdp3Serving
from engine.sim.ouch_app import SimOuchApplication, ouch_port, ouch_session_name

log = get_log(__name__)

PROG = "qwconsole sim"

#: The listen address when neither ``--host`` nor ``SocketAcceptHost`` says one.
DEFAULT_HOST = "127.0.0.1"

#: Seed of the participants' random numbers when ``--seed`` is not given (the demo's).
DEFAULT_SEED = 7


class SimConfigError(ValueError):
    """The settings file cannot run as a simulator (one line, naming file and session)."""


@dataclass
class Listener:
    """One listening socket and the acceptor sessions it serves."""

    host: str
    port: int
    settings: list[SessionSettings] = field(default_factory=list)


def plan_listeners(
    cfg: Path, *, host: str | None = None, port: int | None = None
) -> list[Listener]:
    """Read ``cfg`` and group its acceptor sessions by listen address.

    ``host``/``port`` override ``SocketAcceptHost``/``SocketAcceptPort`` of every session (a
    session then needs no ``SocketAcceptPort`` of its own). ``SocketAcceptPort=0`` and
    ``port=0`` pick a free port.

    Raises
    ------
    SimConfigError
        The file cannot be read or has errors, has no acceptor session, or a session has no
        port to listen on.
    """
    if not cfg.is_file():
        raise SimConfigError(f"{cfg}: " + ("is a directory" if cfg.is_dir() else "no such file"))
    try:
        text = cfg.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as e:
        raise SimConfigError(f"{cfg}: {e.strerror or e}") from None
    doc, free = _ports_for_loader(CfgDocument(text), override=port is not None)
    try:
        settings = SettingsFile(doc, str(cfg))
    except SettingsError as e:
        first = str(e.problems[0]) if e.problems else str(e)
        more = len(e.problems) - 1
        raise SimConfigError(first + (f" (and {more} more)" if more > 0 else "")) from None
    acceptors = [s for s in settings.sessions if not s.is_initiator]
    if not acceptors:
        what = f"{len(settings.sessions)} initiator" if settings.sessions else "no"
        raise SimConfigError(
            f"{cfg}: no acceptor session ({what} sessions; the simulator needs "
            "ConnectionType=acceptor)"
        )
    by_address: dict[tuple[str, int], Listener] = {}
    for s in acceptors:
        listen_port = port if port is not None else s.socket_accept_port
        if s.section_line in free and port is None:
            listen_port = 0
        if listen_port is None:  # pragma: no cover  (the loader requires it of acceptors)
            raise SimConfigError(
                f"{cfg}:{s.section_line}: session {s.session_id} has no "
                "SocketAcceptPort (set it, or give --port)"
            )
        listen_host = host or s.socket_accept_host or DEFAULT_HOST
        key = (listen_host, listen_port)
        listener = by_address.get(key)
        if listener is None:
            listener = by_address[key] = Listener(listen_host, listen_port)
        listener.settings.append(s)
    return list(by_address.values())


def _ports_for_loader(doc: CfgDocument, *, override: bool) -> tuple[CfgDocument, set[int]]:
    """Make ``doc`` acceptable to the settings loader where the simulator picks the port.

    The loader (QuickFIX's rules) wants ``SocketAcceptPort`` in 1..65535 on every acceptor.
    ``SocketAcceptPort=0`` (a free port) is set to 1 in place (line numbers stay), and the
    lines of the ``[SESSION]`` headers it applied to are returned; with ``override`` (``--port``)
    a trailing ``[DEFAULT] SocketAcceptPort=1`` fills sessions that set none.
    """
    sections = doc.section_lines()
    zero_default = False
    own: dict[int, str | None] = {}  # [SESSION] header line (1-based) -> its own value
    for k, (name, idx) in enumerate(sections):
        value = doc.get(k, "SocketAcceptPort")
        if name.upper() == "DEFAULT":
            zero_default = value is not None and value.strip() == "0"
        elif name.upper() == "SESSION":
            own[idx + 1] = None if value is None else value.strip()
        if value is not None and value.strip() == "0":
            doc.set(k, "SocketAcceptPort", "1")
    free = {line for line, v in own.items() if v == "0" or (v is None and zero_default)}
    if override:
        doc.add_section("DEFAULT", {"SocketAcceptPort": "1"})
    return doc, free


class _SimApplication(SimFixApplication):
    """The simulator's application; with ``verbose``, logons and logouts go to stderr."""

    def __init__(
        self, exchange: SimExchange, clock: LiveClock, *, verbose: bool, cancel_on_disconnect: bool
    ) -> None:
        super().__init__(exchange, clock, cancel_on_disconnect=cancel_on_disconnect)
        self.verbose = verbose

    def on_logon(self, session_id: SessionID) -> None:
        """Register the client; say so when verbose."""
        super().on_logon(session_id)
        if self.verbose:
            _say(f"{session_id} logged on", sys.stderr)

    def on_logout(self, session_id: SessionID) -> None:
        """End the client's session (see the base class); say so when verbose."""
        super().on_logout(session_id)
        if self.verbose:
            _say(f"{session_id} logged out", sys.stderr)


class _EchoLog:
    """A session log that also writes the session's events to stderr (``--verbose``)."""

    def __init__(self, inner: SessionLog, name: str) -> None:
        self._inner = inner
        self._name = name

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        self._inner.on_incoming(message, now_ns)

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        self._inner.on_outgoing(message, now_ns)

    def on_event(self, text: str, now_ns: int) -> None:
        self._inner.on_event(text, now_ns)
        _say(f"{self._name}: {text}", sys.stderr)

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._inner.close()


def _say(text: str, out: TextIO) -> None:
    out.write(f"sim: {text}\n")
    out.flush()


def _close(sessions: Sequence[FixSession]) -> None:
    for s in sessions:
        try:
            s.close()
        except Exception:  # one store failing to close must not keep the others open
            log.exception("%s: closing the store failed", s.session_id)


def _build_sessions(
    cfg: Path, listeners: list[Listener], app: SimFixApplication, verbose: bool
) -> list[list[FixSession]]:
    from engine.fix.cli import build_session

    built: list[list[FixSession]] = []
    base = cfg.absolute().parent
    try:
        for listener in listeners:
            group: list[FixSession] = []
            built.append(group)
            for s in listener.settings:
                try:
                    session = build_session(s, app, base)
                except (DictionaryError, OSError, ValueError) as e:
                    why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                    if isinstance(e, OSError) and e.filename:
                        why = f"{e.filename}: {why}"
                    raise SimConfigError(
                        f"{cfg}:{s.section_line}: session {s.session_id}: {why}"
                    ) from None
                if verbose:
                    session.log = _EchoLog(session.log, str(session.session_id))
                group.append(session)
    except SimConfigError:
        _close([s for group in built for s in group])
        raise
    return built


@dataclass(frozen=True, slots=True)
class OuchPortOptions:
    """The simulator's OUCH 5.0 port: where it listens, its accounts, where it keeps messages."""

    port: int  # 0: a free one
    accounts: tuple[tuple[str, str], ...]  # (user, password)
    store_dir: Path | None = None  # each account's sequenced messages, for replays
    busy_poll_us: int = 0  # poll the port this long after traffic instead of sleeping


@dataclass(frozen=True, slots=True)
class ItchFeedOptions:
    """The simulator's market published as ITCH 5.0 over MoldUDP64 multicast."""

    a: Group  # feed A
    b: Group | None = None  # feed B (the same packets)
    retransmit_port: int = 0  # the re-request server's UDP port on the host (0: a free one)
    heartbeat_s: float = 1.0  # a heartbeat after this long without a packet


class _ItchServing:
    """The feed while the simulator serves: the exchange's ITCH messages, the publisher."""

    def __init__(
        self, exchange: SimExchange, clock: LiveClock, options: ItchFeedOptions, host: str
    ) -> None:
        self.options = options
        self.host = host
        self.feed = SimItchFeed(exchange, clock.now_ns())
        exchange.order_feed = self.feed
        session = ("QWSIM" + id_epoch(clock.now_ns())).encode("ascii")[:10].ljust(10)
        self.publisher = MoldPublisher(session, options.a, options.b)
        self._last_sent = 0.0
        self._task: asyncio.Task[None] | None = None

    async def start(self, out: TextIO) -> None:
        port = await self.publisher.serve_requests(self.host, self.options.retransmit_port)
        feeds = " and ".join(str(g) for g in self.publisher.groups)
        _say(
            f"ITCH 5.0 over MoldUDP64 on {feeds}; re-requests on {self.host}:{port} "
            f"(session {self.publisher.session.decode()})",
            out,
        )
        self.flush()
        self._task = asyncio.get_running_loop().create_task(self._heartbeats(), name="itch-hb")

    def flush(self) -> None:
        """Send the messages the exchange made since the last call."""
        msgs = self.feed.take()
        if msgs:
            self.publisher.publish(msgs)
            self._last_sent = time.monotonic()

    async def _heartbeats(self) -> None:
        every = self.options.heartbeat_s
        while True:
            await asyncio.sleep(every / 4)
            self.flush()
            if time.monotonic() - self._last_sent >= every:
                self.publisher.heartbeat()
                self._last_sent = time.monotonic()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.flush()
        self.publisher.end_session()
        self.publisher.close()


class _Extras:
    """The simulator's ports besides FIX: OUCH order entry and the ITCH feed, when asked for."""

    def __init__(
        self,
        exchange: SimExchange,
        clock: LiveClock,
        host: str,
        ouch: OuchPortOptions | None,
        itch: ItchFeedOptions | None,
        cancel_on_disconnect: bool,
        mdp3: Mdp3FeedOptions | None = None,
    ) -> None:
        self.ouch = None
        if ouch is not None:
            self.ouch = _OuchServing(exchange, clock, ouch, host, cancel_on_disconnect)
        try:
            self.itch = None if itch is None else _ItchServing(exchange, clock, itch, host)
        except (ValueError, OSError) as e:
            raise _FeedSetupError(f"ITCH feed: {e}") from e
        try:
            self.mdp3 = None if mdp3 is None else Mdp3Serving(exchange, clock, mdp3)
        except (ValueError, OSError) as e:
            raise _FeedSetupError(f"MDP 3.0 feed: {e}") from e

    def dispatch(self, reports: list[ExecutionReport]) -> None:
        """Send the OUCH clients their reports."""
        if self.ouch is not None:
            self.ouch.app.dispatch(reports)

    def flush(self) -> None:
        """Publish the feed's new messages."""
        if self.itch is not None:
            self.itch.flush()
        if self.mdp3 is not None:
            self.mdp3.flush()

    async def start(self, out: TextIO) -> bool:
        """Open the ports; False (said on stderr) if one cannot be opened."""
        if self.ouch is not None and not await self.ouch.start(out):
            return False
        if self.itch is not None:
            await self.itch.start(out)
        if self.mdp3 is not None:
            await self.mdp3.start(out)
        return True

    async def stop(self) -> None:
        """Close them."""
        if self.ouch is not None:
            await self.ouch.stop()
        if self.itch is not None:
            await self.itch.stop()
        if self.mdp3 is not None:
            await self.mdp3.stop()


class _FeedSetupError(ValueError):
    """A market data feed that cannot be set up (says which, and why)."""


class _OuchServing:
    """The simulator's OUCH port while it serves: the port's application and its listener."""

    def __init__(
        self,
        exchange: SimExchange,
        clock: LiveClock,
        options: OuchPortOptions,
        host: str,
        cancel_on_disconnect: bool,
    ) -> None:
        self.options = options
        self.app = SimOuchApplication(exchange, clock, cancel_on_disconnect=cancel_on_disconnect)
        session = ouch_session_name(options.store_dir, options.accounts, clock.now_ns())
        self.listener = ouch_port(
            self.app,
            options.accounts,
            session=session,
            clock=clock,
            store_dir=options.store_dir,
            host=host,
            port=options.port,
            busy_poll_us=options.busy_poll_us,
        )
        self.started = False

    async def start(self, out: TextIO) -> bool:
        """Listen and say where; ``False`` (said on stderr) if the port cannot be had."""
        try:
            bound = await self.listener.start()
        except OSError as e:
            why = "address already in use" if e.errno == errno.EADDRINUSE else e.strerror
            _error(
                f"cannot listen on {self.listener.host}:{self.options.port} for OUCH: {why or e}"
            )
            return False
        self.started = True
        users = ", ".join(user for user, _ in self.options.accounts)
        _say(f"OUCH 5.0 listening on {self.listener.host}:{bound} (accounts: {users})", out)
        return True

    async def stop(self) -> None:
        """Cancel the accounts' orders (they hear so) and stop listening."""
        self.app.cancel_all()
        if self.started:
            await self.listener.stop()


async def serve(
    cfg: Path,
    *,
    host: str | None = None,
    port: int | None = None,
    seed: int = DEFAULT_SEED,
    seconds: float | None = None,
    verbose: bool = False,
    cancel_on_disconnect: bool = True,
    out: TextIO | None = None,
    listings: Sequence[SimInstrument] = DEMO_LISTINGS,
    ouch: OuchPortOptions | None = None,
    itch: ItchFeedOptions | None = None,
    mdp3: Mdp3FeedOptions | None = None,
) -> int:
    """Run the simulator ``cfg`` describes until SIGINT/SIGTERM (or ``seconds``).

    ``listings`` are the instruments it lists (``engine.sim.listings`` reads them from an
    engine TOML); ``ouch`` adds an OUCH 5.0 port next to the FIX ones; ``itch`` publishes the
    market as ITCH 5.0 over MoldUDP64 multicast, ``mdp3`` as CME MDP 3.0 (incremental A/B
    and a snapshot loop, :mod:`engine.sim.mdp3_feed`). Returns the exit
    status: 0 after a clean stop, 2 for bad input (on stderr).
    """
    out = out or sys.stdout
    small_pages()  # a venue answers in microseconds: no huge-page faults (engine.pages)
    with _stop_on_signals() as stop:  # before the port line: a caller may signal at once
        return await _serve(
            cfg,
            stop,
            host,
            port,
            seed,
            seconds,
            verbose,
            cancel_on_disconnect,
            out,
            listings,
            ouch,
            itch,
            mdp3,
        )


async def _serve(
    cfg: Path,
    stop: asyncio.Event,
    host: str | None,
    port: int | None,
    seed: int,
    seconds: float | None,
    verbose: bool,
    cancel_on_disconnect: bool,
    out: TextIO,
    listings: Sequence[SimInstrument] = DEMO_LISTINGS,
    ouch: OuchPortOptions | None = None,
    itch: ItchFeedOptions | None = None,
    mdp3: Mdp3FeedOptions | None = None,
) -> int:
    try:
        listeners = plan_listeners(cfg, host=host, port=port)
    except SimConfigError as e:
        _error(str(e))
        return 2
    clock = LiveClock()
    engine = Engine(clock, engine_id="sim")  # the pump's clock; no engine loop runs here
    # Each run its own id epoch: a client that saw this venue's ExecIDs before a restart
    # must not see one of them again (it de-duplicates executions by ExecID).
    exchange = SimExchange(listings, seed=seed, epoch=id_epoch(clock.now_ns()))
    app = _SimApplication(
        exchange, clock, verbose=verbose, cancel_on_disconnect=cancel_on_disconnect
    )
    try:
        groups = _build_sessions(cfg, listeners, app, verbose)
    except SimConfigError as e:
        _error(str(e))
        return 2
    sessions = [s for group in groups for s in group]
    _warn_unstored(cfg, listeners)
    try:
        extras = _Extras(
            exchange, clock, host or DEFAULT_HOST, ouch, itch, cancel_on_disconnect, mdp3
        )
    except _FeedSetupError as e:
        _error(str(e))
        return 2

    def dispatch(reports: list[ExecutionReport]) -> None:
        app.dispatch(reports)  # each port sends only its own clients' reports
        extras.dispatch(reports)

    def publish(events: npt.NDArray[np.void]) -> None:
        app.publish_market_data(events)
        extras.flush()

    # Books seeded (and the matching kernels loaded) before the first client can log on.
    pump = SimPump(exchange, dispatch, publish)
    pacing = GcPacing()
    pump.start(engine)
    acceptors: list[SocketAcceptor] = []
    try:
        for listener, group in zip(listeners, groups, strict=True):
            acceptor = SocketAcceptor(group, host=listener.host, port=listener.port, clock=clock)
            try:
                await acceptor.start()
            except OSError as e:
                why = "address already in use" if e.errno == errno.EADDRINUSE else e.strerror
                _error(f"cannot listen on {listener.host}:{listener.port}: {why or e}")
                return 2
            acceptors.append(acceptor)
            names = ", ".join(str(s.session_id) for s in group)
            _say(f"listening on {listener.host}:{acceptor.port} (sessions: {names})", out)
        if not await extras.start(out):
            return 2
        pacing.start()  # a venue must not stall for a full collection of everything it keeps
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
        return 0
    finally:
        await pacing.stop()
        # The pump first: a step run while the feeds below close (their stop awaits) published
        # to a closed socket ("Bad file descriptor", a traceback on every such stop).
        await pump.stop()
        # Orders do not outlive the simulator: every client hears so, live or on its next logon.
        app.cancel_all()
        await extras.stop()
        for acceptor in acceptors:
            await acceptor.stop(logout=True)
        _close(sessions)
        if acceptors:
            _say("stopped", out)


def _warn_unstored(cfg: Path, listeners: Sequence[Listener]) -> None:
    for listener in listeners:
        for s in listener.settings:
            if not s.file_store_path and not s.reset_on_logon:
                _say(
                    f"warning: {cfg}:{s.section_line}: session {s.session_id} has no "
                    "FileStorePath: its sequence numbers start at 1 again on every run "
                    "(set FileStorePath, or ResetOnLogon=Y)",
                    sys.stderr,
                )


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[asyncio.Event]:
    """Yield an event SIGINT and SIGTERM set (instead of ending the process) while inside."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)


def _error(text: str) -> None:
    sys.stderr.write(f"{PROG}: error: {text}\n")
    sys.stderr.flush()


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0..65535; 0 picks a free one)")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 7 * 24 * 3600:
        raise argparse.ArgumentTypeError(f"{text} s is outside 0 < seconds <= 604800")
    return value


def _seed(text: str) -> int:
    if not text.isdigit() or int(text) >= 2**32:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (0..4294967295)")
    return int(text)


def build_parser() -> OneLineErrorParser:
    """Return the parser of ``qwconsole sim``."""
    parser = OneLineErrorParser(
        prog=PROG,
        description="Run the exchange simulator (three futures, simulated participants, market "
        "data) as a FIX acceptor for outside clients, with the acceptor sessions of a "
        "QuickFIX-style settings file. Prints 'sim: listening on HOST:PORT (sessions: ...)' "
        "once it accepts; stops cleanly on SIGINT/SIGTERM.",
    )
    parser.add_argument(
        "--cfg",
        required=True,
        type=Path,
        metavar="FILE.cfg",
        help="QuickFIX-style settings file with acceptor sessions",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=None,
        help="listen on this port for every session (0: a free one) instead of SocketAcceptPort",
    )
    parser.add_argument(
        "--host",
        default=None,
        help=f"listen address (default SocketAcceptHost, else {DEFAULT_HOST})",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="ENGINE.toml",
        help="list the [[instruments]] of this engine configuration (tick and lot size, "
        "initial_price, participant_*) and take its [simulator] seed; default: the demo's three",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help=f"seed of the simulated participants (default [simulator] seed, else {DEFAULT_SEED})",
    )
    parser.add_argument(
        "--seconds",
        type=_seconds,
        default=None,
        help="stop after this long (default: run until SIGINT/SIGTERM)",
    )
    parser.add_argument(
        "--keep-orders",
        action="store_true",
        help="keep a client's orders working when its session disconnects (default: cancel them)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="write session events (logons, resends, rejects) to stderr",
    )
    parser.add_argument(
        "--ouch-port",
        type=_port,
        default=None,
        help="also serve OUCH 5.0 over SoupBinTCP on this port (0: a free one)",
    )
    parser.add_argument(
        "--ouch-account",
        action="append",
        type=_account,
        default=None,
        metavar="USER:PASSWORD",
        help="an OUCH account (repeatable; default QWC1:qwdemo, the demo's)",
    )
    parser.add_argument(
        "--ouch-store",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep each OUCH account's messages in files here (a restart replays them)",
    )
    parser.add_argument(
        "--ouch-busy-poll",
        type=_busy_poll,
        default=0,
        metavar="US",
        help="poll the OUCH port this many µs after traffic instead of sleeping (costs a core;"
        " the FIX sessions take BusyPollMicroseconds in the .cfg)",
    )
    parser.add_argument(
        "--itch-feed",
        type=_groups,
        default=None,
        metavar="GROUP:PORT[,GROUP:PORT]",
        help="publish the market as ITCH 5.0 over MoldUDP64 multicast on feed A (and B), "
        "e.g. 239.255.1.1:31001,239.255.1.2:31002 (joined on --host's interface)",
    )
    parser.add_argument(
        "--itch-retransmit-port",
        type=_port,
        default=0,
        metavar="PORT",
        help="UDP port of the feed's re-request server (default: a free one, printed)",
    )
    parser.add_argument(
        "--mdp3-feed",
        type=_groups,
        default=None,
        metavar="GROUP:PORT[,GROUP:PORT]",
        help="publish the market as CME MDP 3.0 (SBE) multicast: the incremental channel on "
        "feed A (and B); needs --mdp3-snapshot and --mdp3-schema",
    )
    parser.add_argument(
        "--mdp3-snapshot",
        type=_groups,
        default=None,
        metavar="GROUP:PORT",
        help="the MDP 3.0 snapshot loop (recovery channel), e.g. 239.255.2.3:32003",
    )
    parser.add_argument(
        "--mdp3-schema",
        type=Path,
        default=None,
        metavar="XML",
        help="CME's MDP 3.0 schema, templates_FixBinary.xml (version 9 or later)",
    )
    parser.add_argument("--uvloop", action="store_true", help="use uvloop when installed")
    return parser


def _groups(text: str) -> tuple[tuple[str, int], ...]:
    out = []
    for part in text.split(","):
        addr, sep, port = part.strip().rpartition(":")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"{part!r}: give GROUP:PORT (239.255.1.1:31001)")
        try:
            first = int(addr.split(".")[0])
        except ValueError:
            first = 0
        if not 224 <= first <= 239 or addr.count(".") != 3:
            raise argparse.ArgumentTypeError(f"{addr!r} is not an IPv4 multicast group")
        out.append((addr, int(port)))
    if len(out) > 2:
        raise argparse.ArgumentTypeError("give feed A and at most feed B")
    return tuple(out)


def _busy_poll(text: str) -> int:
    if not text.isdigit() or int(text) > MAX_BUSY_POLL_US:
        raise argparse.ArgumentTypeError(f"{text!r}: give microseconds, 0 to {MAX_BUSY_POLL_US}")
    return int(text)


def _account(text: str) -> tuple[str, str]:
    user, sep, password = text.partition(":")
    if not sep or not 0 < len(user) <= 6 or len(password) > 10 or not user.isalnum():
        raise argparse.ArgumentTypeError(
            f"{text!r}: give USER:PASSWORD (user 1-6 letters or digits, password at most 10)"
        )
    return user, password


def _mdp3_options(opts: argparse.Namespace) -> Mdp3FeedOptions | None:
    """Return the MDP 3.0 feed the options ask for (None: none).

    Raises
    ------
    _FeedSetupError
        For ``--mdp3-*`` options that do not go together.
    """
    if opts.mdp3_feed is None:
        if opts.mdp3_snapshot is not None or opts.mdp3_schema is not None:
            raise _FeedSetupError("--mdp3-snapshot and --mdp3-schema need --mdp3-feed")
        return None
    if opts.mdp3_snapshot is None or opts.mdp3_schema is None:
        raise _FeedSetupError("--mdp3-feed needs --mdp3-snapshot GROUP:PORT and --mdp3-schema XML")
    if len(opts.mdp3_snapshot) != 1:
        raise _FeedSetupError("--mdp3-snapshot: give one GROUP:PORT")
    iface = opts.host or DEFAULT_HOST
    groups = [Group(a, p, iface) for a, p in opts.mdp3_feed]
    (snap,) = opts.mdp3_snapshot
    return Mdp3FeedOptions(
        groups[0],
        groups[1] if len(groups) > 1 else None,
        Group(snap[0], snap[1], iface),
        opts.mdp3_schema,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``qwconsole sim`` with ``argv``; return the exit status."""
    opts = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="sim: %(levelname)s %(name)s: %(message)s"
    )
    if opts.uvloop:
        install_uvloop()
    listings: Sequence[SimInstrument] = DEMO_LISTINGS
    seed = DEFAULT_SEED
    if opts.config is not None:
        from engine.config.model import ConfigError
        from engine.config.reader import load_config
        from engine.sim.listings import sim_listings

        try:
            engine_cfg = load_config(opts.config)
            listings = sim_listings(engine_cfg.instruments)
        except ConfigError as e:
            more = f" (and {len(e.problems) - 1} more)" if len(e.problems) > 1 else ""
            _error(f"{e.problems[0]}{more}")
            return 2
        except (ValueError, OSError) as e:
            _error(f"{opts.config}: {e}")
            return 2
        seed = engine_cfg.simulator.seed
    ouch = None
    if opts.ouch_port is not None:
        ouch = OuchPortOptions(
            opts.ouch_port,
            tuple(opts.ouch_account or [DEMO_OUCH_ACCOUNT]),
            opts.ouch_store,
            opts.ouch_busy_poll,
        )
    elif opts.ouch_account or opts.ouch_store or opts.ouch_busy_poll:
        _error("--ouch-account, --ouch-store and --ouch-busy-poll need --ouch-port")
        return 2
    itch = None
    if opts.itch_feed is not None:
        iface = opts.host or DEFAULT_HOST
        groups = [Group(a, p, iface) for a, p in opts.itch_feed]
        itch = ItchFeedOptions(
            groups[0], groups[1] if len(groups) > 1 else None, opts.itch_retransmit_port
        )
    try:
        mdp3 = _mdp3_options(opts)
    except _FeedSetupError as e:
        _error(str(e))
        return 2
    run = serve(
        opts.cfg,
        host=opts.host,
        port=opts.port,
        seed=opts.seed if opts.seed is not None else seed,
        seconds=opts.seconds,
        verbose=opts.verbose,
        cancel_on_disconnect=not opts.keep_orders,
        listings=listings,
        ouch=ouch,
        itch=itch,
        mdp3=mdp3,
    )
    try:
        return asyncio.run(run)
    except KeyboardInterrupt:  # a second Ctrl-C while stopping
        return 130


if __name__ == "__main__":
    sys.exit(main())
