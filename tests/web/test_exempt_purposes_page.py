"""Exempt purposes on the settings page: shown where the exemptions live with
their default (a ticked box each, picked by name), saved through the one
validation layer, bad input flagged on the field with nothing saved, and the
decision preview honours the list."""

from __future__ import annotations

import html as htmllib
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.models import Schedule, ScheduleRevision
from curfew_core.schedules import config as schedule_config
from tests.api.conftest import stored
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

FOUR_AM = "2026-09-30T04:00"  # lights-out, Wednesday morning


def _page(page: PageClient, **extra: Any) -> str:
    response = page.get("/replies/", **extra)
    assert response.status_code == 200
    text: str = response.content.decode()
    return text


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(_page(page), "replies-form")


def _unticked(fields: list[tuple[str, str]], *names: str) -> list[tuple[str, str]]:
    """The form as posted with the boxes of ``names`` unticked (all: none given)."""
    return [
        (key, value)
        for key, value in fields
        if not (key == "pick_purpose" and (not names or value in names))
    ]


def _ticked(fields: list[tuple[str, str]]) -> list[str]:
    return [value for key, value in fields if key == "pick_purpose"]


def _saved(user: User) -> list[str]:
    row = Schedule.objects.get(user=user)
    purposes: list[str] = schedule_config.with_defaults(row.config)["exempt_purposes"]
    return purposes


def _scope_fieldset(html: str) -> str:
    return html.split('<fieldset class="card fs-scope">')[1].split("</fieldset>")[0]


def test_the_field_is_in_scope_and_safety_with_the_default(page: PageClient) -> None:
    html = _page(page)
    scope = _scope_fieldset(html)
    assert 'name="exempt_purposes"' in scope
    # Right after the other exemption, the sessions.
    assert scope.index('name="exempt_sessions"') < scope.index('name="exempt_purposes"')
    assert "Housekeeping always let through" in scope
    assert "still go through at night" in scope
    # Each one let through is a ticked box; the typing box holds the rest (none).
    assert _ticked(_form(page)) == ["title", "compaction", "summary"]
    assert dict(_form(page))["exempt_purposes"] == ""


def test_the_field_speaks_chinese(page: PageClient) -> None:
    scope = _scope_fieldset(_page(page, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9"))
    assert "总是放行的内务调用" in scope
    assert "在夜里照常放行" in scope
    assert "Housekeeping always let through" not in scope


def test_saving_a_list_lowercases_and_folds_repeats(page: PageClient, user: User) -> None:
    fields = _unticked(_form(page), "title", "summary")
    data = as_post(fields, exempt_purposes="compaction\n  Nightly-Backup \n\nnightly-backup\n")
    response = page.post("/replies/", data)
    assert response.status_code == 302, response.content[:500]
    assert _saved(user) == ["compaction", "nightly-backup"]
    assert ScheduleRevision.objects.filter(schedule__user=user, source="form").count() == 1
    assert _ticked(_form(page)) == ["compaction", "nightly-backup"]


def test_an_emptied_field_saves_an_empty_list(page: PageClient, user: User) -> None:
    assert page.post("/replies/", as_post(_unticked(_form(page)))).status_code == 302
    assert _saved(user) == []


def test_a_box_left_ticked_wins_over_an_emptied_typing_box(page: PageClient, user: User) -> None:
    # The control group of the one above: with the boxes ticked, emptying
    # the typing box changes nothing.
    assert page.post("/replies/", as_post(_form(page), exempt_purposes="")).status_code == 302
    assert _saved(user) == ["title", "compaction", "summary"]


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("title\nti tle", "is not a purpose name"),
        ("títle", "is not a purpose name"),
        ("x" * 65, "is not a purpose name (1-64 characters)"),
        ("\n".join(f"p{n}" for n in range(33)), "has 33 purposes; at most 32"),
        ("ti\x00tle", "NUL"),
    ],
    ids=["space", "not-ascii", "too-long", "too-many", "nul"],
)
def test_bad_input_is_flagged_on_the_field_and_nothing_is_saved(
    page: PageClient, user: User, typed: str, says: str
) -> None:
    page.post("/replies/", as_post(_form(page), off_duty_reply="Busy."))  # a saved row
    before = stored(user)
    response = page.post(
        "/replies/",
        as_post(_unticked(_form(page)), exempt_purposes=typed, off_duty_reply="changed too"),
    )
    assert response.status_code == 400
    html = response.content.decode()
    error = html.split('id="err-exempt_purposes" aria-live="polite">')[1].split("</p>")[0]
    assert says in htmllib.unescape(error)
    field = html.split('<textarea name="exempt_purposes"')[1].split(">")[0]
    assert 'aria-invalid="true"' in field
    assert "Nothing was saved" in html
    assert 'value="changed too"' in html  # what was typed is kept for fixing
    assert stored(user) == before


def _decision(page: PageClient, **query: str) -> dict[str, Any]:
    response = page.get("/decision/", {"at": FOUR_AM, **query}, htmx=True)
    assert response.status_code == 200
    body = re.search(
        r'<pre class="json" id="decision-json" tabindex="0">(.*?)</pre>',
        response.content.decode(),
        re.S,
    )
    assert body
    payload: dict[str, Any] = json.loads(htmllib.unescape(body.group(1)))
    return payload


def test_the_decision_preview_honours_the_list(page: PageClient) -> None:
    assert _decision(page, purpose="title")["action"] == "pass"
    unlisted = _decision(page, purpose="anything")
    assert unlisted["action"] == "short-circuit"
    assert "purpose 'anything' is not exempt" in unlisted["reason"]
    page.post("/replies/", as_post(_unticked(_form(page), "title", "summary")))
    assert _decision(page, purpose="title")["action"] == "short-circuit"
    assert _decision(page, purpose="compaction")["action"] == "pass"
