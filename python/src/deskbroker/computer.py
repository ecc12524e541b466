"""`DeskbrokerComputer`: one broker session as an OpenAI Agents SDK ``AsyncComputer`` that also
satisfies cua's ``AsyncComputerHandler`` protocol.

Each call becomes exactly one broker action with an ``intent`` naming the call. The broker's
action schema has no separate press and release, so cua's ``left_mouse_down``/``left_mouse_up``
pair is sent as one ``drag`` along the points seen between them (a ``click`` when the pointer did
not move). Held ``keys`` of the Agents SDK become the action's ``modifiers`` (shift, ctrl, alt; any
other held key is refused before anything is sent).

Refused actions go back to the model and the run continues; every refusal is counted in
:attr:`DeskbrokerComputer.refusals`. A refusal is the broker refusing an action before any input
(``invalid_action``, ``point_outside_image``, ``destination_not_app``, ...: :data:`REFUSAL_CODES`)
or this class refusing one before sending it (an unsupported button, a held key that is not a
modifier). Anything else (the desktop failed, the lease expired, the broker is unreachable)
still raises. How the refusal reaches the model depends on the caller (``on_refusal``):

- ``"report"`` (default; the OpenAI Agents SDK): the method returns; later actions of the same
  computer call are skipped (they were planned on the screen the refused one should have made)
  until the SDK's closing ``screenshot()``, which becomes the call's output. The SDK's computer
  tool output is a screenshot only and it aborts the run on any exception, so the refusal's text
  is added to the model's next input by :meth:`DeskbrokerComputer.model_input_filter` (pass it as
  ``RunConfig(call_model_input_filter=...)``), right after that call's output.
- ``"raise"`` (cua): :class:`ActionRefused` is raised; while cua is loaded it is also cua's own
  ``ToolError``, which cua's agent loop returns to the model as the call's error output.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Concatenate, Literal, ParamSpec

from ._scale import Scale
from .client import ApiError, Client, DeskbrokerError, screenshot_base64
from .types import ActAnswer

try:  # The Agents SDK is optional: without it the class is a plain object with the same methods.
    from agents.computer import AsyncComputer as _Base
except ImportError:  # pragma: no cover - exercised only without the extra installed
    _Base = object  # type: ignore[assignment,misc]

__all__ = ["ActionRefused", "DeskbrokerComputer", "REFUSAL_CODES", "Refusal"]

# Broker codes that refuse an action the model chose before any input reached the desktop: the
# model can do better next turn. Every other code (desktop_failed, lease_expired,
# session_killed, control_stopped, ...) ends the run.
REFUSAL_CODES = frozenset({
    "invalid_action", "invalid_request", "invalid_params", "point_outside_image",
    "screenshot_unknown", "screenshot_stale", "destination_not_app", "unsupported",
})
# The code of a refusal made here, before anything was sent.
REFUSED_LOCALLY = "refused_locally"


@dataclass(frozen=True)
class Refusal:
    """One refused computer call: the method, its arguments, the code and the reason."""

    call: str
    arguments: str
    code: str
    message: str

    def describe(self) -> str:
        return f"{self.call}({self.arguments}) was refused ({self.code}): {self.message}"


class ActionRefused(DeskbrokerError):
    """A refused action (``on_refusal="raise"``); :attr:`refusal` says which and why."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(f"{refusal.describe()}; nothing was sent")
        self.refusal = refusal


class _NotSent(DeskbrokerError):
    """An action this class refuses before sending anything (its arguments)."""


_CUA_ERRORS: dict[type, type] = {}


def _refused_error(refusal: Refusal) -> ActionRefused:
    """An :class:`ActionRefused`, also cua's ``ToolError`` when cua is loaded (cua turns only
    its own ``ToolError`` into a tool result; importing it here would load cua's model stack)."""
    tool_error = getattr(sys.modules.get("cua_agent.types"), "ToolError", None)
    if not (isinstance(tool_error, type) and issubclass(tool_error, Exception)):
        return ActionRefused(refusal)
    both = _CUA_ERRORS.get(tool_error)
    if both is None:
        both = type("ActionRefused", (ActionRefused, tool_error), {})
        _CUA_ERRORS[tool_error] = both
    error = both(refusal)
    assert isinstance(error, ActionRefused)
    return error


_P = ParamSpec("_P")


