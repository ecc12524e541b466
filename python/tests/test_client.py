"""The client against a real broker and a real desktop (probe window on Xvfb)."""

from __future__ import annotations

import json

import httpx
import pytest

from deskbroker import ApiError, Client, DeskbrokerError, artifact_bytes, png_bytes

from .conftest import Broker


class DropFirstAnswer(httpx.AsyncBaseTransport):
    """Forwards every request to the broker but loses the answer to the first action request,
    like a connection cut after the broker received it."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.dropped = 0
        self.sent_bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path.endswith("/actions"):
            self.sent_bodies.append(request.content)
            if self.dropped == 0:
                await response.aread()
                self.dropped += 1
                raise httpx.ReadError("answer lost", request=request)
        return response


async def test_session_lifecycle_and_lost_answer_retried_once(broker: Broker) -> None:
    transport = DropFirstAnswer(httpx.AsyncHTTPTransport(uds=str(broker.socket)))
    async with Client(socket=str(broker.socket), transport=transport) as client:
        lease = await client.lease("t1", "a1")
        session_id = lease["session_id"]
        assert lease["lease_token"] and "lease_token" not in repr(client.session(session_id))
        assert lease["lease_token"] not in repr(client)

        reset = await client.reset(session_id)
        assert reset["state"] == "ready"
        assert png_bytes(reset["screenshot"]).startswith(b"\x89PNG")
        assert (reset["screenshot"]["width"], reset["screenshot"]["height"]) == (1280, 800)

        before = len([e for e in broker.probe_events() if e["type"] == "button_press"])
        click = {"type": "click", "x": 300, "y": 200, "intent": "click the probe"}
        first = await client.act(session_id, click)
        # The first answer was lost; the retry carried the same id and index and was replayed.
        assert transport.dropped == 1 and len(transport.sent_bodies) == 2
        assert transport.sent_bodies[0] == transport.sent_bodies[1]
        assert b'"request_id": "t1-a1-a0"' in transport.sent_bodies[0]
        assert first["idempotent_replay"] is True and first["action_index"] == 0
        presses = [e for e in broker.probe_events() if e["type"] == "button_press"][before:]
        assert [(e["root_x"], e["root_y"]) for e in presses] == [(300, 200)]

        second = await client.act(session_id, {"type": "type", "text": "ab", "intent": "type"})
        assert second["action_index"] == 1 and second["idempotent_replay"] is False
        assert client.session(session_id).next_action_index == 2

        # An explicit retry of an old request id is answered from the journal.
        again = await client.act(session_id, click, request_id="t1-a1-a0", expected_action_index=0)
        assert again["idempotent_replay"] is True
        # The same id with other content is refused, typed, and changes nothing.
        with pytest.raises(ApiError) as refused:
            await client.act(session_id, {**click, "x": 301}, request_id="t1-a1-a0",
                             expected_action_index=0)
        assert refused.value.code == "action_sequence_conflict"
        # An invalid action is refused by the broker before input.
        with pytest.raises(ApiError) as invalid:
            await client.act(session_id, {"type": "click", "x": 99999, "y": 1, "intent": "off"})
        assert invalid.value.code == "invalid_action"

        status = await client.status(session_id)
        assert status["next_action_index"] == 2 and status["state"] == "ready"
        shot = await client.screenshot(session_id)
        assert shot["sequence"] >= second["screenshot"]["sequence"]

        # The probe cannot save: the broker refuses an unchanged attempt file, typed.
        with pytest.raises(ApiError) as unsaved:
            await client.checkpoint(session_id)
        assert unsaved.value.code == "checkpoint_failed"
        # The app "saves" (the test writes its attempt file), then the checkpoint holds.
        attempt = broker.root / "state" / "sessions" / session_id / "workspace" / "attempt" / "attempt.txt"
        attempt.write_text("saved by the python test\n")
        checkpoint = await client.checkpoint(session_id)
        artifact = await client.artifact(session_id)
        assert artifact["sha256"] == checkpoint["sha256"]
        assert artifact_bytes(artifact) == b"saved by the python test\n"
        events = [json.loads(line) for line in (await client.events(session_id)).splitlines()]
        # One click's events for action 0 (the lost answer injected nothing twice), keys for 1.
        presses = [e for e in events if e["type"] == "click" and e["pressed"] and e["actionIndex"] == 0]
        assert len(presses) == 1, events
        assert {e["key"] for e in events if e["actionIndex"] == 1 and e["type"] == "key"} >= {"a", "b"}
        assert (await client.frame_events(session_id)).strip()
        assert (await client.openapi())["paths"]

        released = await client.release(session_id)
        assert released["state"] == "released"
        with pytest.raises(DeskbrokerError):
            client.session(session_id)


async def test_no_token_no_access_and_unreachable_broker(broker: Broker, tmp_path) -> None:
    async with Client(socket=str(broker.socket)) as client:
        lease = await client.lease("t2", "a1")
        session_id = lease["session_id"]
        async with Client(socket=str(broker.socket)) as stranger:
            with pytest.raises(ApiError) as denied:
                await stranger.status(session_id)
            assert denied.value.status == 401
        await client.release(session_id)
    async with Client(socket=str(tmp_path / "none.sock"), retries=1) as nobody:
        with pytest.raises(DeskbrokerError):
            await nobody.lease("t3", "a1")
    with pytest.raises(DeskbrokerError):
        Client(url="http://plain:80")


async def test_control_programs_zoom_windows_and_capabilities(broker: Broker) -> None:
    """The control-session surface: claim, a program bound to a zoom, Stop, restart; the
    windows and capability documents; the clipboard refused by the default policy."""
    async with Client(socket=str(broker.socket)) as client:
        session_id = (await client.lease("t2", "a1"))["session_id"]
        await client.reset(session_id)
        capabilities = await client.capabilities()
        features = {f["feature"]: f for f in capabilities["features"]}
        assert features["zoom"]["supported"] is True
        assert features["background_input"]["supported"] is False

        claimed = await client.claim_control(session_id, "agent")
        token = {"owner": "agent", "generation": claimed["generation"]}
        full = await client.screenshot(session_id)
        zoom = await client.zoom(session_id, full["screenshot_id"], 100, 100, 50, 40)
        assert zoom["zoom"] == {"source_screenshot_id": full["screenshot_id"], "scale": 8}
        assert (zoom["width"], zoom["height"]) == (400, 320)
        before = len([e for e in broker.probe_events() if e["type"] == "button_press"])
        click = {"type": "click", "x": 200, "y": 160, "intent": "through the zoom"}
        answer = await client.program(session_id, [click], screenshot_id=zoom["screenshot_id"],
                                      control=token)
        assert answer["receipt"]["submitted"] == 1
        presses = [e for e in broker.probe_events() if e["type"] == "button_press"][before:]
        assert [(e["root_x"], e["root_y"]) for e in presses] == [(125, 120)]

        windows = (await client.windows(session_id))["windows"]
        assert [w["role"] for w in windows] == ["main"]

        stopped = await client.stop(session_id)
        assert stopped["control"]["generation"] == token["generation"] + 1
        with pytest.raises(ApiError) as refused:
            await client.program(session_id, [click], control=token)
        assert refused.value.code == "control_stopped"
        restarted = await client.restart_control(session_id, "agent")
        assert restarted["generation"] == token["generation"] + 2
        assert (await client.control(session_id))["generation"] == restarted["generation"]

        with pytest.raises(ApiError) as disabled:
            await client.clipboard_read(session_id)
        assert (disabled.value.status, disabled.value.code) == (403, "clipboard_disabled")
        with pytest.raises(ApiError) as unavailable:
            await client.accessibility(session_id, max_nodes=10)
        assert unavailable.value.code == "accessibility_unavailable"
        await client.release(session_id)
