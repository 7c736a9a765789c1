# SPDX-License-Identifier: MIT
"""The FIX benchmark tables of ``qwconsole bench fix``: batches, and sessions in parallel.

Two processes on 127.0.0.1: this one runs the initiators and measures; a child process
(``python -m engine.fix.benchtables --serve``) runs an acceptor with one session per FIX version
that answers every NewOrderSingle <D> with an ExecutionReport <8> (ExecType New) built from a
session template. Both sides are full :class:`~engine.fix.session.FixSession` objects: sequence
numbers, in-memory message store, header checks, and data-dictionary validation of every
message with the version's dictionary.

* :func:`batch_table` (a benchmark table of seed 003): for a batch of 1, 2, 5, 10, 100, 1000
  NewOrderSingles sent back to back, wait for all their reports, repeat; per row min / avg /
  max latency of an order (its send to its report) and orders per second.
* :func:`parallel_sessions` (seed 000's): FIX 4.1, 4.2, 4.4, 5.0 and 5.0 SP1 sessions in
  parallel, each sending one order at a time (ping-pong); every round trip's latency, then the
  average, p50 / p99 / p99.9 / p99.99 / max and a histogram. The first ``warmup`` round trips of
  each session are left out (said in the table).

Both tables take ``busy_poll_us``: the BusyPollMicroseconds of every session at both ends
(:mod:`engine.busypoll`; 0, the default, lets the loops sleep when idle).
:func:`transport_floor` measures the same loopback without FIX, sleeping and busy polling.

The QuickFIX side of the same tables runs in :mod:`engine.fix.qfpeer` when the ``quickfix``
package is importable. No Qt here: the histogram is drawn by ``app.bench``.
"""

import argparse
import asyncio
import contextlib
import gc
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from engine.busypoll import busy_poll_for
from engine.fix.application import Application, SessionID
from engine.fix.message import FixMessage
from engine.fix.session import AppTemplate, FixSession, lookup_session
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator, install_uvloop
from engine.gcpace import freeze_start_up

T = TypeVar("T")

#: Version label -> (BeginString, DefaultApplVerID).
VERSIONS: dict[str, tuple[str, str | None]] = {
    "4.1": ("FIX.4.1", None),
    "4.2": ("FIX.4.2", None),
    "4.4": ("FIX.4.4", None),
    "5.0": ("FIXT.1.1", "FIX.5.0"),
    "5.0SP1": ("FIXT.1.1", "FIX.5.0SP1"),
}

BATCHES = (1, 2, 5, 10, 100, 1000)
_TS = b"20261203-12:00:00.000"


def nos_fields(version: str) -> list[tuple[int, bytes | None]]:
    """Return the NewOrderSingle body of ``version`` with the ClOrdID <11> slot.

    Each version's required fields: HandlInst <21>, and TransactTime <60> from 4.2 on.
    """
    body: list[tuple[int, bytes | None]] = [
        (11, None), (21, b"1"), (38, b"100"), (40, b"2"), (44, b"101.25"), (54, b"1"),
        (55, b"AAPL"), (59, b"0"),
    ]  # fmt: skip
    if version != "4.1":
        body.append((60, _TS))
    return body


def er_fields(version: str) -> list[tuple[int, bytes | None]]:
    """ExecutionReport (new) body of ``version``; slots ClOrdID <11>, ExecID <17>, OrderID <37>.

    ExecTransType <20> up to 4.2; LastShares/LastQty <32> and LastPx <31> (0 on an
    acknowledgement) as 4.1 and 4.2 require.
    """
    body: list[tuple[int, bytes | None]] = [
        (6, b"0"), (11, None), (14, b"0"), (17, None), (31, b"0"), (32, b"0"), (37, None),
        (38, b"100"), (39, b"0"), (54, b"1"), (55, b"AAPL"), (150, b"0"), (151, b"100"),
    ]  # fmt: skip
    if version in ("4.1", "4.2"):
        body.insert(4, (20, b"0"))
    return sorted(body)


def _config(
    version: str, me: str, them: str, *, initiator: bool, busy_poll_us: int = 0
) -> SessionSettings:
    begin, appl = VERSIONS[version]
    return SessionSettings(
        begin_string=begin,
        sender_comp_id=me,
        target_comp_id=them,
        connection_type="initiator" if initiator else "acceptor",
        heart_bt_int=30,
        reset_on_logon=True,
        use_data_dictionary=True,
        default_appl_ver_id=appl,
        busy_poll_microseconds=busy_poll_us,
    )


