"""The CAD benchmark as a Verifiers environment (``StatefulToolEnv``), ``load_environment()``.

Per rollout: ``setup_state`` leases a session in the task's app profile (LibreCAD for 2D, FreeCAD
for 3D) and resets it; the handoff screenshot is
appended to the prompt. Each turn the model makes exactly one ``computer_action`` call holding a
non-empty ordered batch (``docs/benchmark.md``, the batching rule). The whole batch is checked
before the first request (known types, integer fields, pointer coordinates inside the display,
``done`` only last, the batch fits the remaining action budget); a refused batch executes nothing
and is answered with a ``rejected`` delivery and a fresh screenshot. An accepted batch runs open
loop with request ids ``{rollout_id}-t{turn}-i{item}`` and the broker's strictly increasing
indices; the tool result is the aggregate delivery (text) and the final screenshot (an image).
An item the broker refuses before any input (``deskbroker.computer.REFUSAL_CODES``: an unknown or
system key, ...) goes back to the model as a ``refused`` delivery (the item, code and reason, the
items executed before it, a fresh screenshot); the rest of the batch is not run, the rollout
continues and the refusal is counted (``n_refused_actions``, metric ``refused_actions``). Any
other broker failure at an item fails the rollout closed; a batch is never re-sent. The rollout
ends on ``done``, an answer without a tool call, the action or wall-time budget, or failed
closed. Cleanup checkpoints, retrieves the drawing, scores it with the broker-side scorer
(``deskbroker bench score``, whose gold the model never sees) and always releases the session.
The reward is that score. The lease token lives only in the :class:`~deskbroker.Client`.
"""


import asyncio
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import verifiers as vf

if not hasattr(vf, "StatefulToolEnv"):  # 0.4 ships only `verifiers.v1`, another architecture
    raise ImportError(
        f"deskbroker's Verifiers environment needs verifiers 0.3 (>=0.3.1,<0.4); found "
        f"{getattr(vf, '__version__', 'an unknown version')}, which has no StatefulToolEnv: "
        "pip install 'deskbroker[verifiers]'")

from datasets import Dataset  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

from .client import ApiError, Client, DeskbrokerError, artifact_bytes, screenshot_base64
from .computer import REFUSAL_CODES
from .types import Screenshot

__all__ = ["load_environment", "DeskbrokerCadEnv", "check_batch"]

ACTION_TYPES = {"click", "double_click", "drag", "move", "scroll", "key", "type", "wait", "done"}
POINTER_TYPES = {"click", "double_click", "move"}
MAX_ACTIONS = 5000
WALL_TIME_S = {"2d": 900, "3d": 1800}

SYSTEM_PROMPT = """You operate a CAD app (the one the task names: LibreCAD for 2D drawings, FreeCAD
for 3D parts) on a Linux desktop through one tool, computer_action.
Each turn call computer_action exactly once with a non-empty ordered list of actions; they run
open loop and you then see one screenshot. Every action has an "intent" (why you do it). Types:
click/double_click {x, y, button?, modifiers?}, drag {path: [{x, y}, ...]}, move {x, y},
scroll {dx, dy}, key {keys: ["ctrl", "s"]}, type {text}, wait {milliseconds}, done {}.
Coordinates are screen pixels. Batch only short deterministic sequences; anything that depends on
a dialog, focus change or render goes in its own batch. Save with ctrl+s, then send done last."""


class Point(TypedDict):
    x: int
    y: int


class Action(TypedDict):
    """One normalized action; fields a type does not use are null (the tool schema is strict)."""

    type: Literal["click", "double_click", "drag", "move", "scroll", "key", "type", "wait", "done"]
    intent: str
    x: int | None
    y: int | None
    button: Literal["left", "right", "middle"] | None
    modifiers: list[Literal["shift", "ctrl", "alt"]] | None
    path: list[Point] | None
    dx: int | None
    dy: int | None
    keys: list[str] | None
    text: str | None
    milliseconds: int | None


def _without_nulls(actions: Any) -> Any:
    """The batch without the null fields the strict schema makes the model send."""
    if not isinstance(actions, list):
        return actions
    return [{k: v for k, v in a.items() if v is not None} if isinstance(a, dict) else a
            for a in actions]


