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
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
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

from .client import Client, DeskbrokerError
from .computer import DeskbrokerComputer

__all__ = ["BrokerConfig", "NodeBroker", "NodeInfo", "PoolExhausted", "RolloutPool",
           "BrokerUnreachable", "run_benchmark", "start_brokers", "stop_brokers"]

RESOURCE = "deskbroker_desktops"


class PoolExhausted(DeskbrokerError):
    """Every live node's desktops are in use."""


class BrokerUnreachable(DeskbrokerError):
    """The broker's Unix socket is on another host than the caller."""


@dataclass(frozen=True)
class BrokerConfig:
    """How each node's broker runs. ``extra_serve_args`` go to ``deskbroker serve`` as given
    (e.g. ``["--display", "1280x800"]``); ``private_paths`` to its ``--private-path``.
    ``corpus`` and ``gold`` are the benchmark's public and scorer-private directories on every
    node (``deskbroker bench corpus --out CORPUS --gold-out GOLD``): the broker hides the gold
    from its desktops (``--private-path``) and each rollout scores with it; a benchmark needs
    ``gold``."""

    deskbroker_bin: str = "deskbroker"
    profiles: str | None = None
    default_profile: str | None = None
    private_paths: tuple[str, ...] = ()
    corpus: str | None = None
    gold: str | None = None
    extra_serve_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # added to the broker's environment
    # A short parent directory: a session's worker socket path must fit in 107 bytes.
    work_parent: str = "/tmp"


@dataclass(frozen=True)
class NodeInfo:
    """What a :class:`NodeBroker` reports: its Ray node, host, socket and private root, its
    capacity (desktops at once) and how long its broker took to start."""

    node_id: str
    host: str
    socket: str
    root: str
    capacity: int
    start_s: float
    gold: str | None  # the scorer-private directory its broker hides, if any


