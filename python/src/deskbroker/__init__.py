"""deskbroker: drive deskbroker desktops from Python.

- :class:`Client`: the async HTTP client (Unix socket or TLS), one method per route;
  ``Client()`` connects to :func:`default_socket`, where ``deskbroker serve`` listens by default.
- :class:`DeskbrokerComputer`: an OpenAI Agents SDK ``AsyncComputer`` / cua
  ``AsyncComputerHandler`` over one session.
- ``deskbroker.verifiers_env.load_environment``: the CAD benchmark as a Verifiers environment.
"""

from ._paths import default_socket
from .client import (
    ApiError,
    Client,
    DeskbrokerError,
    Session,
    TransportError,
    artifact_bytes,
    png_bytes,
)
from .computer import DeskbrokerComputer

__all__ = [
    "ApiError",
    "Client",
    "DeskbrokerComputer",
    "DeskbrokerError",
    "Session",
    "TransportError",
    "artifact_bytes",
    "default_socket",
    "png_bytes",
]
