"""Failed sign-ins are throttled per account and address and per address, on the
settings page's sign-in and the admin's; during a lock-out the right password
is refused too, with a message that says why and for how long."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_testkit.asgi_client import Client
from tests.throttle.conftest import FakeTime

PASSWORD = "correct horse battery"
ACCOUNT_MESSAGE = (
    "Too many failed sign-ins for this account from your network address; try again in"
)
ADDRESS_MESSAGE = "Too many failed sign-ins from your network address; try again in"

pytestmark = pytest.mark.django_db


def sign_in(
    username: str, password: str, *, address: str = "10.0.0.1", path: str = "/login/", **extra: Any
) -> tuple[Any, bool]:
    """One sign-in attempt from a fresh browser; (response, signed in?)."""
    client = Client(REMOTE_ADDR=address)
    data = {"username": username, "password": password}
    if path.startswith("/admin/"):
        data["next"] = "/admin/"
    response = client.post(path, data, **extra)
    return response, "_auth_user_id" in client.session


def fail(times: int, username: str = "ada", **kwargs: Any) -> None:
    for _ in range(times):
        response, signed_in = sign_in(username, "wrong password", **kwargs)
        assert not signed_in
        assert response.status_code in (200, 429)


def test_250_wrong_passwords_then_the_right_one_is_refused_with_the_message(user: User) -> None:
    # The shipped defaults, no override: the issue's own reproduction.
    fail(250)
    response, signed_in = sign_in("ada", PASSWORD)
    assert not signed_in
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    html = response.content.decode()
    assert ACCOUNT_MESSAGE in html
    assert "minutes" in html
    # Rendered on the sign-in page itself, in its error banner.
    assert 'role="alert"' in html
    assert 'name="password"' in html


@override_settings(CURFEW_THROTTLE=False)
def test_control_group_with_the_throttle_off_the_right_password_signs_in(user: User) -> None:
    fail(30)  # three times the default account limit
    response, signed_in = sign_in("ada", PASSWORD)
    assert signed_in
    assert response.status_code == 302


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_the_account_is_locked_after_its_limit_and_not_before(user: User) -> None:
    fail(2)
    _, signed_in = sign_in("ada", PASSWORD)
    assert signed_in, "two failures under a limit of three lock nothing"
    fail(1)
    response, signed_in = sign_in("ada", PASSWORD)
    assert not signed_in
    assert "try again in 15 minutes" in response.content.decode()


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_successful_sign_ins_are_not_counted(user: User) -> None:
    for _ in range(10):
        _, signed_in = sign_in("ada", PASSWORD)
        assert signed_in
    fail(2)
    _, signed_in = sign_in("ada", PASSWORD)
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_the_lock_lifts_when_the_window_has_passed(user: User, fake_clock: FakeTime) -> None:
    fail(3)
    fake_clock.advance(10 * 60)
    response, signed_in = sign_in("ada", PASSWORD)
    assert not signed_in
    assert "try again in 5 minutes" in response.content.decode()
    fake_clock.advance(5 * 60 + 1)
    _, signed_in = sign_in("ada", PASSWORD)
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_the_account_lock_follows_the_name_in_any_case_from_that_address(user: User) -> None:
    fail(1, "ada", address="10.0.0.1")
    fail(1, "ADA", address="10.0.0.1")
    fail(1, " Ada", address="10.0.0.1")
    response, signed_in = sign_in("ada", PASSWORD, address="10.0.0.1")
    assert not signed_in
    assert response.status_code == 429
    assert ACCOUNT_MESSAGE in response.content.decode()


def test_a_guesser_elsewhere_cannot_lock_the_owner_out(user: User) -> None:
    # Issue 23, finding 4: with the shipped defaults, ten wrong passwords for
    # "ada" from anywhere locked ada out everywhere, the right password
    # included. The guesser locks only their own address out of that account.
    fail(30, "ada", address="203.0.113.66")
    response, signed_in = sign_in("ada", "correct horse battery", address="203.0.113.66")
    assert not signed_in
    assert ACCOUNT_MESSAGE in response.content.decode()
    _, signed_in = sign_in("ada", PASSWORD, address="198.51.100.7")
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_guessers_at_many_addresses_each_get_only_the_pair_limit(user: User) -> None:
    # A spread-out guess is slowed per address (the pair's limit each, and the
    # address limit across names); the owner's own address stays open.
    for host in range(1, 5):
        fail(3, "ada", address=f"203.0.113.{host}")
        response, _ = sign_in("ada", "guess", address=f"203.0.113.{host}")
        assert response.status_code == 429
    _, signed_in = sign_in("ada", PASSWORD, address="10.0.0.1")
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ADDRESS="5/15minutes")
def test_the_address_lock_is_independent_of_the_username(user: User, other_user: User) -> None:
    for name in ("ann", "bob", "cy", "dee", "ed"):
        fail(1, name, address="10.0.0.9")
    # A name never tried, with its right password, from the same address: refused.
    response, signed_in = sign_in("grace", PASSWORD, address="10.0.0.9")
    assert not signed_in
    assert response.status_code == 429
    assert ADDRESS_MESSAGE in response.content.decode()
    # The same person from another address is not affected.
    _, signed_in = sign_in("grace", PASSWORD, address="10.0.0.10")
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ADDRESS="5/15minutes")
def test_an_ipv6_client_cannot_rotate_through_its_own_64(user: User) -> None:
    for host in range(1, 6):
        fail(1, f"name{host}", address=f"2001:db8:0:1::{host:x}")
    _, signed_in = sign_in("ada", PASSWORD, address="2001:db8:0:1::ffff")
    assert not signed_in
    _, signed_in = sign_in("ada", PASSWORD, address="2001:db8:0:2::1")
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ADDRESS="3/15minutes", CURFEW_BEHIND_PROXY=False)
def test_a_spoofed_forwarded_for_does_not_escape_the_address_limit(user: User) -> None:
    for n in range(3):
        fail(1, f"name{n}", address="10.0.0.5", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    response, signed_in = sign_in(
        "ada", PASSWORD, address="10.0.0.5", HTTP_X_FORWARDED_FOR="198.51.100.200"
    )
    assert not signed_in
    assert ADDRESS_MESSAGE in response.content.decode()


@override_settings(
    CURFEW_SIGNIN_FAILURES_PER_ADDRESS="3/15minutes",
    CURFEW_BEHIND_PROXY=True,
    CURFEW_TRUSTED_PROXIES=["10.9.9.9"],
)
def test_behind_the_proxy_the_address_it_appended_counts(user: User) -> None:
    balancer = "10.9.9.9"
    # The client writes whatever it likes on the left; the balancer appends the truth.
    for n in range(3):
        fail(
            1,
            f"name{n}",
            address=balancer,
            HTTP_X_FORWARDED_FOR=f"198.51.100.{n}, 203.0.113.5",
        )
    response, signed_in = sign_in(
        "ada", PASSWORD, address=balancer, HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.5"
    )
    assert not signed_in
    assert ADDRESS_MESSAGE in response.content.decode()
    # Another client behind the same balancer is not affected.
    _, signed_in = sign_in("ada", PASSWORD, address=balancer, HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_the_admin_sign_in_is_throttled_too(db: None) -> None:
    User.objects.create_user("root", password=PASSWORD, is_staff=True, is_superuser=True)
    fail(3, "root", path="/admin/login/")
    response, signed_in = sign_in("root", PASSWORD, path="/admin/login/")
    assert not signed_in
    assert ACCOUNT_MESSAGE in response.content.decode()
    # As documented: 429 with Retry-After, as the settings page answers (a 200 before).
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    # ... and failures on either form count toward one lock.
    User.objects.create_user("op", password=PASSWORD, is_staff=True)
    fail(2, "op", path="/admin/login/")
    fail(1, "op", path="/login/")
    _, signed_in = sign_in("op", PASSWORD, path="/login/")
    assert not signed_in


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_the_admin_sign_in_answers_a_wrong_password_as_before(db: None) -> None:
    """The control group: a plain wrong password on the admin's form is its
    own page again (200, its error), not a 429; the right one signs in."""
    User.objects.create_user("root", password=PASSWORD, is_staff=True, is_superuser=True)
    response, signed_in = sign_in("root", "wrong password", path="/admin/login/")
    assert (signed_in, response.status_code) == (False, 200)
    assert "Retry-After" not in response
    assert 'name="password"' in response.content.decode()
    response, signed_in = sign_in("root", PASSWORD, path="/admin/login/")
    assert signed_in
    assert response.status_code == 302


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
def test_the_lock_out_message_is_in_chinese_on_the_chinese_page(user: User) -> None:
    fail(3)
    response, signed_in = sign_in("ada", PASSWORD, HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert not signed_in
    assert "此账号从你的网络地址登录失败次数过多，请 15 分钟后再试。" in response.content.decode()


@override_settings(CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS="3/15minutes")
@pytest.mark.parametrize("fault", ["timeout", "connection"])
def test_a_failure_that_cannot_be_counted_is_an_outage_not_a_silent_wrong_password(
    user: User, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """Redis answers the lock-out check, then fails (or times out, as under
    load) on counting the wrong password. Before: "wrong password", the count
    silently lost, so a guesser who can slow Redis is never locked out. Now:
    the styled 503 with Retry-After, and nothing counted in silence."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from curfew_core import throttle

    error = RedisTimeoutError("Timeout reading from socket")
    if fault == "connection":
        error = RedisConnectionError("Connection reset by peer")

    def cannot_count(username: str, address: str) -> None:
        raise error

    monkeypatch.setattr(throttle, "note_signin_failure", cannot_count)
    response, signed_in = sign_in("ada", "wrong password")
    assert not signed_in
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert "text/html" in response["Content-Type"]
    # The control: with counting working, the same attempt is a plain refusal.
    monkeypatch.undo()
    response, signed_in = sign_in("ada", "wrong password")
    assert (response.status_code, signed_in) == (200, False)
