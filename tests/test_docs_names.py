"""The docs name only what exists (issue 43: "docs that hold").

Six of ten claims sampled from the docs no longer held: files moved, settings
renamed, links to headings that were split. Every page in ``docs/`` and the
README is read here, and each of its names is checked against the checkout:

- a relative link reaches a file, and its ``#anchor`` a heading of that page;
- a path in backticks (``curfew_core/edge/doors.py``, ``store/local_layer.py``,
  ``tests/x.py::test_y``) is a file or folder of the checkout (a short path
  is looked for under the packages it is short for);
- a ``CURFEW_…`` name is a setting some code reads, and a number said beside it
  (``CURFEW_LEDGER_RETENTION_DAYS`` (30)) is its default in the generated
  configuration reference;
- a dotted Python name (``selectors.verdicts.capsule_payload``,
  ``ledger_recorder.record_verdict``, ``Decision.origin``) whose first part is a
  module of the checkout (or a class of it) names something that module (or
  class) defines, and so does ``path/file.py:Name``; a name whose first part is
  none of ours (``json.dumps``, ``cachetools.LRUCache``) is not ours to check;
- a private name (``_steady``) is defined somewhere in the checkout;
- a module constant said with its number (``FLUSH_ROWS`` (5,000), or
  ``LEAD_MINUTES`` = 10) holds that number in the code.

Numbers are held where they are made: generated pages (configuration, clients,
benchmarks written by their benches) by their own tests.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "client" / "README.md",
        *ROOT.glob("docs/**/*.md"),
    ]
)
#: Where a short path (``edge/doors.py``) may stand: the packages' own folders.
SHORT_ROOTS = (ROOT, ROOT / "curfew_core", ROOT / "tests", ROOT / "client" / "src", ROOT / "client")
#: Records of past measurements, kept as written then (the files and settings
#: they name are history, like a changelog's): their links are still checked.
HISTORY = {ROOT / "docs" / "benchmarks" / "recorded.md"}
#: Folders a full path in backticks starts with.
TOP = (
    "curfew_core/",
    "curfew_site/",
    "curfew_testkit/",
    "tests/",
    "bench/",
    "client/",
    "templates/",
    "static/",
    "docs/",
    "bin/",
    "requirements/",
    "integrations/",
    "locale/",
    ".ci/",
)
#: Environment variables a page tells the user to make for their own tool
#: (Codex's ``env_http_headers`` reads the member's name from one): not ours.
USERS_OWN = {"CURFEW_USER"}
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`\n]+)`")
_PATHISH = re.compile(r"^[\w.-]+(/[\w.-]+)+/?$")
_SETTING = re.compile(r"\bCURFEW_[A-Z0-9_]*[A-Z0-9]\b")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def _links(page: Path) -> list[str]:
    return _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8")))


def _problems_of_links(page: Path) -> list[str]:
    problems = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        found = (page.parent / path).resolve() if path else page
        if not found.exists():
            problems.append(f"link to a missing file: {target}")
        elif anchor and found.suffix == ".md" and anchor not in _anchors(found):
            problems.append(f"link to a missing heading: {target}")
    return problems


def _exists(name: str) -> bool:
    name = name.split("::")[0].rstrip("/")
    name = re.sub(r":\d+(-\d+)?$", "", name)
    return any((root / name).exists() for root in SHORT_ROOTS)


def _problems_of_paths(page: Path) -> list[str]:
    problems = []
    for code in _CODE.findall(page.read_text(encoding="utf-8")):
        name = code.strip()
        first = name.split()[0] if name.split() else ""
        if first != name or not _PATHISH.match(name.split("::")[0]):
            continue
        if not (name.startswith(TOP) or re.search(r"\.(py|md|html|js|css|json|toml)$", name)):
            continue  # `a/b` prose (`fail_open/fail_closed`), a URL path
        if not _exists(name):
            problems.append(f"no such file: {name}")
    return problems


@functools.cache
def _read_settings() -> frozenset[str]:
    """Every ``CURFEW_…`` name some code or configuration of the checkout reads."""
    names: set[str] = set()
    for folder in (
        "curfew_core",
        "curfew_site",
        "client/src",
        "curfew_testkit",
        "bin",
        "bench",
        "tests",
    ):
        for path in (ROOT / folder).rglob("*"):
            if path == Path(__file__).resolve():
                continue  # this test's own made-up names
            if path.is_file() and path.suffix in {".py", ".sh", ".js", ".ts", ""}:
                try:
                    names.update(_SETTING.findall(path.read_text(encoding="utf-8")))
                except UnicodeDecodeError:
                    continue
    for path in (ROOT / "Makefile", ROOT / ".ci" / "run"):
        names.update(_SETTING.findall(path.read_text(encoding="utf-8")))
    return frozenset(names)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_name_in_the_docs_exists(page: Path) -> None:
    problems = _problems_of_links(page)
    if page in HISTORY:
        assert not problems, "\n".join(problems)
        return
    problems += _problems_of_paths(page)
    known = _read_settings()
    text = page.read_text(encoding="utf-8")
    problems += [
        f"no such setting: {name}"
        for name in sorted(set(_SETTING.findall(text)) - known - USERS_OWN)
        if not name.endswith("_")  # a family written as a prefix: CURFEW_RESETS_…
    ]
    assert not problems, "\n".join(problems)


def test_control_the_checks_catch_what_is_missing(tmp_path: Path) -> None:
    """A gate that never runs looks like a gate that declines."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[gone](nowhere.md) [bad anchor](#no-such) [fine](#title)\n"
        "`curfew_core/edge/no_such_module.py` `edge/doors.py` `store/nope.py`\n"
    )
    problems = _problems_of_links(page) + _problems_of_paths(page)
    assert problems == [
        "link to a missing file: nowhere.md",
        "link to a missing heading: #no-such",
        "no such file: curfew_core/edge/no_such_module.py",
        "no such file: store/nope.py",
    ]
    assert "CURFEW_NO_SUCH_THING" not in _read_settings()
    assert "CURFEW_CACHE_FRESH_SECONDS" in _read_settings()


