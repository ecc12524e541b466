"""The async broker client: one method per route of the HTTP API (`GET /v1/openapi.json`).

The broker owns every rule (validation, exactly-once, settling); this client only keeps what a
caller would otherwise track by hand:

- lease tokens: remembered per session and sent as ``Authorization: Bearer`` on that session's
  routes, never printed (``repr`` hides them);
- request ids and expected action indices: deterministic, ``{task_id}-{attempt_id}-reset`` and
  ``{task_id}-{attempt_id}-a{index}`` unless given, with the index following the broker's
  answers;
- retries: a request whose connection failed (the answer was lost) is re-sent with the same
  request id, at most ``retries`` times; the broker answers a repeated action from its journal
  (``idempotent_replay``) and injects nothing twice. An error answer is never retried.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from ._paths import default_socket
from .types import (
    ActAnswer,
    ArtifactAnswer,
    CheckpointAnswer,
    LeaseAnswer,
    ReleaseAnswer,
    ResetAnswer,
    Screenshot,
    StatusAnswer,
)

__all__ = ["Client", "DeskbrokerError", "ApiError", "FrameWithheld", "TransportError", "Session"]

DEFAULT_TIMEOUT_S = 120.0


class DeskbrokerError(Exception):
    """Base class of every error this package raises."""


class ApiError(DeskbrokerError):
    """The broker refused a request: its stable ``code`` and ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.status = status
        self.code = code
        self.message = message


class TransportError(DeskbrokerError):
    """The broker could not be reached, or every retry lost its answer."""


class FrameWithheld(DeskbrokerError):
    """The broker's screenshot gate withheld a frame (its policy's verdict was not ``allow``):
    no image came with it, and ``gate`` says why (``verdict``, ``reasons``, ``record_id``). The
    action that produced it still counts."""

    def __init__(self, gate: dict[str, Any]) -> None:
        super().__init__(f"the screenshot gate withheld the frame: {gate.get('verdict')}")
        self.gate = gate


@dataclass
class Session:
    """What the client remembers about a leased session."""

    session_id: str
    task_id: str
    attempt_id: str
    next_action_index: int = 0
    lease_token: str = field(default="", repr=False)

    @property
    def rollout_id(self) -> str:
        return f"{self.task_id}-{self.attempt_id}"


def _session_path(session_id: str, suffix: str = "") -> str:
    if not session_id or not all(c.isascii() and (c.isalnum() or c in "-_.~") for c in session_id):
        raise DeskbrokerError(f"session id {session_id!r} is not a plain path segment")
    return f"/v1/sessions/{session_id}{suffix}"


