"""Typed answers of the broker's main routes (``GET /v1/openapi.json``), as ``TypedDict``: the
client's methods still return the broker's JSON objects (plain dicts, nothing converted or
dropped), and a type checker knows their fields. Keys marked ``total=False`` are absent in some
answers; nested objects the broker documents in full (receipts' focus facts, windows, workspace
facts) are ``dict[str, Any]``.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["ActAnswer", "ArtifactAnswer", "CheckpointAnswer", "LeaseAnswer", "Receipt",
           "ReleaseAnswer", "ResetAnswer", "Screenshot", "SettleReceipt", "StatusAnswer"]


class LeaseAnswer(TypedDict):
    """``POST /v1/leases``."""

    session_id: str
    state: str
    expires_at: str
    task_id: str
    attempt_id: str
    profile: str
    idempotent_replay: bool
    lease_token: str
    policy_sha256: str | None


class _ScreenshotBase(TypedDict):
    png_base64: str
    width: int
    height: int
    sequence: int
    timestamp_ms: int
    app_maximized: bool
    sha256: str


class Screenshot(_ScreenshotBase, total=False):
    """A screenshot (``png_bytes`` decodes it); ``screenshot_id`` binds coordinates to it."""

    screenshot_id: str
    image_content_rect: dict[str, int]
    image_global_bounds: dict[str, int]
    zoom: dict[str, Any]
    gate: dict[str, Any]


class _ResetBase(TypedDict):
    session_id: str
    state: str
    window: dict[str, Any]
    screenshot: Screenshot
    dismissed_overlays: list[str]
    elapsed_ms: int
    idempotent_replay: bool


class ResetAnswer(_ResetBase):
    """``POST /v1/sessions/{id}/reset``: the handoff."""

    settle: dict[str, Any] | None
    workspace: dict[str, Any] | None


class SettleReceipt(TypedDict):
    outcome: str
    wait_ms: int
    changed_pixels: int
    # app_idle, app_idle_undated_timer, quiet_timer, max_wait or not_settled (docs/settle.md).
    rule: str


class _ReceiptBase(TypedDict):
    action_index: int
    action_type: str
    intent: str
    delivery: str
    n_input_events: int
    focus_before: dict[str, Any] | None
    focus_after: dict[str, Any] | None
    settle: SettleReceipt
    post_action_visual_stable: bool
    released_after: list[str]
    sandbox: str
    accepted_at_ms: int
    input_ms: int
    # Host time spent observing after the input (settle, capture, encode, screenshot).
    observation_elapsed_ms: int
    total_ms: int


class Receipt(_ReceiptBase, total=False):
    """What the broker did with one action (the keys below are absent when empty)."""

    observation_failures: list[str]
    pointer_target: dict[str, int]
    pointer_on_target: bool
    opened_windows: list[dict[str, Any]]
    # "off" only when the broker runs with --unsafe-no-limits (no memory, process or CPU limits).
    limits: str


class ActAnswer(TypedDict):
    """``POST /v1/sessions/{id}/actions`` (``screenshot`` is null when the frame after the
    action could not be observed; the receipt says why)."""

    action_index: int
    idempotent_replay: bool
    receipt: Receipt
    screenshot: Screenshot | None


class CheckpointAnswer(TypedDict):
    """``POST /v1/sessions/{id}/checkpoint``."""

    session_id: str
    method: str
    sha256: str
    size: int
    reset_sha256: str


class ArtifactAnswer(TypedDict):
    """``GET /v1/sessions/{id}/artifact`` (``artifact_bytes`` decodes it)."""

    filename: str
    bytes_base64: str
    sha256: str
    size: int


class _StatusBase(TypedDict):
    session_id: str
    state: str
    task_id: str
    attempt_id: str
    profile: str
    action_count: int
    next_action_index: int
    checkpoint: dict[str, Any] | None
    last_error: dict[str, str] | None
    expires_at: str
    workspace: dict[str, Any] | None
    policy_sha256: str | None


class StatusAnswer(_StatusBase, total=False):
    """``GET /v1/sessions/{id}`` (the keys below are absent when unknown)."""

    workspace_state: str
    control: dict[str, Any]


class ReleaseAnswer(TypedDict):
    """``DELETE /v1/sessions/{id}``."""

    session_id: str
    state: str
    released_now: bool
