# SPDX-License-Identifier: MIT
"""Command line for the FIX engine (``qwconsole fix ...``; also ``python -m engine.fix.cli``).

``acceptor --cfg FILE`` runs every acceptor session of a QuickFIX-style settings file with the
acceptance-test application (echo, de-duplication, refusal of other types); the FIX
session-level acceptance suite runs against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import sys
from pathlib import Path
from typing import Any

from engine.cli_parser import OneLineErrorParser
from engine.clock import LiveClock
from engine.fix.acceptance_app import AcceptanceApplication
from engine.fix.application import Application
from engine.fix.dictionary import DictionaryError
from engine.fix.log import FileLog, NullLog, SessionLog
from engine.fix.schedule import SessionSchedule
from engine.fix.session import FixSession
from engine.fix.settings import SettingsError, load_settings
from engine.fix.store import FileStore, MemoryStore, MessageStore
from engine.fix.transport import SocketAcceptor, install_uvloop


def _resolve(path: str | None, base: Path) -> str | None:
    if path is None:
        return None
    p = Path(path)
    if p.is_absolute() or p.exists():
        return str(p)
    return str(base / p)


def build_session(
    settings: Any, application: Application, base: Path, store_dir: Path | None = None
) -> FixSession:
    """Create a :class:`FixSession` (store, log, dictionaries) from one settings section.

    Parameters
    ----------
    settings : SessionSettings
        One ``[SESSION]`` of a settings file (``engine.fix.settings``).
    application : Application
        Callbacks.
    base : Path
        Directory relative dictionary paths are also looked up in (the cfg file's).
    store_dir : Path | None
        The store folder when the section sets no ``FileStorePath`` (an engine's state
        directory: every session of an engine keeps its sequence numbers on disk); ``None``
        keeps such a session's store in memory.
    """
    config = dataclasses.replace(
        settings,
        data_dictionary=_resolve(settings.data_dictionary, base),
        transport_data_dictionary=_resolve(settings.transport_data_dictionary, base),
        app_data_dictionary=_resolve(settings.app_data_dictionary, base),
        app_data_dictionaries={
            k: _resolve(v, base) or v for k, v in settings.app_data_dictionaries.items()
        },
    )
    clock = LiveClock()
    sid = config.session_id
    store: MessageStore
    if getattr(settings, "file_store_path", None):
        store = FileStore(settings.file_store_path, sid.file_prefix, clock.now_ns())
    elif store_dir is not None:
        store = FileStore(store_dir, sid.file_prefix, clock.now_ns())
    else:
        store = MemoryStore(clock.now_ns())
    log: SessionLog
    if getattr(settings, "file_log_path", None):
        log = FileLog(settings.file_log_path, sid.file_prefix)
    else:
        log = NullLog(str(sid))
    schedule: SessionSchedule | None = None
    if getattr(settings, "non_stop_session", False) or getattr(settings, "start_time", None):
        schedule = SessionSchedule.from_settings(settings)
    return FixSession(config, store, application, log, clock, schedule)


PROG = "qwconsole fix"


def _error(text: str) -> int:
    """Print a one-line error (the first line of ``text``, counting the rest); return 2."""
    lines = text.splitlines() or [""]
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    print(f"{PROG}: error: {lines[0]}{more}", file=sys.stderr)
    return 2


async def _run_acceptor(cfg: Path, base: Path, host: str, port: int | None) -> int:
    try:
        settings = load_settings(cfg)
    except SettingsError as e:
        return _error(str(e))
    app = AcceptanceApplication()
    acceptors = [s for s in settings.sessions if not s.is_initiator]
    if not acceptors:
        return _error(f"{cfg}: no acceptor sessions")
    try:
        sessions = [build_session(s, app, base) for s in acceptors]
    except DictionaryError as e:  # names the dictionary file, line and reason
        return _error(str(e))
    listen_port = port if port is not None else (acceptors[0].socket_accept_port or 0)
    acceptor = SocketAcceptor(sessions, host=host, port=listen_port)
    try:
        await acceptor.start()
    except OSError as e:
        return _error(f"cannot listen on {host}:{listen_port}: {e.strerror or e}")
    print(f"listening on {host}:{acceptor.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await acceptor.stop()
    for s in sessions:
        s.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the FIX command line; return the exit status."""
    parser = OneLineErrorParser(prog=PROG, description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    acc = sub.add_parser("acceptor", help="run the acceptance-test acceptor")
    acc.add_argument("--cfg", required=True, type=Path, help="QuickFIX-style settings file")
    acc.add_argument("--host", default="127.0.0.1", help="listen address (default loopback)")
    acc.add_argument("--port", type=int, default=None, help="override SocketAcceptPort")
    acc.add_argument("--uvloop", action="store_true", help="use uvloop when installed")
    args = parser.parse_args(argv)
    if args.command == "acceptor":
        if args.uvloop:
            install_uvloop()
        return asyncio.run(
            _run_acceptor(args.cfg, args.cfg.absolute().parent, args.host, args.port)
        )
    return 2  # pragma: no cover  (argparse enforces a command)


if __name__ == "__main__":
    sys.exit(main())
