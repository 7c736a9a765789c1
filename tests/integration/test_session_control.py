# SPDX-License-Identifier: MIT
"""Operating the demo's FIX session through engine commands: logout, logon, sequence numbers."""

import time

import pytest

from engine.commands import CommandAck, CommandError, ControlSession
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import SessionState
from engine.events import EventRecord, SessionStatusChanged

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SID = "FIX.4.4:QWCONSOLE->QWSIM"


def wait_state(client: EmbeddedEngineClient, state: SessionState, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        batch: list[EventRecord] = client.drain()
        if any(
            isinstance(r.event, SessionStatusChanged)
            and r.event.session_id == SID
            and r.event.state is state
            for r in batch
        ):
            return
        time.sleep(0.02)
    raise AssertionError(f"{SID} never reached {state.name}")


def test_logout_logon_and_set_sequence_numbers() -> None:
    client = EmbeddedEngineClient(configure=build_demo)
    client.start()
    try:
        wait_state(client, SessionState.LOGGED_ON)
        unknown = client.send(ControlSession(session_id="FIX.4.2:A->B", action="logout")).result(2)
        assert isinstance(unknown, CommandError)
        assert unknown.reason == f"no FIX session 'FIX.4.2:A->B'; sessions: {SID}"
        bad = client.send(
            ControlSession(session_id=SID, action="set_seq", next_sender_seq_num=0)
        ).result(2)
        assert isinstance(bad, CommandError)
        assert bad.reason == "next_sender_seq_num must be >= 1, got 0"
        out = client.send(ControlSession(session_id=SID, action="logout")).result(2)
        assert isinstance(out, CommandAck)
        wait_state(client, SessionState.DISCONNECTED)
        again = client.send(ControlSession(session_id=SID, action="logout")).result(2)
        assert isinstance(again, CommandError)
        assert again.reason.endswith("is not logged on")
        seq = client.send(
            ControlSession(session_id=SID, action="set_seq", next_target_seq_num=1)
        ).result(2)
        assert isinstance(seq, CommandAck)
        assert seq.detail.endswith("next in 1")
        assert isinstance(
            client.send(ControlSession(session_id=SID, action="logon")).result(2), CommandAck
        )
        wait_state(client, SessionState.LOGGED_ON)
    finally:
        client.close()
