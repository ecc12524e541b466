"""The CAD benchmark for Verifiers 0.4 (``verifiers.v1``): a taskset, its harness and its env.
Verifiers 0.3: :mod:`deskbroker.verifiers_env`. What both share (the tasks, the batch rule,
refusals, scoring): :mod:`deskbroker._cad_env`.

The ``deskbroker`` package exports the three plugin classes (under 0.4 only), so Verifiers
finds them by the taskset id ``deskbroker``: ``vf-eval deskbroker ...`` or
``vf.load_environment(vf.resolve_env_config({"taskset": {"id": "deskbroker", ...}}))``.

- :class:`DeskbrokerTaskset` (``--env.taskset.*``: ``split``, ``tasks``, ``corpus_version``;
  ``--env.taskset.task.*``: the broker's ``socket``/``url`` and TLS files, ``deskbroker_bin``,
  ``corpus``, ``gold``, ``profile``, ``artifacts_dir``): one :class:`DeskbrokerTask` per task of
  the corpus ``deskbroker bench run`` plays, its ``corpus_version`` in every task's data.
- :class:`DeskbrokerTask`: ``setup`` leases a session in the task's app profile and resets it;
  ``finalize`` checkpoints, scores the drawing with ``deskbroker bench score`` and releases;
  reward ``cad_score`` (that score), metrics ``refused_actions`` and ``rejected_batches``.
  The rollout's record (no secret) is the trace's ``state.deskbroker`` and, saved with the
  trace, ``info["deskbroker"]`` (status, turns, actions used, refusals, the scorer's report,
  ``corpus_version``).
- :class:`DeskbrokerHarness` (the taskset's default harness): the agent loop, in process. Every
  model call goes through the rollout's interception endpoint (chat completions) with one tool,
  ``computer_action(actions)``; each call's batch runs under the benchmark's rule
  (:func:`deskbroker._cad_env.run_batch`): its tool message is the delivery (``input_injected``,
  ``rejected`` or ``refused``, with the refused item's code and reason), followed by a user
  message with the screenshot (chat tool messages carry text only). A refused action is
  counted and the run continues; any other broker failure ends the rollout (failed closed,
  reward 0). The loop ends on ``done``, an answer without a tool call, ``max_turns``, the
  action or wall-time budget, a framework limit or ``@stop``.
- :class:`DeskbrokerEnv`: the single-agent env with the subprocess runtime by default (the
  desktop is the broker's; the harness runs no code of the model's).

The lease token lives only in this process's :class:`~deskbroker.Client`; a harness failure
still releases the session (:meth:`DeskbrokerHarness.cleanup`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field

from . import _cad_env as cad
from ._versions import verifiers_installed, verifiers_is_v1

if not verifiers_is_v1():
    raise ImportError(
        "deskbroker.verifiers_v1 is the Verifiers 0.4 taskset (>=0.4,<0.5); found verifiers "
        f"{verifiers_installed() or 'none'}: under verifiers 0.3 use "
        "deskbroker.verifiers_env (deskbroker.load_environment picks the one that fits)")

import verifiers.v1 as vf  # noqa: E402

from ._cad_env import check_batch, resolve_deskbroker_bin  # noqa: E402
from .client import Client, DeskbrokerError  # noqa: E402
from .types import Screenshot  # noqa: E402

__all__ = ["DeskbrokerEnv", "DeskbrokerHarness", "DeskbrokerTask", "DeskbrokerTaskset",
           "check_batch", "load_environment", "resolve_deskbroker_bin"]

COMPUTER_ACTION = {
    "type": "function",
    "function": {
        "name": "computer_action",
        "description": ("Run an ordered batch of desktop actions open loop; answers the "
                        "aggregate delivery and the final screenshot."),
        "parameters": {
            "type": "object",
            "properties": {"actions": {
                "type": "array", "description": 'the ordered batch, each {"type": ..., '
                                                '"intent": ..., ...}',
                "items": {"type": "object"}}},
            "required": ["actions"],
        },
    },
}


@dataclass
class _Live:
    """A rollout's session while it runs, by trace id (process-local, never serialized)."""

    broker: Client
    desk: dict[str, Any]
    handoff: Screenshot
    corpus: Path
    info: dict[str, Any]


_LIVE: dict[str, _Live] = {}


def _record(trace: vf.Trace, desk: dict[str, Any]) -> None:
    """The rollout's record on the trace: ``state.deskbroker`` (live) and
    ``info["deskbroker"]`` (saved with the trace in ``traces.jsonl``; the state is not)."""
    trace.state.deskbroker = dict(desk)
    trace.info["deskbroker"] = {k: v for k, v in desk.items() if k != "deadline"}


