"""`DeskbrokerComputer` driven by the OpenAI Agents SDK's own runner with its scripted model, and
through cua's `AsyncComputerHandler` protocol (loaded from the published `cua-agent` package),
against a real broker and the probe window on Xvfb."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest
from agents import Agent, ComputerTool, RunConfig, Runner, set_tracing_disabled
from agents.computer import AsyncComputer
from agents.testing import ScriptedModel, assistant_message
from openai.types.responses import ResponseComputerToolCall

from deskbroker import ApiError, Client, DeskbrokerComputer, DeskbrokerError
from deskbroker.computer import REFUSAL_CODES, ActionRefused

from .conftest import Broker

set_tracing_disabled(True)


def cua_protocol() -> type:
    """cua's `AsyncComputerHandler`, from the installed `cua-agent` distribution's own file
    (its package `__init__` imports a model stack this test does not need)."""
    import importlib.metadata as metadata

    try:
        files = metadata.files("cua-agent") or []
    except metadata.PackageNotFoundError:
        pytest.fail("cua-agent is not installed (pip install --no-deps cua-agent)")
    (base,) = [f for f in files if str(f).endswith("computers/base.py")]
    spec = importlib.util.spec_from_file_location("cua_computers_base", Path(base.locate()))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AsyncComputerHandler


def presses(broker: Broker, since: int) -> list[tuple[str, int, int]]:
    return [(e["type"], e["root_x"], e["root_y"]) for e in broker.probe_events()[since:]
            if e["type"] in ("button_press", "button_release")]


def typed(broker: Broker, since: int) -> str:
    return "".join(e.get("char") or "" for e in broker.probe_events()[since:]
                   if e["type"] == "key_press")


async def test_agents_sdk_runner_drives_the_desktop(broker: Broker) -> None:
    async with Client(socket=str(broker.socket)) as client:
        computer = await DeskbrokerComputer.create(client, task_id="sdk", attempt_id="a1")
        assert isinstance(computer, AsyncComputer)
        assert computer.dimensions == (1280, 800) and computer.environment == "ubuntu"
        call = ResponseComputerToolCall.model_validate({
            "id": "cu_1", "call_id": "call_1", "type": "computer_call", "status": "completed",
            "pending_safety_checks": [],
            "actions": [
                {"type": "click", "x": 400, "y": 300, "button": "left"},
                {"type": "type", "text": "hi"},
                {"type": "double_click", "x": 500, "y": 320},
                {"type": "click", "x": 410, "y": 310, "button": "left", "keys": ["shift"]},
                {"type": "drag", "path": [{"x": 100, "y": 100}, {"x": 200, "y": 150}]},
                {"type": "move", "x": 640, "y": 400},
                {"type": "scroll", "x": 640, "y": 400, "scroll_x": 0, "scroll_y": 200},
                {"type": "keypress", "keys": ["ctrl", "a"]},
                {"type": "wait"},
            ],
        })
        model = ScriptedModel([[call], [assistant_message("finished")]])
        agent = Agent(name="desk", instructions="use the computer", model=model,
                      tools=[ComputerTool(computer=computer)])
        since = len(broker.probe_events())
        result = await Runner.run(agent, "click the probe and type hi")
        assert result.final_output == "finished"
        model.assert_complete()
        # The model's second call saw the screenshot the computer returned.
        assert "data:image/png;base64," in str(model.last_call)

        got = presses(broker, since)
        assert got[:2] == [("button_press", 400, 300), ("button_release", 400, 300)]
        assert got[2:6] == [("button_press", 500, 320), ("button_release", 500, 320)] * 2
        assert got[6][1:] == (410, 310)
        assert ("button_press", 100, 100) in got and ("button_release", 200, 150) in got
        assert typed(broker, since).startswith("hi")
        shift_click = [e for e in broker.probe_events()[since:]
                       if e["type"] == "button_press" and (e["root_x"], e["root_y"]) == (410, 310)]
        assert shift_click[0]["state"] & 1, "shift held during the click"
        wheel = [e for e in broker.probe_events()[since:]
                 if e["type"] == "button_press" and e["button"] in (4, 5)]
        assert [e["button"] for e in wheel] == [5, 5]
        status = await client.status(computer.session_id)
        # 9 actions: the scroll needs no move of its own, the pointer is already there.
        assert status["next_action_index"] == 9
        await computer.dispose()
        with pytest.raises(DeskbrokerError):
            client.session(computer.session_id)


async def test_cua_handler_protocol_and_press_release(broker: Broker) -> None:
    protocol = cua_protocol()
    async with Client(socket=str(broker.socket)) as client:
        async with await DeskbrokerComputer.create(client, task_id="cua", attempt_id="a1",
                                                   on_refusal="raise") as pc:
            assert isinstance(pc, protocol)
            for name, member in inspect.getmembers(protocol, inspect.isfunction):
                if name.startswith("_"):
                    continue
                ours = inspect.signature(getattr(pc, name))
                theirs = inspect.signature(member)
                args = [p.default if p.default is not inspect.Parameter.empty else 1
                        for p in list(theirs.parameters.values())[1:]]
                ours.bind(*args)  # every argument cua may pass is accepted
                assert inspect.iscoroutinefunction(getattr(pc, name)), name
            assert await pc.get_environment() == "linux"
            assert await pc.get_dimensions() == (1280, 800)
            assert (await pc.screenshot()).startswith("iVBOR")

            since = len(broker.probe_events())
            await pc.left_mouse_down(300, 300)
            await pc.move(350, 320)
            await pc.left_mouse_up(400, 340)
            await pc.drag([{"x": 600, "y": 600}, {"x": 650, "y": 610}])
            await pc.keypress("ctrl+a")
            await pc.type("ok")
            await pc.wait(50)
            got = presses(broker, since)
            assert got[0] == ("button_press", 300, 300)
            assert got[1] == ("button_release", 400, 340)
            assert got[2:] == [("button_press", 600, 600), ("button_release", 650, 610)]
            assert typed(broker, since).endswith("ok")
            # Bad input is refused before anything is sent (ActionRefused, counted).
            before = (await client.status(pc.session_id))["next_action_index"]
            with pytest.raises(DeskbrokerError):
                await pc.left_mouse_up(1, 1)
            with pytest.raises(DeskbrokerError):
                await pc.click(1, 1, "back")
            with pytest.raises(DeskbrokerError):
                await pc.drag([(1.5, 2)])
            with pytest.raises(DeskbrokerError):
                await pc.click(1, 1, keys=["meta"])
            # Coordinates bound to an image the broker does not know are refused before input.
            with pytest.raises(ApiError) as refused:
                await client.act(pc.session_id, {"type": "click", "x": 5, "y": 5, "intent": "t"},
                                 screenshot_id="shot_not_issued")
            assert refused.value.code == "screenshot_unknown"
            assert (await client.status(pc.session_id))["next_action_index"] == before
            assert [r.call for r in pc.refusals] == ["left_mouse_up", "click", "drag", "click"]
        # Released on exit.
        with pytest.raises(DeskbrokerError):
            client.session(pc.session_id)


def computer_call(n: int, *actions: dict) -> ResponseComputerToolCall:
    return ResponseComputerToolCall.model_validate({
        "id": f"cu_{n}", "call_id": f"call_{n}", "type": "computer_call", "status": "completed",
        "pending_safety_checks": [], "actions": list(actions)})


def texts(items: object) -> list[str]:
    """The user messages' texts in a model input."""
    return [item["content"] for item in items  # type: ignore[attr-defined]
            if isinstance(item, dict) and item.get("role") == "user"
            and isinstance(item.get("content"), str)]


