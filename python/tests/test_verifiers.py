"""The Verifiers environment: a real rollout through verifiers' own loop with a scripted model,
LibreCAD on a real desktop, the drawing scored by the broker-side scorer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import verifiers as vf
from verifiers.legacy.clients.client import Client as VfClient
from verifiers.types import Response, ResponseMessage, ToolCall

from deskbroker import DeskbrokerError
from deskbroker.verifiers_env import check_batch, load_environment, resolve_deskbroker_bin

from .conftest import Broker, binary, key, rect, text


class ScriptedClient(VfClient):
    """A verifiers model client that answers from a script and records what the model saw."""

    def __init__(self, turns: list[Any]) -> None:
        super().__init__(object())
        self.turns = list(turns)
        self.prompts: list[Any] = []

    def setup_client(self, config: Any) -> Any:
        return object()

    async def to_native_tool(self, tool: Any) -> Any:
        return tool

    async def to_native_prompt(self, messages: Any) -> tuple[Any, dict]:
        return messages, {}

    async def get_native_response(self, prompt: Any, model: str, sampling_args: Any,
                                  tools: Any = None, **kwargs: Any) -> Any:
        self.prompts.append(prompt)
        turn = self.turns.pop(0)
        while callable(turn):  # something the test does between two model turns
            await turn()
            turn = self.turns.pop(0)
        n = len(self.prompts)
        if isinstance(turn, str):
            message = ResponseMessage(content=turn, finish_reason="stop", is_truncated=False)
        else:
            message = ResponseMessage(
                content=None, finish_reason="tool_calls", is_truncated=False,
                tool_calls=[ToolCall(id=f"call_{n}", name="computer_action",
                                     arguments=json.dumps({"actions": turn}))])
        return Response(id=f"r{n}", created=0, model=model, message=message)

    async def raise_from_native_response(self, response: Any) -> None:
        return None

    async def from_native_response(self, response: Any) -> Any:
        return response

    async def close(self) -> None:
        return None


def test_check_batch_refusals() -> None:
    ok = [{"type": "click", "x": 1, "y": 2, "intent": "i"}, {"type": "done", "intent": "d"}]
    assert check_batch(ok, 10, 10, 2) is None
    assert "budget" in check_batch(ok, 10, 10, 1)
    assert "last" in check_batch(list(reversed(ok)), 10, 10, 5)
    assert "outside" in check_batch([{"type": "move", "x": 10, "y": 0, "intent": "i"}], 10, 10, 5)
    assert "integers" in check_batch([{"type": "move", "x": 1.5, "y": 0, "intent": "i"}], 10, 10, 5)
    assert "unknown" in check_batch([{"type": "hover", "intent": "i"}], 10, 10, 5)
    assert "intent" in check_batch([{"type": "wait", "milliseconds": 5}], 10, 10, 5)
    assert check_batch([], 10, 10, 5) is not None


async def test_rollout_draws_task_004_and_is_scored(cad_broker: Broker) -> None:
    deskbroker = str(binary("deskbroker"))
    kept = cad_broker.root / "artifacts"
    env = load_environment(str(cad_broker.socket), tasks=["task-004"], deskbroker_bin=deskbroker,
                           artifacts_dir=str(kept))
    assert isinstance(env, vf.StatefulToolEnv)
    (tool,) = env.tool_defs
    assert tool.name == "computer_action" and list(tool.parameters["properties"]) == ["actions"]
    row = env.get_eval_dataset()[0]
    model = ScriptedClient([
        [key("ctrl", "s"), {"type": "done", "intent": "too early"}, key("ctrl", "s")],  # refused
        rect("100,105", "185,145") + rect("110,115", "175,135"),
        [key("ctrl", "s")],
        [{"type": "wait", "milliseconds": 500, "intent": "let the save finish"}],
        [{"type": "done", "intent": "finished"}],
    ])
    output = await env.run_rollout(row, model, "scripted", {}, state_columns=["deskbroker"])
    desk = output["deskbroker"]
    assert not model.turns, "every scripted turn was played"

    # The model saw the reference and the handoff screenshot as images, then one screenshot per
    # tool result; the refused batch ran nothing.
    first = model.prompts[0]
    images = [p for m in first if isinstance(m.content, list) for p in m.content
              if (p.get("type") if isinstance(p, dict) else p.type) == "image_url"]
    assert len(images) == 2
    tool_results = [m for m in model.prompts[-1] if m.role == "tool"]
    assert len(tool_results) == 4
    rejected = json.loads(tool_results[0].content[0]["text"])
    assert rejected["delivery"] == "rejected" and rejected["items_executed"] == 0
    accepted = json.loads(tool_results[1].content[0]["text"])
    assert accepted["delivery"] == "input_injected" and accepted["items_executed"] == 18
    assert tool_results[1].content[1]["image_url"]["url"].startswith("data:image/png;base64,")

    # The lease token never reached the model.
    everything = json.dumps([[m.model_dump() for m in p] for p in model.prompts], default=str)
    assert "lease_token" not in everything
    assert "Bearer" not in everything

    reward = output["reward"]
    assert reward > 0.9, output
    assert desk["status"] == "done" and desk["actions_used"] == 21 and desk["turn"] == 5
    assert desk["n_rejected_batches"] == 1
    assert [item["request_id"] for item in desk["items"]][:2] == [
        f"{desk['rollout_id']}-t2-i0", f"{desk['rollout_id']}-t2-i1"]
    # The reward is the broker-side scorer's verdict on the retrieved drawing.
    (saved,) = kept.glob("*.dxf")
    version = desk["corpus_version"].rsplit("-", 1)[1]
    score = subprocess.run([deskbroker, "bench", "score", "--log", "warn", "--corpus-version",
                            version, "--task", "task-004", "--candidate", str(saved)],
                           check=True, capture_output=True, text=True)
    assert json.loads(score.stdout)["score"] == reward == desk["score"]["score"]
    assert desk["released"] is True
    await env.broker.aclose()


async def test_broker_refusal_mid_batch_goes_back_to_the_model(broker: Broker) -> None:
    """On the probe desktop: the broker refuses item 1 (an unknown key name, which only the
    broker validates) before any input. Item 0 ran, item 2 does not; the model reads a `refused`
    delivery with the reason and a fresh screenshot, the rollout continues and the refusal is
    counted."""
    env = load_environment(str(broker.socket), tasks=["task-004"],
                           deskbroker_bin=str(binary("deskbroker")), profile="probe")
    model = ScriptedClient([
        [text("a"), key("nosuchkey"), text("b")],
        [text("c")],
        [{"type": "done", "intent": "finished"}],
    ])
    since = len(broker.probe_events())
    output = await env.run_rollout(env.get_eval_dataset()[0], model, "scripted", {},
                                   state_columns=["deskbroker"])
    desk = output["deskbroker"]
    assert not model.turns and desk["status"] == "done", desk
    assert desk["n_refused_actions"] == 1 and desk["n_rejected_batches"] == 0
    assert desk["actions_used"] == 3  # a, c, done
    chars = "".join(e.get("char") or "" for e in broker.probe_events()[since:]
                    if e["type"] == "key_press")
    assert chars == "ac"
    tool_results = [m for m in model.prompts[-1] if m.role == "tool"]
    refused = json.loads(tool_results[0].content[0]["text"])
    assert refused["delivery"] == "refused" and refused["item"] == 1
    assert refused["code"] == "invalid_action" and "nosuchkey" in refused["reason"]
    assert refused["items_executed"] == 1
    assert tool_results[0].content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert json.loads(tool_results[1].content[0]["text"])["delivery"] == "input_injected"
    assert output["metrics"]["refused_actions"] == 1.0
    assert desk["released"] is True
    await env.broker.aclose()


async def test_broker_failure_mid_batch_fails_closed_and_releases(broker: Broker) -> None:
    """A failure that is not a refusal (the session released behind the environment's back):
    item 0 ran, the rollout fails closed at item 1, reward 0, and cleanup still releases."""
    env = load_environment(str(broker.socket), tasks=["task-004"],
                           deskbroker_bin=str(binary("deskbroker")), profile="probe")

    async def release_behind_its_back() -> None:
        (session_id,) = list(env.broker._sessions)
        remembered = env.broker.session(session_id)
        await env.broker.release(session_id)
        env.broker.adopt(session_id, remembered.lease_token, remembered.task_id,
                         remembered.attempt_id, remembered.next_action_index)

    model = ScriptedClient([
        [text("a")],
        release_behind_its_back,
        [text("b"), text("c")],
        [{"type": "done", "intent": "never reached"}],
    ])
    since = len(broker.probe_events())
    output = await env.run_rollout(env.get_eval_dataset()[0], model, "scripted", {},
                                   state_columns=["deskbroker"])
    desk = output["deskbroker"]
    assert desk["status"] == "failed_closed" and "item 0" in desk["status_detail"], desk
    assert desk["actions_used"] == 1 and len(model.turns) == 1, "no turn after failing closed"
    chars = "".join(e.get("char") or "" for e in broker.probe_events()[since:]
                    if e["type"] == "key_press")
    assert chars == "a"
    assert output["reward"] == 0.0 and desk["score"] is None
    assert desk["n_refused_actions"] == 0
    assert desk["released"] is True
    await env.broker.aclose()


def test_vf_load_environment_by_name_plays_the_bench_run_corpus(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`vf.load_environment("deskbroker")` as a new user calls it: the binary found on PATH, the
    corpus the binary writes by default (the one `bench run` plays), its version stamped in every
    row, each task's own app profile."""
    deskbroker = binary("deskbroker")
    monkeypatch.delenv("DESKBROKER_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{deskbroker.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env = vf.load_environment("deskbroker", split="all")
    assert isinstance(env, vf.StatefulToolEnv) and env.deskbroker_bin == str(deskbroker)
    rows = list(env.get_eval_dataset())

    # What the binary writes by default, independently.
    subprocess.run([str(deskbroker), "bench", "corpus", "--log", "warn", "--out",
                    str(tmp_path / "public")], check=True, capture_output=True)
    manifest = json.loads((tmp_path / "public" / "tasks.json").read_text())
    assert manifest["corpus_version"] != "deskbroker-cad-corpus-v1"
    assert [r["info"]["task_id"] for r in rows] == [t["id"] for t in manifest["tasks"]]
    assert {r["info"]["corpus_version"] for r in rows} == {manifest["corpus_version"]}
    by_id = {t["id"]: t for t in manifest["tasks"]}
    for row in rows:
        task = by_id[row["info"]["task_id"]]
        assert row["prompt"][-1]["content"] == task["prompt"]
        assert row["info"]["profile"] == task["profile"]
    assert {r["info"]["profile"] for r in rows} == {"librecad", "freecad"}

    # An older corpus on request, checked against what it names.
    v1 = load_environment(tasks=["task-004"], corpus_version="v1")
    assert v1.get_eval_dataset()[0]["info"]["corpus_version"] == "deskbroker-cad-corpus-v1"
    with pytest.raises(DeskbrokerError, match="not v1"):
        load_environment(corpus=str(tmp_path / "public"), corpus_version="v1")


def test_missing_binary_names_every_place_tried(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.delenv("DESKBROKER_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError) as missing:  # verifiers wraps the loader's error
        vf.load_environment("deskbroker")
    assert isinstance(missing.value.__cause__, DeskbrokerError)
    assert "DESKBROKER_BIN" in str(missing.value) and str(tmp_path) in str(missing.value)
    monkeypatch.setenv("DESKBROKER_BIN", "/opt/db/deskbroker")
    assert resolve_deskbroker_bin() == "/opt/db/deskbroker"
    assert resolve_deskbroker_bin("/x/deskbroker") == "/x/deskbroker"
