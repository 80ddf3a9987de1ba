"""The JSON API doors: parse, call one selector or service, answer."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from curfew_core import config as schedule_config
from curfew_core import override_commands
from curfew_core.api.auth import token_required
from curfew_core.api.errors import ApiError, invalid, json_object
from curfew_core.api.openapi import document
from curfew_core.config import show, text_problem
from curfew_core.engine import OverrideError, RequestContext
from curfew_core.selectors.bundles import bundle_for
from curfew_core.selectors.tokens import TokenIdentity
from curfew_core.selectors.verdicts import state_payload, verdict_for, verdict_payload
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import StaleVersion, schedule_update

VERDICT_FIELDS = ("session_id", "purpose", "subagent", "max_tokens", "at")


def _methods(request: HttpRequest, *allowed: str) -> None:
    if request.method not in allowed:
        raise ApiError(405, "method_not_allowed", f"use {' or '.join(allowed)}")


#: The longest session id or purpose a verdict request may carry.
MAX_SCOPE_TEXT = 200


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


def whole_number(value: Any) -> int | None:
    """A JSON integer as an ``int``, or None. ``508.0`` is one (JSON Schema's
    ``integer`` admits it, so the validator must too); ``true`` is not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def parse_instant(value: Any) -> datetime:
    """An ISO-8601 instant with its UTC offset (``Z`` allowed)."""
    if not isinstance(value, str):
        raise ValueError(f"must be an ISO-8601 instant text, not {show(value)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{show(value)} is not an ISO-8601 instant") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{show(value)} has no UTC offset; add one, e.g. +08:00 or Z")
    try:
        return override_commands.check_moment(parsed)
    except OverrideError as exc:
        raise ValueError(str(exc)) from None


def parse_verdict_request(body: dict[str, Any]) -> tuple[RequestContext, datetime | None]:
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
    if body.get("at") is not None:
        try:
            at = parse_instant(body["at"])
        except ValueError as exc:
            errors["at"] = str(exc)
    if errors:
        raise invalid(errors)
    return (
        RequestContext(
            session_id=session_id,
            purpose=purpose,
            subagent=bool(subagent),
            max_tokens=max_tokens,
        ),
        at,
    )


@token_required
def verdict(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    _methods(request, "POST")
    context, at = parse_verdict_request(json_object(request, allow_empty=True))
    now = timezone.now()
    result, _ = verdict_for(user_id=identity.user_id, now=now, request=context, at=at)
    return JsonResponse(
        verdict_payload(result, now=at or now), json_dumps_params={"ensure_ascii": False}
    )


def _schedule_body(user_id: int) -> dict[str, Any]:
    bundle = bundle_for(user_id)
    return {**bundle.config, "version": bundle.version}


@token_required
def schedule(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    _methods(request, "GET", "PATCH")
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
        user = get_user_model().objects.get(pk=identity.user_id)
        try:
            saved = schedule_update(
                user=user, changes=changes, expected_version=version, source="api"
            )
        except schedule_config.ConfigError as exc:
            raise invalid(exc.errors) from None
        except StaleVersion as exc:
            raise ApiError(409, "stale_version", str(exc), {"version": str(exc)}) from None
        # Answer with the row just saved, not the cache: the cache is dropped
        # on commit, and an outer transaction would leave it stale here.
        body = {**schedule_config.with_defaults(saved.config), "version": saved.version}
    else:
        body = _schedule_body(identity.user_id)
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False})


@token_required
def overrides(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    _methods(request, "POST")
    body = json_object(request)
    try:
        command = override_commands.from_json(body)
        user = get_user_model().objects.get(pk=identity.user_id)
        override_apply(user=user, command=command, now=timezone.now())
    except OverrideError as exc:
        raise invalid({next(iter(body), "body"): str(exc)}) from None
    return JsonResponse(
        state_payload(user_id=identity.user_id, now=timezone.now()),
        json_dumps_params={"ensure_ascii": False},
    )


@token_required
def state(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    _methods(request, "GET")
    return JsonResponse(
        state_payload(user_id=identity.user_id, now=timezone.now()),
        json_dumps_params={"ensure_ascii": False},
    )


@csrf_exempt  # a POST to a mistyped route should hear "no such route", not "CSRF"
def not_found(request: HttpRequest) -> HttpResponse:
    return ApiError(
        404, "not_found", f"no such API route: {request.path}; see /api/v1/openapi.json"
    ).response()


@require_GET
def openapi(request: HttpRequest) -> HttpResponse:
    return JsonResponse(document(), json_dumps_params={"ensure_ascii": False})
