"""deskbroker on a Ray cluster: one broker per node, benchmark rollouts where capacity is, and an
RL rollout pool. Needs the ``ray`` extra and the ``deskbroker`` binary on every node.

- :class:`NodeBroker` is a Ray actor pinned to one node (``NodeAffinitySchedulingStrategy``,
  not soft). It starts ``deskbroker serve`` with its own state directory and socket under a
  private root on that node, through a guardian process (``deskbroker._guard``) that stops the
  broker, the node's rollouts and their desktops when the actor goes away, shut down or killed.
  Its capacity (desktops it may run at once) is the node's ``deskbroker_desktops`` resource.
- :func:`start_brokers` starts one per node that has that resource; :func:`stop_brokers`.
- :func:`run_benchmark` spreads benchmark rollouts (one task each, ``deskbroker bench run`` on
  the node) over the brokers' free slots. A rollout whose node died, or whose process failed, is
  an infrastructure failure: recorded, and rerun elsewhere at most ``max_reruns`` times.
- :class:`RolloutPool` leases a desktop on a node with a free slot and hands a
  :class:`deskbroker.DeskbrokerComputer` bound to that node's broker to a rollout function run
  there as a Ray task (``submit``), or to the caller on the broker's host (``computer``);
  released when done.

The broker and the harness own every rule; this module only places work and keeps counts.
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import subprocess
import tarfile
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ._ray_node import (
    RESOURCE,
    Broker,
    BrokerConfig,
    NodeBroker,
    NodeInfo,
    _acquire,
    start_brokers,
    stop_brokers,
)
from .client import Client, DeskbrokerError
from .computer import DeskbrokerComputer

__all__ = ["RESOURCE", "Broker", "BrokerConfig", "BrokerUnreachable", "NodeBroker", "NodeInfo",
           "PoolExhausted", "RolloutPool", "run_benchmark", "start_brokers", "stop_brokers"]


class PoolExhausted(DeskbrokerError):
    """Every live node's desktops are in use."""


class BrokerUnreachable(DeskbrokerError):
    """The broker's Unix socket is on another host than the caller."""


def _plain(name: str) -> bool:
    return name not in ("", ".", "..") and all(c.isascii() and (c.isalnum() or c in "_.-")
                                               for c in name)


@dataclass
class RolloutRow:
    """One try of one task: where it ran, how long, and how it ended."""

    task_id: str
    attempt_id: str
    node_id: str
    outcome: str  # "completed", or an infrastructure failure: "node_lost", "process_failed"
    seconds: float
    detail: str = ""
    summary_row: dict[str, Any] = field(default_factory=dict)


def run_benchmark(brokers: Sequence[Broker], tasks: Sequence[str], out: str | Path, *,
                  run_id: str, bench_args: Sequence[str] = (), max_reruns: int = 2,
                  deskbroker_bin: str = "deskbroker") -> dict[str, Any]:
    """Runs each task once across the brokers, where a slot is free; writes each completed
    task's out directory to ``OUT/tasks/<task>/``, merges them with ``deskbroker bench merge``
    into ``OUT/merged/``, and writes the fleet record to ``OUT/fleet.json`` (also answered):
    every try, the infrastructure failures and reruns, the merge, the times."""
    if any(b.info.gold is None for b in brokers):
        raise DeskbrokerError("a benchmark needs brokers started with BrokerConfig(gold=...): "
                              "the gold must be hidden from every desktop")
    if max_reruns < 0:
        raise DeskbrokerError("max_reruns must be >= 0")
    for name in (run_id, *tasks):
        if not _plain(name):
            raise DeskbrokerError(f"{name!r} is not a plain id ([A-Za-z0-9_.-], not . or ..)")
    if len(set(tasks)) != len(tasks):
        raise DeskbrokerError("a task is named twice: each task runs once per benchmark")
    out = Path(out)
    started = time.monotonic()
    queue: deque[tuple[str, int]] = deque((task, 0) for task in tasks)
    running: dict[Any, tuple[Broker, str, str, float]] = {}
    rows: list[RolloutRow] = []
    while queue or running:
        while queue:
            broker = _acquire(brokers)
            if broker is None:
                break
            task, tries = queue.popleft()
            attempt = f"{run_id}-r{tries}"
            ref = broker.actor.run_rollout.remote(task, attempt, list(bench_args))
            running[ref] = (broker, task, attempt, time.monotonic())
        if not running:
            for task, tries in queue:  # no live node left
                rows.append(RolloutRow(task, f"{run_id}-r{tries}", "", "node_lost", 0.0,
                                       "no live node with a free desktop"))
            break
        (ref,), _ = ray.wait(list(running), num_returns=1)
        broker, task, attempt, submitted = running.pop(ref)
        tries = int(attempt.rsplit("-r", 1)[1])
        try:
            result = ray.get(ref)
        except RayActorError as error:
            broker.alive = False
            row = RolloutRow(task, attempt, broker.info.node_id, "node_lost",
                             time.monotonic() - submitted, type(error).__name__)
        except RayTaskError as error:
            row = RolloutRow(task, attempt, broker.info.node_id, "process_failed",
                             time.monotonic() - submitted, str(error.cause)[:500])
        else:
            summary = result["summary"] or {}
            done = result["exit_code"] == 0 and len(summary.get("rollouts", [])) == 1
            row = RolloutRow(task, attempt, broker.info.node_id,
                             "completed" if done else "process_failed", result["seconds"],
                             "" if done else f"bench run exited {result['exit_code']}",
                             summary["rollouts"][0] if done else {})
            if done:
                target = out / "tasks" / task
                target.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=io.BytesIO(result["archive"]), mode="r:gz") as tar:
                    tar.extractall(target, filter="data")
        rows.append(row)
        if row.outcome != "completed" and tries < max_reruns:
            queue.append((task, tries + 1))
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "run_id": run_id,
        "nodes": [asdict(b.info) | {"alive": b.alive} for b in brokers],
        "tries": [asdict(r) for r in rows],
        "n_tasks": len(tasks),
        "n_completed": sum(r.outcome == "completed" for r in rows),
        "n_infra_failures": sum(r.outcome != "completed" for r in rows),
        "n_reruns": sum(int(r.attempt_id.rsplit("-r", 1)[1]) > 0 for r in rows),
        "merge": _merge(deskbroker_bin, out, [r.task_id for r in rows
                                              if r.outcome == "completed"]),
        "total_s": time.monotonic() - started,
    }
    (out / "fleet.json").write_text(json.dumps(record, indent=2))
    return record


