"""The verdict request is parsed outside the doors, from typed values.

The API (a JSON body) and the settings page's decision preview (form fields)
both call ``curfew_core.schema.verdict_request``; neither imports the other
(``lint-imports``' "Doors do not import each other", no ignored web -> api entry).
"""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

from curfew_core.schema.verdict_request import (
    RequestError,
    parse_verdict_body,
    verdict_request,
)

APP = Path(__file__).resolve().parents[1] / "curfew_core"


def test_typed_values_make_the_request() -> None:
    asked = verdict_request(
        session_id="s1", purpose="", subagent=True, max_tokens=508, at="2026-09-29T23:30:00Z"
    )
    assert asked.context.session_id == "s1"
    assert asked.context.purpose is None
    assert asked.context.subagent is True
    assert asked.context.max_tokens == 508
    assert asked.at == datetime(2026, 9, 29, 23, 30, tzinfo=UTC)


def test_every_bad_field_is_named_malformed_apart_from_unprocessable() -> None:
    with pytest.raises(RequestError) as caught:
        parse_verdict_body({"max_tokens": 0, "subagent": "yes", "nope": 1})
    assert list(caught.value.errors) == ["nope", "subagent", "max_tokens"]
    assert caught.value.unprocessable == {}
    with pytest.raises(RequestError) as caught:
        verdict_request(at="9999-12-31T23:59:59-23:59")
    assert set(caught.value.unprocessable) == {"at"}
    assert not caught.value.errors


def test_the_preview_does_not_import_the_api_door() -> None:
    tree = ast.parse((APP / "web" / "integrations" / "decision.py").read_text(encoding="utf-8"))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not {name for name in imported if name.startswith("curfew_core.api")}
    assert "curfew_core.schema.verdict_request" in imported
