"""Checks broker.yaml's capacity settings against each other and against the profiles.

Usage: check_sizing.py BROKER_YAML PROFILES_DIR

The rules (docs/scale-out.md "Sizing"):
- serve's --memory-budget-mib is at least --max-sessions x the largest profile's estimate (its
  `[limits] memory_mib`, else the 2048 MiB default), so a full pod of any profile fits;
- the container's memory request and limit both equal the budget + 512 Mi for the broker;
- the CPU request is at least one core per desktop;
- readiness is an HTTP GET of /readyz and liveness of /livez on the --health-listen port (no TCP
  probes); a preStop hook runs `deskbroker session drain` with a wait shorter than the
  termination grace period;
- a PodDisruptionBudget selects the StatefulSet's pods.
Prints what it checked; exits 1 with every broken rule.
"""

from __future__ import annotations

import pathlib
import sys
import tomllib

import yaml

DEFAULT_ESTIMATE_MIB = 2048
BROKER_RESERVE_MIB = 512
UNITS = {"Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}


def mib(quantity: str) -> float:
    for suffix, factor in UNITS.items():
        if quantity.endswith(suffix):
            return float(quantity[: -len(suffix)]) * factor
    raise ValueError(f"memory {quantity!r} is not in Mi, Gi or Ti")


def cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def flag(args: list[str], name: str) -> str | None:
    for arg in args:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


def largest_estimate(profiles: pathlib.Path) -> tuple[str, int]:
    best = ("(none)", 0)
    for path in sorted(profiles.glob("*.toml")):
        limits = tomllib.loads(path.read_text()).get("limits", {})
        estimate = int(limits.get("memory_mib", DEFAULT_ESTIMATE_MIB))
        if estimate > best[1]:
            best = (path.stem, estimate)
    return best


def check(documents: list[dict], profiles: pathlib.Path) -> list[str]:
    problems: list[str] = []
    sets = [d for d in documents if d and d.get("kind") == "StatefulSet"]
    if len(sets) != 1:
        return [f"expected one StatefulSet, found {len(sets)}"]
    pod = sets[0]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    args = container.get("args", [])
    max_sessions = int(flag(args, "max-sessions") or 8)
    budget = flag(args, "memory-budget-mib")
    health = flag(args, "health-listen")
    name, estimate = largest_estimate(profiles)
    if budget is None or not budget.isdigit():
        problems.append(f"--memory-budget-mib must be a number here, not {budget!r}")
        budget_mib = 0
    else:
        budget_mib = int(budget)
    if budget_mib < max_sessions * estimate:
        problems.append(
            f"--memory-budget-mib={budget_mib} < --max-sessions={max_sessions} x "
            f"{estimate} MiB ({name}, the largest profile)"
        )
    resources = container.get("resources", {})
    want = budget_mib + BROKER_RESERVE_MIB
    for kind in ("requests", "limits"):
        memory = resources.get(kind, {}).get("memory")
        if memory is None or mib(memory) != want:
            problems.append(f"memory {kind} is {memory!r}, not {want}Mi (budget + {BROKER_RESERVE_MIB})")
    cpu = resources.get("requests", {}).get("cpu")
    if cpu is None or cores(str(cpu)) < max_sessions:
        problems.append(f"cpu request {cpu!r} is under one core per desktop ({max_sessions})")
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    health_port = int(health.rsplit(":", 1)[1]) if health else None
    if health_port is None:
        problems.append("serve has no --health-listen")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        spec = container.get(probe, {})
        get = spec.get("httpGet")
        if get is None:
            problems.append(f"{probe} is not an HTTP GET")
            continue
        port = get.get("port")
        port = ports.get(port, port)
        if get.get("path") != path or port != health_port:
            problems.append(f"{probe} gets {get.get('path')} on {port}, not {path} on {health_port}")
    command = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    wait = flag(command, "wait-secs")
    if command[1:3] != ["session", "drain"] or wait is None:
        problems.append(f"preStop is not `deskbroker session drain --wait-secs=N`: {command}")
    elif int(wait) >= grace:
        problems.append(f"preStop waits {wait} s, not under the grace period of {grace} s")
    labels = pod["metadata"]["labels"]
    budgets = [d for d in documents if d and d.get("kind") == "PodDisruptionBudget"]
    if not any(
        all(labels.get(k) == v for k, v in b["spec"]["selector"].get("matchLabels", {}).items())
        for b in budgets
    ):
        problems.append("no PodDisruptionBudget selects the broker pods")
    if not problems:
        print(
            f"check_sizing: {max_sessions} desktops x {estimate} MiB ({name}) <= budget "
            f"{budget_mib} MiB; memory {want}Mi; cpu {cpu}; probes on :{health_port}; "
            f"preStop drain {wait} s < {grace} s; PodDisruptionBudget present"
        )
    return problems


def main() -> int:
    manifest, profiles = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    documents = list(yaml.safe_load_all(manifest.read_text()))
    problems = check(documents, profiles)
    for problem in problems:
        print(f"check_sizing: {manifest}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
