"""The decision ledger's API doors (issue 14): read the decisions, read what
was saved, and take a gateway's report of the decisions it made from its
cached verdict. Same bearer tokens, throttles and error shape as the rest."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import get_args

from curfew_client.wire import ActionName
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from curfew_core import throttle
from curfew_core.api.auth import token_required, with_gateway_token
from curfew_core.api.errors import ApiError, invalid, json_object, unprocessable_error
from curfew_core.api.views import allow, whole_param
from curfew_core.edge.http_headers import bearer
from curfew_core.schedules.override_commands import Unprocessable
from curfew_core.schedules.values import text_problem
from curfew_core.schema.decisions import (
    DecisionPageAnswer,
    DecisionRow,
    ReportAnswer,
    SavingsAnswer,
    TypicalCall,
    parse_report,
)
from curfew_core.schema.errors import not_a_member, not_a_username
from curfew_core.schema.verdict_request import MAX_SCOPE_TEXT, RequestError, parse_instant
from curfew_core.selectors import teams as team_reads
from curfew_core.selectors.ledger import MAX_PER_PAGE, decisions_page, savings_between
from curfew_core.selectors.tokens import TokenIdentity, TokenKind
from curfew_core.selectors.users import is_username
from curfew_core.services.ledger import decisions_write

#: The savings range when none is given.
DEFAULT_RANGE = timedelta(days=30)
MAX_PAGE = 100_000


def _json(body: str) -> HttpResponse:
    return HttpResponse(body, content_type="application/json")


def _instant(
    request: HttpRequest, name: str, errors: dict[str, str], late: dict[str, str]
) -> datetime | None:
    raw = request.GET.get(name)
    if raw is None:
        return None
    try:
        return parse_instant(raw)
    except Unprocessable as exc:
        late[name] = str(exc)
    except ValueError as exc:
        errors[name] = str(exc)
    return None


def _known(request: HttpRequest, names: tuple[str, ...], errors: dict[str, str]) -> None:
    """Unknown query parameters are refused, each named (a mistyped filter
    must not silently widen the answer)."""
    for key in request.GET:
        if key not in names:
            errors[key[:64] or "query"] = f"is not a query parameter here; use {', '.join(names)}"


def _range(request: HttpRequest, errors: dict[str, str]) -> tuple[datetime | None, datetime | None]:
    late: dict[str, str] = {}
    since = _instant(request, "from", errors, late)
    until = _instant(request, "to", errors, late)
    if errors:
        raise invalid(errors)
    if not late and since is not None and until is not None and since >= until:
        late["from"] = "must be before to"
    if late:
        raise unprocessable_error(late)
    return since, until


@csrf_exempt
@allow("GET", "POST")
def decisions(request: HttpRequest) -> HttpResponse:
    """A person's token reads and reports its own decisions; a team key (issue
    26) reports for its members (each decision names one) and reads one
    member's (``?user=``), never anyone outside its team."""
    return with_gateway_token(
        bearer(request),
        throttle.client_address(request),
        lambda identity: _decisions(request, identity),
        member_header=request.headers.get("X-Curfew-User"),
    )


def _decisions(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    if request.method == "POST":
        return _report(request, identity)
    errors: dict[str, str] = {}
    user_id = identity.user_id
    if identity.kind == TokenKind.TEAM:
        user_id = _member_asked(request, identity)
    elif "user" in request.GET:
        errors["user"] = "only a team key names a user; a personal token reads its own"
    _known(request, ("from", "to", "session_id", "action", "page", "per_page", "user"), errors)
    session = request.GET.get("session_id")
    if session is not None and (len(session) > MAX_SCOPE_TEXT or text_problem(session)):
        errors["session_id"] = f"must be text of at most {MAX_SCOPE_TEXT} characters, no NUL"
    action = request.GET.get("action")
    actions = get_args(ActionName)
    if action is not None and action not in actions:
        errors["action"] = f"must be one of {', '.join(actions)}"
    page = whole_param(request, "page", 1, MAX_PAGE, errors)
    per_page = whole_param(request, "per_page", 50, MAX_PER_PAGE, errors)
    since, until = _range(request, errors)
    found = decisions_page(
        user_id=user_id,
        since=since,
        until=until,
        session=session,
        action=action,
        page=page,
        per_page=per_page,
    )
    answer = DecisionPageAnswer(
        decisions=[DecisionRow(**row) for row in found.rows],
        page=found.page,
        per_page=found.per_page,
        next_page=found.next_page,
    )
    return _json(answer.model_dump_json())


def _member_asked(request: HttpRequest, identity: TokenIdentity) -> int:
    """The member a team key reads the decisions of (``?user=``)."""
    name = request.GET.get("user", "")
    if not name:
        raise invalid({"user": "a team key reads one member's decisions: name them with ?user="})
    if not is_username(name):
        # The member-name rule of every door, before any lookup (issue 41).
        raise invalid({"user": not_a_username(name)})
    found = team_reads.members_named(team_id=identity.team_id or 0, usernames={name[:150]})
    if name not in found:
        raise ApiError(404, "not_found", not_a_member(name))
    return found[name]


def _report(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    body = json_object(request)
    team_id = identity.team_id if identity.kind == TokenKind.TEAM else None
    try:
        entries = parse_report(
            body,
            user_id=None if team_id is not None else identity.user_id,
            now=timezone.now(),
            members=(
                None
                if team_id is None
                else lambda names: team_reads.members_named(team_id=team_id, usernames=names)
            ),
        )
    except RequestError as exc:
        raise (invalid(exc.fields) if exc.errors else unprocessable_error(exc.fields)) from None
    # Written now, not buffered: a report is not the hot path, and a 200 means stored.
    stored = decisions_write(entries=entries)
    return _json(ReportAnswer(received=len(entries), stored=stored).model_dump_json())


@allow("GET")
@token_required
def savings(request: HttpRequest, identity: TokenIdentity) -> HttpResponse:
    errors: dict[str, str] = {}
    _known(request, ("from", "to"), errors)
    since, until = _range(request, errors)
    until = until or timezone.now()
    since = since or until - DEFAULT_RANGE
    if since >= until:
        raise unprocessable_error({"from": "must be before to"})
    result = savings_between(user_id=identity.user_id, since=since, until=until)
    typical = (
        TypicalCall(
            input_tokens=float(result.typical_input_tokens),
            output_tokens=float(result.typical_output_tokens or 0),
        )
        if result.typical_input_tokens is not None
        else None
    )
    answer = SavingsAnswer.model_validate(
        {
            "from": since.isoformat(),
            "to": until.isoformat(),
            "decisions": result.decisions,
            "requests_not_sent": result.requests_not_sent,
            "input_tokens_not_sent": result.input_tokens_not_sent,
            "output_tokens_not_generated": result.output_tokens_not_generated,
            "tokens_not_asked_for": result.tokens_not_asked_for,
            "money": float(result.money),
            "currency": result.currency,
            "typical_call": typical,
        }
    )
    return _json(answer.model_dump_json(by_alias=True))