def _ids(version: str) -> tuple[str, str]:
    tag = version.replace(".", "")
    return f"CLIENT{tag}", f"EXCH{tag}"


# ----------------------------------------------------------------------------- the venue side
class _Venue(Application):
    """Answers every NewOrderSingle with an ExecutionReport (new) from a session template."""

    def __init__(self) -> None:
        self._templates: dict[SessionID, AppTemplate] = {}
        # The last session's template: a run of reports for one session finds it by identity
        # (the dict's lookup hashes the SessionID, a Python call per order).
        self._last: tuple[SessionID | None, AppTemplate | None] = (None, None)

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        last_id, tmpl = self._last
        if session_id is not last_id or tmpl is None:
            tmpl = self._templates.get(session_id)
            if tmpl is None:
                tmpl = self._templates[session_id] = _er_template(session_id)
            self._last = (session_id, tmpl)
        clordid = message.get(11) or b""
        tmpl.session.send_template(tmpl, (clordid, b"E" + clordid, b"O" + clordid))


def _er_template(session_id: SessionID) -> AppTemplate:
    # The venue session's ExecutionReport template. (Its generator written in from_app would
    # make a variable there a cell, created on every call: ~250 instructions per order.)
    s = lookup_session(session_id)
    assert s is not None
    version = next(v for v in VERSIONS if _ids(v)[1] == s.config.sender_comp_id)
    return s.template(b"8", er_fields(version))


async def serve(busy_poll_us: int = 0) -> None:
    """Run the venue's acceptor; print its port; stop when stdin closes."""
    app = _Venue()
    sessions = [
        FixSession(
            _config(v, _ids(v)[1], _ids(v)[0], initiator=False, busy_poll_us=busy_poll_us),
            MemoryStore(),
            app,
        )
        for v in VERSIONS
    ]
    acceptor = SocketAcceptor(sessions, port=0, timer_interval=1.0)
    await acceptor.start()
    freeze_start_up()  # as an engine's process does once started (engine.core)
    sys.stdout.write(f"{acceptor.port}\n")
    sys.stdout.flush()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await acceptor.stop()


def run_on_engine_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the event loop the engine runs on (uvloop where installed).

    The process's event loop policy is put back afterwards (a test run goes on with its own).
    """
    policy = asyncio.get_event_loop_policy()
    install_uvloop()
    try:
        return asyncio.run(coro)
    finally:
        asyncio.set_event_loop_policy(policy)


class Venue:
    """A child process of this module (a context manager): ``port`` once started.

    ``mode`` is ``--serve`` (the FIX venue, its sessions with BusyPollMicroseconds
    ``busy_poll_us``), ``--echo``, ``--echo-spinning``, ``--echo-blocking`` or
    ``--echo-polling`` (the transport floor: bytes sent straight back, on the engine's event
    loop sleeping or busy polling, a blocking socket or a non-blocking socket polled in a
    loop).
    """

    def __init__(self, mode: str = "--serve", busy_poll_us: int = 0) -> None:
        self.mode = mode
        self.busy_poll_us = busy_poll_us

    def __enter__(self) -> "Venue":
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "engine.fix.benchtables",
                self.mode,
                "--busy-poll",
                str(self.busy_poll_us),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.__exit__()
            raise RuntimeError(f"the benchmark venue did not start (it printed {line!r})")
        self.port = int(line)
        return self

    def __exit__(self, *_exc: object) -> None:
        end_child(self.proc)


def end_child(proc: "subprocess.Popen[str]", timeout: float = 10.0) -> None:
    """End a child that stops when its stdin closes (killed after ``timeout`` seconds)."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


