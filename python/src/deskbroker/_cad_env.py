"""The CAD benchmark environment without Verifiers: what the Verifiers 0.3 environment
(:mod:`deskbroker.verifiers_env`) and the 0.4 taskset and harness (:mod:`deskbroker.verifiers_v1`)
share. Nothing here imports ``verifiers``.

- The tasks: :func:`load_corpus` (the public corpus the ``deskbroker`` binary writes by default,
  the one ``bench run`` plays, or one on disk) and :func:`task_rows` (one row per task, its
  ``corpus_version`` stamped in each).
- One rollout, as a ``desk`` dict (JSON-able, no secret: the lease token stays in the
  :class:`~deskbroker.Client`): :func:`open_session` leases and resets; :func:`run_batch` checks
  and runs one ``computer_action`` batch (the benchmark's batching rule, ``docs/benchmark.md``)
  and answers the tool's content (the delivery as text, then the screenshot as an image);
  :func:`reject_turn` answers a turn that broke the one-call rule; :func:`close_session`
  checkpoints, retrieves the drawing, scores it with ``deskbroker bench score`` (whose gold the
  model never sees) and always releases.

A batch is checked whole before the first request (:func:`check_batch`); a refused batch runs
nothing (``rejected``). An accepted batch runs open loop with request ids
``{rollout_id}-t{turn}-i{item}``. An item the broker refuses before any input
(:data:`deskbroker.computer.REFUSAL_CODES`) is answered as a ``refused`` delivery, the rest of
the batch is not run and the refusal is counted (``n_refused_actions``). Any other broker
failure at an item fails the rollout closed: :class:`FailedClosed`, never a re-sent batch.
"""

from __future__ import annotations

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

from typing_extensions import TypedDict

from .client import ApiError, Client, DeskbrokerError, artifact_bytes, screenshot_base64
from .computer import REFUSAL_CODES
from .types import Screenshot

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

ONE_CALL = "make exactly one computer_action call per turn"


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


class FailedClosed(DeskbrokerError):
    """A broker failure mid-batch that is not a refusal: the rollout ends, nothing is re-sent
    (``desk["status"]`` is ``failed_closed``, ``desk["status_detail"]`` names the item)."""


class SetupFailed(DeskbrokerError):
    """The session was leased but its reset failed (``desk["status"]`` is ``setup_failed``)."""


def without_nulls(actions: Any) -> Any:
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


def png_part(png_b64: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png_b64}"}}


def image_part(shot: Screenshot | dict[str, Any]) -> dict[str, Any]:
    """A frame as an image part; FrameWithheld when the screenshot gate withheld it."""
    return png_part(screenshot_base64(shot))


