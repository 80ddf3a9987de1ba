"""Helpers for the in-process proxy tests (Django's async test client)."""

from __future__ import annotations

from typing import Any

from django.test import AsyncClient

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