# ----------------------------------------------------------------------------- the client side
class _Client(Application):
    """Stamps the arrival of each report and hands it to ``on_report``.

    The tables drive their orders from there: a batch's last report sends the next batch, a
    ping-pong's report the next order, as a trading application answers a report in its
    callback.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.on_report: Callable[[int], None] | None = None

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        on_report = self.on_report
        if on_report is not None:
            on_report(time.perf_counter_ns())


@dataclass
class _Link:
    version: str
    session: FixSession
    initiator: SocketInitiator
    app: _Client
    nos: AppTemplate
    sent: int = 0

    def send(self) -> int:
        self.sent += 1
        t = time.perf_counter_ns()
        self.session.send_template(self.nos, (b"c%d" % self.sent,))
        return t


async def _connect(version: str, port: int, busy_poll_us: int) -> _Link:
    me, them = _ids(version)
    app = _Client(asyncio.get_running_loop())
    config = _config(version, me, them, initiator=True, busy_poll_us=busy_poll_us)
    session = FixSession(config, MemoryStore(), app)
    initiator = SocketInitiator(session, [("127.0.0.1", port)], reconnect_interval=0.2)
    await initiator.start()
    await initiator.wait_logged_on(10)
    return _Link(version, session, initiator, app, session.template(b"D", nos_fields(version)))


async def _close(link: _Link) -> None:
    await link.initiator.stop()
    link.session.close()


@dataclass
class BatchRow:
    """One row of the batch table."""

    batch: int
    orders: int
    min_us: float
    avg_us: float
    max_us: float
    orders_per_s: float


async def _batch_round_trips(
    link: _Link, n: int, rounds: int, lat: npt.NDArray[np.int64], skip: int = 0
) -> None:
    # ``rounds`` batches of ``n`` orders; the next batch goes out from the callback of the
    # report that completes the last one, as a trading application answers (a future and a
    # task wake-up per round were the harness's cost, not the engine's: ~9 µs of a batch-1
    # round trip). ``lat`` receives each order's send-to-report time, in order, after the
    # first ``skip`` rounds (warm-up, not recorded).
    app = link.app
    done: asyncio.Future[None] = app.loop.create_future()
    sent = [0] * n
    got = 0
    base = -skip * n  # where the current batch's first order goes in ``lat``
    end = (rounds - skip) * n

    def send_batch() -> None:
        for i in range(n):
            sent[i] = link.send()

    def on_report(arrived: int) -> None:
        nonlocal got, base
        if base >= 0:
            lat[base + got] = arrived - sent[got]
        got += 1
        if got < n:
            return
        got = 0
        base += n
        if base < end:
            send_batch()
        elif not done.done():
            done.set_result(None)

    app.on_report = on_report
    try:
        send_batch()
        await done
    finally:
        app.on_report = None


async def _batch_rows(
    port: int, orders_per_row: int, batches: tuple[int, ...], busy_poll_us: int
) -> list[BatchRow]:
    link = await _connect("4.4", port, busy_poll_us)
    rows = []
    # What start-up made is kept out of full collections, as an engine's process does once
    # started (engine.core): a full pass over it took 35 ms in a FIX process.
    freeze_start_up()
    try:
        # The connection's first round trips (not counted).
        await _batch_round_trips(link, 1, 200, np.empty(200, np.int64))
        for n in batches:
            rounds = max(3, orders_per_row // n)
            lat = np.empty(rounds * n, np.int64)
            t_start = time.perf_counter_ns()
            async with asyncio.timeout(60 + rounds * n / 1000):
                await _batch_round_trips(link, n, rounds, lat)
            elapsed = (time.perf_counter_ns() - t_start) / 1e9
            rows.append(
                BatchRow(
                    n,
                    rounds * n,
                    float(lat.min()) / 1e3,
                    float(lat.mean()) / 1e3,
                    float(lat.max()) / 1e3,
                    rounds * n / elapsed,
                )
            )
    finally:
        gc.unfreeze()
        await _close(link)
    return rows


def batch_table(
    orders_per_row: int = 20_000, batches: tuple[int, ...] = BATCHES, busy_poll_us: int = 0
) -> list[BatchRow]:
    """Measure the batch table (FIX 4.4) against a venue in a child process."""
    with Venue(busy_poll_us=busy_poll_us) as venue:
        return run_on_engine_loop(_batch_rows(venue.port, orders_per_row, batches, busy_poll_us))


@dataclass
class ParallelRun:
    """The round trips of sessions run in parallel."""

    per_version: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)  # ns
    elapsed_s: float = 0.0
    warmup: int = 0

    @property
    def all_ns(self) -> npt.NDArray[np.int64]:
        """Return every round trip's latency, ns."""
        return np.concatenate(list(self.per_version.values()))

    def summary(self) -> dict[str, float]:
        """Return count, rate, average and percentiles (µs) of all round trips."""
        lat = self.all_ns
        p = np.percentile(lat, [50, 99, 99.9, 99.99]) / 1e3
        return {
            "round_trips": float(lat.size),
            "per_s": lat.size / self.elapsed_s,
            "avg_us": float(lat.mean()) / 1e3,
            "p50_us": float(p[0]),
            "p99_us": float(p[1]),
            "p999_us": float(p[2]),
            "p9999_us": float(p[3]),
            "max_us": float(lat.max()) / 1e3,
        }


