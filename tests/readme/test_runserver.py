"""``python manage.py runserver``, the first command every Django developer
types, serves the whole product (issue 41, finding 8).

Django's own ``runserver`` is a WSGI server: it served the pages but answered
404 on every token door and no capsule socket. Curfew's ``runserver``
(``curfew_core/management/commands/runserver.py``) runs ``make run``'s
server instead, uvicorn reloading on changes; here it is started as a Django
developer would, ``manage.py runserver PORT``, in debug on its own SQLite
file, and the same door checks as ``make run`` and ``bin/serve`` run through it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, get_commands

from curfew_core.management.commands import runserver
from curfew_testkit.server import ServedApp
from tests.readme.doors import Served, assert_no_secret_logged, drive_every_door


class RunserverApp(ServedApp):
    """``ServedApp``'s database and settings, started by ``manage.py runserver``."""

    def command(self) -> list[str]:
        return [sys.executable, "manage.py", "runserver", str(self.port)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunserverApp]:
    app = RunserverApp(
        tmp_path_factory.mktemp("runserver"),
        # Debug, as a developer runs it; static files from the finders.
        env={"CURFEW_DEBUG": "1", "CURFEW_MANIFEST_STATIC": "0"},
    )
    app.prepare()
    app.start(timeout=60)
    yield app
    app.stop()


def test_runserver_serves_every_door(served: RunserverApp) -> None:
    user = Served.of(served)
    drive_every_door(user)
    log = served.log_path.read_text(errors="replace")
    assert "Started reloader process" in log, "uvicorn, reloading, as make run serves"
    assert_no_secret_logged(log, user)


def test_djangos_runserver_is_not_the_one_found() -> None:
    """The control: Django, whitenoise and staticfiles each have a runserver;
    the app list puts Curfew's first."""
    assert get_commands()["runserver"] == "curfew_core"


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        (None, ("127.0.0.1", 8000)),
        ("8001", ("127.0.0.1", 8001)),
        ("0.0.0.0:8002", ("0.0.0.0", 8002)),
        ("[::1]:8003", ("::1", 8003)),
        ("localhost:8004", ("localhost", 8004)),
    ],
)
def test_djangos_arguments_are_taken_as_django_takes_them(
    argument: str | None, expected: tuple[str, int]
) -> None:
    assert runserver.address(argument) == expected


@pytest.mark.parametrize("argument", ["eighty", "1.2.3.4:", "99999", ":80:80"])
def test_a_bad_address_names_itself(argument: str) -> None:
    with pytest.raises(CommandError, match="port"):
        runserver.address(argument)
