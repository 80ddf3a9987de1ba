"""The app under any conformant ASGI server, not only the one we deploy.

``curfew_site.asgi:application`` is an ASGI 3 application; what it reads of a
scope must be what the specification promises, not what uvicorn happens to
send. Issue 21 was the opposite: Daphne (``make run``'s server then) sends
``scope["server"]`` as a list, as the specification allows ("Iterable[str,
int]"), the edge used it as a dict key, and every API and proxy door answered
an HTML 500 under it. So the same door checks as ``make run`` and
``bin/serve`` (``tests/readme/doors.py``) run here under Daphne, Channels' own
server (a development dependency only).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from curfew_testkit.server import ServedApp
from tests.readme.doors import Served, drive_every_door


class DaphneApp(ServedApp):
    """``ServedApp`` (production settings on loopback, its own SQLite file and
    collected static files), served by Daphne instead of uvicorn."""

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "daphne",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "curfew_site.asgi:application",
        ]


@pytest.fixture(scope="module")
def daphne(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    app = DaphneApp(tmp_path_factory.mktemp("daphne"))
    app.prepare()
    app.start()
    yield app
    app.stop()


def test_daphne_serves_every_door(daphne: ServedApp) -> None:
    drive_every_door(Served.of(daphne))
