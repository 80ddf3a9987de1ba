"""Where cached state lives: the cache's keys, lifetimes and freshness
(``cache_policy``), Django's Redis cache with one shared client
(``redis_cache``), and the event loop's own read of the same cache
(``async_cache``) for the edge's warm path."""
