"""The README's Python examples, run as written on a fresh machine: each block fenced
```` ```python run ```` is saved to a file and run by this venv's interpreter in an empty
directory, against a real `deskbroker serve` started WITHOUT `--socket` (LibreCAD, its default
profile) while `XDG_RUNTIME_DIR` and `DESKBROKER_SOCKET` are unset, as root and CI have them: the
examples' `Client()` must find the broker's own default socket. `deskbroker` is on `PATH`, as
after an install. Every Python block is marked `run` or `no-run: <reason>`; an unmarked one fails.
The cua block (`run-cua`) runs with the interpreter of cua's own venv (cua-agent 0.9.1 needs
openai<3, the Agents SDK openai>=3): `$DESKBROKER_CUA_PYTHON`, else
target/python-cua-venv/bin/python; the Verifiers 0.4 block (`run-vf04`) with the interpreter of
the verifiers 0.4 venv: `$DESKBROKER_VF04_PYTHON`, else target/python-vf04-venv/bin/python (both
made by scripts/test-python.sh).
"""

from __future__ import annotations

import os
import re
import shutil
import socket as so
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskbroker import default_socket

from .conftest import TARGET, Broker, start_broker, stop_broker

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```$", re.M | re.S)


def blocks() -> list[tuple[int, str, str]]:
    """(line, info string, code) of every Python block."""
    text = README.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m["info"].strip(), m["code"])
            for m in FENCE.finditer(text)]


def runnable() -> list[tuple[int, str]]:
    return [(line, code) for line, info, code in blocks() if info == "run"]


# What each runnable example must show besides exiting 0, in README order.
EXPECT = ["client", "sync", "control", "agents", "verifiers", "openapi"]


def test_every_python_block_is_marked() -> None:
    found = blocks()
    assert found, "no Python blocks in the README"
    for line, info, _ in found:
        assert info in ("run", "run-cua", "run-vf04") or re.fullmatch(r"no-run: \S.*", info), (
            f"README.md:{line}: fence `python {info}` is neither `run` nor `no-run: <reason>`")
    assert len(runnable()) == len(EXPECT)
    assert len([1 for _, info, _ in found if info == "run-cua"]) == 1
    assert len([1 for _, info, _ in found if info == "run-vf04"]) == 1


def _environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_RUNTIME_DIR", "DESKBROKER_SOCKET", "PYTHONPATH")}
    env["PATH"] = f"{TARGET}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def default_broker() -> Iterator[Broker]:
    if shutil.which("librecad") is None and os.environ.get("DESK_REQUIRE_XVFB") != "1":
        pytest.skip("skipped: librecad not found")
    env = _environ()
    path = Path(default_socket(env))
    if path.exists():
        probe = so.socket(so.AF_UNIX)
        try:
            probe.connect(str(path))
            pytest.fail(f"a broker already listens on the default socket {path}; stop it first")
        except OSError:
            pass  # stale: the broker replaces it
        finally:
            probe.close()
    root = Path(tempfile.mkdtemp(prefix="dbk-"))
    started = start_broker(root, "librecad", "1920x1080", socket=path, environ=env)
    yield started
    stop_broker(started)
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("index", range(len(EXPECT)), ids=EXPECT)
def test_readme_example_runs_as_written(default_broker: Broker, tmp_path: Path,
                                        index: int) -> None:
    line, code = runnable()[index]
    script = tmp_path / f"readme_{line}.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_environ(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (
        f"README.md:{line} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
        f"\n--- broker.log ---\n{(default_broker.root / 'broker.log').read_text()[-4000:]}")
    out = done.stdout
    kind = EXPECT[index]
    if kind == "client":
        # Ten actions answered in order, the handoff screenshot and the saved LibreCAD drawing.
        indices = [int(row.split()[0]) for row in out.splitlines()]
        assert indices == list(range(10)), out
        assert (tmp_path / "reset.png").read_bytes().startswith(b"\x89PNG")
        drawing = (tmp_path / "attempt.dxf").read_text(errors="replace")
        assert "\nLINE\n" in drawing.replace("\r\n", "\n") or "\n  0\nLINE" in drawing, drawing[:500]
    elif kind == "sync":
        assert out.split() == ["0"], out
    elif kind == "control":
        assert out.split() == ["control_stopped"], out
    elif kind == "agents":
        assert out.split() == ["done"], out
    elif kind == "openapi":
        assert out.split() == ["input_injected"], out
    else:
        reward = float(out.split()[-1])
        assert out.startswith("reward ") and reward > 0.9, out


def venv_python(variable: str, venv: str) -> Path:
    """The interpreter of a venv of its own: ``$variable``, else target/VENV/bin/python;
    missing, a skip (a failure under ``DESK_REQUIRE_XVFB=1``)."""
    python = Path(os.environ.get(variable)
                  or Path(__file__).resolve().parents[2] / "target" / venv / "bin" / "python")
    if not python.exists():
        if os.environ.get("DESK_REQUIRE_XVFB") == "1":
            pytest.fail(f"no venv at {python} (scripts/test-python.sh makes it)")
        pytest.skip(f"no venv at {python}")
    return python


def run_block(python: Path, info: str, tmp_path: Path) -> str:
    """Runs the one block fenced ``python INFO`` with ``python``; its standard output."""
    ((line, code),) = [(line, code) for line, found, code in blocks() if found == info]
    script = tmp_path / f"readme_{line}.py"
    script.write_text(code)
    done = subprocess.run([str(python), str(script)], cwd=tmp_path, env=_environ(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (
        f"README.md:{line} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done.stdout


def test_readme_cua_example_runs_as_written(default_broker: Broker, tmp_path: Path) -> None:
    """cua's ComputerAgent drives the desktop through DeskbrokerComputer with a scripted loop:
    the off-screen click is refused by the broker, returned to the loop, and the run goes on to
    its final message."""
    out = run_block(venv_python("DESKBROKER_CUA_PYTHON", "python-cua-venv"), "run-cua", tmp_path)
    assert out.splitlines() == ["done", "refused point_outside_image"], out


def test_readme_verifiers_0_4_example_runs_as_written(default_broker: Broker,
                                                      tmp_path: Path) -> None:
    """Verifiers 0.4 loads the taskset `deskbroker` by id and plays task-004 through its own
    episode machinery against the scripted endpoint; the broker-side scorer's reward."""
    out = run_block(venv_python("DESKBROKER_VF04_PYTHON", "python-vf04-venv"), "run-vf04",
                    tmp_path)
    reward = float(out.split()[-1])
    assert out.startswith("reward ") and reward > 0.9, out
