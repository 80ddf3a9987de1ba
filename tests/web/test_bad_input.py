"""Bad input at the page's doors: the page (or its part) comes back with the
field flagged and a 4xx, never a 500 (issue 9, item 4)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.api.conftest import stored
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

HUGE = "9" * 5000


@pytest.mark.parametrize(
    "query",
    [
        {"band_date": "9999-12-31"},
        {"band_date": "0001-01-01"},
        {"band_date": "9999-12-31", "band_view": "week"},
        {"band_date": "0001-01-01", "band_view": "week"},
    ],
)
def test_a_band_date_out_of_range_is_flagged(page: PageClient, query: dict[str, str]) -> None:
    response = page.get("/", query)
    assert response.status_code == 400
    html = response.content.decode()
    assert "is out of range" in html
    assert 'id="band"' in html  # the page, drawn for the default date


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"at": "tuesday"}, "is not a date and time"),
        ({"at": "9999-12-31T23:59"}, "is out of range"),
        ({"day": "2026-12-01", "minute": "1440"}, "must be between 00:00 and 23:59"),
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_a_bad_preview_moment_is_flagged_and_now_is_shown(
    page: PageClient, query: dict[str, str], says: str, htmx: bool
) -> None:
    response = page.get("/", query, htmx=htmx)
    assert response.status_code == (422 if htmx else 400)
    html = response.content.decode()
    assert 'id="look-error"' in html
    assert says in html
    assert 'id="now"' in html  # the card, for now
    assert "a preview on this page only" not in html


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"max_tokens": "²"}, "max_tokens"),
        ({"max_tokens": "٣"}, "max_tokens"),
        ({"max_tokens": HUGE}, "max_tokens"),
        ({"at": "9999-12-31T23:59"}, "at"),
        ({"at": "0001-01-01T00:00"}, "at"),
        ({"at": HUGE}, "at"),
        ({"session_id": "x" * 300}, "session_id"),
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_bad_decision_input_is_flagged(
    page: PageClient, query: dict[str, str], field: str, htmx: bool
) -> None:
    response = page.get("/decision/" if htmx else "/integrations/", query, htmx=htmx)
    # The full page says 400; the htmx partial 422 (see views.HTMX_INVALID).
    assert response.status_code == (422 if htmx else 400)
    html = response.content.decode()
    assert f"<li>{field}: " in html
    assert 'id="decision-json"' not in html
    assert len(html) < 200_000


def _form(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/schedule/").content.decode(), "schedule-form")


def _replies(page: PageClient) -> list[tuple[str, str]]:
    return form_fields(page.get("/replies/").content.decode(), "replies-form")


@pytest.mark.parametrize(
    ("replace", "field"),
    [
        ({"safety_max_tokens": HUGE}, "safety_max_tokens"),
        ({"safety_max_tokens": "²"}, "safety_max_tokens"),
        ({"anchors-0-tokens": HUGE}, "anchors"),
        ({"anchors-0-tokens": "٢٠٤٨"}, "anchors"),
        ({"version": HUGE}, None),
    ],
)
def test_huge_or_odd_numbers_on_the_form_are_flagged(
    page: PageClient, user: User, replace: dict[str, object], field: str | None
) -> None:
    before = stored(user)
    replies = "safety_max_tokens" in replace
    data = as_post(_replies(page) if replies else _form(page), **replace)
    if not replies:  # the live preview is the Schedule section's
        preview = page.post("/schedule/preview/", data, htmx=True)
        assert preview.status_code == 200  # the live preview draws what is valid
        if field is not None:
            assert f'id="err-{field}"' in preview.content.decode()
    saved = page.post("/replies/" if replies else "/schedule/", data)
    assert saved.status_code in (400, 409)
    html = saved.content.decode()
    if field is not None:
        assert saved.status_code == 400
        assert 'aria-invalid="true"' in html or "field-error" in html
    assert stored(user) == before


@pytest.mark.parametrize(
    "data",
    [
        {"verb": "overtime", "custom_duration": HUGE + "m"},
        {"verb": "overtime", "custom_duration": HUGE},
        {"verb": "debug", "moment": HUGE},
        {"verb": "debug", "moment": "9999-12-31T23:59"},
        {"verb": "debug", "moment": "0001-01-01T00:00"},
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_bad_override_input_is_flagged(
    page: PageClient, user: User, data: dict[str, str], htmx: bool
) -> None:
    before = stored(user)
    response = page.post("/overrides/", data, htmx=htmx)
    # The full page says 400; the htmx partial 422 (see views.HTMX_INVALID).
    assert response.status_code == (422 if htmx else 400)
    assert len(response.content) < 200_000
    assert stored(user) == before
    assert page.get("/").status_code == 200


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01"])
def test_the_live_preview_flags_a_band_date_out_of_range(page: PageClient, day: str) -> None:
    data = as_post(_form(page), band_date=day, band_view="week")
    response = page.post("/schedule/preview/", data, htmx=True)
    assert response.status_code == 200  # the band is drawn for today, with the warning
    assert "is out of range" in response.content.decode()


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("put", "/", "GET"),
        ("delete", "/decision/", "GET"),
        ("put", "/schedule/", "GET, POST"),
        ("delete", "/replies/", "GET, POST"),
        ("post", "/integrations/", "GET"),
        ("post", "/activity/", "GET"),
        ("get", "/schedule/preview/", "POST"),
        ("get", "/overrides/", "POST"),
        ("get", "/tokens/", "POST"),
        ("get", "/tokens/1/revoke/", "POST"),
        ("get", "/logout/", "POST, OPTIONS"),
    ],
)
def test_page_405s_carry_allow(page: PageClient, method: str, path: str, allowed: str) -> None:
    response = page._run(getattr(page.client, method), path)
    assert response.status_code == 405
    assert response["Allow"] == allowed


def test_a_moment_in_local_mean_time_is_previewed(page: PageClient) -> None:
    # Shanghai kept +08:05:43 until 1901: no RFC 3339 offset, yet a valid moment.
    response = page.get("/decision/", {"at": "1900-06-01T12:00"}, htmx=True)
    assert response.status_code == 200, response.content.decode()[:500]
    assert 'id="decision-json"' in response.content.decode()


def test_a_token_name_never_stores_nul(page: PageClient, user: User) -> None:
    from curfew_core.models import ApiToken

    response = page.post("/tokens/", {"kind": "api", "name": "lap\x00top"})
    assert response.status_code == 201
    assert ApiToken.objects.get(user=user).name == "laptop"


# -- every query parameter of the pages, through one reader (issue 23, finding 2) --

#: Each page's query parameters with a value it cannot use: the page answers 400
#: naming the parameter and shows its default. ``?page=<5000 digits>`` was a 500
#: (``int()`` refuses past 4300 digits).
BAD_QUERIES = [
    ("/activity/", "page", HUGE),
    ("/activity/", "page", "-" + HUGE),
    ("/activity/", "page", "0"),
    ("/activity/", "page", "²"),
    ("/activity/", "period", HUGE),
    ("/activity/", "action", "nope"),
    ("/activity/", "session", "s" * 300),
    ("/", "minute", HUGE),
    ("/", "minute", "1440"),
    ("/", "band_view", "month"),
    ("/", "band_date", HUGE),
    ("/", "band_date", "9999-12-31"),
    ("/schedule/", "band_view", "month"),
    ("/schedule/", "band_date", HUGE),
]


@pytest.mark.parametrize(("path", "name", "value"), BAD_QUERIES)
def test_a_bad_query_parameter_is_a_400_naming_it(
    page: PageClient, path: str, name: str, value: str
) -> None:
    query = {name: value}
    if name == "minute":
        query["day"] = "2026-12-01"
    response = page.get(path, query)
    assert response.status_code == 400
    assert f"{name}: " in response.content.decode()


def test_the_activity_export_takes_a_huge_page_without_a_500(page: PageClient) -> None:
    # The export ignores paging, but reads the same filters through the same reader.
    response = page.get("/activity/decisions.csv", {"page": HUGE, "period": HUGE})
    assert response.status_code == 200
