"""The engine is pure: standard library only, and it never reads a clock."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "curfew_core" / "engine"
FILES = sorted(ENGINE.glob("*.py"))

#: Clock reads: ``<module or class>.<attribute>(...)``.
CLOCK_CALLS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("time", "localtime"),
    ("time", "gmtime"),
}


def test_engine_files_found() -> None:
    names = {path.name for path in FILES}
    assert {"__init__.py", "clock.py", "decide.py", "schedule.py", "verdict.py"} <= names


def modules_after(statement: str) -> set[str]:
    probe = f"{statement}; import sys; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    return set(done.stdout.split())


def test_importing_the_engine_loads_no_third_party_module() -> None:
    loaded = modules_after("import curfew_core.engine")
    assert "curfew_core.engine.decide" in loaded  # the probe really imported it
    # What the interpreter loads by itself (site, .pth hooks) is not the engine's doing.
    added = loaded - modules_after("pass")
    # zoneinfo reads TZPATH through sysconfig, whose generated data module is
    # standard library but not listed in stdlib_module_names.
    stdlib = {*sys.stdlib_module_names, "curfew_core"}
    foreign = sorted(
        name
        for name in added
        if name.split(".")[0] not in stdlib and not name.startswith("_sysconfigdata_")
    )
    assert foreign == []
    assert not [name for name in loaded if name.startswith(("django", "holidays", "hypothesis"))]
    # Only the engine of the app: nothing that would pull Django in later.
    ours = {name for name in loaded if name.startswith("curfew_core")}
    assert ours <= {"curfew_core", "curfew_core.engine"} | {
        f"curfew_core.engine.{path.stem}" for path in FILES
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_import_is_stdlib_or_the_engine(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: use absolute imports"
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            engine = module == "curfew_core.engine" or module.startswith("curfew_core.engine.")
            assert top in sys.stdlib_module_names or top == "__future__" or engine, (
                f"{path.name}:{node.lineno} imports {module}"
            )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_clock_reads(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            assert (name, node.func.attr) not in CLOCK_CALLS, (
                f"{path.name}:{node.lineno} reads the clock ({name}.{node.func.attr})"
            )
        if isinstance(node, ast.ImportFrom) and node.module in {"time", "datetime"}:
            imported = {alias.name for alias in node.names}
            assert not imported & {"time", "time_ns", "monotonic", "perf_counter"}, (
                f"{path.name}:{node.lineno} imports a clock function"
            )


def test_the_scan_would_catch_a_clock_read() -> None:
    """The AST check itself works (a scan that finds nothing proves nothing)."""
    tree = ast.parse("import datetime\nx = datetime.datetime.now()\ny = time.time()\n")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            if (name, node.func.attr) in CLOCK_CALLS:
                found.append(node.func.attr)
    assert found == ["now", "time"]
