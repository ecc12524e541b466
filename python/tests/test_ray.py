"""`deskbroker.ray` on a local two-node Ray cluster (`ray.cluster_utils.Cluster`, each node with one
`deskbroker_desktops`), real brokers on real Xvfb: the rollout pool over the probe window, and a
benchmark split (LibreCAD, the oracle) whose first node's actor is killed mid-rollout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from deskbroker import DeskbrokerComputer, DeskbrokerError
from deskbroker.ray import (
    RESOURCE,
    Broker,
    BrokerConfig,
    NodeInfo,
    PoolExhausted,
    RolloutPool,
    run_benchmark,
    start_brokers,
    stop_brokers,
)

from .conftest import binary, require_xvfb, write_probe_profile


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n[ray] {line}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[float]:
    """Answers the seconds the cluster took to start."""
    require_xvfb()
    started = time.monotonic()
    nodes = Cluster(initialize_head=True,
                    head_node_args={"num_cpus": 1, "resources": {RESOURCE: 1}})
    nodes.add_node(num_cpus=1, resources={RESOURCE: 1})
    nodes.wait_for_nodes()
    ray.init(address=nodes.address, log_to_driver=False)
    yield time.monotonic() - started
    ray.shutdown()
    nodes.shutdown()


def presses(probe_log: Path) -> list[tuple[int, int]]:
    """The button presses both probe windows recorded, sorted."""
    return sorted((e["root_x"], e["root_y"]) for line in probe_log.read_text().splitlines()
                  if (e := json.loads(line))["type"] == "button_press")


def remove_roots(brokers: list[Broker]) -> None:
    for broker in brokers:
        shutil.rmtree(broker.info.root, ignore_errors=True)


def desktop_pids(root: str) -> list[tuple[int, int]]:
    return [(p["pid"], p["start_ticks"])
            for record in Path(root).glob("**/sessions/*/processes.json")
            for p in json.loads(record.read_text())]


def alive(pid: int, ticks: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[19]) == ticks


def wait_dead(pids: list[tuple[int, int]], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while any(alive(*p) for p in pids):
        assert time.monotonic() < deadline, f"desktop processes still alive: {pids}"
        time.sleep(0.1)


async def test_pool_leases_where_capacity_is_and_a_killed_node_takes_its_desktop_along(
        cluster: float, capsys: pytest.CaptureFixture[str]) -> None:
    probe_root = Path(tempfile.mkdtemp(prefix="dbk-"))
    profiles, probe_log = write_probe_profile(probe_root)
    config = BrokerConfig(deskbroker_bin=str(binary("deskbroker")), profiles=str(profiles),
                          default_profile="probe", extra_serve_args=("--display", "1280x800"),
                          env=(("DESKBROKER_SANDBOX_WRITABLE", str(probe_log)),))
    started = time.monotonic()
    brokers = start_brokers(config)
    start_s = time.monotonic() - started
    try:
        assert len({b.info.node_id for b in brokers}) == 2
        assert [b.info.capacity for b in brokers] == [1, 1]
        with pytest.raises(DeskbrokerError, match="gold"):
            run_benchmark(brokers, ["task-004"], probe_root / "out", run_id="r")
        pool = RolloutPool(brokers)
        leased = time.monotonic()
        async with pool.computer("t1", "a1") as (pc1, node1):
            async with pool.computer("t2", "a1") as (pc2, node2):
                lease_s = time.monotonic() - leased
                assert node1.node_id != node2.node_id
                with pytest.raises(PoolExhausted):
                    async with pool.computer("t3", "a1"):
                        pass
                await pc1.click(101, 102)
                await pc2.click(203, 204)
        assert presses(probe_log) == [(101, 102), (203, 204)]

        async def rollout(pc: DeskbrokerComputer, node: NodeInfo) -> tuple[str, int]:
            await pc.click(150, 160)
            assert pc.last_response is not None
            return node.node_id, int(pc.last_response["action_index"])

        submitted = time.monotonic()
        refs = [pool.submit(rollout, f"s{i}", "a1") for i in range(2)]
        with pytest.raises(PoolExhausted):
            pool.submit(rollout, "s3", "a1")
        results = ray.get(refs)
        submit_s = time.monotonic() - submitted
        assert {n for n, _ in results} == {b.info.node_id for b in brokers}
        assert [i for _, i in results] == [0, 0]
        assert presses(probe_log) == [(101, 102), (150, 160), (150, 160), (203, 204)]
        # The slots came back: a lease on the released capacity, then the node's actor is
        # killed under it; its guardian stops the broker and the desktop.
        with pytest.raises(DeskbrokerError):
            async with pool.computer("t4", "a1") as (pc, node):
                pids = desktop_pids(node.root)
                assert pids and all(alive(*p) for p in pids)
                killed = time.monotonic()
                (victim,) = [b for b in brokers if b.info.node_id == node.node_id]
                ray.kill(victim.actor)
                wait_dead(pids)
                reaped_s = time.monotonic() - killed
                # The release on exit finds no broker: a typed error, raised below.
        async with pool.computer("t5", "a1") as (pc, other):
            assert other.node_id != node.node_id
        report(capsys, f"cluster start {cluster:.1f} s; 2 brokers {start_s:.1f} s; two leases "
               f"with reset {lease_s:.1f} s; two submitted rollouts {submit_s:.1f} s; killed "
               f"node's desktop gone after {reaped_s:.1f} s")
    finally:
        stop_brokers(brokers)
        remove_roots(brokers)
        shutil.rmtree(probe_root, ignore_errors=True)


def kill_when_started(broker: Broker, result: dict[str, float]) -> None:
    """Kills the broker's actor once its first rollout's desktop runs."""
    deadline = time.monotonic() + 120
    while not desktop_pids(broker.info.root) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    result["pids"] = desktop_pids(broker.info.root)  # type: ignore[assignment]
    result["killed_at"] = time.monotonic()
    ray.kill(broker.actor)


def test_benchmark_reruns_a_dead_nodes_rollout_elsewhere(
        cluster: float, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("librecad") is None and os.environ.get("DESK_REQUIRE_XVFB") != "1":
        pytest.skip("skipped: librecad not found")
    out = Path(tempfile.mkdtemp(prefix="dbk-bench-"))
    deskbroker = str(binary("deskbroker"))
    # The corpus on "every node" (one host here); the brokers hide its gold from the desktops.
    subprocess.run([deskbroker, "bench", "corpus", "--corpus-version", "v1", "--out",
                    str(out / "public"), "--gold-out", str(out / "gold")],
                   check=True, capture_output=True)
    brokers = start_brokers(BrokerConfig(deskbroker_bin=deskbroker, corpus=str(out / "public"),
                                         gold=str(out / "gold")))
    try:
        first = brokers[0]
        killer: dict[str, float] = {}
        thread = threading.Thread(target=kill_when_started, args=(first, killer))
        thread.start()
        record = run_benchmark(brokers, ["task-004", "task-011"], out / "run", run_id="ci",
                               bench_args=["--agent", "oracle"], max_reruns=1,
                               deskbroker_bin=deskbroker)
        thread.join()
        tries = {(t["task_id"], t["attempt_id"]): t for t in record["tries"]}
        lost = [t for t in record["tries"] if t["outcome"] == "node_lost"]
        assert len(lost) == 1 and lost[0]["node_id"] == first.info.node_id, record
        (task,) = [t["task_id"] for t in lost]
        rerun = tries[(task, "ci-r1")]
        assert rerun["outcome"] == "completed" and rerun["node_id"] != first.info.node_id
        assert record["n_completed"] == 2 and record["n_reruns"] == 1
        assert record["n_infra_failures"] == 1
        for name in ("task-004", "task-011"):
            summary = json.loads((out / "run" / "tasks" / name / "summary.json").read_text())
            (row,) = summary["rollouts"]
            assert row["task_id"] == name and row["status"] == "done" and row["score"] > 0.9
        assert record["merge"]["exit_code"] == 0, record["merge"]
        merged = json.loads((out / "run" / "merged" / "summary.json").read_text())
        assert [r["task_id"] for r in merged["rollouts"]] == ["task-004", "task-011"]
        assert merged["n_infra_error"] == 0
        assert json.loads((out / "run" / "fleet.json").read_text()) == record
        wait_dead(killer["pids"])  # type: ignore[arg-type]
        # A rollout whose bench run fails (an unknown task) is an infrastructure failure too,
        # rerun at most max_reruns times, on the node still alive.
        failed = run_benchmark(brokers, ["task-999"], out / "bad", run_id="bad",
                               max_reruns=1, deskbroker_bin=deskbroker)
        assert [(t["attempt_id"], t["outcome"], t["node_id"]) for t in failed["tries"]] == [
            (f"bad-r{i}", "process_failed", brokers[1].info.node_id) for i in (0, 1)]
        assert failed["n_completed"] == 0 and failed["merge"]["detail"] == "no task completed"
        per_rollout = [t["seconds"] for t in record["tries"] if t["outcome"] == "completed"]
        report(capsys, f"benchmark 2 tasks on 2 nodes, one node killed: total "
               f"{record['total_s']:.1f} s, completed rollouts {per_rollout} s, lost try "
               f"{lost[0]['seconds']:.1f} s, broker start {[b.info.start_s for b in brokers]}")
    finally:
        stop_brokers(brokers)
        remove_roots(brokers)
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.parametrize("tasks, run_id, reruns, message", [
    (["task-004", "task-004"], "r", 1, "named twice"),
    (["../task-004"], "r", 1, "not a plain id"),
    (["task-004"], "a/b", 1, "not a plain id"),
    (["task-004"], "r", -1, "max_reruns"),
])
def test_benchmark_refuses_bad_input_before_anything_runs(
        tmp_path: Path, tasks: list[str], run_id: str, reruns: int, message: str) -> None:
    with pytest.raises(DeskbrokerError, match=message):
        run_benchmark([], tasks, tmp_path / "out", run_id=run_id, max_reruns=reruns)
    assert not (tmp_path / "out").exists()
