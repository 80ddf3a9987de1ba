"""Password reset requests are throttled per client address and per address
typed (issue 41, finding 5: 130 mails reached one inbox in about ten seconds
from one address). Counted whether or not an account has the address, so a
refusal tells nothing; a refused request sends no mail and is not counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import override_settings

from curfew_core.web import outbox
from curfew_testkit.asgi_client import Client
from tests.throttle.conftest import FakeTime

REFUSED = "Too many password reset requests; try again in"

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("reset_on")]


@pytest.fixture
def reset_on() -> Iterator[None]:
    with override_settings(CURFEW_PASSWORD_RESET=True):
        yield


def request_reset(email: str, address: str = "10.0.0.1") -> Any:
    return Client(REMOTE_ADDR=address).post("/account/reset/", {"email": email})


@pytest.fixture
def ada(db: None) -> User:
    return User.objects.create_user("ada", email="ada@example.com", password="x" * 20)


def test_one_inbox_gets_three_mails_an_hour_from_anywhere(ada: User) -> None:
    # The shipped defaults, no override.
    for n in range(3):
        assert request_reset("ada@example.com", address=f"10.0.0.{n + 1}").status_code == 302
    response = request_reset("ADA@example.com ", address="10.0.0.9")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    html = response.content.decode()
    assert REFUSED in html
    assert 'role="alert"' in html
    outbox.drain()
    assert len(mail.outbox) == 3, "the refused request sent nothing"
    # The control group: another inbox is not affected.
    assert request_reset("grace@example.com", address="10.0.0.9").status_code == 302


def test_one_address_sends_ten_requests_an_hour_whatever_inboxes(ada: User) -> None:
    for n in range(10):
        assert request_reset(f"someone{n}@example.com").status_code == 302
    for email in ("ada@example.com", "nobody@example.com"):
        response = request_reset(email)
        assert response.status_code == 429, "the same answer: no account is revealed"
        assert REFUSED in response.content.decode()
    outbox.drain()
    assert mail.outbox == []
    # Another address is not affected.
    assert request_reset("ada@example.com", address="10.0.0.2").status_code == 302


def test_the_limit_lifts_on_time(ada: User, fake_clock: FakeTime) -> None:
    for _ in range(3):
        assert request_reset("ada@example.com").status_code == 302
    for _ in range(5):  # refused requests are not counted
        assert request_reset("ada@example.com").status_code == 429
    fake_clock.advance(3601)
    assert request_reset("ada@example.com").status_code == 302