def check_batch(actions: Any, width: int, height: int, remaining: int) -> str | None:
    """Why the batch is refused, or ``None``. Nothing here replaces the broker's own validation;
    it keeps a batch the broker would refuse part-way from running at all."""
    if not isinstance(actions, list) or not actions:
        return "actions must be a non-empty list"
    if len(actions) > remaining:
        return f"the batch has {len(actions)} actions but only {remaining} remain in the budget"
    for index, action in enumerate(actions):
        where = f"item {index}"
        if not isinstance(action, dict):
            return f"{where} is not an object"
        kind = action.get("type")
        if kind not in ACTION_TYPES:
            return f"{where}: unknown type {kind!r}"
        if not isinstance(action.get("intent"), str) or not action["intent"].strip():
            return f"{where}: intent must be a non-empty string"
        if kind == "done" and index != len(actions) - 1:
            return f"{where}: done may appear only as the last item"
        points = [action] if kind in POINTER_TYPES else []
        if kind == "drag":
            path = action.get("path")
            if not isinstance(path, list) or len(path) < 2:
                return f"{where}: drag needs a path of at least two points"
            points = path
        for point in points:
            if not isinstance(point, dict):
                return f"{where}: a point is not an object"
            x, y = point.get("x"), point.get("y")
            if type(x) is not int or type(y) is not int:
                return f"{where}: x and y must be integers"
            if not (0 <= x < width and 0 <= y < height):
                return f"{where}: ({x}, {y}) is outside the {width}x{height} display"
    return None


def _png_part(png_b64: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png_b64}"}}


def _image_part(shot: Screenshot | dict[str, Any]) -> dict[str, Any]:
    """A frame as an image part; FrameWithheld when the screenshot gate withheld it."""
    return _png_part(screenshot_base64(shot))


