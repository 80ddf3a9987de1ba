"""The package's public names are loaded on first use (``curfew_client``'s
``__getattr__``): each is the object its home module defines, the type
checkers' imports name the same set, and a process that imports one shape
module (the server, whose settings read ``openai_shapes``) does not load the
HTTP clients. The control: asking for the client does load them, so the
reading of ``sys.modules`` is not blind."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import curfew_client

INIT = Path(curfew_client.__file__)
#: What the gateway's HTTP side brings (``aio``, ``sync``, httpx).
CLIENTS = ("httpx", "curfew_client.aio", "curfew_client.sync", "curfew_client.base")


@pytest.mark.parametrize("name", curfew_client.__all__)
def test_each_name_is_its_home_modules_own(name: str) -> None:
    home = curfew_client._EXPORTS[name]
    value = getattr(curfew_client, name)
    if home:
        assert value is getattr(importlib.import_module(f"curfew_client.{home}"), name)
    else:
        assert value is importlib.import_module(f"curfew_client.{name}")


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        curfew_client.no_such_thing  # noqa: B018


def test_the_type_checkers_imports_name_the_exports() -> None:
    tree = ast.parse(INIT.read_text())
    guarded = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    imported: dict[str, str] = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            home = "" if node.module == "curfew_client" else str(node.module).split(".", 1)[1]
            imported[alias.asname or alias.name] = home
    assert imported == curfew_client._EXPORTS


def _loaded_after(statement: str) -> set[str]:
    """The modules of ``CLIENTS`` a fresh interpreter holds after ``statement``."""
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {CLIENTS!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_a_shape_module_does_not_load_the_http_clients() -> None:
    assert _loaded_after("import curfew_client.openai_shapes, curfew_client.wire") == set()
    # The control: the client itself does load them.
    assert _loaded_after("from curfew_client import CurfewClient") >= {
        "httpx",
        "curfew_client.sync",
    }