async def _parallel(port: int, total: int, warmup: int, busy_poll_us: int) -> ParallelRun:
    links = [await _connect(v, port, busy_poll_us) for v in VERSIONS]
    each = total // len(links)
    run = ParallelRun(warmup=warmup)
    outs = {link.version: np.empty(each, np.int64) for link in links}
    freeze_start_up()  # as in _batch_rows
    try:
        t0 = time.perf_counter()
        # One order at a time each (batches of 1), the first ``warmup`` not recorded.
        await asyncio.gather(
            *(_batch_round_trips(lk, 1, warmup + each, outs[lk.version], warmup) for lk in links)
        )
        run.elapsed_s = time.perf_counter() - t0
    finally:
        gc.unfreeze()
        for link in links:
            await _close(link)
    run.per_version = outs
    return run


def parallel_sessions(
    total: int = 1_000_000, warmup: int = 1_000, busy_poll_us: int = 0
) -> ParallelRun:
    """Run ``total`` round trips over the five versions' sessions in parallel."""
    with Venue(busy_poll_us=busy_poll_us) as venue:
        return run_on_engine_loop(_parallel(venue.port, total, warmup, busy_poll_us))


# ----------------------------------------------------------------------------- the floor
#: Bytes per message of the transport floor: about a NewOrderSingle.
FLOOR_BYTES = 200


class _Spinning:
    """A FIX connection's busy polling, for an echo.

    As a session with BusyPollMicroseconds does: the loop kept polling a while after each read,
    the socket read directly meanwhile (:meth:`~engine.busypoll.BusyPoll.attach`).
    """

    def __init__(self, transport: asyncio.Transport, on_data: Callable[[bytes], None]) -> None:
        self.poll = busy_poll_for(asyncio.get_running_loop())
        self.reader = self.poll.attach(transport, on_data)
        self.poll.touch(_SPIN_NS)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


#: The busy-poll window of the floor's spinning rows: the benchmark's default.
_SPIN_NS = 1_000_000


class _Echo(asyncio.Protocol):
    def __init__(self, spin: bool = False) -> None:
        self.spin = spin
        self.spinning: _Spinning | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is no subclass)
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.spin:
            self.spinning = _Spinning(self.transport, self.data_received)

    def data_received(self, data: bytes) -> None:
        if self.spinning is not None:
            self.spinning.poll.touch(_SPIN_NS)
        self.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.spinning is not None:
            self.spinning.close()


async def serve_echo(spin: bool = False) -> None:
    """Send every byte straight back, on the event loop; print the port; stop with stdin.

    With ``spin``, the loop busy-polls as a FIX session's does (see :class:`_Spinning`).
    """
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Echo(spin), "127.0.0.1", 0)
    sys.stdout.write(f"{server.sockets[0].getsockname()[1]}\n")
    sys.stdout.flush()
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


def serve_echo_blocking(polling: bool = False) -> None:
    """Echo as :func:`serve_echo` does, with a blocking socket and no event loop.

    With ``polling``, a non-blocking socket read in a loop that never sleeps.
    """
    with socket.create_server(("127.0.0.1", 0)) as srv:
        sys.stdout.write(f"{srv.getsockname()[1]}\n")
        sys.stdout.flush()
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setblocking(not polling)
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    return
                while data:  # a few hundred bytes: one send, unless the peer stopped reading
                    try:
                        data = data[conn.send(data) :]
                    except BlockingIOError:
                        continue


