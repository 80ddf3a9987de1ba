"""How each door answers a refusal or a failure: its dialect, built here once.

A door answers in its client's own protocol, even during an outage, never
with an HTML 500: the API's JSON (``schema.errors``), OpenAI's error JSON
(the SDKs raise and retry as usual), Anthropic's (the same for its SDK), or a
styled page. Every refusal the edge makes before a handler runs (a body too
large, a missing token, a throttle, a storage outage, a method not served, a
bad ``Host``) and every failure of a handler comes from the door's
:class:`Dialect`, so a door has one shape wherever the answer is made: in the
edge, in a handler, or in Django's safety net (``outage``).

A model dialect is built from its wire protocol (``protocols``: its error
shape, its words); none is told apart by identity. The model dialects label
every answer with what the curfew did (``X-Curfew-State`` /
``X-Curfew-Action``; ``unknown`` / ``none`` when it could not decide):
:func:`labelled`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import DatabaseError
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.template import loader
from django.utils.html import format_html
from django.utils.translation import gettext_lazy
from redis.exceptions import RedisError

from curfew_core import throttle
from curfew_core.engine import Action, Verdict
from curfew_core.protocols import anthropic, openai
from curfew_core.protocols.base import ErrorBody, Refusals, WireProtocol
from curfew_core.schema.errors import api_error_body
from curfew_core.selectors import tokens
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.edge")
R = TypeVar("R", bound=HttpResponseBase)

#: Storage or network below us went away: retrying soon may well work.
OUTAGES: tuple[type[BaseException], ...] = (
    RedisError,
    DatabaseError,
    ConnectionError,
    TimeoutError,
)
#: Seconds a client should wait before retrying an outage.
RETRY_AFTER_SECONDS = 5
UNAVAILABLE_MESSAGE = "storage unavailable; retry shortly"
FAILED_MESSAGE = "internal error; the server could not answer this request"
#: The API's words for the edge's refusals (its codes are its own); the pages
#: say the same where they say anything.
API_WORDS = Refusals(
    missing="missing bearer token",
    unknown="unknown or revoked token",
    unauthorized_code="unauthorized",
    too_large_code="too_large",
    rate_limited_code="rate_limited",
    rate_limited_type="invalid_request_error",
    unavailable=UNAVAILABLE_MESSAGE,
    failed=FAILED_MESSAGE,
)


#: Why a token of ours is refused where its kind is not taken
#: (``Dialect.unauthorized``): a team key at one person's own routes, an embed
#: token at any token door. Every door says it alike.
NOT_TAKEN: dict[str, str] = {
    tokens.TokenKind.TEAM: (
        "a team key is not taken here: this route is one person's own settings; "
        "use their own API token"
    ),
    tokens.TokenKind.EMBED: ("an embed token only shows a status capsule: use an API token here"),
}

#: ``(status, message, code, param, OpenAI's error type) -> the answer``.
Answer = Callable[[int, str, str, "str | None", str], HttpResponse]


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """An error in one shape (the API's, a protocol's, a page), told as every
    refusal is: ``error(status, message, code=..., param=..., type=...)``."""

    name: str
    answer: Answer

    def __call__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        type: str = "invalid_request_error",
    ) -> HttpResponse:
        return self.answer(status, message, code, param, type)


def _json(body: object, status: int) -> HttpResponse:
    return HttpResponse(
        json.dumps(body, ensure_ascii=False), status=status, content_type="application/json"
    )


def json_error(name: str, body: ErrorBody) -> ErrorAnswer:
    """Errors told as ``body``'s JSON; a 401 also says how to authenticate
    (every JSON door takes a bearer token)."""

    def answer(status: int, message: str, code: str, param: str | None, type: str) -> HttpResponse:
        response = _json(body(status, message, code, param, type), status)
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="curfew"'
        return response

    return ErrorAnswer(name, answer)


def _api_body(status: int, message: str, code: str, param: str | None, type: str) -> dict[str, Any]:
    """The API's one shape, ``{"error", "message", "fields"}`` (``param``:
    the field it names)."""
    fields = {param: message} if param else None
    return api_error_body(code, message, fields)


api_error = json_error("api", _api_body)


def protocol_error(protocol: WireProtocol) -> ErrorAnswer:
    """``protocol``'s error JSON (``protocols``), so its SDK raises as usual."""
    return json_error(protocol.name, protocol.error_body)


