"""A cache shared like Redis (a file cache: every process sees it) whose writes
can be refused on demand, as a Redis that drops or refuses them would.

``REFUSING`` switches it: ``set`` and ``delete`` raise the error redis-py
raises for a refused connection; ``get`` and ``add`` keep working, so a test
can refuse exactly the writer's after-commit refresh and nothing else.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.filebased import FileBasedCache
from redis.exceptions import ConnectionError as RedisConnectionError

REFUSING = {"writes": False}


class RefusingCache(FileBasedCache):
    def set(self, *args: Any, **kwargs: Any) -> None:
        if REFUSING["writes"]:
            raise RedisConnectionError(
                "Error 111 connecting to 127.0.0.1:6379. Connection refused."
            )
        super().set(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> bool:
        if REFUSING["writes"]:
            raise RedisConnectionError(
                "Error 111 connecting to 127.0.0.1:6379. Connection refused."
            )
        return super().delete(*args, **kwargs)