class Client:
    """An async client of one broker, over its Unix socket or over TLS.

    ``Client()`` (the socket ``deskbroker serve`` listens on by default, :func:`default_socket`),
    ``Client(socket=PATH)`` or ``Client(url="https://host:8443", ca=..., cert=..., key=...)``;
    ``credential`` is an orchestration credential sent on the non-session routes. Use as an
    async context manager, or call :meth:`aclose`. Every connection error names the socket path
    or URL it tried (``TransportError``).
    """

    def __init__(
        self,
        socket: str | None = None,
        *,
        url: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        credential: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if socket is not None and url is not None:
            raise DeskbrokerError("give socket= or url=, not both")
        if socket is None and url is None:
            socket = default_socket()
        if retries < 0:
            raise DeskbrokerError("retries must be >= 0")
        if (cert is None) != (key is None):
            raise DeskbrokerError("cert= and key= go together")
        self._credential = credential
        self._retries = retries
        self._sessions: dict[str, Session] = {}
        self._socket = socket
        if socket is not None:
            self._endpoint = f"unix:{socket}"
            transport = transport or httpx.AsyncHTTPTransport(uds=socket)
            self._http = httpx.AsyncClient(
                base_url="http://deskbroker", transport=transport, timeout=timeout
            )
        else:
            assert url is not None
            if not url.startswith("https://"):
                raise DeskbrokerError("a remote broker is TLS only: url must start with https://")
            context = ssl.create_default_context(cafile=ca)
            if cert is not None and key is not None:
                context.load_cert_chain(cert, key)
            self._endpoint = url
            self._http = httpx.AsyncClient(
                base_url=url, verify=context, transport=transport, timeout=timeout
            )

    @property
    def endpoint(self) -> str:
        """What this client connects to: ``unix:PATH`` or the ``https://`` URL."""
        return self._endpoint

    def __repr__(self) -> str:
        return f"Client({self._endpoint!r}, sessions={len(self._sessions)})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- session memory ---------------------------------------------------------------------

    def session(self, session_id: str) -> Session:
        """The remembered session (its next expected action index, ids)."""
        try:
            return self._sessions[session_id]
        except KeyError:
            raise DeskbrokerError(f"session {session_id} was not leased through this client") from None

    def adopt(self, session_id: str, lease_token: str, task_id: str, attempt_id: str,
              next_action_index: int = 0) -> Session:
        """Remembers a session leased elsewhere (e.g. by the CLI)."""
        session = Session(session_id, task_id, attempt_id, next_action_index, lease_token)
        self._sessions[session_id] = session
        return session

    # -- transport --------------------------------------------------------------------------

    def _headers(self, path: str) -> dict[str, str]:
        bearer: str | None = None
        if path.startswith("/v1/sessions/"):
            session_id = path.removeprefix("/v1/sessions/").split("/")[0].split("?")[0]
            remembered = self._sessions.get(session_id)
            bearer = remembered.lease_token if remembered else None
        else:
            bearer = self._credential
        return {"authorization": f"Bearer {bearer}"} if bearer else {}

    async def _call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        content = None if body is None else json.dumps(body).encode()
        headers = self._headers(path)
        if content is not None:
            headers["content-type"] = "application/json"
        last: Exception | None = None
        for attempt in range(self._retries + 1):
            if attempt:
                await asyncio.sleep(min(0.1 * 2**attempt, 2.0))
            try:
                response = await self._http.request(method, path, content=content, headers=headers)
            except httpx.TransportError as error:
                last = error
                continue
            if response.is_success:
                return response
            try:
                error_body = response.json()
                raise ApiError(response.status_code, str(error_body["code"]),
                               str(error_body["message"]))
            except (ValueError, KeyError, TypeError):
                raise ApiError(response.status_code, "undecodable",
                               response.text[:200]) from None
        raise TransportError(self._unreachable(method, path, last))

    def _unreachable(self, method: str, path: str, last: Exception | None) -> str:
        """The connection error's message: the exact socket path or URL tried, and why."""
        tries = f"{self._retries + 1} attempt{'s' if self._retries else ''}"
        where = f"{method} {path} to {self._endpoint}: no answer after {tries}"
        if self._socket is not None and not os.path.exists(self._socket):
            hint = ("start `deskbroker serve` (it listens there by default)"
                    if self._socket == default_socket()
                    else "start `deskbroker serve --socket` with that path")
            return (f"{where}: no broker socket at {self._socket} ({hint}, or pass socket= / "
                    f"set DESKBROKER_SOCKET)")
        return f"{where}: {last!r}"

    async def _json(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        response = await self._call(method, path, body)
        try:
            value = response.json()
        except ValueError as error:
            raise DeskbrokerError(f"{method} {path}: answer is not JSON: {error}") from None
        if not isinstance(value, dict):
            raise DeskbrokerError(f"{method} {path}: answer is not a JSON object")
        return value

    # -- routes -----------------------------------------------------------------------------

    async def lease(self, task_id: str, attempt_id: str,
                    profile: str | None = None) -> LeaseAnswer:
        """``POST /v1/leases``; remembers the lease token (it stays in the returned dict too)."""
        body: dict[str, Any] = {"task_id": task_id, "attempt_id": attempt_id}
        if profile is not None:
            body["profile"] = profile
        answer = cast(LeaseAnswer, await self._json("POST", "/v1/leases", body))
        session_id = str(answer["session_id"])
        known = self._sessions.get(session_id)
        self._sessions[session_id] = Session(
            session_id, task_id, attempt_id,
            known.next_action_index if known else 0, str(answer["lease_token"]),
        )
        return answer

    async def reset(self, session_id: str, request_id: str | None = None) -> ResetAnswer:
        """``POST /v1/sessions/{id}/reset``: the app maximized, the handoff screenshot."""
        path = _session_path(session_id, "/reset")
        request_id = request_id or f"{self.session(session_id).rollout_id}-reset"
        return cast(ResetAnswer, await self._json("POST", path, {"request_id": request_id}))

    async def screenshot(self, session_id: str) -> Screenshot:
        """``GET /v1/sessions/{id}/screenshot``."""
        return cast(Screenshot, await self._json("GET", _session_path(session_id, "/screenshot")))

    async def act(
        self,
        session_id: str,
        action: dict[str, Any],
        *,
        request_id: str | None = None,
        expected_action_index: int | None = None,
        screenshot_id: str | None = None,
    ) -> ActAnswer:
        """``POST /v1/sessions/{id}/actions``: one action, exactly once.

        Without ``expected_action_index`` the remembered next index is used, and without
        ``request_id`` the id ``{task_id}-{attempt_id}-a{index}``; a lost answer is retried with
        both unchanged. ``screenshot_id`` names the screenshot the coordinates were read from:
        the broker maps them through its geometry and refuses a stale or unknown one before any
        input.
        """
        body: dict[str, Any] = {"action": action}
        if screenshot_id is not None:
            body["screenshot_id"] = screenshot_id
        return cast(ActAnswer, await self._indexed(session_id, "/actions", "a", body,
                                                   request_id, expected_action_index))

    async def _indexed(self, session_id: str, suffix: str, tag: str, body: dict[str, Any],
                       request_id: str | None, expected_action_index: int | None
                       ) -> dict[str, Any]:
        """One action-index-taking request (an action or a program): the remembered next index
        and the id ``{task_id}-{attempt_id}-{tag}{index}`` unless given; the remembered index
        advances past the answer's."""
        remembered = self._sessions.get(session_id)
        index = expected_action_index
        if index is None:
            index = self.session(session_id).next_action_index
        if request_id is None:
            request_id = f"{self.session(session_id).rollout_id}-{tag}{index}"
        body = {"request_id": request_id, "expected_action_index": index, **body}
        answer = await self._json("POST", _session_path(session_id, suffix), body)
        if remembered is not None:
            remembered.next_action_index = max(remembered.next_action_index,
                                               int(answer["action_index"]) + 1)
        return answer

    async def program(
        self,
        session_id: str,
        steps: list[dict[str, Any]],
        *,
        request_id: str | None = None,
        expected_action_index: int | None = None,
        screenshot_id: str | None = None,
        control: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/programs``: typed steps validated whole, then run in order.

        Indices and request ids as for :meth:`act` (one index per program). ``control`` is the
        token ``{"owner", "generation"}`` once the session has an owner (:meth:`claim_control`);
        ``screenshot_id`` binds every coordinate step to that image.
        """
        body: dict[str, Any] = {"steps": steps}
        if screenshot_id is not None:
            body["screenshot_id"] = screenshot_id
        if control is not None:
            body["control"] = control
        return await self._indexed(session_id, "/programs", "p", body, request_id,
                                   expected_action_index)

    async def control(self, session_id: str) -> dict[str, Any]:
        """``GET /v1/sessions/{id}/control``: owner, mode, generation, stopped."""
        return await self._json("GET", _session_path(session_id, "/control"))

    async def claim_control(self, session_id: str, owner: str, mode: str = "act") -> dict[str, Any]:
        """``POST /v1/sessions/{id}/control``: become the owner; a new generation."""
        return await self._json("POST", _session_path(session_id, "/control"),
                                {"owner": owner, "mode": mode})

    async def restart_control(self, session_id: str, owner: str,
                              mode: str = "act") -> dict[str, Any]:
        """``POST /v1/sessions/{id}/control/restart``: the only way past a Stop."""
        return await self._json("POST", _session_path(session_id, "/control/restart"),
                                {"owner": owner, "mode": mode})

    async def stop(self, session_id: str, reason: str | None = None) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/stop``: the generation advances at once; a running step's
        settle is interrupted and held input released."""
        body: dict[str, Any] = {} if reason is None else {"reason": reason}
        return await self._json("POST", _session_path(session_id, "/stop"), body)

    async def zoom(self, session_id: str, screenshot_id: str, x: int, y: int, width: int,
                   height: int) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/zoom``: a fresh, enlarged capture of a region given in
        ``screenshot_id``'s pixels; a screenshot of its own (``zoom``: source and scale)."""
        return await self._json("POST", _session_path(session_id, "/zoom"), {
            "screenshot_id": screenshot_id, "x": x, "y": y, "width": width, "height": height,
        })

    async def capabilities(self, session_id: str | None = None) -> dict[str, Any]:
        """``GET /v1/capabilities`` (or the session's, with its control)."""
        if session_id is None:
            return await self._json("GET", "/v1/capabilities")
        return await self._json("GET", _session_path(session_id, "/capabilities"))

    async def accessibility(self, session_id: str, max_nodes: int | None = None,
                            max_depth: int | None = None) -> dict[str, Any]:
        """``GET /v1/sessions/{id}/accessibility``: a bounded tree with an ``observation_id``."""
        query = "&".join(f"{name}={value}" for name, value in
                         (("max_nodes", max_nodes), ("max_depth", max_depth))
                         if value is not None)
        suffix = "/accessibility" + (f"?{query}" if query else "")
        return await self._json("GET", _session_path(session_id, suffix))

    async def windows(self, session_id: str) -> dict[str, Any]:
        """``GET /v1/sessions/{id}/windows``: the app's top-level windows."""
        return await self._json("GET", _session_path(session_id, "/windows"))

    async def clipboard_read(self, session_id: str,
                             max_output_bytes: int | None = None) -> dict[str, Any]:
        """``GET /v1/sessions/{id}/clipboard`` (as the workspace policy allows)."""
        suffix = "/clipboard" + (f"?max_output_bytes={max_output_bytes}"
                                 if max_output_bytes is not None else "")
        return await self._json("GET", _session_path(session_id, suffix))

    async def clipboard_write(self, session_id: str, text: str,
                              control: dict[str, Any] | None = None) -> dict[str, Any]:
        """``PUT /v1/sessions/{id}/clipboard``: never retried by the broker."""
        body: dict[str, Any] = {"text": text}
        if control is not None:
            body["control"] = control
        return await self._json("PUT", _session_path(session_id, "/clipboard"), body)

    async def checkpoint(self, session_id: str) -> CheckpointAnswer:
        """``POST /v1/sessions/{id}/checkpoint``: save the attempt file."""
        return cast(CheckpointAnswer,
                    await self._json("POST", _session_path(session_id, "/checkpoint")))

    async def artifact(self, session_id: str) -> ArtifactAnswer:
        """``GET /v1/sessions/{id}/artifact``; :func:`artifact_bytes` decodes it."""
        return cast(ArtifactAnswer, await self._json("GET", _session_path(session_id, "/artifact")))

    async def events(self, session_id: str) -> str:
        """``GET /v1/sessions/{id}/events``: ``events.json`` NDJSON text."""
        return (await self._call("GET", _session_path(session_id, "/events"))).text

    async def frame_events(self, session_id: str) -> str:
        """``GET /v1/sessions/{id}/frame-events``: ``frame_events.json`` NDJSON text."""
        return (await self._call("GET", _session_path(session_id, "/frame-events"))).text

    async def status(self, session_id: str) -> StatusAnswer:
        """``GET /v1/sessions/{id}``."""
        return cast(StatusAnswer, await self._json("GET", _session_path(session_id)))

    async def release(self, session_id: str) -> ReleaseAnswer:
        """``DELETE /v1/sessions/{id}``: idempotent; the token is forgotten afterwards."""
        answer = cast(ReleaseAnswer, await self._json("DELETE", _session_path(session_id)))
        self._sessions.pop(session_id, None)
        return answer

    async def openapi(self) -> dict[str, Any]:
        """``GET /v1/openapi.json``."""
        return await self._json("GET", "/v1/openapi.json")


def artifact_bytes(artifact: ArtifactAnswer | dict[str, Any]) -> bytes:
    """The bytes of an :meth:`Client.artifact` answer."""
    return base64.b64decode(artifact["bytes_base64"], validate=True)


def screenshot_base64(screenshot: Screenshot | dict[str, Any]) -> str:
    """The base64 PNG of a screenshot object; :class:`FrameWithheld` when the broker's
    screenshot gate withheld it (never an empty image)."""
    gate = screenshot.get("gate")
    if gate is not None and gate.get("verdict") != "allow":
        raise FrameWithheld(dict(gate))
    return str(screenshot["png_base64"])


def png_bytes(screenshot: Screenshot | dict[str, Any]) -> bytes:
    """The PNG bytes of a screenshot object (see :func:`screenshot_base64`)."""
    return base64.b64decode(screenshot_base64(screenshot), validate=True)