class DeskbrokerTaskConfig(vf.TaskConfig):
    """``--env.taskset.task.*``: where the broker is and how to score."""

    socket: str | None = None
    """The broker's socket (default: :func:`deskbroker.default_socket`)."""
    url: str | None = None
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    deskbroker_bin: str | None = None
    """The binary that writes the corpus and scores (default ``$DESKBROKER_BIN``, ``PATH``)."""
    corpus: str | None = None
    """A public corpus on disk (default: the one the binary writes, ``bench run``'s)."""
    gold: str | None = None
    """Passed only to the scorer."""
    profile: str | None = None
    """Overrides each task's app profile."""
    artifacts_dir: str | None = None
    """Keeps each retrieved drawing as ``{rollout_id}.dxf`` (or ``.FCStd``)."""


class DeskbrokerTaskData(vf.TaskData):
    task_id: str
    drawing_type: str
    reference_image: str
    max_actions: int
    level: Any = None
    profile: str | None = None
    corpus_version: str


class DeskbrokerState(vf.State):
    deskbroker: dict[str, Any] = Field(default_factory=dict)
    """The rollout's record: session id, turns, actions used, refusals, status, score."""


class DeskbrokerTask(vf.Task[DeskbrokerTaskData, DeskbrokerState, DeskbrokerTaskConfig]):
    """One CAD task on a leased desktop; see the module documentation."""

    @property
    def key(self) -> str:
        return f"{self.data.corpus_version}/{self.data.task_id}"

    def _corpus(self) -> Path:
        if self.config.corpus is None:
            raise DeskbrokerError("the task has no corpus (tasks come from DeskbrokerTaskset)")
        return Path(self.config.corpus)

    async def setup(self, trace: vf.Trace) -> None:
        cfg = self.config
        broker = Client(cfg.socket, url=cfg.url, ca=cfg.ca, cert=cfg.cert, key=cfg.key)
        info = self.data.model_dump()
        try:
            desk, shot = await cad.open_session(broker, info, trace.id[:12], cfg.profile)
        except cad.SetupFailed as error:
            desk = error.desk  # type: ignore[attr-defined]
            try:
                await cad.close_session(broker, desk, self.data.task_id, ended="setup_failed",
                                        **self._scoring())
            finally:
                _record(trace, desk)
                await broker.aclose()
            raise
        except BaseException:
            await broker.aclose()
            raise
        _record(trace, desk)
        _LIVE[trace.id] = _Live(broker, desk, shot, self._corpus(), info)

    def _scoring(self) -> dict[str, Any]:
        cfg = self.config
        return {"deskbroker_bin": resolve_deskbroker_bin(cfg.deskbroker_bin),
                "corpus": self._corpus(), "gold": Path(cfg.gold) if cfg.gold else None,
                "artifacts_dir": Path(cfg.artifacts_dir) if cfg.artifacts_dir else None}

    async def finalize(self, trace: vf.Trace) -> None:
        live = _LIVE.pop(trace.id, None)
        if live is None:
            return
        try:
            ended = "no_tool_call" if trace.stop_condition is None else str(trace.stop_condition)
            await cad.close_session(live.broker, live.desk, self.data.task_id, ended=ended,
                                    **self._scoring())
        finally:
            _record(trace, live.desk)
            await live.broker.aclose()

    @vf.reward
    async def cad_score(self, trace: vf.Trace) -> float:
        """The broker-side scorer's score of the saved drawing (0 without one)."""
        return cad.reward(trace.state.deskbroker)

    @vf.metric
    async def refused_actions(self, trace: vf.Trace) -> float:
        """Actions the broker refused mid-batch, returned to the model."""
        return float(trace.state.deskbroker.get("n_refused_actions", 0))

    @vf.metric
    async def rejected_batches(self, trace: vf.Trace) -> float:
        """Batches refused whole before any input."""
        return float(trace.state.deskbroker.get("n_rejected_batches", 0))


class DeskbrokerTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``."""

    split: str = "dev"
    """``dev``, ``eval`` or ``all``."""
    tasks: list[str] | None = None
    """Task ids instead of a split."""
    corpus_version: str | None = None
    """Another corpus than the binary's default (e.g. ``v1``)."""
    task: DeskbrokerTaskConfig = DeskbrokerTaskConfig()


class DeskbrokerTaskset(vf.Taskset[DeskbrokerTask, DeskbrokerTasksetConfig]):
    """The tasks of the corpus ``deskbroker bench run`` plays, resolved when the taskset is
    made (a missing binary or an unknown corpus fails at once, naming what was tried)."""

    def __init__(self, config: DeskbrokerTasksetConfig) -> None:
        super().__init__(config)
        self.deskbroker_bin = resolve_deskbroker_bin(config.task.deskbroker_bin)
        self.corpus, self.corpus_version = cad.load_corpus(
            self.deskbroker_bin, config.task.corpus, config.corpus_version)
        self.rows = cad.task_rows(self.corpus, self.corpus_version, config.split, config.tasks)

    def load(self) -> Iterator[DeskbrokerTask]:
        task_config = self.config.task.model_copy(
            update={"deskbroker_bin": self.deskbroker_bin, "corpus": str(self.corpus)})
        for row in self.rows:
            yield DeskbrokerTask(DeskbrokerTaskData(
                id=row["task_id"], name=row["task_id"], system_prompt=cad.SYSTEM_PROMPT,
                **row), task_config)


