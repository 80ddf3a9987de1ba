"""The docs name only what exists (issue 43: "docs that hold").

Six of ten claims sampled from the docs no longer held: files moved, settings
renamed, links to headings that were split. Every page in ``docs/`` and the
README is read here, and each of its names is checked against the checkout:

- a relative link reaches a file, and its ``#anchor`` a heading of that page;
- a path in backticks (``curfew_core/edge/doors.py``, ``store/local_layer.py``,
  ``tests/x.py::test_y``) is a file or folder of the checkout (a short path
  is looked for under the packages it is short for);
- a ``CURFEW_…`` name is a setting some code reads.

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