class NodeBroker:
    """One node's broker (use through :func:`start_brokers`). A threaded actor: its rollouts
    run at once, each in its own process group registered with the guardian."""

    def __init__(self, config: BrokerConfig, capacity: int) -> None:
        started = time.monotonic()
        self._config = config
        self._lock = threading.Lock()
        self._free = capacity
        self._rollouts = 0
        root = Path(tempfile.mkdtemp(prefix="dbk-ray-", dir=config.work_parent))
        sock = root / "broker.sock"
        argv = [config.deskbroker_bin, "serve", "--socket", str(sock),
                "--state-dir", str(root / "state"), "--log", "warn"]
        if config.profiles:
            argv += ["--profiles", config.profiles]
        if config.default_profile:
            argv += ["--default-profile", config.default_profile]
        for path in (*config.private_paths, *([config.gold] if config.gold else [])):
            argv += ["--private-path", path]
        argv += list(config.extra_serve_args)
        guard_log = os.open(root / "guard.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            self._guard = subprocess.Popen(
                [sys.executable, "-m", "deskbroker._guard", str(root), "--", *argv],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=guard_log,
                env={**os.environ, **dict(config.env)})
        finally:
            os.close(guard_log)
        if self._guard.stdout is None:
            raise DeskbrokerError("the guardian has no stdout pipe")
        first = self._guard.stdout.readline().decode().split()
        broker_pid = int(first[1]) if len(first) == 2 and first[1].isdigit() else 0
        deadline = time.monotonic() + 30
        while not sock.exists():
            if not Path(f"/proc/{broker_pid}").exists() or time.monotonic() > deadline:
                log = (root / "broker.log").read_text(errors="replace")[-2000:]
                raise DeskbrokerError(f"broker on this node did not start: {log}")
            time.sleep(0.02)
        self._info = NodeInfo(ray.get_runtime_context().get_node_id(), socket.gethostname(),
                              str(sock), str(root), capacity, time.monotonic() - started,
                              config.gold)

    def info(self) -> NodeInfo:
        return self._info

    def try_acquire(self) -> bool:
        """Takes one desktop slot if one is free."""
        with self._lock:
            if self._free <= 0:
                return False
            self._free -= 1
            return True

    def free_slot(self) -> None:
        with self._lock:
            self._free = min(self._free + 1, self._info.capacity)

    def _tell_guard(self, line: str) -> None:
        with self._lock:
            if self._guard.stdin is not None:
                self._guard.stdin.write(f"{line}\n".encode())
                self._guard.stdin.flush()

    def run_rollout(self, task_id: str, attempt_id: str,
                    bench_args: Sequence[str]) -> dict[str, Any]:
        """Runs one task with ``deskbroker bench run --broker-socket`` against this node's
        broker, in a slot the caller took with :meth:`try_acquire` (freed here). Answers the
        exit status, the time, the ``summary.json`` and the out directory as a tar archive."""
        started = time.monotonic()
        with self._lock:
            self._rollouts += 1
            n = self._rollouts
        root = Path(self._info.root)
        out = root / f"o{n}"
        argv = [self._config.deskbroker_bin, "bench", "run", "--task", task_id,
                "--attempt-id", attempt_id, "--out", str(out), "--log", "warn",
                "--broker-socket", self._info.socket]
        if self._config.corpus:
            argv += ["--corpus", self._config.corpus]
        if self._config.gold:
            argv += ["--gold", self._config.gold]
        argv += list(bench_args)
        try:
            with open(root / f"bench-{n}.log", "wb") as log:
                process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                           stderr=log, start_new_session=True)
                self._tell_guard(f"child {process.pid}")
                code = process.wait()
                self._tell_guard(f"done {process.pid}")
            summary = None
            if (out / "summary.json").exists():
                summary = json.loads((out / "summary.json").read_text())
            archive = io.BytesIO()
            if out.exists():
                with tarfile.open(fileobj=archive, mode="w:gz") as tar:
                    tar.add(out, arcname=".")
            return {"exit_code": code, "seconds": time.monotonic() - started,
                    "summary": summary, "archive": archive.getvalue()}
        finally:
            self.free_slot()

    def shutdown(self) -> None:
        """Stops the node's rollouts, broker and desktops (the guardian does it) and waits."""
        with self._lock:
            if self._guard.stdin is not None:
                self._guard.stdin.close()
                self._guard.stdin = None
        if self._guard.stdout is not None:
            self._guard.stdout.read()  # at its end the guardian has stopped everything


@dataclass
class Broker:
    """The driver's handle on one node's broker."""

    actor: Any
    info: NodeInfo
    alive: bool = True


def start_brokers(config: BrokerConfig = BrokerConfig()) -> list[Broker]:
    """Starts a :class:`NodeBroker` on every live node with the ``deskbroker_desktops`` resource,
    its capacity that resource's amount; answers when all brokers listen."""
    actor_class = ray.remote(NodeBroker)
    pending: list[Any] = []
    for node in ray.nodes():
        capacity = int(node.get("Resources", {}).get(RESOURCE, 0))
        if not node.get("Alive") or capacity <= 0:
            continue
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        pending.append(actor_class.options(  # type: ignore[attr-defined]
            num_cpus=0, max_concurrency=capacity + 4, max_restarts=0,
            scheduling_strategy=strategy).remote(config, capacity))
    infos = ray.get([actor.info.remote() for actor in pending])
    return [Broker(actor, info) for actor, info in zip(pending, infos)]


def stop_brokers(brokers: Sequence[Broker]) -> None:
    """Shuts down each live broker (its desktops stop with it)."""
    for broker in brokers:
        if broker.alive:
            try:
                ray.get(broker.actor.shutdown.remote())
            except RayActorError:
                pass
            broker.alive = False


def _acquire(brokers: Sequence[Broker]) -> Broker | None:
    for broker in brokers:
        if broker.alive:
            try:
                if ray.get(broker.actor.try_acquire.remote()):
                    return broker
            except RayActorError:
                broker.alive = False
    return None


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
