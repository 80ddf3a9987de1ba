"""``scope_from_headers``: the one reading of ``X-Curfew-*`` (the proxy's too)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import httpx
import pytest

from curfew_client import Scope, ScopeHeaderError, scope_from_headers


def test_no_headers_is_no_scope() -> None:
    assert scope_from_headers({}) == Scope(None, None, False)


def test_headers_are_read_whatever_their_case() -> None:
    plain = {
        "x-curfew-session": " s-1 ",
        "X-CURFEW-PURPOSE": "compaction",
        "X-Curfew-Subagent": "1",
    }
    assert scope_from_headers(plain) == Scope("s-1", "compaction", True)
    wrapped = httpx.Headers({"X-Curfew-Session": "s-2"})
    assert scope_from_headers(wrapped) == Scope("s-2", None, False)


@pytest.mark.parametrize(
    ("text", "subagent"),
    [("1", True), ("TRUE", True), ("Yes", True), ("0", False), ("false", False), ("NO", False)],
)
def test_the_subagent_flag(text: str, subagent: bool) -> None:
    assert scope_from_headers({"X-Curfew-Subagent": text}).subagent is subagent


def test_a_bad_subagent_flag_is_a_value_error_naming_the_header() -> None:
    with pytest.raises(ValueError, match="X-Curfew-Subagent") as caught:
        scope_from_headers({"X-Curfew-Subagent": "maybe"})
    assert isinstance(caught.value, ScopeHeaderError)
    assert caught.value.header == "X-Curfew-Subagent"


@pytest.mark.parametrize("name", ["X-Curfew-Session", "X-Curfew-Purpose"])
def test_text_is_bounded(name: str) -> None:
    assert scope_from_headers({name: "x" * 200}) != Scope()
    with pytest.raises(ScopeHeaderError, match=f"{name} must be at most 200") as caught:
        scope_from_headers({name: "x" * 201})
    assert caught.value.header == name


def test_blank_text_is_no_text() -> None:
    assert scope_from_headers({"X-Curfew-Session": "   ", "X-Curfew-Purpose": ""}) == Scope()


class _NoWalk(Mapping[str, str]):
    """A case-insensitive mapping that refuses to be walked."""

    def __init__(self, found: dict[str, str]) -> None:
        self.found = {name.lower(): value for name, value in found.items()}

    def __getitem__(self, name: str) -> str:
        return self.found[name.lower()]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("an absent header was looked for by walking the others")

    def __len__(self) -> int:
        return len(self.found)


def test_a_case_insensitive_mapping_is_not_walked_for_absent_headers() -> None:
    """Only a plain dict is scanned: Django's ``request.headers`` (or the lean
    route's) answers an absent name itself, and the proxy reads three names,
    usually all absent, on every call."""
    assert scope_from_headers(_NoWalk({"x-curfew-purpose": "compaction"})) == Scope(
        None, "compaction", False
    )
