"""The application as ``bin/serve`` starts it: one call per worker process.

``bin/serve`` runs uvicorn with ``--factory curfew_site.serve:application``, so
each worker imports the app, then moves everything loaded at startup (Django,
the app's modules, their caches) out of the garbage collector's sight with
``gc.freeze()``: a server holding ten thousand open sockets would otherwise
re-walk those objects on every full collection. Collections also run less
often (``GC_THRESHOLD`` allocations, not 700): each socket allocates a few
dozen container objects, and the young generation's scans of ten thousand of
them were most of the time a fan-out took. Reference counting still frees
almost everything at once; the collector is only for cycles.
"""

from __future__ import annotations

import gc
from typing import Any

#: First-generation threshold (CPython's default is 700).
GC_THRESHOLD = 20_000


def application() -> Any:
    from curfew_site.asgi import application as app

    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, second, third)
    return app
