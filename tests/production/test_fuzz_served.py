"""Schemathesis against production mode: the served OpenAPI document, over HTTP,
on the production command (``bin/serve``: debug off, two uvicorn workers,
PostgreSQL and Redis).

``tests/api/test_fuzz_openapi.py`` runs the same checks in-process, inside a
test transaction, on whatever database the run has. What only production
mode has is checked here: the real server's head handling and body limits,
debug off (an error is never Django's debug page), commits that really
commit (the cache refreshed after each, by another process than the next
request's, at times), and answers crossing two workers. Issue 23 asked for
it ("not yet tried").

schemathesis's own command line runs it (its pytest plugin loads a document
only at collection, before any server of the run is up), with the in-process
run's settings (``SETTINGS``, written as its ``schemathesis.toml``), every
check, the coverage phase (every boundary and kind of invalid value the
document implies, 900 cases) and ``FUZZ_SERVED_EXAMPLES`` random examples per
operation (20), seeded, so a run is repeatable. About two minutes: ``make
fuzz`` runs it, ``make test`` leaves it out (the Makefile's ``LONG_RUNS``).
The first run found nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from schemathesis.core.warnings import SchemathesisWarning

from curfew_testkit.server import ServedApp
from tests.api.test_fuzz_openapi import SETTINGS
from tests.production.conftest import forget_namespace, new_user, shared_env

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

MAX_EXAMPLES = int(os.environ.get("FUZZ_SERVED_EXAMPLES", "20"))

#: The warnings the run shows (and the test fails on): schemathesis's own
#: default set but ``validation_mismatch``. Its one case here is ``GET
#: /state``'s ``user``: a personal token may name only its own person (any
#: other name is the 422 the document says in words, a rule no schema can
#: state), so most generated names are refused. schemathesis 4.32 reads only
#: the project's list when it records a warning (an ``[[operations]]``
#: entry's is not consulted), so it is left out here for every operation;
#: every check still runs on each.
WARNINGS = [
    warning.value
    for warning in SchemathesisWarning
    if warning not in (SchemathesisWarning.VALIDATION_MISMATCH, SchemathesisWarning.LOW_VALID_RATE)
]


def toml(table: dict[str, Any], path: tuple[str, ...] = ()) -> str:
    """``table`` as TOML: nested tables of strings, booleans and lists of strings."""
    values, tables = [], []
    for key, value in table.items():
        if isinstance(value, dict):
            tables.append(toml(value, (*path, key)))
        elif isinstance(value, bool):
            values.append(f"{key} = {str(value).lower()}")
        elif isinstance(value, list):
            values.append(f"{key} = [{', '.join(f'{item!r}' for item in value)}]")
        else:
            values.append(f"{key} = {value!r}")
    head = [f"[{'.'.join(path)}]"] if path and values else []
    return "\n".join([*head, *values, *tables]) + "\n"


@pytest.fixture(scope="module")
def production(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str, redis_url: str
) -> Iterator[ServedApp]:
    # The fuzzer sends hundreds of requests with one token in a few seconds.
    env = shared_env(postgres_url, redis_url, CURFEW_TOKEN_RATE="off")
    app = ServedApp(tmp_path_factory.mktemp("fuzz-served"), env=env, workers=2)
    app.start()
    yield app
    app.stop()
    forget_namespace(env)


def test_the_toml_says_what_the_settings_say(tmp_path: Path) -> None:
    import tomllib

    assert tomllib.loads(toml(SETTINGS)) == SETTINGS


def test_every_operation_keeps_the_contract_in_production_mode(
    production: ServedApp, tmp_path: Path
) -> None:
    token, _ = new_user(production, "fuzz")
    # The team API's operations need a team, and its admin to change it (as
    # the in-process run arranges): in no team, each is a 404 by design.
    production.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User\n"
        "from curfew_core.services.teams import team_create\n"
        "team_create(name='fuzz', admin=User.objects.get(username='fuzz'))\n",
    )
    config = tmp_path / "schemathesis.toml"
    config.write_text(toml({**SETTINGS, "warnings": WARNINGS}))
    headers = {"Authorization": f"Bearer {token}", **production.client_headers}
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(config),
        "run",
        f"{production.base_url}/api/v1/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        "21",
        "--request-timeout",
        "30",
        *(part for name, value in headers.items() for part in ("-H", f"{name}: {value}")),
    ]
    # In its own folder: the command line keeps a .schemathesis/ cache where it runs.
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    report = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    assert "no issues found" in done.stdout.lower(), report
