"""WhiteNoise's static files, streamed the way the ASGI server reads them.

WhiteNoise (6.x) answers with a ``FileResponse`` over the open file: a
*synchronous* iterator. Every Curfew server is ASGI (``make run``'s
``runserver`` and ``bin/serve`` run uvicorn), and Django's ASGI handler
cannot stream a synchronous iterator: it warns ("StreamingHttpResponse must
consume synchronous iterators in order to serve them asynchronously") and
reads the whole file into a list in a thread before sending a byte (plotly.js
is 1.2 MB). Here, under ASGI, the same response streams the same file through
an asynchronous iterator, each block read in a thread: no warning, because
there is nothing left to warn about. Headers, status, ranges, HEAD and 304
answers are WhiteNoise's, untouched; the file is still closed with the
response (``FileResponse`` registered its closer). Under WSGI nothing changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest
from whitenoise.middleware import WhiteNoiseMiddleware  # type: ignore[import-untyped]

#: Bytes read per thread hop: big enough that a large file takes few hops.
BLOCK = 64 * 1024


async def _blocks(file: Any) -> AsyncIterator[bytes]:
    if file is None:  # HEAD, 304: no body
        return
    while block := await asyncio.to_thread(file.read, BLOCK):
        yield block


class AsgiWhiteNoiseMiddleware(WhiteNoiseMiddleware):  # type: ignore[misc]
    """``whitenoise.middleware.WhiteNoiseMiddleware``, streaming asynchronously under ASGI."""

    @staticmethod
    def serve(static_file: Any, request: HttpRequest) -> Any:
        response = WhiteNoiseMiddleware.serve(static_file, request)
        if isinstance(request, ASGIRequest):
            response.streaming_content = _blocks(response.file_to_stream)
        return response
