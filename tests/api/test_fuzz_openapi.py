"""Schemathesis over the served OpenAPI document: every operation, every check.

The document is loaded from ``/api/v1/openapi.json`` as a client would, and
every generated request (valid and invalid, from the schema) goes through the
whole Django stack with a real API token. All of schemathesis's checks run:
no server error, status codes and headers the document declares, bodies that
match the declared schemas, valid data accepted and invalid data refused.
Any failure means the document and the validators disagree, or a door
answered outside its shape.

Bounded and derandomised for ``make test``: schemathesis's coverage phase
(every boundary and every kind of invalid value the document implies, run as
explicit examples) plus a few random examples per operation. ``make fuzz``
runs the same with ``CURFEW_FUZZ_EXAMPLES`` set high.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import TestCase
from hypothesis import HealthCheck, Phase, settings
from schemathesis.config import SchemathesisConfig

from curfew_core.selectors.teams import membership_of
from curfew_core.services.teams import team_create
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import as_wsgi

MAX_EXAMPLES = int(os.environ.get("CURFEW_FUZZ_EXAMPLES", "10"))


#: The whole app in-process, the edge in front of Django (the token doors are
#: not Django's), called on the test's thread inside its transaction; the
#: document is fetched from it as a client would (the view needs no database,
#: so this works at collection).
APP = as_wsgi
#: The run's settings, also written to ``schemathesis.toml`` for the CLI run
#: against production mode (``tests/production/test_fuzz_served.py``).
SETTINGS: dict[str, Any] = {
    # Show the real request in a failure (it holds only test data).
    "output": {"sanitization": {"enabled": False}},
    "checks": {
        # 422 is the document's answer for well-formed input that a rule
        # no schema can state refuses (night order, anchors in the
        # window, unknown zones); 400 stays for what the schema refuses.
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "401", "409", "422", "429", "503"]
        },
        # ...and the converse: what the schema refuses is a 400 (or is
        # refused before it is read: token, size, rate), even with a
        # stale version.
        "negative_data_rejection": {"expected-statuses": ["400", "401", "413", "429", "503"]},
    },
}
CONFIG = SchemathesisConfig.from_dict(SETTINGS)

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", APP, config=CONFIG)


@pytest.fixture(autouse=True)
def _keep_the_test_transaction() -> Iterator[None]:
    # Django's test client keeps the test's transaction open by not closing
    # the connection as a request starts and ends; a bare handler would, so
    # the same signals are held off here.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_the_contract(case: Any, user: Any) -> None:
    _, raw = token_create(user=user, name="fuzz")
    if membership_of(user_id=user.pk) is None:
        # The team API's operations need a team, and its admin to change it.
        team_create(name="fuzz", admin=user)
    # Commit hooks (cache refresh, events) run as each request ends, as in production.
    with TestCase.captureOnCommitCallbacks(execute=True):
        case.call_and_validate(headers={"Authorization": f"Bearer {raw}"})
