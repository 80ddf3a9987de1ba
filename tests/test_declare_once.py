"""The four states are spelt in few files (issue 43: "declare once, again").

A state is declared once, in the engine (``curfew_core/engine/verdict.py``:
``State`` and what holds for each), its words once (``curfew_core/vocabulary.py``)
and its looks once (``static/curfew/states.css``). Every other file names a
state through them. This test counts the server's source files (Python,
JavaScript, HTML, CSS under ``curfew_core``, ``curfew_site``, ``static`` and
``templates``; not tests, docs or migrations) that still spell the states, and
fails when there are more than ``MOST``: a new table of the states goes into the
declaration, not beside it.

A file spells the states when it holds, as code (comments, docstrings and
sentences for people do not count):

- a state's wire value (``on-duty``, ``winding``, ``off-duty``, ``lights-out``) as
  a whole string literal (Python) or anywhere in code (JavaScript, CSS, HTML,
  ``--c-on-duty`` and ``.s-on-duty`` included);
- a table of the states: a dict, list, tuple or set literal listing two or
  more of them (``State.WINDING`` or their wire values), the ``{state: words}``
  tables and ``(State.OFF_DUTY, State.LIGHTS_OUT)`` sets the issue counted.

A rule that reads one state (``if state is State.WINDING``) names the
declaration and does not count. The client (``client/``) and the opencode
plugin (``integrations/``) are programs of their own, installed where the
server's code is not, and keep their own copy of the wire (the client's is
``curfew_client/wire.py``); the engine's reference oracle
(``curfew_testkit/engine_reference.py``) is written apart from the engine on
purpose. They are not counted.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Issue 43 asked for at most six; three now: the engine's declaration, the words
#: (vocabulary.py) and the looks (states.css).
MOST = 3
#: Where the server's own source lives.
FOLDERS = ("curfew_core", "curfew_site", "static", "templates")
WIRE = ("on-duty", "winding", "off-duty", "lights-out")
NAMES = ("ON_DUTY", "WINDING", "OFF_DUTY", "LIGHTS_OUT")
_WIRE_WORD = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(WIRE) + r")(?![A-Za-z0-9_])")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"(?m)(^|[^:\"'])//.*$")
_HTML_COMMENT = re.compile(r"<!--.*?-->|\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}", re.S)
#: Words for people in a template (a sentence may say "lights-out"): not code.
_TRANSLATED = re.compile(
    r"\{% (?:translate|trans) (['\"]).*?\1.*?%\}"
    r"|\{% blocktranslate[^%]*%\}.*?\{% endblocktranslate %\}",
    re.S,
)


def source_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", *FOLDERS], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [
        ROOT / name
        for name in listed
        if name.endswith((".py", ".js", ".html", ".css"))
        and "/migrations/" not in name
        and (ROOT / name).exists()
    ]


def _state_of(node: ast.AST) -> str | None:
    """The state a node names: ``State.WINDING``, ``State.WINDING.value``, ``"winding"``."""
    if isinstance(node, ast.Attribute) and node.attr == "value":
        return _state_of(node.value)
    if isinstance(node, ast.Attribute) and node.attr in NAMES:
        return WIRE[NAMES.index(node.attr)]
    if isinstance(node, ast.Constant) and node.value in WIRE:
        return str(node.value)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
        ):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def python_spellings(source: str) -> list[str]:
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in WIRE and id(node) not in docs:
            found.append(f"line {node.lineno}: {node.value!r}")
        items: list[ast.expr | None] = []
        if isinstance(node, ast.Dict):
            items = list(node.keys)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = list(node.elts)
        states = {_state_of(item) for item in items if item is not None} - {None}
        if len(states) >= 2 and isinstance(node, ast.expr):
            found.append(f"line {node.lineno}: a table of {sorted(s for s in states if s)}")
    return found


def _blank(found: re.Match[str]) -> str:
    """A comment's or a sentence's place, its lines kept (so line numbers hold)."""
    return "\n" * found.group(0).count("\n")


def web_spellings(source: str, suffix: str) -> list[str]:
    text = _BLOCK_COMMENT.sub(_blank, source)
    if suffix == ".js":
        text = _LINE_COMMENT.sub(r"\1", text)
    if suffix == ".html":
        text = _TRANSLATED.sub(_blank, _HTML_COMMENT.sub(_blank, text))
    return [
        f"line {number}: {line.strip()[:60]}"
        for number, line in enumerate(text.splitlines(), 1)
        if _WIRE_WORD.search(line)
    ]


def spellings(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return python_spellings(source)
    return web_spellings(source, path.suffix)


def spelling_files() -> dict[str, list[str]]:
    found = {}
    for path in source_files():
        said = spellings(path)
        if said:
            found[str(path.relative_to(ROOT))] = said
    return found


def test_the_states_are_spelt_in_few_files() -> None:
    found = spelling_files()
    listing = "\n".join(f"  {name}: {said[:3]}" for name, said in sorted(found.items()))
    assert len(found) <= MOST, (
        f"the four states are spelt in {len(found)} source files (at most {MOST}); "
        f"name them through engine.verdict.State, vocabulary.py or states.css:\n{listing}"
    )


def test_the_count_sees_each_kind_of_spelling() -> None:
    """The measure itself: each kind of spelling is seen, prose is not."""
    assert python_spellings('x = "winding"\n')
    assert python_spellings("X = {State.ON_DUTY: 1, State.WINDING: 2}\n")
    assert python_spellings("X = (State.OFF_DUTY.value, State.LIGHTS_OUT.value)\n")
    assert not python_spellings("if state is State.WINDING:\n    pass\n")
    assert not python_spellings('def f():\n    """At lights-out."""\n')
    assert not python_spellings('x = _("No winding: straight to lights-out.")\n')
    assert web_spellings(".now-card[data-state='winding'] { }", ".css")
    assert web_spellings("a { color: var(--c-lights-out); }", ".css")
    assert not web_spellings("/* .s-on-duty … in states.css */", ".css")
    assert web_spellings('if (key === "off-duty") {}', ".js")
    assert not web_spellings("// the on-duty face", ".js")
    assert not web_spellings("{% translate 'Replies at lights-out.' %}", ".html")
    assert web_spellings('<div class="s-winding"></div>', ".html")


# -- the Decision row's columns -------------------------------------------------
#
# The ``Decision`` model declares a decision's columns. The ledger's raw row
# (``ledger.batch.ROW_COLUMNS``, which cannot import the model: it is below it)
# is held to the model's columns in the model's order; the Activity page's line
# (``selectors.ledger_page.DecisionLine``) likewise; the CSV export's columns
# are read off the line and the API's rows (``selectors.ledger.decision_json``)
# off the API's schema, each field a column of the model.


def _columns() -> list[str]:
    from curfew_core.models import Decision

    return [str(field.column) for field in Decision._meta.concrete_fields if not field.primary_key]


def test_the_ledger_row_is_the_models_columns_in_order() -> None:
    from curfew_core.ledger.batch import ROW_COLUMNS

    assert list(ROW_COLUMNS) == _columns()


def test_the_activity_line_and_export_are_the_models_columns() -> None:
    from dataclasses import fields

    from curfew_core.selectors.ledger_page import DecisionLine
    from curfew_core.web.activity.export import CSV_COLUMNS

    shown = [column for column in _columns() if column not in ("user_id", "client_id")]
    assert [field.name for field in fields(DecisionLine)] == ["id", *shown]
    assert list(CSV_COLUMNS) == shown


def test_each_field_of_the_apis_decision_is_a_column_of_the_model() -> None:
    from curfew_core.models import Decision
    from curfew_core.schema.decisions import DecisionRow
    from curfew_core.selectors.ledger import DECISION_FIELDS

    names = {field.name for field in Decision._meta.concrete_fields}
    assert [name for name, _ in DECISION_FIELDS] == list(DecisionRow.model_fields)
    assert {column for _, column in DECISION_FIELDS} <= names - {"id", "user"}
