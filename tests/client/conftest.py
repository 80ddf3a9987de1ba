"""A light served app for the client's end-to-end test (migrated, no static:
the client only speaks the JSON API)."""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from curfew_client import AsyncCurfewClient, BaseCurfewClient, CurfewClient

from curfew_testkit.server import ServedApp


@pytest.fixture(scope="session")
def api_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    app = ServedApp(Path(tmp_path_factory.mktemp("client")), env={"CURFEW_MANIFEST_STATIC": "0"})
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.stop()


@pytest.fixture(autouse=True)
def _clients_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close the clients a test left open: their decision reports would
    otherwise go on (to a fake server already stopped) into later tests and the
    interpreter's exit. The tests of the reports close their clients themselves."""
    made: list[BaseCurfewClient[Any]] = []
    original = BaseCurfewClient.__init__

    def init(self: BaseCurfewClient[Any], *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(BaseCurfewClient, "__init__", init)
    yield
    for client in made:
        if isinstance(client, CurfewClient):
            client.close()
        elif isinstance(client, AsyncCurfewClient) and client.reports is not None:
            client.reports = None  # its loop is gone: nothing left to report, nothing sent
            atexit.unregister(client._at_exit)
