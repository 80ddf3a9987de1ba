"""Reading a code snippet's calls as written (the setups the Integrations page
shows, and the scripts ``make clients`` runs from them)."""

from __future__ import annotations

import ast


def keywords_of(code: str, function: str) -> dict[str, str]:
    """The keywords of the one call of ``function`` in ``code``, as written."""
    [call] = [
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == function
    ]
    return {given.arg or "**": ast.unparse(given.value) for given in call.keywords}
