"""Screenshots scaled to a model's size, and the model's coordinates mapped back exactly.

Each axis on its own: a model pixel ``x`` of ``w`` stands for the screen pixels
``[x * W / w, (x + 1) * W / w)``; it maps to the screen pixel under its centre,
``floor((x + 0.5) * W / w)``, in integers. For every ``x`` in ``0..w`` (``w <= W``) mapping back,
``floor((sx + 0.5) * w / W)``, gives ``x`` again. Only downscaling: a model size larger than
the screen adds no detail.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

from .client import DeskbrokerError

__all__ = ["Scale"]


@dataclass(frozen=True)
class Scale:
    """The screen's size and the size the model sees."""

    screen: tuple[int, int]
    model: tuple[int, int]

    def __post_init__(self) -> None:
        for axis, (size, limit) in zip("xy", zip(self.model, self.screen)):
            if type(size) is not int or not 1 <= size <= limit:
                raise DeskbrokerError(
                    f"model size {self.model} must be integers within the screen's "
                    f"{self.screen[0]}x{self.screen[1]} ({axis} is {size!r})")

    @property
    def identity(self) -> bool:
        return self.screen == self.model

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        """The screen pixel a model pixel stands for (the one under its centre)."""
        (sw, sh), (mw, mh) = self.screen, self.model
        return ((2 * x + 1) * sw // (2 * mw), (2 * y + 1) * sh // (2 * mh))

    def to_model(self, x: int, y: int) -> tuple[int, int]:
        """The model pixel showing a screen pixel."""
        (sw, sh), (mw, mh) = self.screen, self.model
        return ((2 * x + 1) * mw // (2 * sw), (2 * y + 1) * mh // (2 * sh))

    def image(self, png_base64: str) -> str:
        """The screenshot resized to the model's size (base64 PNG)."""
        if self.identity:
            return png_base64
        try:
            from PIL import Image
        except ImportError:
            raise DeskbrokerError(
                "screenshot scaling needs Pillow: pip install 'deskbroker[scaling]'") from None
        with Image.open(io.BytesIO(base64.b64decode(png_base64, validate=True))) as image:
            if image.size != self.screen:
                raise DeskbrokerError(f"the screenshot is {image.size}, not the screen's "
                                      f"{self.screen}")
            resized = image.convert("RGB").resize(self.model, Image.Resampling.LANCZOS)
        out = io.BytesIO()
        resized.save(out, format="PNG")
        return base64.b64encode(out.getvalue()).decode()
