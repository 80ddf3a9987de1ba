"""Models are touched only by services and selectors.

``lint-imports`` (``make lint``, contracts in ``.importlinter``) keeps
``curfew_core.models`` out of every other module's imports; this test catches
what no import shows: a manager reached through ``get_user_model()`` or a model
passed around, e.g. ``get_user_model().objects.get(...)`` in a door.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "curfew_core"
#: Where queries belong (and Django's own plumbing around the models).
ALLOWED = ("services/", "selectors/", "migrations/", "models.py", "admin.py")
#: Known violations. Only shrinks (it is empty: a new one fails the test).
KNOWN: set[str] = set()
MANAGERS = {"objects", "_default_manager", "_base_manager"}


def _modules() -> list[Path]:
    return sorted(
        path
        for path in APP.rglob("*.py")
        if not path.relative_to(APP).as_posix().startswith(ALLOWED)
    )


def managers_used(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno} .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in MANAGERS
    ]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(APP).as_posix())
def test_no_model_manager_outside_services_and_selectors(path: Path) -> None:
    found = managers_used(path)
    if path.relative_to(APP).as_posix() in KNOWN:
        assert found, f"{path.name} no longer queries: drop it from KNOWN"
        return
    assert not found, f"query through a selector or service instead: {found}"


def test_the_check_sees_a_manager(tmp_path: Path) -> None:
    """Control: the walker finds ``get_user_model().objects`` in a door-like module."""
    sample = tmp_path / "door.py"
    sample.write_text(
        "from django.contrib.auth import get_user_model\n"
        "def view(pk):\n"
        "    return get_user_model().objects.get(pk=pk)\n"
    )
    assert managers_used(sample)


def test_the_import_contracts_keep_no_exceptions() -> None:
    """Doors do not import each other and only services and selectors import
    the models, with no known violation left: ``lint-imports`` checks the
    contracts, this checks that none of them is waived."""
    from configparser import ConfigParser

    contracts = ConfigParser()
    contracts.read(APP.parent / ".importlinter", encoding="utf-8")
    waived = {
        name: contracts[name]["ignore_imports"]
        for name in contracts.sections()
        if "ignore_imports" in contracts[name]
    }
    assert not waived
