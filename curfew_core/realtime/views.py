"""HTTP doors of the capsule: the iframe page, the polling fallback, embed tokens.

Thin: parse, call one selector or service, answer.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET, require_POST

from curfew_core import throttle
from curfew_core.edge.dialects import API
from curfew_core.edge.http_headers import EMBED_POLICY
from curfew_core.realtime import clock
from curfew_core.selectors.tokens import has_live_embed_token, live_embed_tokens
from curfew_core.selectors.verdicts import CAPSULE_BANDS, capsule_payload
from curfew_core.services.tokens import token_create, token_revoke

MODES = ("wide", "narrow")


def _private(response: HttpResponse) -> HttpResponse:
    # The token rides in the URL: keep it out of caches and Referer headers.
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


def _unauthorized(message: str) -> HttpResponse:
    return API.refusal(401, message, code="unauthorized")


def _band_error(request: HttpRequest) -> str:
    """What is wrong with ``?band=`` (empty when it is absent or known)."""
    band = request.GET.get("band")
    if band is None or band in CAPSULE_BANDS:
        return ""
    return f"band must be one of {', '.join(CAPSULE_BANDS)}, not {band[:40]!r}"


@require_GET
def state(request: HttpRequest) -> HttpResponse:
    """The state for a capsule that cannot hold a socket (fallback polling, boot race).

    ``?token=`` authenticates by embed token only (readable from any origin, like
    the socket); without it the signed-in session (same origin only: no CORS
    header is sent, so other sites cannot read it). ``?band=24h`` adds the
    day's band, as on the socket.
    """
    raw = request.GET.get("token")
    band = request.GET.get("band") in CAPSULE_BANDS
    response: HttpResponse
    if error := _band_error(request):
        response = API.refusal(400, error, code="bad_request")
        if raw is not None:  # a page elsewhere must be able to read why
            response["Access-Control-Allow-Origin"] = "*"
        return _private(response)
    if raw is not None:
        try:
            identity = throttle.identify_throttled(
                raw, kind="embed", address=throttle.client_address(request)
            )
        except throttle.Throttled as exc:
            response = API.rate_limited(exc.refusal)
        else:
            if identity is None:
                response = _unauthorized(
                    "unknown or revoked embed token" if raw else "missing embed token"
                )
            else:
                response = JsonResponse(
                    capsule_payload(user_id=identity.user_id, now=clock.now(), band=band)
                )
        response["Access-Control-Allow-Origin"] = "*"
        return _private(response)
    if not request.user.is_authenticated:
        return _private(_unauthorized("sign in, or pass ?token=<embed token>"))
    response = JsonResponse(capsule_payload(user_id=request.user.pk, now=clock.now(), band=band))
    response["Vary"] = "Cookie"
    return _private(response)


def _embed_language(request: HttpRequest) -> str:
    """The iframe's language: ``?lang=`` (``en``, ``zh``, ``zh-Hans``) when
    the site speaks it, else the viewer's (``LocaleMiddleware``: their
    language cookie, else their browser's Accept-Language)."""
    asked = request.GET.get("lang", "")
    if asked:
        try:
            return translation.get_supported_language_variant(
                "zh-hans" if asked.lower().startswith("zh") else asked.lower()
            )
        except LookupError:
            pass
    return translation.get_language() or settings.LANGUAGE_CODE


@xframe_options_exempt
@require_GET
def embed_page(request: HttpRequest) -> HttpResponse:
    """``/embed/capsule/?token=…[&mode=narrow][&band=24h][&lang=zh]``: the
    capsule alone, for an iframe, in the viewer's language (``?lang=`` to
    choose one): its ``<html lang>``, which the capsule reads, and its error."""
    with translation.override(_embed_language(request)):
        return _embed_page(request)


def _embed_page(request: HttpRequest) -> HttpResponse:
    raw = request.GET.get("token", "")
    mode = request.GET.get("mode", "wide")
    band = request.GET.get("band", "")
    error, retry_after = "", 0
    if mode not in MODES:
        error = _("mode must be one of %(modes)s, not %(mode)s") % {
            "modes": ", ".join(MODES),
            "mode": repr(mode[:40]),
        }
        status = 400
    elif _band_error(request):
        # The API's English is _band_error's; the iframe says it in its language.
        error = _("band must be one of %(bands)s, not %(band)s") % {
            "bands": ", ".join(CAPSULE_BANDS),
            "band": repr(band[:40]),
        }
        status = 400
    elif not raw:
        error, status = _("missing embed token: add ?token=<embed token>"), 401
    else:
        try:
            address = throttle.client_address(request)
            if throttle.identify_throttled(raw, kind="embed", address=address) is None:
                error, status = _("unknown or revoked embed token"), 401
            else:
                status = 200
        except throttle.Throttled as exc:
            error, status, retry_after = exc.refusal.message, 429, exc.refusal.retry_after
    response = render(
        request,
        "curfew/capsule/embed.html",
        {"token": raw if status == 200 else "", "mode": mode, "band": band, "error": error},
        status=status,
    )
    response["Content-Security-Policy"] = EMBED_POLICY
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return _private(response)


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User), "login_required lets only signed-in users here"
    return request.user


def _panel(request: HttpRequest, *, new_token: str | None = None) -> dict[str, Any]:
    tokens = live_embed_tokens(user_id=_user(request).pk)
    return {"capsule_new_token": new_token, "capsule_tokens": tokens}


def _answer(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    # htmx swaps just the snippet block; a plain form post gets the whole page.
    template = (
        "curfew/capsule/snippet.html"
        if request.headers.get("HX-Request") == "true"
        else "curfew/capsule/manage.html"
    )
    response = render(request, template, context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def manage(request: HttpRequest) -> HttpResponse:
    """The capsule, its snippet and the user's embed tokens."""
    return _answer(request, _panel(request))


@login_required
@require_POST
def create_token(request: HttpRequest) -> HttpResponse:
    """A fresh embed token, shown once inside the snippet (never in a URL we redirect to)."""
    name = request.POST.get("name", "").strip() or "capsule embed"
    _, raw = token_create(
        user=_user(request), name=name, kind="embed", actor=_user(request), channel="page"
    )
    return _answer(request, _panel(request, new_token=raw))


@login_required
@require_POST
def revoke_token(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke one of the user's embed tokens; open capsules using it are closed (4401)."""
    if not has_live_embed_token(user_id=_user(request).pk, token_id=token_id):
        raise Http404("no such live embed token")
    token_revoke(user=_user(request), token_id=token_id, actor=_user(request), channel="page")
    if request.headers.get("HX-Request") == "true":
        return _answer(request, _panel(request))
    return redirect("capsule-manage")