class DeskbrokerCadEnv(vf.StatefulToolEnv):
    """See the module documentation."""

    def __init__(self, client: Client, deskbroker_bin: str, corpus: Path, gold: Path | None,
                 profile: str | None, artifacts_dir: Path | None = None,
                 **kwargs: Any) -> None:
        super().__init__(tools=[], **kwargs)
        self.broker = client
        self.deskbroker_bin = deskbroker_bin
        self.corpus = corpus
        self.gold = gold
        self.profile = profile
        self.artifacts_dir = artifacts_dir
        self.add_tool(self.computer_action, args_to_skip=["state"])

    async def computer_action(self, actions: list[Action], state: Any) -> list[dict]:
        """Run an ordered batch of desktop actions open loop; answers the aggregate delivery and
        the final screenshot.

        Args:
            actions: the ordered batch, each {"type": ..., "intent": ..., ...}.
        """
        desk = state["deskbroker"]
        desk["turn"] += 1
        turn = desk["turn"]
        batch: list[dict[str, Any]] = _without_nulls(actions)
        remaining = desk["max_actions"] - desk["actions_used"]
        reason = check_batch(batch, desk["width"], desk["height"], remaining)
        if reason is None and time.monotonic() >= desk["deadline"]:
            desk["status"] = "wall_time_exhausted"
            reason = "the wall-time budget is used up"
        if reason is not None:
            desk["n_rejected_batches"] += 1
            shot = await self.broker.screenshot(desk["session_id"])
            delivery = {"delivery": "rejected", "reason": reason, "items_executed": 0}
            return [{"type": "text", "text": json.dumps(delivery)}, _image_part(shot)]
        start_sha = desk["last_sha256"]
        final: Screenshot | None = None
        for index, action in enumerate(batch):
            request_id = f"{desk['rollout_id']}-t{turn}-i{index}"
            try:
                answer = await self.broker.act(desk["session_id"], action, request_id=request_id)
            except ApiError as error:
                if error.code not in REFUSAL_CODES:
                    desk["status"] = "failed_closed"
                    desk["status_detail"] = f"item {index}: {error}"
                    raise vf.ToolCallError(f"failed closed at item {index}: {error}") from None
                # Refused before any input (an unknown or system key, a point the broker will
                # not send): back to the model, the rest of the batch not run, counted.
                return await self._refused(desk, index, error)
            except DeskbrokerError as error:
                desk["status"] = "failed_closed"
                desk["status_detail"] = f"item {index}: {error}"
                raise vf.ToolCallError(f"failed closed at item {index}: {error}") from None
            frame = answer["screenshot"]
            if frame is None:
                # Delivered without a frame (the receipt names the failed observation): the
                # action counts; take a fresh one.
                frame = await self.broker.screenshot(desk["session_id"])
            sequence = int(frame["sequence"])
            if sequence <= desk["last_sequence"]:
                desk["status"] = "failed_closed"
                desk["status_detail"] = f"item {index}: frame sequence did not increase"
                raise vf.ToolCallError(desk["status_detail"])
            desk["last_sequence"] = sequence
            desk["actions_used"] += 1
            desk["items"].append({"request_id": request_id, "receipt": answer["receipt"]})
            final = frame
        assert final is not None
        shot = final
        desk["last_sha256"] = shot["sha256"]
        if batch[-1]["type"] == "done":
            desk["status"] = "done"
        elif desk["actions_used"] >= desk["max_actions"]:
            desk["status"] = "action_budget_exhausted"
        delivery = {
            "delivery": "input_injected", "items_executed": len(batch),
            "batch_start_sha256": start_sha, "final_sha256": shot["sha256"],
            "screen_changed": start_sha != shot["sha256"],
            "actions_used": desk["actions_used"], "max_actions": desk["max_actions"],
        }
        return [{"type": "text", "text": json.dumps(delivery)}, _image_part(shot)]

    async def _refused(self, desk: dict[str, Any], index: int, error: ApiError) -> list[dict]:
        desk["n_refused_actions"] += 1
        shot = await self.broker.screenshot(desk["session_id"])
        desk["last_sha256"] = shot["sha256"]
        desk["last_sequence"] = max(desk["last_sequence"], int(shot["sequence"]))
        delivery = {"delivery": "refused", "item": index, "code": error.code,
                    "reason": error.message, "items_executed": index,
                    "actions_used": desk["actions_used"], "max_actions": desk["max_actions"]}
        return [{"type": "text", "text": json.dumps(delivery)}, _image_part(shot)]

    def update_tool_args(self, tool_name: str, tool_args: dict, messages: Any, state: Any,
                         **kwargs: Any) -> dict:
        return {**tool_args, "state": state}

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        calls = messages[-1].tool_calls or []
        if len(calls) == 1 and calls[0].name == "computer_action":
            replies = await super().env_response(messages, state, **kwargs)
            if state["deskbroker"]["status"] is not None:
                # The rollout ended in this batch (done, budget, failed closed): verifiers then
                # stops without another model call.
                state["final_env_response"] = replies
            return replies
        # The contract: exactly one computer_action call per turn; anything else runs nothing.
        desk = state["deskbroker"]
        desk["turn"] += 1
        desk["n_rejected_batches"] += 1
        shot = await self.broker.screenshot(desk["session_id"])
        reason = "make exactly one computer_action call per turn"
        delivery = json.dumps({"delivery": "rejected", "reason": reason, "items_executed": 0})
        return [vf.ToolMessage(tool_call_id=call.id,
                               content=[{"type": "text", "text": delivery},
                                        _image_part(shot)])
                for call in calls]

    async def setup_state(self, state: Any) -> Any:
        info = state["info"]
        rollout_id = f"{info['task_id']}-{state['trajectory_id'][:12]}"
        lease = await self.broker.lease(info["task_id"], state["trajectory_id"][:12],
                                        self.profile or info.get("profile"))
        desk: dict[str, Any] = {
            "session_id": lease["session_id"], "rollout_id": rollout_id, "turn": 0,
            "actions_used": 0, "n_rejected_batches": 0, "n_refused_actions": 0, "items": [],
            "status": None,
            "status_detail": None, "score": None, "corpus_version": info["corpus_version"],
            "max_actions": min(int(info["max_actions"]), MAX_ACTIONS),
        }
        state["deskbroker"] = desk
        try:
            reset = await self.broker.reset(lease["session_id"], request_id=f"{rollout_id}-reset")
        except DeskbrokerError as error:
            desk["status"] = "setup_failed"
            desk["status_detail"] = str(error)
            raise vf.InfraError(f"reset failed: {error}") from None
        shot = reset["screenshot"]
        desk.update(width=shot["width"], height=shot["height"], last_sha256=shot["sha256"],
                    last_sequence=shot["sequence"],
                    deadline=time.monotonic() + WALL_TIME_S[info["drawing_type"]])
        reference = base64.b64encode((self.corpus / info["reference_image"]).read_bytes())
        state["prompt"].append(vf.UserMessage(content=[
            {"type": "text", "text": "The reference drawing:"},
            _png_part(reference.decode()),
            {"type": "text", "text": f"The desktop is ready ({shot['width']}x{shot['height']})."},
            _image_part(shot),
        ]))
        return state

    @vf.stop
    async def rollout_ended(self, state: Any) -> bool:
        desk = state.get("deskbroker")
        if desk is None:
            return False
        if desk["status"] is None and time.monotonic() >= desk["deadline"]:
            desk["status"] = "wall_time_exhausted"
        return desk["status"] is not None

    @vf.cleanup
    async def score_and_release(self, state: Any) -> None:
        desk = state.get("deskbroker")
        if desk is None:
            return
        if desk["status"] is None:
            desk["status"] = "no_tool_call" if state.get("error") is None else "agent_failed"
        session_id = desk["session_id"]
        try:
            if desk["status"] != "setup_failed":
                try:
                    await self.broker.checkpoint(session_id)
                    artifact = await self.broker.artifact(session_id)
                    drawing = artifact_bytes(artifact)
                    desk["artifact_sha256"] = artifact["sha256"]
                    suffix = Path(str(artifact.get("filename") or "attempt.dxf")).suffix
                    if self.artifacts_dir is not None:
                        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
                        kept = self.artifacts_dir / f"{desk['rollout_id']}{suffix}"
                        kept.write_bytes(drawing)
                    desk["score"] = await self._score(state["info"]["task_id"], drawing, suffix)
                except ApiError as error:
                    desk["status_detail"] = f"{desk['status_detail'] or ''} checkpoint: {error}"
        finally:
            desk["released"] = (await self.broker.release(session_id))["state"] == "released"

    async def _score(self, task_id: str, drawing: bytes, suffix: str) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="deskbroker-score-") as scratch:
            candidate = Path(scratch) / f"attempt{suffix}"
            candidate.write_bytes(drawing)
            command = [self.deskbroker_bin, "bench", "score", "--log", "warn", "--task", task_id,
                       "--candidate", str(candidate), "--corpus", str(self.corpus)]
            if self.gold is not None:
                command += ["--gold", str(self.gold)]
            done = await asyncio.to_thread(subprocess.run, command, capture_output=True,
                                           text=True, timeout=120)
        if done.returncode != 0:
            raise DeskbrokerError(f"bench score failed: {done.stderr.strip()[-500:]}")
        report = json.loads(done.stdout)
        if not isinstance(report, dict) or not isinstance(report.get("score"), (int, float)):
            raise DeskbrokerError("bench score printed no score")
        return report



