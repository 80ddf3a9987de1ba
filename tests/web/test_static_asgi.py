"""Static files under ASGI stream through an asynchronous iterator
(``web.static_files``): Django's ASGI handler then has nothing to warn about.
WhiteNoise's own middleware makes it warn ("StreamingHttpResponse must
consume synchronous iterators ...") on every file, under ``make run`` too
(the control). The bytes, their length and a HEAD are the same."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.test import override_settings

from curfew_testkit.asgi_scope import http_scope

STOCK = "whitenoise.middleware.WhiteNoiseMiddleware"
OURS = "curfew_core.web.static_files.AsgiWhiteNoiseMiddleware"
FILE = Path(settings.BASE_DIR) / "static" / "curfew" / "curfew.css"


async def _get(method: str, path: str) -> tuple[list[Warning], int, dict[bytes, bytes], bytes]:
    """``method path`` through Django's ASGI handler, with the warnings it gave."""
    scope = http_scope(method, path, [(b"host", b"testserver")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = ApplicationCommunicator(ASGIHandler(), scope)  # type: ignore[no-untyped-call]
        await app.send_input({"type": "http.request", "body": b""})  # type: ignore[no-untyped-call]
        start = await app.receive_output(timeout=10)  # type: ignore[no-untyped-call]
        body = b""
        while True:
            message = await app.receive_output(timeout=10)  # type: ignore[no-untyped-call]
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await app.wait(timeout=10)  # type: ignore[no-untyped-call]
    streaming = [w.message for w in caught if "StreamingHttpResponse" in str(w.message)]
    return streaming, start["status"], dict(start["headers"]), body  # type: ignore[return-value]


def _middleware(which: str) -> list[str]:
    assert STOCK in settings.MIDDLEWARE or OURS in settings.MIDDLEWARE
    return [which if entry in (STOCK, OURS) else entry for entry in settings.MIDDLEWARE]


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_a_static_file_streams_without_the_warning(method: str) -> None:
    with override_settings(MIDDLEWARE=_middleware(STOCK)):
        said, status, headers, body = await _get(method, "/static/curfew/curfew.css")
    # The control: WhiteNoise's own middleware warns under ASGI.
    assert len(said) == 1
    assert body == (FILE.read_bytes() if method == "GET" else b"")
    with override_settings(MIDDLEWARE=_middleware(OURS)):
        ours = await _get(method, "/static/curfew/curfew.css")
    assert ours == ([], status, headers, body)


def test_the_site_serves_its_static_files_through_ours() -> None:
    """The settings use the streaming middleware (the stock one would warn on
    every file under ``make run`` and ``bin/serve``)."""
    assert OURS in settings.MIDDLEWARE
    assert STOCK not in settings.MIDDLEWARE