# -- Python names and the numbers said beside them ----------------------------------

#: The packages whose modules a dotted name in the docs may start with.
PACKAGES = (
    ROOT / "curfew_core",
    ROOT / "curfew_site",
    ROOT / "curfew_testkit",
    ROOT / "client" / "src" / "curfew_client",
    ROOT / "client" / "src" / "curfew_cli",
)
#: Dotted names in the docs that are not Python, though a module has their
#: first part's name: loggers (``curfew.feed``), OpenAI's object types
#: (``chat.completion``), the client's report counters (``reports.dropped``).
NOT_PYTHON = {"curfew", "chat", "reports"}
#: A dotted name that is a file (``config.yaml``, ``py.typed`` aside: not ours either).
_FILE_LIKE = re.compile(r"\.(py|md|html|js|css|json|toml|txt|in|yaml|yml)$")
_DOTTED = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?$")
_FILE_NAME = re.compile(r"^([\w./-]+\.py):([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?(?:\(.*\))?$")
#: A number said with the constant or setting that holds it: ```NAME` (30``
#: (the name first), or ``5,000 decisions (`FLUSH_ROWS``` and ``30 hours,
#: `HORIZON``` (the number first, a few words between); the name may be
#: qualified (``heads_up.LEAD_MINUTES``).
_NAME_THEN_NUMBER = re.compile(r"`(?:[\w.]+\.)?([A-Z][A-Z0-9_]+)` \((\d[\d,]*(?:\.\d+)?)")
_NUMBER_THEN_NAME = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)(?:[\s,]+[A-Za-z-]+){0,3}"
    r"(?:\s+\(|, )`(?:[\w.]+\.)?([A-Z][A-Z0-9_]+)`"
)


@functools.cache
def _modules() -> dict[str, tuple[Path, ...]]:
    """Each module of the checkout by every dotted tail of its name
    (``curfew_core.ledger.savings`` under ``ledger.savings`` and ``savings`` too)."""
    found: dict[str, list[Path]] = {}
    for package in PACKAGES:
        for path in package.rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            for start in range(len(parts)):
                found.setdefault(".".join(parts[start:]), []).append(path)
    return {name: tuple(paths) for name, paths in found.items()}


@functools.cache
def _defined(path: Path) -> frozenset[str]:
    """Every name a module defines, at any depth: functions, classes, the
    targets of assignments (``self.x`` too), imports and ``__all__``'s."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return frozenset(names)


@functools.cache
def _classes() -> dict[str, tuple[Path, ...]]:
    """Each class of the checkout's packages, by name, with the files defining one."""
    import ast

    found: dict[str, list[Path]] = {}
    for paths in _modules().values():
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and path not in found.get(node.name, []):
                    found.setdefault(node.name, []).append(path)
    return {name: tuple(paths) for name, paths in found.items()}