class _Pinger(asyncio.Protocol):
    def __init__(self, n: int, done: "asyncio.Future[None]", spin: bool = False) -> None:
        self.n, self.done = n, done
        self.lat = np.empty(n, np.int64)
        self.i = 0
        self.got = 0
        self.msg = b"x" * FLOOR_BYTES
        self.spin = spin
        self.spinning: _Spinning | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is no subclass)
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.spin:
            self.spinning = _Spinning(self.transport, self.data_received)
        self.t = time.perf_counter_ns()
        self.transport.write(self.msg)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.spinning is not None:
            self.spinning.close()

    def data_received(self, data: bytes) -> None:
        if self.spinning is not None:
            self.spinning.poll.touch(_SPIN_NS)
        self.got += len(data)
        if self.got < FLOOR_BYTES:
            return
        self.got = 0
        self.lat[self.i] = time.perf_counter_ns() - self.t
        self.i += 1
        if self.i == self.n:
            if self.spinning is not None:
                self.spinning.close()
                self.spinning = None
            self.done.set_result(None)
            return
        self.t = time.perf_counter_ns()
        self.transport.write(self.msg)


async def _echo_loop(port: int, n: int, spin: bool = False) -> npt.NDArray[np.int64]:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    transport, pinger = await loop.create_connection(
        lambda: _Pinger(n, done, spin), "127.0.0.1", port
    )
    await done
    transport.close()
    return pinger.lat


def _echo_blocking(port: int, n: int, polling: bool) -> npt.NDArray[np.int64]:
    lat = np.empty(n, np.int64)
    msg = b"x" * FLOOR_BYTES
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(not polling)
        for i in range(n):
            t = time.perf_counter_ns()
            sock.send(msg)  # 200 bytes into an empty socket buffer: sent whole
            got = 0
            while got < FLOOR_BYTES:
                with contextlib.suppress(BlockingIOError):
                    got += len(sock.recv(65536))
            lat[i] = time.perf_counter_ns() - t
    return lat


@dataclass
class FloorRow:
    """Round trips of bare bytes between two processes on 127.0.0.1 (no FIX)."""

    transport: str
    round_trips: int
    per_s: float
    p50_us: float
    p99_us: float
    polling: bool = False


def transport_floor(n: int = 20_000) -> list[FloorRow]:
    """Measure the ping-pong floor: ``FLOOR_BYTES`` echoed between two processes.

    On the engine's loop sleeping when idle, on blocking sockets, on the engine's loop busy
    polling as a FIX session does, and on sockets polled without sleeping (no event loop).
    """
    rows = []
    for label, mode in (
        ("event loop (the engine's), sleeping when idle", "--echo"),
        ("blocking sockets", "--echo-blocking"),
        ("event loop (the engine's), busy polling", "--echo-spinning"),
        ("busy-polled sockets", "--echo-polling"),
    ):
        with Venue(mode) as venue:
            t0 = time.perf_counter()
            if mode in ("--echo", "--echo-spinning"):
                lat = run_on_engine_loop(_echo_loop(venue.port, n, mode == "--echo-spinning"))
            else:
                lat = _echo_blocking(venue.port, n, polling=mode == "--echo-polling")
            elapsed = time.perf_counter() - t0
        p = np.percentile(lat, [50, 99]) / 1e3
        polling = mode in ("--echo-polling", "--echo-spinning")
        rows.append(FloorRow(label, n, n / elapsed, float(p[0]), float(p[1]), polling))
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.fix.benchtables --serve``: the venue child process (or an echo)."""
    parser = argparse.ArgumentParser(prog="benchtables")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--serve", action="store_true")
    mode.add_argument("--echo", action="store_true")
    mode.add_argument("--echo-spinning", action="store_true")
    mode.add_argument("--echo-blocking", action="store_true")
    mode.add_argument("--echo-polling", action="store_true")
    parser.add_argument("--busy-poll", type=int, default=0, metavar="US")
    opts = parser.parse_args(argv)
    try:
        if opts.serve:
            run_on_engine_loop(serve(opts.busy_poll))
        elif opts.echo or opts.echo_spinning:
            run_on_engine_loop(serve_echo(spin=opts.echo_spinning))
        elif opts.echo_blocking or opts.echo_polling:
            serve_echo_blocking(polling=opts.echo_polling)
    except BrokenPipeError:
        # The benchmark that started this child went away before reading its port: nothing
        # to serve, and nothing to say (the interpreter's own flush at exit would fail too).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
