"""Sign-up (``CURFEW_SIGNUP``) is throttled per client address (issue 23,
finding 5: 25 accounts from one address, and every taken name named).

A sign-up by chosen name must say when the name is taken (the person has to
pick another); what keeps that from listing the accounts is how few names one
address may try: every attempt counts, taken or new, and a refused attempt
is told nothing about its name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_testkit.asgi_client import Client

PASSWORD = "a long enough passphrase 42"
REFUSED = "Too many sign-up attempts from your network address; try again in"
TAKEN = "A user with that username already exists."

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("signup_on")]


@pytest.fixture
def signup_on() -> Iterator[None]:
    with override_settings(CURFEW_SIGNUP=True):
        yield


def sign_up(name: str, address: str = "10.0.0.1", **extra: Any) -> Any:
    data = {"username": name, "password1": PASSWORD, "password2": PASSWORD}
    return Client(REMOTE_ADDR=address).post("/account/signup/", data, **extra)


def test_one_address_makes_at_most_ten_accounts_an_hour() -> None:
    # The shipped default, no override: the issue made 25.
    for n in range(10):
        assert sign_up(f"bot{n}").status_code == 302
    response = sign_up("bot10")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert REFUSED in response.content.decode()
    assert not User.objects.filter(username="bot10").exists()
    # Another address is not affected.
    assert sign_up("grace", address="10.0.0.2").status_code == 302


def test_probing_taken_names_counts_and_a_refused_probe_learns_nothing(user: User) -> None:
    for _ in range(10):
        response = sign_up("ada")
        assert response.status_code == 400
        assert TAKEN in response.content.decode()
    for name in ("ada", "nobody-has-this"):
        response = sign_up(name)
        assert response.status_code == 429
        html = response.content.decode()
        assert REFUSED in html
        assert TAKEN not in html


@override_settings(CURFEW_SIGNUPS_PER_ADDRESS="1/hour")
def test_the_refusal_is_in_chinese_on_the_chinese_page() -> None:
    assert sign_up("eve").status_code == 302
    response = sign_up("mallory", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert response.status_code == 429
    assert "你的网络地址注册尝试次数过多，请 60 分钟后再试。" in response.content.decode()


@override_settings(CURFEW_THROTTLE=False)
def test_control_group_with_the_throttle_off_sign_ups_are_not_counted() -> None:
    for n in range(12):
        assert sign_up(f"person{n}").status_code == 302