async def cad_score(state: Any) -> float:
    """The reward: the broker-side scorer's score of the saved drawing (0 without one)."""
    desk = state.get("deskbroker") or {}
    score = desk.get("score")
    return float(score["score"]) if score else 0.0


async def refused_actions(state: Any) -> float:
    """A metric (weight 0): actions the broker refused mid-batch, returned to the model."""
    return float((state.get("deskbroker") or {}).get("n_refused_actions", 0))


async def rejected_batches(state: Any) -> float:
    """A metric (weight 0): batches refused whole before any input."""
    return float((state.get("deskbroker") or {}).get("n_rejected_batches", 0))


def resolve_deskbroker_bin(deskbroker_bin: str | None = None) -> str:
    """The ``deskbroker`` binary: ``deskbroker_bin``, else ``$DESKBROKER_BIN``, else ``deskbroker``
    on ``PATH``; an error names each place tried."""
    if deskbroker_bin:
        return deskbroker_bin
    named = os.environ.get("DESKBROKER_BIN")
    if named:
        return named
    found = shutil.which("deskbroker")
    if found is None:
        raise DeskbrokerError(
            "the deskbroker binary was not found: deskbroker_bin= not given, DESKBROKER_BIN "
            f"unset, no deskbroker on PATH ({os.environ.get('PATH', '')}); it writes the corpus "
            "and scores the drawings (cargo build --release -p deskbroker)")
    return found


