# SPDX-License-Identifier: MIT
"""An engine with a remote server on a thread of its own, reached over real loopback sockets."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest

from engine.clock import LiveClock
from engine.core import Engine
from engine.enums import AlertLevel
from engine.events import Alert
from engine.remote.server import AuditLog, LoginThrottle, RemoteServer
from engine.remote.tls import make_self_signed, server_context
from engine.remote.tokens import TokenStore

T = TypeVar("T")


class ServedEngine:
    """Run an :class:`Engine` and its :class:`RemoteServer` on a background asyncio loop."""

    def __init__(
        self,
        tmp: Path,
        *,
        tls: bool = False,
        engine_id: str = "test-engine",
        configure: Callable[[Engine], object] | None = None,
        **server_kw: Any,
    ) -> None:
        self.tmp = tmp
        self.engine_id = engine_id
        self.configure = configure
        self.tokens = TokenStore(tmp / "tokens.toml")
        self.clock = LiveClock()
        self.audit_path = tmp / "audit.log"
        self.cert = self.key = None
        if tls:
            self.cert, self.key = tmp / "engine.crt", tmp / "engine.key"
            if not self.cert.exists():
                self.fingerprint = make_self_signed(self.cert, self.key, "localhost")
        self._server_kw = server_kw
        self.loop = asyncio.new_event_loop()
        self.engine: Engine | None = None
        self.server: RemoteServer | None = None
        self._thread: threading.Thread | None = None
        self._done: asyncio.Future[None] | None = None

    def token(self, name: str, role: str, expires_ns: int = 0) -> str:
        return self.tokens.add(name, role, self.clock.now_ns(), expires_ns)

    def start(self, port: int = 0) -> int:
        ready = threading.Event()

        def main() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self._run(port, ready))

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        assert ready.wait(10), "engine did not start"
        assert self.server is not None
        return self.server.port

    async def _run(self, port: int, ready: threading.Event) -> None:
        engine = Engine(self.clock, engine_id=self.engine_id, heartbeat_interval_ms=200)
        if self.configure is not None:
            self.configure(engine)
        ctx = server_context(self.cert, self.key) if self.cert and self.key else None
        kw = {"throttle": LoginThrottle(self.clock, base_s=0.05)} | self._server_kw
        server = RemoteServer(
            engine,
            self.tokens,
            port=port,
            ssl_context=ctx,
            audit=AuditLog(self.audit_path, self.clock),
            **kw,
        )
        await server.open()
        self.engine, self.server = engine, server
        runner = asyncio.get_running_loop().create_task(engine.run())
        while engine.state.name != "RUNNING":  # noqa: ASYNC110  # the engine has no such event
            await asyncio.sleep(0.01)
        ready.set()
        try:
            await runner
        finally:
            await server.close()

    def call(self, fn: Callable[[], T], timeout: float = 5.0) -> T:
        """Run ``fn`` on the engine loop and return its result."""
        fut: Future[T] = Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as e:
                fut.set_exception(e)

        self.loop.call_soon_threadsafe(run)
        return fut.result(timeout)

    def publish_alerts(self, n: int, prefix: str = "a") -> int:
        """Publish ``n`` alerts on the engine loop; return the engine's last sequence number."""

        def go() -> int:
            assert self.engine is not None
            for i in range(n):
                # One cause each: the engine folds repeats of a cause (engine.alerts).
                text = f"{prefix}{i}"
                self.engine.bus.publish(
                    Alert(
                        ts_event=self.clock.now_ns(),
                        level=AlertLevel.INFO,
                        source="test",
                        text=text,
                        cause=text,
                    )
                )
            return self.engine.snapshot().seq

        return self.call(go)

    def stop(self) -> None:
        if self._thread is None:
            return
        if self.engine is not None:
            self.loop.call_soon_threadsafe(self.engine.request_stop)
        self._thread.join(10)
        self._thread = None
        self.loop.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedEngine]:
    s = ServedEngine(tmp_path)
    s.start()
    yield s
    s.stop()
