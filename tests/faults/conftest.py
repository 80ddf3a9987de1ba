"""Faults: a storage service that refuses connections, and what each door answers.

Port 1 on loopback: nothing listens there (binding it needs root), so every
connection is refused at once, as when Redis or PostgreSQL is down.
"""

from __future__ import annotations

REFUSED_REDIS_URL = "redis://127.0.0.1:1/0"
UNREACHABLE_DATABASE_URL = "postgres://postgres@127.0.0.1:1/curfew_down"
