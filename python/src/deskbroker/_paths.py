"""Where the broker's socket is by default: the same rule as ``deskbroker serve``
(``crates/deskbroker/src/paths.rs``) and its ``DESKBROKER_SOCKET`` variable.

1. ``$DESKBROKER_SOCKET`` when set and non-empty (``serve --socket`` reads it too);
2. ``$XDG_RUNTIME_DIR/deskbroker.sock`` when ``XDG_RUNTIME_DIR`` is set and non-empty;
3. ``/tmp/deskbroker-$UID/deskbroker.sock`` otherwise (root, CI, containers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["default_socket"]


def default_socket(environ: Mapping[str, str] | None = None, uid: int | None = None) -> str:
    """The socket path a broker started without ``--socket`` listens on (see the module doc)."""
    env = os.environ if environ is None else environ
    explicit = env.get("DESKBROKER_SOCKET")
    if explicit:
        return explicit
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "deskbroker.sock")
    return f"/tmp/deskbroker-{os.getuid() if uid is None else uid}/deskbroker.sock"
