"""The guardian of one node's broker (``python -m deskbroker._guard ROOT -- SERVE_ARGV...``).

:class:`deskbroker.ray.NodeBroker` starts this process and keeps its stdin open. The guardian
detaches first (a new session, and a fork whose parent exits): Ray kills a dead worker's
direct children, but not their descendants. It starts ``deskbroker serve``, writes
``broker PID`` on stdout, and watches stdin; the actor registers each
rollout process group it starts (``child PGID``) and unregisters it (``done PGID``). When
stdin closes (the actor shut down, was killed with ``ray.kill``, or its node went away) the
guardian stops everything the node ran:

1. each registered rollout process group: SIGTERM, SIGKILL after 5 s;
2. the broker: SIGTERM (it leaves its desktops running by design), SIGKILL after 5 s (an idle
   keep-alive connection holds its graceful stop);
3. every desktop still running under ROOT: the process groups recorded in a session's
   ``processes.json``, killed only while the pid still has its recorded start time.

It imports nothing from Ray, so it starts fast and survives the actor's process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid: int) -> bool:
    return _signal_group(pgid, 0)


def stop_groups(pgids: set[int], grace_s: float) -> None:
    """SIGTERM to each group, SIGKILL to those still alive after ``grace_s``."""
    for pgid in pgids:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_group_alive(p) for p in pgids):
        time.sleep(0.05)
    for pgid in pgids:
        _signal_group(pgid, signal.SIGKILL)


def reap_desktops(root: Path) -> list[int]:
    """Kills the recorded desktop process groups under ``root`` that are still the same
    processes; answers the pids it killed."""
    killed: list[int] = []
    for record in sorted(root.glob("**/sessions/*/processes.json")):
        try:
            processes = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        for process in processes if isinstance(processes, list) else []:
            pid, ticks = process.get("pid"), process.get("start_ticks")
            if isinstance(pid, int) and pid > 1 and _start_ticks(pid) == ticks:
                if _signal_group(pid, signal.SIGKILL):
                    killed.append(pid)
    return killed


class _Stop(Exception):
    """SIGTERM to the guardian: the same as a closed stdin."""


def _stop(*_: object) -> None:
    raise _Stop


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m deskbroker._guard ROOT -- SERVE_ARGV...", file=sys.stderr)
        return 2
    root = Path(argv[0])
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    log = os.fdopen(os.open(root / "broker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
                    "ab")
    broker = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                              start_new_session=True)
    sys.stdout.write(f"broker {broker.pid}\n")
    sys.stdout.flush()
    children: set[int] = set()
    signal.signal(signal.SIGTERM, _stop)
    try:
        for line in sys.stdin:
            verb, _, value = line.strip().partition(" ")
            if verb in ("child", "done") and value.isdigit():
                (children.add if verb == "child" else children.discard)(int(value))
    except (_Stop, OSError):
        pass
    stop_groups(children, 5.0)
    stop_groups({broker.pid}, 5.0)
    broker.wait()
    killed = reap_desktops(root)
    print(f"guardian: broker stopped, {len(children)} rollout(s) stopped, "
          f"desktop process groups reaped: {killed}", file=sys.stderr)
    sys.stdout.write("stopped\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
