"""bin/serve's app (``curfew_site.serve.Dispatch``): an HTTP scope goes straight
to the edge, everything else through Channels' router (the served suites in
``tests/production`` and ``tests/realtime`` run it whole behind bin/serve)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from curfew_site.serve import Dispatch

ROOT = Path(__file__).resolve().parents[2]


class Router:
    def __init__(self) -> None:
        self.calls: list[str] = []

        async def http(scope: Any, receive: Any, send: Any) -> None:
            self.calls.append(f"edge {scope['type']}")

        self.application_mapping = {"http": http}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls.append(f"router {scope['type']}")


async def test_http_goes_to_the_edge_and_the_rest_through_the_router():
    router = Router()
    app = Dispatch(router)
    for kind in ("http", "websocket", "lifespan"):
        await app({"type": kind}, None, None)
    assert router.calls == ["edge http", "router websocket", "router lifespan"]


def test_bin_serve_names_the_interface_uvicorn_cannot_guess():
    # A plain call returning a coroutine: uvicorn's guess would take it for ASGI 2.
    assert not inspect.iscoroutinefunction(Dispatch.__call__)
    serve = (ROOT / "bin" / "serve").read_text()
    assert "curfew_site.serve:application --factory --interface asgi3" in serve
