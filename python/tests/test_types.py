"""The typed answers (`deskbroker.types`) match what a real broker sends: every required key
present, no key the type does not name, nested typed parts checked the same way."""

from __future__ import annotations

from typing import Any, get_type_hints

from deskbroker import Client, types

from .conftest import Broker


def check(answer: Any, typed: type) -> None:
    required = typed.__required_keys__  # type: ignore[attr-defined]
    optional = typed.__optional_keys__  # type: ignore[attr-defined]
    assert isinstance(answer, dict)
    assert required <= answer.keys(), (typed.__name__, required - answer.keys())
    assert answer.keys() <= required | optional, (typed.__name__,
                                                  answer.keys() - required - optional)
    hints = get_type_hints(typed)
    for name, nested in [("screenshot", types.Screenshot), ("receipt", types.Receipt),
                         ("settle", types.SettleReceipt)]:
        if name in hints and isinstance(answer.get(name), dict) and (
                hints[name] is nested or nested in getattr(hints[name], "__args__", ())):
            check(answer[name], nested)


async def test_answers_match_their_types(broker: Broker) -> None:
    async with Client(socket=str(broker.socket)) as client:
        lease = await client.lease("typed", "a1")
        check(lease, types.LeaseAnswer)
        session_id = lease["session_id"]
        reset = await client.reset(session_id)
        check(reset, types.ResetAnswer)
        check(await client.screenshot(session_id), types.Screenshot)
        act = await client.act(session_id, {"type": "click", "x": 300, "y": 200, "intent": "c"})
        check(act, types.ActAnswer)
        assert act["screenshot"] is not None and "screenshot_id" in act["screenshot"]
        check(await client.status(session_id), types.StatusAnswer)
        attempt = (broker.root / "state" / "sessions" / session_id / "workspace" / "attempt"
                   / "attempt.txt")
        attempt.write_text("typed\n")
        check(await client.checkpoint(session_id), types.CheckpointAnswer)
        check(await client.artifact(session_id), types.ArtifactAnswer)
        check(await client.release(session_id), types.ReleaseAnswer)


def test_a_withheld_frame_is_a_typed_error_never_an_empty_image() -> None:
    from deskbroker import FrameWithheld, png_bytes, screenshot_base64

    allowed = {"png_base64": "iVBORw0KGgo=", "gate": {"verdict": "allow", "reasons": []}}
    assert screenshot_base64(allowed) == "iVBORw0KGgo="
    assert png_bytes({"png_base64": "iVBORw0KGgo="}).startswith(b"\x89PNG")
    for verdict in ["withhold", "review", "insufficient_data"]:
        gate = {"verdict": verdict, "reasons": [{"pattern": "x"}], "record_id": "g-1"}
        for read in (screenshot_base64, png_bytes):
            try:
                read({"png_base64": "", "gate": gate})
            except FrameWithheld as error:
                assert error.gate == gate
            else:
                raise AssertionError(f"{verdict} was read as an image")
