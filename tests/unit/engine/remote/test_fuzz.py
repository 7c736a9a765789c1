# SPDX-License-Identifier: MIT
"""Fuzz the server's message handling: a malformed frame gets an error or a close, never a crash."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from engine.commands import CommandAck, Ping
from engine.remote.client import RemoteEngineClient
from engine.remote.protocol import (
    PROTOCOL_VERSION,
    Ack,
    Auth,
    AuthOk,
    Error,
    Hello,
    Nak,
    ProtocolError,
    decode_client,
    decode_server,
    encode,
)
from tests.unit.engine.remote.conftest import ServedEngine

_TAGS = ["hello", "auth", "cmd", "snap?", "hb", "bogus", ""]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70).filter(lambda i: -(2**63) <= i < 2**64),
    st.floats(),
    st.text(max_size=30),
    st.binary(max_size=30),
)
_values = st.recursive(
    _scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=12,
)
_kinds = st.sampled_from(
    [
        "Ping",
        "SubmitOrder",
        "CancelOrder",
        "SetKillSwitch",
        "SetRiskLimits",
        "ControlSession",
        "Nope",
        "",
    ]
)


@st.composite
def _frames(draw: st.DrawFn) -> bytes | str:
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return draw(st.binary(max_size=200))
    if choice == 1:
        return draw(st.text(max_size=50))
    if choice == 2:
        body = draw(st.dictionaries(st.text(max_size=12), _values, max_size=5))
        body["t"] = draw(st.sampled_from(_TAGS))
        return msgspec.msgpack.encode(body)
    body_fields = draw(
        st.dictionaries(
            st.sampled_from(
                [
                    "symbol",
                    "side",
                    "qty_lots",
                    "px_ticks",
                    "order_id",
                    "level",
                    "reason",
                    "session_id",
                    "action",
                    "payload",
                    "strategy_id",
                    "values",
                ]
            ),
            _values,
            max_size=5,
        )
    )
    return msgspec.msgpack.encode(
        {"t": "cmd", "rid": draw(st.integers(0, 2**40)), "kind": draw(_kinds), "body": body_fields}
    )


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedEngine, str]]:
    served = ServedEngine(tmp_path_factory.mktemp("fuzz"))
    served.start()
    token = served.token("root", "admin")
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    yield served, token
    logging.getLogger().removeHandler(errors)
    # After all the garbage, a well-behaved console still works.
    assert served.server is not None
    client = RemoteEngineClient("127.0.0.1", served.server.port, token, tls=False)
    client.start()
    assert isinstance(client.send(Ping(payload="alive")).result(5), CommandAck)
    client.close()
    served.stop()
    assert [r.getMessage() for r in errors.records] == []


async def _exchange(port: int, token: str, frames: list[bytes | str], *, authed: bool) -> None:
    async with connect(
        f"ws://127.0.0.1:{port}/", compression=None, proxy=None, max_size=None
    ) as ws:
        if authed:
            await ws.send(encode(Hello(version=PROTOCOL_VERSION)))
            await ws.recv()
            await ws.send(encode(Auth(token=token)))
            ok = await ws.recv()
            assert isinstance(ok, bytes)
            assert isinstance(decode_server(ok), AuthOk)
            await ws.recv()  # the snapshot
        try:
            for frame in frames:
                await ws.send(frame)
            # Every frame is answered (error, nak, ack) or the link is closed; nothing hangs.
            answers = 0
            while answers < len(frames):
                reply = await asyncio.wait_for(ws.recv(), 5)
                assert isinstance(reply, bytes)
                msg = decode_server(reply)
                if isinstance(msg, Error | Nak | Ack) or not authed:
                    answers += 1
        except ConnectionClosed:
            return


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=st.lists(_frames(), min_size=1, max_size=6), authed=st.booleans())
def test_malformed_frames_get_an_error_or_a_close(
    fuzz_target: tuple[ServedEngine, str], frames: list[bytes | str], authed: bool
) -> None:
    served, token = fuzz_target
    assert served.server is not None
    asyncio.run(_exchange(served.server.port, token, frames, authed=authed))


@given(frame=st.binary(max_size=300))
def test_decoder_raises_only_protocol_error(frame: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_client(frame)


def test_wrong_protocol_version_is_refused(served: ServedEngine, tmp_path: Path) -> None:
    assert served.server is not None

    async def go() -> Error:
        async with connect(f"ws://127.0.0.1:{served.server.port}/", proxy=None) as ws:  # type: ignore[union-attr]
            await ws.send(encode(Hello(version=PROTOCOL_VERSION + 1)))
            frame = await ws.recv()
            assert isinstance(frame, bytes)
            msg = decode_server(frame)
            assert isinstance(msg, Error)
            return msg

    err = asyncio.run(go())
    assert err.code == "version"
    assert f"this engine speaks version {PROTOCOL_VERSION}" in err.reason
