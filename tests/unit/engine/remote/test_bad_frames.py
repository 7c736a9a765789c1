# SPDX-License-Identifier: MIT
"""Bad frames at the remote server: one answer with the reason, never a crash (issue 16).

Each case sends one bad frame to a real :class:`RemoteServer` on 127.0.0.1, at the start of
the handshake or after a valid login, and asserts the exact reason of the ``error`` (or
``nak``) the server answers with, and the close code where the frame ends the link. The rows
of ``docs/bad-input.md`` for remote frames are these cases.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from engine.remote.protocol import (
    PROTOCOL_VERSION,
    Auth,
    AuthOk,
    Error,
    Hello,
    Nak,
    decode_server,
    encode,
)
from tests.unit.engine.remote.conftest import ServedEngine

ROOT = Path(__file__).resolve().parents[4]
DOC = ROOT / "docs" / "bad-input.md"
DEEP = 100_000  # levels of nesting: msgspec recurses once per level


def _key(text: str) -> bytes:
    return msgspec.msgpack.encode(text)


def _deep_cmd() -> bytes:
    # {"type": "cmd", "rid": 1, "kind": "Ping", "body": [[[[...nil...]]]]}
    return (
        b"\x84"
        + _key("type")
        + _key("cmd")
        + _key("rid")
        + b"\x01"
        + _key("kind")
        + _key("Ping")
        + _key("body")
        + b"\x91" * DEEP
        + b"\xc0"
    )


def _deep_hello() -> bytes:
    return b"\x82" + _key("type") + _key("hello") + _key("extra") + b"\x91" * DEEP + b"\xc0"


def _cmd(kind: str, body: object) -> bytes:
    return msgspec.msgpack.encode({"type": "cmd", "rid": 7, "kind": kind, "body": body})


@dataclass(frozen=True)
class Frame:
    """One bad frame: when it is sent, what the server answers, how the link ends."""

    id: str
    bad: str  # what is wrong, as the table shows it
    frame: bytes | str
    authed: bool  # sent after a valid login (else as the first frame)
    reason: str  # the error's (or nak's) reason
    close: int | None = None  # the close code when the frame ends the link


FRAMES: list[Frame] = [
    Frame("deep-cmd", "a command body nested 100,000 levels deep (was RecursionError)",
          _deep_cmd(), True,
          "malformed frame: nested too deeply (arrays or maps inside each other past the "
          "recursion limit)"),
    Frame("deep-hello", "a hello nested 100,000 levels deep", _deep_hello(), False,
          "malformed frame: nested too deeply (arrays or maps inside each other past the "
          "recursion limit)", 4002),
    Frame("text", "a text frame", "hello", True, "text frames are not part of the protocol"),
    Frame("not-msgpack", "bytes that are not MessagePack", b"\xc1\xc1\xc1", True,
          "malformed frame: MessagePack data is malformed: invalid opcode '\\xc1' (byte 0)"),
    Frame("bad-tag", "a map with an unknown type tag", msgspec.msgpack.encode({"type": "bogus"}),
          True, "malformed frame: Invalid value 'bogus' - at `$.type`"),
    Frame("unknown-kind", "a command of an unknown kind", _cmd("Nope", {}), True,
          "unknown command kind 'Nope'"),
    Frame("wrong-type", "an order whose quantity is text",
          _cmd("SubmitOrder", {"symbol": "ESZ6", "side": 1, "qty_lots": "ten"}), True,
          "SubmitOrder: Expected `int`, got `str` - at `$.qty_lots`"),
    Frame("hello-late", "a second hello after the login",
          encode(Hello(version=PROTOCOL_VERSION)), True, "hello is only valid at the start"),
    Frame("auth-first", "auth before hello", encode(Auth(token="x")), False,
          "expected hello first, got auth", 4002),
    Frame("version", "hello of protocol version 9", encode(Hello(version=9)), False,
          "protocol version 9 is not supported; this engine speaks version 1", 4000),
]  # fmt: skip


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedEngine, str]]:
    s = ServedEngine(tmp_path_factory.mktemp("frames"))
    s.start()
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    yield s, s.token("root", "admin")
    logging.getLogger().removeHandler(errors)
    s.stop()
    assert [r.getMessage() for r in errors.records] == []  # no handler crashed


async def _login(ws: ClientConnection, token: str) -> None:
    await ws.send(encode(Hello(version=PROTOCOL_VERSION)))
    await ws.recv()
    await ws.send(encode(Auth(token=token)))
    ok = await ws.recv()
    assert isinstance(ok, bytes)
    assert isinstance(decode_server(ok), AuthOk)


async def _answer(port: int, token: str, case: Frame) -> tuple[str, int | None]:
    async with connect(
        f"ws://127.0.0.1:{port}/", compression=None, proxy=None, max_size=None
    ) as ws:
        if case.authed:
            await _login(ws, token)
        await ws.send(case.frame)
        reason = ""
        try:
            while not reason:
                reply = await asyncio.wait_for(ws.recv(), 10)
                assert isinstance(reply, bytes)
                msg = decode_server(reply)
                if isinstance(msg, Error | Nak):
                    reason = msg.reason
            if case.close is not None:
                await asyncio.wait_for(ws.recv(), 10)
        except ConnectionClosed as e:
            return reason, e.rcvd.code if e.rcvd else None
        return reason, None


@pytest.mark.parametrize("case", FRAMES, ids=[f.id for f in FRAMES])
def test_bad_frame_gets_one_reason(served: tuple[ServedEngine, str], case: Frame) -> None:
    engine, token = served
    assert engine.server is not None
    reason, close = asyncio.run(_answer(engine.server.port, token, case))
    assert reason == case.reason
    assert close == case.close


def test_the_docs_table_shows_every_frame() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for case in FRAMES:
        shown = f"`` {case.reason} ``" if "`" in case.reason else f"`{case.reason}`"
        assert shown in doc, case.id