async def test_agents_sdk_refused_actions_go_back_to_the_model(broker: Broker) -> None:
    """A point off screen, a system key and an unsupported button: the SDK's run goes on, the
    model reads each refusal after that call's screenshot, the rest of a refused call is not
    run, and the refusals are counted."""
    async with Client(socket=str(broker.socket)) as client:
        async with await DeskbrokerComputer.create(client, task_id="ref", attempt_id="a1") as pc:
            model = ScriptedModel([
                [computer_call(1, {"type": "click", "x": 5000, "y": 10, "button": "left"},
                               {"type": "type", "text": "x"},
                               {"type": "keypress", "keys": ["return"]})],
                [computer_call(2, {"type": "keypress", "keys": ["super", "l"]})],
                [computer_call(3, {"type": "click", "x": 10, "y": 10, "button": "back"})],
                [computer_call(4, {"type": "type", "text": "ok"})],
                [assistant_message("finished")],
            ])
            agent = Agent(name="desk", instructions="use the computer", model=model,
                          tools=[ComputerTool(computer=pc)])
            since = len(broker.probe_events())
            inputs: list[list] = []

            def seen(data):  # what each model call is given, after the computer's filter
                filtered = pc.model_input_filter(data)
                inputs.append(list(filtered.input))
                return filtered

            result = await Runner.run(agent, "type ok", max_turns=8,
                                      run_config=RunConfig(call_model_input_filter=seen))
            assert result.final_output == "finished"
            model.assert_complete()

            assert [(r.call, r.code) for r in pc.refusals] == [
                ("click", "invalid_action"), ("keypress", "invalid_action"),
                ("click", "refused_locally")]
            assert "outside" in pc.refusals[0].message
            assert "system key" in pc.refusals[1].message
            assert "'back'" in pc.refusals[2].message
            assert pc.skipped == 2, "the type and keypress after the refused click"
            # Only the last call reached the desktop.
            assert typed(broker, since) == "ok"
            assert presses(broker, since) == []
            assert (await client.status(pc.session_id))["next_action_index"] == 1

            # The second model call reads the first refusal right after call_1's screenshot;
            # every later call still has it, and the next ones in order.
            second = inputs[1]
            at = [i for i, item in enumerate(second)
                  if isinstance(item, dict) and item.get("type") == "computer_call_output"]
            assert len(at) == 1
            note = second[at[0] + 1]["content"]
            assert "click(5000, 10, 'left'" in note and "invalid_action" in note
            assert "2 later action(s)" in note
            last = texts(inputs[-1])
            assert len(last) == 1 + 3, last  # the task, then one note per refused call
            assert "system key" in last[2] and "refused_locally" in last[3]


