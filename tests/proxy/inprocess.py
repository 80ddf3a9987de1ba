"""Helpers for the in-process proxy tests (Django's async test client)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth.models import User
from django.utils import timezone

from curfew_core.schedules import override_commands
from curfew_core.services.overrides import override_apply
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import AsyncClient

SECRET = "sk-inprocess-secret-4242"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class Client:
    """The async test client with the bearer header on every request (headers
    given to AsyncClient's constructor do not reach an ASGI request)."""

    def __init__(self, token: str) -> None:
        self.auth = {"Authorization": f"Bearer {token}"}
        self.client = AsyncClient()

    async def post(self, path: str, data: object, **headers: str) -> Any:
        return await self.client.post(
            path, data, content_type="application/json", headers={**self.auth, **headers}
        )

    async def get(self, path: str) -> Any:
        return await self.client.get(path, headers=self.auth)


def client(token: str) -> Client:
    return Client(token)


async def body_of(response: object) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join([chunk async for chunk in response.streaming_content])  # type: ignore[attr-defined]
    return response.content  # type: ignore[attr-defined,no-any-return]


def token_at(username: str, clock: str) -> str:
    """A token of a new user whose clock says ``clock`` on Tuesday 2026-09-29."""
    user = User.objects.create_user(username)
    _, raw = token_create(user=user, name="proxy")
    hour, minute = map(int, clock.split(":"))
    moment = datetime(2026, 9, 29, hour, minute, tzinfo=ZoneInfo("Asia/Shanghai"))
    override_apply(
        user=user,
        command=override_commands.from_json({"debug": moment.isoformat()}),
        now=timezone.now(),
    )
    return raw
