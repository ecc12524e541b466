"""Which Verifiers the environment runs on: 0.3 (``deskbroker.verifiers_env``, the
``StatefulToolEnv``; exercised by test_verifiers.py) and 0.4 (``deskbroker.verifiers_v1``, the
taskset and harness of ``verifiers.v1``; exercised by test_verifiers_v1.py in a venv of its own).
``deskbroker.load_environment`` picks the module by the installed version, read from the
package metadata; any other version (below 0.3.1, 0.5 or later, none) fails at once with an
ImportError naming the version found and the range supported, and each version's module refuses
the other version with a message naming the module to use. The 0.4 stand-in below has 0.4.0's
package root as installed from PyPI (``verifiers/__init__.py`` of the 0.4.0 wheel: nothing but
``__version__``)."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

import deskbroker
from deskbroker import _versions

SUPPORTED = ">=0.3.1,<0.5"


def installed(monkeypatch: pytest.MonkeyPatch, found: str | None) -> None:
    """The version the package metadata reports (``None``: not installed)."""
    def version(name: str) -> str:
        assert name == "verifiers"
        if found is None:
            raise _versions.PackageNotFoundError(name)
        return found
    monkeypatch.setattr(_versions, "version", version)


def verifiers_0_4_root() -> types.ModuleType:
    root = types.ModuleType("verifiers")
    root.__version__ = "0.4.0"  # type: ignore[attr-defined]
    root.__path__ = []  # type: ignore[attr-defined]
    return root


@pytest.mark.parametrize("found", ["0.5.0", "1.0.0", "0.3.0", "0.2.1", None])
def test_an_unsupported_version_names_itself_and_the_range(monkeypatch: pytest.MonkeyPatch,
                                                           found: str | None) -> None:
    installed(monkeypatch, found)
    with pytest.raises(ImportError) as refused:
        deskbroker.load_environment("deskbroker", tasks=["task-001"])
    message = str(refused.value)
    assert f"needs verifiers {SUPPORTED}" in message
    assert f"found {found or 'none'}:" in message


def test_the_0_3_module_under_0_4_names_the_0_4_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "verifiers", verifiers_0_4_root())
    monkeypatch.delitem(sys.modules, "deskbroker.verifiers_env", raising=False)
    with pytest.raises(ImportError, match=r"found 0\.4\.0, which has no StatefulToolEnv: under "
                                          r"verifiers 0\.4 use deskbroker\.verifiers_v1"):
        importlib.import_module("deskbroker.verifiers_env")
    assert "deskbroker.verifiers_env" not in sys.modules


def test_the_0_4_module_under_0_3_names_the_0_3_module(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, "0.3.1")
    monkeypatch.delitem(sys.modules, "deskbroker.verifiers_v1", raising=False)
    with pytest.raises(ImportError, match=r"found verifiers 0\.3\.1: under verifiers 0\.3 use "
                                          r"deskbroker\.verifiers_env"):
        importlib.import_module("deskbroker.verifiers_v1")
    assert "deskbroker.verifiers_v1" not in sys.modules


def test_versions_are_read_from_the_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, "0.4.0")
    assert _versions.verifiers_version() == (0, 4, 0) and _versions.verifiers_is_v1()
    installed(monkeypatch, "0.3.1")
    assert _versions.verifiers_version() == (0, 3, 1) and not _versions.verifiers_is_v1()
    installed(monkeypatch, "0.4.2.dev3")
    assert _versions.verifiers_is_v1()
    installed(monkeypatch, "0.5.0")
    assert not _versions.verifiers_is_v1()
    installed(monkeypatch, "main")
    assert _versions.verifiers_version() is None


def test_the_messages_state_the_range_the_package_pins() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["verifiers"]
    assert extra == [f"verifiers{SUPPORTED}"]
    source = (Path(deskbroker.__file__).parent / "__init__.py").read_text()
    assert re.search(rf"needs verifiers {re.escape(SUPPORTED)}", source)
    tested = [d for d in pyproject["project"]["optional-dependencies"]["test"]
              if d.startswith("verifiers")]
    assert tested == ["verifiers==0.3.1"]
    # 0.4 is tested in a venv of its own (made by python-venvs.sh, at the version it pins),
    # running the 0.4 tests (test-python.sh).
    scripts = Path(__file__).parents[2] / "scripts"
    assert "verifiers==0.4.0" in (scripts / "python-venvs.sh").read_text()
    assert "tests/test_verifiers_v1.py" in (scripts / "test-python.sh").read_text()
