"""``python manage.py runserver [[host:]port]``: the whole product, reloading.

Django's own ``runserver`` is a WSGI server: it served the pages but answered
404 on every token door (the verdict API, the proxy at ``/v1/``) and no
capsule socket, which are the ASGI edge's (issue 41, finding 8). This command
takes its place (``curfew_core`` is listed before ``django.contrib.staticfiles``
and whitenoise, so its ``runserver`` is the one Django finds) and runs the
server ``make run`` runs: uvicorn over ``settings.ASGI_APPLICATION``,
reloading when code, templates or the gateway client change. ``make run``
itself calls this command, so the flags are declared here only.

Django's arguments are taken as Django takes them (``8001``, ``0.0.0.0:8000``,
``[::1]:8000``, ``--noreload``); ``--nothreading``, ``--nostatic`` and
``--insecure`` are accepted and change nothing (uvicorn has no threads to turn
off, and whitenoise serves the static files in debug as in production).
"""

from __future__ import annotations

import os
import re
import sys
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.core.management.commands.runserver import naiveip_re

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: What the reloader watches (beside ``*.py``): templates too; not ``.venv``.
RELOAD_DIRS = ("curfew_core", "curfew_site", "templates", "client/src")
RELOAD_INCLUDES = ("*.html",)


def address(addrport: str | None) -> tuple[str, int]:
    """``host`` and ``port`` from Django's ``[host:]port`` argument."""
    if not addrport:
        return DEFAULT_HOST, DEFAULT_PORT
    found = re.match(naiveip_re, addrport)
    if found is None:
        raise CommandError(f"{addrport!r} is not a port number or address:port pair.")
    host = found["addr"] or DEFAULT_HOST
    if found["ipv6"]:
        host = host.strip("[]")
    port = int(found["port"])
    if not 0 < port < 65536:
        raise CommandError(f"{found['port']!r} is not a valid port number.")
    return host, port


def uvicorn_argv(host: str, port: int, *, reload: bool) -> list[str]:
    """The server command: ``make run``'s and ``runserver``'s one declaration."""
    module, _, attribute = settings.ASGI_APPLICATION.rpartition(".")
    argv = [sys.executable, "-m", "uvicorn", f"{module}:{attribute}"]
    if reload:
        argv.append("--reload")
        for pattern in RELOAD_INCLUDES:
            argv += ["--reload-include", pattern]
        for folder in RELOAD_DIRS:
            argv += ["--reload-dir", str(settings.BASE_DIR / folder)]
    # --no-proxy-headers: uvicorn would believe X-Forwarded-For from 127.0.0.1,
    # letting anything on this machine pick its own address (see bin/serve).
    return [*argv, "--lifespan", "on", "--no-proxy-headers", "--host", host, "--port", str(port)]


class Command(BaseCommand):
    help = (
        "Serve the whole product (pages, API, proxy, capsule sockets) with uvicorn, "
        "reloading on changes, as `make run` does."
    )
    # Django's runserver checks the project first; uvicorn's start imports it anyway.
    requires_system_checks = "__all__"

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("addrport", nargs="?", help="[host:]port, default 127.0.0.1:8000")
        parser.add_argument(
            "--noreload",
            action="store_false",
            dest="use_reloader",
            help="do not reload when the code changes",
        )
        for flag in ("--nothreading", "--nostatic", "--insecure"):
            parser.add_argument(flag, action="store_true", help="accepted; changes nothing")
        parser.add_argument("--ipv6", "-6", action="store_true", help="listen on ::1 by default")

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = address(options["addrport"])
        if options["ipv6"] and not options["addrport"]:
            host = "::1"
        elif options["ipv6"] and ":" not in host:
            raise CommandError(f"--ipv6 needs an IPv6 address, not {host!r}.")
        argv = uvicorn_argv(host, port, reload=options["use_reloader"])
        shown = f"[{host}]" if ":" in host else host
        self.stdout.write(
            f"Curfew is at http://{shown}:{port}/ "
            f"(API: http://{shown}:{port}/api/v1/openapi.json), served by uvicorn"
        )
        self.stdout.flush()
        os.execv(sys.executable, argv)  # noqa: S606 - the project's own Python and server