def _name_problem(dotted: str) -> str | None:
    """Why ``dotted`` names nothing of ours, or ``None`` (it does, or it is not ours)."""
    parts = dotted.split(".")
    modules = _modules()
    if parts[0] in NOT_PYTHON:
        return None
    for cut in range(len(parts), 0, -1):
        paths = modules.get(".".join(parts[:cut]))
        if paths:
            rest = parts[cut:]
            if any(all(name in _defined(path) for name in rest) for path in paths):
                return None
            return f"no such name: {dotted} ({'.'.join(rest)} not in {'.'.join(parts[:cut])})"
    classes = _classes().get(parts[0])
    if classes:
        if any(all(name in _defined(path) for name in parts[1:]) for path in classes):
            return None
        return f"no such name: {dotted}"
    return None  # json.dumps, a JSON path: not ours


_PRIVATE = re.compile(r"_[a-z][a-z0-9_]*")


@functools.cache
def _all_defined() -> frozenset[str]:
    """Every name some module of the checkout's packages defines."""
    names: set[str] = set()
    for paths in _modules().values():
        for path in paths:
            names |= _defined(path)
    return frozenset(names)


def _problems_of_bare_names(page: Path) -> list[str]:
    """A private name (``_steady``, ``_reading_limits``) is defined somewhere in
    the checkout: a helper renamed or folded away fails here. (Public names
    are not held so: a page may tell what a name used to do.)"""
    problems = []
    for code in _CODE.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        name = code.strip().removesuffix("()")
        if not _PRIVATE.fullmatch(name) or re.fullmatch(r"_gw\d+", name):
            continue  # ``_gw0``: pytest-xdist's worker suffix of a test database
        if name not in _all_defined():
            problems.append(f"no such name: {name}")
    return problems


def _problems_of_names(page: Path) -> list[str]:
    problems = _problems_of_bare_names(page)
    for code in _CODE.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        name = code.strip()
        in_file = _FILE_NAME.match(name)
        if in_file:
            file, first, second = in_file.groups()
            found = [root / file for root in SHORT_ROOTS if (root / file).is_file()]
            wanted = [first] + ([second] if second else [])
            if found and not any(all(n in _defined(path) for n in wanted) for path in found):
                problems.append(f"no such name: {name}")
            continue
        dotted = _DOTTED.match(name)
        if dotted and not re.search(
            r"\.(py|md|html|js|css|json|toml|txt|in|yaml|yml)$", dotted.group(1)
        ):
            problem = _name_problem(dotted.group(1))
            if problem:
                problems.append(problem)
    return problems


@functools.cache
def _defaults() -> dict[str, str]:
    """Each setting's default, as the generated configuration reference says it."""
    defaults = {}
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for line in reference.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"`CURFEW_[A-Z0-9_]+`", cells[0]):
            defaults[cells[0].strip("`")] = cells[2]
    return defaults


@functools.cache
def _constants() -> dict[str, frozenset[float]]:
    """Each module-level constant of the checkout's packages whose value is a
    number (``FLUSH_ROWS = 5_000``, ``LEAD_MINUTES = 10``, ``HORIZON =
    timedelta(hours=30)`` as 30), by name: its values."""
    import ast

    found: dict[str, set[float]] = {}
    for paths in _modules().values():
        for path in paths:
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                else:
                    continue
                if (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "timedelta"
                    and len(value.keywords) == 1
                    and not value.args
                ):
                    value = value.keywords[0].value  # ``timedelta(hours=30)``: 30 (hours)
                if not isinstance(value, ast.Constant):
                    continue
                number = value.value
                if type(number) not in (int, float):
                    continue
                assert isinstance(number, (int, float))
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.isupper():
                        found.setdefault(target.id, set()).add(float(number))
    return {name: frozenset(values) for name, values in found.items()}


