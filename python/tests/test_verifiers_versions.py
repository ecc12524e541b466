"""Which Verifiers the environment runs on: 0.3 (the pin, exercised by test_verifiers.py); under
0.4, whose package root exports nothing but ``__version__`` (its stack is ``verifiers.v1``:
tasksets, harnesses, MCP toolsets; no ``StatefulToolEnv``), importing the environment or calling
``deskbroker.load_environment`` fails at once with an ImportError naming the version found and
the range needed, not an AttributeError mid-way. The stand-in below has 0.4.0's root as
installed from PyPI (``verifiers/__init__.py`` of the 0.4.0 wheel)."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

import deskbroker


def verifiers_0_4() -> types.ModuleType:
    root = types.ModuleType("verifiers")
    root.__version__ = "0.4.0"  # type: ignore[attr-defined]
    root.__path__ = []  # type: ignore[attr-defined]
    return root


@pytest.fixture
def under_0_4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "verifiers", verifiers_0_4())
    monkeypatch.delitem(sys.modules, "deskbroker.verifiers_env", raising=False)


def test_importing_the_environment_under_0_4_names_the_version_and_the_pin(under_0_4: None) -> None:
    with pytest.raises(ImportError, match=r"needs verifiers 0\.3 \(>=0\.3\.1,<0\.4\); found 0\.4\.0"):
        importlib.import_module("deskbroker.verifiers_env")
    assert "deskbroker.verifiers_env" not in sys.modules


def test_load_environment_under_0_4_fails_the_same_way(under_0_4: None) -> None:
    with pytest.raises(ImportError, match="found 0.4.0, which has no StatefulToolEnv"):
        deskbroker.load_environment("deskbroker", tasks=["task-001"])


def test_the_message_states_the_range_the_package_pins() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["verifiers"]
    assert extra == ["verifiers>=0.3.1,<0.4"]
    source = (Path(deskbroker.__file__).parent / "verifiers_env.py").read_text()
    assert re.search(r"needs verifiers 0\.3 \(>=0\.3\.1,<0\.4\)", source)
    tested = [d for d in pyproject["project"]["optional-dependencies"]["test"]
              if d.startswith("verifiers")]
    assert tested == ["verifiers==0.3.1"]
