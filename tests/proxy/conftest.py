"""The proxy served for real, in front of a recording fake upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from curfew_core.proxy import upstream as upstream_module
from curfew_core.schedules import override_commands
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.overrides import override_apply
from curfew_core.services.tokens import token_create
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import ServedApp
from tests.proxy.inprocess import SECRET

UPSTREAM_KEY = "sk-upstream-secret"
ANTHROPIC_KEY = "sk-ant-upstream-secret"
EXEMPT_SESSION = "exempt-session"


@pytest.fixture(scope="session")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def anthropic_upstream() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic().start()
    yield fake
    fake.stop()


@pytest.fixture
def both_upstreams(upstream: FakeUpstream, anthropic_upstream: FakeAnthropic) -> Iterator[None]:
    """Both fake upstreams as the in-process proxy's (so a call that should not
    go there could), and an empty ledger buffer before and after."""
    recorder.discard()
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1",
        CURFEW_UPSTREAM_API_KEY=SECRET,
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"{anthropic_upstream.base_url}/anthropic",
        CURFEW_ANTHROPIC_UPSTREAM_API_KEY=SECRET,
    ):
        yield
    recorder.discard()


@pytest.fixture(autouse=True)
def _clean_upstream(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test starts with empty recorders and well-behaved upstreams."""
    fakes: list[FakeUpstream | FakeAnthropic] = [
        request.getfixturevalue(name)
        for name in ("upstream", "anthropic_upstream")
        if name in request.fixturenames
    ]
    for fake in fakes:
        fake.reset()
    yield
    for fake in fakes:
        if fake.gate is not None:
            fake.gate.set()


@dataclass
class Proxy:
    app: ServedApp
    token: str

    @property
    def base_url(self) -> str:
        return f"{self.app.base_url}/v1"

    def api(self, method: str, path: str, body: object) -> httpx.Response:
        response = httpx.request(
            method,
            f"{self.app.base_url}/api/v1/{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return response

    def travel(self, moment: str) -> None:
        """The user's time machine (through the API, so the server's cache drops it)."""
        self.api("POST", "overrides", {"debug": moment})


@pytest.fixture(scope="session")
def proxy_app(
    tmp_path_factory: pytest.TempPathFactory,
    upstream: FakeUpstream,
    anthropic_upstream: FakeAnthropic,
) -> Iterator[ServedApp]:
    app = ServedApp(
        Path(tmp_path_factory.mktemp("proxy")),
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": UPSTREAM_KEY,
            "CURFEW_UPSTREAM_TIMEOUT": "30",
            "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL": f"{anthropic_upstream.base_url}/anthropic",
            "CURFEW_ANTHROPIC_UPSTREAM_API_KEY": ANTHROPIC_KEY,
            # Everything the proxy and its HTTP client log, so the key test sees it all.
            "CURFEW_LOG_LEVEL": "DEBUG",
            "CURFEW_MANIFEST_STATIC": "0",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="session")
def proxy(proxy_app: ServedApp) -> Proxy:
    served = Proxy(proxy_app, proxy_app.create_user("proxy-ada"))
    served.api("PATCH", "schedule", {"exempt_sessions": [EXEMPT_SESSION]})
    return served


def on_duty_token(username: str) -> str:
    """A fresh API token for a new user whose clock says 20:00 on a Tuesday
    (on duty, so requests go upstream)."""
    user = User.objects.create_user(username)
    _, raw = token_create(user=user, name="proxy")
    moment = datetime(2026, 9, 29, 20, 0, tzinfo=ZoneInfo("Asia/Shanghai")).isoformat()
    override_apply(
        user=user, command=override_commands.from_json({"debug": moment}), now=timezone.now()
    )
    return raw


@pytest.fixture
def token(transactional_db: None) -> str:
    return on_duty_token("lin")


@pytest.fixture
async def closing() -> AsyncIterator[None]:
    yield
    await upstream_module.close_clients()
