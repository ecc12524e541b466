"""`SyncClient`: the async client's methods, blocking, against a real broker and the probe."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from deskbroker import ApiError, DeskbrokerError, SyncClient, TransportError, png_bytes
from deskbroker.sync import sync_methods

from .conftest import Broker


def test_sync_client_session_round_trip(broker: Broker) -> None:
    with SyncClient(socket=str(broker.socket)) as client:
        assert set(sync_methods()) <= set(dir(client))
        session = client.lease("sync", "a1")["session_id"]
        reset = client.reset(session)
        assert png_bytes(reset["screenshot"]).startswith(b"\x89PNG")
        since = len(broker.probe_events())
        first = client.act(session, {"type": "type", "text": "hi", "intent": "type hi"})
        second = client.act(session, {"type": "click", "x": 300, "y": 200, "intent": "click"})
        assert (first["action_index"], second["action_index"]) == (0, 1)
        assert client.session(session).next_action_index == 2  # the client's own memory
        chars = "".join(e.get("char") or "" for e in broker.probe_events()[since:]
                        if e["type"] == "key_press")
        assert chars == "hi"
        with pytest.raises(ApiError) as refused:
            client.act(session, {"type": "click", "x": 99999, "y": 1, "intent": "off"})
        assert refused.value.code == "invalid_action"
        assert client.status(session)["next_action_index"] == 2
        assert client.release(session)["state"] == "released"
    with pytest.raises(DeskbrokerError, match="closed"):
        client.capabilities()
    client.close()  # idempotent


async def test_sync_client_inside_a_running_loop(broker: Broker, tmp_path: Path) -> None:
    """From a coroutine (a notebook cell): its own loop thread, no 'loop already running'."""
    assert asyncio.get_running_loop() is not None
    with SyncClient(socket=str(broker.socket)) as client:
        assert "POST /v1/sessions/{id}/actions" in client.capabilities()["routes"]
    with SyncClient(socket=str(tmp_path / "none.sock"), retries=0) as client:
        with pytest.raises(TransportError, match=f"no broker socket at {tmp_path}/none.sock"):
            client.capabilities()
