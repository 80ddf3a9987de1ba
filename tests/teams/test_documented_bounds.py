"""The API document states the bounds the API enforces: the largest number
each paged or timed request takes is accepted, one more is refused, for the
team's routes and the decision ledger's alike (the document reads the same
constants the validators do)."""

from __future__ import annotations

from typing import Any

import pytest

from curfew_core.api.openapi import document
from tests.teams.test_done_means import bearer, people, run

__all__ = ["people"]

pytestmark = pytest.mark.django_db(transaction=True)


def _parameter(path: str, name: str) -> int:
    (found,) = [
        each for each in document()["paths"][path]["get"]["parameters"] if each["name"] == name
    ]
    upper: int = found["schema"]["maximum"]
    return upper


def _overtime_minutes() -> int:
    body = document()["paths"]["/team/overtime"]["post"]["requestBody"]
    upper: int = body["content"]["application/json"]["schema"]["oneOf"][0]["properties"]["minutes"][
        "maximum"
    ]
    return upper


def _member_overtime_minutes() -> int:
    body = document()["paths"]["/team/schedule"]["patch"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    upper: int = schema["properties"]["member_overtime_minutes"]["maximum"]
    return upper


@pytest.fixture
def boss(people: dict[str, str]) -> Any:
    run("team", "create", "acme", "--admin", "boss")
    return bearer(people["boss"])


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/team/members", "page"),
        ("/team/members", "per_page"),
        ("/decisions", "page"),
        ("/decisions", "per_page"),
    ],
)
def test_a_paged_read_takes_up_to_the_documented_page(boss: Any, path: str, name: str) -> None:
    upper = _parameter(path, name)
    assert boss.get(f"/api/v1{path}", {name: upper}).status_code == 200
    refused = boss.get(f"/api/v1{path}", {name: upper + 1})
    assert refused.status_code == 400
    assert name in refused.json()["fields"]


def test_release_night_takes_up_to_the_documented_minutes(boss: Any) -> None:
    upper = _overtime_minutes()
    url = "/api/v1/team/overtime"
    too_long = boss.post(url, {"minutes": upper + 1}, content_type="application/json")
    assert too_long.status_code == 400
    assert "minutes" in too_long.json()["fields"]
    assert boss.post(url, {"minutes": upper}, content_type="application/json").status_code == 200


def test_a_members_overtime_allowance_takes_up_to_the_documented_minutes(boss: Any) -> None:
    upper = _member_overtime_minutes()
    url = "/api/v1/team/schedule"
    too_long = {"member_overtime_minutes": upper + 1}
    assert boss.patch(url, too_long, content_type="application/json").status_code == 400
    longest = {"member_overtime_minutes": upper}
    assert boss.patch(url, longest, content_type="application/json").status_code == 200
