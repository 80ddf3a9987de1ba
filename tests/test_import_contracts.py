"""The import contracts (``.importlinter``) cover every module, and catch a bad one.

The layers contract names curfew_core's children by package, so every module
inside a package is held by its package's layer. A module or package added at
curfew_core's root would be in no layer, and so bound by nothing: the first
test fails until it is placed. The others plant a bad import in a copy of the
tree and run ``lint-imports`` on it, so a contract that stopped seeing
anything (a typo in a name, a container that matches nothing) fails here
rather than passing in silence; the untouched copy is the control.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _layered() -> set[str]:
    parser = configparser.ConfigParser()
    parser.read(CONTRACTS)
    layers = parser["importlinter:contract:layers"]["layers"]
    return {name.strip() for name in re.split(r"[|:\n]", layers) if name.strip()}


def _children(package: Path) -> set[str]:
    """A package's modules and subpackages, by name (``__init__`` aside)."""
    names = {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
    names |= {path.name for path in package.iterdir() if (path / "__init__.py").exists()}
    return names


def test_every_child_of_curfew_core_is_in_a_layer() -> None:
    missing = _children(ROOT / "curfew_core") - _layered()
    assert not missing, (
        f"curfew_core.{', curfew_core.'.join(sorted(missing))} is in no layer of .importlinter: "
        "place it (or move it into the package it belongs to), so the layers bind it"
    )
    stale = _layered() - _children(ROOT / "curfew_core")
    assert not stale, f".importlinter names layers that do not exist: {sorted(stale)}"


def test_the_coverage_check_sees_a_new_root_module(tmp_path: Path) -> None:
    """Control for the test above: a stray root module is found."""
    package = tmp_path / "curfew_core"
    shutil.copytree(ROOT / "curfew_core", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "stray.py").write_text("")
    assert "stray" in _children(package) - _layered()


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", "--config", str(tree / ".importlinter")],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("contracts")
    for package in ("curfew_core", "curfew_site"):
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(CONTRACTS, tree / ".importlinter")
    return tree


#: (where the bad module goes, what it imports, the contract it breaks)
PLANTED = [
    ("curfew_core/engine/leak.py", "from curfew_core.web import shell", "layers"),
    ("curfew_core/engine/leak.py", "import django.db", "standard library"),
    ("curfew_core/services/leak.py", "from curfew_core.api import views", "layers"),
    ("curfew_core/api/leak.py", "from curfew_core.web import words", "layers"),
    ("curfew_core/schedules/leak.py", "from curfew_core.services import schedules", "layers"),
    ("curfew_core/web/leak.py", "from curfew_core.models import Schedule", "Models are touched"),
    ("curfew_core/store/leak.py", "import curfew_site.settings_base", "never imports the site"),
]


def test_the_untouched_copy_keeps_every_contract(copy: Path) -> None:
    result = _lint(copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("where", "line", "contract"), PLANTED, ids=[p[0] + ": " + p[1] for p in PLANTED]
)
def test_a_planted_bad_import_is_caught(copy: Path, where: str, line: str, contract: str) -> None:
    leak = copy / where
    leak.write_text(line + "\n")
    try:
        result = _lint(copy)
    finally:
        leak.unlink()
    assert result.returncode != 0, result.stdout
    broken = [part for part in result.stdout.split("\n\n") if "BROKEN" in part]
    assert any(contract in part for part in broken), result.stdout
    assert where.removesuffix(".py").replace("/", ".") in result.stdout
