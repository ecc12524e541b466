"""deskbroker: drive deskbroker desktops from Python.

- :class:`Client`: the async HTTP client (Unix socket or TLS), one method per route;
  ``Client()`` connects to :func:`default_socket`, where ``deskbroker serve`` listens by default.
- :class:`SyncClient`: the same methods, blocking (the async client on a private loop thread).
- :class:`DeskbrokerComputer`: an OpenAI Agents SDK ``AsyncComputer`` / cua
  ``AsyncComputerHandler`` over one session.
- :func:`load_environment` (``vf.load_environment("deskbroker")``): the CAD benchmark as a
  Verifiers environment (needs the ``verifiers`` extra): under Verifiers 0.3 the
  ``StatefulToolEnv`` of ``deskbroker.verifiers_env``, under 0.4 the env of
  ``deskbroker.verifiers_v1``. Under 0.4 this package also exports the taskset, harness and env
  classes Verifiers looks up by the taskset id ``deskbroker`` (``vf-eval deskbroker``); they
  are imported on first use, so ``import deskbroker`` never imports Verifiers.
"""

from typing import Any

from ._versions import verifiers_installed, verifiers_is_v1, verifiers_version
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


# The Verifiers 0.4 plugin classes, exported lazily from ``deskbroker.verifiers_v1``.
_VERIFIERS_V1 = ("DeskbrokerEnv", "DeskbrokerHarness", "DeskbrokerTaskset")


def _supported() -> tuple[int, int, int]:
    found = verifiers_version()
    if found is None or not ((0, 3, 1) <= found < (0, 5)):
        raise ImportError(
            "deskbroker's Verifiers environment needs verifiers >=0.3.1,<0.5 (0.3: "
            f"StatefulToolEnv, 0.4: verifiers.v1); found {verifiers_installed() or 'none'}: "
            "pip install 'deskbroker[verifiers]'")
    return found


def load_environment(*args: Any, **kwargs: Any) -> Any:
    """The CAD benchmark as a Verifiers environment: what ``vf.load_environment("deskbroker",
    **args)`` calls under Verifiers 0.3 (it imports the module named by the environment id and
    calls its ``load_environment``). The same arguments build the 0.4 env under Verifiers 0.4
    (:func:`deskbroker.verifiers_v1.load_environment`, taskset ``deskbroker``). Arguments:
    :func:`deskbroker.verifiers_env.load_environment`."""
    if _supported() >= (0, 4, 0):
        from .verifiers_v1 import load_environment as load_v1

        return load_v1(*args, **kwargs)
    from .verifiers_env import load_environment as load

    return load(*args, **kwargs)


def __getattr__(name: str) -> Any:
    if name in _VERIFIERS_V1:
        from . import verifiers_v1

        return getattr(verifiers_v1, name)
    raise AttributeError(f"module 'deskbroker' has no attribute {name!r}")


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
# Verifiers 0.4 finds a taskset's classes through its package's ``__all__``.
if verifiers_is_v1():
    __all__ += _VERIFIERS_V1