#: OpenAI's error JSON, so its SDKs raise their usual exceptions.
openai_error = protocol_error(openai.OPENAI)


#: Said once while the pages' own error pages cannot be drawn (``_page``).
_unrendered = Notice(log, logging.ERROR)
#: A page's last answer when its template cannot be drawn: the words of
#: 500.html, 503.html and 413.html, without the stylesheet.
_PLAIN_PAGES = {
    500: (
        gettext_lazy("Something went wrong"),
        gettext_lazy(
            "Curfew could not answer this request. The error has been logged; "
            "try again, or go back to the settings page."
        ),
    ),
    503: (
        gettext_lazy("Temporarily unavailable"),
        gettext_lazy(
            "Curfew cannot reach its storage right now. Nothing you saved is lost; "
            "try again in a few seconds."
        ),
    ),
    413: (
        gettext_lazy("Request too large"),
        gettext_lazy("A form sent here may be at most %(limit_kb)s KB. Nothing was saved."),
    ),
}


def _page(status: int, message: str, code: str, param: str | None, type: str) -> HttpResponse:
    """A styled page with the app's own stylesheet; standalone templates (no
    ``request.user``, no database): it must render while storage is down.
    If it cannot be drawn at all (static files never collected: the
    manifest has no stylesheet to name), the same words go out plain, never
    the server's bare 500; said once in the log."""
    template, context = {
        413: ("413.html", {"limit_kb": int(param or 0) // 1024}),
        503: ("503.html", {}),
    }.get(status, ("500.html", {}))
    try:
        return HttpResponse(loader.render_to_string(template, context), status=status)
    except Exception:
        _unrendered.failed("%s could not be rendered: answered plain", template, exc_info=True)
    title, text = _PLAIN_PAGES.get(status, _PLAIN_PAGES[500])
    plain = format_html(
        '<!doctype html><meta charset="utf-8"><title>{} · Curfew</title><h1>{}</h1><p>{}</p>',
        title,
        title,
        str(text) % context,
    )
    return HttpResponse(plain, status=status)


page_error = ErrorAnswer("page", _page)


def labelled(response: R, verdict: Verdict | None) -> R:
    """What the curfew did, on a model door's answer (``unknown`` / ``none``
    when it could not decide)."""
    response["X-Curfew-State"] = verdict.state.value if verdict else "unknown"
    response["X-Curfew-Action"] = verdict.action.value if verdict else "none"
    if verdict is not None and verdict.action is Action.CLAMP and verdict.max_tokens is not None:
        response["X-Curfew-Max-Tokens"] = str(verdict.max_tokens)
    return response


def _too_large_in_bytes(dialect: Dialect, limit: int) -> HttpResponse:
    """The API's 413: the limit in bytes, naming the field and why, as every
    4xx of it does."""
    message = f"the request body must be at most {limit} bytes"
    return _json(
        api_error_body(
            dialect.words.too_large_code,
            message,
            {"body": "is too large for a settings or verdict request"},
        ),
        413,
    )


def _too_large_in_mb(dialect: Dialect, limit: int) -> HttpResponse:
    """A model door's 413: the limit in MB, in its protocol's shape."""
    message = f"the request body must be at most {limit // 2**20} MB"
    return dialect.error(413, message, code=dialect.words.too_large_code)


def _too_large_page(dialect: Dialect, limit: int) -> HttpResponse:
    return page_error(413, "", code="too_large", param=str(limit))


def _use_methods(method: str, methods: tuple[str, ...]) -> str:
    return f"use {', '.join(methods)}"


def _not_allowed_here(method: str, methods: tuple[str, ...]) -> str:
    return f"{method} is not allowed here; use {' or '.join(methods)}"


@dataclass(frozen=True, slots=True)
class Dialect:
    """A door's protocol for everything that is not its happy answer."""

    name: str
    error: ErrorAnswer
    #: Whether every answer says what the curfew did (the model doors).
    labels: bool = False
    #: The words and codes of the door's own refusals (a 401, a 413, a 429,
    #: its outages): a model door's are its protocol's, the API's its own.
    words: Refusals = API_WORDS
    #: How a body over the limit is told (its answer, not yet labelled).
    too_large_answer: Callable[[Dialect, int], HttpResponse] = _too_large_in_bytes
    #: How a 405 says what to use.
    not_allowed_words: Callable[[str, tuple[str, ...]], str] = _use_methods
    #: The wire protocol a model door speaks (``None``: the API, the pages).
    protocol: WireProtocol | None = None
    #: Where a team key's body may name its member (``protocols``); the
    #: verdict API's ``user`` unless a protocol says otherwise.
    member_fields: tuple[tuple[tuple[str, ...], str], ...] = ((("user",), "user"),)

    def _done(self, response: HttpResponse) -> HttpResponse:
        return labelled(response, None) if self.labels else response

    def refusal(
        self, status: int, message: str, *, code: str, param: str | None = None, **kind: str
    ) -> HttpResponse:
        """A refusal in this dialect, labelled as the door labels."""
        return self._done(self.error(status, message, code=code, param=param, **kind))

    def unauthorized(self, raw_token: str | None, taken: str = tokens.GATEWAY) -> HttpResponse:
        """401 for a route taking ``taken`` tokens: none sent, one of ours of
        a kind not taken here (said by its prefix alone, whether it is live
        or not), or else unknown or revoked."""
        message = self.words.missing if raw_token is None else self.words.unknown
        minted = None if raw_token is None else tokens.minted_kind(raw_token)
        if minted is not None and not tokens.takes(taken, minted):
            message = NOT_TAKEN.get(minted, message)
        return self.refusal(401, message, code=self.words.unauthorized_code)

    def too_large(self, limit: int) -> HttpResponse:
        return self._done(self.too_large_answer(self, limit))

    def rate_limited(self, refusal: throttle.Refusal) -> HttpResponse:
        response = self.refusal(
            429,
            refusal.message,
            code=self.words.rate_limited_code,
            type=self.words.rate_limited_type,
        )
        response["Retry-After"] = str(refusal.retry_after)
        return response

    def unavailable(self) -> HttpResponse:
        """Storage went away: 503 with ``Retry-After`` (retrying soon may work)."""
        response = self.refusal(
            503, self.words.unavailable, code="unavailable", type="server_error"
        )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        response["Cache-Control"] = "no-store"
        return response

    def failed(self) -> HttpResponse:
        """Anything else that went wrong (logged by the caller)."""
        response = self.refusal(500, self.words.failed, code="internal_error", type="server_error")
        response["Cache-Control"] = "no-store"
        return response

    def not_allowed(self, method: str, methods: tuple[str, ...]) -> HttpResponse:
        response = self.refusal(
            405, self.not_allowed_words(method, methods), code="method_not_allowed"
        )
        response["Allow"] = ", ".join(methods)
        return response

    def bad_host(self, host: str) -> HttpResponse:
        """A ``Host`` not in ``ALLOWED_HOSTS`` (Django's rule, in this dialect)."""
        return self.refusal(400, f"invalid Host header: {host!r}", code="bad_host")


def of(protocol: WireProtocol) -> Dialect:
    """A model door's dialect: ``protocol``'s error shape and words, every
    answer labelled, a body limit told in MB."""
    return Dialect(
        protocol.name,
        protocol_error(protocol),
        labels=True,
        words=protocol.refusals,
        too_large_answer=_too_large_in_mb,
        protocol=protocol,
        member_fields=protocol.member_fields,
    )


API = Dialect("api", api_error, not_allowed_words=_not_allowed_here)
OPENAI = of(openai.OPENAI)
ANTHROPIC = of(anthropic.ANTHROPIC)
PAGE = Dialect("page", page_error, too_large_answer=_too_large_page)
