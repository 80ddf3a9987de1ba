"""The JSON API's handlers: parse, call one selector or service, answer.

Each is a route of the API door in the door table (``edge.doors``): the edge
has checked the method and the token (and counted its rate) and read the
body before one runs, and answers whatever it raises (``ApiError``, an
outage) in the API's shape. The ones that touch the database are sync and
run on the edge's threads (``Route.thread``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import TooManyFieldsSent
from django.http import HttpResponse, JsonResponse, QueryDict
from django.utils import timezone

from curfew_core.api.errors import (
    ApiError,
    config_refused,
    invalid,
    json_object,
    unprocessable_error,
)
from curfew_core.api.openapi import document
from curfew_core.edge.request import EdgeRequest
from curfew_core.engine import OverrideError
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import override_commands
from curfew_core.schedules.values import show, whole_number
from curfew_core.schema.verdict_request import RequestError, VerdictRequest, parse_verdict_body
from curfew_core.selectors.bundles import UserBundle, committed_schedule
from curfew_core.selectors.users import user_by_id
from curfew_core.selectors.verdicts import decide_for, state_json, verdict_json
from curfew_core.services.ledger_recorder import record_verdict
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import StaleVersion, schedule_update


def query_of(request: EdgeRequest) -> QueryDict:
    """The request's query parameters, as Django reads them (past Django's
    ``DATA_UPLOAD_MAX_NUMBER_FIELDS``, a 400 in the API's shape)."""
    try:
        return QueryDict(request.query_string)
    except TooManyFieldsSent:
        raise invalid({"query": "has too many parameters"}) from None


def checked_verdict_request(body: dict[str, Any]) -> VerdictRequest:
    """A verdict request's body, checked (400 or 422 naming the field)."""
    try:
        return parse_verdict_body(body)
    except RequestError as exc:
        raise (invalid(exc.fields) if exc.errors else unprocessable_error(exc.fields)) from None


def verdict_body(bundle: UserBundle, asked: VerdictRequest, *, now: datetime) -> bytes:
    """``POST /api/v1/verdict``'s answer (``api.hot``), and its
    line in the decision ledger: a gateway acts on the verdict it asked for
    (buffered, no I/O here). A what-if for another moment (``at``) is a
    preview, acted on by nobody: not recorded."""
    at = asked.at
    context = asked.context
    # ``context`` is the one object ``api.hot`` keeps for this body.
    result, _ = decide_for(bundle, now=now, request=context, at=at, repeated=True)
    # The user's zone (a team member's own): the one ``reason`` is told in,
    # and the one the ledger files the decision's hour in.
    zone = bundle.config["timezone"]
    if at is None:
        # ``record(verdict_entry(...))`` without the entry in between.
        record_verdict(
            result,
            origin="verdict",
            at=now,
            user_id=bundle.user_id,
            session=context.session_id,
            purpose=context.purpose,
            budget_before=context.max_tokens,
            zone=zone,
        )
    return verdict_json(result, now=at or now, timezone=zone)


def popped_version(changes: dict[str, Any]) -> int | None:
    """A schedule PATCH's ``version``, taken out of its changes (a person's
    schedule and a team's alike). Omitted means "save without the check";
    null is not a version (most likely a client that lost it), so it is
    refused, not read as "no check"."""
    if "version" not in changes:
        return None
    raw_version = changes.pop("version")
    version = whole_number(raw_version)
    if version is None or version < 0:
        raise invalid(
            {
                "version": "must be the whole number GET returned (omit it to save "
                f"without the check), not {show(raw_version)}"
            }
        )
    return version


def schedule(request: EdgeRequest) -> HttpResponse:
    """``GET`` / ``PATCH /api/v1/schedule``: a person's settings (a thread)."""
    identity = request.the_caller().identity
    if request.method == "PATCH":
        changes = json_object(request)
        version = popped_version(changes)
        # Malformed is 400 whatever the version: each value is checked on
        # its own first (no rule between settings depends on the stored row
        # here); the stale check and the rules between settings follow.
        try:
            schedule_config.apply_changes({}, changes)
        except schedule_config.ConfigError as exc:
            if not exc.well_formed:
                # Every problem at once: the rules between settings are read
                # against the stored settings (as the save would), not the
                # defaults the first check stood on.
                stored = committed_schedule(identity.user_id)
                stored.pop("version", None)
                try:
                    schedule_config.apply_changes(stored, changes)
                except schedule_config.ConfigError as full:
                    raise invalid(full.errors) from None
                raise invalid(exc.errors) from None
        user = user_by_id(identity.user_id)
        try:
            saved = schedule_update(
                user=user,
                changes=changes,
                expected_version=version,
                source="api",
                actor=user,
                channel="api",
            )
        except schedule_config.ConfigError as exc:
            raise config_refused(exc) from None
        except StaleVersion as exc:
            raise ApiError(409, "stale_version", str(exc), {"version": str(exc)}) from None
        # Answer with the row just saved, not the cache: the cache is dropped
        # on commit, and an outer transaction would leave it stale here.
        body = {
            **schedule_config.shown(schedule_config.with_defaults(saved.config)),
            "version": saved.version,
        }
    else:
        # The committed row, not the cache: a client reads a version to PATCH with.
        body = committed_schedule(identity.user_id)
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False})


def overrides(request: EdgeRequest) -> HttpResponse:
    """``POST /api/v1/overrides``: overtime, off, auto, debug (a thread)."""
    identity = request.the_caller().identity
    body = json_object(request)
    field = next(iter(body), "body")
    try:
        command = override_commands.from_json(body)
    except override_commands.Unprocessable as exc:
        raise unprocessable_error({exc.field or field: str(exc)}) from None
    except OverrideError as exc:
        raise invalid({exc.field or field: str(exc)}) from None
    user = user_by_id(identity.user_id)
    try:
        override_apply(user=user, command=command, now=timezone.now(), actor=user, channel="api")
    except OverrideError as exc:
        # from_json took it, so it is well-formed: a date that does not exist
        # or a moment out of range is for a rule the schema cannot state.
        raise unprocessable_error({field: str(exc)}) from None
    return HttpResponse(
        state_json(user_id=identity.user_id, now=timezone.now()), content_type="application/json"
    )


async def not_found(request: EdgeRequest) -> HttpResponse:
    """Any other path under the API (the door's fallback: no token needed)."""
    return ApiError(
        404, "not_found", f"no such API route: {request.path}; see /api/v1/openapi.json"
    ).response()


def openapi(request: EdgeRequest) -> HttpResponse:
    """``GET /api/v1/openapi.json`` (no token needed; made on a thread, a
    few milliseconds of schemas the event loop need not wait on)."""
    return JsonResponse(document(), json_dumps_params={"ensure_ascii": False})


def whole_param(
    query: QueryDict, name: str, default: int, upper: int, errors: dict[str, str]
) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw[:12]) <= upper:
        errors[name] = f"must be a whole number from 1 to {upper}"
        return default
    return int(raw)
