"""Every form that changes something refuses a post without its CSRF token
(issue 23, "not yet tried": only the sign-in had been tried).

The attack is another site's page posting a form to Curfew: the browser
sends the person's cookies (the session, and the CSRF cookie), but that page
cannot read the token that goes with them. Each POST form of the site is
sent so, as a signed-in person where the form needs one: it must be a 403
and change nothing. The control sends the same post with its token and must
get past the check, so a form that is refused for another reason cannot pass
as protected. The forms are the authorization matrix's (a new one there is a
new cell here) plus the forms outside it (sign-in, sign-out, language).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import override_settings

from curfew_core.models import ApiToken, AuditEntry, Override, Schedule
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.security.test_authorization_matrix import ROUTES, Route

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase 42"


@dataclass(frozen=True)
class Form:
    path: str
    body: dict[str, Any]
    signed_in: bool = True
    settings: tuple[tuple[str, Any], ...] = ()


def _from_matrix(route: Route) -> Form:
    # Sign-up and reset are for people who are not signed in.
    signed_in = not route.path.startswith(("/account/signup/", "/account/reset/"))
    return Form(route.path, dict(route.body or {}), signed_in, route.settings)


FORMS = [
    *(
        _from_matrix(route)
        for route in ROUTES
        if route.method == "POST" and route.form and route.allowed
    ),
    # The forms whose changes are the person's own, with the bodies that change
    # them (the matrix's empty ones are refused for their content).
    Form(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    ),
    Form("/account/timezone/", {"timezone": "Asia/Tokyo", "version": "1"}),
    # "Stop pretending" on the overview, and "back to schedule".
    Form("/overrides/", {"action": "debug-clear"}),
    Form(
        "/account/signup/",
        {"username": "eve", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        signed_in=False,
        settings=(("CURFEW_SIGNUP", True),),
    ),
    Form("/login/", {"username": "ada", "password": PASSWORD}, signed_in=False),
    Form("/logout/", {}),
    Form("/i18n/setlang/", {"language": "zh-hans"}),
]


def _id(form: Form) -> str:
    return f"{form.path} {sorted(form.body)}{' (on)' if form.settings else ''}"


@pytest.fixture
def ada(db: None) -> User:
    user = User.objects.create_user("ada", password=PASSWORD, email="ada@example.com")
    token_create(user=user, name="target")
    token_create(user=user, name="embed", kind=ApiToken.Kind.EMBED)
    return user


def _path(form: Form, ada: User) -> str:
    tokens = ApiToken.objects.filter(user=ada)
    return form.path.format(
        own_token_id=tokens.get(name="target").pk, own_embed_id=tokens.get(name="embed").pk
    )


def _state(ada: User) -> tuple[Any, ...]:
    ada.refresh_from_db()
    return (
        ada.password,
        tuple(Schedule.objects.filter(user=ada).values_list("config", "version")),
        tuple(Override.objects.filter(user=ada).values_list()),
        tuple(ApiToken.objects.order_by("pk").values_list("pk", "revoked_at")),
        AuditEntry.objects.count(),
        User.objects.count(),
        Session.objects.count(),
    )


def _browser(form: Form, ada: User) -> Client:
    """A browser with the person's cookies: the session (where the form needs
    one) and the CSRF cookie a page of the site gave it."""
    client = Client(enforce_csrf_checks=True)
    if form.signed_in:
        client.force_login(ada)
    assert client.get("/account/" if form.signed_in else "/login/").status_code == 200
    assert client.cookies.get("csrftoken"), "a page of the site sets the CSRF cookie"
    return client


@pytest.mark.parametrize("form", FORMS, ids=_id)
def test_a_post_without_its_csrf_token_is_refused_and_changes_nothing(
    ada: User, form: Form
) -> None:
    with override_settings(**dict(form.settings)):
        client = _browser(form, ada)
        before = _state(ada)
        response = client.post(_path(form, ada), form.body)
        assert response.status_code == 403, response.status_code
        assert _state(ada) == before


@pytest.mark.parametrize("form", FORMS, ids=_id)
def test_control_the_same_post_with_its_token_gets_past_the_check(ada: User, form: Form) -> None:
    with override_settings(**dict(form.settings)):
        client = _browser(form, ada)
        token = client.cookies["csrftoken"].value
        response = client.post(_path(form, ada), {**form.body, "csrfmiddlewaretoken": token})
        assert response.status_code != 403, response.content[:300]
