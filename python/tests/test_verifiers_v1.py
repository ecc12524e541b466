"""The Verifiers 0.4 taskset and harness (``deskbroker.verifiers_v1``): real rollouts through
verifiers' own episode machinery (its env, rollout, interception server and eval client) against
a scripted model served as an OpenAI-compatible endpoint, LibreCAD or the probe window on a real
desktop, the drawing scored by the broker-side scorer.

Verifiers 0.3 and 0.4 cannot share a venv: scripts/test-python.sh runs this file alone in
target/python-vf04-venv (with ``DESKBROKER_EXPECT_VERIFIERS=0.4``, which makes a wrong venv a
failure); under 0.3 the module is skipped (test_verifiers.py covers 0.3).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import deskbroker
from deskbroker import DeskbrokerError
from deskbroker._versions import verifiers_installed, verifiers_is_v1

if not verifiers_is_v1():
    if os.environ.get("DESKBROKER_EXPECT_VERIFIERS") == "0.4":
        raise RuntimeError(f"DESKBROKER_EXPECT_VERIFIERS=0.4 but verifiers "
                           f"{verifiers_installed()} is installed")
    pytest.skip("needs verifiers 0.4 (scripts/test-python.sh runs it in its own venv)",
                allow_module_level=True)

import verifiers.v1 as vf  # noqa: E402
from aiohttp import web  # noqa: E402 (a verifiers 0.4 dependency)

from deskbroker import verifiers_v1  # noqa: E402

from .conftest import Broker, binary, key, rect, text  # noqa: E402


class ScriptedModel:
    """The model upstream of verifiers' eval client: an OpenAI-compatible chat-completions
    endpoint answering from a script (a list of batches is one ``computer_action`` call, a
    string a final answer, a callable something the test does between two turns), recording
    every request it was sent."""

    def __init__(self, turns: list[Any]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""

    async def _complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        turn = self.turns.pop(0)
        while callable(turn):
            await turn()
            turn = self.turns.pop(0)
        n = len(self.requests)
        if isinstance(turn, str):
            message: dict[str, Any] = {"role": "assistant", "content": turn}
            finish = "stop"
        else:
            call = {"id": f"call_{n}", "type": "function",
                    "function": {"name": "computer_action",
                                 "arguments": json.dumps({"actions": turn})}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        return web.json_response({
            "id": f"r{n}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[ScriptedModel]:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._complete)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        try:
            yield self
        finally:
            await runner.cleanup()


async def play(env: vf.Env, model: ScriptedModel,
               between: Callable[[], None] | None = None) -> vf.Trace:
    """One episode of the env's first task, the way `vf-eval` runs it: `serving()` (the
    interception server) and `run_episode` with the scripted model as the eval client."""
    (task,) = list(env.taskset)
    async with model.serving():
        ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(
            base_url=model.base_url, api_key_var="DESKBROKER_TEST_NO_KEY"))
        async with env.serving():
            episode = await env.run_episode(task, ctx)
    assert not episode.errors, episode.errors
    (trace,) = episode.traces
    return trace


def images(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


async def test_rollout_draws_task_004_and_is_scored(cad_broker: Broker) -> None:
    deskbroker_bin = str(binary("deskbroker"))
    kept = cad_broker.root / "artifacts"
    env = deskbroker.load_environment(str(cad_broker.socket), tasks=["task-004"],
                                      deskbroker_bin=deskbroker_bin, artifacts_dir=str(kept))
    assert isinstance(env, verifiers_v1.DeskbrokerEnv)
    model = ScriptedModel([
        [key("ctrl", "s"), {"type": "done", "intent": "too early"}, key("ctrl", "s")],  # refused
        rect("100,105", "185,145") + rect("110,115", "175,135"),
        [key("ctrl", "s")],
        [{"type": "wait", "milliseconds": 500, "intent": "let the save finish"}],
        [{"type": "done", "intent": "finished"}],
    ])
    trace = await play(env, model)
    desk = trace.state.deskbroker
    assert not model.turns, "every scripted turn was played"

    # The one tool, as the model was offered it.
    (tool,) = model.requests[0]["tools"]
    assert tool["function"]["name"] == "computer_action"
    assert list(tool["function"]["parameters"]["properties"]) == ["actions"]
    # The model saw the system prompt, the task, the reference and the handoff screenshot, then
    # after each call a tool message (the delivery) and the screenshot.
    first = model.requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "user"]
    assert len(images(first[-1])) == 2
    last = model.requests[-1]["messages"]
    tool_results = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
    assert len(tool_results) == 4
    assert tool_results[0]["delivery"] == "rejected" and tool_results[0]["items_executed"] == 0
    assert tool_results[1]["delivery"] == "input_injected"
    assert tool_results[1]["items_executed"] == 18
    screens = [m for m in last if m["role"] == "user" and images(m)][1:]
    assert len(screens) == 4
    assert images(screens[1])[0]["image_url"]["url"].startswith("data:image/png;base64,")

    # The lease token never reached the model.
    everything = json.dumps(model.requests)
    assert "lease_token" not in everything and "Bearer" not in everything

    assert trace.reward > 0.9, trace
    assert trace.rewards["cad_score"].score == trace.reward
    assert desk["status"] == "done" and desk["actions_used"] == 21 and desk["turn"] == 5
    assert desk["n_rejected_batches"] == 1 and trace.metrics["rejected_batches"] == 1.0
    assert [item["request_id"] for item in desk["items"]][:2] == [
        f"{desk['rollout_id']}-t2-i0", f"{desk['rollout_id']}-t2-i1"]
    assert desk["corpus_version"] == trace.task.data.corpus_version
    # What traces.jsonl keeps (the state is not saved): the record, without the lease token.
    saved_trace = trace.model_dump_json()
    assert "lease_token" not in saved_trace
    record = json.loads(saved_trace)["info"]["deskbroker"]
    assert record["status"] == "done" and record["corpus_version"] == desk["corpus_version"]
    # The reward is the broker-side scorer's verdict on the retrieved drawing.
    (saved,) = kept.glob("*.dxf")
    version = desk["corpus_version"].rsplit("-", 1)[1]
    score = subprocess.run([deskbroker_bin, "bench", "score", "--log", "warn",
                            "--corpus-version", version, "--task", "task-004",
                            "--candidate", str(saved)],
                           check=True, capture_output=True, text=True)
    assert json.loads(score.stdout)["score"] == trace.reward == desk["score"]["score"]
    assert desk["released"] is True
    assert not verifiers_v1._LIVE


async def test_broker_refusal_mid_batch_goes_back_to_the_model(broker: Broker) -> None:
    """On the probe desktop: the broker refuses item 1 (an unknown key name, which only the
    broker validates) before any input. Item 0 ran, item 2 does not; the model reads a
    `refused` delivery with the reason, then a fresh screenshot; the rollout continues and the
    refusal is counted."""
    env = deskbroker.load_environment(str(broker.socket), tasks=["task-004"],
                                      deskbroker_bin=str(binary("deskbroker")), profile="probe")
    model = ScriptedModel([
        [text("a"), key("nosuchkey"), text("b")],
        [text("c")],
        [{"type": "done", "intent": "finished"}],
    ])
    since = len(broker.probe_events())
    trace = await play(env, model)
    desk = trace.state.deskbroker
    assert not model.turns and desk["status"] == "done", desk
    assert desk["n_refused_actions"] == 1 and desk["n_rejected_batches"] == 0
    assert desk["actions_used"] == 3  # a, c, done
    chars = "".join(e.get("char") or "" for e in broker.probe_events()[since:]
                    if e["type"] == "key_press")
    assert chars == "ac"
    last = model.requests[-1]["messages"]
    tool_results = [json.loads(m["content"]) for m in last if m["role"] == "tool"]
    refused = tool_results[0]
    assert refused["delivery"] == "refused" and refused["item"] == 1
    assert refused["code"] == "invalid_action" and "nosuchkey" in refused["reason"]
    assert refused["items_executed"] == 1
    after = last[last.index(next(m for m in last if m["role"] == "tool")) + 1]
    assert after["role"] == "user" and len(images(after)) == 1
    assert tool_results[1]["delivery"] == "input_injected"
    assert trace.metrics["refused_actions"] == 1.0
    assert desk["released"] is True


async def test_broker_failure_mid_batch_fails_closed_and_releases(broker: Broker) -> None:
    """A failure that is not a refusal (the session released behind the harness's back): item
    0 ran, the rollout fails closed at item 1 with no further model call, reward 0, and the
    session is still released."""
    env = deskbroker.load_environment(str(broker.socket), tasks=["task-004"],
                                      deskbroker_bin=str(binary("deskbroker")), profile="probe")

    async def release_behind_its_back() -> None:
        (live,) = verifiers_v1._LIVE.values()
        session_id = live.desk["session_id"]
        remembered = live.broker.session(session_id)
        await live.broker.release(session_id)
        live.broker.adopt(session_id, remembered.lease_token, remembered.task_id,
                          remembered.attempt_id, remembered.next_action_index)

    model = ScriptedModel([
        [text("a")],
        release_behind_its_back,
        [text("b"), text("c")],
        [{"type": "done", "intent": "never reached"}],
    ])
    since = len(broker.probe_events())
    trace = await play(env, model)
    desk = trace.state.deskbroker
    assert desk["status"] == "failed_closed" and "item 0" in desk["status_detail"], desk
    assert desk["actions_used"] == 1 and len(model.turns) == 1, "no turn after failing closed"
    chars = "".join(e.get("char") or "" for e in broker.probe_events()[since:]
                    if e["type"] == "key_press")
    assert chars == "a"
    assert trace.reward == 0.0 and desk["score"] is None
    assert desk["released"] is True


async def test_a_framework_limit_ends_the_rollout_which_is_still_scored(broker: Broker) -> None:
    """`--env.agent.max-turns 1`: verifiers refuses the second model call itself (it never
    reaches the model); the harness ends the loop on that stop, the task still checkpoints,
    scores and releases, the status names the limit."""
    env = vf.load_environment(vf.resolve_env_config({
        "taskset": {"id": "deskbroker", "tasks": ["task-004"],
                    "task": {"socket": str(broker.socket), "profile": "probe",
                             "deskbroker_bin": str(binary("deskbroker"))}},
        "agent": {"max_turns": 1}}))
    model = ScriptedModel([[text("a")], [text("b")]])
    trace = await play(env, model)
    desk = trace.state.deskbroker
    assert trace.stop_condition == "max_turns" and trace.ok, trace.errors
    assert len(model.requests) == 1 and len(model.turns) == 1
    assert desk["status"] == "max_turns" and desk["actions_used"] == 1
    assert desk["released"] is True and trace.info["deskbroker"]["released"] is True


def test_loaded_by_taskset_id_plays_the_bench_run_corpus(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """Verifiers 0.4 loads environments by taskset id (`vf-eval deskbroker`): the binary found
    on PATH, the corpus it writes by default (the one `bench run` plays), its version in every
    task, each task's own app profile, the deskbroker harness and the local runtime."""
    deskbroker_bin = binary("deskbroker")
    monkeypatch.delenv("DESKBROKER_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{deskbroker_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env = vf.load_environment(vf.resolve_env_config(
        {"taskset": {"id": "deskbroker", "split": "all"}}))
    assert isinstance(env, verifiers_v1.DeskbrokerEnv)
    assert isinstance(env.taskset, verifiers_v1.DeskbrokerTaskset)
    assert isinstance(env._default_harness, verifiers_v1.DeskbrokerHarnessConfig)
    assert isinstance(env.config.agent.runtime, vf.SubprocessConfig)
    tasks = list(env.taskset)

    subprocess.run([str(deskbroker_bin), "bench", "corpus", "--log", "warn", "--out",
                    str(tmp_path / "public")], check=True, capture_output=True)
    manifest = json.loads((tmp_path / "public" / "tasks.json").read_text())
    assert manifest["corpus_version"] != "deskbroker-cad-corpus-v1"
    assert [t.data.task_id for t in tasks] == [t["id"] for t in manifest["tasks"]]
    assert {t.data.corpus_version for t in tasks} == {manifest["corpus_version"]}
    by_id = {t["id"]: t for t in manifest["tasks"]}
    for task in tasks:
        assert task.data.prompt == by_id[task.data.task_id]["prompt"]
        assert task.data.profile == by_id[task.data.task_id]["profile"]
    assert {t.data.profile for t in tasks} == {"librecad", "freecad"}
    assert len({t.key for t in tasks}) == len(tasks)

    # Another corpus on request reaches the corpus check (shared with 0.3, whose test writes v1).
    with pytest.raises(DeskbrokerError, match="not v1"):
        deskbroker.load_environment(corpus=str(tmp_path / "public"), corpus_version="v1")


def test_missing_binary_names_every_place_tried(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.delenv("DESKBROKER_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DeskbrokerError) as missing:
        vf.load_environment(vf.resolve_env_config({"taskset": {"id": "deskbroker"}}))
    assert "DESKBROKER_BIN" in str(missing.value) and str(tmp_path) in str(missing.value)