def _merge(deskbroker_bin: str, out: Path, completed: list[str]) -> dict[str, Any]:
    """``deskbroker bench merge`` of the completed tasks into ``OUT/merged``; a refusal is
    recorded (the per-task results stay), not raised."""
    if not completed:
        return {"out": None, "exit_code": None, "detail": "no task completed"}
    merged = out / "merged"
    answer = subprocess.run(
        [deskbroker_bin, "bench", "merge", *(str(out / "tasks" / t) for t in sorted(completed)),
         "--out", str(merged)], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return {"out": str(merged), "exit_code": answer.returncode,
            "detail": answer.stderr[-2000:] if answer.returncode else ""}


@asynccontextmanager
async def _leased(info: NodeInfo, task_id: str, attempt_id: str,
                  profile: str | None) -> AsyncIterator[DeskbrokerComputer]:
    async with Client(socket=info.socket) as client:
        pc = await DeskbrokerComputer.create(client, task_id=task_id, attempt_id=attempt_id,
                                             profile=profile)
        async with pc:
            yield pc


def _play_on_node(rollout: Callable[[DeskbrokerComputer, NodeInfo], Awaitable[Any]],
                  actor: Any, info: NodeInfo, task_id: str, attempt_id: str,
                  profile: str | None) -> Any:
    """The body of :meth:`RolloutPool.submit`'s Ray task, on the desktop's node."""

    async def play() -> Any:
        async with _leased(info, task_id, attempt_id, profile) as pc:
            return await rollout(pc, info)

    try:
        return asyncio.run(play())
    finally:
        actor.free_slot.remote()


class RolloutPool:
    """Desktops for RL rollouts across the brokers, one slot each, released when done.

    The brokers listen on Unix sockets on their nodes. :meth:`submit` runs a rollout function
    as a Ray task on a node with a free slot (anywhere in the cluster); :meth:`computer` leases
    on a broker of the caller's own host and yields the computer in place.
    """

    def __init__(self, brokers: Sequence[Broker]) -> None:
        self._brokers = list(brokers)
        self._host = socket.gethostname()

    @staticmethod
    def scheduling_strategy(broker: Broker) -> NodeAffinitySchedulingStrategy:
        return NodeAffinitySchedulingStrategy(node_id=broker.info.node_id, soft=False)

    def submit(self, rollout: Callable[[DeskbrokerComputer, NodeInfo], Awaitable[Any]],
               task_id: str, attempt_id: str, profile: str | None = None) -> Any:
        """Takes a free slot and answers the ``ObjectRef`` of a Ray task, pinned to that node
        and not retried, that leases and resets a desktop there, answers
        ``await rollout(computer, node_info)``, then releases it and frees the slot. A lost
        node surfaces as Ray's error from ``ray.get``."""
        broker = _acquire(self._brokers)
        if broker is None:
            raise PoolExhausted("every desktop of the live brokers is in use")
        task = _PLAY.options(num_cpus=0, max_retries=0,  # type: ignore[attr-defined]
                             scheduling_strategy=self.scheduling_strategy(broker))
        return task.remote(rollout, broker.actor, broker.info, task_id, attempt_id, profile)

    @asynccontextmanager
    async def computer(self, task_id: str, attempt_id: str, profile: str | None = None,
                       ) -> AsyncIterator[tuple[DeskbrokerComputer, NodeInfo]]:
        """Leases on a broker of this host with a free slot; yields the computer and its node."""
        broker = _acquire([b for b in self._brokers if b.info.host == self._host])
        if broker is None:
            if not any(b.alive and b.info.host == self._host for b in self._brokers):
                raise BrokerUnreachable(f"no live broker on host {self._host}")
            raise PoolExhausted("every desktop of the live brokers on this host is in use")
        try:
            async with _leased(broker.info, task_id, attempt_id, profile) as pc:
                yield pc, broker.info
        finally:
            try:
                broker.actor.free_slot.remote()
            except RayActorError:
                broker.alive = False


_PLAY = ray.remote(_play_on_node)
