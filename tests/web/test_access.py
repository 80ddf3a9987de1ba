"""Sign-in, sign-out, who sees what, and the page's security headers."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User

from curfew_core.models import ApiToken
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.web.conftest import PageClient

#: Every section of the settings site.
SECTIONS = ["/", "/schedule/", "/replies/", "/integrations/", "/activity/"]
PAGES = [
    *[("get", path) for path in SECTIONS],
    ("get", "/decision/"),
    ("post", "/schedule/"),
    ("post", "/replies/"),
    ("post", "/schedule/preview/"),
    ("post", "/overrides/"),
    ("post", "/tokens/"),
    ("post", "/tokens/1/revoke/"),
]


@pytest.mark.parametrize(("method", "path"), PAGES)
def test_every_page_needs_sign_in(anonymous: PageClient, method: str, path: str) -> None:
    response = getattr(anonymous, method)(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_htmx_request_without_session_is_sent_to_sign_in_whole(anonymous: PageClient) -> None:
    response = anonymous.post("/schedule/preview/", htmx=True)
    # Not a login form swapped into a corner of the page: a client-side redirect.
    assert response["HX-Redirect"].startswith("/login/")


def test_nothing_is_written_by_an_anonymous_post(anonymous: PageClient, user: User) -> None:
    anonymous.post("/tokens/", {"name": "sneaky", "kind": "api"})
    assert not ApiToken.objects.filter(name="sneaky").exists()


def test_sign_in_then_sign_out(user: User) -> None:
    client = Client()
    page = client.get("/login/")
    assert page.status_code == 200
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()
    wrong = client.post("/login/", {"username": "ada", "password": "nope"})
    assert wrong.status_code == 200
    assert "banner-error" in wrong.content.decode()
    signed_in = client.post("/login/", {"username": "ada", "password": "correct horse battery"})
    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/"
    assert client.get("/").status_code == 200
    # Sign-out is a POST (a GET would let any page sign you out).
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_signed_in_visitor_skips_the_sign_in_page(page: PageClient) -> None:
    response = page.get("/login/")
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_page_shows_only_your_own_schedule_and_tokens(
    page: PageClient, user: User, other_user: User
) -> None:
    schedule_update(user=user, changes={"curfew_start": "22:45"}, source="test")
    schedule_update(user=other_user, changes={"curfew_start": "21:17"}, source="test")
    mine, _ = token_create(user=user, name="my laptop")
    theirs, _ = token_create(user=other_user, name="their laptop")
    html = page.get("/schedule/").content.decode()
    assert 'value="22:45"' in html
    assert "21:17" not in html
    html = page.get("/integrations/").content.decode()
    assert mine.prefix in html
    assert "my laptop" in html
    assert theirs.prefix not in html
    assert "their laptop" not in html


def test_admin_stays_at_admin(db: None) -> None:
    staff = User.objects.create_superuser("root", password="correct horse battery")
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/").status_code == 200


@pytest.mark.parametrize("path", SECTIONS)
def test_content_security_policy_is_strict_and_the_page_keeps_to_it(
    page: PageClient, user: User, path: str
) -> None:
    token_create(user=user, name="x")  # the key list, with its revoke forms
    response = page.get(path)
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "style-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    tags = _tags(response.content.decode())
    scripts = [(attrs, body) for tag, attrs, body in tags if tag == "script"]
    assert scripts
    # Every script is a file of our own or a JSON data block; none is inline code.
    for attrs, body in scripts:
        assert attrs.get("src", "").startswith("/static/") or attrs.get("type") == (
            "application/json"
        ), attrs
        if "src" in attrs:
            assert not body.strip()
    # Inline styles and inline event handlers would be blocked by the policy.
    assert not [tag for tag, _, _ in tags if tag == "style"]
    for tag, attrs, _ in tags:
        assert "style" not in attrs, (tag, attrs)
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str], str]] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}, ""))
        if tag == "script":
            self._script = []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            for index in range(len(self.tags) - 1, -1, -1):
                if self.tags[index][0] == "script":
                    name, attrs, _ = self.tags[index]
                    self.tags[index] = (name, attrs, "".join(self._script))
                    break
            self._script = None


def _tags(html: str) -> list[tuple[str, dict[str, str], str]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_login_page_has_the_policy_and_the_stylesheet(db: None) -> None:
    response = Client().get("/login/")
    assert "Content-Security-Policy" in response
    assert 'href="/static/curfew/curfew.css"' in response.content.decode()


@pytest.mark.parametrize("path", SECTIONS)
def test_every_form_carries_csrf(page: PageClient, user: User, path: str) -> None:
    token_create(user=user, name="x")
    html = page.get(path).content.decode()
    forms = re.findall(r"<form[^>]*>.*?</form>", html, flags=re.S)
    assert [form for form in forms if 'method="post"' in form]  # sign-out at least
    for form in re.findall(r"<form[^>]*>.*?</form>", html, flags=re.S):
        if 'method="get"' in form:
            continue
        assert 'name="csrfmiddlewaretoken"' in form, form[:200]
