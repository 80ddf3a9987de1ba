"""``bin/serve`` as the README's "Production" runs it, and every door through it.

The production command (deploy check, collectstatic, migrate, uvicorn's
workers with the lean WebSocket protocol) on SQLite, behind the
TLS-terminating balancer the test plays (``X-Forwarded-Proto: https``):
the same door checks as ``make run`` (``tests/readme/doors.py``).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest

from curfew_testkit.server import ServedApp
from tests.readme.doors import Served, assert_no_secret_logged, drive_every_door


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    app = ServedApp(tmp_path_factory.mktemp("bin-serve"), workers=1)
    app.start()
    yield app
    app.stop()


def test_bin_serve_serves_every_door(production: ServedApp) -> None:
    served = Served.of(production)
    drive_every_door(served)
    assert_no_secret_logged(production.log_path.read_text(errors="replace"), served)


def test_bin_serve_names_no_server_software(production: ServedApp) -> None:
    """``--no-server-header``: an answer says nothing of what serves it (a
    page's, Django's, and a door's, the edge's); it still carries its date."""
    for path in ("/healthz", "/api/v1/openapi.json"):
        request = urllib.request.Request(
            production.base_url + path, headers=production.client_headers
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
            assert answer.headers.get("server") is None
            assert answer.headers.get("date")