def _refusable(
    method: Callable[Concatenate[DeskbrokerComputer, _P], Coroutine[Any, Any, None]],
) -> Callable[Concatenate[DeskbrokerComputer, _P], Coroutine[Any, Any, None]]:
    """Turns a refusal of the outermost computer call into a recorded :class:`Refusal` (see the
    module documentation); calls made by another call (scroll's move) pass theirs up."""

    @functools.wraps(method)
    async def call(self: DeskbrokerComputer, *args: _P.args, **kwargs: _P.kwargs) -> None:
        if self._depth:
            return await method(self, *args, **kwargs)
        arguments = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        if self._skipping:
            self._skipped_in_call += 1
            return None
        self._depth += 1
        try:
            return await method(self, *args, **kwargs)
        except ApiError as error:
            if error.code not in REFUSAL_CODES:
                raise
            refusal = Refusal(method.__name__, arguments, error.code, error.message)
        except _NotSent as error:
            refusal = Refusal(method.__name__, arguments, REFUSED_LOCALLY, str(error))
        finally:
            self._depth -= 1
        self.refusals.append(refusal)
        if self.on_refusal == "raise":
            raise _refused_error(refusal)
        self._refused_in_call.append(refusal)
        self._skipping = True
        return None

    return call

_MODIFIERS = {"shift": "shift", "ctrl": "ctrl", "control": "ctrl", "alt": "alt"}
_BUTTONS = {"left": "left", "right": "right", "wheel": "middle", "middle": "middle"}
# Scroll amounts arrive in pixels from the Agents SDK/cua; the broker scrolls in wheel notches.
SCROLL_PIXELS_PER_NOTCH = 100


def _modifiers(keys: list[str] | None) -> list[str]:
    out: list[str] = []
    for key in keys or []:
        name = _MODIFIERS.get(key.lower())
        if name is None:
            raise _NotSent(f"held key {key!r} is not a modifier (shift, ctrl, alt)")
        if name not in out:
            out.append(name)
    return out


def _button(button: str) -> str:
    name = _BUTTONS.get(button)
    if name is None:
        raise _NotSent(f"mouse button {button!r} is not supported (left, right, wheel)")
    return name


def _notches(pixels: int) -> int:
    if pixels == 0:
        return 0
    sign = 1 if pixels > 0 else -1
    return sign * max(1, round(abs(pixels) / SCROLL_PIXELS_PER_NOTCH))


