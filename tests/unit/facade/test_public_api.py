"""The public API of the engine package: `from reasoner import Materialization, Delta, ...`."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module
from inspect import isfunction

import pytest

import reasoner
from tests.conftest import REPO_ROOT


def test_every_public_name_is_defined_in_the_module_it_names() -> None:
    """The face lists where each name is defined, not a module that re-exports it."""
    assert sorted(reasoner.__all__) == sorted({**reasoner._PUBLIC, **reasoner._MODULES})
    for name, module in reasoner._PUBLIC.items():
        value = getattr(reasoner, name)
        assert value is getattr(import_module(module), name)
        if isinstance(value, type) or isfunction(value):
            assert value.__module__ == module and value.__name__ == name
    for name, module in reasoner._MODULES.items():
        assert getattr(reasoner, name) is import_module(module)
    with pytest.raises(AttributeError):
        reasoner.NotPublic  # noqa: B018


def test_importing_the_package_loads_no_polars() -> None:
    """The parser and the command line's start do not pay for the engine's libraries."""
    code = "import sys, reasoner, reasoner.syntax; print('polars' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    assert result.stdout.strip() == "False"


def test_the_engine_never_imports_the_service() -> None:
    """`reasoner serve` comes from the service's entry point (`service.cli`): no module of the
    engine names the service, so the engine installs and runs without it."""
    import ast

    for path in (REPO_ROOT / "reasoner").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(name.split(".")[0] == "service" for name in names), path
    result = subprocess.run(
        [sys.executable, "-m", "reasoner.cli.main", "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=True,
    )
    assert "--port" in result.stdout