async def test_refusal_raises_for_cua(broker: Broker) -> None:
    """``on_refusal="raise"``: an ActionRefused that is cua's own ToolError once cua is loaded
    (cua's agent loop returns exactly that class to the model as the call's error output)."""
    import sys

    import importlib.metadata as metadata

    (types_py,) = [f for f in metadata.files("cua-agent") or []
                   if str(f) == "cua_agent/types.py"]
    spec = importlib.util.spec_from_file_location("cua_agent.types", Path(types_py.locate()))
    assert spec and spec.loader
    cua_types = importlib.util.module_from_spec(spec)
    # cua's types.py imports three typing names from litellm, which the test venv does not
    # install (cua-agent comes with --no-deps): a stand-in module for that import only.
    import types as pytypes

    litellm = pytypes.ModuleType("litellm")
    litellm.ResponseInputParam = litellm.ResponsesAPIResponse = litellm.ToolParam = dict  # type: ignore[attr-defined]
    saved = sys.modules.get("litellm")
    sys.modules["litellm"] = litellm
    try:
        spec.loader.exec_module(cua_types)
    finally:
        if saved is None:
            del sys.modules["litellm"]
        else:
            sys.modules["litellm"] = saved
    async with Client(socket=str(broker.socket)) as client:
        async with await DeskbrokerComputer.create(client, task_id="cuaref", attempt_id="a1",
                                                   on_refusal="raise") as pc:
            with pytest.raises(ActionRefused) as plain:
                await pc.click(-1, 5)
            assert plain.value.refusal.code == "invalid_action"
            assert not isinstance(plain.value, cua_types.ToolError)
            sys.modules["cua_agent.types"] = cua_types
            try:
                with pytest.raises(cua_types.ToolError) as as_cua:
                    await pc.keypress("super")
                assert isinstance(as_cua.value, ActionRefused)
                # A failure that is not a refusal still ends the run as before: the session
                # released behind the computer's back (its token kept, so the broker answers).
                remembered = client.session(pc.session_id)
                await client.release(pc.session_id)
                client.adopt(pc.session_id, remembered.lease_token, "cuaref", "a1",
                             remembered.next_action_index)
                with pytest.raises(ApiError) as gone:
                    await pc.type("late")
                assert not isinstance(gone.value, ActionRefused)
                assert gone.value.code not in REFUSAL_CODES
            finally:
                del sys.modules["cua_agent.types"]
            assert [r.code for r in pc.refusals] == ["invalid_action", "invalid_action"]


