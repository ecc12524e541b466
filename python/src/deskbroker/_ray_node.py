"""The node side of :mod:`deskbroker.ray`: the per-node broker actor and its handles (split
out to keep each file short; import everything from :mod:`deskbroker.ray`)."""

from __future__ import annotations

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .client import DeskbrokerError

RESOURCE = "deskbroker_desktops"


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
