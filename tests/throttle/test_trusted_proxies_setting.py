"""``CURFEW_TRUSTED_PROXIES`` (and the sign-in lock's old name) is checked at
start-up: a typo, or a balancer without it, stops the process with the reason
instead of trusting the wrong peers (everyone, or no one) in silence."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from curfew_testkit.server import ROOT

PROBE = "import curfew_site.settings_base as s; print(s.CURFEW_TRUSTED_PROXIES)"


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CURFEW_")}
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_addresses_and_networks_are_read() -> None:
    done = settings_with(
        CURFEW_BEHIND_PROXY="1", CURFEW_TRUSTED_PROXIES=" 10.0.0.5, 10.1.0.0/16 ,::1"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['10.0.0.5/32', '10.1.0.0/16', '::1/128']"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CURFEW_BEHIND_PROXY": "1"},
            "CURFEW_BEHIND_PROXY=1 needs CURFEW_TRUSTED_PROXIES",
        ),
        (
            {"CURFEW_TRUSTED_PROXIES": "10.0.0.5,balancer.internal"},
            "CURFEW_TRUSTED_PROXIES: 'balancer.internal' is not an IP address or network",
        ),
        # The account lock's old name (per account alone) is refused, not ignored.
        (
            {"CURFEW_SIGNIN_FAILURES_PER_ACCOUNT": "10/15minutes"},
            "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT is gone",
        ),
    ],
)
def test_a_missing_or_bad_list_stops_the_start_naming_it(env: dict[str, str], message: str) -> None:
    done = settings_with(**env)
    assert done.returncode != 0
    assert message in done.stderr