def test_scale_maps_every_model_pixel_back_exactly() -> None:
    from deskbroker._scale import Scale

    for screen, model in [((1920, 1080), (1280, 720)), ((1280, 800), (1024, 640)),
                          ((1920, 1080), (1024, 768)), ((1280, 800), (1280, 800)),
                          ((7, 5), (3, 2))]:
        scale = Scale(screen, model)
        for x in range(model[0]):
            sx, _ = scale.to_screen(x, 0)
            assert 0 <= sx < screen[0]
            # the screen pixel's centre lies in the model pixel's footprint, and maps back
            assert 2 * x * screen[0] <= (2 * sx + 1) * model[0] < 2 * (x + 1) * screen[0]
            assert scale.to_model(sx, 0)[0] == x
        for y in range(model[1]):
            assert scale.to_model(*scale.to_screen(0, y))[1] == y
    for bad in [(0, 10), (1281, 800), (640.0, 400)]:
        with pytest.raises(DeskbrokerError):
            Scale((1280, 800), bad)  # type: ignore[arg-type]


async def test_scaled_screenshots_and_coordinates_on_the_desktop(broker: Broker) -> None:
    """A model that sees 1024x640 of the 1280x800 screen: its screenshot is that size, and its
    click and drag land where its pixels are on the real screen."""
    import base64
    import io

    from PIL import Image

    async with Client(socket=str(broker.socket)) as client:
        async with await DeskbrokerComputer.create(client, task_id="scale", attempt_id="a1",
                                                   scale_to=(1024, 640)) as pc:
            assert pc.dimensions == (1024, 640) and await pc.get_dimensions() == (1024, 640)
            png = base64.b64decode(await pc.screenshot())
            with Image.open(io.BytesIO(png)) as image:
                assert image.size == (1024, 640)
            since = len(broker.probe_events())
            await pc.click(100, 200)
            await pc.drag([(10, 30), (1000, 600)])  # below the probe's title bar (y 0..18)
            assert pc.refusals == []
            got = presses(broker, since)
            assert got[:2] == [("button_press", 125, 250), ("button_release", 125, 250)]
            assert got[2:] == [("button_press", 13, 38), ("button_release", 1250, 750)]
            # Outside the model's image: refused by the broker, nothing sent, counted.
            await pc.click(1024, 10)
            assert [r.code for r in pc.refusals] == ["point_outside_image"]
    with pytest.raises(DeskbrokerError, match="within the screen"):
        async with Client(socket=str(broker.socket)) as client:
            await DeskbrokerComputer.create(client, task_id="scale", attempt_id="a2",
                                            scale_to=(2560, 1600))
