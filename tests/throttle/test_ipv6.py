"""IPv6 clients are counted per /64 (docs/security.md), checked (issue 41).

A host is routinely given a whole /64, so counting /128s would let one client
rotate through 2^64 addresses. Two addresses in one /64 share a count, two in
different /64s do not, an IPv4-mapped address (``::ffff:1.2.3.4``, what a
dual-stack listener reports for an IPv4 client) counts as the IPv4 address,
and ``X-Forwarded-For`` from a named balancer is read by the same rules,
whichever family the balancer and the client speak. The first tests are the
rule; the last ones hold it at the doors (the verdict API's failure limit).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory, override_settings

from curfew_core import throttle
from tests.throttle.test_tokens import garbage, verdict

pytestmark = pytest.mark.django_db

SAME_64 = ["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:DB8:1:2:0:0:0:7"]
OTHER_64 = "2001:db8:1:3::1"


def key(remote: str, forwarded: str = "") -> str:
    meta: dict[str, Any] = {"REMOTE_ADDR": remote}
    if forwarded:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return throttle.client_address(RequestFactory().get("/", **meta))


def test_two_addresses_in_one_64_share_a_key() -> None:
    assert {key(address) for address in SAME_64} == {"2001:db8:1:2::/64"}


def test_addresses_in_different_64s_do_not() -> None:
    assert key(SAME_64[0]) != key(OTHER_64)
    # Neighbouring /64s (the last bit of the prefix apart), and one /48's two /64s.
    assert key("2001:db8:0:ff00::1") != key("2001:db8:0:ff01::1")
    assert key("2001:db8:1:2::1") == key("2001:db8:1:2:1::1")  # the 65th bit: one /64


@pytest.mark.parametrize(
    "spelling", ["::ffff:1.2.3.4", "::FFFF:1.2.3.4", "::ffff:102:304", "[::ffff:1.2.3.4]:443"]
)
def test_an_ipv4_mapped_address_counts_as_the_ipv4_one(spelling: str) -> None:
    assert key(spelling) == key("1.2.3.4") == "1.2.3.4"
    assert key(spelling) != key("::ffff:1.2.3.5")


def test_spellings_of_one_client_are_one_key() -> None:
    assert key("[2001:db8:1:2::1]:51234") == key("2001:db8:1:2::1")
    assert key("fe80::1%eth0") == key("fe80::2%eth1") == "fe80::/64"
    assert key("::1") == "::/64"
    assert key("203.0.113.9:51234") == key("203.0.113.9") == "203.0.113.9"


@override_settings(CURFEW_BEHIND_PROXY=True, CURFEW_TRUSTED_PROXIES=["2001:db8:ffff::/64"])
def test_forwarded_ipv6_from_an_ipv6_balancer_is_counted_per_64() -> None:
    balancer = "2001:db8:ffff::10"
    for client in SAME_64:
        assert key(balancer, f"{client}, 2001:db8:ffff::11") == "2001:db8:1:2::/64"
    assert key(balancer, OTHER_64) == "2001:db8:1:3::/64"
    assert key(balancer, "[2001:db8:1:2::9]:443") == "2001:db8:1:2::/64"
    assert key(balancer, "::ffff:1.2.3.4") == "1.2.3.4"
    # A peer that is no named balancer: its own /64, whatever it wrote.
    assert key("2001:db8:fffe::10", OTHER_64) == "2001:db8:fffe::/64"


@override_settings(CURFEW_BEHIND_PROXY=True, CURFEW_TRUSTED_PROXIES=["10.1.1.0/24"])
def test_a_balancer_seen_ipv4_mapped_is_still_named_and_its_ipv6_clients_counted() -> None:
    # A dual-stack listener reports the IPv4 balancer as ::ffff:10.1.1.1.
    assert key("::ffff:10.1.1.1", SAME_64[0]) == "2001:db8:1:2::/64"
    assert key("::ffff:10.1.1.1", f"{SAME_64[1]}, ::ffff:10.1.1.2") == "2001:db8:1:2::/64"
    assert key("::ffff:10.2.1.1", SAME_64[0]) == "10.2.1.1"


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_a_64_rotating_its_addresses_is_refused_as_one_client() -> None:
    for n in range(5):
        assert verdict(garbage(n), f"2001:db8:1:2::{n + 1:x}").status_code == 401
    assert verdict(garbage(9), "2001:db8:1:2:dead:beef:0:1").status_code == 429
    assert verdict(garbage(9), OTHER_64).status_code == 401  # the next /64 is someone else


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_an_ipv4_client_seen_mapped_shares_its_ipv4_count() -> None:
    for n in range(3):
        assert verdict(garbage(n), "198.51.100.7").status_code == 401
    for n in range(3, 5):
        assert verdict(garbage(n), "::ffff:198.51.100.7").status_code == 401
    assert verdict(garbage(9), "198.51.100.7").status_code == 429
    assert verdict(garbage(9), "::ffff:198.51.100.8").status_code == 401


@override_settings(
    CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute",
    CURFEW_BEHIND_PROXY=True,
    CURFEW_TRUSTED_PROXIES=["2001:db8:ffff::/64"],
)
def test_behind_an_ipv6_balancer_its_clients_are_counted_per_64() -> None:
    balancer = "2001:db8:ffff::10"
    for n in range(5):
        forwarded = f"2001:db8:1:2::{n + 1:x}"
        assert verdict(garbage(n), balancer, HTTP_X_FORWARDED_FOR=forwarded).status_code == 401
    rotated = "2001:db8:1:2::abcd"
    assert verdict(garbage(9), balancer, HTTP_X_FORWARDED_FOR=rotated).status_code == 429
    assert verdict(garbage(9), balancer, HTTP_X_FORWARDED_FOR=OTHER_64).status_code == 401
