"""A light served app for the client's end-to-end test (migrated, no static:
the client only speaks the JSON API)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from curfew_testkit.server import ServedApp


@pytest.fixture(scope="session")
def api_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    app = ServedApp(Path(tmp_path_factory.mktemp("client")), env={"CURFEW_MANIFEST_STATIC": "0"})
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.stop()
