"""``bin/serve`` as the README's "Production" runs it, and every door through it.

The production command (deploy check, collectstatic, migrate, uvicorn's
workers with the lean WebSocket protocol) on SQLite, behind the
TLS-terminating balancer the test plays (``X-Forwarded-Proto: https``):
the same door checks as ``make run`` (``tests/readme/doors.py``).
"""

from __future__ import annotations

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
