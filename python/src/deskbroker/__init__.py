"""deskbroker: drive deskbroker desktops from Python.

- :class:`Client`: the async HTTP client (Unix socket or TLS), one method per route;
  ``Client()`` connects to :func:`default_socket`, where ``deskbroker serve`` listens by default.
- :class:`SyncClient`: the same methods, blocking (the async client on a private loop thread).
- :class:`DeskbrokerComputer`: an OpenAI Agents SDK ``AsyncComputer`` / cua
  ``AsyncComputerHandler`` over one session.
- :func:`load_environment` (``vf.load_environment("deskbroker")``): the CAD benchmark as a
  Verifiers environment (``deskbroker.verifiers_env``; needs the ``verifiers`` extra).
"""

from typing import Any

from ._paths import default_socket
from .client import (
    ApiError,
    Client,
    DeskbrokerError,
    FrameWithheld,
    Session,
    TransportError,
    artifact_bytes,
    png_bytes,
    screenshot_base64,
)
from .computer import DeskbrokerComputer
from .sync import SyncClient


def load_environment(*args: Any, **kwargs: Any) -> Any:
    """The CAD benchmark as a Verifiers environment: what ``vf.load_environment("deskbroker",
    **args)`` calls (Verifiers imports the module named by the environment id and calls its
    ``load_environment``). Arguments: :func:`deskbroker.verifiers_env.load_environment`."""
    from .verifiers_env import load_environment as load

    return load(*args, **kwargs)


__all__ = [
    "ApiError",
    "Client",
    "DeskbrokerComputer",
    "DeskbrokerError",
    "FrameWithheld",
    "Session",
    "SyncClient",
    "TransportError",
    "artifact_bytes",
    "default_socket",
    "load_environment",
    "png_bytes",
    "screenshot_base64",
]
