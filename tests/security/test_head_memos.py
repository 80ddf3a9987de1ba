"""Memos keyed by what a client sends must never hand one caller another's
answer (the rule behind the LiteLLM call-id fix): each test sends two
callers' requests that share a memo's key but differ in what the answer is
made of, and checks each gets its own."""

from __future__ import annotations

from typing import Any

from curfew_core.edge.app import Edge
from curfew_testkit.asgi_scope import http_scope


async def _no_django(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the edge's routes are never handed to Django")


async def _drive(app: Any, scope: dict[str, Any]) -> list[Any]:
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def _location(sent: list[Any]) -> bytes:
    assert sent[0]["status"] == 301, sent[0]
    return dict(sent[0]["headers"])[b"location"]


async def test_an_https_redirect_names_each_callers_own_path_and_query(
    settings: Any,
) -> None:
    """Over plain HTTP with ``SECURE_SSL_REDIRECT`` the edge answers Django's
    redirect to the same path and query over HTTPS. The request head's reading
    (``Edge._known``, ``Heads``) is keyed by the headers, not the path or the
    query, so the first caller's redirect was answered to every later caller
    with the same headers: a Gemini REST client's ``?key=`` (its token) sent
    to the next caller in ``Location``."""
    settings.SECURE_SSL_REDIRECT = True
    edge = Edge(_no_django)
    head = [(b"host", b"testserver"), (b"user-agent", b"google-genai-sdk")]
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    first = await _drive(edge, http_scope("POST", path, head, query=b"key=cfw_first_secret"))
    assert _location(first) == f"https://testserver{path}?key=cfw_first_secret".encode()
    other = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    second = await _drive(edge, http_scope("POST", other, head, query=b"alt=sse"))
    assert b"cfw_first_secret" not in _location(second)
    assert _location(second) == f"https://testserver{other}?alt=sse".encode()


async def test_a_refused_host_is_still_remembered_per_head(settings: Any) -> None:
    """The control: a head Django refuses (its ``Host``) answers the same to
    every caller with those headers, and stays remembered (no redirect in it)."""
    settings.SECURE_SSL_REDIRECT = True
    edge = Edge(_no_django)
    head = [(b"host", b"evil.example")]
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    for query in (b"key=a", b"key=b"):
        sent = await _drive(edge, http_scope("POST", path, head, query=query))
        assert sent[0]["status"] == 400, sent[0]
    assert len(edge.heads._heads) == 1
