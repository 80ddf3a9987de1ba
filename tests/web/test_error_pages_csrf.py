"""A form sent without its CSRF token (a page left open past its session,
cookies blocked) is the site's own page, with its stylesheet and a way
back, saying nothing was saved: not Django's bare English "Forbidden (403)
CSRF verification failed"."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

STYLESHEET = re.compile(r'<link rel="stylesheet"[^>]* href="/static/curfew/curfew\.[^"]*css"')


def test_a_form_without_its_csrf_token_gets_the_sites_page() -> None:
    User.objects.create_user("ada", password="correct horse battery")
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": "ada", "password": "correct horse battery"})
    assert response.status_code == 403
    page = response.content.decode()
    assert STYLESHEET.search(page), page[:500]
    assert "Nothing was saved" in page
    assert 'href="/"' in page
    assert "CSRF verification failed" not in page
