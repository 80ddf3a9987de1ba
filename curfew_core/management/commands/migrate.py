"""``manage.py migrate``: Django's, with a database that does not answer said
in one line instead of Django's traceback.

``bin/serve prepare`` runs it on every release. With PostgreSQL away (down, a
wrong host or port in ``DATABASE_URL``) Django's own ``migrate`` ended in a
traceback of forty lines through the connection pool, whose last line did not
say which database it had asked. Here the connection is made first; if it
fails, the command stops with where it asked (the engine's name, host, port
and database: never the password) and what the driver said, and nothing was
changed. Any error after that, once connected, is Django's, traceback and
all: it is a migration's to explain.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections


def where(alias: str) -> str:
    """The database ``alias`` names, as an operator would look for it."""
    settings = connections[alias].settings_dict
    name = settings.get("NAME") or ""
    if settings.get("ENGINE", "").endswith("sqlite3"):
        return f"SQLite {name}"
    host = settings.get("HOST") or "localhost"
    port = settings.get("PORT")
    return f"{name} at {host}{f':{port}' if port else ''}"


class _First(logging.Filter):
    """Keeps the first record it sees and lets none through."""

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.first is None:
            self.first = record.getMessage()
        return False


class Command(DjangoMigrate):
    def execute(self, *args: Any, **options: Any) -> Any:
        # Before the system checks: they would wait for the database first.
        alias = options.get("database") or DEFAULT_DB_ALIAS
        pool_log = logging.getLogger("psycopg.pool")
        first = _First()
        # The pool's retries (a line each, several a second while it waits)
        # held back; the first one told once, in the error.
        pool_log.addFilter(first)
        try:
            connections[alias].ensure_connection()
        except OperationalError as exc:
            said = str(exc).strip()
            if first.first:
                said = f"{said}: {first.first.strip().splitlines()[0]}"
            password = connections[alias].settings_dict.get("PASSWORD")
            if password:
                said = said.replace(str(password), "***")
            # The pool's own thread goes on trying until the process ends: still quiet.
            raise CommandError(
                f"the database {where(alias)} ({alias!r}) does not answer ({said}). "
                "Nothing was changed; check DATABASE_URL and that the server is up."
            ) from None
        pool_log.removeFilter(first)
        return super().execute(*args, **options)