class DeskbrokerHarnessConfig(vf.HarnessConfig):
    id: str = "deskbroker"
    max_turns: int = Field(200, ge=1)
    """Model turns at most (the framework's ``--env.agent.max-turns`` also applies)."""


def _tool_message(call_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content[0]["text"]}


def _screen_message(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user",
            "content": [{"type": "text", "text": "The screen after the batch:"}, content[1]]}


class DeskbrokerHarness(vf.Harness[DeskbrokerHarnessConfig]):
    """The ``computer_action`` agent loop, in process; see the module documentation."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime,
                     endpoint: str, secret: str, mcp_urls: dict[str, str],
                     data: vf.TaskData, tool_interception_url: str | None = None,
                     ) -> vf.ProgramResult:
        live = _LIVE.get(trace.id)
        if live is None:
            return vf.ProgramResult(2, "", "the deskbroker harness plays deskbroker tasks only "
                                           "(no session was leased for this rollout)")
        desk, broker = live.desk, live.broker
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        messages.append({"role": "user", "content": cad.handoff_parts(
            live.corpus, live.info, live.handoff)})
        async with httpx.AsyncClient(timeout=None) as http:
            for _ in range(self.config.max_turns):
                if cad.out_of_time(desk):
                    break
                reply = await http.post(
                    f"{endpoint.rstrip('/')}/chat/completions",
                    json={"model": ctx.model, "messages": messages, "tools": [COMPUTER_ACTION]},
                    headers={"Authorization": f"Bearer {secret}"})
                if reply.status_code != 200:
                    if trace.stop_condition is not None:  # a limit or @stop refused the turn
                        break
                    return vf.ProgramResult(1, "", f"model call failed ({reply.status_code}): "
                                                   f"{reply.text[-500:]}")
                message = reply.json()["choices"][0]["message"]
                calls = message.get("tool_calls") or []
                messages.append({"role": "assistant", "content": message.get("content"),
                                 **({"tool_calls": calls} if calls else {})})
                if not calls:
                    break
                try:
                    answers = await self._turn(broker, desk, calls)
                except DeskbrokerError as error:
                    if desk["status"] is None:
                        desk["status"] = "failed_closed"
                        desk["status_detail"] = str(error)
                    break
                messages.extend(_tool_message(call_id, content) for call_id, content in answers)
                messages.append(_screen_message(answers[-1][1]))
                if desk["status"] is not None:
                    break
        return vf.ProgramResult(0, "", "")

    async def _turn(self, broker: Client, desk: dict[str, Any],
                    calls: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
        """Each call's answer: one ``computer_action`` call runs its batch; anything else runs
        nothing (``rejected``)."""
        if len(calls) == 1 and calls[0].get("function", {}).get("name") == "computer_action":
            try:
                arguments = json.loads(calls[0]["function"].get("arguments") or "{}")
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                content = await cad.reject_turn(broker, desk, "the arguments are not a JSON object")
            else:
                content = await cad.run_batch(broker, desk, arguments.get("actions"))
            return [(calls[0]["id"], content)]
        content = await cad.reject_turn(broker, desk, cad.ONE_CALL)
        return [(call["id"], content) for call in calls]

    async def cleanup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """Releases a session the task's ``finalize`` did not (the rollout failed first)."""
        live = _LIVE.pop(trace.id, None)
        if live is None:
            return
        try:
            if live.desk["status"] is None:
                live.desk["status"] = "agent_failed"
            live.desk["released"] = (
                await live.broker.release(live.desk["session_id"]))["state"] == "released"
        finally:
            _record(trace, live.desk)
            await live.broker.aclose()


class DeskbrokerEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The one seat; the subprocess runtime by default (the harness runs in process)."""


class DeskbrokerEnv(vf.Env[DeskbrokerEnvConfig]):
    """The single-agent env for deskbroker tasks (``--env.agent.*``)."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)


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
) -> DeskbrokerEnv:
    """The 0.4 env with the arguments of :func:`deskbroker.verifiers_env.load_environment`:
    ``vf.load_environment`` of the config they make (taskset ``deskbroker``)."""
    task = {"socket": socket, "url": url, "ca": ca, "cert": cert, "key": key,
            "deskbroker_bin": deskbroker_bin, "corpus": corpus, "gold": gold,
            "profile": profile, "artifacts_dir": artifacts_dir}
    config = vf.resolve_env_config({
        "taskset": {"id": "deskbroker", "split": split, "tasks": tasks,
                    "corpus_version": corpus_version, "task": task},
        "agent": {"harness": {"id": "deskbroker", "max_turns": max_turns}},
    })
    env = vf.load_environment(config)
    if not isinstance(env, DeskbrokerEnv):
        raise DeskbrokerError(f"taskset deskbroker resolved to {type(env).__name__}")
    return env