def _answer(delivery: dict[str, Any], shot: Screenshot | dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": json.dumps(delivery)}, image_part(shot)]


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


def load_corpus(deskbroker_bin: str, corpus: str | None,
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


def task_rows(public: Path, version: str, split: str,
              tasks: list[str] | None) -> list[dict[str, Any]]:
    """One row per selected task of the corpus at ``public``: ``task_id``, ``prompt``,
    ``drawing_type``, ``reference_image``, ``max_actions``, ``level``, ``profile`` and the
    ``corpus_version``. ``split``: ``dev``, ``eval`` or ``all``; ``tasks`` picks ids instead."""
    manifest = json.loads((public / "tasks.json").read_text())
    rows = []
    for task in manifest["tasks"]:
        if tasks is not None and task["id"] not in tasks:
            continue
        if tasks is None and split != "all" and task["split"] != split:
            continue
        rows.append({"task_id": task["id"], "prompt": task["prompt"],
                     "drawing_type": task["drawing_type"],
                     "reference_image": task["reference_image"],
                     "max_actions": task["budgets"]["max_actions"], "level": task["level"],
                     "profile": task.get("profile"), "corpus_version": version})
    if not rows:
        raise DeskbrokerError("no task matches the split/tasks selection")
    return rows


def reference_part(corpus: Path, info: dict[str, Any]) -> dict[str, Any]:
    """The task's reference drawing as an image part."""
    return png_part(base64.b64encode((corpus / info["reference_image"]).read_bytes()).decode())


async def open_session(broker: Client, info: dict[str, Any], attempt_id: str,
                       profile: str | None) -> tuple[dict[str, Any], Screenshot]:
    """Leases a session for the task in ``info`` (a :func:`task_rows` row) in its app profile
    (``profile`` overrides) and resets it: the rollout's ``desk`` and the handoff screenshot.
    A failed reset leaves the session leased and raises :class:`SetupFailed` with
    ``desk`` on it (``error.desk``) for :func:`close_session`."""
    rollout_id = f"{info['task_id']}-{attempt_id}"
    lease = await broker.lease(info["task_id"], attempt_id, profile or info.get("profile"))
    desk: dict[str, Any] = {
        "session_id": lease["session_id"], "rollout_id": rollout_id, "turn": 0,
        "actions_used": 0, "n_rejected_batches": 0, "n_refused_actions": 0, "items": [],
        "status": None, "status_detail": None, "score": None,
        "corpus_version": info["corpus_version"],
        "max_actions": min(int(info["max_actions"]), MAX_ACTIONS),
    }
    try:
        reset = await broker.reset(lease["session_id"], request_id=f"{rollout_id}-reset")
    except DeskbrokerError as error:
        desk["status"] = "setup_failed"
        desk["status_detail"] = str(error)
        failed = SetupFailed(f"reset failed: {error}")
        failed.desk = desk  # type: ignore[attr-defined]
        raise failed from None
    shot = reset["screenshot"]
    desk.update(width=shot["width"], height=shot["height"], last_sha256=shot["sha256"],
                last_sequence=shot["sequence"],
                deadline=time.monotonic() + WALL_TIME_S[info["drawing_type"]])
    return desk, shot


def handoff_parts(corpus: Path, info: dict[str, Any], shot: Screenshot) -> list[dict[str, Any]]:
    """The user message that follows the task's prompt: the reference drawing and the handoff
    screenshot."""
    return [{"type": "text", "text": "The reference drawing:"}, reference_part(corpus, info),
            {"type": "text", "text": f"The desktop is ready ({shot['width']}x{shot['height']})."},
            image_part(shot)]


def out_of_time(desk: dict[str, Any]) -> bool:
    """Whether the rollout ended (``desk["status"]`` set); the wall time ends it too."""
    if desk["status"] is None and time.monotonic() >= desk["deadline"]:
        desk["status"] = "wall_time_exhausted"
    return desk["status"] is not None


async def reject_turn(broker: Client, desk: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    """A turn that runs nothing (``rejected``): counted, answered with a fresh screenshot."""
    desk["turn"] += 1
    desk["n_rejected_batches"] += 1
    shot = await broker.screenshot(desk["session_id"])
    return _answer({"delivery": "rejected", "reason": reason, "items_executed": 0}, shot)


def _fail(desk: dict[str, Any], detail: str) -> FailedClosed:
    desk["status"] = "failed_closed"
    desk["status_detail"] = detail
    return FailedClosed(f"failed closed at {detail}")


async def run_batch(broker: Client, desk: dict[str, Any], actions: Any) -> list[dict[str, Any]]:
    """One ``computer_action`` call: the tool's content (the delivery as a text part, then the
    screenshot as an image part). Raises :class:`FailedClosed` (the desk says why)."""
    desk["turn"] += 1
    turn = desk["turn"]
    batch: list[dict[str, Any]] = without_nulls(actions)
    remaining = desk["max_actions"] - desk["actions_used"]
    reason = check_batch(batch, desk["width"], desk["height"], remaining)
    if reason is None and time.monotonic() >= desk["deadline"]:
        desk["status"] = "wall_time_exhausted"
        reason = "the wall-time budget is used up"
    if reason is not None:
        desk["turn"] -= 1  # reject_turn counts it
        return await reject_turn(broker, desk, reason)
    start_sha = desk["last_sha256"]
    final: Screenshot | None = None
    for index, action in enumerate(batch):
        request_id = f"{desk['rollout_id']}-t{turn}-i{index}"
        try:
            answer = await broker.act(desk["session_id"], action, request_id=request_id)
        except ApiError as error:
            if error.code not in REFUSAL_CODES:
                raise _fail(desk, f"item {index}: {error}") from None
            # Refused before any input (an unknown or system key, a point the broker will
            # not send): back to the model, the rest of the batch not run, counted.
            return await _refused(broker, desk, index, error)
        except DeskbrokerError as error:
            raise _fail(desk, f"item {index}: {error}") from None
        frame = answer["screenshot"]
        if frame is None:
            # Delivered without a frame (the receipt names the failed observation): the
            # action counts; take a fresh one.
            frame = await broker.screenshot(desk["session_id"])
        sequence = int(frame["sequence"])
        if sequence <= desk["last_sequence"]:
            raise _fail(desk, f"item {index}: frame sequence did not increase")
        desk["last_sequence"] = sequence
        desk["actions_used"] += 1
        desk["items"].append({"request_id": request_id, "receipt": answer["receipt"]})
        final = frame
    if final is None:
        raise _fail(desk, "the batch ran no item")
    desk["last_sha256"] = final["sha256"]
    if batch[-1]["type"] == "done":
        desk["status"] = "done"
    elif desk["actions_used"] >= desk["max_actions"]:
        desk["status"] = "action_budget_exhausted"
    return _answer({
        "delivery": "input_injected", "items_executed": len(batch),
        "batch_start_sha256": start_sha, "final_sha256": final["sha256"],
        "screen_changed": start_sha != final["sha256"],
        "actions_used": desk["actions_used"], "max_actions": desk["max_actions"],
    }, final)


async def _refused(broker: Client, desk: dict[str, Any], index: int,
                   error: ApiError) -> list[dict[str, Any]]:
    desk["n_refused_actions"] += 1
    shot = await broker.screenshot(desk["session_id"])
    desk["last_sha256"] = shot["sha256"]
    desk["last_sequence"] = max(desk["last_sequence"], int(shot["sequence"]))
    return _answer({"delivery": "refused", "item": index, "code": error.code,
                    "reason": error.message, "items_executed": index,
                    "actions_used": desk["actions_used"], "max_actions": desk["max_actions"]},
                   shot)


async def close_session(broker: Client, desk: dict[str, Any], task_id: str, *,
                        deskbroker_bin: str, corpus: Path, gold: Path | None,
                        artifacts_dir: Path | None, ended: str) -> None:
    """The rollout's end: checkpoint, retrieve and score the drawing (``desk["score"]``, the
    scorer's report), then always release (``desk["released"]``). ``ended``: the status when
    none is set yet (the model stopped calling the tool, or the agent failed)."""
    if desk["status"] is None:
        desk["status"] = ended
    session_id = desk["session_id"]
    try:
        if desk["status"] != "setup_failed":
            try:
                await broker.checkpoint(session_id)
                artifact = await broker.artifact(session_id)
                drawing = artifact_bytes(artifact)
                desk["artifact_sha256"] = artifact["sha256"]
                suffix = Path(str(artifact.get("filename") or "attempt.dxf")).suffix
                if artifacts_dir is not None:
                    artifacts_dir.mkdir(parents=True, exist_ok=True)
                    (artifacts_dir / f"{desk['rollout_id']}{suffix}").write_bytes(drawing)
                desk["score"] = await score(deskbroker_bin, corpus, gold, task_id, drawing, suffix)
            except ApiError as error:
                desk["status_detail"] = f"{desk['status_detail'] or ''} checkpoint: {error}"
    finally:
        desk["released"] = (await broker.release(session_id))["state"] == "released"


async def score(deskbroker_bin: str, corpus: Path, gold: Path | None, task_id: str,
                drawing: bytes, suffix: str) -> dict[str, Any]:
    """``deskbroker bench score``'s report on ``drawing`` (its ``score`` in 0..1)."""
    with tempfile.TemporaryDirectory(prefix="deskbroker-score-") as scratch:
        candidate = Path(scratch) / f"attempt{suffix}"
        candidate.write_bytes(drawing)
        command = [deskbroker_bin, "bench", "score", "--log", "warn", "--task", task_id,
                   "--candidate", str(candidate), "--corpus", str(corpus)]
        if gold is not None:
            command += ["--gold", str(gold)]
        done = await asyncio.to_thread(subprocess.run, command, capture_output=True,
                                       text=True, timeout=120)
    if done.returncode != 0:
        raise DeskbrokerError(f"bench score failed: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    if not isinstance(report, dict) or not isinstance(report.get("score"), (int, float)):
        raise DeskbrokerError("bench score printed no score")
    return report


def reward(desk: dict[str, Any] | None) -> float:
    """The reward: the broker-side scorer's score of the saved drawing (0 without one)."""
    found = (desk or {}).get("score")
    return float(found["score"]) if found else 0.0
