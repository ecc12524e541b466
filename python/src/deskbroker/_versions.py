"""Which Verifiers is installed, read from its package metadata (nothing is imported):
``deskbroker.load_environment`` and the plugin exports pick the environment module by it
(0.3: :mod:`deskbroker.verifiers_env`, 0.4: :mod:`deskbroker.verifiers_v1`)."""

import re
from importlib.metadata import PackageNotFoundError, version


def verifiers_installed() -> str | None:
    """The installed Verifiers' version string, or ``None`` (read from its metadata; nothing
    is imported)."""
    try:
        return version("verifiers")
    except PackageNotFoundError:
        return None


def verifiers_version() -> tuple[int, int, int] | None:
    """The installed Verifiers' (major, minor, patch): ``None`` without Verifiers or with a
    version string that does not start with numbers."""
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", verifiers_installed() or "")
    return (int(found[1]), int(found[2]), int(found[3] or 0)) if found else None


def verifiers_is_v1() -> bool:
    """Whether the installed Verifiers is 0.4 (``verifiers.v1``, the taskset and harness)."""
    return (0, 4) <= (verifiers_version() or (0, 0, 0)) < (0, 5)
