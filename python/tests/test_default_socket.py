"""One socket default shared with the broker: `Client()` finds a `deskbroker serve` started
without `--socket`, and every connection error names the exact path or URL it tried."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from deskbroker import Client, TransportError, default_socket

from .conftest import start_broker, stop_broker


def test_default_socket_rule() -> None:
    # The broker's rule (crates/deskbroker/src/paths.rs) plus its DESKBROKER_SOCKET variable.
    assert default_socket({}, uid=0) == "/tmp/deskbroker-0/deskbroker.sock"
    assert default_socket({"XDG_RUNTIME_DIR": ""}, uid=1000) == "/tmp/deskbroker-1000/deskbroker.sock"
    assert default_socket({"XDG_RUNTIME_DIR": "/run/user/7"}, uid=7) == "/run/user/7/deskbroker.sock"
    assert default_socket({"XDG_RUNTIME_DIR": "/run/user/7", "DESKBROKER_SOCKET": "/s/b.sock"},
                          uid=7) == "/s/b.sock"
    assert default_socket({"DESKBROKER_SOCKET": ""}, uid=3) == "/tmp/deskbroker-3/deskbroker.sock"
    assert default_socket({}) == f"/tmp/deskbroker-{os.getuid()}/deskbroker.sock"


async def test_client_finds_a_broker_started_without_socket(
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(tempfile.mkdtemp(prefix="dbk-"))
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    environ = {k: v for k, v in os.environ.items() if k != "DESKBROKER_SOCKET"}
    environ["XDG_RUNTIME_DIR"] = str(runtime)
    broker = start_broker(root, socket=runtime / "deskbroker.sock", environ=environ)
    try:
        monkeypatch.delenv("DESKBROKER_SOCKET", raising=False)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        async with Client() as client:
            assert client.endpoint == f"unix:{runtime}/deskbroker.sock"
            lease = await client.lease("dflt", "a1")
            assert (await client.release(lease["session_id"]))["state"] == "released"
    finally:
        stop_broker(broker)
        shutil.rmtree(root, ignore_errors=True)


async def test_connection_errors_name_the_path_tried(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DESKBROKER_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    async with Client(retries=0) as client:
        with pytest.raises(TransportError) as missing:
            await client.capabilities()
    expected = f"{tmp_path}/deskbroker.sock"
    assert f"no broker socket at {expected}" in str(missing.value)
    assert "deskbroker serve" in str(missing.value)

    # A path that exists but where nothing listens: the path and the OS's reason.
    dead = tmp_path / "dead.sock"
    import socket as so
    listener = so.socket(so.AF_UNIX)
    listener.bind(str(dead))
    listener.close()
    async with Client(socket=str(dead), retries=1) as client:
        with pytest.raises(TransportError) as refused:
            await client.capabilities()
    assert f"unix:{dead}" in str(refused.value) and "2 attempts" in str(refused.value)
    assert "ConnectError" in str(refused.value)

    async with Client(url="https://127.0.0.1:9", retries=0) as client:
        with pytest.raises(TransportError) as remote:
            await client.capabilities()
    assert "https://127.0.0.1:9" in str(remote.value)