def _numbers(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def _problems_of_numbers(page: Path) -> list[str]:
    problems = []
    defaults = _defaults()
    constants = _constants()
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    if page == ROOT / "docs" / "configuration.md":
        return []  # the reference the defaults are read from (generated, held by its test)
    said_with = _NAME_THEN_NUMBER.findall(text)
    said_with += [(name, said) for said, name in _NUMBER_THEN_NAME.findall(text)]
    for name, said in said_with:
        number = float(said.replace(",", ""))
        if name in defaults:
            if number not in _numbers(defaults[name]):
                problems.append(
                    f"{name} ({said}): the configuration reference says {defaults[name]!r}"
                )
        elif name in constants and number not in constants[name]:
            problems.append(f"{name} ({said}): the code says {sorted(constants[name])}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_python_name_and_number_in_the_docs_holds(page: Path) -> None:
    if page in HISTORY:
        return
    problems = _problems_of_names(page) + _problems_of_numbers(page)
    assert not problems, "\n".join(problems)


def test_control_the_names_and_numbers_are_checked(tmp_path: Path) -> None:
    """Each check fails on a made-up name or a wrong number."""
    page = tmp_path / "page.md"
    page.write_text(
        "`selectors.verdicts.capsule_payload` `selectors.verdicts.no_such_thing` "
        "`ledger_recorder.record_verdict()` `Decision.origin` `Decision.no_such_column` "
        "`json.dumps` `engine/decide.py:decide` `engine/decide.py:no_such_rule` "
        "`_steady` `_no_such_helper`\n"
        "`CURFEW_LEDGER_RETENTION_DAYS` (30) `CURFEW_LEDGER_RETENTION_DAYS` (31) "
        "`FLUSH_ROWS` (5,000) `FLUSH_ROWS` (999) 10 minutes, one constant "
        "(`heads_up.LEAD_MINUTES`) 11 minutes (`heads_up.LEAD_MINUTES`)\n"
    )
    assert _problems_of_names(page) == [
        "no such name: _no_such_helper",
        "no such name: selectors.verdicts.no_such_thing (no_such_thing not in selectors.verdicts)",
        "no such name: Decision.no_such_column",
        "no such name: engine/decide.py:no_such_rule",
    ]
    problems = _problems_of_numbers(page)
    assert [problem.split(":")[0] for problem in problems] == [
        "CURFEW_LEDGER_RETENTION_DAYS (31)",
        "FLUSH_ROWS (999)",
        "LEAD_MINUTES (11)",
    ]


# -- the layout's map ------------------------------------------------------------

LAYOUT = ROOT / "docs" / "subsystems" / "layout.md"
#: Where a file the map names in passing may live.
CODE_TOPS = ("curfew_core/", "curfew_site/", "curfew_testkit/", "client/", "bench/", "bin/")


def _layout_map(text: str) -> dict[str, str]:
    """The fenced map of the code in ``layout.md``: each folder and what its
    lines say of it."""
    start = text.index("```\ncurfew_core/engine/")
    block = text[start + 4 : text.index("\n```", start + 4)]
    entries: dict[str, str] = {}
    folder = ""
    for line in block.splitlines():
        found = re.match(r"^(\S+/)\s+(.*)", line)
        if found:
            folder = found.group(1)
            entries[folder] = found.group(2)
        elif folder:
            entries[folder] += " " + line.strip()
    return entries


def _problems_of_layout(text: str) -> list[str]:
    entries = _layout_map(text)
    problems = [f"no such folder: {folder}" for folder in entries if not (ROOT / folder).is_dir()]
    packages = {
        f"curfew_core/{path.name}/"
        for path in (ROOT / "curfew_core").iterdir()
        if (path / "__init__.py").exists() and path.name != "migrations"
    }
    problems += [f"not in the map: {package}" for package in sorted(packages - set(entries))]
    for folder, said in entries.items():
        for name in re.findall(r"[\w/*]+\.py\b", said):
            here = ROOT / folder
            if "/" in name:
                found = (ROOT / name).exists() or (here / name).exists()
            else:  # in its folder, or (named in passing) in the checkout's code
                found = any(
                    any(where.rglob(name)) if where != ROOT else any(where.glob(name))
                    for where in (here, ROOT, *(ROOT / top.rstrip("/") for top in CODE_TOPS))
                    if where.is_dir()
                )
            if not found:
                problems.append(f"{folder}: no such file: {name}")
    return problems


def test_the_layout_map_names_every_package_and_only_files_that_exist() -> None:
    problems = _problems_of_layout(LAYOUT.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_control_the_layout_map_check() -> None:
    text = (
        "```\ncurfew_core/engine/     decide.py and no_such_file.py\n"
        "curfew_core/nowhere/    x\n```\n"
    )
    problems = _problems_of_layout(text)
    assert "curfew_core/engine/: no such file: no_such_file.py" in problems
    assert "no such folder: curfew_core/nowhere/" in problems
    assert "not in the map: curfew_core/ledger/" in problems
    assert "curfew_core/engine/: no such file: decide.py" not in problems