class DeskbrokerComputer(_Base):  # type: ignore[misc,valid-type]
    """A leased, reset broker session driven through the computer-use interfaces.

    ``await DeskbrokerComputer.create(client, task_id=..., attempt_id=...)`` leases and resets;
    ``await computer.dispose()`` (or ``async with``) releases. The lease token stays in the
    client; nothing here exposes it.
    """

    def __init__(self, client: Client, session_id: str, width: int, height: int,
                 first_screenshot_b64: str,
                 on_refusal: Literal["report", "raise"] = "report",
                 scale_to: tuple[int, int] | None = None) -> None:
        if on_refusal not in ("report", "raise"):
            raise DeskbrokerError(f"on_refusal must be 'report' or 'raise', not {on_refusal!r}")
        self.client = client
        self.session_id = session_id
        self._width = width
        self._height = height
        # The size the model sees (screenshots, dimensions, coordinates): see `_scale`.
        self.scale = Scale((width, height),
                           (scale_to[0], scale_to[1]) if scale_to else (width, height))
        self._last_png_b64 = first_screenshot_b64
        # The id of the last image handed to the model by `screenshot()`: every action names it,
        # so that the broker refuses coordinates read from a stale image before any input.
        self._shown_id: str | None = None
        self._mouse_down: list[tuple[int, int]] | None = None
        self._pointer: tuple[int, int] | None = None
        self.last_response: ActAnswer | None = None
        self.on_refusal = on_refusal
        # Every refused call of this session, in order (the count is len(refusals)).
        self.refusals: list[Refusal] = []
        # Calls skipped after a refusal in the same computer call (``report``).
        self.skipped = 0
        self._depth = 0
        self._skipping = False
        self._refused_in_call: list[Refusal] = []
        self._skipped_in_call = 0
        # Notes for the model (``model_input_filter``): not yet placed, and by call id.
        self._pending_notes: list[str] = []
        self._notes: dict[str, str] = {}

    @classmethod
    async def create(cls, client: Client, *, task_id: str, attempt_id: str,
                     profile: str | None = None,
                     on_refusal: Literal["report", "raise"] = "report",
                     scale_to: tuple[int, int] | None = None) -> DeskbrokerComputer:
        """Leases and resets a session. ``scale_to=(w, h)``: screenshots resized to that size
        (at most the screen's; needs Pillow) and the model's coordinates mapped back exactly
        (:class:`deskbroker._scale.Scale`)."""
        lease = await client.lease(task_id, attempt_id, profile)
        session_id = str(lease["session_id"])
        try:
            reset = await client.reset(session_id)
        except BaseException:
            await client.release(session_id)
            raise
        shot = reset["screenshot"]
        try:
            return cls(client, session_id, int(shot["width"]), int(shot["height"]),
                       screenshot_base64(shot), on_refusal, scale_to)
        except DeskbrokerError:
            await client.release(session_id)
            raise

    async def dispose(self) -> None:
        await self.client.release(self.session_id)

    async def __aenter__(self) -> DeskbrokerComputer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.dispose()

    async def _act(self, action: dict[str, Any]) -> None:
        if not self.scale.identity:  # the model's pixels to the screen's
            if "x" in action and "y" in action:
                action["x"], action["y"] = self.scale.to_screen(action["x"], action["y"])
            if "path" in action:
                action["path"] = [dict(zip("xy", self.scale.to_screen(p["x"], p["y"])))
                                  for p in action["path"]]
        answer = await self.client.act(self.session_id, action, screenshot_id=self._shown_id)
        self.last_response = answer
        shot = answer["screenshot"]
        if shot is None:
            # Delivered without a frame (the receipt names the failed observation): the action
            # counts; take a fresh one.
            shot = await self.client.screenshot(self.session_id)
        self._last_png_b64 = screenshot_base64(shot)

    # -- Agents SDK AsyncComputer -----------------------------------------------------------

    @property
    def environment(self) -> Literal["ubuntu"]:
        return "ubuntu"

    @property
    def dimensions(self) -> tuple[int, int]:
        """The size the model sees (``scale_to``, else the screen's)."""
        return self.scale.model

    async def screenshot(self, text: str | None = None) -> str:
        """A fresh capture, base64 PNG (``text`` is cua's optional caption, ignored). It ends a
        computer call: calls skipped after a refusal run again from here."""
        self._close_call()
        shot = await self.client.screenshot(self.session_id)
        self._last_png_b64 = screenshot_base64(shot)
        shown = shot.get("screenshot_id")
        self._shown_id = str(shown) if shown is not None else None
        return self.scale.image(self._last_png_b64)

    @_refusable
    async def click(self, x: int, y: int, button: str = "left", *,
                    keys: list[str] | None = None) -> None:
        action: dict[str, Any] = {"type": "click", "x": x, "y": y, "button": _button(button),
                                  "intent": f"click {button} at ({x}, {y})"}
        if modifiers := _modifiers(keys):
            action["modifiers"] = modifiers
        await self._act(action)
        self._pointer = (x, y)

    @_refusable
    async def double_click(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        action: dict[str, Any] = {"type": "double_click", "x": x, "y": y,
                                  "intent": f"double-click at ({x}, {y})"}
        if modifiers := _modifiers(keys):
            action["modifiers"] = modifiers
        await self._act(action)
        self._pointer = (x, y)

    @_refusable
    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int, *,
                     keys: list[str] | None = None) -> None:
        """Moves to ``(x, y)`` then scrolls by the pixel amounts as wheel notches."""
        if self._pointer != (x, y):
            await self.move(x, y)
        action: dict[str, Any] = {"type": "scroll", "dx": _notches(scroll_x),
                                  "dy": _notches(scroll_y),
                                  "intent": f"scroll ({scroll_x}, {scroll_y}) at ({x}, {y})"}
        if modifiers := _modifiers(keys):
            action["modifiers"] = modifiers
        await self._act(action)

    @_refusable
    async def type(self, text: str) -> None:
        await self._act({"type": "type", "text": text, "intent": f"type {len(text)} characters"})

    @_refusable
    async def wait(self, ms: int = 1000) -> None:
        """A broker ``wait`` of ``ms`` milliseconds (the Agents SDK calls it without one)."""
        await self._act({"type": "wait", "milliseconds": ms, "intent": f"wait {ms} ms"})

    @_refusable
    async def move(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        if keys:
            raise _NotSent("the broker's move takes no held keys")
        await self._act({"type": "move", "x": x, "y": y, "intent": f"move to ({x}, {y})"})
        self._pointer = (x, y)
        if self._mouse_down is not None:
            self._mouse_down.append((x, y))

    @_refusable
    async def keypress(self, keys: list[str] | str) -> None:
        """A chord: ``["ctrl", "s"]`` (Agents SDK) or ``"ctrl+s"`` (cua)."""
        chord = keys.split("+") if isinstance(keys, str) else list(keys)
        names = [key.strip().lower() for key in chord]
        await self._act({"type": "key", "keys": names, "intent": f"press {'+'.join(names)}"})

    @_refusable
    async def drag(self, path: list[Any], *, keys: list[str] | None = None) -> None:
        """Along ``[(x, y), ...]`` (Agents SDK) or ``[{"x": .., "y": ..}, ...]`` (cua)."""
        points = [_point(point) for point in path]
        action: dict[str, Any] = {"type": "drag", "path": [{"x": x, "y": y} for x, y in points],
                                  "intent": f"drag through {len(points)} points"}
        if modifiers := _modifiers(keys):
            action["modifiers"] = modifiers
        await self._act(action)
        if points:
            self._pointer = points[-1]

    # -- refusals back to the model -------------------------------------------------------

    def _close_call(self) -> None:
        if not self._refused_in_call:
            return
        lines = [f"The computer refused {r.describe()}. Nothing was sent for it."
                 for r in self._refused_in_call]
        if self._skipped_in_call:
            lines.append(f"The {self._skipped_in_call} later action(s) of the same call were "
                         "not run.")
        lines.append("The screenshot shows the screen now.")
        self._pending_notes.append(" ".join(lines))
        self.skipped += self._skipped_in_call
        self._refused_in_call = []
        self._skipped_in_call = 0
        self._skipping = False

    def model_input_filter(self, data: Any) -> Any:
        """An Agents SDK ``call_model_input_filter``: after each computer call's output whose
        actions were refused, a user message saying what was refused and why (kept on every
        later model call). Use ``RunConfig(call_model_input_filter=computer.model_input_filter)``."""
        from agents.run_config import ModelInputData

        items = list(data.model_data.input)
        if self._pending_notes:
            for item in reversed(items):
                if _field(item, "type") == "computer_call_output":
                    call_id = str(_field(item, "call_id"))
                    self._notes[call_id] = " ".join(
                        [*filter(None, [self._notes.get(call_id)]), *self._pending_notes])
                    self._pending_notes = []
                    break
        out: list[Any] = []
        for item in items:
            out.append(item)
            note = (self._notes.get(str(_field(item, "call_id")))
                    if _field(item, "type") == "computer_call_output" else None)
            if note:
                out.append({"role": "user", "content": note})
        return ModelInputData(input=out, instructions=data.model_data.instructions)

    # -- cua AsyncComputerHandler -----------------------------------------------------------

    async def get_environment(self) -> Literal["linux"]:
        return "linux"

    async def get_dimensions(self) -> tuple[int, int]:
        return self.dimensions

    async def get_current_url(self) -> str:
        raise DeskbrokerError("a desktop session has no current URL")

    @_refusable
    async def left_mouse_down(self, x: int | None = None, y: int | None = None) -> None:
        """Starts a press; sent with :meth:`left_mouse_up` as one drag (or click)."""
        start = self._at(x, y)
        self._mouse_down = [start]

    @_refusable
    async def left_mouse_up(self, x: int | None = None, y: int | None = None) -> None:
        if self._mouse_down is None:
            raise _NotSent("left_mouse_up without left_mouse_down")
        points = self._mouse_down
        self._mouse_down = None
        end = self._at(x, y)
        if points[-1] != end:
            points.append(end)
        if len(points) == 1:
            await self.click(end[0], end[1])
        else:
            await self.drag(points)

    def _at(self, x: int | None, y: int | None) -> tuple[int, int]:
        if x is not None and y is not None:
            return (x, y)
        if x is None and y is None and self._pointer is not None:
            return self._pointer
        raise _NotSent("give both x and y (the pointer position is not known yet)")


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _point(point: Any) -> tuple[int, int]:
    if isinstance(point, dict):
        x, y = point.get("x"), point.get("y")
    elif isinstance(point, (tuple, list)) and len(point) == 2:
        x, y = point
    else:
        raise _NotSent(f"drag point {point!r} is neither (x, y) nor {{'x', 'y'}}")
    if not isinstance(x, int) or not isinstance(y, int) or isinstance(x, bool) or isinstance(y, bool):
        raise _NotSent(f"drag point {point!r} needs integer x and y")
    return (x, y)
