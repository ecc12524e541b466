"""Fixtures: a real `deskbroker serve` on a private socket, offering the probe window (a real X11
client on a real Xvfb desktop that records every X input event it receives) as profile `probe`.

The binaries come from the checkout's cargo target directory (`DESKBROKER_TARGET`, default
`../target/debug`): build them first (`cargo build -p deskbroker -p desk-test-support`). Without
Xvfb the tests skip, unless `DESK_REQUIRE_XVFB=1` (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deskbroker._guard import reap_desktops

REPO = Path(__file__).resolve().parents[2]
# Resolved: the sandbox shows the binaries' directory itself, not the path (`python/..`) to it.
TARGET = Path(os.environ.get("DESKBROKER_TARGET", REPO / "target" / "debug")).resolve()


def binary(name: str) -> Path:
    path = TARGET / name
    if not path.exists():
        pytest.fail(f"{path} missing: run cargo build -p deskbroker -p desk-test-support")
    return path


def require_xvfb() -> None:
    if shutil.which("Xvfb") and shutil.which("openbox"):
        return
    if os.environ.get("DESK_REQUIRE_XVFB") == "1":
        pytest.fail("Xvfb/openbox not found but DESK_REQUIRE_XVFB=1")
    pytest.skip("skipped: Xvfb not found")


@dataclass
class Broker:
    socket: Path
    root: Path
    probe_log: Path
    process: subprocess.Popen[bytes]

    def probe_events(self) -> list[dict]:
        if not self.probe_log.exists():
            return []
        return [json.loads(line) for line in self.probe_log.read_text().splitlines() if line]


def write_probe_profile(root: Path) -> tuple[Path, Path]:
    """Writes profile `probe` under ROOT/profiles, recording to ROOT/probe.ndjson: answers both
    paths. A broker offering it needs `DESKBROKER_SANDBOX_WRITABLE` set to the recording."""
    profiles = root / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    probe_log = root / "probe.ndjson"
    (profiles / "probe.toml").write_text(
        f'''name = "probe"
command = ["{binary("desk-probe")}", "--out", "{probe_log}"]
# The sandbox shows the host's system directories only: the probe's own directory is named.
read_only = ["{binary("desk-probe").parent}"]
[attempt]
filename = "attempt.txt"
template = "fresh"
[window]
class = "deskprobe"
maximize = true
timeout_ms = 30000
'''
    )
    # The probe runs in the session's sandbox as an unprivileged uid: its recording must be
    # reachable (the root only traversable) and writable, and the broker binds it in writable.
    os.chmod(root, 0o711)
    probe_log.touch()
    os.chmod(probe_log, 0o666)
    return profiles, probe_log


def start_broker(root: Path, default_profile: str = "probe",
                 display: str = "1280x800", *, socket: Path | None = None,
                 environ: dict[str, str] | None = None) -> Broker:
    """A broker under ROOT. ``socket=None`` passes ``--socket ROOT/broker.sock``; with a
    ``socket`` given the broker is started WITHOUT ``--socket`` (its own default, which the
    caller computed and ``environ`` must produce), to test the shared default."""
    require_xvfb()
    profiles, probe_log = write_probe_profile(root)
    argv = [str(binary("deskbroker")), "serve", "--state-dir", str(root / "state"),
            "--profiles", str(profiles), "--display", display,
            "--default-profile", default_profile]
    if socket is None:
        socket = root / "broker.sock"
        argv[2:2] = ["--socket", str(socket)]
    log = open(root / "broker.log", "wb")
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        env={**(os.environ if environ is None else environ),
             "DESKBROKER_SANDBOX_WRITABLE": str(probe_log)},
    )
    deadline = time.monotonic() + 20
    while not socket.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"broker did not start: {(root / 'broker.log').read_text()[-2000:]}")
        time.sleep(0.02)
    return Broker(socket, root, probe_log, process)


def stop_broker(broker: Broker) -> None:
    """Stops the broker, then kills the desktops a failed test left behind (desktops outlive
    the broker by design): every recorded process group that is still the same process."""
    broker.process.terminate()
    try:
        broker.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        broker.process.kill()
        broker.process.wait()
    reap_desktops(broker.root)


def key(*keys: str) -> dict[str, Any]:
    """A `key` action (the Verifiers environments' tests)."""
    return {"type": "key", "keys": list(keys), "intent": "+".join(keys)}


def text(value: str) -> dict[str, Any]:
    return {"type": "type", "text": value, "intent": f"type {value}"}


def rect(a: str, b: str) -> list[dict[str, Any]]:
    """LibreCAD's rect command at the command line (docs/librecad-recipes.md)."""
    return [key("ctrl", "m"), text("rect"), key("return"), text(a), key("return"), text(b),
            key("return"), key("escape"), key("escape")]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keeps each phase's report on the test item, so a fixture can tell that its test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def _broker(request: pytest.FixtureRequest, default_profile: str,
            display: str) -> Iterator[Broker]:
    # A short root: a session's worker socket path must fit in 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="dbk-"))
    started = start_broker(root, default_profile, display)
    yield started
    stop_broker(started)
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        # The broker's own account of the failure is what a CI reader needs; the test's
        # traceback only shows the status code.
        log = (root / "broker.log").read_text(errors="replace")
        print(f"--- broker.log (last 6000 characters) ---\n{log[-6000:]}")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A broker whose sessions run the probe window."""
    yield from _broker(request, "probe", "1280x800")


@pytest.fixture
def cad_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A broker whose sessions run LibreCAD (the benchmark's app)."""
    if shutil.which("librecad") is None and os.environ.get("DESK_REQUIRE_XVFB") != "1":
        pytest.skip("skipped: librecad not found")
    yield from _broker(request, "librecad", "1920x1080")