# The corpora written by this process, by (binary, version asked): written once (the corpus is
# deterministic; writing one takes seconds).
_WRITTEN: dict[tuple[str, str | None], Path] = {}


def _corpus(deskbroker_bin: str, corpus: str | None,
            corpus_version: str | None) -> tuple[Path, str]:
    """The public corpus and its version. Without ``corpus``: written by the binary's
    ``bench corpus``, at ``corpus_version`` or else the binary's default, the version
    ``bench run`` plays."""
    if corpus is not None:
        public = Path(corpus)
    elif (deskbroker_bin, corpus_version) in _WRITTEN and (
            _WRITTEN[(deskbroker_bin, corpus_version)] / "tasks.json").exists():
        public = _WRITTEN[(deskbroker_bin, corpus_version)]
    else:
        public = Path(tempfile.mkdtemp(prefix="deskbroker-corpus-")) / "public"
        command = [deskbroker_bin, "bench", "corpus", "--log", "warn", "--out", str(public)]
        if corpus_version is not None:
            command += ["--corpus-version", corpus_version]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise DeskbrokerError(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
        _WRITTEN[(deskbroker_bin, corpus_version)] = public
    manifest = json.loads((public / "tasks.json").read_text())
    version = str(manifest.get("corpus_version") or "")
    if not version:
        raise DeskbrokerError(f"{public / 'tasks.json'} names no corpus_version")
    if corpus_version is not None and not version.endswith(f"-{corpus_version}"):
        raise DeskbrokerError(f"{public} is corpus {version}, not {corpus_version}")
    return public, version


def load_environment(
    socket: str | None = None,
    *,
    url: str | None = None,
    ca: str | None = None,
    cert: str | None = None,
    key: str | None = None,
    split: str = "dev",
    tasks: list[str] | None = None,
    deskbroker_bin: str | None = None,
    corpus: str | None = None,
    corpus_version: str | None = None,
    gold: str | None = None,
    profile: str | None = None,
    max_turns: int = 200,
    artifacts_dir: str | None = None,
    **kwargs: Any,
) -> DeskbrokerCadEnv:
    """The CAD benchmark on the broker at ``socket`` or ``url`` (default: the socket
    ``deskbroker serve`` listens on by default, :func:`deskbroker.default_socket`).

    ``split``: ``dev``, ``eval`` or ``all``; ``tasks`` picks task ids instead. The public corpus
    (``corpus``, default: written by ``deskbroker bench corpus`` at ``corpus_version``, default
    the binary's own default, the corpus ``deskbroker bench run`` plays) gives prompts and
    reference images; every row's ``info`` and every rollout's state carry its
    ``corpus_version``. Each task runs in the app profile it names (``profile`` overrides).
    ``gold`` is passed only to the scorer. ``artifacts_dir`` keeps each retrieved file as
    ``{rollout_id}.dxf`` (or ``.FCStd``). ``deskbroker_bin``: :func:`resolve_deskbroker_bin`.
    """
    deskbroker_bin = resolve_deskbroker_bin(deskbroker_bin)
    public, version = _corpus(deskbroker_bin, corpus, corpus_version)
    manifest = json.loads((public / "tasks.json").read_text())
    rows = []
    for task in manifest["tasks"]:
        if tasks is not None and task["id"] not in tasks:
            continue
        if tasks is None and split != "all" and task["split"] != split:
            continue
        rows.append({
            "prompt": [{"role": "user", "content": task["prompt"]}],
            "info": {"task_id": task["id"], "drawing_type": task["drawing_type"],
                     "reference_image": task["reference_image"],
                     "max_actions": task["budgets"]["max_actions"], "level": task["level"],
                     "profile": task.get("profile"), "corpus_version": version},
        })
    if not rows:
        raise DeskbrokerError("no task matches the split/tasks selection")
    client = Client(socket, url=url, ca=ca, cert=cert, key=key)
    return DeskbrokerCadEnv(
        client, deskbroker_bin, public, Path(gold) if gold else None, profile,
        Path(artifacts_dir) if artifacts_dir else None,
        eval_dataset=Dataset.from_list(rows), system_prompt=SYSTEM_PROMPT,
        rubric=vf.Rubric(funcs=[cad_score, refused_actions, rejected_batches],
                         weights=[1.0, 0.0, 0.0]),
        max_turns=max_turns, **kwargs,
    )
