"""The CAD benchmark as a Verifiers 0.3 environment (``StatefulToolEnv``), ``load_environment()``.
Verifiers 0.4 (``verifiers.v1``): :mod:`deskbroker.verifiers_v1`. What both share (the tasks, the
batch rule, refusals, scoring): :mod:`deskbroker._cad_env`.

Per rollout: ``setup_state`` leases a session in the task's app profile (LibreCAD for 2D, FreeCAD
for 3D) and resets it; the reference drawing and the handoff screenshot are appended to the
prompt. Each turn the model makes exactly one ``computer_action`` call holding a non-empty
ordered batch; the tool result is the delivery (text) and the screenshot (an image), a refused
batch runs nothing (``rejected``), an item the broker refuses goes back as ``refused`` and is
counted (``n_refused_actions``, metric ``refused_actions``), any other broker failure fails the
rollout closed (``vf.ToolCallError``). The rollout ends on ``done``, an answer without a tool
call, the action or wall-time budget, or failed closed. Cleanup checkpoints, scores the drawing
with the broker-side scorer and always releases the session; the reward is that score.
"""

from pathlib import Path
from typing import Any

import verifiers as vf

if not hasattr(vf, "StatefulToolEnv"):  # 0.4's root exports nothing; its stack is verifiers.v1
    raise ImportError(
        f"deskbroker.verifiers_env is the Verifiers 0.3 environment (>=0.3.1,<0.4); found "
        f"{getattr(vf, '__version__', 'an unknown version')}, which has no StatefulToolEnv: "
        "under verifiers 0.4 use deskbroker.verifiers_v1 (deskbroker.load_environment picks it)")

from datasets import Dataset  # noqa: E402

from . import _cad_env as cad  # noqa: E402
from ._cad_env import Action, check_batch, resolve_deskbroker_bin  # noqa: E402
from .client import Client  # noqa: E402

__all__ = ["load_environment", "DeskbrokerCadEnv", "check_batch", "resolve_deskbroker_bin"]


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
        try:
            return await cad.run_batch(self.broker, state["deskbroker"], actions)
        except cad.FailedClosed as error:
            raise vf.ToolCallError(str(error)) from None

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
        content = await cad.reject_turn(self.broker, state["deskbroker"], cad.ONE_CALL)
        return [vf.ToolMessage(tool_call_id=call.id, content=content) for call in calls]

    async def setup_state(self, state: Any) -> Any:
        info = state["info"]
        try:
            desk, shot = await cad.open_session(self.broker, info, state["trajectory_id"][:12],
                                                self.profile)
        except cad.SetupFailed as error:
            state["deskbroker"] = error.desk  # type: ignore[attr-defined]
            raise vf.InfraError(str(error)) from None
        state["deskbroker"] = desk
        state["prompt"].append(vf.UserMessage(content=cad.handoff_parts(self.corpus, info, shot)))
        return state

    @vf.stop
    async def rollout_ended(self, state: Any) -> bool:
        desk = state.get("deskbroker")
        return desk is not None and cad.out_of_time(desk)

    @vf.cleanup
    async def score_and_release(self, state: Any) -> None:
        desk = state.get("deskbroker")
        if desk is None:
            return
        ended = "no_tool_call" if state.get("error") is None else "agent_failed"
        await cad.close_session(self.broker, desk, state["info"]["task_id"],
                                deskbroker_bin=self.deskbroker_bin, corpus=self.corpus,
                                gold=self.gold, artifacts_dir=self.artifacts_dir, ended=ended)


async def cad_score(state: Any) -> float:
    """The reward: the broker-side scorer's score of the saved drawing (0 without one)."""
    return cad.reward(state.get("deskbroker"))


async def refused_actions(state: Any) -> float:
    """A metric (weight 0): actions the broker refused mid-batch, returned to the model."""
    return float((state.get("deskbroker") or {}).get("n_refused_actions", 0))


async def rejected_batches(state: Any) -> float:
    """A metric (weight 0): batches refused whole before any input."""
    return float((state.get("deskbroker") or {}).get("n_rejected_batches", 0))


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
    public, version = cad.load_corpus(deskbroker_bin, corpus, corpus_version)
    rows = [{"prompt": [{"role": "user", "content": row.pop("prompt")}], "info": row}
            for row in cad.task_rows(public, version, split, tasks)]
    client = Client(socket, url=url, ca=ca, cert=cert, key=key)
    return DeskbrokerCadEnv(
        client, deskbroker_bin, public, Path(gold) if gold else None, profile,
        Path(artifacts_dir) if artifacts_dir else None,
        eval_dataset=Dataset.from_list(rows), system_prompt=cad.SYSTEM_PROMPT,
        rubric=vf.Rubric(funcs=[cad_score, refused_actions, rejected_batches],
                         weights=[1.0, 0.0, 0.0]),
        max_turns=max_turns, **kwargs,
    )
