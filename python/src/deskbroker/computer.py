"""`DeskbrokerComputer`: one broker session as an OpenAI Agents SDK ``AsyncComputer`` that also
satisfies cua's ``AsyncComputerHandler`` protocol.

Each call becomes exactly one broker action with an ``intent`` naming the call. The broker's
action schema has no separate press and release, so cua's ``left_mouse_down``/``left_mouse_up``
pair is sent as one ``drag`` along the points seen between them (a ``click`` when the pointer did
not move). Held ``keys`` of the Agents SDK become the action's ``modifiers`` (shift, ctrl, alt; any
other held key is refused before anything is sent).
"""

from __future__ import annotations

from typing import Any, Literal

from .client import Client, DeskbrokerError

try:  # The Agents SDK is optional: without it the class is a plain object with the same methods.
    from agents.computer import AsyncComputer as _Base
except ImportError:  # pragma: no cover - exercised only without the extra installed
    _Base = object  # type: ignore[assignment,misc]

__all__ = ["DeskbrokerComputer"]

_MODIFIERS = {"shift": "shift", "ctrl": "ctrl", "control": "ctrl", "alt": "alt"}
_BUTTONS = {"left": "left", "right": "right", "wheel": "middle", "middle": "middle"}
# Scroll amounts arrive in pixels from the Agents SDK/cua; the broker scrolls in wheel notches.
SCROLL_PIXELS_PER_NOTCH = 100


def _modifiers(keys: list[str] | None) -> list[str]:
    out: list[str] = []
    for key in keys or []:
        name = _MODIFIERS.get(key.lower())
        if name is None:
            raise DeskbrokerError(f"held key {key!r} is not a modifier (shift, ctrl, alt)")
        if name not in out:
            out.append(name)
    return out


def _button(button: str) -> str:
    name = _BUTTONS.get(button)
    if name is None:
        raise DeskbrokerError(f"mouse button {button!r} is not supported (left, right, wheel)")
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
                 first_screenshot_b64: str) -> None:
        self.client = client
        self.session_id = session_id
        self._width = width
        self._height = height
        self._last_png_b64 = first_screenshot_b64
        # The id of the last image handed to the model by `screenshot()`: every action names it,
        # so that the broker refuses coordinates read from a stale image before any input.
        self._shown_id: str | None = None
        self._mouse_down: list[tuple[int, int]] | None = None
        self._pointer: tuple[int, int] | None = None
        self.last_response: dict[str, Any] | None = None

    @classmethod
    async def create(cls, client: Client, *, task_id: str, attempt_id: str,
                     profile: str | None = None) -> DeskbrokerComputer:
        lease = await client.lease(task_id, attempt_id, profile)
        session_id = str(lease["session_id"])
        try:
            reset = await client.reset(session_id)
        except BaseException:
            await client.release(session_id)
            raise
        shot = reset["screenshot"]
        return cls(client, session_id, int(shot["width"]), int(shot["height"]),
                   str(shot["png_base64"]))

    async def dispose(self) -> None:
        await self.client.release(self.session_id)

    async def __aenter__(self) -> DeskbrokerComputer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.dispose()

    async def _act(self, action: dict[str, Any]) -> None:
        answer = await self.client.act(self.session_id, action, screenshot_id=self._shown_id)
        self.last_response = answer
        shot = answer["screenshot"]
        if shot is None:
            # Delivered without a frame (the receipt names the failed observation): the action
            # counts; take a fresh one.
            shot = await self.client.screenshot(self.session_id)
        self._last_png_b64 = str(shot["png_base64"])

    # -- Agents SDK AsyncComputer -----------------------------------------------------------

    @property
    def environment(self) -> Literal["ubuntu"]:
        return "ubuntu"

    @property
    def dimensions(self) -> tuple[int, int]:
        return (self._width, self._height)

    async def screenshot(self, text: str | None = None) -> str:
        """A fresh capture, base64 PNG (``text`` is cua's optional caption, ignored)."""
        shot = await self.client.screenshot(self.session_id)
        self._last_png_b64 = str(shot["png_base64"])
        shown = shot.get("screenshot_id")
        self._shown_id = str(shown) if shown is not None else None
        return self._last_png_b64

    async def click(self, x: int, y: int, button: str = "left", *,
                    keys: list[str] | None = None) -> None:
        action: dict[str, Any] = {"type": "click", "x": x, "y": y, "button": _button(button),
                                  "intent": f"click {button} at ({x}, {y})"}
        if modifiers := _modifiers(keys):
            action["modifiers"] = modifiers
        await self._act(action)
        self._pointer = (x, y)

    async def double_click(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        action: dict[str, Any] = {"type": "double_click", "x": x, "y": y,
                                  "intent": f"double-click at ({x}, {y})"}
        if modifiers := _modifiers(keys):
            action["modifiers"] = modifiers
        await self._act(action)
        self._pointer = (x, y)

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

    async def type(self, text: str) -> None:
        await self._act({"type": "type", "text": text, "intent": f"type {len(text)} characters"})

    async def wait(self, ms: int = 1000) -> None:
        """A broker ``wait`` of ``ms`` milliseconds (the Agents SDK calls it without one)."""
        await self._act({"type": "wait", "milliseconds": ms, "intent": f"wait {ms} ms"})

    async def move(self, x: int, y: int, *, keys: list[str] | None = None) -> None:
        if keys:
            raise DeskbrokerError("the broker's move takes no held keys")
        await self._act({"type": "move", "x": x, "y": y, "intent": f"move to ({x}, {y})"})
        self._pointer = (x, y)
        if self._mouse_down is not None:
            self._mouse_down.append((x, y))

    async def keypress(self, keys: list[str] | str) -> None:
        """A chord: ``["ctrl", "s"]`` (Agents SDK) or ``"ctrl+s"`` (cua)."""
        chord = keys.split("+") if isinstance(keys, str) else list(keys)
        names = [key.strip().lower() for key in chord]
        await self._act({"type": "key", "keys": names, "intent": f"press {'+'.join(names)}"})

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

    # -- cua AsyncComputerHandler -----------------------------------------------------------

    async def get_environment(self) -> Literal["linux"]:
        return "linux"

    async def get_dimensions(self) -> tuple[int, int]:
        return self.dimensions

    async def get_current_url(self) -> str:
        raise DeskbrokerError("a desktop session has no current URL")

    async def left_mouse_down(self, x: int | None = None, y: int | None = None) -> None:
        """Starts a press; sent with :meth:`left_mouse_up` as one drag (or click)."""
        start = self._at(x, y)
        self._mouse_down = [start]

    async def left_mouse_up(self, x: int | None = None, y: int | None = None) -> None:
        if self._mouse_down is None:
            raise DeskbrokerError("left_mouse_up without left_mouse_down")
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
        raise DeskbrokerError("give both x and y (the pointer position is not known yet)")


def _point(point: Any) -> tuple[int, int]:
    if isinstance(point, dict):
        x, y = point.get("x"), point.get("y")
    elif isinstance(point, (tuple, list)) and len(point) == 2:
        x, y = point
    else:
        raise DeskbrokerError(f"drag point {point!r} is neither (x, y) nor {{'x', 'y'}}")
    if not isinstance(x, int) or not isinstance(y, int) or isinstance(x, bool) or isinstance(y, bool):
        raise DeskbrokerError(f"drag point {point!r} needs integer x and y")
    return (x, y)
