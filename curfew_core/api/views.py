"""The JSON API doors: parse, call one selector or service, answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from curfew_core import config as schedule_config
from curfew_core import override_commands
from curfew_core.api.auth import token_required
from curfew_core.api.errors import ApiError, invalid, json_object, unprocessable_error
from curfew_core.api.openapi import document
from curfew_core.config import show, text_problem, whole_number
from curfew_core.engine import OverrideError, RequestContext
from curfew_core.selectors.bundles import committed_schedule
from curfew_core.selectors.tokens import TokenIdentity
from curfew_core.selectors.verdicts import state_json, verdict_for, verdict_json
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import StaleVersion, schedule_update

VERDICT_FIELDS = ("session_id", "purpose", "subagent", "max_tokens", "at")


def allow(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Answer any other method with the API's JSON 405 and an ``Allow`` header
    (RFC 9110), before authentication or CSRF: the route exists, the method
    does not, whoever asks."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                return ApiError(
                    405,
                    "method_not_allowed",
                    f"{request.method} is not allowed here; use {' or '.join(methods)}",
                    headers={"Allow": ", ".join(methods)},
                ).response()
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


#: The longest session id or purpose a verdict request may carry (the same
#: as an exempt session id).
MAX_SCOPE_TEXT = schedule_config.MAX_SESSION_ID


def _optional_text(body: dict[str, Any], key: str, errors: dict[str, str]) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_SCOPE_TEXT:
        errors[key] = f"must be text of at most {MAX_SCOPE_TEXT} characters, not {show(value)}"
        return None
    problem = text_problem(value)
    if problem:
        errors[key] = problem
        return None
    return value or None


def parse_instant(value: Any) -> datetime:
    """An RFC 3339 instant with its UTC offset (``Z`` allowed), exactly the
    document's ``pattern`` (Python alone would also take many other forms).

    ``ValueError`` for what is not one, ``override_commands.Unprocessable``
    for an instant out of the range a verdict can be given for.
    """
    if not isinstance(value, str):
        raise ValueError(f"must be an RFC 3339 instant text, not {show(value)}")
    try:
        parsed = datetime.fromisoformat(value) if len(value) <= 64 else None
    except ValueError:
        parsed = None
    if parsed is not None and parsed.tzinfo is None:
        raise ValueError(f"{show(value)} has no UTC offset; add one, e.g. +08:00 or Z")
    if parsed is None or not re.fullmatch(override_commands.INSTANT_PATTERN, value):
        raise ValueError(f"{show(value)} is not an RFC 3339 instant like 2026-09-29T23:30:00+08:00")
    return override_commands.check_moment(parsed)


def parse_verdict_request(body: dict[str, Any]) -> tuple[RequestContext, datetime | None]:
    """The verdict request, or ``ApiError`` 400 (malformed) / 422 (an ``at``
    out of range: well-formed, so the schema cannot refuse it)."""
    errors: dict[str, str] = {
        key: f"is not a verdict field; use {', '.join(VERDICT_FIELDS)}"
        for key in body
        if key not in VERDICT_FIELDS
    }
    session_id = _optional_text(body, "session_id", errors)
    purpose = _optional_text(body, "purpose", errors)
    # null is "not given", as for every other optional field.
    subagent = body.get("subagent")
    if subagent is None:
        subagent = False
    elif not isinstance(subagent, bool):
        errors["subagent"] = f"must be true or false, not {show(subagent)}"
    raw_max_tokens = body.get("max_tokens")
    max_tokens = whole_number(raw_max_tokens)
    if raw_max_tokens is not None and (max_tokens is None or max_tokens < 1):
        errors["max_tokens"] = (
            f"must be a positive whole number or null, not {show(raw_max_tokens)}"
        )
    at = None
    unprocessable = {}
    if body.get("at") is not None:
        try:
            at = parse_instant(body["at"])
        except override_commands.Unprocessable as exc:
            unprocessable["at"] = str(exc)
        except ValueError as exc:
            errors["at"] = str(exc)
    if errors:
        raise invalid({**errors, **unprocessable})
    if unprocessable:
        raise unprocessable_error(unprocessable)
    return (
        RequestContext(
            session_id=session_id,
            purpose=purpose,
            subagent=bool(subagent),
            max_tokens=max_tokens,
        ),
        at,
    )


@allow("POST")
@token_required
def verdict(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    context, at = parse_verdict_request(json_object(request, allow_empty=True))
    now = timezone.now()
    result, _ = verdict_for(user_id=identity.user_id, now=now, request=context, at=at)
    return HttpResponse(verdict_json(result, now=at or now), content_type="application/json")


@allow("GET", "PATCH")
@token_required
def schedule(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    if request.method == "PATCH":
        changes = json_object(request)
        version = None
        if "version" in changes:
            # Omitted means "save without the check"; null is not a version
            # (most likely a client that lost it), so it is refused, not
            # read as "no check".
            raw_version = changes.pop("version")
            version = whole_number(raw_version)
            if version is None or version < 0:
                raise invalid(
                    {
                        "version": "must be the whole number GET returned (omit it to save "
                        f"without the check), not {show(raw_version)}"
                    }
                )
        # Malformed is 400 whatever the version: each value is checked on
        # its own first (no rule between settings depends on the stored row
        # here); the stale check and the rules between settings follow.
        try:
            schedule_config.apply_changes({}, changes)
        except schedule_config.ConfigError as exc:
            if not exc.well_formed:
                raise invalid(exc.errors) from None
        user = get_user_model().objects.get(pk=identity.user_id)
        try:
            saved = schedule_update(
                user=user,
                changes=changes,
                expected_version=version,
                source="api",
                actor=user,
                door="api",
            )
        except schedule_config.ConfigError as exc:
            if exc.well_formed:
                raise unprocessable_error(exc.errors) from None
            raise invalid(exc.errors) from None
        except StaleVersion as exc:
            raise ApiError(409, "stale_version", str(exc), {"version": str(exc)}) from None
        # Answer with the row just saved, not the cache: the cache is dropped
        # on commit, and an outer transaction would leave it stale here.
        body = {**schedule_config.with_defaults(saved.config), "version": saved.version}
    else:
        # The committed row, not the cache: a client reads a version to PATCH with.
        body = committed_schedule(identity.user_id)
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False})


@allow("POST")
@token_required
def overrides(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    body = json_object(request)
    field = next(iter(body), "body")
    try:
        command = override_commands.from_json(body)
    except override_commands.Unprocessable as exc:
        raise unprocessable_error({field: str(exc)}) from None
    except OverrideError as exc:
        raise invalid({field: str(exc)}) from None
    user = get_user_model().objects.get(pk=identity.user_id)
    try:
        override_apply(user=user, command=command, now=timezone.now(), actor=user, door="api")
    except OverrideError as exc:
        # from_json took it, so it is well-formed: a date that does not exist
        # or a moment out of range is for a rule the schema cannot state.
        raise unprocessable_error({field: str(exc)}) from None
    return HttpResponse(
        state_json(user_id=identity.user_id, now=timezone.now()), content_type="application/json"
    )


@allow("GET")
@token_required
def state(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    return HttpResponse(
        state_json(user_id=identity.user_id, now=timezone.now()), content_type="application/json"
    )


@csrf_exempt  # a POST to a mistyped route should hear "no such route", not "CSRF"
def not_found(request: HttpRequest) -> HttpResponse:
    return ApiError(
        404, "not_found", f"no such API route: {request.path}; see /api/v1/openapi.json"
    ).response()


@allow("GET")
def openapi(request: HttpRequest) -> HttpResponse:
    return JsonResponse(document(), json_dumps_params={"ensure_ascii": False})
