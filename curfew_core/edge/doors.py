"""Every door of the site, declared once.

For each prefix: its answer dialect, its body limit, where its clients put a
token, and the routes the edge answers itself with the handler of each (by
dotted path: the table imports no door). Everything else derives from this
table: the ASGI routing and the body guard (``edge.app``), the outage shapes
of what Django answers (``outage``), the test clients and the authorization
matrix (``tests/``), the OpenAPI document's paths (``api.openapi``). A path
belongs to the door with the longest prefix that matches it; a door that takes
a token answers every path under it (its fallback: a 404 in its shape), so
none is Django's; a path under another door the edge does not route is
Django's, in that door's dialect.

Adding a door: a row here and one handler module.
"""

from __future__ import annotations

from typing import TypedDict, Unpack

from curfew_core.edge import dialects
from curfew_core.edge.declare import Door, Route, Table, TeamKey
from curfew_core.edge.http_headers import bearer_in
from curfew_core.hot_settings import setting
from curfew_core.protocols import anthropic, gemini, openai

#: Chat bodies carry whole conversations and images: Django's 2.5 MB form
#: limit is not meant for them.
PROXY_MAX_BODY = 64 * 1024 * 1024


def _form_limit() -> int | None:
    limit: int | None = setting("DATA_UPLOAD_MAX_MEMORY_SIZE")
    return limit


def _proxy_limit() -> int | None:
    return PROXY_MAX_BODY


def _model(path: str, handler: str) -> Route:
    return Route(path, ("POST",), handler, long=True)


class _How(TypedDict, total=False):
    """What an API route says beyond its path, methods and handler (``Route``)."""

    token: bool
    thread: bool
    team_key: TeamKey


def _api(path: str, methods: tuple[str, ...], handler: str, **how: Unpack[_How]) -> Route:
    """A route of the API door: its path under ``/api/v1/``, its handler in ``curfew_core.api``."""
    return Route(f"/api/v1/{path}", methods, f"curfew_core.api.{handler}", **how)


#: A person's own rows (their settings, overrides, savings): sync, and a
#: team key is no token there.
_OWN: _How = {"thread": True, "team_key": "refused"}
#: The team API and the decisions: sync, a team key taken as itself.
_TEAM: _How = {"thread": True, "team_key": "itself"}

#: Anything else under the proxy: a 404 naming what it serves (no token needed).
NOT_PROXIED = Route("/v1/*", (), "curfew_core.proxy.not_proxied.not_proxied", token=False)

_GEMINI = "curfew_core.proxy.gemini."

DOORS = Table(
    (
        # Anthropic's protocol: the token as ``x-api-key`` (or Bearer), or in
        # ``X-Curfew-Token`` beside the caller's own credential; its error shape.
        Door(
            "anthropic",
            "/v1/messages",
            dialects.ANTHROPIC,
            _proxy_limit,
            anthropic.token_in,
            routes=(
                _model("/v1/messages", "curfew_core.proxy.messages.messages"),
                Route(
                    "/v1/messages/count_tokens",
                    ("POST",),
                    "curfew_core.proxy.messages.count_tokens",
                    long=True,
                ),
            ),
            fallback=NOT_PROXIED,
        ),
        # OpenAI's protocol: point an SDK's base URL at ``/v1`` (the token as
        # Bearer, or in ``X-Curfew-Token`` beside the caller's own credential).
        Door(
            "openai",
            "/v1/",
            dialects.OPENAI,
            _proxy_limit,
            openai.token_in,
            routes=(
                _model("/v1/chat/completions", "curfew_core.proxy.chat.chat_completions"),
                _model("/v1/responses", "curfew_core.proxy.responses.create_response"),
                Route(
                    "/v1/responses/{response_id}",
                    ("GET", "DELETE"),
                    "curfew_core.proxy.responses.stored_response",
                    long=True,
                ),
                _model("/v1/embeddings", "curfew_core.proxy.passthrough.embeddings"),
                _model("/v1/completions", "curfew_core.proxy.passthrough.completions"),
                Route("/v1/models", ("GET",), "curfew_core.proxy.chat.models", long=True),
                Route(
                    "/v1/models/{model:any}", ("GET",), "curfew_core.proxy.chat.models", long=True
                ),
            ),
            fallback=NOT_PROXIED,
        ),
        # Gemini's protocol (``protocols.gemini``): the google-genai SDK's base
        # URL at the server's root, the token as its key (``x-goog-api-key``),
        # or a REST client's ``?key=`` when no header holds one.
        Door(
            "gemini",
            "/v1beta/",
            dialects.of(gemini.GEMINI),
            _proxy_limit,
            gemini.GEMINI.token_in,
            query_credential=gemini.GEMINI.query_token,
            routes=(
                _model(f"/v1beta/models/{{model}}:{gemini.GENERATE}", _GEMINI + "generate_content"),
                _model(
                    f"/v1beta/models/{{model}}:{gemini.STREAM}", _GEMINI + "stream_generate_content"
                ),
            ),
            fallback=Route("/v1beta/*", (), NOT_PROXIED.handler, token=False),
        ),
        # The API: every route under /api/v1/ (issue 43), one credential
        # reader, one throttle, one error shape. The hot routes answer on the
        # event loop; the ones that read and write rows (``thread``) on the
        # edge's threads. A team key is a token here as each route says.
        Door(
            "api",
            "/api/v1/",
            dialects.API,
            _form_limit,
            bearer_in,
            routes=(
                _api("verdict", ("POST",), "hot.verdict"),
                _api("state", ("GET",), "hot.state"),
                Route(
                    "/api/v1/changes",
                    ("GET",),
                    "curfew_core.realtime.changes.changes",
                    long=True,
                    team_key="member_or_team",
                ),
                _api("schedule", ("GET", "PATCH"), "views.schedule", **_OWN),
                _api("overrides", ("POST",), "views.overrides", **_OWN),
                _api("team/schedule", ("GET", "PATCH"), "team_views.schedule", **_TEAM),
                _api("team/members", ("GET",), "team_views.members", **_TEAM),
                _api("team/overtime", ("POST",), "team_views.overtime", **_TEAM),
                _api("decisions", ("GET", "POST"), "ledger_views.decisions", **_TEAM),
                _api("savings", ("GET",), "ledger_views.savings", **_OWN),
                _api("openapi.json", ("GET",), "views.openapi", token=False, thread=True),
            ),
            # Any other path: the API's JSON 404 (no token needed).
            fallback=_api("*", (), "views.not_found", token=False),
        ),
        Door("api-other", "/api/", dialects.API, _form_limit),
        # A capsule polling with an embed token, and the probes: JSON.
        Door("embed-state", "/embed/state", dialects.API, _form_limit),
        Door("healthz", "/healthz", dialects.API, _form_limit),
        Door("readyz", "/readyz", dialects.API, _form_limit),
        # Sign-in, the settings pages, the admin, the capsule's page.
        Door("pages", "/", dialects.PAGE, _form_limit),
    )
)
