# SPDX-License-Identifier: MIT
"""QuickFIX's side of ``qwconsole bench fix``: the batch table with QuickFIX at both ends.

Needs the optional ``quickfix`` package (QuickFIX C++ through its Python binding; ``pip install
quickfix`` compiles it). Two processes, as for our own engine: ``--role acceptor`` answers every
NewOrderSingle with an ExecutionReport (new); ``--role initiator`` sends the batches and prints
one ``RESULT {json}`` line (orders/s per batch size). FIX 4.4, in-memory store, data dictionary
on (the project's FIX44.xml), no message log, TCP_NODELAY, on 127.0.0.1.

Pitfalls of the binding, worked around here: it keeps the GIL inside the engine, so ``stop()``
can deadlock while a session is logged on (both roles leave with ``os._exit``), and the
threaded socket classes deadlock under bursts (the select-based ones are used).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import quickfix as fix

from engine.fix.benchtables import end_child
from engine.fix.dictionary import default_dictionary_path


def _cfg(path: Path, role: str, port: int) -> None:
    lines = [
        "[DEFAULT]", f"ConnectionType={role}", "StartTime=00:00:00", "EndTime=00:00:00",
        "HeartBtInt=30", "ResetOnLogon=Y", "SocketNodelay=Y", "UseDataDictionary=Y",
        f"DataDictionary={default_dictionary_path('FIX.4.4')}",
        "[SESSION]", "BeginString=FIX.4.4",
    ]  # fmt: skip
    if role == "acceptor":
        lines += ["SenderCompID=EXCH", "TargetCompID=CLIENT", f"SocketAcceptPort={port}"]
    else:
        lines += [
            "SenderCompID=CLIENT",
            "TargetCompID=EXCH",
            "SocketConnectHost=127.0.0.1",
            f"SocketConnectPort={port}",
            "ReconnectInterval=1",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


class _Base(fix.Application):  # type: ignore[misc]
    def onCreate(self, session_id: object) -> None:
        self.session_id = session_id

    def onLogon(self, session_id: object) -> None:
        pass

    def onLogout(self, session_id: object) -> None:
        pass

    def toAdmin(self, message: object, session_id: object) -> None:
        pass

    def fromAdmin(self, message: object, session_id: object) -> None:
        pass

    def toApp(self, message: object, session_id: object) -> None:
        pass


class _Exchange(_Base):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def fromApp(self, message: object, session_id: object) -> None:
        self.n += 1
        report = fix.Message()
        report.getHeader().setField(fix.MsgType(fix.MsgType_ExecutionReport))
        for field in (
            fix.OrderID(f"O{self.n}"),
            fix.ExecID(f"E{self.n}"),
            fix.ExecType(fix.ExecType_NEW),
            fix.OrdStatus(fix.OrdStatus_NEW),
            fix.Side(message.getField(54)),  # type: ignore[attr-defined]
            fix.Symbol(message.getField(55)),  # type: ignore[attr-defined]
            fix.ClOrdID(message.getField(11)),  # type: ignore[attr-defined]
            fix.LeavesQty(100),
            fix.CumQty(0),
            fix.AvgPx(0),
            fix.OrderQty(100),
        ):
            report.setField(field)
        fix.Session.sendToTarget(report, session_id)


class _Client(_Base):
    """The initiator's application: batches of orders, as ours sends them.

    ``run_row`` sends ``rounds`` batches of ``n`` orders: the next from the callback of the
    report that completes a batch, ``done`` set after the last.
    """

    def __init__(self) -> None:
        super().__init__()
        self.logged_on = threading.Event()
        self.done = threading.Event()
        self.sent = 0
        self.got = 0
        self.n = 1
        self.rounds_left = 0

    def onLogon(self, session_id: object) -> None:
        self.logged_on.set()

    def run_row(self, n: int, rounds: int) -> None:
        """Send ``rounds`` batches of ``n``; return when every report is in."""
        self.done.clear()
        self.n, self.got, self.rounds_left = n, 0, rounds
        self.send_batch()
        if not self.done.wait(60):
            raise TimeoutError(f"QuickFIX: {self.rounds_left} batches of {n} not answered")

    def send_batch(self) -> None:
        self.rounds_left -= 1
        for _ in range(self.n):
            self.sent += 1
            self.send(self.sent)

    def fromApp(self, message: object, session_id: object) -> None:
        self.got += 1
        if self.got < self.n:
            return
        self.got = 0
        if self.rounds_left > 0:
            self.send_batch()
        else:
            self.done.set()

    def send(self, i: int) -> None:
        msg = fix.Message()
        msg.getHeader().setField(fix.MsgType(fix.MsgType_NewOrderSingle))
        for field in (
            fix.ClOrdID(f"c{i}"),
            fix.HandlInst("1"),
            fix.OrderQty(100),
            fix.OrdType(fix.OrdType_LIMIT),
            fix.Price(101.25),
            fix.Side(fix.Side_BUY),
            fix.Symbol("AAPL"),
            fix.TimeInForce(fix.TimeInForce_DAY),
            fix.TransactTime(),
        ):
            msg.setField(field)
        fix.Session.sendToTarget(msg, self.session_id)


def _acceptor(port: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="qf-acceptor-"))
    _cfg(work / "a.cfg", "acceptor", port)
    settings = fix.SessionSettings(str(work / "a.cfg"))
    acceptor = fix.SocketAcceptor(_Exchange(), fix.MemoryStoreFactory(), settings)
    acceptor.start()
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    sys.stdin.read()
    os._exit(0)  # stop() may deadlock in the binding (see the module)


def _initiator(port: int, orders_per_row: int, batches: list[int]) -> None:
    work = Path(tempfile.mkdtemp(prefix="qf-initiator-"))
    _cfg(work / "i.cfg", "initiator", port)
    settings = fix.SessionSettings(str(work / "i.cfg"))
    app = _Client()
    initiator = fix.SocketInitiator(app, fix.MemoryStoreFactory(), settings)
    initiator.start()
    if not app.logged_on.wait(20):
        sys.stdout.write("RESULT {}\n")
        os._exit(1)
    app.run_row(1, 200)  # the connection's first round trips (not counted), as ours
    rates: dict[int, float] = {}
    for n in batches:
        rounds = max(3, orders_per_row // n)
        t0 = time.perf_counter()
        app.run_row(n, rounds)
        rates[n] = rounds * n / (time.perf_counter() - t0)
    sys.stdout.write("RESULT " + json.dumps(rates) + "\n")
    sys.stdout.flush()
    os._exit(0)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def batch_table(orders_per_row: int, batches: tuple[int, ...]) -> dict[int, float]:
    """Return QuickFIX's orders/s per batch size (two child processes)."""
    port = _free_port()
    me = [sys.executable, "-m", "engine.fix.qfpeer", "--port", str(port)]
    acc = subprocess.Popen(
        [*me, "--role", "acceptor"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert acc.stdout is not None
        if acc.stdout.readline().strip() != "READY":
            raise RuntimeError("the QuickFIX acceptor did not start")
        done = subprocess.run(
            [
                *me,
                "--role",
                "initiator",
                "--orders-per-row",
                str(orders_per_row),
                "--batches",
                *map(str, batches),
            ],
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), "")
        if not line or line == "RESULT {}":
            raise RuntimeError(f"the QuickFIX initiator failed: {done.stderr.strip()[-300:]}")
        return {int(k): float(v) for k, v in json.loads(line[7:]).items()}
    finally:
        end_child(acc)


def main(argv: list[str] | None = None) -> int:
    """Run one role (a child process of :func:`batch_table`)."""
    parser = argparse.ArgumentParser(prog="qfpeer")
    parser.add_argument("--role", choices=("acceptor", "initiator"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--orders-per-row", type=int, default=20_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 5, 10, 100, 1000])
    opts = parser.parse_args(argv)
    if opts.role == "acceptor":
        _acceptor(opts.port)
    else:
        _initiator(opts.port, opts.orders_per_row, opts.batches)
    return 0


if __name__ == "__main__":
    sys.exit(main())
