"""The configuration reference is written from the settings' own declarations.

``docs/configuration.md`` is generated (``make docs``) from what
``curfew_site.env`` records as the settings read the environment, plus the
variables ``bin/serve`` reads itself (``curfew_site.configuration``). These
tests keep it so: the file is what the generator writes, the generator writes
the same whatever environment it runs in, and nothing reads a variable that
is not declared.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from curfew_site import configuration, env

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "configuration.md"
SERVE_SCRIPT = ROOT / "bin" / "serve"
#: Python that reads the environment: the site, the app, and manage.py.
SOURCES = ("curfew_site", "curfew_core", "manage.py")

#: Read, but not Curfew's configuration: what each one is instead.
NOT_CONFIGURATION = {
    "DJANGO_SETTINGS_MODULE": "Django's own choice of settings module (asgi.py sets its default)",
    "PYTEST_XDIST_WORKER": "set by pytest-xdist in its workers; read by the test settings only",
    "CURFEW_MANAGE_REEXEC": "manage.py's mark that it already re-ran itself with .venv's Python",
}

HELPERS = {"env_str", "env_bool", "env_int", "env_float", "env_list", "env_rate", "env_choice"}


def _is_environ(node: ast.expr) -> bool:
    """``os.environ`` or a bare ``environ``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name)
    return isinstance(node, ast.Name) and node.id == "environ"


def reads_in(source: str) -> tuple[set[str], list[int]]:
    """The variable names a module reads, and the lines of reads by a computed name."""
    names: set[str] = set()
    computed: list[int] = []
    tree = ast.parse(source)
    #: Module-level ``NAME = "TEXT"``: a variable read by a named constant is read by name.
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def key(node: ast.expr | None, line: int) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
        elif isinstance(node, ast.Name) and node.id in constants:
            names.add(constants[node.id])
        else:
            computed.append(line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            key(node.slice, node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            first = node.args[0] if node.args else None
            if isinstance(func, ast.Attribute) and func.attr in {"get", "setdefault", "pop"}:
                if _is_environ(func.value):
                    key(first, node.lineno)
            elif (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                isinstance(func, ast.Name) and func.id in HELPERS | {"getenv"}
            ):
                key(first, node.lineno)
    return names, computed


def python_reads() -> dict[str, set[str]]:
    """Every variable read in ``SOURCES`` (``curfew_site/env.py`` reads the names
    its callers give it), with the files reading it."""
    found: dict[str, set[str]] = {}
    for source in SOURCES:
        top = ROOT / source
        for path in [top] if top.is_file() else sorted(top.rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative == "curfew_site/env.py":
                continue
            names, computed = reads_in(path.read_text(encoding="utf-8"))
            assert not computed, (
                f"{relative} reads the environment by a computed name (lines {computed}): "
                "read each variable by its name, through curfew_site.env"
            )
            for name in names:
                found.setdefault(name, set()).add(relative)
    return found


def serve_reads() -> dict[str, str | None]:
    """What ``bin/serve`` reads from its environment: each ``$NAME`` it does not
    assign itself, and each ``${NAME:-default}`` or ``${NAME:?...}``, with the
    literal default if there is one."""
    script = SERVE_SCRIPT.read_text(encoding="utf-8")
    code = "\n".join(line.split("#", 1)[0] for line in script.splitlines())
    assigned = set(re.findall(r"^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)=", code, re.M))
    reads: dict[str, str | None] = {}
    for name, how, default in re.findall(r"\$\{([A-Z_][A-Z0-9_]*):([-?])([^}]*)\}", code):
        reads[name] = default if how == "-" and not default.startswith("$") else None
    for name in re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", code):
        if name not in assigned:
            reads.setdefault(name, None)
    return reads


def test_the_reference_is_what_make_docs_writes() -> None:
    assert REFERENCE.exists(), "docs/configuration.md is missing: run `make docs`"
    written = REFERENCE.read_text(encoding="utf-8")
    assert written == configuration.render(), (
        "docs/configuration.md differs from the settings' declarations: run `make docs`"
    )


def test_the_reference_does_not_depend_on_the_environment_it_is_made_in(tmp_path: Path) -> None:
    """A default that follows another setting (HTTPS outside debug, say) must be
    declared with ``shown=``: otherwise debug on a developer's machine would
    write a different reference than CI checks."""
    keep = {"PATH", "HOME", "LANG", "SYSTEMROOT"}
    environment = {key: value for key, value in os.environ.items() if key in keep}
    environment.update(
        CURFEW_DEBUG="1",
        CURFEW_HTTPS="0",
        REDIS_URL="redis://127.0.0.1:1/0",
        DATABASE_URL=f"sqlite:///{tmp_path / 'elsewhere.sqlite3'}",
        CURFEW_STATIC_ROOT=str(tmp_path / "static"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "curfew_site.configuration"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == configuration.render()


def test_every_variable_read_is_declared() -> None:
    declared = configuration.declared()
    undeclared = {
        name: sorted(files)
        for name, files in python_reads().items()
        if name not in declared and name not in NOT_CONFIGURATION
    }
    assert not undeclared, (
        f"read but not declared: {undeclared}; read them through curfew_site.env with "
        "help=... (or list them in NOT_CONFIGURATION with the reason)"
    )
    unknown = set(serve_reads()) - set(declared) - set(NOT_CONFIGURATION)
    assert not unknown, (
        f"bin/serve reads {sorted(unknown)}: declare them in curfew_site/configuration.py"
    )


def test_bin_serve_declarations_are_its_own() -> None:
    """Each declared ``bin/serve`` variable is read there, with the default shown."""
    reads = serve_reads()
    for variable in configuration.SERVE_VARIABLES:
        assert variable.name in reads, f"bin/serve no longer reads {variable.name}"
        literal = reads[variable.name]
        if literal is not None:
            assert variable.default == f"`{literal}`", (variable.name, literal)


def test_the_scan_sees_every_kind_of_read() -> None:
    """Control: the source scan finds what it is for."""
    sample = (
        "import os\n"
        "from os import environ\n"
        "a = os.environ['A']\n"
        "b = os.environ.get('B', '')\n"
        "c = os.getenv('C')\n"
        "d = environ.get('D')\n"
        "e = env_int('E', 1, help='e')\n"
        "f = os.environ.get(name)\n"
        "MARK = 'G'\n"
        "g = os.environ.pop(MARK, None)\n"
    )
    names, computed = reads_in(sample)
    assert names == {"A", "B", "C", "D", "E", "G"}
    assert computed == [8]


def test_a_declaration_needs_its_meaning() -> None:
    before = dict(env.DECLARED)
    with pytest.raises(ValueError, match="CURFEW_NOTHING"):
        env.declare("CURFEW_NOTHING", kind="text", default="unset", help=" ")
    assert before == env.DECLARED
