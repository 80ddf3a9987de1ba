"""Through ``bin/serve``'s own uvicorn: ``X-Forwarded-For`` from loopback does
not escape the address throttle (issue 23, finding 3).

uvicorn's own proxy-header handling believed ``X-Forwarded-For`` on any
connection from 127.0.0.1, and ``bin/serve`` turned it on: random tokens from
loopback, each with a new ``X-Forwarded-For``, were all 401, never 429, so a
tunnel on the same machine let every client pick its own address. The app
alone now decides whose header to believe (``CURFEW_BEHIND_PROXY`` and
``CURFEW_TRUSTED_PROXIES``); the control shows the header does reach it and
is believed from a named balancer, so the first test cannot pass by accident.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import httpx
import pytest

from curfew_testkit.server import ROOT, ServedApp

LIMIT = 5


class RunOnly(ServedApp):
    """``bin/serve run``: its workers exactly, without the deploy check (plain
    HTTP on loopback here, which that check rightly refuses)."""

    def command(self) -> list[str]:
        return [str(ROOT / "bin" / "serve"), "run"]


def served(workdir: Path, **env: str) -> ServedApp:
    app = RunOnly(
        workdir,
        workers=1,
        env={
            "CURFEW_HTTPS": "0",
            "CURFEW_TOKEN_FAILURES_PER_ADDRESS": f"{LIMIT}/minute",
            **env,
        },
    )
    app.prepare()
    app.start()
    return app


def statuses(app: ServedApp, count: int) -> list[int]:
    """``count`` random tokens from 127.0.0.1, each claiming a new address."""
    answers = []
    with httpx.Client(base_url=app.base_url, timeout=10) as client:
        for n in range(count):
            response = client.post(
                "/api/v1/verdict",
                json={},
                headers={
                    "Authorization": f"Bearer cfw_{secrets.token_urlsafe(32)}",
                    "X-Forwarded-For": f"198.51.{n // 250}.{n % 250 + 1}",
                },
            )
            answers.append(response.status_code)
    return answers


def test_without_behind_proxy_a_new_forwarded_for_per_request_still_trips_429(
    tmp_path: Path,
) -> None:
    app = served(tmp_path, CURFEW_BEHIND_PROXY="0")
    try:
        answers = statuses(app, LIMIT + 3)
    finally:
        app.stop()
    assert answers == [401] * LIMIT + [429] * 3


@pytest.mark.parametrize(
    ("trusted", "expected"),
    [
        # A balancer the operator named: each forwarded client is its own.
        ("127.0.0.1", [401] * (LIMIT + 3)),
        # Behind a balancer, but this connection is not from it: not believed.
        ("127.0.0.2", [401] * LIMIT + [429] * 3),
    ],
)
def test_behind_proxy_forwarded_for_is_believed_only_from_named_balancers(
    tmp_path: Path, trusted: str, expected: list[int]
) -> None:
    app = served(tmp_path, CURFEW_BEHIND_PROXY="1", CURFEW_TRUSTED_PROXIES=trusted)
    try:
        answers = statuses(app, LIMIT + 3)
    finally:
        app.stop()
    assert answers == expected


def test_make_run_starts_uvicorn_with_its_proxy_headers_off() -> None:
    # make run serves with uvicorn through `manage.py runserver`
    # (tests/readme/test_make_run.py runs it whole, in a fresh clone): its
    # command line is checked here, where the suite runs in seconds. Without
    # the flag uvicorn believes loopback's X-Forwarded-For, as bin/serve's did.
    from curfew_core.management.commands.runserver import uvicorn_argv

    # --no-print-directory: started from a make of its own (``make pytest-app``),
    # make would print "Leaving directory" after the last command.
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", "PORT=8123"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.replace("\\\n", " ").splitlines()  # one line per command
    assert "manage.py runserver 127.0.0.1:8123" in lines[-1], done.stdout
    for reload in (True, False):
        argv = " ".join(uvicorn_argv("127.0.0.1", 8123, reload=reload))
        assert "-m uvicorn" in argv
        assert "--no-proxy-headers" in argv
        assert "--proxy-headers" not in argv.replace("--no-proxy-headers", "")
